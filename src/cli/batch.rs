//! `migplan batch SCENARIO [--json] [--apply -o OUT]`: the batch plan of the pending queue across
//! GPU modes (`ops::serving::plan_pending`, docs/operations.md): single-GI MIG requests laid out
//! per GPU model by the exact layout planner, shares and gangs placed by the packing score.
//! Prints the VMs placed and left pending, the MIG GPUs the layouts use per model (and whether
//! HiGHS proved each plan optimal), the layout of each GPU laid out, the GPUs used per mode and
//! the hosts whose GPUs are all whole and free (room for a gang). `--apply -o OUT` writes the
//! scenario with the placements (the input file is only read).

use crate::fleet::{Fleet, GpuMode, Shape, Vm};
use crate::ops::layout_planner::ExactSettings;
use crate::ops::layouts;
use crate::ops::serving::{self, BatchPlan};
use crate::scenario;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    #[command(flatten)]
    pub output: super::ChangeOutput,
}

/// What the batch did, in the terms both reports print.
struct Report {
    placed: usize,
    pending: Vec<(u64, String)>,
    /// (GPU label, the layout's name on file if any, its instances).
    layouts: Vec<(String, Option<String>, String)>,
    gang_hosts: Vec<String>,
    by_mode: (usize, usize, usize),
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let sc = scenario::load(&a.scenario)?;
    let file = a.scenario.display().to_string();
    let plan = serving::plan_pending(&sc.fleet, &sc.policy.packing, ExactSettings::default())
        .map_err(|e| {
            anyhow::anyhow!(
                "{file}: the batch cannot be planned: {e}; `migplan defrag {file}` or `migplan solve {file}` may free GPUs"
            )
        })?;
    let r = report(&sc.fleet, &plan);
    a.output.finish(
        &sc,
        &plan.fleet,
        || render(&plan, &r, &file),
        || to_json(&plan, &r),
        "the batch plan",
    )
}

/// Why a VM the batch left pending found no room, as far as its shape tells.
fn why_pending(fleet: &Fleet, vm: &Vm) -> String {
    let model = |m: usize| fleet.catalog.model(m).name.clone();
    match vm.shape {
        Shape::Gang { model: m, gpus } => {
            format!("no host has {gpus} whole {} GPUs free", model(m))
        }
        Shape::Share {
            model: m,
            gb,
            isolation: true,
            ..
        } => format!("no whole {} GPU free for an isolated {gb} GB share", model(m)),
        Shape::Share { model: m, gb, .. } => {
            format!("no shared {} GPU with {gb} GB free", model(m))
        }
        Shape::Mig if vm.gis.len() == 1 => {
            let m = vm.gis[0].model;
            let free = fleet
                .hosts
                .iter()
                .flat_map(|h| &h.gpus)
                .any(|g| g.model == m && g.mode == GpuMode::Mig && !g.is_used());
            if free {
                "no room left on the MIG GPUs of its model after the layout plan".into()
            } else {
                format!("no free {} GPU in MIG mode to lay out", model(m))
            }
        }
        Shape::Mig => "no host takes all of its GIs (packing score)".into(),
    }
}

fn report(before: &Fleet, plan: &BatchPlan) -> Report {
    let after = &plan.fleet;
    let menu = layouts::embedded();
    let mut laid_out = Vec::new();
    for (h, (hb, ha)) in before.hosts.iter().zip(&after.hosts).enumerate() {
        for (k, (gb, ga)) in hb.gpus.iter().zip(&ha.gpus).enumerate() {
            if ga.mode != GpuMode::Mig || gb.is_used() || !ga.is_used() {
                continue;
            }
            let model = after.catalog.model(ga.model);
            let mut counts = vec![0u32; model.profiles.len()];
            for gi in &ga.gis {
                if let Some(c) = counts.get_mut(gi.profile) {
                    *c += 1;
                }
            }
            let name = menu.name_of(ga.model, &counts).map(str::to_string);
            laid_out.push((after.gpu_label(h, k), name, compact(model, &counts)));
        }
    }
    let pending = after
        .pending()
        .iter()
        .filter_map(|&id| after.vm(id).map(|v| (id, why_pending(after, v))))
        .collect();
    let gang_hosts = after
        .hosts
        .iter()
        .filter(|h| !h.gpus.is_empty() && h.gpus.iter().all(|g| g.is_free_whole()))
        .map(|h| h.name.clone())
        .collect();
    Report {
        placed: plan.placed.len(),
        pending,
        layouts: laid_out,
        gang_hosts,
        by_mode: serving::used_gpus_by_mode(after),
    }
}

