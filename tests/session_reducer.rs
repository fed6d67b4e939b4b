//! The session reducer, action by action, without any rendering: each test checks the fleet
//! against what the action must do, the invariants of DESIGN §1, and that undo restores the
//! state exactly.

use migplan::fleet::{GiRequest, GiSlot, Placement, VmKind};
use migplan::session::{self, update, Action, EventKind, Outcome, Session, VmRequest};

fn demo() -> Session {
    Session::demo().expect("the embedded demo loads")
}

fn req(model: &str, profiles: &[&str]) -> VmRequest {
    let c = migplan::catalog::embedded();
    let m = c.model_id(model).unwrap();
    let gis: Vec<GiRequest> = profiles
        .iter()
        .map(|p| GiRequest {
            model: m,
            profile: c.model(m).profile(p).unwrap(),
        })
        .collect();
    let compute: u32 = gis.iter().map(|g| c.model(m).profiles[g.profile].compute as u32).sum();
    VmRequest {
        gis,
        cores: 4 * compute,
        ram_gb: 16 * compute,
        lifetime_s: Some(7200.0),
        kind: VmKind::Job,
        tenant: None,
        pin: None,
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
    assert!(!s.modified(), "undo back to the opened state clears the modified mark");
    update(&mut s, Action::Redo).unwrap();
    assert!(s.fleet().vm(id).unwrap().placement.is_some());
    assert!(update(&mut s, Action::Redo).is_err(), "nothing left to redo");
}

#[test]
fn a_request_that_fits_nowhere_waits_with_the_reason() {
    let mut s = demo();
    // The only empty A100 (a100-3 GPU 1) takes the first whole-GPU request.
    update(&mut s, Action::AddVm(req("a100-40gb", &["7g.40gb"]))).unwrap();
    let pending_before = s.fleet().pending().len();
    let out = update(&mut s, Action::AddVm(req("a100-40gb", &["7g.40gb"]))).unwrap();
    let msg = out.message();
    assert!(msg.contains("does not fit: pending"), "{msg}");
    assert!(msg.contains("7g.40gb fits on none of the 8 a100-40gb GPUs"), "{msg}");
    assert_eq!(s.fleet().pending().len(), pending_before + 1);
    let waiting = &s.gauges().pending;
    assert_eq!(waiting.len(), s.fleet().pending().len());
    assert!(waiting.iter().all(|w| !w.reason.is_empty()));
    s.fleet().check_invariants().unwrap();
}

#[test]
fn fragmented_gpu_reason_names_compaction() {
    // A GPU with 1g.5gb at 0 and 5: a 3g.20gb has 6 free slices but no free permitted start
    // (0 and 4 are blocked); packing the two small GIs to 0 and 1 frees start 4 (Fig. 1c).
    let mut s = demo();
    let h = host(&s, "a100-3");
    // a100-3 GPU 0 holds VM 9 (1g.5gb at 1). Fill GPU 1 the fragmented way and block GPU 0.
    for (gpu, start) in [(1, 0), (1, 5)] {
        let mut r = req("a100-40gb", &["1g.5gb"]);
        r.pin = Some(Placement {
            host: h,
            gis: vec![GiSlot { gpu, start }],
        });
        update(&mut s, Action::AddVm(r)).unwrap();
    }
    let gpu = &s.fleet().hosts[h].gpus[1];
    let p3 = s.fleet().catalog.model(gpu.model).profile("3g.20gb").unwrap();
    let ex = session::explain_starts(s.fleet(), gpu, p3);
    assert!(ex.fragmented && ex.fits_after_compaction, "{ex:?}");
    assert_eq!(ex.free_slices, 6);
    let verdicts: Vec<(u8, String)> = ex.starts.iter().map(|(z, v)| (*z, format!("{v:?}"))).collect();
    assert_eq!(verdicts[0].0, 0);
    assert!(verdicts[0].1.starts_with("Occupied { slice: 0"), "{verdicts:?}");
    // Slices 1-4 are free but 1 is not a permitted start of a 3g.20gb (Fig. 1b).
    assert!(verdicts.contains(&(1, "NotPermitted".into())), "{verdicts:?}");
    assert!(verdicts.iter().any(|(z, v)| *z == 4 && v.starts_with("Occupied { slice: 5")));
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

#[test]
fn a_move_that_breaks_a_rule_is_refused_with_the_reason_and_changes_nothing() {
    let mut s = demo();
    let before = s.fleet().clone();
    let h = host(&s, "a100-0");
    // VM 4 (3g.20gb) onto slice 0 of GPU 0, where VM 1 sits.
    let err = update(
        &mut s,
        Action::MoveVm {
            vm: 4,
            to: Placement {
                host: h,
                gis: vec![GiSlot { gpu: 0, start: 0 }],
            },
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("slice 0") && err.contains("VM 1"), "{err}");
    // A start the profile does not permit.
    let err = update(
        &mut s,
        Action::MoveVm {
            vm: 4,
            to: Placement {
                host: h,
                gis: vec![GiSlot { gpu: 1, start: 2 }],
            },
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("permitted starts are [0, 4]"), "{err}");
    assert_eq!(s.fleet(), &before);
    assert!(!s.can_undo(), "a refused action leaves no undo entry");
    // A legal move: to the empty GPU 1 of a100-3.
    let h3 = host(&s, "a100-3");
    update(
        &mut s,
        Action::MoveVm {
            vm: 4,
            to: Placement {
                host: h3,
                gis: vec![GiSlot { gpu: 1, start: 0 }],
            },
        },
    )
    .unwrap();
    s.fleet().check_invariants().unwrap();
    assert!(s.fleet().hosts[h].gpus[1].occ.is_empty());
}

#[test]
fn stepping_an_hour_runs_departures_and_integrates_energy() {
    let mut s = demo();
    let p0 = s.fleet().power_w();
    // VM 11 (lifetime 1 h) departs exactly at the end of the hour; the power is constant before.
    update(&mut s, Action::StepFor(3600.0)).unwrap();
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
    let mut s = demo();
    update(&mut s, Action::StepToNextEvent).unwrap();
    assert_eq!(s.now_s(), 3600.0, "VM 11 has the shortest lifetime, 1 h");
    update(&mut s, Action::StepToNextEvent).unwrap();
    assert_eq!(s.now_s(), 5400.0, "then VM 6 (1.5 h)");
    update(&mut s, Action::Step).unwrap();
    assert_eq!(s.now_s(), 5410.0);
    assert!(update(&mut s, Action::StepFor(-5.0)).is_err());
    assert!(update(&mut s, Action::StepFor(f64::NAN)).is_err());
}

#[test]
fn a_play_run_is_one_undo_step() {
    let mut s = demo();
    update(&mut s, Action::TogglePlay).unwrap();
    assert!(s.playing());
    for _ in 0..5 {
        update(&mut s, Action::PlayTick(600.0)).unwrap();
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
    update(&mut s, Action::StepFor(1800.0)).unwrap();
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
    let err = update(&mut s, Action::SetPolicy("bogus".into())).unwrap_err().to_string();
    assert!(err.contains("bogus") && err.contains("ff"), "{err}");
    let out = update(&mut s, Action::SetPolicy("ff".into())).unwrap();
    assert!(matches!(out, Outcome::Info(_)), "already ff");
}

#[test]
fn optimize_hands_back_a_solve_request_for_the_current_revision() {
    let mut s = demo();
    match update(&mut s, Action::Optimize(session::OptimizeMode::Auto)).unwrap() {
        Outcome::Solve(r) => {
            assert_eq!(r.revision, s.revision());
            assert_eq!(&r.fleet, s.fleet());
        }
        o => panic!("{o:?}"),
    }
    assert!(!s.modified(), "asking for a plan changes nothing");
    // No request waits once VM 12 is removed: an admission call has nothing to do.
    update(&mut s, Action::RemoveVm(12)).unwrap();
    assert!(update(&mut s, Action::Optimize(session::OptimizeMode::Admission)).is_err());
}

#[test]
fn undo_on_a_fresh_session_is_an_error_not_a_change() {
    let mut s = demo();
    assert!(update(&mut s, Action::Undo).is_err());
    assert!(!s.modified());
}
