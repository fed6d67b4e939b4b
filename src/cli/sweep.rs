//! `migplan sweep SCENARIO --policies .. --loads .. --seeds ..`: every combination as an
//! independent run, in parallel on all cores; one CSV row per run, means and 95 % confidence
//! intervals per (policy, load), and Fig. 4's four panels as an SVG (§6.4).
//!
//! A run depends only on (scenario, policy, load, seed), so a sweep larger than one machine can
//! be split across a batch system: `--shard K/N` runs the K-th of N disjoint parts of the grid
//! (parts count from 1), and `--aggregate` merges the parts' rows into the runs, the summary and
//! the figure. Given the same scenario and grid, the merge puts the rows back in the grid's
//! order and checks that every run is there once, so its files are byte-identical to a
//! one-machine run's, except the timing columns `wall_s`, `call_s_median` and `call_s_p95`,
//! which measure the machine and differ between any two runs.

use super::experiment::markdown;
use super::runstats::{summarize, RunValues, METRICS};
use super::simulate::{self, LateBar, Overrides, CSV_COLUMNS};
use crate::scenario;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML); not needed with --aggregate.
    #[arg(required_unless_present = "aggregate")]
    pub scenario: Option<PathBuf>,
    /// Policies, comma-separated (e.g. ff,mfi,tc).
    #[arg(long, value_delimiter = ',', default_value = "ff")]
    pub policies: Vec<String>,
    /// Offered loads, comma-separated (default: the scenario's).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub loads: Vec<f64>,
    /// Seeds: a list `1,2,3` or a range `1..5` (inclusive).
    #[arg(long)]
    pub seeds: Option<String>,
    #[command(flatten)]
    pub run: simulate::RunArgs,
    /// Parallel runs (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write runs.csv, summary.csv and fig4.svg into this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the means and 95 % confidence intervals per (policy, load) as CSV here.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Write Fig. 4's four panels as SVG here.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Instead of running, merge run rows from these CSV files (the parts of a split sweep).
    /// With the scenario and the same grid options, rows go back in the grid's order and every
    /// run of the grid must be there exactly once.
    #[arg(long, num_args = 1..)]
    pub aggregate: Vec<PathBuf>,
    /// Run only the K-th of N disjoint parts of the grid, K in 1..=N (a Kubernetes completion
    /// index i is part i+1; a Slurm array `--array=1-N` gives K directly). Run i of the grid, in
    /// (policy, load, seed) order from 0, belongs to part i mod N + 1.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Also write the summary as Markdown to this file (with the paper's Table 8 values where
    /// they exist, the command line, the commit and the date), atomically.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// A `[policy]` setting as KEY=VALUE in TOML, applied to the scenario before every run
    /// (`--policy-set node_limit=1000`); checked as in a scenario file.
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
    /// Regimes to compare (static-layouts, dynamic): runs the grid of regimes, device plugin
    /// choices, planner periods, hysteresis and menus instead of the policy grid; a table
    /// (with --markdown) and drains against pending pod-hours (with --svg).
    #[arg(long, value_delimiter = ',')]
    pub regimes: Vec<String>,
    /// With --regimes: planner periods in minutes.
    #[arg(long, value_delimiter = ',', requires = "regimes")]
    pub periods: Vec<f64>,
    /// With --regimes: hysteresis values (consecutive identical plans before a change).
    #[arg(long, value_delimiter = ',', requires = "regimes")]
    pub hysteresis: Vec<u32>,
    /// With --regimes: menus, `assets` (assets/layouts.toml) or mig-parted config files.
    #[arg(long, value_delimiter = ',', requires = "regimes")]
    pub menus: Vec<String>,
    /// With --regimes: device plugin choices (first-index, packed).
    #[arg(long, value_delimiter = ',', requires = "regimes")]
    pub plugins: Vec<String>,
    /// With --regimes: hours between restart-based defragmentation passes of dynamic MIG, one
    /// dynamic row each (0: none).
    #[arg(
        long = "defrag-every",
        value_delimiter = ',',
        requires = "regimes",
        value_name = "H"
    )]
    pub defrag_every: Vec<f64>,
    /// With --out: go on from the runs an interrupted sweep into the same folder finished
    /// (`runs.partial.csv`, rewritten after every run) instead of running them again. The
    /// settings must be the same; without this flag, a folder holding such runs is an error.
    #[arg(long)]
    pub resume: bool,
}

