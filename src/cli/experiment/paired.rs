//! `migplan experiment paired`: OrigaMIG against TC run by run, paired by seed, with FF and MFI
//! for the energy comparison: the goal of the default OrigaMIG (docs/results/origamig-default.md).
//!
//! Per (load, seed): active hosts of OrigaMIG and TC (the time average of the minute samples),
//! migrations per hour, energy per admitted GPU-hour of every policy, acceptance. Per load: how
//! many seeds keep fewer hosts active than TC, the mean reduction of migrations against TC with
//! a 95 % Student t interval over the seeds (each seed's reduction 1 - OrigaMIG / TC), the mean
//! energy per admitted GPU-hour of each policy and the mean acceptance difference with its
//! interval. The runs go in parallel (`--threads`); the table is the same whatever order they
//! finish in. `--from-runs` builds the table from the run rows of `migplan sweep` (`runs.csv`)
//! instead of running.

use super::markdown::{self, Provenance};
use super::RunsArgs;
use crate::cli::runstats::mean_ci95;
use crate::cli::simulate::{self, CSV_COLUMNS};
use crate::scenario::{Preset, Scenario};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct PairedArgs {
    #[command(flatten)]
    pub runs: RunsArgs,
    #[arg(long, value_delimiter = ',', default_value = "0.75,1.0")]
    pub loads: Vec<f64>,
    /// The policies OrigaMIG's energy per admitted GPU-hour is also compared with (TC always
    /// runs; `--others ''` for none).
    #[arg(long, value_delimiter = ',', default_value = "ff,mfi")]
    pub others: Vec<String>,
    /// OrigaMIG's preset: `default` or `paper` (Algorithm 1 as written, δ = 10).
    #[arg(long)]
    pub preset: Option<String>,
    /// OrigaMIG's δ (after the preset).
    #[arg(long)]
    pub delta: Option<f64>,
    /// OrigaMIG's reading of Algorithm 1, lines 21-22 (after the preset).
    #[arg(long)]
    pub keep_removed_sources: Option<bool>,
    /// OrigaMIG's merge neighborhood: hosts per merge call, 0 for off (after the preset).
    #[arg(long)]
    pub merge_hosts: Option<usize>,
    /// OrigaMIG's neighborhoods bounded by this many VMs, 0 for off (after the preset).
    #[arg(long)]
    pub neighborhood_vms: Option<usize>,
    /// A `[policy]` setting of OrigaMIG as KEY=VALUE in TOML, after the options above
    /// (`--policy-set reenable='"neighborhood"' --policy-set theta=2`); checked as in a scenario
    /// file.
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
    /// Runs at once (default: all cores). With 1, each run's CPU seconds are measured.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Instead of running, read the runs from these `runs.csv` files of `migplan sweep` (every
    /// (load, seed) needs an OrigaMIG and a TC row; the other policies are used when present).
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub from_runs: Vec<PathBuf>,
}

/// What the table reads of one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Run {
    pub policy: String,
    pub load: f64,
    pub seed: u64,
    pub active_hosts: f64,
    pub migrations_per_h: f64,
    pub kwh_per_gpu_hour: f64,
    pub acceptance_pct: f64,
    /// GB copied by live migrations per hour (`gb_per_h` of `simulate --json`; `None` when read
    /// from a runs.csv without that column).
    pub gb_per_h: Option<f64>,
    /// Optimizer calls that ran the solver over the whole run (`None` when read from runs.csv).
    pub calls: Option<u64>,
    /// CPU seconds of the run, measured when the runs go one at a time (`--threads 1`).
    pub cpu_s: Option<f64>,
}

/// One (load, seed) pair.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Pair {
    pub load: f64,
    pub seed: u64,
    pub origamig: Run,
    pub tc: Run,
    /// Energy per admitted GPU-hour of the other policies, by name.
    pub others_kwh: BTreeMap<String, f64>,
    /// 1 - OrigaMIG's migrations / TC's, percent (0 when TC made none and OrigaMIG none).
    pub migr_reduction_pct: f64,
}

