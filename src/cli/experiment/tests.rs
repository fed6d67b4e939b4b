//! Unit tests of `cli::experiment`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{GiRequest, GiSlot, Host, Vm};

fn vm(profile: &str) -> Vm {
    Vm::job(
        0,
        GiRequest::named(embedded(), "a100-40gb", &[profile]).unwrap(),
        4,
        16,
    )
}

#[test]
fn targets_that_swap_two_vms_are_applied() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(c, vec![Host::new("h0".to_string(), 80, 512, vec![a100], 0)]);
    let at = |start| Placement {
        host: 0,
        gis: vec![GiSlot { gpu: 0, start }],
    };
    let a = f.add_placed(vm("3g.20gb"), at(0)).unwrap();
    let b = f.add_placed(vm("3g.20gb"), at(4)).unwrap();
    let targets: BTreeMap<VmId, Placement> = [(a, at(4)), (b, at(0))].into_iter().collect();
    let after = with_targets(&f, &targets).unwrap();
    after.check_invariants().unwrap();
    assert_eq!(after.vm(a).unwrap().placement, Some(at(4)));
    assert_eq!(after.vm(b).unwrap().placement, Some(at(0)));
}
