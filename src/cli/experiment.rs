//! `migplan experiment`: the OrigaMIG experiments of the paper, written to docs/results/ with `--markdown`.
//!
//! - `gap-to-opt` (§6.8, Table 12): OrigaMIG runs from an empty fleet of 8, 16 and 32 hosts with
//!   two A100-40GB each and the §6.8 workload (ρ = 0.74, that is 2.1 arrivals per hour per 8
//!   hosts; 70 % jobs of 2 h, 30 % tenants of 24 h; one or two A100 GIs per VM). Every 4 h from
//!   48 h to 96 h the BILP is solved over the whole fleet from the current state (OPT: every
//!   running VM kept, pending VMs may be admitted), and OrigaMIG's active hosts and Eq. (5) are
//!   compared with OPT's; OPT's status and final MIP gap are reported with each snapshot.
//! - `table8` (§6.4, Table 8): FF, MFI, TC and OrigaMIG on a scenario at loads 0.75 and 1.0 over
//!   some seeds, each metric printed beside the paper's 128-host value.
//!
//! - `paired`: OrigaMIG against TC paired by seed, with FF and MFI for energy (the goal of the
//!   default OrigaMIG, docs/results/origamig-default.md).
//! - `table9` (§6.5, Table 9): FF, TC and OrigaMIG under the variants where the paper lost to TC.
//! - `fig7` (§6.5, Fig. 7): FF, TC and OrigaMIG, one instance and partitioned, on fleets of
//!   128 to 4096 hosts.
//! - `big-nodes`: OrigaMIG on fleets of eight-GPU nodes against FF, TC and packing, with a
//!   held-out part.
//! - `big-nodes-frontier`: on the same grid, whole GPUs free against moves per hour, OrigaMIG
//!   at several rates of its GPU compaction and TC at several compaction periods.
//!
//! They take minutes to hours: run them on an idle machine, one at a time, in a release build.

use crate::cli::simulate;
use crate::fleet::Fleet;
use crate::metrics::Summary;
use crate::policy::origamig::bilp::{self, SolveControl, SolveStatus};
use crate::policy::origamig::objective::{evaluate, Weights};
use crate::policy::{self, origamig::Origamig};
use crate::policy_settings::OrigamigSettings;
use crate::scenario::{self, Scenario};
use crate::sim::Simulator;
use std::path::PathBuf;

mod speed;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub which: Which,
}

#[derive(clap::Subcommand, Debug)]
pub enum Which {
    /// Additional active hosts of OrigaMIG relative to OPT on small fleets (§6.8, Table 12).
    GapToOpt(GapArgs),
    /// Table 8 (§6.4): FF, MFI, TC and OrigaMIG on a scenario at two loads, beside the paper.
    Table8(Table8Args),
    /// Fig. 6 / Table 10 (§6.6): migrations against active hosts, OrigaMIG at several migration
    /// penalties δ and TC at several compaction periods, beside the paper.
    Fig6(Fig6Args),
    /// CPU time of OrigaMIG beside TC on one scenario and seed, and the planner's play time per
    /// simulated day under OrigaMIG.
    Speed(speed::SpeedArgs),
    /// Simulation cost against fleet size: one policy's wall time on the §6.1 mix at several
    /// host counts.
    Scale(scale::ScaleArgs),
    /// Fig. 7 (§6.5): FF, TC and OrigaMIG, one instance and partitioned, as the fleet grows.
    Fig7(fig7::Fig7Args),
    /// OrigaMIG against TC paired by seed (active hosts, migrations, acceptance) and energy per
    /// admitted GPU-hour against TC, FF and MFI, with 95 % intervals over the seeds.
    Paired(paired::PairedArgs),
    /// Table 9 (§6.5): FF, TC and OrigaMIG under the variants where the paper's OrigaMIG lost to
    /// TC (larger profiles, two GIs per VM, A30 hosts only), beside the paper.
    Table9(table9::Table9Args),
    /// OrigaMIG on fleets of eight-GPU nodes against FF, TC and packing, paired by seed, with a
    /// held-out part (docs/results/big-nodes.md).
    BigNodes(big_nodes::BigNodesArgs),
    /// Whole GPUs free against moves per hour on the big-nodes grid: OrigaMIG at several rates
    /// of its GPU compaction, TC at several compaction periods, compared at equal moves
    /// (docs/results/big-nodes-frontier.md).
    BigNodesFrontier(frontier::FrontierArgs),
}