/// One load over its seeds.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct LoadRow {
    pub load: f64,
    pub seeds: usize,
    /// Seeds where OrigaMIG keeps fewer active hosts than TC.
    pub fewer_hosts: usize,
    pub hosts_origamig: f64,
    pub hosts_tc: f64,
    /// Mean of (TC - OrigaMIG) / TC active hosts, percent, and its 95 % half-width.
    pub hosts_reduction_pct: (f64, f64),
    pub migr_origamig: f64,
    pub migr_tc: f64,
    /// Mean per-seed migration reduction against TC, percent, and its 95 % half-width.
    pub migr_reduction_pct: (f64, f64),
    /// Mean GB copied per hour of OrigaMIG and TC (`None` unless every run has it).
    pub gb_origamig: Option<f64>,
    pub gb_tc: Option<f64>,
    /// Mean energy per admitted GPU-hour (kWh) by policy, OrigaMIG and TC included.
    pub kwh: BTreeMap<String, f64>,
    /// Whether OrigaMIG's mean energy per admitted GPU-hour is below every other policy's.
    pub least_energy: bool,
    /// Mean of OrigaMIG's acceptance - TC's, points, and its 95 % half-width.
    pub accept_diff: (f64, f64),
}

/// The whole table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Table {
    pub pairs: Vec<Pair>,
    pub loads: Vec<LoadRow>,
}

fn relative_cut(base: f64, other: f64) -> f64 {
    if base > 0.0 {
        100.0 * (base - other) / base
    } else if other > 0.0 {
        -100.0
    } else {
        0.0
    }
}

/// Pairs the runs by (load, seed) and sums them up per load. Every (load, seed) with an
/// OrigaMIG run needs a TC run; loads and seeds come out ascending.
pub fn table(runs: &[Run]) -> anyhow::Result<Table> {
    let key = |r: &Run| (r.load.to_bits(), r.seed);
    let mut by: BTreeMap<(u64, u64), BTreeMap<String, &Run>> = BTreeMap::new();
    for r in runs {
        if by
            .entry(key(r))
            .or_default()
            .insert(r.policy.clone(), r)
            .is_some()
        {
            anyhow::bail!("run {} load {} seed {} appears twice", r.policy, r.load, r.seed);
        }
    }
    let mut pairs = Vec::new();
    let mut keys: Vec<&(u64, u64)> = by.keys().collect();
    keys.sort_by(|a, b| {
        f64::from_bits(a.0)
            .total_cmp(&f64::from_bits(b.0))
            .then(a.1.cmp(&b.1))
    });
    for k in keys {
        let m = &by[k];
        let (load, seed) = (f64::from_bits(k.0), k.1);
        let (Some(o), Some(tc)) = (m.get("origamig"), m.get("tc")) else {
            anyhow::bail!("load {load} seed {seed}: an OrigaMIG and a TC run are needed");
        };
        pairs.push(Pair {
            load,
            seed,
            origamig: (*o).clone(),
            tc: (*tc).clone(),
            others_kwh: m
                .iter()
                .filter(|(p, _)| !matches!(p.as_str(), "origamig" | "tc"))
                .map(|(p, r)| (p.clone(), r.kwh_per_gpu_hour))
                .collect(),
            migr_reduction_pct: relative_cut(tc.migrations_per_h, o.migrations_per_h),
        });
    }
    let mut loads: Vec<LoadRow> = Vec::new();
    for p in &pairs {
        if loads.last().is_none_or(|l| l.load != p.load) {
            let of: Vec<&Pair> = pairs.iter().filter(|q| q.load == p.load).collect();
            let mean = |f: &dyn Fn(&Pair) -> f64| of.iter().map(|q| f(q)).sum::<f64>() / of.len() as f64;
            let hosts_cut: Vec<f64> = of
                .iter()
                .map(|q| relative_cut(q.tc.active_hosts, q.origamig.active_hosts))
                .collect();
            let migr_cut: Vec<f64> = of.iter().map(|q| q.migr_reduction_pct).collect();
            let accept: Vec<f64> = of
                .iter()
                .map(|q| q.origamig.acceptance_pct - q.tc.acceptance_pct)
                .collect();
            let mut kwh = BTreeMap::new();
            kwh.insert("origamig".to_string(), mean(&|q| q.origamig.kwh_per_gpu_hour));
            kwh.insert("tc".to_string(), mean(&|q| q.tc.kwh_per_gpu_hour));
            // The others' means over the seeds where they ran.
            let mut others: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for q in &of {
                for (name, v) in &q.others_kwh {
                    others.entry(name.as_str()).or_default().push(*v);
                }
            }
            for (name, vs) in others {
                kwh.insert(name.to_string(), vs.iter().sum::<f64>() / vs.len() as f64);
            }
            let own = kwh["origamig"];
            loads.push(LoadRow {
                load: p.load,
                seeds: of.len(),
                fewer_hosts: of
                    .iter()
                    .filter(|q| q.origamig.active_hosts < q.tc.active_hosts)
                    .count(),
                hosts_origamig: mean(&|q| q.origamig.active_hosts),
                hosts_tc: mean(&|q| q.tc.active_hosts),
                hosts_reduction_pct: mean_ci95(&hosts_cut),
                migr_origamig: mean(&|q| q.origamig.migrations_per_h),
                migr_tc: mean(&|q| q.tc.migrations_per_h),
                migr_reduction_pct: mean_ci95(&migr_cut),
                gb_origamig: of
                    .iter()
                    .map(|q| q.origamig.gb_per_h)
                    .sum::<Option<f64>>()
                    .map(|v| v / of.len() as f64),
                gb_tc: of
                    .iter()
                    .map(|q| q.tc.gb_per_h)
                    .sum::<Option<f64>>()
                    .map(|v| v / of.len() as f64),
                least_energy: kwh.iter().all(|(n, v)| n == "origamig" || own < *v),
                kwh,
                accept_diff: mean_ci95(&accept),
            });
        }
    }
    Ok(Table { pairs, loads })
}

