//! `migplan experiment scale`: how the simulator's cost grows with the fleet. The §6.1 mix (three
//! hosts with two A100-40GB for each host with two A30-24GB) at each host count, one policy, no
//! warm-up, a short measured window; the table gives the wall time of each run beside its
//! requests and active hosts, so a cost that grows faster than the fleet shows.

use super::markdown::{self, Provenance};
use crate::policy;
use crate::scenario;
use crate::sim::Simulator;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct ScaleArgs {
    /// Host counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    pub hosts: Vec<usize>,
    /// Policy.
    #[arg(long, default_value = "ff")]
    pub policy: String,
    /// Hours simulated (from an empty fleet, no warm-up).
    #[arg(long, default_value_t = 1.0)]
    pub hours: f64,
    /// Offered load.
    #[arg(long, default_value_t = 0.85)]
    pub load: f64,
    /// Also write the table as Markdown to this file (with the command line, the commit and the
    /// date), atomically.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// One run: the fleet size, what happened and how long it took.
struct Row {
    hosts: usize,
    requests: u64,
    active_hosts: f64,
    wall_s: f64,
}

/// The largest fleet this experiment builds.
const MAX_HOSTS: usize = 2_000_000;

pub(crate) fn scale(a: &ScaleArgs) -> anyhow::Result<()> {
    if let Some(path) = &a.markdown {
        markdown::check_target(path)?;
    }
    anyhow::ensure!(
        a.hours.is_finite() && a.hours > 0.0 && a.hours <= 24.0,
        "--hours: must be in (0, 24], not {}",
        a.hours
    );
    anyhow::ensure!(
        a.load.is_finite() && a.load > 0.0 && a.load <= 2.0,
        "--load: must be in (0, 2], not {}",
        a.load
    );
    let mut rows = Vec::new();
    for &n in &a.hosts {
        anyhow::ensure!(
            (4..=MAX_HOSTS).contains(&n),
            "--hosts: {n} is outside 4..={MAX_HOSTS}"
        );
        let a100 = n * 3 / 4;
        let text = format!(
            "name = \"scale-{n}\"\nstart = \"2026-01-05T00:00:00Z\"\n\n\
             [[host_group]]\nprefix = \"a100-\"\ncount = {a100}\ncores = 80\nram_gb = 512\n\
             gpus = [\"a100-40gb\", \"a100-40gb\"]\n\n\
             [[host_group]]\nprefix = \"a30-\"\ncount = {}\ncores = 80\nram_gb = 512\n\
             gpus = [\"a30-24gb\", \"a30-24gb\"]\n\n\
             [workload]\nload = {}\nseed = 1\nwarmup_h = 0\nmeasure_h = {}\n",
            n - a100,
            a.load,
            a.hours
        );
        let s = scenario::parse(&text, &format!("scale-{n}"))?;
        let p = policy::by_name(&a.policy, &s.policy)?;
        let t = Instant::now();
        let mut sim = Simulator::new(&s, p)?;
        sim.run();
        let m = sim.metrics();
        let row = Row {
            hosts: n,
            requests: m.requests,
            active_hosts: m.active_hosts,
            wall_s: t.elapsed().as_secs_f64(),
        };
        eprintln!(
            "{} hosts: {} requests, {:.0} active hosts, {:.2} s",
            row.hosts, row.requests, row.active_hosts, row.wall_s
        );
        rows.push(row);
    }
    let table = render(&rows);
    print!("{table}");
    if let Some(path) = &a.markdown {
        let prov = Provenance::now();
        let mut md = String::new();
        let _ = writeln!(md, "# Simulation cost against fleet size\n");
        let _ = writeln!(
            md,
            "`{}` from an empty fleet of the §6.1 mix (3 hosts with two A100-40GB for each host \
             with two A30-24GB), load {}, {} h, no warm-up; wall time of the whole run (fleet \
             built, workload generated, simulated), release build, one thread.\n",
            a.policy, a.load, a.hours
        );
        let _ = writeln!(md, "- command: `{}`", prov.command);
        let _ = writeln!(md, "- commit: {}", prov.commit);
        let _ = writeln!(md, "- date: {}\n", prov.date);
        md.push_str(&table);
        markdown::write(path, &md)?;
    }
    Ok(())
}

fn render(rows: &[Row]) -> String {
    let mut out = String::from("| hosts | requests | active hosts (mean) | wall s | µs per request |\n");
    out.push_str("|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let per = 1e6 * r.wall_s / r.requests.max(1) as f64;
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {:.2} | {:.1} |",
            r.hosts, r.requests, r.active_hosts, r.wall_s, per
        );
    }
    out
}
