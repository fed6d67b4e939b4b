//! Fleet operations inside the simulator: quota and multi-GPU refusals at admission, chargeback
//! integrated over a simulation, and the packing policy by name.

use crate::common::fleet::{h100_four_tenants, h100_tenant_vm};
use migplan::fleet::{GiRequest, Vm, VmKind};
use migplan::ops::chargeback;
use migplan::policy;
use migplan::scenario::{self, Scenario};
use migplan::sim::{EventKind, Simulator};

fn request(s: &Scenario, tenant: &str, profiles: &[&str]) -> Vm {
    h100_tenant_vm(s.fleet.catalog, 0, Some(tenant), profiles)
}

fn refusal(sim: &Simulator) -> Option<String> {
    sim.events().iter().rev().find_map(|e| match &e.kind {
        EventKind::Refused { reason, .. } => Some(reason.clone()),
        _ => None,
    })
}

#[test]
fn the_simulator_refuses_over_quota_and_multi_gpu_on_slices() {
    let s = h100_four_tenants();
    let ff = policy::by_name("ff", &s.policy).unwrap();
    let mut sim = Simulator::new(&s, ff).unwrap();
    // Search holds 4 of its 6 small instances: two more are admitted, the third is refused.
    let a = sim.submit(request(&s, "search", &["1g.10gb"]));
    let b = sim.submit(request(&s, "search", &["1g.10gb"]));
    assert!(sim.fleet().vm(a).unwrap().placement.is_some());
    assert!(sim.fleet().vm(b).unwrap().placement.is_some());
    assert_eq!(refusal(&sim), None);
    let c = sim.submit(request(&s, "search", &["1g.10gb"]));
    assert!(
        sim.fleet().vm(c).is_none(),
        "refused requests do not stay in the fleet"
    );
    let r = refusal(&sim).unwrap();
    assert!(r.contains("quota of 6 x nvidia.com/mig-1g.10gb, holds 6"), "{r}");
    assert!(
        matches!(&sim.events().last().unwrap().kind, EventKind::Refused { vm, .. } if *vm == c),
        "the refusal is the last event of the arrival"
    );
    assert_eq!(sim.refused(), 1);
    // Research's two-GPU training job on slices is refused by the routing rule, on whole GPUs
    // it passes admission (and waits for room: only GPU 3 is free, so FF rejects it for room).
    let d = sim.submit(request(&s, "research", &["3g.40gb", "3g.40gb"]));
    assert!(sim.fleet().vm(d).is_none());
    assert!(refusal(&sim)
        .unwrap()
        .contains("multi-GPU work (2 GIs) runs on whole GPUs only"));
    let before = refusal(&sim);
    sim.submit(request(&s, "research", &["7g.80gb", "7g.80gb"]));
    assert_eq!(refusal(&sim), before, "no new admission refusal for whole GPUs");
}

#[test]
fn chargeback_over_a_simulation_matches_the_hand_integration() {
    // No arrivals in the worked example: the simulation only sees research leave after 168 h,
    // so it must bill exactly what the departure-only integration bills.
    let s = h100_four_tenants();
    let mut sim = Simulator::new(&s, policy::by_name("ff", &s.policy).unwrap()).unwrap();
    let simulated = chargeback::bill_simulation(&mut sim, 730.0).unwrap();
    let by_hand = chargeback::bill_state(&s.fleet, s.now_s, 730.0);
    for (t, gh) in &by_hand.tenants {
        assert!(
            (simulated.tenants[t] - gh).abs() < 1e-6,
            "{t}: {} vs {gh}",
            simulated.tenants[t]
        );
    }
    assert!((simulated.tenants["research"] - 168.0).abs() < 1e-6);
    assert!((simulated.idle_gpu_hours - by_hand.idle_gpu_hours).abs() < 1e-6);
    assert!((sim.time() - (s.now_s + 730.0 * 3600.0)).abs() < 1e-6);
}

#[test]
fn packing_runs_in_the_simulator_and_bills_every_gpu_hour() {
    // The demo fleet with its synthetic workload for six hours under the packing policy.
    let s = scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
    let packing = policy::by_name("packing", &s.policy).unwrap();
    assert_eq!(packing.name(), "packing");
    let mut sim = Simulator::new(&s, packing).unwrap();
    sim.set_check_invariants(true);
    let bill = chargeback::bill_simulation(&mut sim, 6.0).unwrap();
    sim.fleet().check_invariants().unwrap();
    let billed: f64 = bill.tenants.values().sum();
    assert!((billed + bill.idle_gpu_hours - bill.total_gpu_hours).abs() < 1e-6);
    assert!((bill.total_gpu_hours - 6.0 * sim.fleet().total_gpus() as f64).abs() < 1e-6);
    assert!(sim
        .events()
        .iter()
        .any(|e| matches!(e.kind, EventKind::Admission { .. })));
}