/// Reads runs from `runs.csv` files of `migplan sweep` (columns by the header's names).
pub(crate) fn read_runs(files: &[PathBuf]) -> anyhow::Result<Vec<Run>> {
    let mut out = Vec::new();
    for f in files {
        let text = crate::fsutil::read_text(f)?;
        let mut lines = text.lines().enumerate();
        let Some((_, header)) = lines.next() else {
            anyhow::bail!("{}: empty file", f.display());
        };
        let cols: Vec<&str> = header.split(',').collect();
        let at = |name: &str| {
            cols.iter()
                .position(|c| *c == name)
                .ok_or_else(|| anyhow::anyhow!("{}:1: no column `{name}`", f.display()))
        };
        let idx = [
            at("policy")?,
            at("load")?,
            at("seed")?,
            at("active_hosts")?,
            at("migrations_per_h")?,
            at("kwh_per_gpu_hour")?,
            at("acceptance_pct")?,
        ];
        let gb_col = cols.iter().position(|c| *c == "gb_per_h");
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let cells: Vec<&str> = line.split(',').collect();
            anyhow::ensure!(
                cells.len() == cols.len(),
                "{}:{}: {} cells, the header has {}",
                f.display(),
                n + 1,
                cells.len(),
                cols.len()
            );
            let num = |i: usize, name: &str| -> anyhow::Result<f64> {
                cells[idx[i]]
                    .parse::<f64>()
                    .map_err(|_| anyhow::anyhow!("{}:{}: field `{name}`: not a number", f.display(), n + 1))
            };
            out.push(Run {
                policy: cells[idx[0]].to_ascii_lowercase(),
                load: num(1, "load")?,
                seed: cells[idx[2]]
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{}:{}: field `seed`: not a seed", f.display(), n + 1))?,
                active_hosts: num(3, "active_hosts")?,
                migrations_per_h: num(4, "migrations_per_h")?,
                kwh_per_gpu_hour: num(5, "kwh_per_gpu_hour")?,
                acceptance_pct: num(6, "acceptance_pct")?,
                gb_per_h: match gb_col {
                    Some(i) => Some(cells[i].parse::<f64>().map_err(|_| {
                        anyhow::anyhow!("{}:{}: field `gb_per_h`: not a number", f.display(), n + 1)
                    })?),
                    None => None,
                },
                calls: None,
                cpu_s: None,
            });
        }
    }
    // The columns this reads are those `simulate --csv` and `sweep` write.
    debug_assert!(["active_hosts", "migrations_per_h", "kwh_per_gpu_hour"]
        .iter()
        .all(|c| CSV_COLUMNS.contains(c)));
    Ok(out)
}

