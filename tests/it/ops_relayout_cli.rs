//! `migplan relayout` through the real binary (the drain preview of a layout change): the human table, the
//! JSON document, a case where every displaced VM has a place elsewhere, and bad input (exit 2
//! with one line on stderr).

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::fleet::TWO_NODES;
use serde_json::json;
use std::path::PathBuf;

/// The scenario written to a temporary directory (kept alive by the returned guard).
fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
    temp_file("two-nodes.toml", text)
}

/// TWO_NODES plus an empty third host with two H100s.
fn with_room() -> String {
    TWO_NODES.replace(
        "# node-a GPU 0",
        "[[host]]\nname = \"node-c\"\ncores = 128\nram_gb = 1024\ngpus = [\"h100-80gb\", \"h100-80gb\"]\n\n# node-a GPU 0",
    )
}

fn relayout(path: &std::path::Path, extra: &[&str]) -> std::process::Output {
    migplan().arg("relayout").arg(path).args(extra).output().unwrap()
}

#[test]
fn human_preview_lists_every_vm_of_the_host() {
    let (_d, path) = write(TWO_NODES);
    let out = relayout(
        &path,
        &["--host", "node-a", "--gpu", "0", "--layout", "tenant-heavy"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Re-layout of node-a GPU 0: 2x1g.10gb + 1x2g.20gb + 1x3g.40gb -> tenant-heavy \
         (1x3g.40gb + 1x4g.40gb)"
    );
    assert_eq!(
        lines[1],
        "Changing a GPU's layout drains the whole host: 5 VMs on node-a would be displaced."
    );
    // Header plus one row per VM, in VM id order; research (VM 5) is on GPU 1 and still drained.
    let rows: Vec<Vec<&str>> = lines[3..8]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let first: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(first, ["1", "2", "3", "4", "5"]);
    assert_eq!(rows[4][..5], ["5", "research", "1:7g.80gb", "no", "yes"]);
    assert_eq!(
        rows[3][..7],
        ["4", "ranking", "0:3g.40gb", "yes", "yes", "node-b", "GPU"]
    );
    assert!(lines[3].ends_with("none (interrupted)"), "{}", lines[3]);
    assert_eq!(
        lines[8],
        "1 of 5 have a free place elsewhere; interrupted: VM 1, 2, 3, 5."
    );
    assert_eq!(
        lines[9],
        "No instance of their profile in the new layout: VM 1, 2, 3."
    );
    assert_eq!(lines.len(), 10);
}

#[test]
fn json_preview_by_host_index() {
    let (_d, path) = write(TWO_NODES);
    let out = relayout(
        &path,
        &["--host", "0", "--gpu", "0", "--layout", "tenant-heavy", "--json"],
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["host"], "node-a");
    assert_eq!(v["gpu"], 0);
    assert_eq!(v["layout"], "tenant-heavy");
    assert_eq!(v["to"], "1x3g.40gb + 1x4g.40gb");
    let vms: Vec<u64> = v["displaced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["vm"].as_u64().unwrap())
        .collect();
    assert_eq!(vms, [1, 2, 3, 4, 5]);
    assert_eq!(
        v["displaced"][3]["elsewhere"],
        json!({"host": "node-b", "gis": [{"gpu": 0, "start": 4}]})
    );
    assert_eq!(
        v["displaced"][0]["gis"],
        json!([{"gpu": 0, "profile": "1g.10gb"}])
    );
    assert_eq!(v["displaced"][0]["elsewhere"], serde_json::Value::Null);
    assert_eq!(v["interrupted"], json!([1, 2, 3, 5]));
    assert_eq!(v["lose_instance"], json!([1, 2, 3]));
    assert_eq!(v["all_have_a_place"], false);
}

#[test]
fn with_an_empty_host_every_vm_has_a_place() {
    // node-c's two free GPUs take research's whole GPU and the small instances; ranking's 3g
    // still takes node-b's free half (hosts in order, largest VM first).
    let (_d, path) = write(&with_room());
    let out = relayout(
        &path,
        &[
            "--host",
            "node-a",
            "--gpu",
            "1",
            "--layout",
            "all-balanced",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["all_have_a_place"], true);
    assert_eq!(v["interrupted"], json!([]));
    // Research's 7g.80gb is on GPU 1, which becomes all-balanced: no 7g there any more.
    assert_eq!(v["lose_instance"], json!([5]));
    let homes: Vec<&str> = v["displaced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["elsewhere"]["host"].as_str().unwrap())
        .collect();
    assert_eq!(homes, ["node-c", "node-c", "node-c", "node-b", "node-c"]);
    let text = relayout(
        &path,
        &["--host", "node-a", "--gpu", "1", "--layout", "all-balanced"],
    );
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("5 of 5 have a free place elsewhere."), "{text}");
}

fn one_line_error(path: &std::path::Path, args: &[&str], want: &[&str]) {
    assert_one_line_error(&relayout(path, args), args, want);
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let (_d, path) = write(TWO_NODES);
    one_line_error(
        &path,
        &["--host", "node-a", "--gpu", "0", "--layout", "all-9g"],
        &["--layout: no layout `all-9g` for h100-80gb", "tenant-heavy"],
    );
    one_line_error(
        &path,
        &["--host", "node-z", "--gpu", "0", "--layout", "whole"],
        &["--host: no host `node-z`", "node-a, node-b"],
    );
    one_line_error(
        &path,
        &["--host", "node-b", "--gpu", "1", "--layout", "whole"],
        &["--gpu: host `node-b` has 1 GPU (0..=0)", "no GPU 1"],
    );
    let missing = path.with_file_name("missing.toml");
    one_line_error(
        &missing,
        &["--host", "0", "--gpu", "0", "--layout", "whole"],
        &["missing.toml"],
    );
    let (_e, bad) = write(&TWO_NODES.replace("cores = 128", "cores = \"many\""));
    one_line_error(
        &bad,
        &["--host", "0", "--gpu", "0", "--layout", "whole"],
        &["two-nodes.toml", "cores"],
    );
}
