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

#[test]
fn the_eq5_gap_sums_the_snapshots_and_the_worst_snapshot_is_kept_apart() {
    let snap = |o: f64, p: f64| Snapshot {
        hosts: 8,
        seed: 3,
        t_h: 48.0,
        vms: 10,
        origamig_active: 4,
        opt_active: 3,
        origamig_eq5: o,
        opt_eq5: p,
        opt_status: SolveStatus::Optimal,
        opt_gap: 0.0,
        opt_s: 0.1,
    };
    // Three snapshots of seed 3 at 8 hosts: 30 and 25 below OPT at two of them.
    let (agg, worst) = eq5_gaps(&[snap(1092.0, 1092.0), snap(781.0, 811.0), snap(781.0, 806.0)]);
    assert!((agg - 55.0 / 2709.0).abs() < 1e-12, "{agg}");
    assert!((worst - 30.0 / 811.0).abs() < 1e-12, "{worst}");
    assert_eq!(eq5_gaps(&[]), (0.0, 0.0));
}
