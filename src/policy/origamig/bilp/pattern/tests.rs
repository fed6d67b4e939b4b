//! Unit tests of `policy::origamig::bilp::pattern`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{Fleet, GiRequest, Host, Vm};
use crate::policy::origamig::objective::Weights;

fn vm(profiles: &[&str]) -> Vm {
    let gis = GiRequest::named(embedded(), "a100-40gb", profiles).unwrap();
    Vm::job(0, gis, 8, 32)
}

#[test]
fn start_from_the_current_placement_is_the_built_start() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(
        c,
        (0..3)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    );
    for p in [
        vec!["1g.5gb", "1g.5gb"],
        vec!["3g.20gb"],
        vec!["2g.10gb", "1g.10gb"],
        vec!["7g.40gb", "1g.5gb"],
        vec!["4g.20gb"],
    ] {
        let v = vm(&p);
        let pl = f.ff_placement(&v).unwrap();
        f.add_placed(v, pl).unwrap();
    }
    let pend = f.add_pending(vm(&["3g.20gb", "3g.20gb"])).unwrap();
    let inst = Inst::new(&f, &[0, 1, 2], &[pend], Weights::default()).unwrap();
    let built = build(&inst, false, false);
    let model::Decode::Patterns(d) = &built.decode else {
        panic!("a pattern model")
    };
    let v = d.start_from(&inst, &inst.current_targets()).unwrap();
    assert_eq!(v, built.start);
}