/// Parses `1..5` (inclusive) or `1,2,3`.
pub(crate) fn parse_seeds(s: &str) -> anyhow::Result<Vec<u64>> {
    let s = s.trim();
    if let Some((a, b)) = s.split_once("..") {
        let a: u64 = a
            .trim()
            .parse()
            .with_context(|| format!("--seeds `{s}`: bad start"))?;
        let b: u64 = b
            .trim()
            .trim_start_matches('=')
            .parse()
            .with_context(|| format!("--seeds `{s}`: bad end"))?;
        if b < a {
            bail!("--seeds `{s}`: the range is empty");
        }
        let n = u128::from(b - a) + 1;
        if n > u128::from(crate::limits::MAX_SEEDS) {
            bail!(
                "--seeds `{s}`: {n} seeds; a sweep runs at most {} (docs/limits.md)",
                crate::limits::MAX_SEEDS
            );
        }
        return Ok((a..=b).collect());
    }
    let n = s.split(',').count();
    if n as u64 > crate::limits::MAX_SEEDS {
        bail!(
            "--seeds: {n} seeds; a sweep runs at most {} (docs/limits.md)",
            crate::limits::MAX_SEEDS
        );
    }
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<u64>()
                .with_context(|| format!("--seeds `{s}`: `{x}` is not a seed"))
        })
        .collect()
}

/// One of N disjoint parts of a sweep's grid, numbered from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: usize,
    pub n: usize,
}

impl Shard {
    /// Parses `K/N` with 1 <= K <= N.
    pub fn parse(s: &str) -> anyhow::Result<Shard> {
        let bad = || anyhow::anyhow!("--shard `{s}`: expected K/N, the K-th of N parts (1 <= K <= N)");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        if n == 0 {
            bail!("--shard `{s}`: N must be at least 1");
        }
        if k == 0 || k > n {
            bail!("--shard `{s}`: K must be in 1..={n} (parts count from 1: Kubernetes completion index i is part i+1)");
        }
        Ok(Shard { k, n })
    }

    /// Whether run `i` of the grid (counted from 0) belongs to this part.
    pub fn owns(&self, i: usize) -> bool {
        i % self.n == self.k - 1
    }
}

/// One run of a sweep's grid: (policy, load, seed).
pub(crate) type GridRun = (String, f64, u64);

/// The grid of a sweep in run order: policies, then loads, then seeds, as given on the command
/// line. A policy, load or seed given twice is an error (its runs would be counted twice).
pub fn grid(base: &scenario::Scenario, a: &Args) -> anyhow::Result<Vec<GridRun>> {
    let mut policies: Vec<String> = Vec::new();
    for p in &a.policies {
        crate::policy::by_name(p, &base.policy)?;
        let p = p.to_ascii_lowercase();
        if policies.contains(&p) {
            bail!("--policies: `{p}` is given twice");
        }
        policies.push(p);
    }
    let loads = if a.loads.is_empty() {
        vec![base.workload.load]
    } else {
        a.loads.clone()
    };
    for (i, l) in loads.iter().enumerate() {
        if loads[..i].contains(l) {
            bail!("--loads: {l} is given twice");
        }
    }
    let seeds = match &a.seeds {
        Some(s) => parse_seeds(s)?,
        None => vec![base.workload.seed],
    };
    for (i, s) in seeds.iter().enumerate() {
        if seeds[..i].contains(s) {
            bail!("--seeds: seed {s} is given twice");
        }
    }
    let mut runs = Vec::new();
    for p in &policies {
        for &l in &loads {
            for &s in &seeds {
                runs.push((p.clone(), l, s));
            }
        }
    }
    Ok(runs)
}

