//! The Kubernetes regimes on the command line (docs/operations.md, "Regimes"): the regime flags
//! of `simulate`, its report, and `sweep --regimes ...`, the grid of regimes, device plugin
//! choices, planner periods, hysteresis and menus with its table (text, Markdown) and the
//! trade-off of drains against pending pod-hours as SVG.

use crate::ops::menu_file::{self, MenuFile};
use crate::regime::{self, Report};
use crate::scenario::{PluginChoice, RegimeKind, RegimeSettings, Scenario};
use anyhow::{bail, Context};
use rayon::prelude::*;
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
}

fn kind_of(s: &str, flag: &str) -> anyhow::Result<RegimeKind> {
    RegimeKind::parse(s)
        .with_context(|| format!("{flag}: unknown regime `{s}` (known: paper, static-layouts, dynamic)"))
}

fn plugin_of(s: &str, flag: &str) -> anyhow::Result<PluginChoice> {
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
    check(&s)?;
    Ok((s, menu))
}

fn check(s: &RegimeSettings) -> anyhow::Result<()> {
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

/// What `sweep --regimes` takes.
pub(crate) struct SweepGrid<'a> {
    pub scenario: &'a Path,
    pub regimes: &'a [String],
    pub periods: &'a [f64],
    pub hysteresis: &'a [u32],
    pub menus: &'a [String],
    pub plugins: &'a [String],
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
            _ => format!("{} {}", self.kind.name(), self.plugin.name()),
        }
    }
}

/// `sweep --regimes ...`: every combination, means over the seeds, as a table (stdout, and
/// Markdown with --markdown) and the trade-off as SVG (--svg).
pub fn sweep(g: SweepGrid) -> anyhow::Result<()> {
    if let Some(p) = g.markdown {
        super::experiment::markdown::check_target(p)?;
    }
    // Taken before anything is written, so the outputs of an earlier run do not count as
    // uncommitted changes.
    let prov = super::experiment::markdown::Provenance::now();
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
    let (defaults, scenario_menu) = settings(&base, g.scenario, &RegimeArgs::default())?;
    // Menus: `assets` (assets/layouts.toml's menu) or mig-parted files, read once.
    let mut menus: Vec<(String, Option<MenuFile>)> = Vec::new();
    let names: Vec<String> = if g.menus.is_empty() {
        vec![scenario_menu
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "assets".into())]
    } else {
        g.menus.to_vec()
    };
    for m in names {
        if m == "assets" {
            menus.push((m, None));
        } else {
            let f = menu_file::load(Path::new(&m)).context("--menus")?;
            menus.push((m, Some(f)));
        }
    }
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
                cells.push(Cell {
                    kind,
                    plugin,
                    period: 0.0,
                    h: 0,
                    menu: "-".into(),
                    reports: Vec::new(),
                });
                continue;
            }
            for &period in &periods {
                for &h in &hs {
                    for (m, _) in &menus {
                        cells.push(Cell {
                            kind,
                            plugin,
                            period,
                            h,
                            menu: m.clone(),
                            reports: Vec::new(),
                        });
                    }
                }
            }
        }
    }
    let runs: Vec<(usize, u64)> = (0..cells.len())
        .flat_map(|c| g.seeds.iter().map(move |&s| (c, s)))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(g.jobs.unwrap_or(0))
        .build()
        .context("--jobs")?;
    let results: Vec<anyhow::Result<(usize, Report)>> = pool.install(|| {
        runs.par_iter()
            .map(|&(c, seed)| {
                let cell = &cells[c];
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
    let rows = table(&cells);
    super::print_table(&rows);
    if let Some(p) = g.svg {
        crate::fsutil::write_atomic(p, svg(&cells).as_bytes()).map_err(|e| anyhow::anyhow!("--svg {e}"))?;
    }
    if let Some(p) = g.markdown {
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
            g.seeds
        );
        let _ = writeln!(out, "| {} |", rows[0].join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(rows[0].len()));
        for r in &rows[1..] {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        super::experiment::markdown::write(p, &out)?;
    }
    Ok(())
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
