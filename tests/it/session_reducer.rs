//! The session reducer, action by action, without any rendering: each test checks the fleet
//! against what the action must do, the fleet's invariants (no shared memory slice, permitted
//! starts, cores and RAM within capacity), and that undo restores the state exactly.

use crate::common::fleet::{
    at, eight_gpu_hosts_with_one_gpu_to_compact, fleet_of, gi_requests, mig_vm, put, total_compute,
};
use migplan::fleet::{Fleet, GiSlot, Placement, Vm, VmId, VmKind};
use migplan::session::{self, update, update_blocking, Action, EventKind, Outcome, Session, VmRequest};

fn demo() -> Session {
    Session::demo().expect("the embedded demo loads")
}

/// The demo with the workload's arrivals off: only departures happen when time steps.
fn demo_quiet() -> Session {
    let mut sc = migplan::scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
    sc.workload.enabled = false;
    Session::new(sc, None).unwrap()
}

fn req(model: &str, profiles: &[&str]) -> VmRequest {
    let c = migplan::catalog::embedded();
    let gis = gi_requests(c, model, profiles);
    let compute = total_compute(c, &gis);
    VmRequest {
        gis,
        cores: 4 * compute,
        ram_gb: 16 * compute,
        lifetime_s: Some(7200.0),
        kind: VmKind::Job,
        tenant: None,
        pin: None,
        shape: migplan::fleet::Shape::Mig,
    }
}

fn host(s: &Session, name: &str) -> usize {
    s.fleet().hosts.iter().position(|h| h.name == name).unwrap()
}

#[test]
fn add_places_by_first_fit_and_undo_redo_restore_exactly() {
    let mut s = demo();
    let before = s.fleet().clone();
    let out = update(&mut s, Action::AddVm(req("a100-40gb", &["3g.20gb"]))).unwrap();
    assert!(matches!(out, Outcome::Changed(_)));
    s.fleet().check_invariants().unwrap();
    let id = s.fleet().next_vm_id() - 1;
    let vm = s.fleet().vm(id).unwrap();
    // First fit: a100-0 GPU 0 has slices 0 and 3-5 taken, so the 3g.20gb cannot go there (its
    // starts are 0 and 4); GPU 1 has 4-7 taken and start 0 free.
    assert_eq!(
        vm.placement,
        Some(Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 1, start: 0 }]
        })
    );
    assert_eq!(vm.admitted_at, Some(0.0));
    assert!(s.modified());
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.fleet(), &before);
    assert!(
        !s.modified(),
        "undo back to the opened state clears the modified mark"
    );
    update(&mut s, Action::Redo).unwrap();
    assert!(s.fleet().vm(id).unwrap().placement.is_some());
    assert!(update(&mut s, Action::Redo).is_err(), "nothing left to redo");
}

#[test]
fn a_request_that_fits_nowhere_waits_with_the_reason() {
    let mut s = demo();
    // Every A100 of the demo holds a GI, so a whole-GPU request fits nowhere.
    let pending_before = s.fleet().pending().len();
    let out = update(&mut s, Action::AddVm(req("a100-40gb", &["7g.40gb"]))).unwrap();
    let msg = out.message();
    assert!(msg.contains("does not fit: pending"), "{msg}");
    assert!(
        msg.contains("7g.40gb fits on none of the 8 a100-40gb GPUs"),
        "{msg}"
    );
    assert_eq!(s.fleet().pending().len(), pending_before + 1);
    let waiting = &s.gauges().pending;
    assert_eq!(waiting.len(), s.fleet().pending().len());
    assert!(waiting.iter().all(|w| w.reason.contains("fits on none")));
    s.fleet().check_invariants().unwrap();
}

/// The request as an unplaced job VM that arrived at time 0.
fn unplaced_job(id: u64, r: VmRequest) -> Vm {
    Vm::job(id, r.gis, r.cores, r.ram_gb)
}

/// One host with one A100 holding 1g.5gb GIs at the given starts.
fn small_gis_at(starts: &[u8]) -> Fleet {
    let mut f = fleet_of(&[("h", 80, 512, &["a100-40gb"])]);
    for &z in starts {
        let vm = unplaced_job(0, req("a100-40gb", &["1g.5gb"]));
        put(&mut f, vm, at(0, &[(0, z)]));
    }
    f
}