/// The values of a run from its CSV line in [`CSV_COLUMNS`] order (the line `Row::csv` writes).
fn values_of_line(line: &str) -> anyhow::Result<RunValues> {
    let header: Vec<String> = CSV_COLUMNS.iter().map(|c| c.to_string()).collect();
    Ok(parse_row(&header, "a finished run", line, csv_fields(line))?.values)
}

/// The fields of a CSV line: a field in double quotes may hold commas, and `""` in it is one
/// quote (how `Row::csv` writes a scenario name with a comma or a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.trim().is_empty() => {
                field.clear();
                quoted = true;
            }
            (',', false) => out.push(std::mem::take(&mut field).trim().to_string()),
            _ => field.push(c),
        }
    }
    out.push(field.trim().to_string());
    out
}

/// Reads run rows written by `sweep` or `simulate --csv` (header lines may repeat).
pub fn read_rows(path: &Path) -> anyhow::Result<Vec<RunValues>> {
    Ok(read_file_rows(path)?.into_iter().map(|r| r.values).collect())
}

/// A run row as read from a file: where it is, its text, whether its header is this version's
/// [`CSV_COLUMNS`], its scenario and its values.
struct FileRow {
    at: String,
    line: String,
    standard: bool,
    scenario: String,
    values: RunValues,
}

fn read_file_rows(path: &Path) -> anyhow::Result<Vec<FileRow>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let file = path.display().to_string();
    let mut header: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let cells = csv_fields(line);
        if cells.first().map(String::as_str) == Some("scenario") {
            header = Some(cells);
            continue;
        }
        let Some(h) = &header else {
            bail!("{file}:{line_no}: a row before the header line");
        };
        out.push(parse_row(h, &format!("{file}:{line_no}"), line, cells)?);
    }
    Ok(out)
}

/// One run row under `header`: its text `line` and its `cells` ([`csv_fields`] of it); `at`
/// names where it is (`FILE:LINE`) in errors.
fn parse_row(header: &[String], at: &str, line: &str, cells: Vec<String>) -> anyhow::Result<FileRow> {
    if cells.len() != header.len() {
        bail!("{at}: expected {} fields, found {}", header.len(), cells.len());
    }
    let get = |name: &str| -> anyhow::Result<&str> {
        header
            .iter()
            .position(|c| c == name)
            .map(|i| cells[i].as_str())
            .with_context(|| format!("{at}: no column `{name}`"))
    };
    let policy = get("policy")?.to_string();
    let load: f64 = get("load")?
        .parse()
        .with_context(|| format!("{at}: field `load` is not a number"))?;
    let seed: u64 = get("seed")?
        .parse()
        .with_context(|| format!("{at}: field `seed` is not a whole number"))?;
    let mut values = BTreeMap::new();
    for (m, _) in METRICS {
        if let Ok(s) = get(m) {
            let v: f64 = s
                .parse()
                .with_context(|| format!("{at}: field `{m}`: `{s}` is not a number"))?;
            values.insert(m.to_string(), v);
        }
    }
    Ok(FileRow {
        at: at.to_string(),
        line: line.to_string(),
        standard: header.iter().map(String::as_str).eq(CSV_COLUMNS.iter().copied()),
        scenario: get("scenario")?.to_string(),
        values: RunValues {
            policy,
            load,
            seed,
            values,
        },
    })
}

/// The place of row `r` in `runs`, the runs of a grid (or of a part of it) of scenario `name`.
fn grid_position(r: &FileRow, name: &str, runs: &[GridRun]) -> anyhow::Result<usize> {
    let v = &r.values;
    if r.scenario != name {
        bail!("{}: a run of scenario `{}`, not `{name}`", r.at, r.scenario);
    }
    runs.iter()
        .position(|(p, l, s)| *p == v.policy && *l == v.load && *s == v.seed)
        .with_context(|| {
            format!(
                "{}: run {} load {} seed {} is not in this sweep's grid (or part)",
                r.at, v.policy, v.load, v.seed
            )
        })
}

