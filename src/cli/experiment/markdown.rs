//! `migplan experiment ... --markdown FILE`: an experiment's table as a Markdown file that stands
//! on its own, as the files under `docs/results/` do: our figures with the paper's beside them
//! in parentheses, and the provenance (command line, commit, date) that makes them reproducible.
//! The file is written atomically (a temporary file, synced, then renamed), so a run that fails or is
//! interrupted never leaves half a table behind.

use super::{
    paper_call_vms, Fig6Args, Fig6Row, GapArgs, GapRow, PaperRow, Table8Args, Table8Row, PAPER_FF_085,
    PAPER_HOSTS, PAPER_TABLE10, PAPER_TABLE8,
};
use crate::cli::runstats::{MeansByLoad, METRICS};
use crate::scenario::Scenario;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where a table came from.
pub(crate) struct Provenance {
    /// The command line, program name shortened to `migplan`.
    pub command: String,
    /// `git rev-parse --short HEAD` of the working directory, "unknown" outside a checkout,
    /// with "+ uncommitted changes" when tracked files differ from it.
    pub commit: String,
    /// When the run ended, UTC.
    pub date: String,
}

impl Provenance {
    /// The provenance of this process's run, taken now.
    pub fn now() -> Self {
        let mut args = std::env::args();
        let mut parts = vec!["migplan".to_string()];
        args.next();
        parts.extend(args.map(|a| quote(&a)));
        Provenance {
            command: parts.join(" "),
            commit: commit(),
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        }
    }

    pub(super) fn header(&self, out: &mut String) {
        let _ = writeln!(out, "- command: `{}`", self.command);
        let _ = writeln!(out, "- commit: {}", self.commit);
        let _ = writeln!(out, "- date: {}", self.date);
    }
}

/// A shell word: quoted when it holds anything but plain characters.
fn quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./,=:@+%".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The commit checked out in the working directory, or "unknown".
fn commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(c) if !c.is_empty() => {
            let dirty =
                git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c} + uncommitted changes")
            } else {
                c
            }
        }
        _ => "unknown".to_string(),
    }
}

/// Fails before a long run when FILE could not be written afterwards: its folder is missing.
pub(crate) fn check_target(path: &Path) -> anyhow::Result<()> {
    check_target_of("--markdown", path)
}

/// [`check_target`] for the file of option `flag`.
pub(crate) fn check_target_of(flag: &str, path: &Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    anyhow::ensure!(
        dir.is_dir(),
        "{flag} {}: folder {} does not exist",
        path.display(),
        dir.display()
    );
    Ok(())
}

/// Writes `text` to `path` atomically (see [`crate::fsutil::write_atomic`]).
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| anyhow::anyhow!("--markdown {e}"))
}

fn label(policy: &str) -> String {
    match policy {
        "ff" => "FF".to_string(),
        "mfi" => "MFI".to_string(),
        "tc" => "TC".to_string(),
        "origamig" => "OrigaMIG".to_string(),
        "opt" => "OPT".to_string(),
        p => p.to_string(),
    }
}

