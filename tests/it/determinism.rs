//! Determinism: the same seed gives the same figures, for every policy, for any `--jobs` of a
//! sweep and whatever the solver's thread count. Each run is a separate process (HiGHS's thread
//! count is global to a process), on the demo fleet with short windows.

use crate::common::cli::{migplan, temp_file};
use crate::common::fleet::paper_32_with_policy;

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

/// Threads that spin until dropped: a loaded machine, on which a call that consulted the wall
/// clock would end at another point of its search.
struct CpuHog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl CpuHog {
    fn start(n: usize) -> CpuHog {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = i as u64 + 1;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                    x
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// `simulate --json` of OrigaMIG on paper-32 (seed 1, load 0.85, 2 h + 4 h) with `keys` added to
/// `[policy]`, beside `hog` spinning threads: the JSON without its timing fields, as text.
fn origamig_figures(keys: &str, hog: usize) -> serde_json::Value {
    let (_dir, path) = temp_file("paper-32.toml", &paper_32_with_policy(keys));
    let _hog = CpuHog::start(hog);
    let out = migplan()
        .args(["simulate", path.to_str().unwrap(), "--policy", "origamig"])
        .args([
            "--seed", "1", "--load", "0.85", "--warmup", "2", "--hours", "4", "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{keys}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{keys}: {stderr}");
    crate::common::without_timing(serde_json::from_slice(&out.stdout).unwrap())
}

/// OrigaMIG's re-enable rule before `reenable = "room"` became the default.
const OLD_TRIGGER: &str = "reenable = \"neighborhood\"\nreenable_gap_rise = 1";

fn count(v: &serde_json::Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or(0)
}

#[test]
fn origamig_figures_do_not_depend_on_the_wall_clock_or_the_machine_load() {
    // Alone, then beside spinning threads: the same figures.
    // (The trigger as it was before `reenable = "room"`, which calls too seldom in 4 h to test.)
    let quiet = origamig_figures(OLD_TRIGGER, 0);
    assert!(count(&quiet, "calls") >= 10, "too few calls to test: {quiet}");
    assert_eq!(count(&quiet, "calls_wall_limited"), 0, "{quiet}");
    let loaded = origamig_figures(OLD_TRIGGER, 4);
    assert_eq!(
        serde_json::to_string(&quiet).unwrap(),
        serde_json::to_string(&loaded).unwrap(),
        "the same seed gave other figures beside a CPU hog"
    );
    // A wall-clock limit that every call would reach is not consulted by a simulated call: the
    // figures stay those of the quiet run...
    let clocked = origamig_figures(&format!("{OLD_TRIGGER}\nsim_time_limit_s = 0.000001"), 4);
    assert_eq!(quiet, clocked, "a simulated call consulted the wall clock");
    // ...and a call cut at the root's first check (where a binding clock would cut it) would
    // show: the comparison above can fail.
    let cut = origamig_figures(
        &format!("{OLD_TRIGGER}\nnode_limit = 0\nlp_iteration_limit = 1"),
        0,
    );
    assert!(count(&cut, "calls_node_limited") > 0, "{cut}");
    assert_ne!(quiet, cut, "cutting every call changes nothing: a weak test");
    // (The LP-iteration budget's own determinism: tests/it/opt_bilp.rs,
    // a_node_budget_not_the_clock_ends_a_simulated_call.)
}