/// The rows of a split sweep, merged: the text of `runs.csv` (when every file has this
/// version's columns) and the values, in the grid's order when a grid is given (which must
/// then hold every row, and every run of which must be there), else in file order. A run found
/// twice is an error either way.
struct Merged {
    csv: Option<String>,
    runs: Vec<RunValues>,
}

fn merge(files: &[PathBuf], grid: Option<(&str, &[GridRun])>) -> anyhow::Result<Merged> {
    let mut rows = Vec::new();
    for f in files {
        rows.extend(read_file_rows(f)?);
    }
    let mut seen: BTreeMap<(String, String, u64, u64), String> = BTreeMap::new();
    for r in &rows {
        let v = &r.values;
        let key = (r.scenario.clone(), v.policy.clone(), v.load.to_bits(), v.seed);
        if let Some(first) = seen.insert(key, r.at.clone()) {
            bail!(
                "{}: run {} load {} seed {} is also at {first}",
                r.at,
                v.policy,
                v.load,
                v.seed
            );
        }
    }
    if let Some((name, runs)) = grid {
        let mut slots: Vec<Option<FileRow>> = runs.iter().map(|_| None).collect();
        for r in rows {
            let i = grid_position(&r, name, runs)?;
            slots[i] = Some(r);
        }
        rows = Vec::new();
        for (slot, (p, l, s)) in slots.into_iter().zip(runs) {
            match slot {
                Some(r) => rows.push(r),
                None => bail!("run {p} load {l} seed {s} is missing from the --aggregate files"),
            }
        }
    }
    let csv = rows.iter().all(|r| r.standard).then(|| {
        let mut text = CSV_COLUMNS.join(",");
        text.push('\n');
        for r in &rows {
            text.push_str(&r.line);
            text.push('\n');
        }
        text
    });
    Ok(Merged {
        csv,
        runs: rows.into_iter().map(|r| r.values).collect(),
    })
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if !a.regimes.is_empty() {
        if a.out.is_some() || a.summary.is_some() || a.shard.is_some() || !a.aggregate.is_empty() || a.resume
        {
            bail!("--regimes writes a table (--markdown) and an SVG (--svg); --out, --summary, --shard, --aggregate and --resume go with --policies");
        }
        let Some(scenario) = a.scenario.as_deref() else {
            bail!("--regimes: give the scenario");
        };
        let seeds = match &a.seeds {
            Some(s) => parse_seeds(s)?,
            None => vec![1],
        };
        return super::regime_sweep::sweep(super::regime_sweep::SweepGrid {
            scenario,
            regimes: &a.regimes,
            periods: &a.periods,
            hysteresis: &a.hysteresis,
            menus: &a.menus,
            plugins: &a.plugins,
            defrag_every: &a.defrag_every,
            seeds,
            loads: &a.loads,
            run: &a.run,
            jobs: a.jobs,
            markdown: a.markdown.as_deref(),
            svg: a.svg.as_deref(),
        });
    }
    let shard = a.shard.as_deref().map(Shard::parse).transpose()?;
    if shard.is_some() {
        if !a.aggregate.is_empty() {
            bail!("--shard runs one part and --aggregate merges the parts: give one of them");
        }
        if a.summary.is_some() || a.svg.is_some() || a.markdown.is_some() {
            bail!("--shard writes run rows only; --summary, --svg and --markdown go with --aggregate");
        }
    }
    if a.resume && (a.out.is_none() || !a.aggregate.is_empty()) {
        bail!("--resume goes on from the finished runs in the --out folder of a sweep that runs: give --out DIR (and no --aggregate)");
    }
    if let Some(p) = &a.markdown {
        markdown::check_target(p)?;
    }
    let (summary_path, svg_path, runs_path) = match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
            (
                Some(dir.join("summary.csv")),
                Some(dir.join("fig4.svg")),
                Some(dir.join("runs.csv")),
            )
        }
        None => (a.summary.clone(), a.svg.clone(), None),
    };
    let runs: Vec<RunValues> = if !a.aggregate.is_empty() {
        let merged = match &a.scenario {
            Some(path) => {
                let base = simulate::load_scenario(path, &a.run)?;
                let runs = grid(&base, &a)?;
                merge(&a.aggregate, Some((&base.name, &runs)))?
            }
            None => merge(&a.aggregate, None)?,
        };
        if let Some(p) = &runs_path {
            let Some(text) = &merged.csv else {
                bail!(
                    "--aggregate: some files do not have this version's run columns, so they cannot be merged into {}",
                    p.display()
                );
            };
            scenario::write_atomic(p, text.as_bytes())?;
        }
        merged.runs
    } else {
        let Some(path) = &a.scenario else {
            bail!("a scenario file is needed (or --aggregate FILES)");
        };
        let rows = sweep(path, &a, shard)?;
        let mut text = CSV_COLUMNS.join(",");
        text.push('\n');
        for (line, _) in &rows {
            text.push_str(line);
            text.push('\n');
        }
        match &runs_path {
            Some(p) => {
                scenario::write_atomic(p, text.as_bytes())?;
                if let Some(dir) = &a.out {
                    Journal::remove(dir);
                }
            }
            None => print!("{text}"),
        }
        if shard.is_some() {
            return Ok(());
        }
        rows.into_iter().map(|(_, v)| v).collect()
    };
    let summary = summarize(&runs);
    if let Some(p) = &summary_path {
        scenario::write_atomic(p, summary.csv().as_bytes())?;
    }
    if let Some(p) = &svg_path {
        summary.svg(p)?;
    }
    if let Some(p) = &a.markdown {
        markdown::write(p, &markdown::sweep(&summary, &markdown::Provenance::now()))?;
    }
    if runs_path.is_some() || !a.aggregate.is_empty() {
        print!("{}", summary.table());
    }
    Ok(())
}