/// The options `table8` and `fig6` share: which scenario, how many seeds, how long, how printed.
#[derive(clap::Args, Debug)]
pub struct RunsArgs {
    /// Scenario (fleet and workload; the load and seed are set per run).
    #[arg(long, default_value = "scenarios/paper-32.toml")]
    pub scenario: PathBuf,
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub seeds: Vec<u64>,
    /// Hours of warm-up (default: the scenario's).
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Hours measured (default: the scenario's).
    #[arg(long)]
    pub hours: Option<f64>,
    #[arg(long)]
    pub json: bool,
    /// Also write the table as Markdown to this file (with the paper's values, the command
    /// line, the commit and the date), atomically.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

impl RunsArgs {
    /// The scenario, once the seeds are known to be there.
    fn base(&self) -> anyhow::Result<Scenario> {
        anyhow::ensure!(!self.seeds.is_empty(), "give at least one seed");
        if let Some(path) = &self.markdown {
            markdown::check_target(path)?;
        }
        scenario::load(&self.scenario)
    }
}

#[derive(clap::Args, Debug)]
pub struct Fig6Args {
    #[command(flatten)]
    pub runs: RunsArgs,
    #[arg(long, default_value_t = 0.85)]
    pub load: f64,
    /// Migration penalties δ of OrigaMIG (the paper: 0, 5, 10, 20, 40).
    #[arg(long, value_delimiter = ',', default_value = "0,5,10,20,40")]
    pub deltas: Vec<f64>,
    /// Compaction periods of TC, minutes (the paper: 15 and 60).
    #[arg(long, value_delimiter = ',', default_value = "15,60")]
    pub tc_periods: Vec<f64>,
}

#[derive(clap::Args, Debug)]
pub struct GapArgs {
    /// Fleet sizes (hosts with two A100-40GB each, 80 cores, 512 GB).
    #[arg(long, value_delimiter = ',', default_value = "8,16,32")]
    pub sizes: Vec<usize>,
    /// Seeds per size (the worst seed is reported, as in §6.8).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub seeds: Vec<u64>,
    /// First snapshot, hours after the empty start.
    #[arg(long, default_value_t = 48.0)]
    pub from_h: f64,
    /// Last snapshot, hours.
    #[arg(long, default_value_t = 96.0)]
    pub to_h: f64,
    /// Hours between snapshots.
    #[arg(long, default_value_t = 4.0)]
    pub every_h: f64,
    /// Offered load (§6.8: 0.74).
    #[arg(long, default_value_t = 0.74)]
    pub load: f64,
    /// Time limit of each OPT solve, seconds (the paper let CP-SAT prove every one, up to
    /// 115 min; the final MIP gap is reported).
    #[arg(long, default_value_t = 60.0)]
    pub opt_time_limit: f64,
    /// A `[policy]` setting of OrigaMIG (and OPT) for the §6.8 fleet, as KEY=VALUE in TOML
    /// (`--policy-set merge_hosts=4 --policy-set delta=12`); checked as in a scenario file.
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the table as Markdown to this file (with the paper's values, the command
    /// line, the commit and the date), atomically.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct Table8Args {
    #[command(flatten)]
    pub runs: RunsArgs,
    #[arg(long, value_delimiter = ',', default_value = "0.75,1.0")]
    pub loads: Vec<f64>,
    #[arg(long, value_delimiter = ',', default_value = "ff,mfi,tc,origamig")]
    pub policies: Vec<String>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    match a.which {
        Which::GapToOpt(g) => gap_to_opt(&g),
        Which::Table8(t) => table8(&t),
        Which::Fig6(f) => fig6(&f),
        Which::Speed(s) => speed::speed(&s),
        Which::Scale(s) => scale::scale(&s),
        Which::Fig7(f) => fig7::fig7(&f),
        Which::Paired(p) => paired::paired(&p),
        Which::Table9(t) => table9::table9(&t),
        Which::BigNodes(b) => big_nodes::big_nodes(&b),
        Which::BigNodesFrontier(f) => frontier::frontier(&f),
    }
}

/// The §6.8 fleet and workload: `hosts` hosts with two A100-40GB, 80 cores, 512 GB, A100
/// requests only (the synthetic generator draws the GPU model among the fleet's models).
fn gap_scenario(
    hosts: usize,
    load: f64,
    seed: u64,
    to_h: f64,
    policy: &[String],
) -> anyhow::Result<Scenario> {
    let mut src = format!(
        r#"name = "gap-{hosts}"
start = "2026-01-05T00:00:00Z"

[[host_group]]
prefix = "a100-"
count = {hosts}
cores = 80
ram_gb = 512
gpus = ["a100-40gb", "a100-40gb"]

[workload]
load = {load}
seed = {seed}
warmup_h = 0
measure_h = {to_h}
"#
    );
    if !policy.is_empty() {
        src.push_str("\n[policy]\n");
        src.push_str(&policy_lines(policy)?);
    }
    scenario::parse(&src, &format!("<gap-to-opt {hosts} hosts>"))
}

/// The `--policy-set` settings for a table's heading: `lead` then the settings, or nothing.
fn policy_set_text(policy: &[String], lead: &str) -> String {
    if policy.is_empty() {
        String::new()
    } else {
        format!("{lead}{}", policy.join(", "))
    }
}

/// `--policy-set KEY=VALUE` arguments as the lines of a `[policy]` table followed by its
/// sub-tables: each key where it lives now (a key of `[policy]`, a flat key of earlier versions,
/// or `SUBTABLE.KEY` such as `origamig.delta`).
fn policy_lines(policy: &[String]) -> anyhow::Result<String> {
    let mut sections: std::collections::BTreeMap<&str, String> = Default::default();
    for kv in policy {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--policy-set: `{kv}` is not KEY=VALUE"))?;
        let k = k.trim();
        anyhow::ensure!(
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
            "--policy-set: `{k}` is not a setting name"
        );
        anyhow::ensure!(
            !v.contains('\n'),
            "--policy-set: the value of `{k}` must be on one line"
        );
        let (section, key) = scenario::policy_key_path(k)
            .ok_or_else(|| anyhow::anyhow!("--policy-set: unknown setting `{k}`"))?;
        let lines = sections.entry(section).or_default();
        lines.push_str(&format!("{key} = {}\n", v.trim()));
    }
    let mut src = sections.remove("").unwrap_or_default();
    for (section, lines) in sections {
        src.push_str(&format!("\n[policy.{section}]\n{lines}"));
    }
    Ok(src)
}

/// Sets `--policy-set KEY=VALUE` settings on a scenario's `[policy]` (each key once), checked as
/// in a scenario file: the scenario's settings are written out with them and read back.
pub(crate) fn set_policy(s: &mut Scenario, policy: &[String]) -> anyhow::Result<()> {
    if policy.is_empty() {
        return Ok(());
    }
    let mut given: toml::Table = toml::from_str(&format!("[policy]\n{}", policy_lines(policy)?))
        .map_err(|e| anyhow::anyhow!("--policy-set: {}", e.message()))?;
    let given = match given.remove("policy") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    let mut table = toml::Table::try_from(&s.policy)?;
    // Saves leave out some defaults; written out, a preset cannot overwrite them on the way back.
    let preset_keys = s.policy.origamig.preset_key_values();
    given_into(
        &mut table,
        "origamig",
        preset_keys.into_iter().map(|(k, v)| (k.to_string(), v)),
    );
    for (k, v) in given {
        match v {
            toml::Value::Table(sub) => given_into(&mut table, &k, sub),
            v => {
                table.insert(k, v);
            }
        }
    }
    let mut file: toml::Table = toml::from_str(&s.to_toml()?)?;
    file.insert("policy".into(), toml::Value::Table(table));
    s.policy = scenario::parse(&toml::to_string(&file)?, "<--policy-set>")?.policy;
    Ok(())
}

/// Sets `entries` in the sub-table `name` of `table`, which it makes when missing.
fn given_into(table: &mut toml::Table, name: &str, entries: impl IntoIterator<Item = (String, toml::Value)>) {
    let sub = table
        .entry(name)
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(sub) = sub {
        sub.extend(entries);
    }
}

/// One snapshot compared with OPT.
#[derive(Debug, Clone, serde::Serialize)]
struct Snapshot {
    hosts: usize,
    seed: u64,
    t_h: f64,
    vms: usize,
    origamig_active: usize,
    opt_active: usize,
    origamig_eq5: f64,
    opt_eq5: f64,
    opt_status: SolveStatus,
    /// OPT's final relative MIP gap.
    opt_gap: f64,
    opt_s: f64,
}

/// Per size: the worst seed's figures.
#[derive(Debug, Clone, serde::Serialize)]
struct GapRow {
    hosts: usize,
    seeds: usize,
    snapshots: usize,
    mean_vms: f64,
    /// (sum of OrigaMIG's active hosts - sum of OPT's) / sum of OPT's over the snapshots, in
    /// percent (worst seed).
    extra_active_pct: f64,
    /// (sum of OPT's Eq. (5) - sum of OrigaMIG's) / sum of OPT's over the snapshots, percent: the
    /// paper's (OPT - OrigaMIG) / OPT of Table 12, aggregated as `extra_active_pct` is.
    eq5_gap_pct: f64,
    /// Largest (OPT - OrigaMIG) / OPT in Eq. (5) at one snapshot, percent.
    eq5_gap_max_pct: f64,
    origamig_call_median_s: f64,
    origamig_call_p95_s: f64,
    opt_median_s: f64,
    opt_proven: usize,
    opt_max_mip_gap: f64,
}

/// The Eq. (5) gap (OPT - OrigaMIG) / OPT of Table 12 over a run's snapshots: aggregated (sums
/// over the snapshots, as the additional active hosts are) and at the worst snapshot.
fn eq5_gaps(snaps: &[Snapshot]) -> (f64, f64) {
    let rel = |opt: f64, o: f64| {
        if opt.abs() > 0.0 {
            (opt - o) / opt.abs()
        } else {
            0.0
        }
    };
    let sum_o: f64 = snaps.iter().map(|s| s.origamig_eq5).sum();
    let sum_p: f64 = snaps.iter().map(|s| s.opt_eq5).sum();
    let worst = snaps
        .iter()
        .map(|s| rel(s.opt_eq5, s.origamig_eq5))
        .fold(0.0f64, f64::max);
    (rel(sum_p, sum_o), worst)
}

fn quantile(xs: &mut [f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let pos = q * (xs.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    xs[lo] + (xs[hi] - xs[lo]) * (pos - lo as f64)
}

/// OPT from the fleet's current state: the BILP over every host and every pending VM. Returns
/// OPT's fleet and its solve outcome.
fn opt_of(fleet: &Fleet, settings: &OrigamigSettings) -> anyhow::Result<(Fleet, bilp::SolveOutcome)> {
    let hosts: Vec<usize> = (0..fleet.hosts.len()).collect();
    // OPT with `--opt-time-limit` of wall clock (§6.8 compares it with OrigaMIG as a timed solve).
    let control = SolveControl {
        limit: bilp::CallLimit::Clock,
        ..SolveControl::default()
    };
    let out = bilp::solve_with(fleet, &hosts, fleet.pending(), settings, &control)?;
    let after = fleet
        .with_placements(&out.targets)
        .map_err(|(id, e)| anyhow::anyhow!("OPT placement of VM {id}: {e}"))?;
    Ok((after, out))
}

/// Writes the `--markdown` file when asked, then prints `rows` as JSON when `--json` is given;
/// returns whether it printed JSON (the text table is then left out).
fn written_or_json<T: serde::Serialize>(
    runs: &RunsArgs,
    rows: &T,
    markdown: impl FnOnce() -> String,
) -> anyhow::Result<bool> {
    if let Some(path) = &runs.markdown {
        markdown::write(path, &markdown())?;
    }
    if runs.json {
        println!("{}", serde_json::to_string_pretty(rows)?);
    }
    Ok(runs.json)
}

fn gap_to_opt(a: &GapArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.every_h > 0.0 && a.from_h >= 0.0 && a.to_h >= a.from_h,
        "--every-h must be positive and --to-h at least --from-h >= 0"
    );
    anyhow::ensure!(
        !a.sizes.is_empty() && !a.seeds.is_empty(),
        "give at least one size and seed"
    );
    if let Some(path) = &a.markdown {
        markdown::check_target(path)?;
    }
    let mut rows = Vec::new();
    let mut snaps_all = Vec::new();
    for &n in &a.sizes {
        anyhow::ensure!(n > 0, "--sizes: a fleet needs at least one host");
        let mut worst: Option<GapRow> = None;
        for &seed in &a.seeds {
            let (row, snaps) = gap_run(a, n, seed)?;
            if worst
                .as_ref()
                .is_none_or(|w| row.extra_active_pct > w.extra_active_pct)
            {
                worst = Some(row);
            }
            snaps_all.extend(snaps);
        }
        rows.extend(worst);
    }
    if let Some(path) = &a.markdown {
        markdown::write(
            path,
            &markdown::gap_to_opt(a, &rows, &markdown::Provenance::now()),
        )?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "sizes": rows, "snapshots": snaps_all }))?
        );
        return Ok(());
    }
    print_gap_rows(&rows);
    Ok(())
}

