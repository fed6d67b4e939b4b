//! Determinism: the same seed gives the same figures, for every policy, for any `--jobs` of a
//! sweep and whatever the solver's thread count. Each run is a separate process (HiGHS's thread
//! count is global to a process), on the demo fleet with short windows.

use crate::common::cli::migplan;

/// `simulate --json` of the demo fleet with `[policy] threads = threads`, without the timing
/// fields (wall time, solver call durations).
fn figures(policy: &str, threads: u32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let demo =
        std::fs::read_to_string(format!("{}/scenarios/demo.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(
        !demo.contains("[policy]"),
        "the demo scenario gained a [policy] table"
    );
    let path = dir.path().join("demo.toml");
    std::fs::write(&path, format!("{demo}\n[policy]\nthreads = {threads}\n")).unwrap();
    let out = migplan()
        .args(["simulate", path.to_str().unwrap(), "--policy", policy])
        .args(["--seed", "7", "--warmup", "1", "--hours", "2", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{policy}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| {
            !crate::common::TIMING_FIELDS
                .iter()
                .any(|f| l.contains(&format!("\"{f}\"")))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_policy_gives_the_same_figures_twice_and_with_any_solver_threads() {
    for policy in ["ff", "mfi", "tc", "packing", "origamig", "opt"] {
        let first = figures(policy, 1);
        assert!(first.contains("\"requests\""), "{policy}: {first}");
        assert_eq!(first, figures(policy, 1), "{policy}: two runs differ");
        if matches!(policy, "origamig" | "opt") {
            assert_eq!(
                first,
                figures(policy, 2),
                "{policy}: 1 and 2 solver threads differ"
            );
        }
    }
}

/// The summary CSV of a sweep over two policies and three seeds with `jobs` parallel runs.
fn sweep_summary(jobs: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.csv");
    migplan()
        .args([
            "sweep",
            "scenarios/demo.toml",
            "--policies",
            "ff,tc",
            "--seeds",
            "1..3",
        ])
        .args(["--warmup", "1", "--hours", "2", "--jobs", &jobs.to_string()])
        .arg("--summary")
        .arg(&summary)
        .assert()
        .success();
    std::fs::read_to_string(summary).unwrap()
}

#[test]
fn a_sweep_gives_the_same_summary_with_any_jobs() {
    let one = sweep_summary(1);
    assert!(one.lines().count() >= 3, "{one}");
    assert_eq!(one, sweep_summary(2));
    assert_eq!(one, sweep_summary(3));
}