/// How the line of a journal's settings that holds every workload and policy setting begins:
/// their values as this binary runs them, each one written whether at its default or not.
const EFFECTIVE: &str = "# effective: ";

/// Whether a journal's settings `before` are the settings `now` of the sweep that resumes it:
/// the same text, or, from another binary that writes its scenario otherwise (a key left out
/// at its default, or written although it is), the same warm-up and hours, the same line of
/// every workload and policy value ([`EFFECTIVE`]; a setting whose default changed shows
/// there), and the same scenario when this binary reads both texts.
fn same_settings(before: &str, now: &str) -> bool {
    if before == now {
        return true;
    }
    // (scenario text, warm-up and hours line, effective line)
    let split = |t: &str| -> Option<(String, String, String)> {
        let (toml, rest) = t.rsplit_once("\n# --warmup ")?;
        let (run, effective) = rest.split_once('\n')?;
        let effective = effective.strip_prefix(EFFECTIVE)?;
        Some((toml.to_string(), run.to_string(), effective.to_string()))
    };
    let (Some((b_toml, b_run, b_eff)), Some((n_toml, n_run, n_eff))) = (split(before), split(now)) else {
        return false;
    };
    let read = |t: &str| scenario::parse(t, "journal").and_then(|s| s.to_toml()).ok();
    b_run == n_run && b_eff == n_eff && read(&b_toml).is_some_and(|b| Some(b) == read(&n_toml))
}

/// The finished runs of a sweep into `--out DIR`: `DIR/runs.partial.csv` holds the rows of the
/// runs finished so far (rewritten atomically after each run) and `DIR/runs.partial.settings`
/// what they were run with (the scenario after `--policy-set` and `--trace`, the warm-up and the
/// hours). A sweep that finishes removes both; one that is killed leaves them for `--resume`.
struct Journal {
    rows: PathBuf,
    /// The job indices finished, with their CSV lines.
    done: Mutex<BTreeMap<usize, String>>,
}