/// `1g.10gb x3 2g.20gb x2`: the instances of a GPU, by profile.
fn compact(model: &crate::catalog::GpuModel, counts: &[u32]) -> String {
    layouts::named_counts(model, counts)
        .map(|(name, n)| format!("{name} x{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn render(plan: &BatchPlan, r: &Report, file: &str) -> String {
    let mut out = String::new();
    out += &format!(
        "batch: {} VM(s) placed, {} left pending\n",
        r.placed,
        r.pending.len()
    );
    for (id, why) in &r.pending {
        out += &format!("  pending VM {id}: {why}\n");
    }
    for (model, n) in &plan.no_free_gpu {
        out += &format!(
            "no free {model} GPU in MIG mode: none was laid out, and its {n} single-instance request(s) stay pending. \
             Free GPUs first: `migplan defrag {file}` (restarts the fewest tenants at their next deploy) \
             or `migplan solve {file}` (live migrations), then run the batch again.\n"
        );
    }
    for (model, n) in &plan.layout_gpus {
        out += &format!("MIG GPUs for the layouts: {model} {n}\n");
    }
    out += &format!(
        "layout plan: {}\n",
        if plan.proven_optimal {
            "proven optimal by the exact planner"
        } else {
            "not proven optimal (the solver stopped at its limit)"
        }
    );
    out += &format!("layouts ({} GPU(s)):\n", r.layouts.len());
    let rows: Vec<Vec<String>> = r
        .layouts
        .iter()
        .map(|(gpu, name, gis)| {
            let l = match name {
                Some(n) => format!("{n} ({gis})"),
                None => gis.clone(),
            };
            vec![format!("  {gpu}"), l]
        })
        .collect();
    for line in super::table_lines(&rows) {
        out += &line;
        out += "\n";
    }
    let (mig, whole, shared) = r.by_mode;
    out += &format!("GPUs used: MIG {mig}, whole {whole}, shared {shared}\n");
    out += &format!(
        "gang hosts (all GPUs whole and free): {}{}\n",
        r.gang_hosts.len(),
        if r.gang_hosts.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.gang_hosts.join(" "))
        }
    );
    out
}

fn to_json(plan: &BatchPlan, r: &Report) -> serde_json::Value {
    let (mig, whole, shared) = r.by_mode;
    json!({
        "placed": plan.placed,
        "placed_count": r.placed,
        "pending": r.pending.iter().map(|(id, why)| json!({"vm": id, "why": why})).collect::<Vec<_>>(),
        "pending_count": r.pending.len(),
        "layout_gpus": plan.layout_gpus,
        "mig_gpus": plan.layout_gpus.values().sum::<u32>(),
        "proven_optimal": plan.proven_optimal,
        "no_free_gpu": plan.no_free_gpu.iter().map(|(m, n)| json!({"model": m, "pending": n})).collect::<Vec<_>>(),
        "layouts": r.layouts.iter().map(|(gpu, name, gis)| json!({"gpu": gpu, "name": name, "instances": gis})).collect::<Vec<_>>(),
        "gpus_used": {"mig": mig, "whole": whole, "shared": shared},
        "gang_hosts": r.gang_hosts,
        "gang_hosts_count": r.gang_hosts.len(),
    })
}
