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
