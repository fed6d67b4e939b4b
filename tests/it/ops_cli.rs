//! The ops subcommands through the real binary: output, JSON keys, and bad input (exit 2 with
//! one line on stderr).

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::fleet::H100_FOUR_TENANTS as H100;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    migplan().args(args).output().unwrap()
}

fn one_line_error(args: &[&str], want: &str) {
    assert_one_line_error(&run(args), args, &[want]);
}

/// `migplan layout --gpu GPU --demand DEMAND --gpus GPUS` and then `extra`.
fn layout<'a>(gpu: &'a str, demand: &'a str, gpus: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["layout", "--gpu", gpu, "--demand", demand, "--gpus", gpus];
    args.extend_from_slice(extra);
    args
}

#[test]
fn layout_seed_example_json() {
    let out = run(&layout(
        "h100-80gb",
        "1g.10gb=4,2g.20gb=2,3g.40gb=2,7g.80gb=1",
        "4",
        &["--json"],
    ));
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["layouts"],
        serde_json::json!(["all-balanced", "all-balanced", "whole"])
    );
    assert_eq!(v["gpus_used"], 3);
    assert_eq!(v["idle"], serde_json::json!({}));
    assert!(v.get("exact").is_none());
}

#[test]
fn layout_exact_side_by_side() {
    let out = run(&layout("h100-80gb", "2g.20gb=3,3g.40gb=2", "4", &["--exact"]));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let used = text.lines().find(|l| l.starts_with("GPUs used")).unwrap();
    assert!(used.contains("3 of 4") && used.contains("2 of 4"), "{text}");
    let out = run(&layout(
        "h100-80gb",
        "2g.20gb=3,3g.40gb=2",
        "4",
        &["--exact", "--json"],
    ));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["gpus_used"], 3);
    assert_eq!(v["exact"]["gpus_used"], 2);
    assert_eq!(v["exact"]["optimal"], true);
    assert_eq!(v["exact"]["layouts"].as_array().unwrap().len(), 2);
}

#[test]
fn layout_bad_input_is_one_line_exit_2() {
    let base = ["layout", "--gpu", "h100-80gb", "--gpus", "4", "--demand"];
    for (d, want) in [
        ("1g.10gb", "is not PROFILE=N"),
        ("1g.10gb=two", "not a whole number"),
        ("3g.20gb=1", "unknown profile `3g.20gb`"),
        ("7g.80gb=9", "more than 4 GPUs"),
    ] {
        let mut args = base.to_vec();
        args.push(d);
        one_line_error(&args, want);
    }
    one_line_error(&layout("v100", "1g.10gb=1", "1", &[]), "unknown GPU model `v100`");
    one_line_error(
        &layout("h100-80gb", "1g.10gb=1", "1", &["--menu", "nope"]),
        "no layout `nope`",
    );
}

#[test]
fn chargeback_of_the_worked_example() {
    let out = run(&["chargeback", H100, "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hours"], 730.0);
    let t = &v["tenants"];
    assert_eq!(format!("{:.1}", t["ranking"].as_f64().unwrap()), "681.3");
    assert_eq!(format!("{:.1}", t["research"].as_f64().unwrap()), "730.0");
    assert_eq!(format!("{:.1}", t["search"].as_f64().unwrap()), "389.3");
    let w: Vec<String> = v["instances"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["gpu"] == 0)
        .map(|i| {
            format!(
                "{} {:.3}",
                i["profile"].as_str().unwrap(),
                i["weight"].as_f64().unwrap()
            )
        })
        .collect();
    assert_eq!(
        w,
        vec!["2g.20gb 0.267", "1g.10gb 0.133", "1g.10gb 0.133", "3g.40gb 0.467"]
    );
    let out = run(&["chargeback", H100, "--hours", "200"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("research") && l.contains("168.0")),
        "{text}"
    );
}

#[test]
fn export_prints_parseable_yaml() {
    let out = run(&["export", "mig-parted", H100, "--host", "gpu-node-07"]);
    assert!(out.status.success());
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["version"], serde_yaml_ng::Value::from("v1"));
    let by_index = run(&["export", "mig-parted", H100, "--host", "0"]);
    assert_eq!(by_index.stdout, out.stdout);
}

#[test]
fn chargeback_and_export_bad_input() {
    one_line_error(&["chargeback", "/nonexistent/s.toml"], "cannot read");
    one_line_error(&["chargeback", H100, "--hours", "0"], "--hours");
    one_line_error(
        &["chargeback", H100, "--hours", "1e12"],
        "more than a year (8760 hours)",
    );
    one_line_error(
        &["export", "mig-parted", H100, "--host", "node-99"],
        "no host `node-99`",
    );
    let (_dir, bad) = temp_file(
        "bad.toml",
        "[[host]]\nname = \"a\"\ncores = 8\nram_gb = 8\ngpus = [\"z100\"]\n",
    );
    one_line_error(
        &["export", "mig-parted", bad.to_str().unwrap()],
        "unknown GPU model `z100`",
    );
}