#[test]
fn stranded_capacity_triggers_a_defragmentation() {
    // Two hosts with two A100s each, one 1g.5gb on every GPU: all 28 free slices are stranded for
    // a 7g.40gb (share 1). With the trigger at 0.5 the packing policy asks OrigaMIG for a
    // consolidation, and applying its plan frees whole GPUs.
    use migplan::fleet::{GiSlot, Host, Placement};
    use migplan::policy::packing::Packing;
    use migplan::policy::Policy;
    let c = migplan::catalog::embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let small = c.model(a100).profile("1g.5gb").unwrap();
    let mut f = migplan::fleet::Fleet::new(
        c,
        vec![
            Host::new("a", 80, 512, vec![a100, a100], 0),
            Host::new("b", 80, 512, vec![a100, a100], 0),
        ],
    );
    for (i, (h, k)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
        let vm = Vm {
            id: i as u64 + 1,
            shape: migplan::fleet::Shape::Mig,
            gis: vec![GiRequest {
                model: a100,
                profile: small,
            }],
            cores: 4,
            ram_gb: 16,
            kind: VmKind::Tenant,
            arrival: 0.0,
            lifetime: None,
            admitted_at: Some(0.0),
            tenant: None,
            placement: None,
        };
        f.add_placed(
            vm,
            Placement {
                host: h,
                gis: vec![GiSlot { gpu: k, start: 0 }],
            },
        )
        .unwrap();
    }
    let share_7g = |f: &migplan::fleet::Fleet| {
        migplan::metrics::stranded(f)
            .into_iter()
            .find(|s| s.profile == "7g.40gb")
            .unwrap()
            .share
    };
    assert_eq!(share_7g(&f), 1.0);
    let mut settings = migplan::scenario::PolicySettings::default();
    assert!(
        Packing::new(&settings.packing, &settings.origamig)
            .on_step(&f, 0.0)
            .is_none(),
        "off by default"
    );
    settings.packing.defrag_stranded_share = 0.5;
    let mut p = Packing::new(&settings.packing, &settings.origamig);
    assert_eq!(p.defrag_due(&f), Some(("a100-40gb".to_string(), 1.0)));
    let plan = p.on_step(&f, 0.0).expect("a consolidation plan");
    assert!(!plan.targets.is_empty());
    // The next check waits for check_every_s.
    assert!(p.on_step(&f, 5.0).is_none());
    let schedule = migplan::executor::schedule_with(
        &f,
        &plan,
        migplan::scenario::PolicySettings::default().origamig.delta,
    )
    .unwrap();
    migplan::executor::execute(&mut f, &schedule).unwrap();
    f.check_invariants().unwrap();
    assert!(share_7g(&f) < 0.5, "{}", share_7g(&f));
    assert!(f.active_hosts() < 2);
}

#[test]
fn packing_settings_are_checked_by_name() {
    let mut s = migplan::scenario::PolicySettings::default();
    s.packing.defrag_stranded_share = 1.5;
    let e = policy::by_name("packing", &s).err().unwrap().to_string();
    assert_eq!(
        e,
        "policy.packing.defrag_stranded_share must be within 0..1 (0 = off), not 1.5"
    );
    s.packing.defrag_stranded_share = 0.25;
    s.packing.protect_host = f64::NAN;
    let e = policy::by_name("packing", &s).err().unwrap().to_string();
    assert!(e.contains("policy.packing.protect_host"), "{e}");
    s.packing.protect_host = 2.0;
    assert_eq!(policy::by_name("packing", &s).unwrap().name(), "packing");
}

#[test]
fn refusals_are_counted_in_the_window_among_the_rejections() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml");
    let mut s = migplan::scenario::load(std::path::Path::new(path)).unwrap();
    s.workload.warmup_h = 0.0;
    s.workload.measure_h = 3.0;
    let run = |s: &migplan::scenario::Scenario| {
        let mut sim = Simulator::new(s, policy::by_name("ff", &s.policy).unwrap()).unwrap();
        sim.run();
        (sim.metrics(), sim.refused())
    };
    let (m, n) = run(&s);
    assert_eq!((m.refused, n), (0, 0), "no admission rule is on");
    // Half the VMs of §6.2 ask for two GIs: routed to whole GPUs only, most are refused.
    s.policy.multi_gpu_whole_only = true;
    let (m, n) = run(&s);
    assert!(m.refused > 0, "{m:?}");
    assert_eq!(m.refused, n, "every request arrives inside the window");
    assert!(m.refused <= m.rejected);
}
