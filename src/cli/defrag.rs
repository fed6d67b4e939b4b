//! `migplan defrag SCENARIO [--free-gpus N | --gpu HOST/GPU] [--json] [--apply -o OUT]`: the
//! defragmentation pass across GPU modes (`ops::defrag`, docs/operations.md): soft shares repacked
//! onto the fewest shared GPUs, and the fewest MIG tenants restarted at their next deploy to free
//! GPUs for a pending gang or whole-GPU request, a number of free GPUs or one given GPU. Prints
//! the executor's steps (share moves, restarts at deploy), the GPUs and hosts freed, the
//! footprint before and after, and whether each pending gang fits; with no goal the plan also
//! switches the GPUs a pending gang or isolated share takes to whole (`set_mode` steps) and
//! starts it. `--apply -o OUT` writes the
//! scenario with the plan applied (the input file is only read).

use crate::executor::StepKind;
use crate::fleet::{Fleet, HostId, Placement};
use crate::ops::defrag::{self, Defrag, Footprint, Goal};
use crate::scenario;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Free MIG GPUs (by restarting tenants) until the fleet has at least N GPUs holding nothing.
    #[arg(long, value_name = "N", conflicts_with = "gpu")]
    pub free_gpus: Option<usize>,
    /// Free this MIG GPU: HOST/GPU (host name or index, GPU index).
    #[arg(long, value_name = "HOST/GPU")]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub output: super::ChangeOutput,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let sc = scenario::load(&a.scenario)?;
    let fleet = &sc.fleet;
    let file = a.scenario.display().to_string();
    if let Some(n) = a.free_gpus {
        let total = fleet.total_gpus();
        if n > total {
            anyhow::bail!("--free-gpus: {n} free GPUs asked for, but {file} has {total} GPUs");
        }
    }
    let goal = match (&a.gpu, a.free_gpus) {
        (Some(g), _) => {
            let (h, k) = crate::ops::mode::parse_gpu_ref(fleet, g)
                .map_err(|e| anyhow::anyhow!("--gpu: no GPU `{g}` in {file}: {e}"))?;
            Goal::Gpu(h, k)
        }
        (None, Some(n)) => Goal::FreeGpus(n),
        (None, None) => Goal::Auto,
    };
    let d = defrag::defrag(fleet, goal).map_err(|e| match goal {
        Goal::Gpu(..) => anyhow::anyhow!("--gpu: {e}"),
        _ => anyhow::anyhow!("{file}: {e}"),
    })?;
    a.output.finish(
        &sc,
        &d.after_fleet,
        || render(fleet, &d),
        || to_json(fleet, &d),
        "the applied plan",
    )
}

fn goal_text(fleet: &Fleet, g: Goal) -> String {
    match g {
        Goal::Auto => "repack shares; free GPUs for a pending gang or whole-GPU request".into(),
        Goal::FreeGpus(n) => format!("repack shares; {n} free GPU(s)"),
        Goal::Gpu(h, k) => format!("repack shares; free {}", fleet.gpu_label(h, k)),
    }
}

