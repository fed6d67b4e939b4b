//! Plans in a session: a proposal becomes a preview (schedule, before and after, deltas) without
//! changing anything; it is applied whole or played phase by phase (create GI, migrate, destroy
//! old GI), and undo takes it back. The plans here are written by hand, so the checks do not
//! depend on the optimizer.

use migplan::executor::StepKind;
use migplan::fleet::{GiSlot, Placement};
use migplan::plan::Plan;
use migplan::session::{update, update_blocking, Action, PlanPhase, PlanProposal as Proposal, Session};

fn host(s: &Session, name: &str) -> usize {
    s.fleet().hosts.iter().position(|h| h.name == name).unwrap()
}

/// Move VM 9 (1g.5gb on a100-3 GPU 0, slice 1) to a100-1 GPU 0 slice 0, then start the pending
/// VM 12 (7g.40gb) on the GPU it vacated: the start can only run after the move.
fn proposal(s: &Session) -> Proposal {
    let (h1, h3) = (host(s, "a100-1"), host(s, "a100-3"));
    let mut plan = Plan {
        origin: "test".into(),
        ..Default::default()
    };
    plan.targets.insert(
        12,
        Placement {
            host: h3,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    plan.targets.insert(
        9,
        Placement {
            host: h1,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    Proposal::by_hand(plan, s.revision())
}

#[test]
fn a_proposal_is_previewed_without_changing_the_fleet() {
    let mut s = Session::demo().unwrap();
    let before = s.fleet().clone();
    let p = proposal(&s);
    update(&mut s, Action::Proposed(Box::new(p))).unwrap();
    assert_eq!(s.fleet(), &before);
    assert!(!s.modified() && !s.can_undo());
    let pv = s.preview().unwrap();
    let order: Vec<(u64, StepKind)> = pv.schedule.steps.iter().map(|st| (st.vm, st.kind)).collect();
    assert_eq!(order, vec![(9, StepKind::Move), (12, StepKind::Start)]);
    assert_eq!(pv.admitted, vec![12]);
    assert_eq!(pv.touched_hosts(), vec![host(&s, "a100-1"), host(&s, "a100-3")]);
    pv.after.check_invariants().unwrap();
    assert!(pv.after.pending().is_empty());
    // Hand-computed: on a100-3, VM 12 (28 cores, 7 compute slices) replaces VM 9 (4 cores,
    // 1 slice) on GPU 0, next to VM 13 (4 cores): cores 8 -> 32 of 80; a100-1 gains VM 9:
    // cores 8 -> 12, its GPU 0 goes from 1 to 2 compute slices. Other GPUs do not change.
    let curve = &before.catalog.curves[0];
    let gpu_w = |c: f64| 50.0 + 200.0 * c / 7.0;
    let want = (curve.watts(32.0 / 80.0) + gpu_w(7.0)) - (curve.watts(8.0 / 80.0) + gpu_w(1.0))
        + (curve.watts(12.0 / 80.0) + gpu_w(2.0))
        - (curve.watts(8.0 / 80.0) + gpu_w(1.0));
    assert!(
        (pv.delta_power_w() - want).abs() < 1e-9,
        "{} vs {want}",
        pv.delta_power_w()
    );
    assert!((pv.delta_energy_kwh() - want * 24.0 / 1000.0).abs() < 1e-9);
    assert_eq!(pv.delta_hosts(), 0);
    assert_eq!(pv.delta_gpus(), 0);
}

#[test]
fn apply_runs_every_step_and_undo_restores_the_preview() {
    let mut s = Session::demo().unwrap();
    let before = s.fleet().clone();
    let p = proposal(&s);
    update(&mut s, Action::Proposed(Box::new(p))).unwrap();
    let after = s.preview().unwrap().after.clone();
    update(&mut s, Action::ApplyPlan).unwrap();
    assert!(s.preview().is_none());
    assert_eq!(s.fleet().hosts, after.hosts);
    assert_eq!(s.fleet().vm(12).unwrap().admitted_at, Some(0.0));
    assert!(s.gauges().pending.is_empty());
    assert!((s.gauges().acceptance - 1.0).abs() < 1e-12);
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.fleet(), &before);
    assert!(s.preview().is_some(), "undoing the apply brings the preview back");
    update(&mut s, Action::DiscardPlan).unwrap();
    assert!(s.preview().is_none());
    assert!(update(&mut s, Action::ApplyPlan).is_err());
}

#[test]
fn playing_a_plan_goes_create_migrate_destroy_per_step() {
    let mut s = Session::demo().unwrap();
    let before = s.fleet().clone();
    let p = proposal(&s);
    update(&mut s, Action::Proposed(Box::new(p))).unwrap();
    let (h1, h3) = (host(&s, "a100-1"), host(&s, "a100-3"));
    // Step 1, a move: the new GI is created first, the VM still runs on the old one.
    update(&mut s, Action::PlanStep).unwrap();
    assert_eq!(s.preview().unwrap().phase, PlanPhase::Created);
    assert_eq!(s.fleet(), &before);
    assert!(
        update_blocking(&mut s, Action::StepFor(60.0)).is_err(),
        "time waits while a plan plays"
    );
    update(&mut s, Action::PlanStep).unwrap();
    assert_eq!(s.preview().unwrap().phase, PlanPhase::Migrated);
    assert_eq!(s.fleet().vm(9).unwrap().placement.as_ref().unwrap().host, h1);
    update(&mut s, Action::PlanStep).unwrap();
    let pv = s.preview().unwrap();
    assert_eq!((pv.done, pv.phase), (1, PlanPhase::Pending));
    // Step 2, a start: one phase.
    update(&mut s, Action::PlanStep).unwrap();
    assert!(s.preview().is_none(), "the plan is complete");
    assert_eq!(s.fleet().vm(12).unwrap().placement.as_ref().unwrap().host, h3);
    s.fleet().check_invariants().unwrap();
    for _ in 0..4 {
        update(&mut s, Action::Undo).unwrap();
    }
    assert_eq!(s.fleet(), &before);
}

#[test]
fn a_stale_or_impossible_plan_is_refused() {
    let mut s = Session::demo().unwrap();
    let mut p = proposal(&s);
    p.revision += 100;
    let e = update(&mut s, Action::Proposed(Box::new(p)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("changed while the optimizer ran"), "{e}");
    // Start VM 12 on a GPU that holds a GI and that no step vacates.
    let mut p = proposal(&s);
    p.plan.targets.remove(&9);
    p.plan.targets.insert(
        12,
        Placement {
            host: host(&s, "a100-0"),
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    let e = update(&mut s, Action::Proposed(Box::new(p)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot run"), "{e}");
    assert!(s.preview().is_none());
}

#[test]
fn a_departure_only_removes_steps() {
    let mut s = Session::demo().unwrap();
    let mut p = proposal(&s);
    // Also move VM 11 (an A30 VM that departs after 1 h) to the other GPU of its host.
    let h = host(&s, "a30-1");
    p.plan.targets.insert(
        11,
        Placement {
            host: h,
            gis: vec![GiSlot { gpu: 1, start: 0 }],
        },
    );
    update(&mut s, Action::Proposed(Box::new(p))).unwrap();
    assert_eq!(s.preview().unwrap().schedule.steps.len(), 3);
    update_blocking(&mut s, Action::StepFor(3600.0)).unwrap();
    assert!(s.fleet().vm(11).is_none());
    let pv = s.preview().expect("the rest of the plan is kept (§5.4)");
    let order: Vec<(u64, StepKind)> = pv.schedule.steps.iter().map(|st| (st.vm, st.kind)).collect();
    assert_eq!(order, vec![(9, StepKind::Move), (12, StepKind::Start)]);
}
