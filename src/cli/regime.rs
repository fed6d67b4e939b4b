//! The Kubernetes regimes on the command line (docs/operations.md, "Regimes"): the regime flags
//! of `simulate`, its report, and `sweep --regimes ...`, the grid of regimes, device plugin
//! choices, planner periods, hysteresis and menus with its table (text, Markdown) and the
//! trade-off of drains against pending pod-hours as SVG.

use crate::ops::menu_file::MenuFile;
use crate::regime::{self, Report};
use crate::scenario::{PluginChoice, RegimeKind, RegimeSettings, Scenario};
use anyhow::{bail, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The regime flags of `simulate`; each overrides the scenario's `[regime]`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RegimeArgs {
    /// Regime: paper, static-layouts or dynamic (default: the scenario's `[regime] kind`).
    #[arg(long)]
    pub regime: Option<String>,
    /// Minutes between runs of the layout planner (static-layouts).
    #[arg(long, value_name = "MIN")]
    pub period: Option<f64>,
    /// Consecutive identical plans before a GPU changes layout.
    #[arg(long)]
    pub hysteresis: Option<u32>,
    /// The planner's menu: a mig-parted config file (default: assets/layouts.toml's menu).
    #[arg(long, value_name = "FILE")]
    pub menu: Option<PathBuf>,
    /// The device plugin's choice: first-index or packed.
    #[arg(long)]
    pub plugin: Option<String>,
    /// Minutes a pod waits before it gives up.
    #[arg(long, value_name = "MIN")]
    pub pending_timeout: Option<f64>,
    /// Dynamic MIG: hours between restart-based defragmentation passes (0: none).
    #[arg(long = "defrag-every", value_name = "H")]
    pub defrag_every: Option<f64>,
    /// Most pods one defragmentation pass restarts.
    #[arg(long = "defrag-max-restarts", value_name = "N")]
    pub defrag_max_restarts: Option<u32>,
}

pub(super) fn kind_of(s: &str, flag: &str) -> anyhow::Result<RegimeKind> {
    RegimeKind::parse(s)
        .with_context(|| format!("{flag}: unknown regime `{s}` (known: paper, static-layouts, dynamic)"))
}

pub(super) fn plugin_of(s: &str, flag: &str) -> anyhow::Result<PluginChoice> {
    PluginChoice::parse(s)
        .with_context(|| format!("{flag}: unknown device plugin choice `{s}` (known: first-index, packed)"))
}

/// The scenario's `[regime]` with the flags applied, checked; the menu file, if any, with its
/// path (a relative `[regime] menu` is taken beside the scenario).
pub fn settings(
    sc: &Scenario,
    path: &Path,
    a: &RegimeArgs,
) -> anyhow::Result<(RegimeSettings, Option<PathBuf>)> {
    let mut s = sc.regime.clone().unwrap_or_default();
    let mut menu = s.menu.as_ref().map(|m| {
        let p = PathBuf::from(m);
        if p.is_relative() && !p.exists() {
            path.parent().map(|d| d.join(&p)).unwrap_or(p)
        } else {
            p
        }
    });
    if let Some(r) = &a.regime {
        s.kind = kind_of(r, "--regime")?;
    }
    if let Some(p) = a.period {
        s.period_min = p;
    }
    if let Some(h) = a.hysteresis {
        s.hysteresis = Some(h);
    }
    if let Some(m) = &a.menu {
        menu = Some(m.clone());
    }
    if let Some(p) = &a.plugin {
        s.plugin_choice = plugin_of(p, "--plugin")?;
    }
    if let Some(t) = a.pending_timeout {
        s.pending_timeout_min = Some(t);
    }
    if let Some(h) = a.defrag_every {
        s.defrag_every_h = (h != 0.0).then_some(h);
    }
    if let Some(n) = a.defrag_max_restarts {
        s.defrag_max_restarts = Some(n);
    }
    if (a.defrag_every.is_some() || a.defrag_max_restarts.is_some()) && s.kind != RegimeKind::Dynamic {
        bail!(
            "--defrag-every, --defrag-max-restarts: restart-based defragmentation is dynamic MIG's (--regime dynamic), not {}'s",
            s.kind.name()
        );
    }
    check(&s)?;
    Ok((s, menu))
}

pub(super) fn check(s: &RegimeSettings) -> anyhow::Result<()> {
    if let Some((key, msg)) = s.out_of_range() {
        bail!("[regime] {key}: {msg}");
    }
    Ok(())
}

/// One run of a non-paper regime on a scenario.
pub fn run(sc: &Scenario, s: &RegimeSettings, menu: Option<&MenuFile>) -> anyhow::Result<(Report, u64)> {
    let (setup, skipped) = regime::setup::from_scenario(sc, s, menu)?;
    Ok((regime::Run::new(setup).finish(), skipped))
}

/// The report as text.
pub fn human(sc: &Scenario, r: &Report, menu: &str, skipped: u64) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: regime {}, device plugin {}, {} h measured",
        sc.name, r.regime, r.plugin_choice, r.hours
    );
    if r.regime == "static-layouts" {
        let _ = writeln!(
            o,
            "layout planner: every {} min, hysteresis {}, menu {menu}",
            r.period_min, r.hysteresis
        );
    }
    let _ = writeln!(
        o,
        "pods: {} arrived, {} started, {} gave up, {} waiting at the end{}",
        r.pods_arrived,
        r.pods_started,
        r.pods_timed_out,
        r.pods_waiting_at_end,
        if skipped > 0 {
            format!(" ({skipped} requests that are not MIG instances left out)")
        } else {
            String::new()
        }
    );
    let per: Vec<String> = r
        .pending_pod_hours
        .iter()
        .map(|(p, h)| format!("{p} {h:.1}"))
        .collect();
    let _ = writeln!(
        o,
        "pending pod-hours: {:.1} ({}); wait p50 {:.1} min, p95 {:.1} min",
        r.pending_pod_hours_total,
        if per.is_empty() {
            "none".into()
        } else {
            per.join(", ")
        },
        r.wait_p50_min,
        r.wait_p95_min
    );
    let _ = writeln!(
        o,
        "drains: {} ({:.2}/day), evicted pods: {} ({:.2}/day), GPU resets: {}",
        r.drains, r.drains_per_day, r.evicted_pods, r.evicted_per_day, r.gpu_resets
    );
    if let Some(h) = r.defrag_every_h {
        let _ = writeln!(
            o,
            "defragmentation by restart: every {h} h, {} passes, {} pods restarted ({:.2}/day, {:.2} pod-h down), {} GPUs emptied, {} waiting pods started on the room made",
            r.defrag_passes,
            r.restarts,
            r.restarts_per_day,
            r.restart_downtime_pod_hours,
            r.defrag_emptied_gpus,
            r.defrag_pending_started
        );
    }
    let _ = writeln!(
        o,
        "idle instance-hours: {:.1}; stranded compute-slice-hours: {:.1}",
        r.idle_instance_hours, r.stranded_compute_slice_hours
    );
    let _ = writeln!(
        o,
        "active: {:.2} hosts, {:.2} GPUs on average; energy {:.1} kWh",
        r.mean_active_hosts, r.mean_active_gpus, r.energy_kwh
    );
    o
}

/// The JSON of a report, with the menu and the count of requests left out.
pub fn json(r: &Report, menu: &str, skipped: u64) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    v["menu"] = serde_json::json!(menu);
    v["skipped_requests"] = serde_json::json!(skipped);
    Ok(v)
}
