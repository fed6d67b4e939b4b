//! `migplan experiment fig7` (§6.5, Fig. 7): FF, TC and OrigaMIG, one instance and partitioned,
//! on fleets of growing size with the paper's workload per host.
//!
//! Each fleet scales the 128-host fleet of §6.1 by racks of 32 hosts in fleet order: 24 hosts with
//! two A100-40GB, then 8 with two A30-24GB (a quarter A30), 80 cores and 512 GB each. A partition
//! of `--partition-hosts` hosts (a multiple of 32) therefore holds the paper's mix. The workload
//! is the synthetic one of §6.2 at `--load`, one seed, scaled with the fleet, and each run warms
//! up for `--warmup` hours before the measured `--hours`.

use super::markdown::{self, Provenance};
use crate::cli::simulate;
use crate::scenario::{self, Preset, Scenario};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Hosts per rack: 24 A100 hosts and 8 A30 hosts.
const RACK: usize = 32;

#[derive(clap::Args, Debug)]
pub struct Fig7Args {
    /// Fleet sizes in hosts (multiples of 32).
    #[arg(long, value_delimiter = ',', default_value = "128,256,512,1024,2048,4096")]
    pub sizes: Vec<usize>,
    /// Hours measured.
    #[arg(long, default_value_t = 24.0)]
    pub hours: f64,
    /// Hours of warm-up before the measured window.
    #[arg(long, default_value_t = 12.0)]
    pub warmup: f64,
    #[arg(long, default_value_t = 0.85)]
    pub load: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hosts per partition of partitioned OrigaMIG (a multiple of 32): the runs set
    /// `[policy] partition_hosts` to it, so a fleet of n hosts has n / this many partitions
    /// (one partition runs one instance).
    #[arg(long, default_value_t = 128)]
    pub partition_hosts: usize,
    /// OrigaMIG's preset in every OrigaMIG run (one instance and partitioned): `default`
    /// (removed sources stay receivers, δ = 15 and 30 for a job, merge calls of 4 hosts, arrivals
    /// on active hosts first) or `paper` (Algorithm 1 as written, δ = 10, no merge calls, classes
    /// enabled again by any departure: fewer, cheaper calls). FF and TC do not read it.
    #[arg(long, default_value = "default")]
    pub preset: String,
    /// A `[policy]` setting of every OrigaMIG run as KEY=VALUE in TOML, after the preset
    /// (`--policy-set node_limit=1000`); checked as in a scenario file.
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
    /// One-instance OrigaMIG runs only on fleets of at most this many hosts; the table says
    /// "not run" for the larger ones (one instance makes one call per 10 s step, and a day of the
    /// larger fleets takes hours).
    #[arg(long, default_value_t = 1024)]
    pub one_instance_max_hosts: usize,
    /// Threads of the pool that runs the partitions' calls in parallel (0: rayon's default,
    /// the number of cores or RAYON_NUM_THREADS). The figures do not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Which runs: ff, tc, origamig (one instance), partitioned.
    #[arg(long, value_delimiter = ',', default_value = "ff,tc,origamig,partitioned")]
    pub runs: Vec<String>,
    /// Also write the table as Markdown to this file (command line, commit and date), after
    /// each size, atomically.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// One run of the table.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Fig7Row {
    pub hosts: usize,
    /// `ff`, `tc`, `origamig` or `origamig xK` (K partitions).
    pub policy: String,
    pub partitions: usize,
    pub active_hosts: f64,
    /// (FF's active hosts - this row's) / FF's, percent (NaN without an FF run of the size).
    pub fewer_than_ff_pct: f64,
    pub acceptance_pct: f64,
    pub calls_per_h: f64,
    pub call_s_median: f64,
    pub wall_s: f64,
    /// CPU seconds of the process (user + system, all threads) during the run, NaN where the
    /// system does not tell.
    pub cpu_s: f64,
    /// Why the run was not made (its figures are then NaN).
    pub not_run: Option<String>,
}

/// CPU seconds (user + system, all threads) this process has used so far, from
/// `/proc/self/stat` (fields 14 and 15, in the kernel's fixed 100 ticks per second); NaN
/// without it.
fn process_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name, which ends at the last ')': state is field 3.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (
        f.get(11).and_then(|v| v.parse::<f64>().ok()),
        f.get(12).and_then(|v| v.parse::<f64>().ok()),
    ) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// The preset `--preset` names.
