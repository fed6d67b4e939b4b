//! Trace replay (§6.5): the Alibaba GPU 2023 pod list mapped to A100 profiles. Malformed lines
//! are errors naming the file, the line and the field, before a run starts.

use migplan::catalog::embedded;
use migplan::scenario;
use migplan::sim::Simulator;
use migplan::workload::{parse_trace, read_trace};
use std::path::Path;

const HEADER: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";

fn a100() -> usize {
    embedded().model_id("a100-40gb").unwrap()
}

fn parse(body: &str) -> anyhow::Result<migplan::workload::Trace> {
    parse_trace(&format!("{HEADER}\n{body}"), "pods.csv", embedded(), a100(), 34.0)
}

#[test]
fn malformed_lines_name_file_line_and_field() {
    let ok = "p0,1000,1024,1,500,,LS,Running,0,3600,0";
    let cases = [
        (
            "p1,1000,1024,one,500,,LS,Running,0,3600,0",
            "pods.csv:3:",
            "num_gpu",
        ),
        (
            "p1,1000,1024,1,abc,,LS,Running,0,3600,0",
            "pods.csv:3:",
            "gpu_milli",
        ),
        (
            "p1,1000,1024,1,1500,,LS,Running,0,3600,0",
            "pods.csv:3:",
            "gpu_milli",
        ),
        (
            "p1,1000,1024,1,500,,LS,Running,x,3600,0",
            "pods.csv:3:",
            "creation_time",
        ),
        (
            "p1,1000,1024,1,500,,LS,Running,100,50,0",
            "pods.csv:3:",
            "deletion_time",
        ),
        ("p1,1000,1024,1,500,,LS,Running,0,3600", "pods.csv:3:", "fields"),
        (
            "p1,1000,1024,1.5,500,,LS,Running,0,3600,0",
            "pods.csv:3:",
            "num_gpu",
        ),
    ];
    for (line, at, field) in cases {
        let err = parse(&format!("{ok}\n{line}\n{ok}")).unwrap_err().to_string();
        assert!(err.starts_with(at), "{line}: {err}");
        assert!(err.contains(field), "{line}: {err}");
    }
    let err = parse_trace("a,b\n1,2\n", "pods.csv", embedded(), a100(), 34.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pods.csv:1") && err.contains("num_gpu"), "{err}");
    let err = read_trace(Path::new("/nonexistent/pods.csv"), embedded(), a100(), 34.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/pods.csv"), "{err}");
}

#[test]
fn mapping_window_and_drops_follow_section_6_5() {
    let day = 86400.0;
    let end = 100.0 * day;
    let rows = [
        // Before the 34-day window: dropped.
        format!("a,1,1,1,1000,,LS,Running,{},{},0", 10.0 * day, end),
        // No GPU, or more than two: dropped.
        format!("b,1,1,0,0,,LS,Running,{},{},0", 80.0 * day, end),
        format!("c,1,1,4,1000,,LS,Running,{},{},0", 80.0 * day, end),
        // A share: 0.25 -> 2 compute, 2 memory slices -> 2g.10gb.
        format!("d,1,1,1,250,,LS,Running,{},{},0", 90.0 * day, 90.0 * day + 7200.0),
        // Two whole GPUs -> two 7g.40gb.
        format!(
            "e,1,1,2,1000,,BE,Succeeded,{},{},0",
            70.0 * day,
            70.0 * day + 60.0
        ),
    ];
    let t = parse(&rows.join("\n")).unwrap();
    assert_eq!(t.read, 5);
    assert_eq!(t.dropped, 3);
    let m = embedded().model(a100());
    let names: Vec<Vec<&str>> = t
        .pods
        .iter()
        .map(|p| p.profiles.iter().map(|&q| m.profiles[q].name.as_str()).collect())
        .collect();
    // By creation time: e (day 70) then d (day 90).
    assert_eq!(names, vec![vec!["7g.40gb", "7g.40gb"], vec!["2g.10gb"]]);
    assert_eq!(t.pods[1].lifetime, 7200.0);
    assert_eq!(t.window, (end - 34.0 * day, end));
}

/// The OpenB pod list as a string path, when present (see `common::openb_trace`).
fn openb_path() -> Option<String> {
    crate::common::openb_trace("this OpenB trace test").map(|p| p.display().to_string())
}

#[test]
fn the_openb_trace_maps_mostly_to_whole_gpus() {
    let Some(path) = openb_path() else { return };
    let t = read_trace(Path::new(&path), embedded(), a100(), 34.0).unwrap();
    assert_eq!(t.read, 8152);
    let m = embedded().model(a100());
    let gis: Vec<&str> = t
        .pods
        .iter()
        .flat_map(|p| &p.profiles)
        .map(|&q| m.profiles[q].name.as_str())
        .collect();
    let whole = gis.iter().filter(|n| **n == "7g.40gb").count() as f64 / gis.len() as f64;
    // §6.5: "Of the resulting GIs, 77% are 7g.40gb."
    assert!((whole - 0.77).abs() < 0.03, "{whole}");
}

#[test]
fn the_trace_variant_runs_and_replays_the_same_pods_for_a_seed() {
    let Some(path) = openb_path() else { return };
    let src = format!(
        r#"
[[host_group]]
prefix = "a"
count = 32
cores = 80
ram_gb = 512
gpus = ["a100-40gb", "a100-40gb"]

[workload]
trace = "{path}"
load = 0.85
warmup_h = 2
measure_h = 6
"#
    );
    let sc = scenario::parse(&src, "trace.toml").unwrap();
    let run = |sc: &scenario::Scenario| {
        let mut s = Simulator::new(sc, migplan::policy::by_name("ff", &sc.policy).unwrap()).unwrap();
        s.set_check_invariants(true);
        s.run();
        s.metrics()
    };
    let a = run(&sc);
    assert!(a.requests > 50, "{a:?}");
    assert!(a.active_gpus_pct > 5.0, "{a:?}");
    assert_eq!(a, run(&sc));
    let mut other = sc.clone();
    other.workload.seed = 3;
    assert_ne!(a.requests, run(&other).requests);
    // A malformed trace stops the run before it starts.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, format!("{HEADER}\np,1,1,1,500,,LS,Running,0,oops,0\n")).unwrap();
    let mut sc2 = sc.clone();
    sc2.workload.trace = Some(bad.display().to_string());
    let err = Simulator::new(&sc2, migplan::policy::by_name("ff", &sc2.policy).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad.csv:2") && err.contains("deletion_time"),
        "{err}"
    );
}

#[test]
fn one_compressed_pass_offers_the_target_load_and_seeds_shift_the_start() {
    use migplan::workload::TraceReplay;
    use std::sync::Arc;
    let Some(path) = openb_path() else { return };
    let c = embedded();
    let trace = Arc::new(read_trace(Path::new(&path), c, a100(), 34.0).unwrap());
    let a100_model = a100();
    let fleet = migplan::fleet::Fleet::new(
        c,
        (0..128)
            .map(|i| migplan::fleet::Host::new(format!("h{i}"), 80, 512, vec![a100_model, a100_model], 0))
            .collect(),
    );
    let mut first_arrivals = Vec::new();
    for seed in [1, 2] {
        let s = migplan::scenario::WorkloadSettings {
            seed,
            trace: Some(path.clone()),
            ..Default::default()
        };
        let mut r = TraceReplay::new(trace.clone(), &s, &fleet, 0.0).unwrap();
        let period = r.period_s();
        // One pass replays every pod once; its GPU work over 256 GPUs and one period is rho.
        let mut work = 0.0;
        let mut reqs = Vec::new();
        for _ in 0..trace.pods.len() {
            let q = r.next_request();
            work += q.lifetime * q.memory_slices(c) as f64 / 8.0;
            reqs.push(q);
        }
        assert!(reqs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
        assert!(reqs.last().unwrap().arrival < period);
        let rho = work / (256.0 * period);
        assert!((rho - 0.85).abs() < 1e-9, "{rho}");
        // And the pass repeats.
        assert!((r.next_request().arrival - (reqs[0].arrival + period)).abs() < 1e-6);
        first_arrivals.push(reqs[0].lifetime);
    }
    assert_ne!(
        first_arrivals[0], first_arrivals[1],
        "seed 2 starts a fifth into the trace"
    );
}