#[test]
fn fragmented_gpu_reason_names_compaction() {
    // 1g.5gb at 0 and 5: a 3g.20gb has 6 free slices but no free permitted start (0 and 4 are
    // blocked); packing the two small GIs to 0 and 1 frees start 4 (Fig. 1c).
    let f = small_gis_at(&[0, 5]);
    let vm = unplaced_job(99, req("a100-40gb", &["3g.20gb"]));
    let why = session::unplaced_reason(&f, &vm);
    assert_eq!(
        why,
        "3g.20gb fits on none of the 1 a100-40gb GPUs; 1 have 4 free slices but not at a permitted \
         start; 1 would fit it after compaction (try the optimizer: o)"
    );
}

#[test]
fn remove_takes_the_vm_out_and_undo_brings_it_back() {
    let mut s = demo();
    let before = s.fleet().clone();
    update(&mut s, Action::RemoveVm(4)).unwrap();
    assert!(s.fleet().vm(4).is_none());
    let h = host(&s, "a100-0");
    assert!(s.fleet().hosts[h].gpus[1].occ.is_empty());
    assert!(s.log().any(|e| e.kind == EventKind::Removal));
    assert!(update(&mut s, Action::RemoveVm(999)).is_err());
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.fleet(), &before);
}

/// Moving VM `vm` to one GI at `start` of GPU `gpu` of host `host`.
fn move_vm(vm: VmId, host: usize, gpu: usize, start: u8) -> Action {
    Action::MoveVm {
        vm,
        to: Placement {
            host,
            gis: vec![GiSlot { gpu, start }],
        },
    }
}

#[test]
fn a_move_that_breaks_a_rule_is_refused_with_the_reason_and_changes_nothing() {
    let mut s = demo();
    let before = s.fleet().clone();
    let h = host(&s, "a100-0");
    // VM 4 (3g.20gb) onto slice 0 of GPU 0, where VM 1 sits.
    let err = update(&mut s, move_vm(4, h, 0, 0)).unwrap_err().to_string();
    assert!(err.contains("slice 0") && err.contains("VM 1"), "{err}");
    // A start the profile does not permit.
    let err = update(&mut s, move_vm(4, h, 1, 2)).unwrap_err().to_string();
    assert!(err.contains("permitted starts are [0, 4]"), "{err}");
    assert_eq!(s.fleet(), &before);
    assert!(!s.can_undo(), "a refused action leaves no undo entry");
    // A legal move: to slices 4-7 of a100-2 GPU 1 (VM 8 holds 2-3).
    let h2 = host(&s, "a100-2");
    update(&mut s, move_vm(4, h2, 1, 4)).unwrap();
    s.fleet().check_invariants().unwrap();
    assert!(s.fleet().hosts[h].gpus[1].occ.is_empty());
}

#[test]
fn stepping_an_hour_runs_departures_and_integrates_energy() {
    let mut s = demo_quiet();
    let p0 = s.fleet().power_w();
    // VM 11 (lifetime 1 h) departs exactly at the end of the hour; the power is constant before.
    update_blocking(&mut s, Action::StepFor(3600.0)).unwrap();
    assert_eq!(s.now_s(), 3600.0);
    assert!(s.fleet().vm(11).is_none());
    assert!(s
        .log()
        .any(|e| e.kind == EventKind::Departure && e.text.starts_with("VM 11")));
    let want_kwh = p0 * 3600.0 / 3.6e6;
    assert!(
        (s.gauges().energy_kwh - want_kwh).abs() < 1e-9,
        "{} vs {want_kwh}",
        s.gauges().energy_kwh
    );
    assert_eq!(
        s.now_date().to_rfc3339(),
        "2026-01-05T09:00:00+00:00",
        "the clock is the scenario's start plus the simulated time"
    );
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.now_s(), 0.0);
    assert!(s.fleet().vm(11).is_some());
}

#[test]
fn next_event_goes_to_the_earliest_departure() {
    let mut s = demo_quiet();
    update_blocking(&mut s, Action::StepToNextEvent).unwrap();
    assert_eq!(s.now_s(), 3600.0, "VM 11 has the shortest lifetime, 1 h");
    update_blocking(&mut s, Action::StepToNextEvent).unwrap();
    assert_eq!(s.now_s(), 5400.0, "then VM 6 (1.5 h)");
    update_blocking(&mut s, Action::Step).unwrap();
    assert_eq!(s.now_s(), 5410.0);
    assert!(update_blocking(&mut s, Action::StepFor(-5.0)).is_err());
    assert!(update_blocking(&mut s, Action::StepFor(f64::NAN)).is_err());
}

