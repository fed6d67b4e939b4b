//! `migplan experiment big-nodes-frontier`: whole GPUs free against moves per hour on the grid
//! of `big-nodes` (docs/results/big-nodes-frontier.md). OrigaMIG runs at several rates of its
//! GPU compaction's account (`gpu_compaction_moves_per_departure`, moves earned per departure)
//! and TC at several compaction periods (`[policy.tc] compaction_min`), every other setting the
//! default. Each policy gives a curve of (moves per hour, whole GPUs free, active hosts), means
//! over the same runs; each OrigaMIG point is then read beside TC's curve at the same moves per
//! hour (linear between TC's two nearest points), and TC's moves are read at OrigaMIG's whole
//! GPUs free. So the comparison holds at equal moves, where `big-nodes` compares each policy at
//! its default.
//!
//! Runs share `big-nodes`' journal format (`--journal`): a run already there is not run again,
//! and a grid can be run part by part (`--max-runs`).

use super::big_nodes::{self, GridArgs, Job, Part, Run};
use super::markdown::{self, Provenance};
use crate::scenario;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct FrontierArgs {
    #[command(flatten)]
    pub grid: GridArgs,
    /// OrigaMIG's points: moves its GPU compaction earns per departure
    /// (`gpu_compaction_moves_per_departure`; the default is 0.41).
    #[arg(long, value_delimiter = ',', default_value = "0.2,0.3,0.41,0.5,0.7,0.8,1.0")]
    pub rates: Vec<f64>,
    /// TC's points: its compaction period in minutes (`[policy.tc] compaction_min`; the
    /// default is 15).
    #[arg(long, value_delimiter = ',', default_value = "60,45,30,20,15,10")]
    pub tc_periods: Vec<f64>,
    /// Draw both curves (whole GPUs free against moves per hour) as SVG to this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// A `[policy]` setting of OrigaMIG's points as KEY=VALUE in TOML: a variant's curve against
    /// TC's (each point's rate is set after these; none for the default).
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
}

/// One point of a curve: a policy with one value of its knob.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Knob {
    /// OrigaMIG with `gpu_compaction_moves_per_departure` at this rate.
    Rate(f64),
    /// TC with `compaction_min` at this period.
    Period(f64),
}

impl Knob {
    fn policy(self) -> &'static str {
        match self {
            Knob::Rate(_) => "origamig",
            Knob::Period(_) => "tc",
        }
    }

    fn setting(self) -> String {
        match self {
            Knob::Rate(r) => format!("gpu_compaction_moves_per_departure={r}"),
            Knob::Period(m) => format!("tc.compaction_min={m}"),
        }
    }

    /// The point's label; `variant`: OrigaMIG's points have settings of `--policy-set`, so
    /// none of them is the default.
    fn label(self, variant: bool) -> String {
        match self {
            Knob::Rate(r)
                if !variant && r == crate::policy_settings::DEFAULT_GPU_COMPACTION_MOVES_PER_DEPARTURE =>
            {
                format!("{r} a departure (default)")
            }
            Knob::Rate(r) => format!("{r} a departure"),
            Knob::Period(m) if m == crate::policy_settings::TcSettings::default().compaction_min => {
                format!("every {m} min (default)")
            }
            Knob::Period(m) => format!("every {m} min"),
        }
    }
}

/// The means of one point over its finished runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub runs: usize,
    pub moves_per_h: f64,
    pub free_gpus: f64,
    pub free_tuned: f64,
    pub free_held_out: f64,
    pub hosts: f64,
    pub acceptance_pct: f64,
}

fn plan(a: &FrontierArgs, knobs: &[Knob]) -> anyhow::Result<Vec<(usize, Job)>> {
    let mut jobs = Vec::new();
    for path in &a.grid.scenarios {
        let base = scenario::load(path)?;
        for (i, &knob) in knobs.iter().enumerate() {
            // OrigaMIG's key holds its whole table already; TC's only the windows.
            let extra = match knob {
                Knob::Period(m) => format!("; tc compaction_min = {m}"),
                Knob::Rate(_) => String::new(),
            };
            // A variant's settings, then the point's own (which wins over a rate among them).
            let set: Vec<String> = match knob {
                Knob::Rate(_) => a.policy_set.iter().cloned().chain([knob.setting()]).collect(),
                Knob::Period(_) => vec![knob.setting()],
            };
            for cell in a.grid.cells() {
                jobs.push((i, a.grid.job(&base, knob.policy(), cell, &set, &extra)?));
            }
        }
    }
    Ok(jobs)
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (n, s) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// A point's means over its runs (`None` when it has none).
fn point_of(runs: &[(Part, &Run)]) -> Option<Point> {
    if runs.is_empty() {
        return None;
    }
    let all = || runs.iter().map(|(_, r)| *r);
    let part = |p: Part| mean(runs.iter().filter(|(q, _)| *q == p).map(|(_, r)| r.free_gpus));
    Some(Point {
        runs: runs.len(),
        moves_per_h: mean(all().map(|r| r.migrations_per_h)),
        free_gpus: mean(all().map(|r| r.free_gpus)),
        free_tuned: part(Part::Tuned),
        free_held_out: part(Part::HeldOut),
        hosts: mean(all().map(|r| r.active_hosts)),
        acceptance_pct: mean(all().map(|r| r.acceptance_pct)),
    })
}

/// The value of `y` at `x` on the piecewise linear curve through `pts` (x, y), taken in order of
/// x; `None` outside the curve's range of x or with fewer than two points. Where the curve
/// meets `x` at several places (it need not rise), the first segment in order of x answers.
pub(crate) fn interpolate(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    let mut p: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .collect();
    p.sort_by(|a, b| a.0.total_cmp(&b.0));
    p.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x < x0 || x > x1 {
            return None;
        }
        if x1 == x0 {
            return Some(y0);
        }
        Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    })
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

