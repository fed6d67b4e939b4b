//! `sweep --regimes`: every combination of regimes, device-plugin choices, planner periods,
//! hysteresis and menus, means over the seeds, as a table and the drains-against-pending SVG.

use super::regime::{check, kind_of, plugin_of, run, settings, RegimeArgs};
use crate::ops::menu_file::{self, MenuFile};
use crate::regime::Report;
use crate::scenario::{PluginChoice, RegimeKind, RegimeSettings, Scenario};
use anyhow::{bail, Context};
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What `sweep --regimes` takes.
pub(crate) struct SweepGrid<'a> {
    pub scenario: &'a Path,
    pub regimes: &'a [String],
    pub periods: &'a [f64],
    pub hysteresis: &'a [u32],
    pub menus: &'a [String],
    pub plugins: &'a [String],
    /// Hours between defragmentation passes of dynamic MIG, one dynamic cell each (0: none).
    pub defrag_every: &'a [f64],
    pub seeds: Vec<u64>,
    pub loads: &'a [f64],
    pub run: &'a super::simulate::RunArgs,
    pub jobs: Option<usize>,
    pub markdown: Option<&'a Path>,
    pub svg: Option<&'a Path>,
}

/// One configuration of the grid and its means over the seeds.
#[derive(Debug, Clone)]
struct Cell {
    kind: RegimeKind,
    plugin: PluginChoice,
    period: f64,
    h: u32,
    menu: String,
    /// Dynamic: hours between defragmentation passes.
    defrag: Option<f64>,
    reports: Vec<Report>,
}

impl Cell {
    fn mean(&self, f: impl Fn(&Report) -> f64) -> f64 {
        self.reports.iter().map(f).sum::<f64>() / self.reports.len().max(1) as f64
    }

    fn label(&self) -> String {
        match self.kind {
            RegimeKind::StaticLayouts => format!(
                "static {} P={} H={} {}",
                self.plugin.name(),
                self.period,
                self.h,
                self.menu
            ),
            _ => match self.defrag {
                Some(h) => format!("{} {} defrag every {h} h", self.kind.name(), self.plugin.name()),
                None => format!("{} {}", self.kind.name(), self.plugin.name()),
            },
        }
    }
}

/// `sweep --regimes ...`: every combination, means over the seeds, as a table (stdout, and
/// Markdown with --markdown) and the trade-off as SVG (--svg).
pub(crate) fn sweep(g: SweepGrid) -> anyhow::Result<()> {
    if let Some(p) = g.markdown {
        super::experiment::markdown::check_target(p)?;
    }
    // Taken before anything is written, so the outputs of an earlier run do not count as
    // uncommitted changes.
    let prov = super::experiment::markdown::Provenance::now();
    let base = base_scenario(&g)?;
    let (defaults, scenario_menu) = settings(&base, g.scenario, &RegimeArgs::default())?;
    let menus = read_menus(g.menus, scenario_menu)?;
    let mut cells = grid(&g, &base, &defaults, &menus)?;
    run_cells(&g, &base, &defaults, &menus, &mut cells)?;
    let rows = table(&cells);
    super::print_table(&rows);
    if let Some(p) = g.svg {
        crate::fsutil::write_atomic(p, svg(&cells).as_bytes()).map_err(|e| anyhow::anyhow!("--svg {e}"))?;
    }
    if let Some(p) = g.markdown {
        write_markdown(p, &prov, &base, &g.seeds, &rows)?;
    }
    Ok(())
}

/// The sweep's scenario with the run options and the one load applied.
fn base_scenario(g: &SweepGrid) -> anyhow::Result<Scenario> {
    let mut base = super::simulate::load_scenario(g.scenario, g.run)?;
    anyhow::ensure!(g.loads.len() <= 1, "--loads: a regime sweep takes one load");
    super::simulate::apply(
        &mut base,
        &super::simulate::Overrides {
            policy: None,
            seed: None,
            load: g.loads.first().copied(),
            hours: g.run.hours,
            warmup: g.run.warmup,
        },
    )?;
    Ok(base)
}

/// The menus of `--menus` (`assets`: assets/layouts.toml's menu; else mig-parted files, read
/// once), or the scenario's own menu.
fn read_menus(given: &[String], scenario_menu: Option<PathBuf>) -> anyhow::Result<Menus> {
    let names: Vec<String> = if given.is_empty() {
        vec![scenario_menu
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "assets".into())]
    } else {
        given.to_vec()
    };
    let mut menus: Menus = Vec::new();
    for m in names {
        if m == "assets" {
            menus.push((m, None));
        } else {
            let f = menu_file::load(Path::new(&m)).context("--menus")?;
            menus.push((m, Some(f)));
        }
    }
    Ok(menus)
}

