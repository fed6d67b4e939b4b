//! `migplan solve SCENARIO`: one OrigaMIG call (§5) on the scenario's current state: the
//! neighborhood, Eq. (5) before and after, the executor's ordered steps, the footprint before and
//! after, and the solver's status, gap and time. `--apply-to FILE` writes the scenario with the
//! call applied (only a strictly better plan changes placements; rejected pending VMs leave).

use crate::executor::{Step, StepKind};
use crate::fleet::{Fleet, Placement};
use crate::policy::origamig::objective::Terms;
use crate::policy::origamig::triggers::Class;
use crate::policy::origamig::{propose, CallMode, Proposal};
use crate::scenario;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Which call: auto (admission while VMs wait, else consolidation of the class with the
    /// largest gap), admission, consolidation, or opt (the whole fleet).
    #[arg(long, value_enum, default_value_t = CallMode::Auto)]
    pub mode: CallMode,
    /// GPU model whose class a consolidation call targets (`none` for hosts without GPUs).
    #[arg(long, value_name = "MODEL")]
    pub class: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the scenario with the call applied to FILE.
    #[arg(long, value_name = "FILE")]
    pub apply_to: Option<PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let sc = scenario::load(&a.scenario)?;
    let class = match &a.class {
        Some(name) => Some(Class::parse(&sc.fleet, name).map_err(|e| anyhow::anyhow!("--class: {e}"))?),
        None => None,
    };
    let p = propose(&sc.fleet, a.mode, class.as_ref(), &sc.policy.origamig)?;
    let compaction = gpu_compaction(&sc.fleet, &p, &sc.policy.origamig)?;
    if a.json {
        let mut v = to_json(&sc.fleet, &p);
        v["gpu_compaction"] = compaction.map_or(
            serde_json::Value::Null,
            |(moves, freed)| serde_json::json!({ "moves": moves, "gpus_freed": freed }),
        );
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&sc.fleet, &p));
        if let Some((moves, freed)) = compaction {
            println!(
                "gpu compaction: {moves} move(s) free {freed} whole GPU(s) on the hosts of more than two GPUs (not applied here; the planner's `o` previews and applies it)"
            );
        }
    }
    if let Some(out) = &a.apply_to {
        let mut next = sc.clone();
        p.apply(&mut next.fleet)?;
        next.fleet
            .check_invariants()
            .map_err(|e| anyhow::anyhow!("internal: the applied plan broke an invariant: {e}"))?;
        scenario::save(&next, out)?;
        if !a.json {
            println!("wrote {}", out.display());
        }
    }
    Ok(())
}

/// The moves of the GPU compaction the planner's `o` would preview after the call `p`
/// ([`crate::policy::origamig::gpu_compaction_after`]) and the whole GPUs they free, if it moves
/// anything.
fn gpu_compaction(
    fleet: &Fleet,
    p: &Proposal,
    settings: &crate::policy_settings::OrigamigSettings,
) -> anyhow::Result<Option<(usize, usize)>> {
    let plan = crate::policy::origamig::gpu_compaction_after(fleet, p, settings);
    if plan.targets.is_empty() {
        return Ok(None);
    }
    // The compaction's moves use only room that was free before it, so they apply in any order.
    let mut after = fleet.clone();
    for (&id, to) in &plan.targets {
        after
            .move_vm(id, to.clone())
            .map_err(|e| anyhow::anyhow!("internal: the GPU compaction's move of VM {id}: {e}"))?;
    }
    Ok(Some((
        plan.targets.len(),
        fleet.active_gpus().saturating_sub(after.active_gpus()),
    )))
}

fn host_name(fleet: &Fleet, h: usize) -> String {
    fleet
        .hosts
        .get(h)
        .map_or_else(|| format!("#{h}"), |x| x.name.clone())
}