/// OrigaMIG's settings on `s` as the arguments ask.
fn origamig_settings(s: &mut Scenario, a: &PairedArgs) -> anyhow::Result<()> {
    if let Some(p) = &a.preset {
        let preset = match p.as_str() {
            "default" => Preset::Default,
            "paper" => Preset::Paper,
            _ => anyhow::bail!("--preset: unknown preset `{p}` (default, paper)"),
        };
        s.policy.apply_preset(preset, &|_| false);
        if preset == Preset::Default {
            s.policy.origamig.reset_preset_keys();
        }
    }
    if let Some(d) = a.delta {
        anyhow::ensure!(
            d.is_finite() && (0.0..=crate::limits::MAX_WEIGHT).contains(&d),
            "--delta must be within 0..={}, not {d}",
            crate::limits::MAX_WEIGHT
        );
        s.policy.origamig.delta = d;
    }
    if let Some(k) = a.keep_removed_sources {
        s.policy.origamig.keep_removed_sources = k;
    }
    if let Some(k) = a.merge_hosts {
        anyhow::ensure!(
            k != 1 && k <= crate::limits::MAX_MERGE_HOSTS,
            "--merge-hosts must be 0 (off) or within 2..={}, not {k}",
            crate::limits::MAX_MERGE_HOSTS
        );
        s.policy.origamig.merge_hosts = k;
    }
    if let Some(n) = a.neighborhood_vms {
        anyhow::ensure!(
            n <= crate::limits::MAX_NEIGHBORHOOD_VMS,
            "--neighborhood-vms must be 0 (off) or within 1..={}, not {n}",
            crate::limits::MAX_NEIGHBORHOOD_VMS
        );
        s.policy.origamig.neighborhood_vms = n;
    }
    super::set_policy(s, &a.policy_set)
}

/// The settings beyond δ and lines 21-22 that differ from their defaults, for the table's title.
fn variant_note(p: &crate::policy_settings::OrigamigSettings) -> String {
    let mut out = String::new();
    if p.merge_hosts > 0 {
        let _ = write!(out, ", merge_hosts = {}", p.merge_hosts);
    }
    if p.neighborhood_vms > 0 {
        let _ = write!(out, ", neighborhood_vms = {}", p.neighborhood_vms);
    }
    if p.delta_per_gb > 0.0 {
        let _ = write!(out, ", delta_per_gb = {}", p.delta_per_gb);
    }
    let d = crate::policy_settings::OrigamigSettings::default();
    if p.reenable != d.reenable {
        let _ = write!(out, ", reenable = {}", p.reenable.name());
    }
    if p.reenable == crate::policy_settings::Reenable::Room && p.reenable_room_share != d.reenable_room_share
    {
        let _ = write!(out, ", reenable_room_share = {}", p.reenable_room_share);
    }
    if p.reenable_gap_rise != d.reenable_gap_rise {
        let _ = write!(out, ", reenable_gap_rise = {}", p.reenable_gap_rise);
    }
    if p.theta != d.theta {
        let _ = write!(out, ", θ = {}", p.theta);
    }
    if p.m_max != 16 {
        // The paper's Mmax (§6.1) is 16; the default calls over fewer hosts.
        let _ = write!(out, ", Mmax = {}", p.m_max);
    }
    if p.delta_job_extra > 0.0 {
        let _ = write!(out, ", delta_job_extra = {}", p.delta_job_extra);
    }
    if p.ff_active_first {
        out.push_str(", ff_active_first");
    }
    if p.consolidation_hold_s > 0.0 {
        let _ = write!(out, ", consolidation_hold_s = {}", p.consolidation_hold_s);
    }
    out
}