fn preset(a: &Fig7Args) -> anyhow::Result<Preset> {
    match a.preset.as_str() {
        "default" => Ok(Preset::Default),
        "paper" => Ok(Preset::Paper),
        p => anyhow::bail!("--preset: unknown preset `{p}` (default, paper)"),
    }
}

/// The fleet and workload of one size, with OrigaMIG's settings of `--preset`.
pub fn scenario(hosts: usize, a: &Fig7Args) -> anyhow::Result<Scenario> {
    anyhow::ensure!(
        hosts > 0 && hosts.is_multiple_of(RACK),
        "--sizes: {hosts} is not a positive multiple of {RACK} hosts (one rack: 24 A100 hosts, 8 A30 hosts)"
    );
    let mut src = format!(
        "name = \"fig7-{hosts}\"\nstart = \"2026-01-05T00:00:00Z\"\n\n[workload]\nload = {}\nseed = {}\nwarmup_h = {}\nmeasure_h = {}\n",
        a.load, a.seed, a.warmup, a.hours
    );
    for r in 0..hosts / RACK {
        for (model, count) in [("a100-40gb", 24), ("a30-24gb", 8)] {
            let kind = &model[..model.find('-').unwrap_or(model.len())];
            let _ = write!(
                src,
                "\n[[host_group]]\nprefix = \"r{r:03}-{kind}-\"\ncount = {count}\ncores = 80\nram_gb = 512\ngpus = [\"{model}\", \"{model}\"]\n"
            );
        }
    }
    let mut s = scenario::parse(&src, &format!("<fig7 {hosts} hosts>"))?;
    s.policy.apply_preset(preset(a)?, &|_| false);
    super::set_policy(&mut s, &a.policy_set)?;
    Ok(s)
}

pub fn fig7(a: &Fig7Args) -> anyhow::Result<()> {
    anyhow::ensure!(!a.sizes.is_empty(), "--sizes: give at least one fleet size");
    anyhow::ensure!(
        a.partition_hosts > 0 && a.partition_hosts.is_multiple_of(RACK),
        "--partition-hosts: {} is not a positive multiple of {RACK}",
        a.partition_hosts
    );
    for r in &a.runs {
        anyhow::ensure!(
            ["ff", "tc", "origamig", "partitioned"].contains(&r.as_str()),
            "--runs: unknown run `{r}` (ff, tc, origamig, partitioned)"
        );
    }
    preset(a)?;
    if let Some(path) = &a.markdown {
        markdown::check_target(path)?;
    }
    for &n in &a.sizes {
        scenario(n, a)?;
    }
    anyhow::ensure!(
        a.threads <= crate::limits::MAX_THREADS as usize,
        "--threads: {} is above the limit of {}",
        a.threads,
        crate::limits::MAX_THREADS
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads)
        .build()
        .map_err(|e| anyhow::anyhow!("--threads: cannot start the thread pool: {e}"))?;
    pool.install(|| run_sizes(a))
}

