//! The simulation clock: steps, deadlines, determinism, the event log, snapshots and the
//! invariants after every operation.

use migplan::fleet::Vm;
use migplan::policy::{self, Policy};
use migplan::scenario::{self, Scenario};
use migplan::sim::{EventKind, SimError, Simulator, EVENT_LOG, STEP_S};
use std::sync::{Arc, Mutex};

fn paper32(hours: f64) -> Scenario {
    let mut sc = scenario::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/paper-32.toml"
    )))
    .unwrap();
    sc.workload.warmup_h = hours / 2.0;
    sc.workload.measure_h = hours / 2.0;
    sc
}

fn sim(sc: &Scenario, name: &str) -> Simulator {
    Simulator::new(sc, policy::by_name(name, &sc.policy).unwrap()).unwrap()
}

#[test]
fn a_deadline_in_the_past_is_an_error_and_changes_nothing() {
    let sc = paper32(4.0);
    let mut s = sim(&sc, "ff");
    s.step_until(3600.0).unwrap();
    let before = s.fleet().clone();
    let err = s.step_until(1800.0).unwrap_err();
    assert_eq!(
        err,
        SimError::Past {
            deadline_s: 1800.0,
            now_s: 3600.0
        }
    );
    assert_eq!(s.time(), 3600.0);
    assert_eq!(s.fleet(), &before);
    assert!(matches!(s.step_until(f64::NAN), Err(SimError::NotFinite(_))));
    // The current time itself is fine.
    s.step_until(3600.0).unwrap();
}

#[test]
fn steps_are_ten_seconds_and_dates_follow_the_start() {
    let sc = paper32(4.0);
    let mut s = sim(&sc, "ff");
    assert_eq!(STEP_S, 10.0);
    s.step();
    assert_eq!(s.time(), 10.0);
    s.step_until(25.0).unwrap();
    assert_eq!(s.time(), 25.0);
    s.step();
    assert_eq!(s.time(), 30.0, "a step ends on the 10 s grid");
    assert_eq!(
        s.now_date().to_rfc3339(),
        "2026-01-05T00:00:30+00:00",
        "paper-32 starts on 2026-01-05"
    );
    s.run();
    assert_eq!(s.time(), s.horizon());
    assert_eq!(s.horizon(), 4.0 * 3600.0);
}

#[test]
fn the_next_event_time_is_the_next_arrival_or_departure() {
    let sc = paper32(4.0);
    let mut s = sim(&sc, "ff");
    for _ in 0..50 {
        let t = s.next_event_time().unwrap();
        assert!(t >= s.time());
        let n = s.events_total();
        // Nothing happens before the next event...
        s.step_until(t - 1e-6).unwrap();
        assert_eq!(s.events_total(), n);
        // ...and something at it.
        s.step_until(t).unwrap();
        assert!(s.events_total() > n);
    }
}

fn fingerprint(s: &Simulator) -> String {
    format!("{:?} {:?}", s.metrics(), s.events())
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let sc = paper32(6.0);
    for name in ["ff", "mfi", "tc"] {
        let mut a = sim(&sc, name);
        let mut b = sim(&sc, name);
        a.run();
        b.run();
        assert_eq!(fingerprint(&a), fingerprint(&b), "{name}");
        assert_eq!(a.fleet(), b.fleet());
    }
    let mut other = sc.clone();
    other.workload.seed = 2;
    let (mut a, mut b) = (sim(&sc, "ff"), sim(&other, "ff"));
    a.run();
    b.run();
    assert_ne!(fingerprint(&a), fingerprint(&b));
}

/// A policy that records every request it sees and delegates to another.
#[derive(Clone)]
struct Recording {
    inner: Box<dyn Policy>,
    seen: Arc<Mutex<Vec<(u64, f64, String)>>>,
}

impl Policy for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
    fn on_arrival(
        &mut self,
        fleet: &migplan::fleet::Fleet,
        vm: &Vm,
        now_s: f64,
    ) -> Option<migplan::fleet::Placement> {
        self.seen.lock().unwrap().push((
            vm.id,
            vm.arrival,
            format!(
                "{:?} {} {} {:?} {:?}",
                vm.gis, vm.cores, vm.ram_gb, vm.kind, vm.lifetime
            ),
        ));
        self.inner.on_arrival(fleet, vm, now_s)
    }
    fn on_step(&mut self, fleet: &migplan::fleet::Fleet, now_s: f64) -> Option<migplan::plan::Plan> {
        self.inner.on_step(fleet, now_s)
    }
}