impl Journal {
    const ROWS: &'static str = "runs.partial.csv";
    const SETTINGS: &'static str = "runs.partial.settings";

    /// Opens the journal of `dir` for `jobs`: with `resume`, the runs it holds are taken as
    /// finished (the settings must match and every row must be one of `jobs`); without it, a
    /// journal that holds runs is an error.
    fn open(
        dir: &Path,
        settings: &str,
        name: &str,
        jobs: &[GridRun],
        resume: bool,
    ) -> anyhow::Result<Journal> {
        let rows = dir.join(Self::ROWS);
        let settings_path = dir.join(Self::SETTINGS);
        let mut done = BTreeMap::new();
        if rows.exists() {
            let found = read_file_rows(&rows)?;
            if !resume {
                bail!(
                    "{}: {} finished runs of an interrupted sweep; add --resume to go on from them, or remove the file to start again",
                    rows.display(),
                    found.len()
                );
            }
            let before = std::fs::read_to_string(&settings_path).with_context(|| {
                format!(
                    "{}: cannot read (the settings of the runs in {})",
                    settings_path.display(),
                    rows.display()
                )
            })?;
            if !same_settings(&before, settings) {
                bail!(
                    "{}: the interrupted sweep ran with other settings (the scenario, --policy-set, --trace, --warmup or --hours differ); remove {} to start again",
                    settings_path.display(),
                    rows.display()
                );
            }
            for r in found {
                let v = &r.values;
                if !r.standard {
                    bail!(
                        "{}: not this version's run columns; remove the file to start again",
                        r.at
                    );
                }
                let i = grid_position(&r, name, jobs)
                    .map_err(|e| anyhow::anyhow!("{e}; remove the file to start again"))?;
                if done.insert(i, r.line).is_some() {
                    bail!(
                        "{}: run {} load {} seed {} is there twice",
                        r.at,
                        v.policy,
                        v.load,
                        v.seed
                    );
                }
            }
            eprintln!(
                "note: {}: {} of {} runs already finished; running the other {}",
                rows.display(),
                done.len(),
                jobs.len(),
                jobs.len() - done.len()
            );
        }
        scenario::write_atomic(&settings_path, settings.as_bytes())?;
        Self::save(&rows, &done)?;
        Ok(Journal {
            rows,
            done: Mutex::new(done),
        })
    }

    /// Records job `i` as finished with its CSV `line` and rewrites the rows file.
    fn finish(&self, i: usize, line: String) -> anyhow::Result<()> {
        let mut done = self
            .done
            .lock()
            .map_err(|_| anyhow::anyhow!("sweep journal poisoned"))?;
        done.insert(i, line);
        Self::save(&self.rows, &done)
    }

    fn save(path: &Path, done: &BTreeMap<usize, String>) -> anyhow::Result<()> {
        let mut text = CSV_COLUMNS.join(",");
        text.push('\n');
        for line in done.values() {
            text.push_str(line);
            text.push('\n');
        }
        scenario::write_atomic(path, text.as_bytes())
    }

    /// Removes the journal of `dir` once its runs are in `runs.csv`.
    fn remove(dir: &Path) {
        let _ = std::fs::remove_file(dir.join(Self::ROWS));
        let _ = std::fs::remove_file(dir.join(Self::SETTINGS));
    }
}