/// One seed of the gap-to-OPT experiment on `n` hosts: OrigaMIG simulated, OPT solved at each
/// snapshot, and the seed's row.
fn gap_run(a: &GapArgs, n: usize, seed: u64) -> anyhow::Result<(GapRow, Vec<Snapshot>)> {
    let sc = gap_scenario(n, a.load, seed, a.to_h, &a.policy_set)?;
    let o = &sc.policy.origamig;
    let origamig = Origamig::new(o).with_migration_gbps(sc.policy.migration_gbps);
    let mut sim = Simulator::new(&sc, Box::new(origamig))?;
    let t0 = sim.time();
    let opt_settings = OrigamigSettings {
        time_limit_s: a.opt_time_limit,
        ..o.clone()
    };
    let w = Weights::from_settings(o);
    let mut snaps = Vec::new();
    let mut k = 0;
    loop {
        let t = a.from_h + k as f64 * a.every_h;
        if t > a.to_h + 1e-9 {
            break;
        }
        k += 1;
        sim.step_until(t0 + t * 3600.0)?;
        let fleet = sim.fleet();
        let hosts: Vec<usize> = (0..fleet.hosts.len()).collect();
        let (after, out) = opt_of(fleet, &opt_settings)?;
        // §6.8: both placements are compared in Eq. (5) from the same state.
        let s = Snapshot {
            hosts: n,
            seed,
            t_h: t,
            vms: fleet.vms().filter(|v| v.placement.is_some()).count(),
            origamig_active: fleet.active_hosts(),
            opt_active: after.active_hosts(),
            origamig_eq5: evaluate(fleet, fleet, &hosts, &w).total,
            opt_eq5: out.objective,
            opt_status: out.status,
            opt_gap: out.gap,
            opt_s: out.solve_s,
        };
        if !a.json {
            eprintln!(
                "{n} hosts seed {seed} t {t:.0} h: {} VMs; active hosts OrigaMIG {} OPT {} (OPT {}, gap {:.2} %, {:.1} s); Eq. 5 {:.0} vs {:.0}",
                s.vms,
                s.origamig_active,
                s.opt_active,
                s.opt_status,
                100.0 * s.opt_gap,
                s.opt_s,
                s.origamig_eq5,
                s.opt_eq5
            );
        }
        snaps.push(s);
    }
    let sum_o: usize = snaps.iter().map(|s| s.origamig_active).sum();
    let sum_p: usize = snaps.iter().map(|s| s.opt_active).sum();
    let (eq5_gap, eq5_gap_max) = eq5_gaps(&snaps);
    let calls = sim.policy().call_log().times_s;
    let mut opts: Vec<f64> = snaps.iter().map(|s| s.opt_s).collect();
    let row = GapRow {
        hosts: n,
        seeds: a.seeds.len(),
        snapshots: snaps.len(),
        mean_vms: snaps.iter().map(|s| s.vms as f64).sum::<f64>() / snaps.len().max(1) as f64,
        extra_active_pct: if sum_p > 0 {
            100.0 * (sum_o as f64 - sum_p as f64) / sum_p as f64
        } else {
            0.0
        },
        eq5_gap_pct: 100.0 * eq5_gap,
        eq5_gap_max_pct: 100.0 * eq5_gap_max,
        origamig_call_median_s: quantile(&mut calls.clone(), 0.5),
        origamig_call_p95_s: quantile(&mut calls.clone(), 0.95),
        opt_median_s: quantile(&mut opts, 0.5),
        opt_proven: snaps
            .iter()
            .filter(|s| s.opt_status == SolveStatus::Optimal)
            .count(),
        opt_max_mip_gap: snaps.iter().map(|s| s.opt_gap).fold(0.0, f64::max),
    };
    Ok((row, snaps))
}

