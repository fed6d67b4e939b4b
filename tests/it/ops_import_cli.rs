//! `migplan import mig-parted` through the real binary: the export of every shipped scenario
//! imports back to the same instances on every GPU (a file and standard input), a changed config
//! shows its layout changes and the drains they cause, and bad input is one line with exit 2.

use crate::common::cli::migplan;
use crate::common::fleet::H100_FOUR_TENANTS as H100;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(name)
}

fn export(s: &Path) -> String {
    let out = migplan().args(["export", "mig-parted"]).arg(s).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

fn import_json(s: &Path, file: &Path) -> Value {
    let out = migplan()
        .args(["import", "mig-parted"])
        .arg(s)
        .arg(file)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn export_then_import_round_trips_every_scenario() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["h100-four-tenants.toml", "demo.toml", "fig1.toml"] {
        let s = scenario(name);
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, export(&s)).unwrap();
        let v = import_json(&s, &file);
        assert_eq!(v["gpus_changed"], 0, "{name}");
        assert_eq!(v["hosts_drained"], 0, "{name}");
        let mut gpus = 0;
        for h in v["hosts"].as_array().unwrap() {
            assert_eq!(h["drains"], false, "{name}");
            for g in h["gpus"].as_array().unwrap() {
                assert_eq!(g["configured"], true, "{name}");
                assert_eq!(g["imported"], g["current"], "{name}: {g}");
                gpus += 1;
            }
        }
        assert!(gpus > 0, "{name}");
    }
    // The worked example's GPUs by name: the layouts the planner chose are recognised.
    let file = dir.path().join("h100-four-tenants.toml.yaml");
    let v = import_json(Path::new(H100), &file);
    let names: Vec<&str> = v["hosts"][0]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["layout"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["all-balanced", "all-balanced", "whole", "all-enabled"]);
}

#[test]
fn export_piped_into_import_through_stdin() {
    let text = export(Path::new(H100));
    let out = migplan()
        .args(["import", "mig-parted", H100, "-"])
        .write_stdin(text)
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.starts_with("mig-parted config <stdin>: 1 host config(s), checked against the placement rules\n"),
        "{t}"
    );
    assert!(
        t.ends_with("No GPU changes layout: applying this config drains nothing.\n"),
        "{t}"
    );
    assert_eq!(t.matches("  no\n").count(), 4, "{t}");
}

const CHANGED: &str = "version: v1
mig-configs:
  gpu-node-07:
    - devices: [3]
      mig-enabled: true
      mig-devices:
        \"1g.10gb\": 7
    - devices: [0]
      mig-enabled: true
      mig-devices:
        \"3g.40gb\": 1
        \"4g.40gb\": 1
";

#[test]
fn a_changed_config_shows_the_drain() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("changed.yaml");
    std::fs::write(&file, CHANGED).unwrap();
    let v = import_json(Path::new(H100), &file);
    assert_eq!(v["gpus_changed"], 2);
    assert_eq!(v["hosts_drained"], 1);
    let h = &v["hosts"][0];
    let g = &h["gpus"];
    assert_eq!(g[0]["layout"], "tenant-heavy");
    assert_eq!(g[0]["imported"], json!({"3g.40gb": 1, "4g.40gb": 1}));
    assert_eq!(g[1]["configured"], false);
    assert_eq!(g[1]["changes"], false);
    assert_eq!(g[3]["layout"], "all-1g.10gb");
    assert_eq!(g[3]["changes"], true);
    // A layout change drains the whole node, all nine tenants; GPU 0's two 1g.10gb and its 2g.20gb
    // have no instance in tenant-heavy (VMs 1, 2 and 5), its 3g.40gb (VM 7) comes back.
    assert_eq!(h["displaced"], json!([1, 2, 3, 4, 5, 6, 7, 8, 9]));
    assert_eq!(h["lose_instance"], json!([1, 2, 5]));
    let out = migplan()
        .args(["import", "mig-parted", H100])
        .arg(&file)
        .output()
        .unwrap();
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(
        t.contains("2 GPU(s) change layout; a change drains the whole host (see `migplan relayout`):\n  gpu-node-07: 9 VM(s) displaced (VM 1, 2, 3, 4, 5, 6, 7, 8, 9); no instance back for VM 1, 2, 5\n"),
        "{t}"
    );
}

#[test]
fn bad_configs_are_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            CHANGED.replace("\"4g.40gb\": 1", "\"4g.20gb\": 1"),
            vec!["bad.yaml: mig-configs.gpu-node-07[1]: GPU 0: unknown profile `4g.20gb`"],
        ),
        (
            CHANGED.replace("\"1g.10gb\": 7", "\"1g.10gb\": 8"),
            vec!["mig-configs.gpu-node-07[0]: GPU 3: 8x1g.10gb cannot be placed"],
        ),
        (
            "version: v1\nmig-configs: {}\n".to_string(),
            vec!["bad.yaml: `mig-configs` is empty"],
        ),
        (
            CHANGED.replace("gpu-node-07", "gpu-node-99"),
            vec!["no config applies to a host of the scenario (configs: `gpu-node-99`)"],
        ),
        (
            "version: v1\nmig-configs: [\n".to_string(),
            vec!["bad.yaml:3:1: not YAML"],
        ),
    ];
    for (text, want) in cases {
        let file = dir.path().join("bad.yaml");
        std::fs::write(&file, &text).unwrap();
        let out = migplan()
            .args(["import", "mig-parted", H100])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        for w in want {
            assert!(err.contains(w), "{w}: {err}");
        }
        assert!(out.stdout.is_empty());
    }
    let out = migplan()
        .args(["import", "mig-parted", H100, "/nonexistent/config.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/config.yaml: cannot read: No such file"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