/// Each menu's name and, for a mig-parted file, its configs.
type Menus = Vec<(String, Option<MenuFile>)>;

/// The cells of the grid: regimes × plugins, and for static layouts × periods × hysteresis ×
/// menus.
fn grid(
    g: &SweepGrid,
    base: &Scenario,
    defaults: &RegimeSettings,
    menus: &Menus,
) -> anyhow::Result<Vec<Cell>> {
    let periods = if g.periods.is_empty() {
        vec![defaults.period_min]
    } else {
        g.periods.to_vec()
    };
    let hs = if g.hysteresis.is_empty() {
        vec![defaults.hysteresis_or(base.policy.legacy_layout_hysteresis)]
    } else {
        g.hysteresis.to_vec()
    };
    let plugins: Vec<PluginChoice> = if g.plugins.is_empty() {
        vec![defaults.plugin_choice]
    } else {
        g.plugins
            .iter()
            .map(|p| plugin_of(p, "--plugins"))
            .collect::<anyhow::Result<_>>()?
    };
    let defrags: Vec<Option<f64>> = if g.defrag_every.is_empty() {
        vec![defaults.defrag_every_h]
    } else {
        g.defrag_every.iter().map(|&h| (h != 0.0).then_some(h)).collect()
    };
    let cell = |kind, plugin, period, h, menu: &str, defrag| Cell {
        kind,
        plugin,
        period,
        h,
        menu: menu.to_string(),
        defrag,
        reports: Vec::new(),
    };
    let mut cells = Vec::new();
    for r in g.regimes {
        let kind = kind_of(r, "--regimes")?;
        if kind == RegimeKind::Paper {
            bail!(
                "--regimes: the paper's regime is swept by policy: `migplan sweep SCENARIO --policies ...`"
            );
        }
        for &plugin in &plugins {
            if kind == RegimeKind::Dynamic {
                for &d in &defrags {
                    cells.push(cell(kind, plugin, 0.0, 0, "-", d));
                }
                continue;
            }
            for &period in &periods {
                for &h in &hs {
                    for (m, _) in menus {
                        cells.push(cell(kind, plugin, period, h, m, None));
                    }
                }
            }
        }
    }
    Ok(cells)
}

/// Runs every cell at every seed in parallel (`--jobs`) and files each report under its cell.
fn run_cells(
    g: &SweepGrid,
    base: &Scenario,
    defaults: &RegimeSettings,
    menus: &Menus,
    cells: &mut [Cell],
) -> anyhow::Result<()> {
    let runs: Vec<(usize, u64)> = (0..cells.len())
        .flat_map(|c| g.seeds.iter().map(move |&s| (c, s)))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(g.jobs.unwrap_or(0))
        .build()
        .context("--jobs")?;
    let grid: &[Cell] = cells;
    let results: Vec<anyhow::Result<(usize, Report)>> = pool.install(|| {
        runs.par_iter()
            .map(|&(c, seed)| {
                let cell = &grid[c];
                let mut sc = base.clone();
                sc.workload.seed = seed;
                let s = RegimeSettings {
                    kind: cell.kind,
                    plugin_choice: cell.plugin,
                    period_min: if cell.period > 0.0 {
                        cell.period
                    } else {
                        defaults.period_min
                    },
                    hysteresis: Some(cell.h.max(1)),
                    defrag_every_h: cell.defrag,
                    ..defaults.clone()
                };
                check(&s)?;
                let menu = menus
                    .iter()
                    .find(|(m, _)| *m == cell.menu)
                    .and_then(|(_, f)| f.as_ref());
                let (r, _) = run(&sc, &s, menu)?;
                Ok((c, r))
            })
            .collect()
    });
    for r in results {
        let (c, rep) = r?;
        cells[c].reports.push(rep);
    }
    Ok(())
}