/// The gap-to-OPT rows as a text table beside the paper's Table 12.
fn print_gap_rows(rows: &[GapRow]) {
    println!(
        "Gap to OPT (§6.8), worst seed. Paper (Table 12, additional active PMs / Eq. 5 gap / median call / median OPT): \
         8 PMs 3.9 % / 0.54 % / 0.3 s / 0.3 s, 16 PMs 4.1 % / 0.43 % / 0.9 s / 1.7 s, 32 PMs 3.4 % / 0.33 % / 1.1 s / 1692 s"
    );
    println!(
        "{:>5} {:>6} {:>6} {:>13} {:>10} {:>14} {:>18} {:>10} {:>10} {:>12}",
        "hosts",
        "snaps",
        "VMs",
        "extra act. %",
        "Eq.5 gap %",
        "worst snap. %",
        "call med/p95 s",
        "OPT med s",
        "OPT proven",
        "OPT max gap"
    );
    for r in rows {
        println!(
            "{:>5} {:>6} {:>6.1} {:>13.1} {:>10.2} {:>14.2} {:>8.2} / {:<7.2} {:>10.1} {:>7}/{:<2} {:>11.2}%",
            r.hosts,
            r.snapshots,
            r.mean_vms,
            r.extra_active_pct,
            r.eq5_gap_pct,
            r.eq5_gap_max_pct,
            r.origamig_call_median_s,
            r.origamig_call_p95_s,
            r.opt_median_s,
            r.opt_proven,
            r.snapshots,
            100.0 * r.opt_max_mip_gap
        );
    }
}

