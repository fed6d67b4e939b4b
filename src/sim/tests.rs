//! Unit tests of `sim`.

use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("90").unwrap(), 90.0);
    assert_eq!(parse_duration("1h30m").unwrap(), 5400.0);
    assert_eq!(parse_duration("2d").unwrap(), 172800.0);
    assert_eq!(parse_duration("1.5h").unwrap(), 5400.0);
    assert!(parse_duration("5x").is_err());
    assert!(parse_duration("h").is_err());
    assert!(parse_duration("10m5").is_err());
    assert!(parse_duration("-3").is_err());
}

/// The whole-run counters of optimizer calls and trigger checks match the policy's own record.
#[test]
fn calls_and_trigger_checks_are_counted_over_the_whole_run() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml");
    let mut sc = crate::scenario::load(std::path::Path::new(path)).unwrap();
    sc.workload.warmup_h = 2.0;
    sc.workload.measure_h = 2.0;
    let policy = crate::policy::by_name("origamig", &sc.policy).unwrap();
    let mut sim = Simulator::new(&sc, policy).unwrap();
    sim.run();
    let m = sim.metrics();
    let times = sim.policy().call_log().times_s;
    assert!(m.calls > 0, "paper-32 fills up in four hours: some calls solve");
    assert_eq!(m.calls, times.len() as u64);
    assert!((m.call_s_total - times.iter().sum::<f64>()).abs() < 1e-9);
    let log = sim.policy().call_log();
    let (n, s) = (log.trigger_checks, log.trigger_check_s);
    assert_eq!((m.trigger_checks, m.trigger_check_s_total), (n, s));
    assert!(m.trigger_check_s_total >= 0.0);
    // FF makes no calls: zeros, not negative zeros.
    let mut ff = Simulator::new(&sc, crate::policy::by_name("ff", &sc.policy).unwrap()).unwrap();
    ff.run();
    let m = ff.metrics();
    assert_eq!((m.calls, m.trigger_checks), (0, 0));
    assert!(m.call_s_total.is_sign_positive() && m.call_s_total == 0.0);
}
