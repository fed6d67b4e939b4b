//! OrigaMIG's calls by trigger (`calls_by_trigger` of `simulate --json`), the skipped repeats of
//! neighborhoods a solve proved unchanged, and `[policy] reenable`.

use crate::common::cli::migplan;
use crate::common::fleet::{a100s, assert_checked_repeats, at, mig_vm, put};
use migplan::fleet::{Fleet, Vm, VmId};
use migplan::policy::origamig::triggers::{CallKind, Class, Triggers};
use migplan::policy::origamig::Origamig;
use migplan::policy_settings::{OrigamigSettings, Reenable};
use migplan::scenario;
use serde_json::Value;

fn simulate_json(scenario: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "simulate", scenario, "--policy", "origamig", "--seed", "1", "--load", "0.85", "--warmup", "2",
        "--hours", "2", "--json",
    ];
    args.extend(extra);
    let out = migplan().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn sum(rows: &[Value], field: &str) -> f64 {
    rows.iter().map(|r| r[field].as_f64().unwrap()).sum()
}

/// The rows add up to the run's own counters: solved calls to `calls` (and their seconds to
/// `call_s_total`), empty neighborhoods to `trigger_checks`; each row's unchanged calls are some
/// of its solved ones; the triggers and neighborhoods are the documented names, in order.
#[test]
fn the_calls_by_trigger_add_up_to_the_runs_counters() {
    let run = simulate_json("scenarios/paper-32.toml", &[]);
    let rows = run["calls_by_trigger"]
        .as_array()
        .expect("origamig prints calls_by_trigger");
    assert!(!rows.is_empty());
    assert_eq!(sum(rows, "solved"), run["calls"].as_f64().unwrap());
    assert_eq!(sum(rows, "empty"), run["trigger_checks"].as_f64().unwrap());
    assert!((sum(rows, "solved_s") - run["call_s_total"].as_f64().unwrap()).abs() < 1e-6);
    assert!((sum(rows, "empty_s") - run["trigger_check_s_total"].as_f64().unwrap()).abs() < 1e-6);
    let order = |r: &Value| {
        let t = ["admission", "gap", "host_gap"]
            .iter()
            .position(|x| r["trigger"] == *x);
        let n = ["algorithm1", "merge"]
            .iter()
            .position(|x| r["neighborhood"] == *x);
        assert!(t.is_some() && n.is_some(), "unexpected row {r}");
        (t, n)
    };
    let keys: Vec<_> = rows.iter().map(order).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "rows in order, each once: {keys:?}"
    );
    for r in rows {
        assert!(r["unchanged"].as_u64().unwrap() <= r["solved"].as_u64().unwrap());
        // An admission call always takes Algorithm 1's neighborhood.
        if r["trigger"] == "admission" {
            assert_eq!(r["neighborhood"], "algorithm1");
        }
    }
    // The plans' migrations: with no warm-up the run measures from its start, so the rows'
    // migrations are those of the calls' plans (a plan's steps all finish within the 8 hours
    // here), and with the moves of the host emptying, which are no call's, they are the run's.
    let out = migplan()
        .args([
            "simulate",
            "scenarios/paper-32.toml",
            "--policy",
            "origamig",
            "--seed",
            "2",
            "--load",
            "1.0",
            "--warmup",
            "0",
            "--hours",
            "8",
            "--json",
        ])
        .output()
        .unwrap();
    let cold: Value = serde_json::from_slice(&out.stdout).unwrap();
    let migrations = cold["migrations_per_h"].as_f64().unwrap() * cold["measured_h"].as_f64().unwrap();
    let moves = sum(cold["calls_by_trigger"].as_array().unwrap(), "moves");
    let by_origin = cold["migrations_by_origin"]
        .as_object()
        .expect("migrations by origin");
    let of = |f: &dyn Fn(&str) -> bool| -> f64 {
        by_origin
            .iter()
            .filter(|(k, _)| f(k))
            .map(|(_, v)| v.as_f64().unwrap())
            .sum()
    };
    let emptying = of(&|k| k == "origamig host emptying");
    assert!(moves > 0.0 && emptying > 0.0, "{by_origin:?}");
    assert_eq!(
        of(&|k| k.starts_with("origamig consolidation") || k.starts_with("origamig admission")),
        moves
    );
    assert_eq!(of(&|_| true), migrations, "{by_origin:?}");
    assert!((moves + emptying - migrations).abs() < 1e-6);
    // The default's merge neighborhoods and host gap trigger show up in the rows.
    assert!(rows.iter().any(|r| r["neighborhood"] == "merge"));
    // The paper preset has neither: its rows are admission and gap with Algorithm 1 only.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paper.toml");
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml")).unwrap();
    std::fs::write(&path, format!("{}\npreset = \"paper\"\n", src.trim_end())).unwrap();
    let paper = simulate_json(path.to_str().unwrap(), &[]);
    let rows = paper["calls_by_trigger"].as_array().unwrap();
    assert!(rows
        .iter()
        .all(|r| r["neighborhood"] == "algorithm1" && r["trigger"] != "host_gap"));
    assert_eq!(sum(rows, "solved"), paper["calls"].as_f64().unwrap());
    // FF makes no calls and prints no rows.
    let out = migplan()
        .args([
            "simulate",
            "scenarios/paper-32.toml",
            "--policy",
            "ff",
            "--warmup",
            "1",
            "--hours",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    let ff: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(ff.get("calls_by_trigger").is_none());
}

/// Every consolidation call skipped as a repeat of a neighborhood proven unchanged is solved
/// anyway (the policy's test switch) and must propose nothing: the skip is exact. The run has
/// repeats, so the check is exercised.
#[test]
fn a_skipped_repeat_would_have_changed_nothing() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml");
    let mut sc = scenario::load(std::path::Path::new(path)).unwrap();
    // FF at arrival on these two-GPU hosts and no host emptying: the short run below then
    // skips repeats (with the default's best fit and host emptying it skips none); whether a
    // skipped repeat would change nothing does not depend on either.
    sc.policy.origamig.arrival_best_fit_small = false;
    sc.policy.origamig.host_emptying_vms = 0;
    // And the re-enable rule before `reenable = "room"`, under which it calls too seldom.
    sc.policy.origamig.reenable = Reenable::Neighborhood;
    sc.policy.origamig.reenable_gap_rise = 1;
    let mut policy = Origamig::new(&sc.policy.origamig);
    policy.set_check_repeats(true);
    assert_checked_repeats(sc, Box::new(policy));
}

