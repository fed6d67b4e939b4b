//! `migplan batch`: the batch plan of the pending queue across GPU modes, from the command line.
//! On `scenarios/serving-200.toml` its JSON agrees with `ops::serving::plan_pending` run in
//! process and with the exact layout planner's optimum computed here; serving alone keeps both
//! gang hosts free; `--apply -o` writes a scenario that loads and `check` accepts; bad input is
//! one line with exit 2.

use crate::common::cli::{assert_one_line_error, migplan, ok};
use migplan::catalog::embedded;
use migplan::fleet::{GpuMode, Shape};
use migplan::ops::layout_planner::{self, ExactSettings};
use migplan::ops::layouts;
use migplan::ops::serving::{free_gang_hosts, plan_pending, used_gpus_by_mode};
use migplan::scenario;
use serde_json::Value;
use std::path::Path;

const SERVING: &str = "scenarios/serving-200.toml";

fn serving() -> scenario::Scenario {
    scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(SERVING)).unwrap()
}

fn batch_json(path: &str) -> Value {
    serde_json::from_str(&ok(migplan().args(["batch", path, "--json"]))).unwrap()
}

#[test]
fn serving_200_json_matches_the_in_process_plan_and_the_exact_optimum() {
    let s = serving();
    let f = &s.fleet;
    let h100 = embedded().model_id("h100-80gb").unwrap();
    let model = embedded().model(h100);
    let mut demand = vec![0u32; model.profiles.len()];
    for v in f.pending().iter().filter_map(|&id| f.vm(id)) {
        if v.shape == Shape::Mig {
            demand[v.gis[0].profile] += 1;
        }
    }
    let optimum = layout_planner::exact(
        layouts::embedded(),
        h100,
        model,
        &demand,
        48,
        ExactSettings::default(),
    )
    .unwrap();
    assert!(optimum.proven_optimal);
    let plan = plan_pending(f, &s.policy.packing, ExactSettings::default()).unwrap();

    let j = batch_json(SERVING);
    let mig = j["layout_gpus"]["h100-80gb"].as_u64().unwrap();
    assert_eq!(mig, u64::from(plan.layout_gpus["h100-80gb"]));
    assert_eq!(j["mig_gpus"].as_u64(), Some(mig));
    assert!(
        mig <= u64::from(optimum.gpus_used()),
        "{mig} > {}",
        optimum.gpus_used()
    );
    assert_eq!(j["proven_optimal"], Value::Bool(plan.proven_optimal));
    assert_eq!(j["pending_count"].as_u64(), Some(0));
    assert_eq!(j["placed_count"].as_u64(), Some(202));
    let (m, w, sh) = used_gpus_by_mode(&plan.fleet);
    assert_eq!(j["gpus_used"]["whole"].as_u64(), Some(16));
    assert_eq!(
        (
            j["gpus_used"]["mig"].as_u64(),
            j["gpus_used"]["whole"].as_u64(),
            j["gpus_used"]["shared"].as_u64()
        ),
        (Some(m as u64), Some(w as u64), Some(sh as u64))
    );
    assert_eq!(j["gang_hosts_count"].as_u64(), Some(0));
    // One layout row per MIG GPU laid out, each holding the instances the plan put there.
    let rows = j["layouts"].as_array().unwrap();
    assert_eq!(rows.len() as u64, mig);
    let instances: u64 = rows
        .iter()
        .map(|r| {
            r["instances"]
                .as_str()
                .unwrap()
                .split(' ')
                .filter_map(|t| t.strip_prefix('x'))
                .map(|n| n.parse::<u64>().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(instances, 200);

    // The text report says the same.
    let text = ok(migplan().args(["batch", SERVING]));
    assert!(text.contains("202 VM(s) placed, 0 left pending"), "{text}");
    assert!(
        text.contains(&format!("MIG GPUs for the layouts: h100-80gb {mig}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("GPUs used: MIG {m}, whole 16, shared 0")),
        "{text}"
    );
}

#[test]
fn serving_alone_keeps_both_gang_hosts_free() {
    let mut s = serving();
    let gangs: Vec<_> = s
        .fleet
        .pending()
        .iter()
        .copied()
        .filter(|&id| matches!(s.fleet.vm(id).unwrap().shape, Shape::Gang { .. }))
        .collect();
    assert_eq!(gangs.len(), 2);
    for id in gangs {
        s.fleet.remove(id).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serving-only.toml");
    scenario::save(&s, &path).unwrap();
    let j = batch_json(path.to_str().unwrap());
    assert_eq!(j["pending_count"].as_u64(), Some(0));
    assert_eq!(j["gang_hosts_count"].as_u64(), Some(2));
    let plan = plan_pending(&s.fleet, &s.policy.packing, ExactSettings::default()).unwrap();
    assert_eq!(free_gang_hosts(&plan.fleet), 2);
    let mut names: Vec<String> = serde_json::from_value(j["gang_hosts"].clone()).unwrap();
    names.sort();
    let mut want: Vec<String> = s
        .fleet
        .hosts
        .iter()
        .filter(|h| h.gpus.iter().all(|g| g.mode == GpuMode::Whole))
        .map(|h| h.name.clone())
        .collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(j["gpus_used"]["whole"].as_u64(), Some(0));
}

#[test]
fn apply_writes_a_scenario_that_loads_and_checks_with_nothing_pending() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("planned.toml");
    let o = out.to_str().unwrap();
    let text = ok(migplan().args(["batch", SERVING, "--apply", "-o", o]));
    assert!(text.contains(&format!("wrote {o}")), "{text}");
    let s = scenario::load(&out).unwrap();
    s.fleet.check_invariants().unwrap();
    assert!(s.fleet.pending().is_empty());
    let before = serving();
    let plan = plan_pending(&before.fleet, &before.policy.packing, ExactSettings::default()).unwrap();
    assert_eq!(used_gpus_by_mode(&s.fleet), used_gpus_by_mode(&plan.fleet));
    for v in plan.fleet.vms() {
        assert_eq!(s.fleet.vm(v.id).unwrap().placement, v.placement, "VM {}", v.id);
    }
    ok(migplan().args(["check", o]));
    // A second batch on the written file has nothing left to place.
    let again = batch_json(o);
    assert_eq!(again["placed_count"].as_u64(), Some(0));
    assert_eq!(again["layouts"].as_array().map(Vec::len), Some(0));
}

#[test]
fn bad_input_is_one_line_with_exit_2() {
    let args = ["batch", "no-such-file.toml"];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["no-such-file.toml"]);
    // --apply without -o is refused by the argument parser (its usage text, exit 2).
    let out = migplan().args(["batch", SERVING, "--apply"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    // Serving demand on too few MIG GPUs: the layout planner proves it does not fit.
    let mut s = serving();
    let mut left = 0;
    for h in s.fleet.hosts.iter_mut() {
        for g in h.gpus.iter_mut() {
            if g.mode == GpuMode::Mig && !g.is_used() {
                if left < 8 {
                    left += 1;
                } else {
                    g.mode = GpuMode::Whole;
                }
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.toml");
    scenario::save(&s, &path).unwrap();
    let p = path.to_str().unwrap();
    let args = ["batch", p];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &[p, "h100-80gb", "does not fit on 8 GPUs"]);
}