fn run_sizes(a: &Fig7Args) -> anyhow::Result<()> {
    println!(
        "Fig. 7: load {}, seed {}, {} h warm-up + {} h measured, partitions of {} hosts, OrigaMIG preset {}, {} threads",
        a.load,
        a.seed,
        a.warmup,
        a.hours,
        a.partition_hosts,
        a.preset,
        rayon::current_num_threads()
    );
    println!("{}", header());
    let mut rows: Vec<Fig7Row> = Vec::new();
    for &n in &a.sizes {
        let base = scenario(n, a)?;
        let mut ff: Option<f64> = None;
        for run in &a.runs {
            let mut s = base.clone();
            let (policy, k) = match run.as_str() {
                "partitioned" => ("origamig", n.div_ceil(a.partition_hosts)),
                p => (p, 1),
            };
            let label = if run == "partitioned" {
                format!("origamig x{k}")
            } else {
                policy.to_string()
            };
            if run == "origamig" && n > a.one_instance_max_hosts {
                let row = Fig7Row {
                    hosts: n,
                    policy: label,
                    partitions: 1,
                    active_hosts: f64::NAN,
                    fewer_than_ff_pct: f64::NAN,
                    acceptance_pct: f64::NAN,
                    calls_per_h: f64::NAN,
                    call_s_median: f64::NAN,
                    wall_s: f64::NAN,
                    cpu_s: f64::NAN,
                    not_run: Some(format!("not run (over {} hosts)", a.one_instance_max_hosts)),
                };
                println!("{}", line(&row));
                rows.push(row);
                continue;
            }
            if k > 1 {
                s.policy.origamig.partition_hosts = a.partition_hosts;
            }
            let cpu0 = process_cpu_s();
            let name = simulate::apply(
                &mut s,
                &simulate::Overrides {
                    policy: Some(policy.to_string()),
                    ..Default::default()
                },
            )?;
            let r = simulate::run_one(&s, &name, &mut |_| {})?;
            let cpu_s = process_cpu_s() - cpu0;
            let m = &r.summary;
            if policy == "ff" {
                ff = Some(m.active_hosts);
            }
            let row = Fig7Row {
                hosts: n,
                policy: label,
                partitions: k,
                active_hosts: m.active_hosts,
                fewer_than_ff_pct: ff.map_or(f64::NAN, |f| 100.0 * (f - m.active_hosts) / f),
                acceptance_pct: m.acceptance_pct,
                calls_per_h: m.calls_per_h,
                call_s_median: m.call_s_median,
                wall_s: r.wall_s,
                cpu_s,
                not_run: None,
            };
            println!("{}", line(&row));
            rows.push(row);
        }
        if let Some(path) = &a.markdown {
            markdown::write(path, &to_markdown(a, &rows, &Provenance::now()))?;
        }
    }
    Ok(())
}

fn header() -> String {
    format!(
        "| {:>5} | {:<14} | {:>12} | {:>15} | {:>8} | {:>7} | {:>13} | {:>10} | {:>9} |",
        "hosts",
        "policy",
        "active hosts",
        "fewer than FF %",
        "accept %",
        "calls/h",
        "call median s",
        "run time s",
        "CPU s"
    )
}

fn line(r: &Fig7Row) -> String {
    if let Some(why) = &r.not_run {
        return format!(
            "| {:>5} | {:<14} | {:>12} | {:>15} | {:>8} | {:>7} | {:>13} | {:>10} | {:>9} |",
            r.hosts, r.policy, why, "-", "-", "-", "-", "-", "-"
        );
    }
    let num = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{v:.0}")
        }
    };
    let calls = |v: f64| {
        if r.policy.starts_with("origamig") {
            format!("{v:.2}")
        } else {
            "-".to_string()
        }
    };
    format!(
        "| {:>5} | {:<14} | {:>12.1} | {:>15} | {:>8.2} | {:>7} | {:>13} | {:>10.0} | {:>9} |",
        r.hosts,
        r.policy,
        r.active_hosts,
        if r.fewer_than_ff_pct.is_nan() {
            "-".to_string()
        } else {
            format!("{:.2}", r.fewer_than_ff_pct)
        },
        r.acceptance_pct,
        calls(r.calls_per_h),
        calls(r.call_s_median),
        r.wall_s,
        num(r.cpu_s)
    )
}

