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
    let super::super::Decode::Patterns(d) = &built.decode else {
        panic!("a pattern model")
    };
    let v = d.start_from(&inst, &inst.current_targets()).unwrap();
    assert_eq!(v, built.start);
}

/// One host with two A100-40GB (`cores` cores) and the given pending VMs (profiles, cores).
fn one_host(cores: u32, vms: &[(&[&str], u32)]) -> (Fleet, Vec<VmId>) {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(c, vec![Host::new("h0", cores, 512, vec![a100; 2], 0)]);
    let ids = vms
        .iter()
        .map(|(p, cores)| {
            let gis = GiRequest::named(c, "a100-40gb", p).unwrap();
            f.add_pending(Vm::job(0, gis, *cores, 16)).unwrap()
        })
        .collect();
    (f, ids)
}

fn fits(cores: u32, a: (&[&str], u32), b: (&[&str], u32)) -> bool {
    let (fleet, ids) = one_host(cores, &[a, b]);
    let inst = Inst::new(&fleet, &[0], &ids, Weights::default()).unwrap();
    let mut cache: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
    let mut feasible = |m: &GpuModel, c: &[u8]| {
        cache
            .entry(m.name.clone())
            .or_insert_with(|| multisets(m))
            .contains(c)
    };
    pair_fits(&inst, 0, 1, 0, &mut feasible)
}

#[test]
fn pairs_that_fit_and_pairs_that_conflict_on_two_a100s() {
    // A whole GPU each: one per GPU.
    assert!(fits(80, (&["7g.40gb"], 4), (&["7g.40gb"], 4)));
    // A whole GPU and a slice of the other, twice: three GPUs' worth.
    assert!(!fits(
        80,
        (&["7g.40gb", "1g.5gb"], 4),
        (&["7g.40gb", "1g.5gb"], 4)
    ));
    // Two 4g.20gb share no GPU (one start each) but take one GPU each; a third GI of 4 slices
    // still fits beside one of them (3g.20gb at start 4).
    assert!(fits(80, (&["4g.20gb", "3g.20gb"], 4), (&["4g.20gb"], 4)));
    // 4g.20gb + 4g.20gb and 4g.20gb + 4g.20gb: four 4g GIs, at most one per GPU.
    assert!(!fits(
        80,
        (&["4g.20gb", "4g.20gb"], 4),
        (&["4g.20gb", "4g.20gb"], 4)
    ));
    // Slices fit, cores do not.
    assert!(fits(80, (&["1g.5gb"], 40), (&["1g.5gb"], 40)));
    assert!(!fits(80, (&["1g.5gb"], 41), (&["1g.5gb"], 40)));
}
