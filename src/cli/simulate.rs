//! `migplan simulate SCENARIO`: one run of a policy over a scenario's fleet and workload
//! (§6.1-§6.3), with the metrics of the measurement window as text, JSON or one CSV row.

use crate::metrics::Summary;
use crate::policy;
use crate::scenario::{self, Scenario};
use crate::sim::Simulator;
use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Policy (ff, mfi, tc, ...); default: the scenario's `policy.arrival`. Runs the paper's
    /// regime unless --regime is given.
    #[arg(long)]
    pub policy: Option<String>,
    /// Seed of the workload (default: the scenario's `workload.seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Offered load rho (default: the scenario's `workload.load`).
    #[arg(long, allow_negative_numbers = true)]
    pub load: Option<f64>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub regime: super::regime::RegimeArgs,
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print a CSV header and one row.
    #[arg(long)]
    pub csv: bool,
}

/// The window and workload options `simulate` and `sweep` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunArgs {
    /// Hours measured after the warm-up (default: the scenario's `workload.measure_h`).
    #[arg(long, allow_negative_numbers = true)]
    pub hours: Option<f64>,
    /// Hours of warm-up (default: the scenario's `workload.warmup_h`).
    #[arg(long, allow_negative_numbers = true)]
    pub warmup: Option<f64>,
    /// Replay a pod-list CSV (Alibaba GPU 2023 format, §6.5) instead of the synthetic workload.
    #[arg(long)]
    pub trace: Option<PathBuf>,
}

/// Loads the scenario at `path` with the trace of `run` (if any) as its workload; a relative
/// trace path in the scenario is taken from the working directory, or else beside the scenario.
pub(crate) fn load_scenario(path: &Path, run: &RunArgs) -> anyhow::Result<Scenario> {
    let mut scenario = scenario::load(path)?;
    if let Some(t) = &run.trace {
        anyhow::ensure!(t.exists(), "{}: no such trace file", t.display());
        scenario.workload.trace = Some(t.display().to_string());
        scenario.workload.enabled = true;
    }
    resolve_trace(&mut scenario, path);
    Ok(scenario)
}

/// The result of one run: its settings and its metrics.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub load: f64,
    #[serde(flatten)]
    pub summary: Summary,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Stranded capacity across GPU modes at the end of the run (docs/simulation.md); only for a
    /// fleet with a whole or shared GPU, so MIG-only runs print what they always did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stranded_end: Option<crate::metrics::StrandedCapacity>,
}

/// The scalar columns of a CSV row, in order (shared with `sweep`).
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "scenario",
    "policy",
    "seed",
    "load",
    "measured_h",
    "acceptance_pct",
    "active_hosts",
    "active_hosts_pct",
    "active_gpus_pct",
    "packing_pct",
    "energy_mwh",
    "kwh_per_gpu_hour",
    "switch_ons_per_h",
    "migrations_per_h",
    "gb_per_h",
    "wait_s_mean",
    "requests",
    "admitted",
    "rejected",
    "refused",
    "migration_s_mean",
    "plans",
    "mean_power_kw",
    "calls_per_h",
    "call_s_median",
    "call_s_p95",
    "call_vms_mean",
    "wall_s",
];

impl Row {
    /// The row's values in [`CSV_COLUMNS`] order.
    pub fn csv(&self) -> String {
        let s = &self.summary;
        let name = if self.scenario.contains([',', '"']) {
            format!("\"{}\"", self.scenario.replace('"', "\"\""))
        } else {
            self.scenario.clone()
        };
        [
            name,
            self.policy.clone(),
            self.seed.to_string(),
            format!("{}", self.load),
            format!("{:.3}", s.measured_h),
            format!("{:.4}", s.acceptance_pct),
            format!("{:.4}", s.active_hosts),
            format!("{:.4}", s.active_hosts_pct),
            format!("{:.4}", s.active_gpus_pct),
            format!("{:.4}", s.packing_pct),
            format!("{:.5}", s.energy_mwh),
            format!("{:.5}", s.kwh_per_gpu_hour),
            format!("{:.4}", s.switch_ons_per_h),
            format!("{:.4}", s.migrations_per_h),
            format!("{:.3}", s.gb_per_h),
            format!("{:.3}", s.wait_s_mean),
            s.requests.to_string(),
            s.admitted.to_string(),
            s.rejected.to_string(),
            s.refused.to_string(),
            format!("{:.3}", s.migration_s_mean),
            s.plans.to_string(),
            format!("{:.4}", s.mean_power_kw),
            format!("{:.3}", s.calls_per_h),
            format!("{:.4}", s.call_s_median),
            format!("{:.4}", s.call_s_p95),
            format!("{:.2}", s.call_vms_mean),
            format!("{:.3}", self.wall_s),
        ]
        .join(",")
    }
}