/// `a100-0 GPU 1 @4` for each GI of a placement, with the profile names.
fn gis_text(fleet: &Fleet, vm: u64, p: &Placement) -> String {
    let Some(v) = fleet.vm(vm) else {
        return String::new();
    };
    v.gis
        .iter()
        .zip(&p.gis)
        .map(|(g, s)| {
            let prof = &fleet.catalog.model(g.model).profiles[g.profile].name;
            format!(
                "{prof} on {} GPU {} @{}",
                host_name(fleet, p.host),
                s.gpu,
                s.start
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn step_text(fleet: &Fleet, i: usize, s: &Step) -> String {
    let create = format!("create {}", gis_text(fleet, s.vm, &s.to));
    let to = host_name(fleet, s.to.host);
    match (&s.from, s.kind) {
        (None, _) | (_, StepKind::Start) => format!("{:>3}. VM {}: {create}; start on {to}", i + 1, s.vm),
        (Some(from), kind) => {
            let mark = if kind == StepKind::Park { " [parking]" } else { "" };
            let verb = if from.host == s.to.host {
                format!("migrate within {to}")
            } else {
                format!("migrate {} -> {to}", host_name(fleet, from.host))
            };
            format!(
                "{:>3}. VM {}{mark}: {create}; {verb}; destroy {}",
                i + 1,
                s.vm,
                gis_text(fleet, s.vm, from)
            )
        }
    }
}

fn ids(v: &[u64]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(|i| format!("VM {i}")).collect::<Vec<_>>().join(", ")
    }
}

/// The human report.
pub fn render(fleet: &Fleet, p: &Proposal) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let nb = &p.neighborhood;
    let kind = p.kind.as_ref().map_or("none".to_string(), |k| k.to_string());
    let _ = writeln!(o, "call: {kind} (mode {})", p.mode);
    if nb.is_empty() {
        let _ = writeln!(o, "neighborhood: empty (nothing to decide: no pending VM to admit, or no host that could be emptied)");
    } else {
        let names: Vec<String> = nb.hosts.iter().map(|&h| host_name(fleet, h)).collect();
        let _ = writeln!(
            o,
            "neighborhood: {} host(s) [{}], {} VM(s) of which {} pending [{}]",
            nb.hosts.len(),
            names.join(", "),
            nb.n_vms,
            nb.pending.len(),
            nb.pending
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if !nb.sources.is_empty() {
            let s: Vec<String> = nb.sources.iter().map(|&h| host_name(fleet, h)).collect();
            let _ = writeln!(o, "sources to empty: {}", s.join(", "));
        }
    }
    let _ = writeln!(o, "objective (Eq. 5 over the neighborhood):");
    let _ = writeln!(o, "  {:<24}{:>10}{:>10}", "term", "before", "after");
    let row = |o: &mut String, name: &str, b: f64, a: f64| {
        let _ = writeln!(o, "  {name:<24}{b:>10.1}{a:>10.1}");
    };
    let (b, a): (&Terms, &Terms) = (&p.before, &p.after);
    row(
        &mut o,
        &format!("+ admitted ({} / {})", b.n_vms, a.n_vms),
        b.admitted,
        a.admitted,
    );
    row(
        &mut o,
        &format!("- active hosts ({} / {})", b.n_hosts, a.n_hosts),
        b.hosts,
        a.hosts,
    );
    row(
        &mut o,
        &format!("- active GPUs ({} / {})", b.n_gpus, a.n_gpus),
        b.gpus,
        a.gpus,
    );
    row(&mut o, "- migrations", b.migrations, a.migrations);
    row(
        &mut o,
        &format!("+ free starts ({} / {})", b.n_free_starts, a.n_free_starts),
        b.free_starts,
        a.free_starts,
    );
    row(&mut o, "- parking", 0.0, p.parking_penalty);
    row(&mut o, "= value", b.total, p.value_after);
    if p.schedule.steps.is_empty() {
        let _ = writeln!(o, "steps: none");
    } else {
        let _ = writeln!(o, "steps ({}):", p.schedule.steps.len());
        for (i, s) in p.schedule.steps.iter().enumerate() {
            let _ = writeln!(o, "{}", step_text(fleet, i, s));
        }
    }
    if let Some(d) = &p.discarded {
        let _ = writeln!(o, "executor: plan discarded before any step: {d}");
    }
    let (fb, fa) = (&p.footprint_before, &p.footprint_after);
    let _ = writeln!(
        o,
        "fleet: active hosts {} -> {}, active GPUs {} -> {}, power {:.1} W -> {:.1} W",
        fb.active_hosts, fa.active_hosts, fb.active_gpus, fa.active_gpus, fb.power_w, fa.power_w
    );
    match p.status {
        Some(st) => {
            let _ = writeln!(
                o,
                "solver: {st}, gap {:.2} %, {:.2} s (whole call {:.2} s), {} model",
                100.0 * p.gap,
                p.solve_s,
                p.call_s,
                p.model.map_or("-", |m| m.name())
            );
        }
        None => {
            let _ = writeln!(o, "solver: not called");
        }
    }
    let verdict = if p.improves {
        format!(
            "applied: the value rises by {:.1}",
            p.value_after - p.before.total
        )
    } else if p.discarded.is_some() {
        "not applied: no executable order".to_string()
    } else if p.status.is_none() {
        "not applied: no call to make (empty neighborhood)".to_string()
    } else if p.plan.targets.is_empty() {
        "not applied: the solver keeps the current placement".to_string()
    } else {
        format!(
            "not applied: the value would not rise strictly ({:.1} -> {:.1})",
            p.before.total, p.value_after
        )
    };
    let _ = writeln!(o, "{verdict}");
    let _ = writeln!(
        o,
        "admitted: {}; rejected: {}",
        ids(&p.admitted),
        ids(&p.rejected)
    );
    o
}

fn placement_json(fleet: &Fleet, vm: u64, p: &Placement) -> serde_json::Value {
    let v = fleet.vm(vm);
    let gis: Vec<serde_json::Value> = p
        .gis
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let profile = v
                .and_then(|v| v.gis.get(i))
                .map(|g| fleet.catalog.model(g.model).profiles[g.profile].name.clone());
            serde_json::json!({ "gpu": s.gpu, "start": s.start, "profile": profile })
        })
        .collect();
    serde_json::json!({ "host": host_name(fleet, p.host), "gis": gis })
}

/// The JSON report (keys of issue 4 plus details).
pub(crate) fn to_json(fleet: &Fleet, p: &Proposal) -> serde_json::Value {
    let steps: Vec<serde_json::Value> = p
        .schedule
        .steps
        .iter()
        .map(|s| {
            serde_json::json!({
                "vm": s.vm,
                "kind": s.kind,
                "from": s.from.as_ref().map(|f| host_name(fleet, f.host)),
                "to": host_name(fleet, s.to.host),
                "from_placement": s.from.as_ref().map(|f| placement_json(fleet, s.vm, f)),
                "to_placement": placement_json(fleet, s.vm, &s.to),
            })
        })
        .collect();
    let nb = &p.neighborhood;
    serde_json::json!({
        "mode": p.mode,
        "call": p.kind.as_ref().map(|k| k.to_string()),
        "status": p.status,
        "gap": p.gap,
        "solve_s": p.solve_s,
        "call_s": p.call_s,
        "model": p.model.map(|m| m.name()),
        "objective_before": p.before.total,
        "objective_after": p.value_after,
        "parking_penalty": p.parking_penalty,
        "terms_before": p.before,
        "terms_after": p.after,
        "applied": p.improves,
        "discarded": p.discarded,
        "steps": steps,
        "neighborhood": nb.hosts.iter().map(|&h| host_name(fleet, h)).collect::<Vec<_>>(),
        "sources": nb.sources.iter().map(|&h| host_name(fleet, h)).collect::<Vec<_>>(),
        "pending": nb.pending,
        "active_hosts_before": p.footprint_before.active_hosts,
        "active_hosts_after": p.footprint_after.active_hosts,
        "active_gpus_before": p.footprint_before.active_gpus,
        "active_gpus_after": p.footprint_after.active_gpus,
        "power_w_before": p.footprint_before.power_w,
        "power_w_after": p.footprint_after.power_w,
        "admitted": p.admitted,
        "rejected": p.rejected,
    })
}