/// One row of the paper's Table 8 (128 PMs, five seeds).
struct PaperRow {
    load: f64,
    policy: &'static str,
    accept_pct: f64,
    active_pms: f64,
    active_gpus_pct: f64,
    packing_pct: f64,
    energy_mwh: f64,
    switch_per_h: f64,
    migr_per_h: f64,
    wait_s: f64,
}

const fn paper(load: f64, policy: &'static str, v: [f64; 8]) -> PaperRow {
    PaperRow {
        load,
        policy,
        accept_pct: v[0],
        active_pms: v[1],
        active_gpus_pct: v[2],
        packing_pct: v[3],
        energy_mwh: v[4],
        switch_per_h: v[5],
        migr_per_h: v[6],
        wait_s: v[7],
    }
}

/// Table 8 of the paper: accept. %, active PMs (of 128), active GPUs %, packing %, energy MWh
/// (3 days, 128 PMs), switchings per hour, migrations per hour, wait s.
const PAPER_TABLE8: &[PaperRow] = &[
    paper(0.75, "ff", [98.5, 109.5, 83.1, 84.0, 5.57, 5.2, 0.0, 0.0]),
    paper(0.75, "mfi", [99.4, 106.9, 78.2, 90.1, 5.57, 2.8, 0.0, 0.0]),
    paper(0.75, "tc", [99.7, 100.3, 72.6, 97.3, 5.47, 4.8, 17.3, 0.0]),
    paper(0.75, "origamig", [99.5, 99.0, 76.7, 92.1, 5.43, 9.9, 11.4, 0.1]),
    paper(1.0, "ff", [83.7, 125.4, 95.8, 86.2, 6.52, 4.1, 0.0, 0.0]),
    paper(1.0, "mfi", [87.0, 125.6, 93.1, 91.5, 6.67, 2.1, 0.0, 0.0]),
    paper(1.0, "tc", [90.8, 123.3, 89.6, 97.5, 6.76, 4.3, 20.2, 0.0]),
    paper(1.0, "origamig", [91.5, 122.0, 94.6, 92.9, 6.75, 8.7, 11.5, 1.5]),
];

/// Paper's hosts in Table 8.
const PAPER_HOSTS: f64 = 128.0;

