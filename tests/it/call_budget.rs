//! The call budget of simulated OrigaMIG calls (docs/optimizer.md, "Call budget"): a node limit
//! ends a call at the same point on any machine, so the figures of a seed do not depend on the
//! wall clock; a call that the wall-clock safety limit ends is counted and reported.
//!
//! What is tested: with a node budget small enough to end many calls, the figures are the same
//! whether the wall-clock safety limit is 30 s or 30,000 s; and a safety limit so small that
//! every call would reach it does not reach a batch run's calls (it is the planner's only).
//! tests/it/determinism.rs runs the same seed beside a CPU hog.

use crate::common::cli::{migplan, temp_file};
use crate::common::fleet::paper_32_with_policy;
use crate::common::{golden_args, without_timing};
use serde_json::Value;

/// `simulate --json` of the golden OrigaMIG run on paper-32 with `keys` added to `[policy]`:
/// the JSON with timing fields removed, and stderr.
fn run(keys: &str) -> (Value, String) {
    let (_dir, path) = temp_file("paper-32.toml", &paper_32_with_policy(keys));
    let mut args = golden_args(path.to_str().unwrap(), "origamig");
    // Half the golden window: enough calls, a quick test.
    let i = args.iter().position(|a| a == "--hours").unwrap();
    args[i + 1] = "1".into();
    let out = migplan().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{keys}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        without_timing(v),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn count(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or(0)
}

#[test]
fn the_node_budget_not_the_clock_ends_calls_so_the_figures_do_not_depend_on_the_clock() {
    // A budget of 0 nodes stops every call at the root: the budget decides where.
    let (a, _) = run("node_limit = 0\nsim_time_limit_s = 30");
    let (b, err) = run("node_limit = 0\nsim_time_limit_s = 30000");
    assert!(count(&a, "calls") > 0, "{a}");
    assert!(count(&a, "calls_node_limited") > 0, "{a}");
    assert_eq!(count(&a, "calls_wall_limited"), 0, "{a}");
    assert_eq!(a, b, "the wall-clock safety limit changed the figures");
    assert!(!err.contains("warning"), "{err}");
    // The default budget lets these calls finish, whatever the safety limit and whatever the
    // wall-clock limit of a user's call (`time_limit_s`), which a simulation does not use.
    let (c, _) = run("sim_time_limit_s = 30");
    let (d, _) = run("sim_time_limit_s = 30000\ntime_limit_s = 0.001");
    assert_eq!(count(&c, "calls_node_limited"), 0, "{c}");
    assert_eq!(c, d);
    assert_ne!(
        a, c,
        "stopping every call at the root changes nothing: a weak test"
    );
}

#[test]
fn the_safety_clock_does_not_reach_a_batch_run() {
    // A batch run's calls have the work budget only (the safety clock is the planner's): a
    // limit every call would reach ends none, and changes no figure.
    let (v, err) = run("sim_time_limit_s = 0.000001");
    assert!(count(&v, "calls") > 0, "{v}");
    assert_eq!(count(&v, "calls_wall_limited"), 0, "{v}");
    assert!(!err.contains("warning"), "{err}");
    let (d, _) = run("");
    assert_eq!(v, d);
}

#[test]
fn a_quiet_run_reports_no_limited_calls() {
    // The default budget: the golden run's calls all end proven optimal, and the JSON says
    // nothing about limits (the golden files do not change).
    let (v, err) = run("");
    assert!(count(&v, "calls") > 0, "{v}");
    let s = v.as_object().unwrap();
    assert!(!s.contains_key("calls_node_limited"), "{v}");
    assert!(!s.contains_key("calls_wall_limited"), "{v}");
    assert!(!err.contains("warning"), "{err}");
}