/// A relative trace path is taken from the working directory, or else beside the scenario.
fn resolve_trace(scenario: &mut Scenario, scenario_path: &Path) {
    if let Some(t) = &scenario.workload.trace {
        let p = PathBuf::from(t);
        if p.is_relative() && !p.exists() {
            if let Some(dir) = scenario_path.parent() {
                let beside = dir.join(&p);
                if beside.exists() {
                    scenario.workload.trace = Some(beside.display().to_string());
                }
            }
        }
    }
}

/// Settings of one run on top of a scenario.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub policy: Option<String>,
    pub seed: Option<u64>,
    pub load: Option<f64>,
    pub hours: Option<f64>,
    pub warmup: Option<f64>,
}

/// Applies overrides to a scenario and returns the policy name.
pub fn apply(scenario: &mut Scenario, o: &Overrides) -> anyhow::Result<String> {
    if let Some(s) = o.seed {
        scenario.workload.seed = s;
    }
    use crate::limits::{show, MAX_LOAD, MAX_SIM_HOURS};
    if let Some(l) = o.load {
        anyhow::ensure!(l >= 0.0, "--load must be >= 0, not {}", show(l));
        anyhow::ensure!(
            l <= MAX_LOAD,
            "--load must be at most {MAX_LOAD} (docs/limits.md), not {}",
            show(l)
        );
        scenario.workload.load = l;
    }
    if let Some(h) = o.hours {
        anyhow::ensure!(h > 0.0, "--hours must be > 0, not {}", show(h));
        anyhow::ensure!(
            h <= MAX_SIM_HOURS,
            "--hours must be at most {MAX_SIM_HOURS} (ten years; docs/limits.md), not {}",
            show(h)
        );
        scenario.workload.measure_h = h;
    }
    if let Some(h) = o.warmup {
        anyhow::ensure!(h >= 0.0, "--warmup must be >= 0, not {}", show(h));
        anyhow::ensure!(
            h <= MAX_SIM_HOURS,
            "--warmup must be at most {MAX_SIM_HOURS} (ten years; docs/limits.md), not {}",
            show(h)
        );
        scenario.workload.warmup_h = h;
    }
    Ok(o.policy
        .clone()
        .unwrap_or_else(|| scenario.policy.arrival.name().to_string()))
}

/// Runs one simulation to the end of its window; `progress` gets the fraction done.
pub(crate) fn run_one(
    scenario: &Scenario,
    policy_name: &str,
    progress: &mut dyn FnMut(f64),
) -> anyhow::Result<Row> {
    let policy = policy::by_name(policy_name, &scenario.policy)?;
    let mut sim = Simulator::new(scenario, policy)?;
    let t = Instant::now();
    sim.run_with(progress);
    let summary = sim.metrics();
    // Every command that runs simulations (simulate, sweep, experiment) says so on stderr.
    if summary.calls_wall_limited > 0 {
        eprintln!(
            "warning: {} {} seed {}: {}",
            scenario.name,
            policy_name.to_ascii_lowercase(),
            scenario.workload.seed,
            wall_limited_warning(summary.calls_wall_limited)
        );
    }
    Ok(Row {
        scenario: scenario.name.clone(),
        policy: policy_name.to_ascii_lowercase(),
        seed: scenario.workload.seed,
        load: scenario.workload.load,
        summary,
        wall_s: t.elapsed().as_secs_f64(),
        stranded_end: sim
            .fleet()
            .hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .any(|g| g.mode != crate::fleet::GpuMode::Mig)
            .then(|| crate::metrics::stranded_capacity(sim.fleet())),
    })
}

