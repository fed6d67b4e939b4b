//! `migplan relayout SCENARIO --host ID --gpu N --layout NAME [--json]`: the drain preview
//! (docs/operations.md). Changing one GPU's MIG layout drains its whole host, so before anything is applied
//! this lists every VM on the host, whether it gets an instance back after the re-layout, and
//! whether a free place of its profile exists on another host meanwhile (`ops::relayout`).
//! Nothing is changed: the scenario file is only read.

use crate::ops::layouts;
use crate::ops::relayout::{self, DrainPreview};
use anyhow::Context;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Host of the GPU (its name or its index in the scenario).
    #[arg(long, value_name = "ID")]
    pub host: String,
    /// GPU index on that host (0-based).
    #[arg(long, value_name = "N")]
    pub gpu: usize,
    /// New layout: a name from assets/layouts.toml for the GPU's model (e.g. all-1g.10gb,
    /// all-balanced, tenant-heavy, whole).
    #[arg(long, value_name = "NAME")]
    pub layout: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the Kubernetes node runbook instead (cordon, drain, label, wait, uncordon).
    #[arg(long, conflicts_with = "json")]
    pub k8s: bool,
    /// With --k8s: `kubectl get pods -A -o json` output, to name the node's GPU pods.
    #[arg(long, value_name = "FILE", requires = "k8s")]
    pub pods: Option<PathBuf>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.scenario)?;
    let fleet = &s.fleet;
    let file = a.scenario.display().to_string();
    let host = super::export::resolve_host(fleet, &a.host, &file)?;
    let h = &fleet.hosts[host];
    if h.gpus.is_empty() {
        anyhow::bail!("--host: host `{}` has no GPUs, so no MIG layout", h.name);
    }
    let Some(g) = h.gpus.get(a.gpu) else {
        anyhow::bail!(
            "--gpu: host `{}` has {} GPU{} (0..={}), no GPU {}",
            h.name,
            h.gpus.len(),
            if h.gpus.len() == 1 { "" } else { "s" },
            h.gpus.len() - 1,
            a.gpu
        );
    };
    let catalog = fleet.catalog;
    let menu = layouts::embedded();
    let layout = menu.get(g.model, &a.layout).with_context(|| {
        let known: Vec<&str> = menu.for_model(g.model).map(|l| l.name.as_str()).collect();
        format!(
            "--layout: no layout `{}` for {} (known: {})",
            a.layout,
            catalog.model(g.model).name,
            known.join(", ")
        )
    })?;
    let p = relayout::drain_preview(fleet, host, a.gpu, layout)?;
    if a.k8s {
        let pods = match &a.pods {
            None => None,
            Some(f) => {
                let (text, file) = super::import_k8s::read_input(f, "pods")?;
                Some(crate::fleet_import::k8s::gpu_pods_on(&text, &file, &h.name)?)
            }
        };
        let (label, config) = crate::ops::k8s_export::label_after(fleet, host, a.gpu, layout);
        print!(
            "{}",
            crate::ops::k8s_export::relayout_runbook(
                fleet,
                host,
                &p,
                &label,
                config.as_deref(),
                pods.as_deref()
            )
        );
    } else if a.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&p))?);
    } else {
        print!("{}", render(&p));
    }
    Ok(())
}

/// The preview as JSON: host, GPU, layouts, one object per VM on the host (its GIs, whether it
/// is on the changed GPU, whether it gets its instances back, and its free place elsewhere or
/// `null`), then the VMs the drain interrupts (no place elsewhere) and those that lose their
/// instance on the host for good.
fn to_json(p: &DrainPreview) -> serde_json::Value {
    let vms: Vec<serde_json::Value> = p
        .displaced
        .iter()
        .map(|d| {
            let elsewhere = match (&d.elsewhere, &d.elsewhere_host) {
                (Some(pl), Some(name)) => json!({
                    "host": name,
                    "gis": pl.gis.iter().map(|s| json!({"gpu": s.gpu, "start": s.start}))
                        .collect::<Vec<_>>(),
                }),
                _ => serde_json::Value::Null,
            };
            json!({
                "vm": d.vm,
                "tenant": d.tenant,
                "gis": d.gis.iter().map(|(g, pr)| json!({"gpu": g, "profile": pr}))
                    .collect::<Vec<_>>(),
                "on_changed_gpu": d.on_changed_gpu,
                "returns_after": d.returns_after,
                "elsewhere": elsewhere,
            })
        })
        .collect();
    json!({
        "host": p.host_name,
        "gpu": p.gpu,
        "from": p.from,
        "layout": p.layout,
        "to": p.to,
        "displaced": vms,
        "all_have_a_place": p.all_have_a_place(),
        "interrupted": p.stranded(),
        "lose_instance": p.lose_instance(),
    })
}

fn ids(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

/// The human-readable preview: a header, one row per VM on the host, a summary line.
fn render(p: &DrainPreview) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Re-layout of {} GPU {}: {} -> {} ({})",
        p.host_name, p.gpu, p.from, p.layout, p.to
    );
    let n = p.displaced.len();
    if n == 0 {
        let _ = writeln!(
            o,
            "The host drains for the change, but no VM runs on it: nothing is displaced."
        );
        return o;
    }
    let _ = writeln!(
        o,
        "Changing a GPU's layout drains the whole host: {n} VM{} on {} would be displaced.",
        if n == 1 { "" } else { "s" },
        p.host_name
    );
    let mut rows = vec![vec![
        "VM".to_string(),
        "tenant".into(),
        "GIs (gpu:profile)".into(),
        format!("on GPU {}", p.gpu),
        "back after".into(),
        "free place elsewhere".into(),
    ]];
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    for d in &p.displaced {
        let gis: Vec<String> = d.gis.iter().map(|(g, pr)| format!("{g}:{pr}")).collect();
        let place = match (&d.elsewhere, &d.elsewhere_host) {
            (Some(pl), Some(name)) => {
                let gpus: Vec<String> = pl.gis.iter().map(|s| s.gpu.to_string()).collect();
                format!("{name} GPU {}", gpus.join("+"))
            }
            _ => "none (interrupted)".into(),
        };
        rows.push(vec![
            d.vm.to_string(),
            d.tenant.clone().unwrap_or_else(|| "-".into()),
            gis.join(" "),
            yes(d.on_changed_gpu),
            yes(d.returns_after),
            place,
        ]);
    }
    for line in super::table_lines(&rows) {
        let _ = writeln!(o, "  {line}");
    }
    let interrupted = p.stranded();
    let placed = n - interrupted.len();
    let _ = write!(o, "{placed} of {n} have a free place elsewhere");
    if interrupted.is_empty() {
        let _ = writeln!(o, ".");
    } else {
        let _ = writeln!(o, "; interrupted: VM {}.", ids(&interrupted));
    }
    let lose = p.lose_instance();
    if lose.is_empty() {
        let _ = writeln!(
            o,
            "Every VM gets its instances back on the host after the re-layout."
        );
    } else {
        let _ = writeln!(
            o,
            "No instance of their profile in the new layout: VM {}.",
            ids(&lose)
        );
    }
    o
}