/// Runs the grid (in parallel, rows in grid order).
fn run_grid(base: &Scenario, a: &PairedArgs) -> anyhow::Result<Vec<Run>> {
    anyhow::ensure!(!a.loads.is_empty(), "give at least one load");
    let mut policies = vec!["origamig".to_string(), "tc".to_string()];
    for p in a.others.iter().filter(|p| !p.is_empty()) {
        let p = p.to_ascii_lowercase();
        crate::policy::by_name(&p, &base.policy)?;
        anyhow::ensure!(!policies.contains(&p), "--others: `{p}` is already in the table");
        policies.push(p);
    }
    let mut jobs = Vec::new();
    for &load in &a.loads {
        for &seed in &a.runs.seeds {
            for p in &policies {
                let mut s = base.clone();
                if p == "origamig" {
                    origamig_settings(&mut s, a)?;
                }
                let name = simulate::apply(
                    &mut s,
                    &simulate::Overrides {
                        policy: Some(p.clone()),
                        seed: Some(seed),
                        load: Some(load),
                        hours: a.runs.hours,
                        warmup: a.runs.warmup,
                    },
                )?;
                jobs.push((s, name));
            }
        }
    }
    let pool = super::runs_pool(a.threads)?;
    let one_at_a_time = pool.current_num_threads() == 1;
    let rows: Vec<anyhow::Result<Run>> = pool.install(|| {
        jobs.par_iter()
            .map(|(s, name)| {
                let c0 = super::speed::process_cpu_s();
                let row = simulate::run_one(s, name, &mut |_| {})?;
                let cpu_s = match (one_at_a_time, super::speed::process_cpu_s(), c0) {
                    (true, Some(b), Some(a)) => Some(b - a),
                    _ => None,
                };
                eprintln!(
                    "{name} load {} seed {}: done in {:.0} s",
                    row.load, row.seed, row.wall_s
                );
                Ok(Run {
                    policy: row.policy,
                    load: row.load,
                    seed: row.seed,
                    active_hosts: row.summary.active_hosts,
                    migrations_per_h: row.summary.migrations_per_h,
                    kwh_per_gpu_hour: row.summary.kwh_per_gpu_hour,
                    acceptance_pct: row.summary.acceptance_pct,
                    gb_per_h: Some(row.summary.gb_per_h),
                    calls: Some(row.summary.calls),
                    cpu_s,
                })
            })
            .collect()
    });
    rows.into_iter().collect()
}

pub fn paired(a: &PairedArgs) -> anyhow::Result<()> {
    if let Some(path) = &a.runs.markdown {
        markdown::check_target(path)?;
    }
    let (runs, what) = if a.from_runs.is_empty() {
        let base = a.runs.base()?;
        let runs = run_grid(&base, a)?;
        let s = {
            let mut s = base.clone();
            origamig_settings(&mut s, a)?;
            s
        };
        let what = format!(
            "{} ({} hosts), {} h warm-up + {} h measured; OrigaMIG with keep_removed_sources = {}, δ = {}",
            base.name,
            base.fleet.hosts.len(),
            a.runs.warmup.unwrap_or(base.workload.warmup_h),
            a.runs.hours.unwrap_or(base.workload.measure_h),
            s.policy.origamig.keep_removed_sources,
            s.policy.origamig.delta
        ) + &variant_note(&s.policy.origamig);
        (runs, what)
    } else {
        let names: Vec<String> = a.from_runs.iter().map(|p| p.display().to_string()).collect();
        (
            read_runs(&a.from_runs)?,
            format!("runs read from {}", names.join(", ")),
        )
    };
    let t = table(&runs)?;
    let text = render(&t, &what);
    if let Some(path) = &a.runs.markdown {
        let p = Provenance::now();
        let mut md = String::new();
        let _ = writeln!(md, "# OrigaMIG against TC, paired by seed\n");
        p.header(&mut md);
        let _ = writeln!(md, "\n{what}\n");
        md.push_str(&markdown_tables(&t));
        markdown::write(path, &md)?;
    }
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&t)?);
    } else {
        print!("{text}");
    }
    Ok(())
}

