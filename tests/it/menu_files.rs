//! Menus from mig-parted files: `check-config` on a config written in the GPU operator's shape
//! (device filters, boards with no catalog model, a config that cannot be placed), and
//! `layout --menu FILE.yaml` planning the multi-tenant worked example from it.

use crate::common::cli::migplan;
use serde_json::Value;

const FIXTURE: &str = "tests/it/fixtures/mig-parted/operator-like.yaml";

fn line_of(needle: &str) -> usize {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn check_config_names_the_config_that_cannot_be_placed_and_skips_unknown_boards() {
    let out = migplan().args(["check-config", FIXTURE]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    let bad_line = line_of("bad-inference:") + 1;
    let want = format!("{FIXTURE}:{bad_line}: config `bad-inference` on h100-80gb: 2g.20gb does not fit:");
    assert!(text.contains(&want), "{text}");
    assert!(text.contains("8 compute slices"), "{text}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("1 config entry cannot be placed"), "{err}");
    // The GB200 entry and the RTX PRO profile are notes, not errors.
    assert!(
        text.contains("device ID(s) 0x294110DE name no model in the catalog: skipped"),
        "{text}"
    );
    assert!(
        text.contains("no catalog model offers 1g.24gb+gfx: skipped"),
        "{text}"
    );

    let out = migplan()
        .args(["check-config", FIXTURE, "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["configs"], 8);
    assert_eq!(v["unplaceable"], 1);
    let rows = v["rows"].as_array().unwrap();
    let row = |config: &str, model: &str, devices: &str| {
        rows.iter()
            .find(|r| r["config"] == config && r["model"] == model && r["devices"] == devices)
            .unwrap_or_else(|| panic!("no row {config} {model} {devices}"))
            .clone()
    };
    // 7 x 1g.10gb on an H100 uses every compute slice and leaves one memory slice stranded;
    // on the A100-40GB the filter's 4 x 1g.10gb uses all memory and strands 3 compute slices.
    let r = row("all-1g.10gb", "h100-80gb", "all");
    assert_eq!(
        (
            r["unused_compute_slices"].as_u64(),
            r["unused_memory_slices"].as_u64()
        ),
        (Some(0), Some(1))
    );
    assert_eq!(r["stranded"], true);
    let r = row("all-1g.10gb", "a100-40gb", "all");
    assert_eq!(
        (
            r["unused_compute_slices"].as_u64(),
            r["unused_memory_slices"].as_u64()
        ),
        (Some(3), Some(0))
    );
    let r = row("two-heavy", "h100-80gb", "0,1");
    assert_eq!(r["unused_compute_slices"], 1);
    assert_eq!(r["stranded"], true);
    assert_eq!(row("all-balanced", "a100-80gb", "all")["result"], "placeable");
    assert_eq!(row("all-disabled", "a30-24gb", "all")["result"], "mig-disabled");
    assert_eq!(row("bad-inference", "h100-80gb", "all")["profile"], "2g.20gb");
}

#[test]
fn layout_menu_from_a_mig_parted_file_plans_the_worked_example() {
    let out = migplan()
        .args([
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            "1g.10gb=4,2g.20gb=2,3g.40gb=2,7g.80gb=1",
        ])
        .args(["--gpus", "4", "--json", "--menu", FIXTURE])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["layouts"],
        serde_json::json!(["all-balanced", "all-balanced", "whole"])
    );
    assert_eq!(v["gpus_used"], 3);
    // The file offers the A30 only all-disabled and all-enabled: nothing serves a 1g.6gb.
    let out = migplan()
        .args([
            "layout", "--gpu", "a30-24gb", "--demand", "1g.6gb=1", "--gpus", "1", "--menu", FIXTURE,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no layout of the menu serves the remaining demand 1x1g.6gb"),
        "{err}"
    );
}
