//! Chargeback of a multi-tenant node: weights normalized per GPU, and GPU-hours per tenant.

use migplan::fleet::{GiRequest, GiSlot, Host, Placement, Vm, VmKind};
use migplan::ops::chargeback::{self, Bill};
use migplan::scenario;
use proptest::prelude::*;

use crate::common::fleet::H100_FOUR_TENANTS as H100;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn all_balanced_weights_are_the_seeds_figures() {
    let s = scenario::load(std::path::Path::new(H100)).unwrap();
    let charges = chargeback::instance_charges(&s.fleet);
    assert_eq!(charges.len(), 9);
    for c in &charges {
        let want = match c.profile.as_str() {
            "1g.10gb" => 2.0 / 15.0,
            "2g.20gb" => 4.0 / 15.0,
            "3g.40gb" => 7.0 / 15.0,
            "7g.80gb" => 1.0,
            p => panic!("{p}"),
        };
        assert!(close(c.weight, want), "{c:?}");
    }
    // Rounded as the operations practice's worked example prints them.
    let w = |p: &str| format!("{:.3}", charges.iter().find(|c| c.profile == p).unwrap().weight);
    assert_eq!(
        (w("1g.10gb"), w("2g.20gb"), w("3g.40gb")),
        ("0.133".into(), "0.267".into(), "0.467".into())
    );
    // Raw weights 0.143, 0.286, 0.5 sum to 1.071 on all-balanced; normalized, each GPU sums to 1.
    let gpu0: Vec<_> = charges.iter().filter(|c| c.gpu == 0).collect();
    let raw: f64 = gpu0.iter().map(|c| c.raw).sum();
    assert_eq!(format!("{raw:.3}"), "1.071");
    for g in 0..3 {
        let sum: f64 = charges.iter().filter(|c| c.gpu == g).map(|c| c.weight).sum();
        assert!(close(sum, 1.0), "GPU {g}: {sum}");
    }
}

#[test]
fn a_month_of_the_worked_example() {
    // The four-tenant H100 node: over a 730-hour month ranking's two 3g bill about 681 GPU-hours against
    // research's 730 for a whole GPU.
    let s = scenario::load(std::path::Path::new(H100)).unwrap();
    let mut b = Bill::default();
    b.accrue(&s.fleet, 730.0);
    assert!(close(b.tenants["ranking"], 2.0 * 7.0 / 15.0 * 730.0));
    assert_eq!(format!("{:.0}", b.tenants["ranking"]), "681");
    assert!(close(b.tenants["research"], 730.0));
    assert!(close(b.tenants["search"], 4.0 * 2.0 / 15.0 * 730.0));
    assert!(close(b.tenants["support"], 2.0 * 4.0 / 15.0 * 730.0));
    assert!(close(b.idle_gpu_hours, 730.0));
    assert!(close(b.total_gpu_hours, 4.0 * 730.0));
    // Over the same month as the state evolves, research's week-long VM leaves after 168 h.
    let e = chargeback::bill_state(&s.fleet, s.now_s, 730.0);
    assert!(close(e.tenants["research"], 168.0));
    assert!(close(e.idle_gpu_hours, 730.0 + 730.0 - 168.0));
    assert!(close(e.tenants["ranking"], b.tenants["ranking"]));
}

#[test]
fn a_neighbour_leaving_renormalizes_the_gpu() {
    // One H100 with a 3g.40gb (tenant a, open-ended) and a 1g.10gb (tenant b, 1 h). For the first
    // hour the raw weights 1/2 and 1/7 normalize to 7/9 and 2/9; then a holds the GPU alone.
    let c = migplan::catalog::embedded();
    let m = c.model_id("h100-80gb").unwrap();
    let mut f = migplan::fleet::Fleet::new(c, vec![Host::new("n", 64, 512, vec![m], 0)]);
    let vm = |id: u64, t: &str, p: &str, life: Option<f64>| Vm {
        id,
        shape: migplan::fleet::Shape::Mig,
        gis: vec![GiRequest {
            model: m,
            profile: c.model(m).profile(p).unwrap(),
        }],
        cores: 4,
        ram_gb: 16,
        kind: VmKind::Tenant,
        arrival: 0.0,
        lifetime: life,
        admitted_at: Some(0.0),
        tenant: Some(t.into()),
        placement: None,
    };
    let at = |z: u8| Placement {
        host: 0,
        gis: vec![GiSlot { gpu: 0, start: z }],
    };
    f.add_placed(vm(1, "a", "3g.40gb", None), at(4)).unwrap();
    f.add_placed(vm(2, "b", "1g.10gb", Some(3600.0)), at(0)).unwrap();
    let bill = chargeback::bill_state(&f, 0.0, 2.0);
    assert!(close(bill.tenants["a"], 7.0 / 9.0 + 1.0), "{bill:?}");
    assert!(close(bill.tenants["b"], 2.0 / 9.0), "{bill:?}");
    assert!(close(bill.idle_gpu_hours, 0.0));
    assert!(close(bill.hours, 2.0));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

    /// On any state reached by first-fit placements, every GPU holding instances bills exactly
    /// one GPU, and tenants plus idle GPUs account for every GPU-hour.
    #[test]
    fn every_gpu_bills_exactly_one(picks in proptest::collection::vec((0usize..7, 0usize..3), 1..24)) {
        let mut s = scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
        let c = s.fleet.catalog;
        let m = c.model_id("a100-40gb").unwrap();
        let profiles: Vec<usize> = c.model(m).cf_profiles().collect();
        for (i, (p, t)) in picks.into_iter().enumerate() {
            let vm = Vm {
                id: 1000 + i as u64,
                shape: migplan::fleet::Shape::Mig,
                gis: vec![GiRequest { model: m, profile: profiles[p % profiles.len()] }],
                cores: 4,
                ram_gb: 16,
                kind: VmKind::Job,
                arrival: 0.0,
                lifetime: None,
                admitted_at: Some(0.0),
                tenant: Some(format!("t{t}")),
                placement: None,
            };
            if let Some(pl) = s.fleet.ff_placement(&vm) {
                s.fleet.add_placed(vm, pl).unwrap();
            }
        }
        let charges = chargeback::instance_charges(&s.fleet);
        for (h, host) in s.fleet.hosts.iter().enumerate() {
            for (k, g) in host.gpus.iter().enumerate() {
                let sum: f64 = charges.iter().filter(|c| c.host == h && c.gpu == k).map(|c| c.weight).sum();
                if g.gis.is_empty() { prop_assert!(sum == 0.0); } else { prop_assert!(close(sum, 1.0)); }
            }
        }
        let mut b = Bill::default();
        b.accrue(&s.fleet, 10.0);
        let billed: f64 = b.tenants.values().sum();
        prop_assert!(close(billed + b.idle_gpu_hours, b.total_gpu_hours));
    }
}
