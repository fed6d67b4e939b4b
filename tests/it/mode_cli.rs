//! `migplan mode` through the real binary on `scenarios/inference-l40s.toml`: the preview of a
//! change between shared and whole (the drain covers the GPU only) and of a MIG change (the
//! drain covers the host), the JSON document, `--apply -o` writing the fleet after the change,
//! and bad input (exit 2, one line naming the argument).
//!
//! The scenario by hand: l40s-0/0 (48 GB, shared) holds VM 3 (24 GB) and VM 4 (16 GB), l40s-0/1
//! holds VM 5 (20 GB), l40s-0/2 is held whole by VM 6, l40s-0/3 is free and whole. Changing
//! l40s-0/0 to whole drains it: VM 3 (the larger, first) fits l40s-0/1 (28 GB free, then 4),
//! VM 4 fits no shared GPU (l40s-0/1 has 4 GB left) and a soft share never takes a whole GPU,
//! so it stays pending. Active GPUs: h100-0/0, l40s-0/0-2, l4-0/0 = 5 before, 4 after.

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use migplan::fleet::GpuMode;
use migplan::scenario;
use std::path::Path;

const SCENARIO: &str = "scenarios/inference-l40s.toml";

fn mode(args: &[&str]) -> std::process::Output {
    migplan().arg("mode").args(args).output().unwrap()
}

#[test]
fn shared_to_whole_drains_the_gpu_only_and_says_where_each_vm_goes() {
    let out = mode(&[SCENARIO, "l40s-0/0", "whole"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "GPU l40s-0/0: shared -> whole\n\
         drain: GPU l40s-0/0 only (no MIG change)\n\
         VM 3 [chat] (share 24 GB w 0.50 on gpu 0): -> l40s-0 gpu 1\n\
         VM 4 [chat] (share 16 GB w 0.30 on gpu 0): nowhere: stays pending\n\
         active: 3 hosts, 5 GPUs before; 3 hosts, 4 GPUs after\n"
    );
}

#[test]
fn a_mig_change_drains_the_host_and_the_json_lists_every_leaver() {
    // h100-0/1 is free: MIG -> shared still drains h100-0, whose VMs 1 and 2 (on GPU 0)
    // restart in place. The H100 needs no reset, and none is asked when MIG is switched off.
    let out = mode(&[SCENARIO, "h100-0/1", "shared", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["host"], "h100-0");
    assert_eq!(v["gpu"], 1);
    assert_eq!(v["from"], "mig");
    assert_eq!(v["to"], "shared");
    assert_eq!(v["layout"], serde_json::Value::Null);
    assert_eq!(v["host_drain"], true);
    assert_eq!(v["needs_reset"], false);
    let leavers = v["leavers"].as_array().unwrap();
    let ids: Vec<u64> = leavers.iter().map(|l| l["vm"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2]);
    for l in leavers {
        assert_eq!(l["to"]["kind"], "in_place", "{l}");
        assert_eq!(l["on_changed_gpu"], false, "{l}");
        assert_eq!(l["tenant"], "search", "{l}");
    }
    assert_eq!(leavers[0]["holds"], "3g.40gb@gpu 0");
    assert_eq!(v["pending"], serde_json::json!([]));
    assert_eq!(v["active_before"], serde_json::json!({"hosts": 3, "gpus": 5}));
    assert_eq!(v["active_after"], serde_json::json!({"hosts": 3, "gpus": 5}));
    // Back to MIG with a layout of the H100's menu: the layout is named.
    let out = mode(&[SCENARIO, "h100-0/0", "mig", "all-balanced", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["layout"], "all-balanced");
    assert_eq!(v["host_drain"], true);
}

#[test]
fn apply_writes_the_fleet_after_the_change_and_leaves_the_input_alone() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO)).unwrap();
    let (dir, input) = temp_file("in.toml", &text);
    let out_path = dir.path().join("out.toml");
    let out = mode(&[
        input.to_str().unwrap(),
        "l40s-0/0",
        "whole",
        "--apply",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.ends_with(&format!("wrote {}\n", out_path.display())),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&input).unwrap(),
        text,
        "the input is only read"
    );
    let after = scenario::load(&out_path).unwrap();
    let f = &after.fleet;
    f.check_invariants().unwrap();
    let l40s = f.hosts.iter().position(|h| h.name == "l40s-0").unwrap();
    let modes: Vec<GpuMode> = f.hosts[l40s].gpus.iter().map(|g| g.mode).collect();
    assert_eq!(
        modes,
        [GpuMode::Whole, GpuMode::Shared, GpuMode::Whole, GpuMode::Whole]
    );
    let p3 = f.vm(3).unwrap().placement.clone().unwrap();
    assert_eq!((p3.host, p3.gis[0].gpu), (l40s, 1));
    assert!(f.vm(4).unwrap().placement.is_none());
    assert_eq!(f.pending(), [4]);
    // The written file is what the preview of the same change promised.
    let out = mode(&[out_path.to_str().unwrap(), "l40s-0/0", "whole"]);
    assert_one_line_error(
        &out,
        &["mode"],
        &["MODE `whole`", "GPU l40s-0/0 is already whole"],
    );
    // --apply needs -o and -o needs --apply (clap's usage error, exit 2).
    for args in [
        vec![SCENARIO, "l40s-0/0", "whole", "--apply"],
        vec![SCENARIO, "l40s-0/0", "whole", "-o", "x.toml"],
    ] {
        let out = mode(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn bad_arguments_are_one_line_errors_naming_the_argument() {
    for (args, want) in [
        (
            vec![SCENARIO, "nohost/0", "whole"],
            vec![
                "HOST/GPU `nohost/0`",
                "no host `nohost`",
                "inference-l40s.toml",
                "h100-0, l40s-0, l4-0",
            ],
        ),
        (
            vec![SCENARIO, "l40s-0/4", "whole"],
            vec!["HOST/GPU `l40s-0/4`", "has 4 GPUs (0..=3), no GPU `4`"],
        ),
        (
            vec![SCENARIO, "l40s-0", "whole"],
            vec!["HOST/GPU `l40s-0`", "e.g. `h100-0/0`"],
        ),
        (
            vec![SCENARIO, "h100-0/1", "mig", "no-such-layout"],
            vec![
                "MODE `mig no-such-layout`",
                "unknown layout `no-such-layout`",
                "all-balanced",
            ],
        ),
        (
            vec![SCENARIO, "h100-0/1", "mig", "all-1g.5gb"],
            vec!["MODE `mig all-1g.5gb`", "is for a100-40gb GPUs", "h100-80gb"],
        ),
        (
            vec![SCENARIO, "l40s-0/3", "mig", "all-balanced"],
            vec![
                "MODE `mig all-balanced`",
                "l40s-48gb, which has no MIG",
                "whole or shared",
            ],
        ),
        (
            vec![SCENARIO, "l4-0/0", "mig", "whole"],
            vec!["l4-24gb, which has no MIG"],
        ),
        (
            vec![SCENARIO, "l40s-0/3", "turbo"],
            vec!["MODE `turbo`", "say whole, shared or mig LAYOUT"],
        ),
        (
            vec![SCENARIO, "l40s-0/3", "whole"],
            vec!["MODE `whole`", "already whole"],
        ),
        (
            vec!["no-such-file.toml", "l40s-0/3", "whole"],
            vec!["no-such-file.toml"],
        ),
    ] {
        let out = mode(&args);
        assert_one_line_error(&out, &args, &want);
    }
}