/// A progress bar on stderr that appears only once a run has taken a second.
pub(crate) struct LateBar {
    bar: indicatif::ProgressBar,
    started: Instant,
    shown: bool,
}

impl LateBar {
    pub fn new(len: u64, msg: &str) -> Self {
        let bar =
            indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::hidden());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {percent:>3}% {elapsed}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(msg.to_string());
        LateBar {
            bar,
            started: Instant::now(),
            shown: false,
        }
    }

    pub fn set(&mut self, pos: u64) {
        if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
            self.shown = true;
            self.bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        self.bar.set_position(pos);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let mut scenario = load_scenario(&a.scenario, &a.run)?;
    let name = apply(
        &mut scenario,
        &Overrides {
            policy: a.policy.clone(),
            seed: a.seed,
            load: a.load,
            hours: a.run.hours,
            warmup: a.run.warmup,
        },
    )?;
    let (regime, menu_path) = super::regime::settings(&scenario, &a.scenario, &a.regime)?;
    // An arrival policy is the paper's regime's: `--policy` without `--regime` runs that regime.
    let paper = a.policy.is_some() && a.regime.regime.is_none();
    if regime.kind != crate::scenario::RegimeKind::Paper && !paper {
        anyhow::ensure!(
            !a.csv,
            "--csv: the regimes' metrics are printed as text or --json"
        );
        let menu = menu_path
            .as_deref()
            .map(crate::ops::menu_file::load)
            .transpose()
            .with_context(|| match &a.regime.menu {
                Some(_) => "--menu".to_string(),
                None => format!("{}: field `regime.menu`", a.scenario.display()),
            })?;
        let menu_name = menu_path
            .as_ref()
            .map_or_else(|| "assets/layouts.toml".to_string(), |p| p.display().to_string());
        let (r, skipped) = super::regime::run(&scenario, &regime, menu.as_ref())
            .with_context(|| format!("{}", a.scenario.display()))?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&super::regime::json(&r, &menu_name, skipped)?)?
            );
        } else {
            print!("{}", super::regime::human(&scenario, &r, &menu_name, skipped));
        }
        return Ok(());
    }
    let mut bar = LateBar::new(1000, &format!("{} {}", scenario.name, name));
    let row = run_one(&scenario, &name, &mut |f| bar.set((f * 1000.0) as u64))
        .with_context(|| format!("{}", a.scenario.display()))?;
    bar.finish();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&row)?);
    } else if a.csv {
        println!("{}", CSV_COLUMNS.join(","));
        println!("{}", row.csv());
    } else {
        print!("{}", human(&scenario, &row));
    }
    Ok(())
}

/// What a run with `n` calls ended by the wall-clock safety limit means for its figures.
pub(crate) fn wall_limited_warning(n: u64) -> String {
    format!(
        "{n} optimizer call(s) ended by the wall-clock safety limit (`sim_time_limit_s`), not by \
         the node budget: NOT reproducible, the figures depend on this machine's speed and load"
    )
}