fn others_of(t: &Table) -> Vec<String> {
    let mut names: Vec<String> = t
        .pairs
        .iter()
        .flat_map(|p| p.others_kwh.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The text table printed on stdout.
pub fn render(t: &Table, what: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "OrigaMIG against TC, paired by seed: {what}");
    let _ = writeln!(
        out,
        "{:>5} {:>5} | {:>9} {:>9} {:>7} | {:>8} {:>8} {:>7} | {:>8} {:>8}",
        "load", "seed", "hosts O", "hosts TC", "cut %", "migr/h O", "migr/h TC", "cut %", "acc. O", "acc. TC"
    );
    for p in &t.pairs {
        let _ = writeln!(
            out,
            "{:>5} {:>5} | {:>9.2} {:>9.2} {:>7.2} | {:>8.2} {:>8.2} {:>7.1} | {:>8.2} {:>8.2}",
            p.load,
            p.seed,
            p.origamig.active_hosts,
            p.tc.active_hosts,
            relative_cut(p.tc.active_hosts, p.origamig.active_hosts),
            p.origamig.migrations_per_h,
            p.tc.migrations_per_h,
            p.migr_reduction_pct,
            p.origamig.acceptance_pct,
            p.tc.acceptance_pct
        );
    }
    out.push('\n');
    out.push_str(&summary_text(t));
    out
}

fn summary_text(t: &Table) -> String {
    let mut out = String::new();
    let others = others_of(t);
    let _ = writeln!(
        out,
        "{:>5} | {:>11} | {:>16} | {:>20} | {} | {:>14}",
        "load",
        "fewer hosts",
        "hosts cut % ±95",
        "migr. cut % ±95",
        ["origamig", "tc"]
            .iter()
            .map(|s| s.to_string())
            .chain(others.iter().cloned())
            .map(|n| format!("{:>9}", format!("kWh {n}")))
            .collect::<Vec<_>>()
            .join(" "),
        "acc. diff ±95"
    );
    for l in &t.loads {
        let _ = writeln!(
            out,
            "{:>5} | {:>7}/{:<3} | {:>7.2} ± {:<6.2} | {:>7.1} ± {:<5.1} {} | {} | {:>+6.2} ± {:<5.2}",
            l.load,
            l.fewer_hosts,
            l.seeds,
            l.hosts_reduction_pct.0,
            l.hosts_reduction_pct.1,
            l.migr_reduction_pct.0,
            l.migr_reduction_pct.1,
            if l.migr_reduction_pct.0 >= 30.0 {
                ">=30"
            } else {
                " <30"
            },
            ["origamig", "tc"]
                .iter()
                .map(|s| s.to_string())
                .chain(others.iter().cloned())
                .map(|n| l
                    .kwh
                    .get(&n)
                    .map_or(format!("{:>9}", "-"), |v| format!("{v:>9.4}")))
                .collect::<Vec<_>>()
                .join(" "),
            l.accept_diff.0,
            l.accept_diff.1
        );
    }
    let runs: usize = t.loads.iter().map(|l| l.seeds).sum();
    let fewer: usize = t.loads.iter().map(|l| l.fewer_hosts).sum();
    let _ = writeln!(
        out,
        "fewer active hosts than TC in {fewer} of {runs} runs; migrations at least 30 % below TC's at {} of {} loads; \
         least energy per admitted GPU-hour at {} of {} loads; acceptance at least TC's (mean) at {} of {} loads",
        t.loads.iter().filter(|l| l.migr_reduction_pct.0 >= 30.0).count(),
        t.loads.len(),
        t.loads.iter().filter(|l| l.least_energy).count(),
        t.loads.len(),
        t.loads.iter().filter(|l| l.accept_diff.0 >= 0.0).count(),
        t.loads.len()
    );
    out
}

/// The Markdown tables: the pairs, then the loads.
fn markdown_tables(t: &Table) -> String {
    let mut md = String::new();
    let others = others_of(t);
    let _ = writeln!(
        md,
        "| load | seed | active hosts OrigaMIG | TC | fewer | migr./h OrigaMIG | TC | cut % | GB/h OrigaMIG | TC | accept. % OrigaMIG | TC | calls OrigaMIG | CPU s OrigaMIG | TC |"
    );
    let _ = writeln!(
        md,
        "|---:|---:|---:|---:|:-:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let cpu = |r: &Run| r.cpu_s.map_or("-".to_string(), |c| format!("{c:.1}"));
    let gb = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g:.1}"));
    for p in &t.pairs {
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {:.1} | {} | {} | {:.2} | {:.2} | {} | {} | {} |",
            p.load,
            p.seed,
            p.origamig.active_hosts,
            p.tc.active_hosts,
            if p.origamig.active_hosts < p.tc.active_hosts {
                "yes"
            } else {
                "no"
            },
            p.origamig.migrations_per_h,
            p.tc.migrations_per_h,
            p.migr_reduction_pct,
            gb(p.origamig.gb_per_h),
            gb(p.tc.gb_per_h),
            p.origamig.acceptance_pct,
            p.tc.acceptance_pct,
            p.origamig.calls.map_or("-".to_string(), |c| c.to_string()),
            cpu(&p.origamig),
            cpu(&p.tc)
        );
    }
    let names: Vec<String> = ["origamig", "tc"]
        .iter()
        .map(|s| s.to_string())
        .chain(others.iter().cloned())
        .collect();
    let _ = writeln!(
        md,
        "\nPer load (intervals: 95 %, Student t over the seeds; energy in kWh per admitted GPU-hour):\n"
    );
    let _ = writeln!(
        md,
        "| load | fewer hosts than TC | hosts cut % | migr./h OrigaMIG / TC | migr. cut % | GB/h OrigaMIG / TC | {} | least energy | accept. OrigaMIG - TC (points) |",
        names.iter().map(|n| format!("kWh {n}")).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(
        md,
        "|---:|---:|---:|---:|---:|---:|{}:-:|---:|",
        "---:|".repeat(names.len())
    );
    for l in &t.loads {
        let _ = writeln!(
            md,
            "| {} | {} of {} | {:.2} ± {:.2} | {:.2} / {:.2} | {:.1} ± {:.1} | {} / {} | {} | {} | {:+.2} ± {:.2} |",
            l.load,
            l.fewer_hosts,
            l.seeds,
            l.hosts_reduction_pct.0,
            l.hosts_reduction_pct.1,
            l.migr_origamig,
            l.migr_tc,
            l.migr_reduction_pct.0,
            l.migr_reduction_pct.1,
            gb(l.gb_origamig),
            gb(l.gb_tc),
            names
                .iter()
                .map(|n| l.kwh.get(n).map_or("-".to_string(), |v| format!("{v:.4}")))
                .collect::<Vec<_>>()
                .join(" | "),
            if l.least_energy { "yes" } else { "no" },
            l.accept_diff.0,
            l.accept_diff.1
        );
    }
    let _ = writeln!(
        md,
        "\n```\n{}```",
        summary_text(t).lines().last().unwrap_or("").to_string() + "\n"
    );
    md
}