/// `serve-0 GPU 2 @4` per GI, `shared-0 GPU 1` for a share or a whole GPU.
fn where_text(fleet: &Fleet, vm: u64, p: &Placement) -> String {
    let host = fleet.hosts.get(p.host).map_or("?", |h| h.name.as_str());
    let Some(v) = fleet.vm(vm) else {
        return host.to_string();
    };
    if v.gis.is_empty() {
        let gpus: Vec<String> = p.gis.iter().map(|s| s.gpu.to_string()).collect();
        return format!("{host} GPU {}", gpus.join(","));
    }
    v.gis
        .iter()
        .zip(&p.gis)
        .map(|(g, s)| {
            let prof = &fleet.catalog.model(g.model).profiles[g.profile].name;
            format!("{prof} {host} GPU {} @{}", s.gpu, s.start)
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

fn gpus_text(fleet: &Fleet, gpus: &[(HostId, usize)]) -> String {
    if gpus.is_empty() {
        return "none".into();
    }
    gpus.iter()
        .map(|&(h, k)| fleet.gpu_label(h, k))
        .collect::<Vec<_>>()
        .join(" ")
}

fn footprint_text(f: &Footprint) -> String {
    format!(
        "{} active hosts, {} used GPUs (MIG {}, whole {}, shared {}), {} free GPUs",
        f.active_hosts, f.used_gpus, f.used_mig, f.used_whole, f.used_shared, f.free_gpus
    )
}

/// The text report.
pub fn render(fleet: &Fleet, d: &Defrag) -> String {
    let mut out = String::new();
    out += &format!("defrag: {}\n", goal_text(fleet, d.goal));
    out += &format!(
        "plan: {} step(s): {} share move(s) (live, {} GB of shares), {} restart(s) at the next deploy (nothing copied), {} mode switch(es), {} start(s)\n",
        d.schedule.steps.len(),
        d.share_moves.len(),
        d.share_moves.iter().map(|m| u64::from(m.gb)).sum::<u64>(),
        d.restarts.len(),
        d.schedule.mode_switches(),
        d.schedule.steps.iter().filter(|s| s.kind == StepKind::Start).count()
    );
    for (i, s) in d.schedule.steps.iter().enumerate() {
        if let Some(words) = crate::executor::set_mode_text(fleet, s) {
            out += &format!("{:>3}. set_mode: {words}\n", i + 1);
            continue;
        }
        let from = s
            .from
            .as_ref()
            .map_or_else(|| "queue".into(), |p| where_text(fleet, s.vm, p));
        let what = match s.kind {
            StepKind::RestartAtDeploy => "restart at deploy",
            StepKind::Move => match fleet.vm(s.vm).map(|v| v.shape) {
                Some(crate::fleet::Shape::Share { gb, .. }) => {
                    out += &format!(
                        "{:>3}. VM {}: move share {gb} GB {from} -> {}\n",
                        i + 1,
                        s.vm,
                        where_text(fleet, s.vm, &s.to)
                    );
                    continue;
                }
                _ => "move",
            },
            k => k.name(),
        };
        out += &format!(
            "{:>3}. VM {}: {what} {from} -> {}\n",
            i + 1,
            s.vm,
            where_text(fleet, s.vm, &s.to)
        );
    }
    out += &format!("GPUs freed: {}\n", gpus_text(fleet, &d.freed_gpus));
    let hosts: Vec<&str> = d
        .freed_hosts
        .iter()
        .map(|&h| fleet.hosts[h].name.as_str())
        .collect();
    out += &format!(
        "hosts freed: {}\n",
        if hosts.is_empty() {
            "none".into()
        } else {
            hosts.join(" ")
        }
    );
    out += &format!(
        "shared GPUs used: {} (the shares' GB need at least {})\n",
        d.shared_used, d.shared_bound
    );
    out += &format!("before: {}\n", footprint_text(&d.before));
    out += &format!("after:  {}\n", footprint_text(&d.after));
    for w in &d.whole_requests {
        let state =
            match w.host {
                None => "still has no room".to_string(),
                Some(h) if w.started && w.switch.is_empty() => {
                    format!("starts on {} in this plan", fleet.hosts[h].name)
                }
                Some(h) if w.started => format!(
                    "starts on {} in this plan, after GPU(s) {} switch to whole",
                    fleet.hosts[h].name,
                    w.switch
                        .iter()
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                Some(h) if w.switch.is_empty() => format!("fits on {}", fleet.hosts[h].name),
                Some(h) => {
                    format!(
                "fits on {} once GPU(s) {} switch to whole (`:mode HOST/GPU whole`, nothing to drain)",
                fleet.hosts[h].name,
                w.switch.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(",")
            )
                }
            };
        out += &format!(
            "pending VM {} ({} whole GPU(s)): {}{}\n",
            w.vm,
            w.gpus,
            if w.fits_before {
                "fits before the plan; after it "
            } else {
                ""
            },
            state
        );
    }
    if !d.exact {
        out += "note: the restart search reached its budget; the counts may not be minimal\n";
    }
    if let Some(why) = &d.short {
        out += &format!("short: {why}\n");
    }
    out
}

fn placement_json(p: &Placement) -> serde_json::Value {
    json!({
        "host": p.host,
        "gis": p.gis.iter().map(|s| json!({"gpu": s.gpu, "start": s.start})).collect::<Vec<_>>(),
    })
}

/// The JSON report.
pub(crate) fn to_json(fleet: &Fleet, d: &Defrag) -> serde_json::Value {
    let gpu = |&(h, k): &(HostId, usize)| json!({"host": fleet.hosts[h].name, "gpu": k});
    json!({
        "goal": goal_text(fleet, d.goal),
        "steps": d.schedule.steps.iter().map(|s| match s.kind {
            StepKind::SetMode(mode) => {
                let (h, k) = crate::executor::step_gpu(s).unwrap_or((s.to.host, 0));
                let g = &fleet.hosts[h].gpus[k];
                json!({
                    "vm": s.vm,
                    "kind": s.kind,
                    "gpu": gpu(&(h, k)),
                    "mode_before": g.mode,
                    "mode": mode,
                    "needs_reset": crate::executor::switch_needs_reset(fleet, g.model, g.mode, mode),
                })
            }
            _ => json!({
                "vm": s.vm,
                "kind": s.kind,
                "from": s.from.as_ref().map(placement_json),
                "to": placement_json(&s.to),
            }),
        }).collect::<Vec<_>>(),
        "share_moves": d.share_moves.iter().map(|m| json!({
            "vm": m.vm, "gb": m.gb, "from": gpu(&m.from), "to": gpu(&m.to),
        })).collect::<Vec<_>>(),
        "restarts": d.restarts.iter().map(|r| json!({
            "vm": r.vm, "from": placement_json(&r.from), "to": placement_json(&r.to),
        })).collect::<Vec<_>>(),
        "migrations": d.schedule.migrations(),
        "restarts_at_deploy": d.schedule.restarts(),
        "mode_switches": d.schedule.mode_switches(),
        "gb_copied": d.schedule.copied_gb(fleet),
        "freed_gpus": d.freed_gpus.iter().map(gpu).collect::<Vec<_>>(),
        "freed_hosts": d.freed_hosts.iter().map(|&h| fleet.hosts[h].name.clone()).collect::<Vec<_>>(),
        "shared_gpus_used": d.shared_used,
        "shared_gpus_bound": d.shared_bound,
        "before": d.before,
        "after": d.after,
        "exact": d.exact,
        "short": d.short,
        "pending_whole": d.whole_requests.iter().map(|w| json!({
            "vm": w.vm,
            "gpus": w.gpus,
            "fits_before": w.fits_before,
            "fits_after": w.host.is_some(),
            "started": w.started,
            "host": w.host.map(|h| fleet.hosts[h].name.clone()),
            "switch_to_whole": w.switch,
        })).collect::<Vec<_>>(),
    })
}