#[derive(Debug, Clone, serde::Serialize)]
struct Table8Row {
    load: f64,
    policy: String,
    seeds: usize,
    acceptance_pct: f64,
    active_hosts: f64,
    active_hosts_pct: f64,
    active_gpus_pct: f64,
    packing_pct: f64,
    energy_mwh: f64,
    switch_ons_per_h: f64,
    migrations_per_h: f64,
    gb_per_h: f64,
    wait_s: f64,
    calls_per_h: f64,
    call_s_median: f64,
    call_s_p95: f64,
    wall_s: f64,
}

/// Runs `policy` on `base` at `load` once per seed of `a`, with its warm-up and measured hours
/// when given and `tweak` applied to each run's scenario; returns the summaries and the total
/// wall time. Progress goes to stderr, one line per run, prefixed by `label`.
fn runs(
    base: &Scenario,
    policy: &str,
    load: f64,
    a: &RunsArgs,
    tweak: &dyn Fn(&mut Scenario),
    label: &str,
) -> anyhow::Result<(Vec<Summary>, f64)> {
    let mut ms = Vec::new();
    let mut wall = 0.0;
    for &seed in &a.seeds {
        let mut s = base.clone();
        tweak(&mut s);
        let name = simulate::apply(
            &mut s,
            &simulate::Overrides {
                policy: Some(policy.to_string()),
                seed: Some(seed),
                load: Some(load),
                hours: a.hours,
                warmup: a.warmup,
            },
        )?;
        let row = simulate::run_one(&s, &name, &mut |_| {})?;
        eprintln!("{label} seed {seed}: done in {:.0} s", row.wall_s);
        wall += row.wall_s;
        ms.push(row.summary);
    }
    Ok((ms, wall))
}

/// The mean of one metric over runs (NaN for none).
fn mean_of(ms: &[Summary], f: &dyn Fn(&Summary) -> f64) -> f64 {
    ms.iter().map(f).sum::<f64>() / ms.len() as f64
}

fn table8(a: &Table8Args) -> anyhow::Result<()> {
    let base = a.runs.base()?;
    for p in &a.policies {
        policy::by_name(p, &base.policy)?;
    }
    anyhow::ensure!(!a.loads.is_empty(), "give at least one load");
    let mut rows = Vec::new();
    for &load in &a.loads {
        for p in &a.policies {
            let (ms, wall) = runs(&base, p, load, &a.runs, &|_| {}, &format!("load {load} {p}"))?;
            let mean = |f: &dyn Fn(&Summary) -> f64| mean_of(&ms, f);
            rows.push(Table8Row {
                load,
                policy: p.to_ascii_lowercase(),
                seeds: ms.len(),
                acceptance_pct: mean(&|m| m.acceptance_pct),
                active_hosts: mean(&|m| m.active_hosts),
                active_hosts_pct: mean(&|m| m.active_hosts_pct),
                active_gpus_pct: mean(&|m| m.active_gpus_pct),
                packing_pct: mean(&|m| m.packing_pct),
                energy_mwh: mean(&|m| m.energy_mwh),
                switch_ons_per_h: mean(&|m| m.switch_ons_per_h),
                migrations_per_h: mean(&|m| m.migrations_per_h),
                gb_per_h: mean(&|m| m.gb_per_h),
                wait_s: mean(&|m| m.wait_s_mean),
                calls_per_h: mean(&|m| m.calls_per_h),
                call_s_median: mean(&|m| m.call_s_median),
                call_s_p95: mean(&|m| m.call_s_p95),
                wall_s: wall,
            });
        }
    }
    if written_or_json(&a.runs, &rows, || {
        markdown::table8(a, &base, &rows, &markdown::Provenance::now())
    })? {
        return Ok(());
    }
    let hosts = base.fleet.hosts.len() as f64;
    let scale = hosts / PAPER_HOSTS;
    println!(
        "Table 8 on {} ({hosts} hosts), {} seed(s), each value beside the paper's (128 hosts, five seeds; \
         active hosts and energy scaled by {hosts}/128, energy also by the measured hours / 72 h)",
        base.name,
        a.runs.seeds.len()
    );
    println!(
        "{:>5} {:>9} | {:>13} {:>15} {:>13} {:>13} {:>13} {:>11} {:>13} {:>11} | {:>7} {:>14}",
        "load",
        "policy",
        "accept %",
        "active hosts",
        "act. GPUs %",
        "packing %",
        "energy MWh",
        "switch/h",
        "migr/h",
        "wait s",
        "calls/h",
        "call med/p95 s"
    );
    let measured_h = a.runs.hours.unwrap_or(base.workload.measure_h);
    for r in &rows {
        let p = PAPER_TABLE8
            .iter()
            .find(|p| p.load == r.load && p.policy == r.policy);
        let pv = |f: &dyn Fn(&PaperRow) -> f64, scale: f64| {
            p.map_or("-".to_string(), |p| format!("{:.1}", f(p) * scale))
        };
        println!(
            "{:>5} {:>9} | {:>5.1} ({:>5}) {:>6.1} ({:>6}) {:>5.1} ({:>5}) {:>5.1} ({:>5}) {:>5.2} ({:>5}) {:>4.1} ({:>4}) {:>5.1} ({:>5}) {:>4.1} ({:>4}) | {:>7.1} {:>6.2} / {:<6.2}",
            r.load,
            r.policy,
            r.acceptance_pct,
            pv(&|p| p.accept_pct, 1.0),
            r.active_hosts,
            pv(&|p| p.active_pms, scale),
            r.active_gpus_pct,
            pv(&|p| p.active_gpus_pct, 1.0),
            r.packing_pct,
            pv(&|p| p.packing_pct, 1.0),
            r.energy_mwh,
            p.map_or("-".to_string(), |p| format!("{:.2}", p.energy_mwh * scale * measured_h / 72.0)),
            r.switch_ons_per_h,
            pv(&|p| p.switch_per_h, scale),
            r.migrations_per_h,
            pv(&|p| p.migr_per_h, scale),
            r.wait_s,
            pv(&|p| p.wait_s, 1.0),
            r.calls_per_h,
            r.call_s_median,
            r.call_s_p95
        );
    }
    for &l in &a.loads {
        let get = |p: &str| rows.iter().find(|r| r.load == l && r.policy == p);
        if let (Some(ff), Some(tc), Some(o)) = (get("ff"), get("tc"), get("origamig")) {
            println!(
                "load {l}: OrigaMIG {} active hosts than FF ({:.2} vs {:.2}) and {} than TC ({:.1} vs {:.1} migrations/h)",
                if o.active_hosts < ff.active_hosts {
                    "keeps fewer"
                } else {
                    "does NOT keep fewer"
                },
                o.active_hosts,
                ff.active_hosts,
                if o.migrations_per_h < tc.migrations_per_h {
                    "migrates less"
                } else {
                    "does NOT migrate less"
                },
                o.migrations_per_h,
                tc.migrations_per_h
            );
        }
    }
    Ok(())
}

