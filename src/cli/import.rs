//! `migplan import mig-parted SCENARIO FILE [--labels labels.sh] [--json]`: reads a mig-parted
//! config (as `migplan export mig-parted` writes it, the ConfigMap of `migplan export k8s`, or in
//! mig-parted's own style with `devices: all`) against a scenario's hosts, checks every device's
//! instances against the placement rules, and shows per GPU the current configuration, the
//! imported one and the layout name it is known by. A config applies to the host it is named
//! after, or to the nodes labelled with it (`--labels`, or the scenario's own labels); FILE may
//! be the folder `export k8s` wrote, whose `labels.sh` is then read too. `mig-enabled` is read as
//! mig-parted applies it (`ops::export`). A GPU whose configuration would change drains its whole
//! host, so for each such host it also lists the VMs displaced and those that get no instance
//! back (`ops::relayout`). Nothing is applied; FILE `-` reads standard input.

use crate::fleet::{Fleet, GpuMode};
use crate::ops::export::{self, DeviceLayout, HostLayouts};
use crate::ops::layouts::{self, Layout, Origin};
use crate::ops::relayout;
use anyhow::Context;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Format {
    /// A mig-parted config (`version: v1`, `mig-configs`) whose config names are host names.
    MigParted(MigPartedArgs),
    /// nvidia-smi captures (one per host): a new scenario with every instance where it sits.
    NvidiaSmi(super::import_nvidia_smi::NvidiaSmiArgs),
    /// Kubernetes nodes and pods (kubectl JSON): a new scenario with pods as VMs.
    K8s(super::import_k8s::K8sArgs),
}

#[derive(clap::Args, Debug)]
pub struct MigPartedArgs {
    /// Scenario file (TOML) whose hosts the configs name.
    pub scenario: PathBuf,
    /// The mig-parted config (YAML, or the GPU operator's ConfigMap holding one), or the folder
    /// `migplan export k8s` wrote (its `mig-parted-config.yaml` and `labels.sh`); `-` reads
    /// standard input.
    pub file: PathBuf,
    /// The node labels (`kubectl label node NODE nvidia.com/mig.config=CONFIG` lines, as
    /// `labels.sh` of `migplan export k8s`): which hosts take which config.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(format: Format) -> anyhow::Result<()> {
    match format {
        Format::MigParted(m) => mig_parted(m),
        Format::NvidiaSmi(n) => super::import_nvidia_smi::run(n),
        Format::K8s(k) => super::import_k8s::run(k),
    }
}

/// One GPU of an imported config compared with the fleet.
struct GpuRow {
    gpu: usize,
    model: String,
    mode: GpuMode,
    current: Vec<u32>,
    imported: Option<DeviceLayout>,
    /// The menu's name for the imported instances (`all-disabled` for MIG off).
    name: Option<String>,
    changes: bool,
}

/// One host of the config: its GPUs and, when a layout changes, the drain.
struct HostRow {
    name: String,
    gpus: Vec<GpuRow>,
    /// VMs on the host (all displaced when any GPU changes), by id.
    displaced: Vec<u64>,
    /// VMs that get no instance of their profile back after the change.
    lose_instance: Vec<u64>,
}

fn mig_parted(a: MigPartedArgs) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.scenario)?;
    let (config_path, labels_path) = if a.file.is_dir() {
        let labels = a.labels.clone().unwrap_or_else(|| a.file.join("labels.sh"));
        (a.file.join("mig-parted-config.yaml"), Some(labels))
    } else {
        (a.file.clone(), a.labels.clone())
    };
    let (text, file) = if config_path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("<stdin>: cannot read the config")?;
        let t = crate::fsutil::text_of(bytes, "<stdin>")?;
        (t, "<stdin>".to_string())
    } else {
        let t = crate::fsutil::read_text(&config_path)?;
        (t, config_path.display().to_string())
    };
    let labels = match &labels_path {
        Some(p) => {
            let lfile = p.display().to_string();
            let t = crate::fsutil::read_text(p)?;
            Some((export::parse_labels(&t, &lfile)?, lfile))
        }
        None => None,
    };
    let imported = export::import_with_labels(
        &s.fleet,
        &text,
        &file,
        labels.as_ref().map(|(l, f)| (l, f.as_str())),
    )?;
    let rows = imported
        .iter()
        .map(|h| compare(&s.fleet, h))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&s.fleet, &s.name, &file, &rows))?
        );
    } else {
        print!("{}", render(&s.fleet, &file, &rows));
    }
    Ok(())
}

