//! The packing arrival policy: finish a GPU, finish a host, protect free hosts.

use crate::common::fleet as common;
use migplan::fleet::{Fleet, GiSlot, Host, Placement, Vm};
use migplan::policy::packing::Packing;
use migplan::policy::Policy;
use migplan::scenario::PolicySettings;
use proptest::prelude::*;

fn h100_fleet(hosts: usize, gpus: usize) -> Fleet {
    let c = migplan::catalog::embedded();
    let m = c.model_id("h100-80gb").unwrap();
    Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("n{i}"), 256, 2048, vec![m; gpus], 0))
            .collect(),
    )
}

fn vm(id: u64, profiles: &[&str]) -> Vm {
    common::job(id, "h100-80gb", profiles, 4, 16)
}

fn put(f: &mut Fleet, id: u64, p: &str, host: usize, gpu: usize, start: u8) {
    common::put(f, vm(id, &[p]), common::at(host, &[(gpu, start)]));
}

#[test]
fn packed_placement_of_sixty_small_instances() {
    // 16 H100 GPUs in 1g.10gb mode (112 slices), 60 slices in use. Packed placement fills 8
    // GPUs (56) plus 4 on a ninth and leaves 7 GPUs empty.
    let mut f = h100_fleet(8, 2);
    let mut policy = Packing::new(&Default::default(), &PolicySettings::paper().origamig);
    for id in 1..=60 {
        let v = vm(id, &["1g.10gb"]);
        let p = policy.on_arrival(&f, &v, 0.0).expect("room");
        f.add_placed(v, p).unwrap();
    }
    f.check_invariants().unwrap();
    let mut per_gpu: Vec<u32> = f
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .map(|g| g.gis.len() as u32)
        .collect();
    per_gpu.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(per_gpu, vec![7, 7, 7, 7, 7, 7, 7, 7, 4, 0, 0, 0, 0, 0, 0, 0]);
    // Four hosts are full, one is half used, three hosts are entirely free for gangs.
    assert_eq!(f.active_hosts(), 5);
}

#[test]
fn protects_a_free_host_and_finishes_a_gpu() {
    // n0 is entirely free; n1 has a 4g.40gb on GPU 0 (slices 0-3). A 3g.40gb request: first fit
    // opens n0; packing puts it at slice 4 of n1's GPU 0, which finishes that GPU.
    let mut f = h100_fleet(2, 2);
    put(&mut f, 1, "4g.40gb", 1, 0, 0);
    let v = vm(2, &["3g.40gb"]);
    assert_eq!(f.ff_placement(&v).unwrap().host, 0);
    let p = Packing::new(&Default::default(), &PolicySettings::paper().origamig);
    let c = p.choose(&f, &v).unwrap();
    assert_eq!(
        c.placement,
        Placement {
            host: 1,
            gis: vec![GiSlot { gpu: 0, start: 4 }]
        }
    );
    assert_eq!(c.finished_gpus, 1);
    // Seed weights 1, 1, 2: n1 scores 1 + 1, n0 scores -2.
    assert_eq!(c.score, 2.0);
    assert_eq!(p.candidate(&f, &v, 0).unwrap().score, -2.0);
}

#[test]
fn weights_are_settings() {
    // Both hosts run work. On n0 a 1g.10gb leaves GPU 0 with a free slice that still fits a 1g;
    // on n1 it takes slice 6 and leaves only slice 7, where nothing starts: it finishes the GPU.
    let mut f = h100_fleet(2, 2);
    put(&mut f, 1, "2g.20gb", 0, 0, 0);
    put(&mut f, 2, "3g.40gb", 0, 0, 4);
    put(&mut f, 3, "2g.20gb", 1, 0, 0);
    put(&mut f, 4, "2g.20gb", 1, 0, 2);
    put(&mut f, 5, "2g.20gb", 1, 0, 4);
    let v = vm(6, &["1g.10gb"]);
    let mut s = PolicySettings::paper();
    let c = Packing::new(&s.packing, &s.origamig).choose(&f, &v).unwrap();
    assert_eq!(
        (c.placement.host, c.placement.gis[0]),
        (1, GiSlot { gpu: 0, start: 6 })
    );
    // Without the finish-a-GPU term both hosts score the same and leave as many free slices:
    // the lowest host wins, on its half-used GPU rather than the empty one.
    s.packing.finish_gpu = 0.0;
    let c = Packing::new(&s.packing, &s.origamig).choose(&f, &v).unwrap();
    assert_eq!(c.placement.host, 0);
    assert_eq!(c.placement.gis[0].gpu, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Whatever arrives, the packing policy only proposes valid placements, and it never leaves a
    /// request out when a host is entirely free for it.
    #[test]
    fn proposals_are_valid(reqs in proptest::collection::vec(proptest::collection::vec(0usize..6, 1..3), 1..40)) {
        let names = ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"];
        let mut f = h100_fleet(3, 2);
        let mut policy = Packing::new(&Default::default(), &PolicySettings::paper().origamig);
        for (i, r) in reqs.iter().enumerate() {
            let ps: Vec<&str> = r.iter().map(|&k| names[k]).collect();
            let v = vm(100 + i as u64, &ps);
            match policy.on_arrival(&f, &v, 0.0) {
                Some(p) => {
                    prop_assert!(f.validate_placement(&v, &p, false).is_ok());
                    f.add_placed(v, p).unwrap();
                }
                None => prop_assert!(f.hosts.iter().all(|h| !h.gpus.iter().all(|g| g.occ.is_empty()))),
            }
        }
        prop_assert!(f.check_invariants().is_ok());
    }
}