fn vm_1g(id: VmId) -> Vm {
    mig_vm(id, "a100-40gb", &["1g.5gb"])
}

/// Four hosts with one 1g.5gb VM each on GPU 0, and a second one on h0: Γh = 4 active GPUs -
/// ceil(5 / 7) = 3.
fn five_vms() -> Fleet {
    let mut f = a100s(4);
    for (id, host, start) in [(1, 0, 0), (2, 1, 0), (3, 2, 0), (4, 3, 0), (5, 0, 1)] {
        put(&mut f, vm_1g(id), at(host, &[(0, start)]));
    }
    f.check_invariants().unwrap();
    f
}

fn depart(f: &mut Fleet, t: &mut Triggers, id: VmId) {
    let host = f.vm(id).unwrap().placement.as_ref().map(|p| p.host);
    let vm = f.remove(id).unwrap();
    t.on_departure(f, &vm, host);
}

/// With `reenable = "departure"` any departure of the class enables it again; with
/// `"neighborhood"` only one from a host of the disabling call's M̂ (here h0 and h1), or Γh
/// rising above its lowest value since.
#[test]
fn reenable_neighborhood_waits_for_a_departure_from_the_calls_hosts() {
    let a100 = Class::Gpu("a100-40gb".into());
    let call = Some(CallKind::Consolidation(a100.clone()));
    for mode in [Reenable::Departure, Reenable::Neighborhood] {
        let s = OrigamigSettings {
            reenable: mode,
            ..OrigamigSettings::default()
        };
        let mut f = five_vms();
        let mut t = Triggers::new();
        assert_eq!(t.next_call(&f, &s), call);
        t.after_call_on(&f, call.as_ref().unwrap(), false, &[0, 1]);
        assert_eq!(t.next_call(&f, &s), None, "disabled");
        // VM 3 leaves h2, outside M̂: Γh falls to 2 (3 active GPUs, 4 slices).
        depart(&mut f, &mut t, 3);
        match mode {
            Reenable::Departure => assert_eq!(t.next_call(&f, &s), call),
            Reenable::Neighborhood => {
                assert_eq!(t.next_call(&f, &s), None, "a departure outside M̂");
                assert!(t.is_disabled(&a100));
                // VM 5 leaves h0, in M̂: enabled again though Γh stays 2.
                depart(&mut f, &mut t, 5);
                assert_eq!(t.next_call(&f, &s), call);
            }
            Reenable::Room => unreachable!("tested below"),
        }
    }
}