fn compare(fleet: &Fleet, h: &HostLayouts) -> anyhow::Result<HostRow> {
    let host = &fleet.hosts[h.host];
    let menu = layouts::embedded();
    let current = export::current(fleet, h.host);
    let mut gpus = Vec::new();
    let mut lose: Vec<u64> = Vec::new();
    for (k, dev) in h.devices.iter().enumerate() {
        let mid = host.gpus[k].model;
        let model = fleet.catalog.model(mid);
        let now = current.devices[k]
            .as_ref()
            .map(|d| d.counts.clone())
            .unwrap_or_else(|| vec![0; model.profiles.len()]);
        let gpu = &host.gpus[k];
        let in_mig = gpu.mode == GpuMode::Mig;
        // As mig-parted applies it: MIG off changes a GPU in MIG mode only (a whole or shared
        // GPU stays as it is); MIG on changes a whole or shared GPU, or other instances.
        let (name, changes) = match dev {
            None => (None, false),
            Some(d) if !d.mig_enabled => (Some("all-disabled".to_string()), in_mig),
            Some(d) => (
                menu.name_of(mid, &d.counts).map(String::from),
                !in_mig || d.counts != now,
            ),
        };
        if let (Some(_), true, false) = (dev, changes, in_mig) {
            // A whole or shared GPU switched to MIG: its holder and shares lose their GPU.
            lose.extend(gpu.holder);
            lose.extend(gpu.shares.iter().map(|sh| sh.vm));
        }
        if let (Some(d), true, true) = (dev, changes, in_mig) {
            // The importer has checked that the instances can be placed on one GPU.
            let label = name.clone().unwrap_or_else(|| "imported".into());
            let layout = Layout::new(
                label,
                mid,
                model,
                Origin::Imported,
                d.mig_enabled,
                d.counts.clone(),
            )
            .with_context(|| {
                format!(
                    "host `{}` GPU {k}: the imported instances cannot be placed",
                    host.name
                )
            })?;
            let p = relayout::drain_preview(fleet, h.host, k, &layout)?;
            lose.extend(p.lose_instance());
        }
        gpus.push(GpuRow {
            gpu: k,
            model: model.name.clone(),
            mode: gpu.mode,
            current: now,
            imported: dev.clone(),
            name,
            changes,
        });
    }
    lose.sort_unstable();
    lose.dedup();
    let displaced = if gpus.iter().any(|g| g.changes) {
        host.vms
            .iter()
            .copied()
            .filter(|&id| fleet.vm(id).is_some_and(|v| v.placement.is_some()))
            .collect()
    } else {
        Vec::new()
    };
    Ok(HostRow {
        name: host.name.clone(),
        gpus,
        displaced,
        lose_instance: lose,
    })
}

fn counts_map(fleet: &Fleet, model: &str, counts: &[u32]) -> BTreeMap<String, u32> {
    let Some(mid) = fleet.catalog.model_id(model) else {
        return BTreeMap::new();
    };
    let m = fleet.catalog.model(mid);
    counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(p, &n)| (m.profiles[p].name.clone(), n))
        .collect()
}

fn to_json(fleet: &Fleet, scenario: &str, file: &str, rows: &[HostRow]) -> serde_json::Value {
    let hosts: Vec<serde_json::Value> = rows
        .iter()
        .map(|h| {
            let gpus: Vec<serde_json::Value> = h
                .gpus
                .iter()
                .map(|g| {
                    json!({
                        "gpu": g.gpu,
                        "model": g.model,
                        "mode": g.mode.name(),
                        "current": counts_map(fleet, &g.model, &g.current),
                        "configured": g.imported.is_some(),
                        "mig_enabled": g.imported.as_ref().map(|d| d.mig_enabled),
                        "imported": g.imported.as_ref().map(|d| counts_map(fleet, &g.model, &d.counts)),
                        "layout": g.name,
                        "changes": g.changes,
                    })
                })
                .collect();
            json!({
                "host": h.name,
                "gpus": gpus,
                "drains": !h.displaced.is_empty(),
                "displaced": h.displaced,
                "lose_instance": h.lose_instance,
            })
        })
        .collect();
    json!({
        "scenario": scenario,
        "file": file,
        "hosts": hosts,
        "gpus_changed": rows.iter().flat_map(|h| &h.gpus).filter(|g| g.changes).count(),
        "hosts_drained": rows.iter().filter(|h| !h.displaced.is_empty()).count(),
    })
}

fn ids(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

fn render(fleet: &Fleet, file: &str, rows: &[HostRow]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "mig-parted config {file}: {} host config(s), checked against the placement rules",
        rows.len()
    );
    let mut table = vec![vec![
        "host".to_string(),
        "GPU".into(),
        "now".into(),
        "imported".into(),
        "layout".into(),
        "change".into(),
    ]];
    for h in rows {
        for g in &h.gpus {
            let Some(mid) = fleet.catalog.model_id(&g.model) else {
                continue;
            };
            let model = fleet.catalog.model(mid);
            let imported = match &g.imported {
                None => "(not configured)".to_string(),
                Some(d) if !d.mig_enabled => "MIG disabled".into(),
                Some(d) => layouts::describe_counts(model, &d.counts),
            };
            let now = if !model.mig {
                "no MIG".to_string()
            } else if g.mode != GpuMode::Mig {
                format!("MIG disabled ({})", g.mode.name())
            } else {
                layouts::describe_counts(model, &g.current)
            };
            table.push(vec![
                h.name.clone(),
                g.gpu.to_string(),
                now,
                imported,
                g.name.clone().unwrap_or_else(|| "-".into()),
                if g.changes { "yes" } else { "no" }.into(),
            ]);
        }
    }
    for line in super::table_lines(&table) {
        let _ = writeln!(o, "  {line}");
    }
    let changed = rows.iter().flat_map(|h| &h.gpus).filter(|g| g.changes).count();
    if changed == 0 {
        let _ = writeln!(o, "No GPU changes layout: applying this config drains nothing.");
        return o;
    }
    let _ = writeln!(
        o,
        "{changed} GPU(s) change layout; a change drains the whole host (see `migplan relayout`):"
    );
    for h in rows.iter().filter(|h| !h.displaced.is_empty()) {
        let _ = write!(
            o,
            "  {}: {} VM(s) displaced (VM {})",
            h.name,
            h.displaced.len(),
            ids(&h.displaced)
        );
        if h.lose_instance.is_empty() {
            let _ = writeln!(o, "; all get their instances back");
        } else {
            let _ = writeln!(o, "; no instance back for VM {}", ids(&h.lose_instance));
        }
    }
    for h in rows
        .iter()
        .filter(|h| h.gpus.iter().any(|g| g.changes) && h.displaced.is_empty())
    {
        let _ = writeln!(o, "  {}: no VMs, nothing displaced", h.name);
    }
    o
}