/// The table as Markdown with its command line, commit and date.
fn write_markdown(
    p: &Path,
    prov: &super::experiment::markdown::Provenance,
    base: &Scenario,
    seeds: &[u64],
    rows: &[Vec<String>],
) -> anyhow::Result<()> {
    let mut out = String::new();
    let _ = writeln!(out, "# Kubernetes regimes on {}\n", base.name);
    let _ = writeln!(out, "- command: `{}`", prov.command);
    let _ = writeln!(out, "- commit: {}", prov.commit);
    let _ = writeln!(out, "- date: {}", prov.date);
    let _ = writeln!(
        out,
        "- {} GPUs on {} hosts; workload load {}, {} h warm-up, {} h measured; seeds {:?}; means over the seeds\n",
        base.fleet.hosts.iter().map(|h| h.gpus.len()).sum::<usize>(),
        base.fleet.hosts.len(),
        base.workload.load,
        base.workload.warmup_h,
        base.workload.measure_h,
        seeds
    );
    let _ = writeln!(out, "| {} |", rows[0].join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(rows[0].len()));
    for r in &rows[1..] {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    super::experiment::markdown::write(p, &out)
}

fn table(cells: &[Cell]) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "regime",
        "plugin",
        "period min",
        "H",
        "menu",
        "pending pod-h",
        "wait p50 min",
        "wait p95 min",
        "gave up",
        "drains/day",
        "evicted/day",
        "defrag every h",
        "restarts/day",
        "GPUs emptied",
        "idle inst-h",
        "stranded slice-h",
        "active GPUs",
        "energy kWh",
    ]
    .map(String::from)
    .to_vec()];
    for c in cells {
        let stat = c.kind == RegimeKind::StaticLayouts;
        let dash = |v: String| if stat { v } else { "-".into() };
        rows.push(vec![
            c.kind.name().into(),
            c.plugin.name().into(),
            dash(format!("{}", c.period)),
            dash(c.h.to_string()),
            dash(c.menu.clone()),
            format!("{:.1}", c.mean(|r| r.pending_pod_hours_total)),
            format!("{:.1}", c.mean(|r| r.wait_p50_min)),
            format!("{:.1}", c.mean(|r| r.wait_p95_min)),
            format!("{:.1}", c.mean(|r| r.pods_timed_out as f64)),
            format!("{:.2}", c.mean(|r| r.drains_per_day)),
            format!("{:.2}", c.mean(|r| r.evicted_per_day)),
            c.defrag.map_or_else(|| "-".into(), |h| format!("{h}")),
            match c.defrag {
                Some(_) => format!("{:.2}", c.mean(|r| r.restarts_per_day)),
                None => "-".into(),
            },
            match c.defrag {
                Some(_) => format!("{:.1}", c.mean(|r| r.defrag_emptied_gpus as f64)),
                None => "-".into(),
            },
            format!("{:.1}", c.mean(|r| r.idle_instance_hours)),
            format!("{:.1}", c.mean(|r| r.stranded_compute_slice_hours)),
            format!("{:.2}", c.mean(|r| r.mean_active_gpus)),
            format!("{:.1}", c.mean(|r| r.energy_kwh)),
        ]);
    }
    rows
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Drains per day (x) against pending pod-hours (y), one point per configuration.
fn svg(cells: &[Cell]) -> String {
    // Tall enough for one legend line per configuration.
    let h = (60.0 + 14.0 * cells.len() as f64).max(460.0);
    let (w, l, b, t, r) = (820.0, 70.0, 50.0, 30.0, 350.0);
    let pts: Vec<(f64, f64, &Cell)> = cells
        .iter()
        .map(|c| {
            (
                c.mean(|r| r.drains_per_day),
                c.mean(|r| r.pending_pod_hours_total),
                c,
            )
        })
        .collect();
    let xmax = pts.iter().map(|p| p.0).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let ymax = pts.iter().map(|p| p.1).fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let px = |x: f64| l + (w - l - r) * x / xmax;
    let py = |y: f64| h - b - (h - b - t) * y / ymax;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{l}" y="18" font-size="13">Drains against pending pod-hours (means over seeds)</text>"#
    );
    let _ = writeln!(
        o,
        r#"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{l}" y1="{t}" x2="{l}" y2="{}" stroke="black"/>"#,
        h - b,
        w - r,
        h - b,
        h - b
    );
    for k in 0..=4 {
        let fx = xmax * k as f64 / 4.0;
        let fy = ymax * k as f64 / 4.0;
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{:.2}</text><text x="{}" y="{:.1}" text-anchor="end">{:.0}</text>"#,
            px(fx),
            h - b + 15.0,
            fx,
            l - 5.0,
            py(fy) + 4.0,
            fy
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">drains per day</text>"#,
        (l + w - r) / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        o,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">pending pod-hours</text>"#,
        (t + h - b) / 2.0
    );
    let colours = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    ];
    for (k, (x, y, c)) in pts.iter().enumerate() {
        let col = colours[k % colours.len()];
        let shape = if c.kind == RegimeKind::Dynamic {
            format!(
                r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{col}"/>"#,
                px(*x) - 4.0,
                py(*y) - 4.0
            )
        } else {
            format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{col}"/>"#,
                px(*x),
                py(*y)
            )
        };
        let _ = writeln!(o, "{shape}");
        let ly = t + 14.0 * k as f64 + 6.0;
        let _ = writeln!(
            o,
            r#"<circle cx="{}" cy="{ly:.1}" r="4" fill="{col}"/><text x="{}" y="{:.1}">{}</text>"#,
            w - r + 15.0,
            w - r + 24.0,
            ly + 4.0,
            esc(&c.label())
        );
    }
    o.push_str("</svg>\n");
    o
}
