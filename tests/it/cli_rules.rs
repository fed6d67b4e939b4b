//! `migplan explore`, `migplan gpu` and `migplan check` end to end: JSON values, human output,
//! and bad input (exit 2 with one line on stderr naming the problem).

use crate::common::cli::migplan;
use serde_json::Value;

fn run(args: &[&str]) -> std::process::Output {
    migplan().args(args).output().unwrap()
}

fn json(args: &[&str]) -> Value {
    let out = run(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// Runs a command that must fail: exit code 2 and exactly one line on stderr, returned.
fn fails(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    err
}

#[test]
fn explore_a100_json_reproduces_paper() {
    let v = json(&["explore", "--gpu", "a100-40gb", "--json"]);
    assert_eq!(v["model"], "a100-40gb");
    assert_eq!(v["cf_empty"], 18);
    assert_eq!(v["configurations"], 723);
    assert_eq!(v["terminal"], 78);
    assert_eq!(v["suboptimal"], 482);
    assert_eq!(v["default_reached"], 179);
    assert_eq!(v["default_suboptimal"], 59);
}

#[test]
fn explore_all_models_and_human_table() {
    let v = json(&["explore", "--gpu", "all", "--json"]);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 7);
    let a30 = arr.iter().find(|m| m["model"] == "a30-24gb").unwrap();
    assert_eq!(
        (a30["cf_empty"].as_u64(), a30["configurations"].as_u64()),
        (Some(7), Some(26))
    );
    let out = run(&["explore"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("a100-40gb") && text.contains("723") && text.contains("482 (67%)"),
        "{text}"
    );
    // +me profiles enlarge the space and CF(empty) by 7.
    let me = json(&["explore", "--gpu", "a100-40gb", "--media-ext", "--json"]);
    assert_eq!(me["cf_empty"], 25);
    assert!(me["configurations"].as_u64().unwrap() > 723);
}

#[test]
fn gpu_json_fig1b() {
    let v = json(&[
        "gpu",
        "--model",
        "a100-40gb",
        "--place",
        "1g.5gb@0,1g.5gb@3",
        "--json",
        "--explain",
        "4g.20gb",
    ]);
    assert_eq!(v["cf"], 9);
    assert_eq!(v["capacity"]["1g.5gb"], 5);
    assert_eq!(v["capacity"]["1g.10gb"], 2);
    assert_eq!(v["capacity"]["4g.20gb"], 0);
    assert_eq!(v["free_starts"]["1g.10gb"], serde_json::json!([4, 6]));
    assert_eq!(v["free_starts"]["3g.20gb"], serde_json::json!([4]));
    assert_eq!(v["explain"]["verdict"]["kind"], "no_permitted_start");
    assert_eq!(v["explain"]["compaction"]["moved"], 2);
}

#[test]
fn gpu_human_output_has_map_and_explanation() {
    let out = run(&[
        "gpu",
        "--model",
        "a100-40gb",
        "--place",
        "3g.20gb@0",
        "--place",
        "1g.5gb@4,1g.5gb@5,1g.5gb@6",
        "--explain",
        "1g.5gb",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("3g.20gb") && text.contains("CF 0"), "{text}");
    assert!(text.contains("after compaction"), "{text}");
    // Empty GPU: CF 18.
    let out = run(&["gpu", "--model", "a100-40gb"]);
    assert!(String::from_utf8(out.stdout).unwrap().contains("CF 18"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let e = fails(&["explore", "--gpu", "v100"]);
    assert!(e.contains("`v100`") && e.contains("a100-40gb"), "{e}");
    let e = fails(&["gpu", "--model", "v100", "--place", "1g.5gb@0"]);
    assert!(e.contains("`v100`") && e.contains("a30-24gb"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "3g.10gb@0"]);
    assert!(e.contains("`3g.10gb`") && e.contains("3g.20gb"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "2g.10gb@6"]);
    assert!(e.contains("2g.10gb@6") && e.contains("0, 2, 4"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "1g.5gb@7"]);
    assert!(e.contains("1g.5gb@7") && e.contains("0, 1, 2, 3, 4, 5, 6"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "3g.20gb@0,1g.5gb@2"]);
    assert!(
        e.contains("overlaps") && e.contains("3g.20gb@0") && e.contains("slice 2"),
        "{e}"
    );
    let e = fails(&[
        "gpu",
        "--model",
        "a100-40gb",
        "--place",
        "1g.5gb+me@0,1g.5gb+me@1",
    ]);
    assert!(e.contains("at most 1") && e.contains("1g.5gb+me"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "3g.20gb"]);
    assert!(e.contains("PROFILE@START") && e.contains("`3g.20gb`"), "{e}");
    let e = fails(&["gpu", "--model", "a100-40gb", "--place", "3g.20gb@x"]);
    assert!(e.contains("`x`") && e.contains("0,4"), "{e}");
    let e = fails(&["gpu", "--model", "a30-24gb", "--explain", "1g.5gb"]);
    assert!(e.contains("`1g.5gb`") && e.contains("1g.6gb"), "{e}");
}

#[test]
fn check_json_counts_by_hand() {
    // One host of two A100-40GB (8 memory slices each); a 3g.20gb placed at slice 4 of GPU 0
    // (4 memory slices) and a 1g.5gb with no placement, which waits.
    let text = "name = \"tiny\"\n[[host]]\nname = \"h0\"\ncores = 80\nram_gb = 512\n\
                gpus = [\"a100-40gb\", \"a100-40gb\"]\n\
                [[vm]]\nid = 1\nmodel = \"a100-40gb\"\nprofiles = [\"3g.20gb\"]\ncores = 12\nram_gb = 48\n\
                host = \"h0\"\nat = [\"0@4\"]\n\
                [[vm]]\nid = 2\nmodel = \"a100-40gb\"\nprofiles = [\"1g.5gb\"]\ncores = 4\nram_gb = 16\n";
    let (_d, path) = crate::common::cli::temp_file("tiny.toml", text);
    let p = path.to_str().unwrap();
    let v = json(&["check", "--json", p]);
    let s = &v["summary"];
    assert_eq!(s["name"], "tiny");
    assert_eq!(s["hosts"], 1);
    assert_eq!(s["gpus"], serde_json::json!({"a100-40gb": 2}));
    assert_eq!(
        (s["vms_placed"].as_u64(), s["vms_pending"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (s["occupied_slices"].as_u64(), s["memory_slices"].as_u64()),
        (Some(4), Some(16))
    );
    assert_eq!(v["notes"], serde_json::json!([]));
    // The line says the same.
    let out = run(&["check", p]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        "tiny: 1 hosts, GPUs: 2 a100-40gb, VMs: 1 placed, 1 pending, occupied slices: 4/16"
    );
}
