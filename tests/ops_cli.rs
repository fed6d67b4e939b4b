//! The ops subcommands through the real binary: output, JSON keys, and bad input (exit 2 with
//! one line on stderr).

use assert_cmd::Command;

fn migplan() -> Command {
    Command::cargo_bin("migplan").unwrap()
}

fn one_line_error(args: &[&str], want: &str) {
    let out = migplan().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn layout_seed_example_json() {
    let out = migplan()
        .args([
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            "1g.10gb=4,2g.20gb=2,3g.40gb=2,7g.80gb=1",
            "--gpus",
            "4",
            "--json",
        ])
        .output()
        .unwrap();
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
    let out = migplan()
        .args([
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            "2g.20gb=3,3g.40gb=2",
            "--gpus",
            "4",
            "--exact",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let used = text.lines().find(|l| l.starts_with("GPUs used")).unwrap();
    assert!(used.contains("3 of 4") && used.contains("2 of 4"), "{text}");
    let out = migplan()
        .args([
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            "2g.20gb=3,3g.40gb=2",
            "--gpus",
            "4",
            "--exact",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["gpus_used"], 3);
    assert_eq!(v["exact"]["gpus_used"], 2);
    assert_eq!(v["exact"]["optimal"], true);
    assert_eq!(v["exact"]["layouts"].as_array().unwrap().len(), 2);
}

#[test]
fn layout_bad_input_is_one_line_exit_2() {
    let base = ["layout", "--gpu", "h100-80gb", "--gpus", "4", "--demand"];
    let with = |d: &str| {
        let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        v.push(d.to_string());
        v
    };
    for (d, want) in [
        ("1g.10gb", "is not PROFILE=N"),
        ("1g.10gb=two", "not a whole number"),
        ("3g.20gb=1", "unknown profile `3g.20gb`"),
        ("7g.80gb=9", "more than 4 GPUs"),
    ] {
        let args = with(d);
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        one_line_error(&args, want);
    }
    one_line_error(
        &["layout", "--gpu", "v100", "--demand", "1g.10gb=1", "--gpus", "1"],
        "unknown GPU model `v100`",
    );
    one_line_error(
        &[
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            "1g.10gb=1",
            "--gpus",
            "1",
            "--menu",
            "nope",
        ],
        "no layout `nope`",
    );
}

const H100: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/h100-four-tenants.toml");

#[test]
fn chargeback_of_the_worked_example() {
    let out = migplan().args(["chargeback", H100, "--json"]).output().unwrap();
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
    let out = migplan()
        .args(["chargeback", H100, "--hours", "200"])
        .output()
        .unwrap();
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
    let out = migplan()
        .args(["export", "mig-parted", H100, "--host", "gpu-node-07"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_yaml::Value = serde_yaml::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["version"], serde_yaml::Value::from("v1"));
    let by_index = migplan()
        .args(["export", "mig-parted", H100, "--host", "0"])
        .output()
        .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[host]]\nname = \"a\"\ncores = 8\nram_gb = 8\ngpus = [\"z100\"]\n",
    )
    .unwrap();
    one_line_error(
        &["export", "mig-parted", bad.to_str().unwrap()],
        "unknown GPU model `z100`",
    );
}