/// One row of the paper's Table 10: (policy, δ or TC period in minutes, migrations/h, GB/h,
/// active PMs, median call s).
type PaperTable10Row = (&'static str, f64, f64, f64, f64, Option<f64>);

/// Table 10 of the paper (load 0.85, 128 PMs, three seeds).
const PAPER_TABLE10: &[PaperTable10Row] = &[
    ("tc", 15.0, 19.9, 1085.0, 113.4, None),
    ("tc", 60.0, 10.0, 530.0, 115.4, None),
    ("origamig", 0.0, 142.5, 21106.0, 109.6, Some(4.10)),
    ("origamig", 5.0, 12.3, 1272.0, 111.6, Some(0.35)),
    ("origamig", 10.0, 12.8, 1316.0, 111.4, Some(5.64)),
    ("origamig", 20.0, 6.2, 713.0, 114.0, Some(4.98)),
    ("origamig", 40.0, 0.1, 2.0, 119.2, Some(4.92)),
];

/// FF's active PMs at load 0.85 in the paper (§6.7).
const PAPER_FF_085: f64 = 119.1;

#[derive(Debug, Clone, serde::Serialize)]
struct Fig6Row {
    policy: String,
    /// δ for OrigaMIG, the compaction period in minutes for TC, NaN for FF.
    setting: f64,
    seeds: usize,
    migrations_per_h: f64,
    gb_per_h: f64,
    active_hosts: f64,
    /// (FF's active hosts - this row's) / FF's, percent.
    fewer_than_ff_pct: f64,
    acceptance_pct: f64,
    energy_mwh: f64,
    calls_per_h: f64,
    call_s_median: f64,
    /// Mean |N̂| of the calls (VMs in the neighborhood).
    call_vms_mean: f64,
    wall_s: f64,
}

/// §6.6 on the calls of Table 10: "With δi <= 5, lightly loaded sources fill half of the
/// neighborhood, and a call holds about 11 VMs, against 44 to 58 with δi >= 10."
fn paper_call_vms(delta: f64) -> Option<&'static str> {
    if delta <= 5.0 {
        Some("~11")
    } else if delta >= 10.0 {
        Some("44-58")
    } else {
        None
    }
}