/// Four hosts of two A100s (8 memory slices each), all jobs (δ_i = 15 + 15 = 30, so a move
/// across hosts costs 2δ_i = 60 under Eq. 5; switching a host off is worth b + e = 70 with one
/// active GPU, 90 with two):
/// - h0: four 1g.5gb on GPU 0 (VMs 1-4): 4 slices, moves 240 >= 70, not worth its moves;
/// - h1: one 3g.20gb on GPU 0 (VM 5): 4 slices, moves 60 < 70, worth them;
/// - h2: three 1g.5gb on GPU 0 (VMs 6-8), one on GPU 1 (VM 9): 4 slices, 240 >= 90;
/// - h3: one 3g.20gb on GPU 0 (VM 10), one 2g.10gb on GPU 1 (VM 11).
///
/// 18 slices on 6 active GPUs: Γh = 6 - ceil(18 / 8) = 3.
fn room_fleet() -> Fleet {
    let mut f = a100s(4);
    let g3 = |id| mig_vm(id, "a100-40gb", &["3g.20gb"]);
    for (id, start) in [(1, 0), (2, 1), (3, 2), (4, 3)] {
        put(&mut f, vm_1g(id), at(0, &[(0, start)]));
    }
    put(&mut f, g3(5), at(1, &[(0, 0)]));
    for (id, gpu, start) in [(6, 0, 0), (7, 0, 1), (8, 0, 2), (9, 1, 0)] {
        put(&mut f, vm_1g(id), at(2, &[(gpu, start)]));
    }
    put(&mut f, g3(10), at(3, &[(0, 0)]));
    put(&mut f, mig_vm(11, "a100-40gb", &["2g.10gb"]), at(3, &[(1, 0)]));
    f.check_invariants().unwrap();
    f
}

/// `reenable = "room"` after a call on M̂ = {h0, h1, h2} of [`room_fleet`] that changed
/// nothing. Of M̂ only h1 is worth its moves, so the room side waits for `reenable_room_share`
/// × its 4 slices freed from M̂; Γh stays at or below its lowest value since throughout
/// (`merge_hosts = 0`: no host gap). Share 1 (need 4): VM 1 leaves h0 (freed 1; "neighborhood"
/// would enable the class here), VM 10 leaves h3 outside M̂ (not counted; Γh stays 3), VM 6
/// and VM 2 leave (freed 3), none making a host worth its moves (h0 keeps two jobs, 120 >= 70;
/// h2 three, 180 >= 90); VM 7 leaves h2 (freed 4): enabled. Share 0.5 (need 2): enabled at VM 6
/// (freed 2).
#[test]
fn reenable_room_waits_for_the_lightest_paying_hosts_slices() {
    let a100 = Class::Gpu("a100-40gb".into());
    let call = Some(CallKind::Consolidation(a100.clone()));
    for (share, enabled_at) in [(1.0, 7), (0.5, 6)] {
        let s = OrigamigSettings {
            reenable: Reenable::Room,
            reenable_room_share: share,
            merge_hosts: 0,
            ..OrigamigSettings::default()
        };
        let mut f = room_fleet();
        let mut t = Triggers::new();
        assert_eq!(t.next_call(&f, &s), call);
        t.after_call_on(&f, call.as_ref().unwrap(), false, &[0, 1, 2]);
        assert_eq!(t.next_call(&f, &s), None, "disabled");
        for id in [1, 10, 6, 2, 7] {
            depart(&mut f, &mut t, id);
            let want = if id == enabled_at { call.clone() } else { None };
            assert_eq!(t.next_call(&f, &s), want, "share {share}, after VM {id} left");
            if want.is_some() {
                break;
            }
        }
    }
}