fn signed(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |x| format!("{x:+.2}"))
}

/// The curves and the reading at equal moves, as Markdown tables.
pub(crate) fn render(
    points: &[(String, &'static str, Option<Point>)],
    missing: usize,
    total: usize,
) -> String {
    let mut out = String::new();
    big_nodes::partial(&mut out, missing, total);
    out.push_str(
        "| policy | point | runs | moves/h | whole GPUs free | tuned | held out | active hosts | admitted % |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, policy, p) in points {
        let name = if *policy == "tc" { "TC" } else { "OrigaMIG" };
        match p {
            Some(p) => {
                let _ = writeln!(
                    out,
                    "| {name} | {label} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} |",
                    p.runs,
                    p.moves_per_h,
                    p.free_gpus,
                    p.free_tuned,
                    p.free_held_out,
                    p.hosts,
                    p.acceptance_pct
                );
            }
            None => {
                let _ = writeln!(out, "| {name} | {label} | 0 | - | - | - | - | - | - |");
            }
        }
    }
    let tc: Vec<Point> = points
        .iter()
        .filter(|(_, p, _)| *p == "tc")
        .filter_map(|(_, _, p)| *p)
        .collect();
    let free_at: Vec<(f64, f64)> = tc.iter().map(|p| (p.moves_per_h, p.free_gpus)).collect();
    let hosts_at: Vec<(f64, f64)> = tc.iter().map(|p| (p.moves_per_h, p.hosts)).collect();
    let moves_for: Vec<(f64, f64)> = tc.iter().map(|p| (p.free_gpus, p.moves_per_h)).collect();
    out.push_str(
        "\nEach OrigaMIG point beside TC's curve: TC's whole GPUs free and active hosts at \
         OrigaMIG's moves per hour, and the moves per hour TC needs for OrigaMIG's whole GPUs \
         free (linear between TC's two nearest points; \"-\" outside TC's range).\n\n\
         | OrigaMIG point | moves/h | whole GPUs free | TC at these moves | O − TC | active hosts | TC at these moves | O − TC | TC's moves/h for O's whole GPUs free | O / TC moves |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, policy, p) in points {
        let Some(p) = p.filter(|_| *policy == "origamig") else {
            continue;
        };
        let f = interpolate(&free_at, p.moves_per_h);
        let h = interpolate(&hosts_at, p.moves_per_h);
        let m = interpolate(&moves_for, p.free_gpus);
        let _ = writeln!(
            out,
            "| {label} | {:.2} | {:.2} | {} | {} | {:.2} | {} | {} | {} | {} |",
            p.moves_per_h,
            p.free_gpus,
            cell(f, 2),
            signed(f.map(|f| p.free_gpus - f)),
            p.hosts,
            cell(h, 2),
            signed(h.map(|h| p.hosts - h)),
            cell(m, 2),
            cell(m.map(|m| p.moves_per_h / m), 2),
        );
    }
    out
}

pub fn frontier(a: &FrontierArgs) -> anyhow::Result<()> {
    let g = &a.grid;
    g.check()?;
    // The commit as the command starts: the runs append to a tracked journal and the SVG is
    // written before the Markdown, which would make the tree look changed.
    let p = Provenance::now();
    if let Some(path) = &a.svg {
        markdown::check_target_of("--svg", path)?;
    }
    anyhow::ensure!(
        a.rates.iter().all(|r| r.is_finite() && *r > 0.0),
        "--rates: every rate must be a positive number of moves per departure"
    );
    anyhow::ensure!(
        a.tc_periods.iter().all(|m| m.is_finite() && *m > 0.0),
        "--tc-periods: every period must be a positive number of minutes"
    );
    let knobs: Vec<Knob> = a
        .rates
        .iter()
        .map(|&r| Knob::Rate(r))
        .chain(a.tc_periods.iter().map(|&m| Knob::Period(m)))
        .collect();
    let jobs = plan(a, &knobs)?;
    let only: Vec<&Job> = jobs.iter().map(|(_, j)| j).collect();
    let done = big_nodes::run_missing(&only, g.journal.as_deref(), g.max_runs)?;
    let missing = jobs.iter().filter(|(_, j)| !done.contains_key(&j.key())).count();
    let points: Vec<(String, &'static str, Option<Point>)> = knobs
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let runs: Vec<(Part, &Run)> = jobs
                .iter()
                .filter(|(n, _)| *n == i)
                .filter_map(|(_, j)| done.get(&j.key()).map(|r| (j.part, r)))
                .collect();
            (k.label(!a.policy_set.is_empty()), k.policy(), point_of(&runs))
        })
        .collect();
    let text = render(&points, missing, jobs.len());
    if let Some(path) = &a.svg {
        let drawing = svg(&points).map_err(|e| anyhow::anyhow!("--svg {}: {e}", path.display()))?;
        crate::fsutil::write_atomic(path, drawing.as_bytes()).map_err(|e| anyhow::anyhow!("--svg {e}"))?;
    }
    if let Some(path) = &g.markdown {
        let mut md = String::new();
        let _ = writeln!(md, "# Whole GPUs free against moves: OrigaMIG's curve and TC's\n");
        p.header(&mut md);
        let others = if a.policy_set.is_empty() {
            "Every other setting is the default.".to_string()
        } else {
            format!(
                "OrigaMIG's points are the default with {}; TC's points have every other setting at the default.",
                a.policy_set.join(", ")
            )
        };
        let _ = writeln!(
            md,
            "\nThe grid of big-nodes.md. {} Means over the same runs for every point. OrigaMIG \
             moves more as its GPU compaction earns more moves a departure; TC as its compaction \
             runs more often. {others}\n",
            g.describe()
        );
        if let Some(svg) = &a.svg {
            let name = svg
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            let _ = writeln!(md, "![Whole GPUs free against moves per hour]({name})\n");
        }
        md.push_str(&text);
        markdown::write(path, &md)?;
    }
    print!("{text}");
    Ok(())
}

/// Both curves as one SVG chart: whole GPUs free against moves per hour, a line and labelled
/// points per policy, the defaults drawn larger.
pub(crate) fn svg(points: &[(String, &'static str, Option<Point>)]) -> anyhow::Result<String> {
    use plotters::prelude::*;
    let done: Vec<(&str, &str, Point)> = points
        .iter()
        .filter_map(|(l, p, x)| x.map(|x| (l.as_str(), *p, x)))
        .collect();
    anyhow::ensure!(!done.is_empty(), "no finished point to draw");
    let (x0, x1, y0, y1) = done.iter().fold(
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY),
        |(a, b, c, d), (_, _, p)| {
            (
                a.min(p.moves_per_h),
                b.max(p.moves_per_h),
                c.min(p.free_gpus),
                d.max(p.free_gpus),
            )
        },
    );
    let xpad = ((x1 - x0) * 0.08).max(0.5);
    let ypad = ((y1 - y0) * 0.12).max(0.1);
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (900, 560)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot draw: {e}");
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Whole GPUs free against moves per hour", ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad)..(y1 + ypad))
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("Moves per hour (mean over the runs)")
            .y_desc("Whole GPUs free (time average)")
            .draw()
            .map_err(|x| e(&x))?;
        for (policy, name, color) in [("origamig", "OrigaMIG", BLUE), ("tc", "TC", RED)] {
            let mut series: Vec<(&str, Point)> = done
                .iter()
                .filter(|(_, p, _)| *p == policy)
                .map(|(l, _, x)| (*l, *x))
                .collect();
            series.sort_by(|a, b| a.1.moves_per_h.total_cmp(&b.1.moves_per_h));
            if series.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(
                    series.iter().map(|(_, p)| (p.moves_per_h, p.free_gpus)),
                    color.stroke_width(2),
                ))
                .map_err(|x| e(&x))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            for (label, p) in &series {
                let big = label.ends_with("(default)");
                let at = (p.moves_per_h, p.free_gpus);
                chart
                    .draw_series(std::iter::once(Circle::new(
                        at,
                        if big { 6 } else { 3 },
                        color.filled(),
                    )))
                    .map_err(|x| e(&x))?;
                let short = label.replace(" a departure", "/dep.").replace("every ", "");
                chart
                    .draw_series(std::iter::once(Text::new(
                        short,
                        at,
                        ("sans-serif", 12).into_font().color(&color),
                    )))
                    .map_err(|x| e(&x))?;
            }
        }
        crate::cli::runstats::draw_legend(&mut chart).map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(text)
}