fn human(scenario: &Scenario, row: &Row) -> String {
    use std::fmt::Write;
    let s = &row.summary;
    let w = &scenario.workload;
    let from = scenario.start + chrono::Duration::seconds((scenario.now_s + w.warmup_h * 3600.0) as i64);
    let to = from + chrono::Duration::seconds((s.measured_h * 3600.0) as i64);
    let mut o = String::new();
    let source = match &w.trace {
        Some(t) => format!("trace {t}"),
        None => "synthetic".into(),
    };
    let _ = writeln!(
        o,
        "{}: policy {}, seed {}, load {}, {} workload; {} h warm-up, measured {} .. {}",
        row.scenario,
        row.policy,
        row.seed,
        row.load,
        source,
        w.warmup_h,
        from.format("%Y-%m-%d %H:%M"),
        to.format("%Y-%m-%d %H:%M UTC")
    );
    let hosts = scenario.fleet.hosts.len();
    let _ = writeln!(
        o,
        "  acceptance      {:6.2} % of requested memory slices ({} of {} requests admitted, {} rejected)",
        s.acceptance_pct, s.admitted, s.requests, s.rejected
    );
    if s.refused > 0 {
        let _ = writeln!(
            o,
            "  refused         {:6} requests by quotas or the multi-GPU rule (in the rejected)",
            s.refused
        );
    }
    let _ = writeln!(
        o,
        "  active hosts    {:6.1} of {hosts} ({:.1} %)",
        s.active_hosts, s.active_hosts_pct
    );
    let _ = writeln!(
        o,
        "  active GPUs     {:6.1} % (the GIs packed full by slices would need {:.1} %)",
        s.active_gpus_pct, s.least_gpus_pct
    );
    let _ = writeln!(
        o,
        "  packing         {:6.1} % of the active GPUs' slices",
        s.packing_pct
    );
    let _ = writeln!(
        o,
        "  energy          {:6.3} MWh ({:.4} kWh per admitted GPU-hour, mean {:.1} kW)",
        s.energy_mwh, s.kwh_per_gpu_hour, s.mean_power_kw
    );
    let _ = writeln!(o, "  switch-ons      {:6.1} per hour", s.switch_ons_per_h);
    let _ = writeln!(
        o,
        "  migrations      {:6.1} per hour, {:.0} GB copied per hour",
        s.migrations_per_h, s.gb_per_h
    );
    if s.migrations_by_origin.len() > 1 {
        let by: Vec<String> = s
            .migrations_by_origin
            .iter()
            .map(|(origin, n)| format!("{n} by {origin}"))
            .collect();
        let _ = writeln!(o, "                  {} (measured window)", by.join(", "));
    }
    let _ = writeln!(o, "  wait in queue   {:6.1} s mean", s.wait_s_mean);
    if s.calls_per_h > 0.0 {
        let _ = writeln!(
            o,
            "  optimizer calls {:6.1} per hour, {:.3} s median, {:.3} s 95th percentile, {:.1} VMs each (mean)",
            s.calls_per_h, s.call_s_median, s.call_s_p95, s.call_vms_mean
        );
    }
    if s.calls > 0 || s.trigger_checks > 0 {
        let _ = writeln!(
            o,
            "  optimizer time  {} calls in {:.2} s, {} trigger checks without a solve in {:.3} s (whole run)",
            s.calls, s.call_s_total, s.trigger_checks, s.trigger_check_s_total
        );
    }
    for t in &s.calls_by_trigger {
        let _ = writeln!(
            o,
            "    {:<24} {} solved in {:.2} s ({} changed nothing, {:.2} s; {} migrations applied), {} empty, {} repeats skipped",
            format!("{} / {}", t.trigger, t.neighborhood),
            t.solved,
            t.solved_s,
            t.unchanged,
            t.unchanged_s,
            t.moves,
            t.empty,
            t.repeat
        );
    }
    if s.calls_node_limited > 0 {
        let _ = writeln!(
            o,
            "  node budget     {} calls ended by `node_limit` before the optimum was proven",
            s.calls_node_limited
        );
    }
    if s.calls_wall_limited > 0 {
        let _ = writeln!(
            o,
            "  wall clock      {}",
            wall_limited_warning(s.calls_wall_limited)
        );
    }
    if !s.stranded.is_empty() {
        let parts: Vec<String> = s
            .stranded
            .iter()
            .map(|x| format!("{} {:.0} %", x.profile, 100.0 * x.share))
            .collect();
        let _ = writeln!(o, "  stranded        {} (share of free slices)", parts.join(", "));
    }
    let _ = writeln!(o, "  ran in {:.2} s", row.wall_s);
    o
}