/// `reenable = "room"`, the cost side, with the room side out of reach (share 100): h1 was
/// worth its moves at the call, so its emptying (VM 5 leaves) does not count; h0 becomes worth
/// its moves when it is down to one job (VM 4: moves 60 < b + e = 70), at VM 3's departure, and
/// not before (two jobs, 120). Γh stays 3.
#[test]
fn reenable_room_enables_a_class_when_a_host_of_the_call_becomes_worth_its_moves() {
    let a100 = Class::Gpu("a100-40gb".into());
    let call = Some(CallKind::Consolidation(a100.clone()));
    let s = OrigamigSettings {
        reenable: Reenable::Room,
        reenable_room_share: 100.0,
        merge_hosts: 0,
        ..OrigamigSettings::default()
    };
    let mut f = room_fleet();
    let mut t = Triggers::new();
    assert_eq!(t.next_call(&f, &s), call);
    t.after_call_on(&f, call.as_ref().unwrap(), false, &[0, 1, 2]);
    for id in [5, 1, 2] {
        depart(&mut f, &mut t, id);
        assert_eq!(t.next_call(&f, &s), None, "after VM {id} left");
    }
    depart(&mut f, &mut t, 3);
    assert_eq!(t.next_call(&f, &s), call);
    assert!(!t.is_disabled(&a100));
}

/// `reenable_gap_rise` = k: Γh must rise k above its lowest value since the call that changed
/// nothing. A call on M̂ = {h0, h1} of [`five_vms`] changes nothing at Γh = 3; VM 3 leaves h2,
/// outside M̂ (no departure rule fires): 3 active GPUs - ceil(4 / 8) = 2, the lowest since.
/// Then 1g.5gb arrivals each open a GPU: VM 6 on h1 (4 GPUs, 5 slices: Γh 3, a rise of 1),
/// VM 7 on h2 (5, 6: Γh 4, rise 2), VM 8 on h3 (6, 7: Γh 5, rise 3), VM 9 on h0 (7, 8: Γh 6,
/// rise 4), VM 10 on h2's other GPU (8, 9: ceil(9 / 8) = 2, Γh stays 6). So k = 1 (any rise)
/// enables the class at VM 6, k = 2 at VM 7 (measured from 2, not from 3 at the call: VM 8
/// would be wrong), 3 at VM 8, 4 at VM 9, and 5 not at all.
#[test]
fn reenable_gap_rise_counts_from_the_lowest_gap_since_the_call() {
    let call = Some(CallKind::Consolidation(Class::Gpu("a100-40gb".into())));
    let arrivals = [(6, 1, 1), (7, 2, 1), (8, 3, 1), (9, 0, 1), (10, 2, 0)];
    // Each k as written (no class-size floor), then with the default floor of 64 GPUs, under
    // which this fleet's small class waits for a rise of at most 2.
    let floored = [(3, Some(7)), (4, Some(7)), (5, Some(7))];
    let written = [(1, Some(6)), (2, Some(7)), (3, Some(8)), (4, Some(9)), (5, None)];
    let cases = written
        .iter()
        .map(|&c| (c, 0))
        .chain(floored.iter().map(|&c| (c, 64)));
    for mode in [Reenable::Neighborhood, Reenable::Room] {
        for ((k, enabled_at), min_gpus) in cases.clone() {
            let s = OrigamigSettings {
                reenable: mode,
                reenable_gap_rise: k,
                reenable_gap_rise_min_gpus: min_gpus,
                merge_hosts: 0,
                ..OrigamigSettings::default()
            };
            let mut f = five_vms();
            let mut t = Triggers::new();
            assert_eq!(t.next_call(&f, &s), call);
            t.after_call_on(&f, call.as_ref().unwrap(), false, &[0, 1]);
            depart(&mut f, &mut t, 3);
            assert_eq!(t.next_call(&f, &s), None, "{mode:?} k {k}: Γh fell to 2");
            for (id, host, gpu) in arrivals {
                put(&mut f, vm_1g(id), at(host, &[(gpu, 0)]));
                let want = if Some(id) == enabled_at {
                    call.clone()
                } else {
                    None
                };
                assert_eq!(
                    t.next_call(&f, &s),
                    want,
                    "{mode:?} k {k} floor {min_gpus}, after VM {id} came"
                );
                if want.is_some() {
                    break;
                }
            }
        }
    }
}