fn list<T: std::fmt::Display>(xs: &[T]) -> String {
    xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// `ours (paper)`, or `ours (-)` where the paper has no value.
fn beside(ours: f64, paper: Option<f64>, prec: usize) -> String {
    match paper {
        Some(p) => format!("{ours:.prec$} ({p:.prec$})"),
        None => format!("{ours:.prec$} (-)"),
    }
}

/// Table 8 (§6.4): one row per load and policy, the paper's value in parentheses (active hosts,
/// switch-ons and migrations scaled to the fleet, energy also to the measured hours).
pub(super) fn table8(a: &Table8Args, base: &Scenario, rows: &[Table8Row], p: &Provenance) -> String {
    let hosts = base.fleet.hosts.len() as f64;
    let scale = hosts / PAPER_HOSTS;
    let warmup_h = a.runs.warmup.unwrap_or(base.workload.warmup_h);
    let measured_h = a.runs.hours.unwrap_or(base.workload.measure_h);
    let mut out = String::new();
    let _ = writeln!(out, "# Table 8 (§6.4) on {} ({hosts} hosts)\n", base.name);
    p.header(&mut out);
    let _ = writeln!(
        out,
        "- seeds: {}; loads: {}; {warmup_h} h warm-up, {measured_h} h measured\n",
        list(&a.runs.seeds),
        list(&a.loads)
    );
    let _ = writeln!(
        out,
        "Means over the seeds; in parentheses the paper's Table 8 (128 hosts, five seeds), active \
         hosts, switch-ons and migrations scaled by {hosts}/128, energy by {hosts}/128 and by \
         {measured_h} h / 72 h.\n"
    );
    out.push_str(
        "| load | policy | accept. % | active hosts | active GPUs % | packing % | energy MWh | \
         switch/h | migr./h | wait s | calls/h | call median / p95 s |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let paper = PAPER_TABLE8
            .iter()
            .find(|q| q.load == r.load && q.policy == r.policy);
        let pv = |f: &dyn Fn(&PaperRow) -> f64, s: f64| paper.map(|q| f(q) * s);
        let calls = if r.calls_per_h > 0.0 {
            (
                format!("{:.1}", r.calls_per_h),
                format!("{:.2} / {:.2}", r.call_s_median, r.call_s_p95),
            )
        } else {
            ("-".to_string(), "-".to_string())
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.load,
            label(&r.policy),
            beside(r.acceptance_pct, pv(&|q| q.accept_pct, 1.0), 1),
            beside(r.active_hosts, pv(&|q| q.active_pms, scale), 2),
            beside(r.active_gpus_pct, pv(&|q| q.active_gpus_pct, 1.0), 1),
            beside(r.packing_pct, pv(&|q| q.packing_pct, 1.0), 1),
            beside(r.energy_mwh, pv(&|q| q.energy_mwh, scale * measured_h / 72.0), 2),
            beside(r.switch_ons_per_h, pv(&|q| q.switch_per_h, scale), 1),
            beside(r.migrations_per_h, pv(&|q| q.migr_per_h, scale), 2),
            beside(r.wait_s, pv(&|q| q.wait_s, 1.0), 1),
            calls.0,
            calls.1,
        );
    }
    for &l in &a.loads {
        let get = |p: &str| rows.iter().find(|r| r.load == l && r.policy == p);
        if let (Some(ff), Some(tc), Some(o)) = (get("ff"), get("tc"), get("origamig")) {
            let _ = writeln!(
                out,
                "\nLoad {l}: OrigaMIG keeps {:.1} % fewer hosts active than FF ({:.2} against {:.2}) and \
                 makes {:.1} % fewer moves than TC ({:.2} against {:.2} per hour).",
                100.0 * (ff.active_hosts - o.active_hosts) / ff.active_hosts,
                o.active_hosts,
                ff.active_hosts,
                100.0 * (tc.migrations_per_h - o.migrations_per_h) / tc.migrations_per_h,
                o.migrations_per_h,
                tc.migrations_per_h
            );
        }
    }
    out
}

/// Fig. 6 / Table 10 (§6.6): one row per policy setting, the paper's value in parentheses.
pub(super) fn fig6(a: &Fig6Args, base: &Scenario, rows: &[Fig6Row], p: &Provenance) -> String {
    let hosts = base.fleet.hosts.len() as f64;
    let scale = hosts / PAPER_HOSTS;
    let warmup_h = a.runs.warmup.unwrap_or(base.workload.warmup_h);
    let measured_h = a.runs.hours.unwrap_or(base.workload.measure_h);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Fig. 6 / Table 10 (§6.6) on {} ({hosts} hosts), load {}\n",
        base.name, a.load
    );
    p.header(&mut out);
    let _ = writeln!(
        out,
        "- seeds: {}; {warmup_h} h warm-up, {measured_h} h measured\n",
        list(&a.runs.seeds)
    );
    let _ = writeln!(
        out,
        "Means over the seeds; in parentheses the paper's Table 10 (128 hosts, three seeds), \
         migrations, GB and active hosts scaled by {hosts}/128.\n"
    );
    out.push_str(
        "| policy | migr./h | GB/h | active hosts | fewer than FF % | accept. % | call median s | VMs per call |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let paper = PAPER_TABLE10.iter().find(|q| q.0 == r.policy && q.1 == r.setting);
        let (name, paper_active, paper_fewer) = match r.policy.as_str() {
            "tc" => (
                format!("TC every {} min", r.setting),
                paper.map(|q| q.4),
                paper.map(|q| 100.0 * (PAPER_FF_085 - q.4) / PAPER_FF_085),
            ),
            "origamig" => (
                format!("OrigaMIG δ = {}", r.setting),
                paper.map(|q| q.4),
                paper.map(|q| 100.0 * (PAPER_FF_085 - q.4) / PAPER_FF_085),
            ),
            other => (label(other), Some(PAPER_FF_085), Some(0.0)),
        };
        let (migr, gb) = match r.policy.as_str() {
            "ff" => (Some(0.0), Some(0.0)),
            _ => (paper.map(|q| q.2 * scale), paper.map(|q| q.3 * scale)),
        };
        let (call, vms) = if r.policy == "origamig" {
            (
                beside(r.call_s_median, paper.and_then(|q| q.5), 2),
                format!(
                    "{:.1} ({})",
                    r.call_vms_mean,
                    paper_call_vms(r.setting).unwrap_or("-")
                ),
            )
        } else {
            ("-".to_string(), "-".to_string())
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {:.1} | {call} | {vms} |",
            beside(r.migrations_per_h, migr, 1),
            beside(r.gb_per_h, gb, 0),
            beside(r.active_hosts, paper_active.map(|v| v * scale), 1),
            beside(r.fewer_than_ff_pct, paper_fewer, 1),
            r.acceptance_pct,
        );
    }
    out
}