/// The table as a Markdown file with its provenance.
pub(crate) fn to_markdown(a: &Fig7Args, rows: &[Fig7Row], p: &Provenance) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Fig. 7: OrigaMIG against FF and TC as the fleet grows\n");
    let _ = writeln!(out, "- command: `{}`", p.command);
    let _ = writeln!(out, "- commit: {}", p.commit);
    let _ = writeln!(out, "- date: {}", p.date);
    let _ = writeln!(
        out,
        "\nFleets of racks of 32 hosts (24 with two A100-40GB, 8 with two A30-24GB; 80 cores, \
         512 GB), the synthetic workload of §6.2 at load {}, seed {}, {} h warm-up then {} h \
         measured. OrigaMIG runs with `preset = \"{}\"` ({}){}. `origamig xK` is OrigaMIG with K \
         partitions of {} hosts (`partition_hosts = {}`), calls in parallel on {} threads; \
         one-instance OrigaMIG runs up to {} hosts. Active hosts are the time average over the \
         measured window; calls per hour and the median call (seconds) count the calls that ran \
         the solver (all partitions together); run time is the wall time of the whole run \
         (warm-up included) on this machine, CPU s the CPU seconds of all its threads. On a \
         shared machine the wall time depends on the other work; CPU s does not (much).\n",
        a.load,
        a.seed,
        a.warmup,
        a.hours,
        a.preset,
        if a.preset == "paper" {
            "Algorithm 1 as written, δ = 10, no merge calls, re-enabled by any departure, FF over all hosts"
        } else {
            "removed sources stay receivers, δ = 15 (30 for a job), merge calls of 4 hosts, arrivals on active hosts first"
        },
        super::policy_set_text(&a.policy_set, ", then "),
        a.partition_hosts,
        a.partition_hosts,
        rayon::current_num_threads(),
        a.one_instance_max_hosts
    );
    let _ = writeln!(out, "{}", header());
    let _ = writeln!(
        out,
        "|------:|:---------------|-------------:|----------------:|---------:|--------:|--------------:|-----------:|----------:|"
    );
    for r in rows {
        let _ = writeln!(out, "{}", line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: Fig7Args,
    }

    fn args(extra: &[&str]) -> Fig7Args {
        Cli::parse_from(std::iter::once("fig7").chain(extra.iter().copied())).a
    }

    /// `--preset paper` gives every run the settings of `preset = "paper"` (Algorithm 1
    /// as written, δ = 10, no merge calls); the default leaves the defaults (δ = 15, removed
    /// sources kept, merge calls of 4 hosts). The fleet is the same either way.
    #[test]
    fn preset_sets_origamig_settings_of_every_run() {
        let paper = scenario(64, &args(&["--preset", "paper"])).unwrap();
        assert_eq!(paper.policy.preset, Preset::Paper);
        assert_eq!(paper.policy.origamig.delta, 10.0);
        assert!(!paper.policy.origamig.keep_removed_sources);
        assert_eq!(paper.policy.origamig.merge_hosts, 0);
        assert_eq!(paper.policy.origamig.delta_job_extra, 0.0);
        assert!(!paper.policy.origamig.ff_active_first);
        let default = scenario(64, &args(&[])).unwrap();
        assert_eq!(default.policy.preset, Preset::Default);
        assert_eq!(default.policy.origamig.delta, 15.0);
        assert!(default.policy.origamig.keep_removed_sources);
        assert_eq!(default.policy.origamig.merge_hosts, 4);
        assert_eq!(default.policy.origamig.delta_job_extra, 15.0);
        assert!(default.policy.origamig.ff_active_first);
        assert_eq!(paper.fleet.hosts.len(), 64);
        assert_eq!(default.fleet.hosts.len(), 64);
        let e = scenario(64, &args(&["--preset", "Paper"]))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--preset: unknown preset `Paper` (default, paper)");
    }

    /// `--policy-set` applies after the preset to the fleet of every size; a bad value is one
    /// line naming its key.
    #[test]
    fn policy_set_applies_after_the_preset() {
        let a = args(&["--preset", "paper", "--policy-set", "sim_time_limit_s=60"]);
        for hosts in [32, 128] {
            let s = scenario(hosts, &a).unwrap();
            assert_eq!(s.policy.origamig.sim_time_limit_s, 60.0);
            assert_eq!(s.policy.origamig.delta, 10.0);
            assert_eq!(s.policy.preset, Preset::Paper);
        }
        let plain = scenario(32, &args(&["--preset", "paper"])).unwrap();
        assert_eq!(plain.policy.origamig.sim_time_limit_s, 10.0);
        let e = scenario(32, &args(&["--policy-set", "sim_time_limit_s=-1"])).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("sim_time_limit_s") && !msg.contains('\n'), "{msg}");
    }

    /// The Markdown file names the preset its OrigaMIG rows ran with.
    #[test]
    fn markdown_names_the_preset() {
        let p = Provenance {
            command: "migplan experiment fig7".into(),
            commit: "abc".into(),
            date: "now".into(),
        };
        let md = to_markdown(&args(&["--preset", "paper"]), &[], &p);
        assert!(
            md.contains("`preset = \"paper\"` (Algorithm 1 as written"),
            "{md}"
        );
        let md = to_markdown(&args(&[]), &[], &p);
        assert!(
            md.contains("`preset = \"default\"` (removed sources stay"),
            "{md}"
        );
    }
}