#[test]
fn reenable_is_read_saved_and_checked() {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml")).unwrap();
    let with = |line: &str| format!("{}\n{line}\n", src.trim_end());
    let d = scenario::parse(&with(""), "p.toml").unwrap();
    assert_eq!(d.policy.origamig.reenable, Reenable::Room);
    assert_eq!(d.policy.origamig.reenable_gap_rise, 3);
    assert!(!d.to_toml().unwrap().contains("reenable"));
    let r = scenario::parse(&with("reenable = \"room\"\nreenable_room_share = 0.5"), "p.toml").unwrap();
    assert_eq!(r.policy.origamig.reenable, Reenable::Room);
    assert_eq!(r.policy.origamig.reenable_room_share, 0.5);
    assert_eq!(
        scenario::parse(&r.to_toml().unwrap(), "saved.toml")
            .unwrap()
            .policy,
        r.policy
    );
    assert!(scenario::parse(&with("reenable_room_share = -1"), "p.toml").is_err());
    assert_eq!(d.policy.origamig.reenable_gap_rise, 3);
    assert_eq!(d.policy.origamig.reenable_gap_rise_min_gpus, 64);
    let floor = scenario::parse(&with("reenable_gap_rise_min_gpus = 0"), "p.toml").unwrap();
    assert_eq!(floor.policy.origamig.reenable_gap_rise_min_gpus, 0);
    assert!(floor
        .to_toml()
        .unwrap()
        .contains("reenable_gap_rise_min_gpus = 0"));
    assert_eq!(
        scenario::parse(&floor.to_toml().unwrap(), "saved.toml")
            .unwrap()
            .policy,
        floor.policy
    );
    assert!(scenario::parse(&with("reenable_gap_rise_min_gpus = -1"), "p.toml").is_err());
    let k = scenario::parse(&with("reenable_gap_rise = 2"), "p.toml").unwrap();
    assert_eq!(k.policy.origamig.reenable_gap_rise, 2);
    assert!(k.to_toml().unwrap().contains("reenable_gap_rise = 2"));
    assert_eq!(
        scenario::parse(&k.to_toml().unwrap(), "saved.toml")
            .unwrap()
            .policy,
        k.policy
    );
    for bad in [
        "reenable_gap_rise = 0",
        "reenable_gap_rise = 1001",
        "reenable_gap_rise = -1",
    ] {
        assert!(scenario::parse(&with(bad), "p.toml").is_err(), "{bad}");
    }
    let n = scenario::parse(&with("reenable = \"departure\""), "p.toml").unwrap();
    assert_eq!(n.policy.origamig.reenable, Reenable::Departure);
    let again = scenario::parse(&n.to_toml().unwrap(), "saved.toml").unwrap();
    assert_eq!(again.policy, n.policy);
    let err = scenario::parse(&with("reenable = \"never\""), "p.toml").unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        !msg.contains('\n') && msg.contains("p.toml") && msg.contains("reenable"),
        "{msg}"
    );
}

/// `consolidation_hold_s`: after a check that found Q not empty, no consolidation call until
/// that many seconds have passed; 0 (the default) calls at once.
#[test]
fn consolidation_waits_the_hold_after_a_pending_check() {
    let a100 = Class::Gpu("a100-40gb".into());
    let call = Some(CallKind::Consolidation(a100));
    let f = five_vms();
    for hold in [0.0, 600.0] {
        let s = OrigamigSettings {
            consolidation_hold_s: hold,
            ..OrigamigSettings::default()
        };
        let mut t = Triggers::new();
        assert!(t.due(100.0, &s));
        assert_eq!(t.next_call_with(&f, &s, true), Some(CallKind::Admission));
        assert!(t.due(110.0, &s));
        if hold == 0.0 {
            assert_eq!(t.next_call_with(&f, &s, false), call);
            continue;
        }
        assert_eq!(t.next_call_with(&f, &s, false), None, "10 s after Q was seen");
        assert!(t.due(690.0, &s));
        assert_eq!(t.next_call_with(&f, &s, false), None, "590 s after");
        assert!(t.due(700.0, &s));
        assert_eq!(t.next_call_with(&f, &s, false), call, "600 s after");
        // Q seen again: the hold starts again from that check.
        assert!(t.due(710.0, &s));
        assert_eq!(t.next_call_with(&f, &s, true), Some(CallKind::Admission));
        assert!(t.due(720.0, &s));
        assert_eq!(t.next_call_with(&f, &s, false), None);
    }
}