fn fig6(a: &Fig6Args) -> anyhow::Result<()> {
    let base = a.runs.base()?;
    anyhow::ensure!(
        a.deltas.iter().all(|d| d.is_finite() && *d >= 0.0),
        "--deltas: every δ must be a finite number >= 0"
    );
    anyhow::ensure!(
        a.tc_periods.iter().all(|p| p.is_finite() && *p > 0.0),
        "--tc-periods: every period must be a positive number of minutes"
    );
    let mut settings: Vec<(String, f64)> = vec![("ff".to_string(), f64::NAN)];
    settings.extend(a.tc_periods.iter().map(|&p| ("tc".to_string(), p)));
    settings.extend(a.deltas.iter().map(|&d| ("origamig".to_string(), d)));
    let mut rows: Vec<Fig6Row> = Vec::new();
    for (p, setting) in &settings {
        let tweak = |s: &mut Scenario| match p.as_str() {
            "tc" => s.policy.tc.compaction_min = *setting,
            "origamig" => s.policy.origamig.delta = *setting,
            _ => {}
        };
        let (ms, wall) = runs(&base, p, a.load, &a.runs, &tweak, &format!("{p} {setting}"))?;
        let mean = |f: &dyn Fn(&Summary) -> f64| mean_of(&ms, f);
        rows.push(Fig6Row {
            policy: p.clone(),
            setting: *setting,
            seeds: ms.len(),
            migrations_per_h: mean(&|m| m.migrations_per_h),
            gb_per_h: mean(&|m| m.gb_per_h),
            active_hosts: mean(&|m| m.active_hosts),
            fewer_than_ff_pct: 0.0,
            acceptance_pct: mean(&|m| m.acceptance_pct),
            energy_mwh: mean(&|m| m.energy_mwh),
            calls_per_h: mean(&|m| m.calls_per_h),
            call_s_median: mean(&|m| m.call_s_median),
            call_vms_mean: mean(&|m| m.call_vms_mean),
            wall_s: wall,
        });
    }
    let ff = rows[0].active_hosts;
    for r in &mut rows {
        r.fewer_than_ff_pct = 100.0 * (ff - r.active_hosts) / ff;
    }
    if written_or_json(&a.runs, &rows, || {
        markdown::fig6(a, &base, &rows, &markdown::Provenance::now())
    })? {
        return Ok(());
    }
    let hosts = base.fleet.hosts.len() as f64;
    let scale = hosts / PAPER_HOSTS;
    println!(
        "Fig. 6 / Table 10 on {} ({hosts} hosts), load {}, {} seed(s); the paper's values (128 hosts, three \
         seeds; migrations, GB and active hosts scaled by {hosts}/128) in parentheses",
        base.name,
        a.load,
        a.runs.seeds.len()
    );
    println!(
        "{:<18} | {:>15} {:>17} {:>15} {:>15} {:>9} {:>16} {:>16}",
        "policy",
        "migr/h",
        "GB/h",
        "active hosts",
        "fewer than FF %",
        "accept %",
        "call median s",
        "VMs per call"
    );
    for r in &rows {
        let label = match r.policy.as_str() {
            "tc" => format!("TC every {} min", r.setting),
            "origamig" => format!("OrigaMIG δ={}", r.setting),
            _ => "FF".to_string(),
        };
        let p = PAPER_TABLE10.iter().find(|p| p.0 == r.policy && p.1 == r.setting);
        let paper = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
        let fewer = match r.policy.as_str() {
            "ff" => Some(0.0),
            _ => p.map(|p| 100.0 * (PAPER_FF_085 - p.4) / PAPER_FF_085),
        };
        println!(
            "{:<18} | {:>6.1} ({:>6}) {:>7.0} ({:>7}) {:>6.1} ({:>6}) {:>6.1} ({:>6}) {:>9.1} {:>6.2} ({:>6}) {:>6} ({:>6})",
            label,
            r.migrations_per_h,
            paper(p.map(|p| p.2 * scale), 1),
            r.gb_per_h,
            paper(p.map(|p| p.3 * scale), 0),
            r.active_hosts,
            paper(
                match r.policy.as_str() {
                    "ff" => Some(PAPER_FF_085 * scale),
                    _ => p.map(|p| p.4 * scale),
                },
                1
            ),
            r.fewer_than_ff_pct,
            paper(fewer, 1),
            r.acceptance_pct,
            r.call_s_median,
            paper(p.and_then(|p| p.5), 2),
            if r.policy == "origamig" {
                format!("{:.1}", r.call_vms_mean)
            } else {
                "-".to_string()
            },
            match r.policy.as_str() {
                "origamig" => paper_call_vms(r.setting).unwrap_or("-"),
                _ => "-",
            },
        );
    }
    // §6.6: for each period of TC, is there a δ with fewer migrations and fewer active hosts?
    for t in rows.iter().filter(|r| r.policy == "tc") {
        let better: Vec<String> = rows
            .iter()
            .filter(|o| {
                o.policy == "origamig"
                    && o.migrations_per_h < t.migrations_per_h
                    && o.active_hosts < t.active_hosts
            })
            .map(|o| format!("δ={}", o.setting))
            .collect();
        println!(
            "TC every {} min: {}",
            t.setting,
            if better.is_empty() {
                "no δ migrates less AND keeps fewer hosts active".to_string()
            } else {
                format!(
                    "{} migrate(s) less and keep(s) fewer hosts active",
                    better.join(", ")
                )
            }
        );
    }
    Ok(())
}

/// The thread pool of an experiment's independent runs: `threads` runs at once (default: every
/// core), within 1 ..= `limits::MAX_THREADS`.
fn runs_pool(threads: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
        .clamp(1, crate::limits::MAX_THREADS as usize);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| anyhow::anyhow!("--threads: {e}"))
}

pub(crate) mod big_nodes;
pub(crate) mod fig7;
pub(crate) mod frontier;
pub(crate) mod markdown;
pub(crate) mod paired;
mod scale;
pub(crate) mod table9;
#[cfg(test)]
mod tests;