/// Runs every (policy, load, seed) combination of the grid, or of the given part of it, on
/// `jobs` threads; rows (CSV line and values) come back in grid order whatever order they
/// finished in. With `--out`, finished runs are kept in the folder's [`Journal`].
fn sweep(path: &Path, a: &Args, shard: Option<Shard>) -> anyhow::Result<Vec<(String, RunValues)>> {
    let mut base = simulate::load_scenario(path, &a.run)?;
    super::experiment::set_policy(&mut base, &a.policy_set)?;
    let all = grid(&base, a)?;
    let total = all.len();
    let jobs: Vec<GridRun> = all
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.owns(*i)))
        .map(|(_, r)| r)
        .collect();
    if let (Some(s), true) = (shard, jobs.is_empty()) {
        eprintln!("note: part {}/{} of a grid of {total} runs has no run", s.k, s.n);
    }
    // Check every combination's settings before starting any run.
    let mut scenarios = Vec::new();
    for (p, l, s) in &jobs {
        let mut sc = base.clone();
        simulate::apply(
            &mut sc,
            &Overrides {
                policy: Some(p.clone()),
                seed: Some(*s),
                load: Some(*l),
                hours: a.run.hours,
                warmup: a.run.warmup,
            },
        )?;
        scenarios.push(sc);
    }
    // A trace is read once up front so a malformed one stops the sweep before it starts.
    if let Some(sc) = scenarios.first() {
        crate::workload::Workload::new(&sc.workload, &sc.fleet, sc.now_s)?;
    }
    let journal = match &a.out {
        Some(dir) => {
            let settings = format!(
                "{}\n# --warmup {:?} --hours {:?}\n{EFFECTIVE}{:?} {:?}\n",
                base.to_toml()?,
                a.run.warmup,
                a.run.hours,
                base.workload,
                base.policy
            );
            Some(Journal::open(dir, &settings, &base.name, &jobs, a.resume)?)
        }
        None => None,
    };
    // Job i's CSV line once it is finished; the runs a resumed journal holds are finished.
    let mut lines: Vec<Option<anyhow::Result<String>>> = (0..jobs.len()).map(|_| None).collect();
    if let Some(j) = &journal {
        let done = j
            .done
            .lock()
            .map_err(|_| anyhow::anyhow!("sweep journal poisoned"))?;
        for (&i, line) in done.iter() {
            lines[i] = Some(Ok(line.clone()));
        }
    }
    let todo: Vec<usize> = (0..jobs.len()).filter(|&i| lines[i].is_none()).collect();
    let threads = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
        .clamp(1, todo.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results = Mutex::new(lines);
    let mut bar = LateBar::new(jobs.len() as u64, "sweep");
    let resumed = jobs.len() - todo.len();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (next, done, results, scenarios, jobs, todo, journal) =
                (&next, &done, &results, &scenarios, &jobs, &todo, &journal);
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = todo.get(k) else {
                    break;
                };
                let row = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    simulate::run_one(&scenarios[i], &jobs[i].0, &mut |_| {})
                }))
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the run panicked (a bug)")));
                let line = row.and_then(|r| {
                    let line = r.csv();
                    if let Some(j) = journal {
                        j.finish(i, line.clone())?;
                    }
                    Ok(line)
                });
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(line);
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        while done.load(Ordering::SeqCst) < todo.len() {
            bar.set((resumed + done.load(Ordering::SeqCst)) as u64);
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    });
    bar.finish();
    let results = results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a sweep worker panicked"))?;
    let mut rows = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (p, l, s) = &jobs[i];
        match r {
            Some(Ok(line)) => {
                let values = values_of_line(&line)?;
                rows.push((line, values));
            }
            Some(Err(e)) => return Err(e.context(format!("run {p} load {l} seed {s}"))),
            None => bail!("run {p} load {l} seed {s} did not finish"),
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::csv_fields;

    #[test]
    fn csv_fields_read_quoted_fields_as_written() {
        assert_eq!(csv_fields("a, b ,c"), ["a", "b", "c"]);
        assert_eq!(
            csv_fields(r#""rack ""A"", row 2",ff,1"#),
            [r#"rack "A", row 2"#, "ff", "1"]
        );
        assert_eq!(csv_fields(r#"x,"",y"#), ["x", "", "y"]);
        assert_eq!(csv_fields(",,"), ["", "", ""]);
        // A quote inside an unquoted field is kept as text.
        assert_eq!(csv_fields(r#"a"b,c"#), [r#"a"b"#, "c"]);
    }
}