/// `ff_active_first`: an arrival goes to the first active host with room before a switched-off
/// one (the default); FF as in §6.3 (`false`, the paper preset) takes the first host with room,
/// active or not. h0 and h2
/// are switched off, h1 runs a 1g.5gb VM, h3 a 7g.40gb VM on each GPU (full).
#[test]
fn ff_active_first_places_on_an_active_host_before_switching_one_on() {
    use migplan::policy::Policy;
    let mut f = a100s(4);
    put(&mut f, vm_1g(1), at(1, &[(0, 0)]));
    put(&mut f, mig_vm(2, "a100-40gb", &["7g.40gb"]), at(3, &[(0, 0)]));
    put(&mut f, mig_vm(3, "a100-40gb", &["7g.40gb"]), at(3, &[(1, 0)]));
    for (active_first, one_g, seven_g) in [(false, 0, 0), (true, 1, 1)] {
        // FF's rule: best fit at arrival off on these two-GPU hosts.
        let s = OrigamigSettings {
            ff_active_first: active_first,
            arrival_best_fit_small: false,
            ..OrigamigSettings::default()
        };
        let mut p = Origamig::new(&s);
        let a = p.on_arrival(&f, &vm_1g(10), 0.0).unwrap();
        assert_eq!(a.host, one_g, "1g.5gb, active_first = {active_first}");
        // h1 keeps GPU 1 free for a whole-GPU VM.
        let b = p
            .on_arrival(&f, &mig_vm(11, "a100-40gb", &["7g.40gb"]), 0.0)
            .unwrap();
        assert_eq!(b.host, seven_g, "7g.40gb, active_first = {active_first}");
    }
    // With h1's GPU 1 taken too, the active hosts are full for a 7g.40gb VM: the first
    // switched-off host takes it.
    put(&mut f, mig_vm(4, "a100-40gb", &["7g.40gb"]), at(1, &[(1, 0)]));
    let s = OrigamigSettings {
        ff_active_first: true,
        ..OrigamigSettings::default()
    };
    let b = Origamig::new(&s)
        .on_arrival(&f, &mig_vm(12, "a100-40gb", &["7g.40gb"]), 0.0)
        .unwrap();
    assert_eq!(b.host, 0);
}

#[test]
fn hold_and_active_first_are_read_saved_and_checked() {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml")).unwrap();
    let with = |line: &str| format!("{}\n{line}\n", src.trim_end());
    let d = scenario::parse(&with(""), "p.toml").unwrap();
    assert_eq!(
        (
            d.policy.origamig.consolidation_hold_s,
            d.policy.origamig.ff_active_first
        ),
        (0.0, true)
    );
    let saved = d.to_toml().unwrap();
    assert!(!saved.contains("consolidation_hold_s") && !saved.contains("ff_active_first"));
    let n = scenario::parse(
        &with("consolidation_hold_s = 900\nff_active_first = false"),
        "p.toml",
    )
    .unwrap();
    assert_eq!(
        (
            n.policy.origamig.consolidation_hold_s,
            n.policy.origamig.ff_active_first
        ),
        (900.0, false)
    );
    assert!(n.to_toml().unwrap().contains("ff_active_first = false"));
    let again = scenario::parse(&n.to_toml().unwrap(), "saved.toml").unwrap();
    assert_eq!(again.policy, n.policy);
    for bad in ["consolidation_hold_s = -1", "ff_active_first = 3"] {
        let err = scenario::parse(&with(bad), "p.toml").unwrap_err();
        let msg = format!("{err:#}");
        let key = bad.split(' ').next().unwrap();
        assert!(
            !msg.contains('\n') && msg.contains("p.toml") && msg.contains(key),
            "{msg}"
        );
    }
}