#[test]
fn every_policy_sees_the_same_requests() {
    let sc = paper32(8.0);
    let mut seen = Vec::new();
    for name in ["ff", "mfi", "tc"] {
        let rec = Arc::new(Mutex::new(Vec::new()));
        let p = Recording {
            inner: policy::by_name(name, &sc.policy).unwrap(),
            seen: rec.clone(),
        };
        let mut s = Simulator::new(&sc, Box::new(p)).unwrap();
        s.run();
        let v = rec.lock().unwrap().clone();
        assert!(v.len() > 30, "{name}: {} requests", v.len());
        seen.push(v);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], seen[2]);
}

#[test]
fn invariants_hold_after_every_operation_for_every_policy() {
    let mut sc = paper32(12.0);
    sc.workload.load = 1.0;
    for name in ["ff", "mfi", "tc"] {
        let mut s = sim(&sc, name);
        s.set_check_invariants(true);
        s.run();
        s.fleet().check_invariants().unwrap();
        if name == "tc" {
            assert!(s.metrics().migrations_per_h > 0.0, "TC compacts");
        } else {
            assert_eq!(s.metrics().migrations_per_h, 0.0);
        }
    }
}

#[test]
fn a_snapshot_continues_exactly_like_the_original() {
    let sc = paper32(6.0);
    let mut a = sim(&sc, "tc");
    a.step_until(2.0 * 3600.0).unwrap();
    let mut b = a.clone();
    a.run();
    b.run();
    assert_eq!(fingerprint(&a), fingerprint(&b));
}

#[test]
fn arrivals_switched_off_are_dropped_and_come_back_unchanged() {
    let sc = paper32(6.0);
    let mut a = sim(&sc, "ff");
    a.set_arrivals(false);
    a.step_until(3600.0).unwrap();
    assert!(a.fleet().vms().next().is_none());
    assert!(!a
        .events()
        .iter()
        .any(|e| matches!(e.kind, EventKind::Arrival { .. })));
    a.set_arrivals(true);
    a.step_until(2.0 * 3600.0).unwrap();
    // The arrivals of the second hour are those of an uninterrupted run.
    let mut b = sim(&sc, "ff");
    b.step_until(2.0 * 3600.0).unwrap();
    let later = |s: &Simulator| -> Vec<f64> {
        s.fleet()
            .vms()
            .map(|v| v.arrival)
            .filter(|&t| t > 3600.0)
            .collect()
    };
    let (la, lb) = (later(&a), later(&b));
    assert!(!la.is_empty());
    for t in &la {
        assert!(
            lb.contains(t),
            "arrival at {t} missing from the uninterrupted run"
        );
    }
}

#[test]
fn the_event_log_is_bounded_and_stamped() {
    let mut sc = scenario::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/paper-128.toml"
    )))
    .unwrap();
    sc.workload.load = 1.0;
    sc.workload.warmup_h = 0.0;
    sc.workload.measure_h = 100.0;
    let mut s = sim(&sc, "ff");
    s.run();
    assert!(s.events_total() as usize > 2 * EVENT_LOG, "{}", s.events_total());
    assert!(s.events().len() <= 2 * EVENT_LOG);
    assert!(s.events().len() >= EVENT_LOG);
    assert!(s.events().windows(2).all(|w| w[0].t <= w[1].t));
    assert!(s.events().last().unwrap().t <= s.time());
}

#[test]
fn lifetimes_start_at_admission() {
    let sc = paper32(6.0);
    let mut s = sim(&sc, "ff");
    s.step_until(3.0 * 3600.0).unwrap();
    for v in s.fleet().vms().filter(|v| v.placement.is_some()) {
        let adm = v.admitted_at.unwrap();
        assert!(adm >= v.arrival);
        assert!(
            adm + v.lifetime.unwrap() >= s.time(),
            "VM {} should have left",
            v.id
        );
    }
}
