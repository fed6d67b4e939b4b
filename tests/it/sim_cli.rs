//! `migplan simulate` and `migplan sweep` through the real binary.

use crate::common::cli::{migplan, temp_file};
use assert_cmd::Command;
use predicates::prelude::*;

const PAPER32: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml");

/// `migplan sweep PAPER32` of first fit and MFI at loads 0.6 and 0.9, for the given seeds, measured
/// for one hour after one hour of warm-up.
fn sweep_ff_mfi(seeds: &str) -> Command {
    let mut c = migplan();
    c.args([
        "sweep",
        PAPER32,
        "--policies",
        "ff,mfi",
        "--loads",
        "0.6,0.9",
        "--seeds",
        seeds,
    ])
    .args(["--warmup", "1", "--hours", "1"]);
    c
}

#[test]
fn simulate_json_has_the_issue_keys() {
    let out = migplan()
        .args([
            "simulate", PAPER32, "--policy", "tc", "--seed", "3", "--load", "0.9",
        ])
        .args(["--warmup", "1", "--hours", "2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in [
        "policy",
        "seed",
        "load",
        "acceptance_pct",
        "active_hosts",
        "active_gpus_pct",
        "packing_pct",
        "energy_mwh",
        "kwh_per_gpu_hour",
        "switch_ons_per_h",
        "migrations_per_h",
        "gb_per_h",
        "wait_s_mean",
        "stranded",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    assert_eq!(v["policy"], "tc");
    assert_eq!(v["seed"], 3);
    assert_eq!(v["load"], 0.9);
    assert_eq!(v["measured_h"], 2.0);
}

#[test]
fn simulate_csv_is_a_header_and_one_row() {
    let out = migplan()
        .args(["simulate", PAPER32, "--warmup", "1", "--hours", "1", "--csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("scenario,policy,seed,load,"));
    assert_eq!(lines[0].split(',').count(), lines[1].split(',').count());
    assert!(lines[1].starts_with("paper-32,ff,1,0.85,"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    migplan()
        .args(["simulate", PAPER32, "--policy", "best"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown policy `best`"));
    let (_dir, bad) = temp_file(
        "pods.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,1,1,1,x,,LS,Running,0,10,0\n",
    );
    let out = migplan()
        .args(["simulate", PAPER32, "--trace"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("pods.csv:2") && err.contains("gpu_milli"), "{err}");
}

#[test]
fn sweep_writes_rows_summary_and_figure_and_aggregates_split_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    sweep_ff_mfi("1..2")
        .args(["--jobs", "2", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("ff"));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 8);
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + 4);
    assert!(summary.lines().nth(1).unwrap().starts_with("ff,0.6,2,"));
    let svg = std::fs::read_to_string(out.join("fig4.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("Acceptance") && svg.contains("Offered load"));
    // The same rows split by seed and aggregated give the same summary.
    let one = sweep_ff_mfi("1").output().unwrap();
    let two = sweep_ff_mfi("2").output().unwrap();
    std::fs::write(dir.path().join("a.csv"), &one.stdout).unwrap();
    std::fs::write(dir.path().join("b.csv"), &two.stdout).unwrap();
    let agg = dir.path().join("agg.csv");
    migplan()
        .args(["sweep", "--aggregate"])
        .arg(dir.path().join("a.csv"))
        .arg(dir.path().join("b.csv"))
        .arg("--summary")
        .arg(&agg)
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(agg).unwrap(), summary);
}

#[test]
fn sweep_replays_a_trace_given_on_the_command_line() {
    let Some(trace) = crate::common::openb_trace("the trace sweep test") else {
        return;
    };
    let trace = trace.display().to_string();
    let out = migplan()
        .args([
            "sweep",
            PAPER32,
            "--policies",
            "ff,tc",
            "--seeds",
            "1,2",
            "--trace",
            &trace,
        ])
        .args(["--warmup", "1", "--hours", "1", "--jobs", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{text}");
    // Seeds start the trace at different points, so the two seeds see different requests.
    let requests = |row: &str| row.split(',').nth(16).unwrap().to_string();
    assert_ne!(requests(rows[0]), requests(rows[1]), "{text}");
    // A missing trace file is one line and exit 2, before any run.
    migplan()
        .args(["sweep", PAPER32, "--trace", "/nonexistent/pods.csv"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "/nonexistent/pods.csv: no such trace file",
        ));
}

#[test]
fn a_reader_that_goes_away_early_is_not_an_error() {
    // `migplan sweep ... | head -1`: the reader closes the pipe before the rows are written.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("migplan"))
        .args([
            "sweep", PAPER32, "--seeds", "1..3", "--warmup", "0", "--hours", "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
}