/// Table 12 of the paper (§6.8): hosts, additional active PMs %, Eq. (5) gap %, median
/// OrigaMIG call s, median OPT s.
const PAPER_TABLE12: &[(usize, f64, f64, f64, f64)] = &[
    (8, 3.9, 0.54, 0.3, 0.3),
    (16, 4.1, 0.43, 0.9, 1.7),
    (32, 3.4, 0.33, 1.1, 1692.0),
];

/// Gap to OPT (§6.8, Table 12): one row per fleet size, the worst seed, the paper's row beside.
pub(super) fn gap_to_opt(a: &GapArgs, rows: &[GapRow], p: &Provenance) -> String {
    let mut out = String::new();
    out.push_str("# Gap to OPT (§6.8, Table 12)\n\n");
    p.header(&mut out);
    let _ = writeln!(
        out,
        "- seeds: {}; load {}; snapshots every {} h from {} h to {} h; OPT time limit {} s\n",
        list(&a.seeds),
        a.load,
        a.every_h,
        a.from_h,
        a.to_h,
        a.opt_time_limit
    );
    out.push_str(
        "The worst seed per size. Additional active hosts: (Σ OrigaMIG − Σ OPT) / Σ OPT over the \
         snapshots; Eq. 5 gap: (Σ OPT − Σ OrigaMIG) / Σ OPT, the worst single snapshot beside it. \
         In parentheses the paper's Table 12.\n\n",
    );
    out.push_str(
        "| hosts | seeds × snapshots | VMs (mean) | additional active hosts % | Eq. 5 gap % (worst snapshot) | \
         OrigaMIG call median / p95 s | OPT proven | OPT median s | OPT largest MIP gap % |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let paper = PAPER_TABLE12.iter().find(|q| q.0 == r.hosts);
        let _ = writeln!(
            out,
            "| {} | {} × {} | {:.1} | {} | {} ({:.2}) | {:.2} / {:.2} ({}) | {} of {} | {} | {:.2} |",
            r.hosts,
            r.seeds,
            r.snapshots,
            r.mean_vms,
            beside(r.extra_active_pct, paper.map(|q| q.1), 1),
            beside(r.eq5_gap_pct, paper.map(|q| q.2), 2),
            r.eq5_gap_max_pct,
            r.origamig_call_median_s,
            r.origamig_call_p95_s,
            paper.map_or("-".to_string(), |q| format!("{}", q.3)),
            r.opt_proven,
            r.snapshots,
            beside(r.opt_median_s, paper.map(|q| q.4), 1),
            100.0 * r.opt_max_mip_gap,
        );
    }
    out
}

/// `migplan sweep --markdown`: the means and 95 % confidence half-widths per (policy, load); at
/// the loads of the paper's Table 8 (0.75, 1.0) the paper's values of the metrics that do not
/// depend on the fleet's size in parentheses (acceptance, active hosts as a share of the fleet,
/// active GPUs, packing).
pub fn sweep(summary: &MeansByLoad, p: &Provenance) -> String {
    let cols = [
        "acceptance_pct",
        "active_hosts",
        "active_hosts_pct",
        "active_gpus_pct",
        "packing_pct",
        "energy_mwh",
        "switch_ons_per_h",
        "migrations_per_h",
        "wait_s_mean",
    ];
    let paper_of = |policy: &str, load: f64, col: &str| {
        let q = PAPER_TABLE8
            .iter()
            .find(|q| q.load == load && q.policy == policy)?;
        match col {
            "acceptance_pct" => Some(q.accept_pct),
            "active_hosts_pct" => Some(100.0 * q.active_pms / PAPER_HOSTS),
            "active_gpus_pct" => Some(q.active_gpus_pct),
            "packing_pct" => Some(q.packing_pct),
            _ => None,
        }
    };
    let mut out = String::from("# Sweep: means and 95 % confidence intervals per policy and load\n\n");
    p.header(&mut out);
    out.push_str(
        "\nMean ± the half-width of the 95 % confidence interval (Student t) over the runs of each \
         (policy, load); at loads 0.75 and 1.0 the paper's Table 8 value (128 hosts, five seeds) in \
         parentheses where it does not depend on the fleet's size.\n\n",
    );
    out.push_str("| policy | load | runs |");
    for c in cols {
        let label = METRICS.iter().find(|m| m.0 == c).map_or(c, |m| m.1);
        let _ = write!(out, " {label} |");
    }
    out.push_str("\n|---|---|---|");
    out.push_str(&"---|".repeat(cols.len()));
    out.push('\n');
    for g in &summary.groups {
        let _ = write!(out, "| {} | {} | {} |", label(&g.policy), g.load, g.n);
        for c in cols {
            let prec = if c == "energy_mwh" { 2 } else { 1 };
            let cell = match g.stats.get(c) {
                Some((m, ci)) => {
                    let mut cell = format!("{m:.prec$} ± {ci:.prec$}");
                    if let Some(v) = paper_of(&g.policy, g.load, c) {
                        let _ = write!(cell, " ({v:.1})");
                    }
                    cell
                }
                None => "-".to_string(),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}