#[test]
fn a_play_run_is_one_undo_step() {
    let mut s = demo();
    update(&mut s, Action::TogglePlay).unwrap();
    assert!(s.playing());
    for _ in 0..5 {
        update_blocking(&mut s, Action::PlayTick(600.0)).unwrap();
    }
    assert_eq!(s.now_s(), 3000.0);
    update(&mut s, Action::TogglePlay).unwrap();
    assert!(!s.playing());
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.now_s(), 0.0);
    assert!(!s.can_undo());
}

#[test]
fn save_and_open_round_trip_and_track_the_modified_mark() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("saved.toml");
    let mut s = demo();
    assert!(
        update(&mut s, Action::Save(None)).is_err(),
        "the demo has no file: saving needs a name"
    );
    update(&mut s, Action::AddVm(req("a30-24gb", &["2g.12gb"]))).unwrap();
    update_blocking(&mut s, Action::StepFor(1800.0)).unwrap();
    assert!(s.modified());
    update(&mut s, Action::Save(Some(path.clone()))).unwrap();
    assert!(!s.modified());
    assert_eq!(s.path(), Some(path.as_path()));
    let saved = s.fleet().clone();
    update(&mut s, Action::Undo).unwrap();
    assert!(s.modified(), "undo past the save is a change");
    update(&mut s, Action::Open(path.clone())).unwrap();
    assert!(!s.modified());
    assert!(!s.can_undo(), "opening a file starts a fresh history");
    assert_eq!(s.now_s(), 1800.0);
    assert_eq!(s.fleet().hosts, saved.hosts);
    assert_eq!(
        s.fleet().vms().collect::<Vec<_>>(),
        saved.vms().collect::<Vec<_>>()
    );
    let err = update(&mut s, Action::Open(dir.path().join("missing.toml")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.toml"), "{err}");
}

#[test]
fn policy_switch_names_the_choices() {
    let mut s = demo();
    let err = update(&mut s, Action::SetPolicy("bogus".into()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus") && err.contains("ff"), "{err}");
    let out = update(&mut s, Action::SetPolicy("ff".into())).unwrap();
    assert!(matches!(out, Outcome::Info(_)), "already ff");
    update(&mut s, Action::SetPolicy("packing".into())).unwrap();
    assert_eq!(s.policy_name(), "packing");
    assert!(s.modified());
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.policy_name(), "ff");
    // `policy next` cycles through every arrival policy and back.
    let mut seen = vec![s.policy_name().to_string()];
    for _ in 0..5 {
        let next = session::parse_command(&s, "policy next").unwrap();
        update(&mut s, next).unwrap();
        seen.push(s.policy_name().to_string());
    }
    assert_eq!(seen, ["ff", "mfi", "tc", "origamig", "packing", "ff"]);
    assert!(
        update(&mut s, Action::SetPolicy("opt".into())).is_err(),
        "the whole-fleet OPT is an on-demand call, not an arrival policy"
    );
}

/// The same scenario run by the simulator alone, for the truth.
fn demo_sim(policy: &str) -> migplan::sim::Simulator {
    let mut sc = migplan::scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
    sc.workload.warmup_h = 0.0;
    sc.workload.measure_h = 1000.0;
    let p = migplan::policy::by_name(policy, &sc.policy).unwrap();
    migplan::sim::Simulator::new(&sc, p).unwrap()
}

#[test]
fn stepping_an_hour_brings_the_workloads_arrivals_as_the_simulator_does() {
    let mut s = demo();
    assert!(s.arrivals(), "the demo's workload is on");
    update_blocking(&mut s, Action::StepFor(3600.0)).unwrap();
    let mut sim = demo_sim("ff");
    sim.step_until(3600.0).unwrap();
    assert_eq!(s.fleet(), sim.fleet(), "the session's fleet is the simulator's");
    let arrivals = sim
        .events()
        .iter()
        .filter(|e| matches!(e.kind, migplan::sim::EventKind::Arrival { .. }))
        .count();
    assert!(
        arrivals > 0,
        "load 0.6 on the demo brings requests within an hour"
    );
    let logged: Vec<_> = s.log().filter(|e| e.kind == EventKind::Arrival).collect();
    assert_eq!(logged.len(), arrivals);
    assert!(logged
        .iter()
        .all(|e| e.t > 0.0 && e.t <= 3600.0 && e.text.contains("arrived")));
    // Every arrival is admitted or rejected (first fit does not queue).
    let decided = s
        .log()
        .filter(|e| matches!(e.kind, EventKind::Admission | EventKind::Rejection))
        .count();
    assert_eq!(decided, arrivals);
    s.fleet().check_invariants().unwrap();
    // The gauges follow the simulator's recorder.
    let m = sim.metrics();
    assert!((s.gauges().energy_kwh - m.energy_mwh * 1000.0).abs() < 1e-9);
    assert!((s.gauges().acceptance - m.acceptance_pct / 100.0).abs() < 1e-12);
    assert_eq!(s.gauges().active_hosts, sim.fleet().active_hosts());
    // Undo puts the clock, the fleet and the workload back: redo and a replay agree.
    let after = s.fleet().clone();
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.now_s(), 0.0);
    assert_eq!(s.fleet(), demo().fleet());
    update(&mut s, Action::Redo).unwrap();
    assert_eq!(s.fleet(), &after);
    update(&mut s, Action::Undo).unwrap();
    update_blocking(&mut s, Action::StepFor(3600.0)).unwrap();
    assert_eq!(s.fleet(), &after, "the workload is deterministic for its seed");
}

#[test]
fn arrivals_off_leaves_only_departures() {
    let mut s = demo();
    update(&mut s, Action::SetArrivals(false)).unwrap();
    assert!(!s.arrivals());
    update_blocking(&mut s, Action::StepFor(2.0 * 3600.0)).unwrap();
    assert!(s.log().all(|e| e.kind != EventKind::Arrival));
    assert!(s.log().any(|e| e.kind == EventKind::Departure));
    let mut sim = demo_sim("ff");
    sim.set_arrivals(false);
    sim.step_until(7200.0).unwrap();
    assert_eq!(s.fleet(), sim.fleet());
    assert!(!s.to_scenario().workload.enabled, "saved with arrivals off");
}

#[test]
fn each_arrival_policy_runs_the_simulators_steps() {
    for name in ["mfi", "tc", "packing"] {
        let mut s = demo();
        update(&mut s, Action::SetPolicy(name.into())).unwrap();
        assert_eq!(s.policy_name(), name);
        update_blocking(&mut s, Action::StepFor(1800.0)).unwrap();
        let mut sim = demo_sim(name);
        sim.step_until(1800.0).unwrap();
        assert_eq!(s.fleet(), sim.fleet(), "{name}");
        s.fleet().check_invariants().unwrap();
    }
}

#[test]
fn a_hand_request_under_first_fit_waits_and_is_logged_by_the_simulator() {
    let mut s = demo();
    update(&mut s, Action::AddVm(req("a100-40gb", &["7g.40gb"]))).unwrap();
    let id = s.fleet().next_vm_id() - 1;
    assert!(
        s.fleet().pending().contains(&id),
        "queued although ff rejects its own arrivals"
    );
    let last: Vec<_> = s.log().rev().take(2).collect();
    assert_eq!(last[0].kind, EventKind::Queued, "{last:?}");
    assert_eq!(last[1].kind, EventKind::Arrival);
    assert!(last[1].text.contains("7g.40gb"), "{}", last[1].text);
}

#[test]
fn optimize_hands_back_a_solve_request_for_the_current_revision() {
    let mut s = demo();
    match update(&mut s, Action::Optimize(session::CallMode::Auto)).unwrap() {
        Outcome::Solve(r) => {
            assert_eq!(r.revision, s.revision());
            assert_eq!(&r.fleet, s.fleet());
        }
        o => panic!("{o:?}"),
    }
    assert!(!s.modified(), "asking for a plan changes nothing");
    // No request waits once VM 12 is removed: an admission call has nothing to do.
    update(&mut s, Action::RemoveVm(12)).unwrap();
    assert!(update(&mut s, Action::Optimize(session::CallMode::Admission)).is_err());
}

/// Two hosts of one A100, each full with a 7g.40gb: no host can be switched off and nothing
/// waits, so the optimizer has no neighborhood, and the planner says why instead of only
/// "nothing better".
#[test]
fn an_optimize_with_nothing_to_decide_says_why() {
    let mut sc = migplan::scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
    sc.workload.enabled = false;
    let one_a100 = &["a100-40gb"][..];
    let mut f = fleet_of(&[("h0", 64, 512, one_a100), ("h1", 64, 512, one_a100)]);
    put(&mut f, mig_vm(1, "a100-40gb", &["7g.40gb"]), at(0, &[(0, 0)]));
    put(&mut f, mig_vm(2, "a100-40gb", &["7g.40gb"]), at(1, &[(0, 0)]));
    sc.fleet = f;
    let mut s = Session::new(sc, None).unwrap();
    let req = match update(&mut s, Action::Optimize(session::CallMode::Auto)).unwrap() {
        Outcome::Solve(r) => r,
        o => panic!("{o:?}"),
    };
    let p = req.run(Default::default(), |_| {}).unwrap();
    assert!(p.hosts.is_empty() && p.plan.targets.is_empty(), "{p:?}");
    match update(&mut s, Action::Proposed(Box::new(p))).unwrap() {
        Outcome::Info(msg) => {
            assert!(msg.contains("nothing to decide"), "{msg}");
            assert!(msg.contains("no host can go off"), "{msg}");
        }
        o => panic!("{o:?}"),
    }
    assert!(!s.modified());
}

/// On the fleet of [`eight_gpu_hosts_with_one_gpu_to_compact`] the call has nothing to decide;
/// `o` then previews the GPU compaction: the 3g.20gb (VM 2) joins the 4g.20gb at start 4, one
/// move, one whole GPU more free (6 -> 7 idle GPUs on h0).
#[test]
fn an_optimize_on_eight_gpu_hosts_with_nothing_to_decide_previews_the_gpu_compaction() {
    let mut sc = migplan::scenario::parse(migplan::scenario::DEMO, "demo.toml").unwrap();
    sc.workload.enabled = false;
    sc.fleet = eight_gpu_hosts_with_one_gpu_to_compact();
    let mut s = Session::new(sc, None).unwrap();
    let idle = |f: &Fleet| f.hosts[0].gpus.iter().filter(|g| g.gis.is_empty()).count();
    assert_eq!(idle(s.fleet()), 6);
    let req = match update(&mut s, Action::Optimize(session::CallMode::Auto)).unwrap() {
        Outcome::Solve(r) => r,
        o => panic!("{o:?}"),
    };
    let p = req.run(Default::default(), |_| {}).unwrap();
    assert_eq!(p.status, session::GPU_COMPACTION_STATUS, "{p:?}");
    assert_eq!(p.plan.targets.len(), 1, "{p:?}");
    assert_eq!(p.plan.targets.get(&2), Some(&at(0, &[(0, 4)])), "{p:?}");
    match update(&mut s, Action::Proposed(Box::new(p))).unwrap() {
        Outcome::Info(msg) => {
            assert!(
                msg.starts_with("GPU compaction: 1 move(s) free 1 whole GPU(s)"),
                "{msg}"
            );
        }
        o => panic!("{o:?}"),
    }
    update(&mut s, Action::ApplyPlan).unwrap();
    s.fleet().check_invariants().unwrap();
    assert_eq!(s.fleet().vm(2).unwrap().placement, Some(at(0, &[(0, 4)])));
    assert_eq!(idle(s.fleet()), 7);
    // Nothing is left to compact: the next `o` says why the call had nothing to decide.
    let req = match update(&mut s, Action::Optimize(session::CallMode::Auto)).unwrap() {
        Outcome::Solve(r) => r,
        o => panic!("{o:?}"),
    };
    let p = req.run(Default::default(), |_| {}).unwrap();
    assert!(p.plan.targets.is_empty(), "{p:?}");
    match update(&mut s, Action::Proposed(Box::new(p))).unwrap() {
        Outcome::Info(msg) => assert!(msg.contains("nothing to decide"), "{msg}"),
        o => panic!("{o:?}"),
    }
}

#[test]
fn undo_on_a_fresh_session_is_an_error_not_a_change() {
    let mut s = demo();
    assert!(update(&mut s, Action::Undo).is_err());
    assert!(!s.modified());
}
