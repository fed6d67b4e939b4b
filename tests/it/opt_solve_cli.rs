//! `migplan solve` and the `origamig`/`opt` policies through the binary, on every shipped
//! scenario (issue: "solve and the origamig/opt policies work on every shipped scenario").

use crate::common::cli::{migplan, stdout_of};
use serde_json::Value;

fn shipped() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| format!("scenarios/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    assert!(v.len() >= 5, "{v:?}");
    v
}

fn solve_json(args: &[&str]) -> Value {
    let out = migplan().arg("solve").args(args).arg("--json").assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

#[test]
fn solve_runs_on_every_shipped_scenario_with_the_documented_keys() {
    for s in shipped() {
        let v = solve_json(&[&s]);
        for k in [
            "mode",
            "status",
            "gap",
            "solve_s",
            "objective_before",
            "objective_after",
            "applied",
            "steps",
            "active_hosts_before",
            "active_hosts_after",
            "power_w_before",
            "power_w_after",
            "admitted",
        ] {
            assert!(v.get(k).is_some(), "{s}: no key {k} in {v}");
        }
        let before = v["objective_before"].as_f64().unwrap();
        let after = v["objective_after"].as_f64().unwrap();
        if v["applied"].as_bool().unwrap() {
            // §5.3: a plan is applied only if its value is strictly larger.
            assert!(after > before, "{s}: applied {after} <= {before}");
        } else {
            assert!(
                v["steps"].as_array().unwrap().is_empty() || after <= before,
                "{s}"
            );
        }
        for st in v["steps"].as_array().unwrap() {
            let kind = st["kind"].as_str().unwrap();
            assert!(["start", "move", "park"].contains(&kind), "{s}: step kind {kind}");
            assert!(st.get("vm").is_some() && st.get("to").is_some(), "{s}: {st}");
        }
    }
}

#[test]
fn solve_on_the_demo_admits_the_waiting_whole_gpu_request_and_switches_two_hosts_off() {
    let v = solve_json(&["scenarios/demo.toml"]);
    assert_eq!(v["mode"], "auto");
    assert_eq!(v["status"], "optimal");
    // Two-GPU A100 hosts with few profiles: the host-content model applies.
    assert_eq!(v["model"], "host");
    assert_eq!(v["gap"].as_f64().unwrap(), 0.0);
    assert_eq!(v["applied"], true);
    assert_eq!(v["admitted"], serde_json::json!([12]));
    assert_eq!(v["active_hosts_before"], 6);
    assert_eq!(v["active_hosts_after"], 4);
    // Two A100 hosts and four of their GPUs off, a 7g.40gb on: 2393.2 W -> 2196.2 W.
    let (pb, pa) = (
        v["power_w_before"].as_f64().unwrap(),
        v["power_w_after"].as_f64().unwrap(),
    );
    assert!((pb - pa - 197.0).abs() < 0.5, "{pb} -> {pa}");
    let steps = v["steps"].as_array().unwrap();
    let start = steps.iter().find(|s| s["vm"] == 12).unwrap();
    assert_eq!(start["kind"], "start");
    // Eq. 5 over the 4-host neighborhood, by hand: before 10 admitted x 100 - 4 hosts x 50 -
    // 8 GPUs x 20 + 80 free starts = 720; after 11 x 100 - 2 x 50 - 4 x 20 - 9 moves x δ = 15
    // (m + ω, the default δ) + 10 free starts = 795.
    assert_eq!(v["objective_before"].as_f64().unwrap(), 720.0);
    assert_eq!(v["objective_after"].as_f64().unwrap(), 795.0);
}

#[test]
fn solve_prints_the_terms_the_steps_and_the_footprint_for_a_person() {
    let out = stdout_of(&["solve", "scenarios/demo.toml"]);
    let text = String::from_utf8(out).unwrap();
    for needle in [
        "call: admission",
        "= value",
        "VM 12: create 7g.40gb",
        "active hosts 6 -> 4",
        "solver: optimal",
        "admitted: VM 12",
    ] {
        assert!(text.contains(needle), "no `{needle}` in\n{text}");
    }
}

#[test]
fn solve_modes_and_bad_arguments() {
    let v = solve_json(&["scenarios/demo.toml", "--mode", "opt"]);
    assert_eq!(v["mode"], "opt");
    assert_eq!(v["status"], "optimal");
    // OPT is the same BILP over every host: it also admits VM 12.
    assert!(
        v["admitted"].as_array().unwrap().contains(&serde_json::json!(12)),
        "{v}"
    );
    let c = solve_json(&[
        "scenarios/demo.toml",
        "--mode",
        "consolidation",
        "--class",
        "a100-40gb",
    ]);
    assert_eq!(c["mode"], "consolidation");
    let bad = migplan()
        .args([
            "solve",
            "scenarios/demo.toml",
            "--mode",
            "consolidation",
            "--class",
            "b200",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8(bad.get_output().stderr.clone()).unwrap();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("b200"), "{err}");
    migplan().args(["solve", "scenarios/nope.toml"]).assert().code(2);
}

#[test]
fn origamig_and_opt_policies_run_on_every_shipped_scenario() {
    for s in shipped() {
        for p in ["origamig", "opt"] {
            // OPT solves the BILP over the whole fleet at each call; on the 128-host fleet a
            // short window keeps the test in seconds.
            let h = if s.contains("paper-128") { "0.1" } else { "0.5" };
            let out = stdout_of(&[
                "simulate", &s, "--policy", p, "--warmup", h, "--hours", h, "--json",
            ]);
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["policy"], p, "{s}");
            for k in [
                "calls_per_h",
                "migrations_per_h",
                "gb_per_h",
                "call_s_median",
                "call_s_p95",
                "call_vms_mean",
            ] {
                assert!(v[k].as_f64().is_some_and(|x| x >= 0.0), "{s} {p}: {k} = {}", v[k]);
            }
        }
    }
}
