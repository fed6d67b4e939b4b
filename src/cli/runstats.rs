//! What a set of runs averages to: the metric columns of a run row, the 95 % confidence interval
//! of a mean (Student t), and the means per (policy, load) as CSV, a text table and Fig. 4's
//! panels (§6.4). Shared by `sweep`, which writes them, and `experiment`, which reads them.

use anyhow::bail;
use std::collections::BTreeMap;
use std::path::Path;

/// Two-sided 95 % Student t quantiles for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Mean and half-width of the 95 % confidence interval (Student t); the half-width is 0 for one
/// value.
pub(crate) fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T95.get(n - 2).copied().unwrap_or(1.96);
    (mean, t * (var / n as f64).sqrt())
}

/// The metrics the summary averages, as (CSV column, label).
pub(crate) const METRICS: &[(&str, &str)] = &[
    ("acceptance_pct", "Accept. (%)"),
    ("active_hosts", "Active PMs"),
    ("active_hosts_pct", "Active PMs (%)"),
    ("active_gpus_pct", "Active GPUs (%)"),
    ("packing_pct", "Packing (%)"),
    ("energy_mwh", "Energy (MWh)"),
    ("kwh_per_gpu_hour", "kWh per GPU-hour"),
    ("switch_ons_per_h", "Switch./h"),
    ("migrations_per_h", "Migr./h"),
    ("gb_per_h", "GB/h"),
    ("wait_s_mean", "Wait (s)"),
    ("calls_per_h", "Calls/h"),
    ("call_s_median", "Call median (s)"),
    ("call_s_p95", "Call p95 (s)"),
    ("call_vms_mean", "Call VMs"),
];

/// One run as the summary sees it: its key and its metric values by column.
#[derive(Debug, Clone)]
pub struct RunValues {
    pub policy: String,
    pub load: f64,
    pub seed: u64,
    pub values: BTreeMap<String, f64>,
}

/// Means and 95 % CIs per (policy, load), in policy order of first appearance and ascending load.
pub(crate) struct MeansByLoad {
    pub groups: Vec<LoadGroup>,
}

/// The runs of one (policy, load): how many, and the mean and CI half-width of each metric.
pub(crate) struct LoadGroup {
    pub policy: String,
    pub load: f64,
    pub n: usize,
    /// Metric column -> (mean, CI half-width).
    pub stats: BTreeMap<String, (f64, f64)>,
}

pub(crate) fn summarize(runs: &[RunValues]) -> MeansByLoad {
    let mut policies: Vec<String> = Vec::new();
    for r in runs {
        if !policies.contains(&r.policy) {
            policies.push(r.policy.clone());
        }
    }
    let mut groups = Vec::new();
    for p in &policies {
        let mut loads: Vec<f64> = runs.iter().filter(|r| &r.policy == p).map(|r| r.load).collect();
        loads.sort_by(f64::total_cmp);
        loads.dedup();
        for l in loads {
            let members: Vec<&RunValues> = runs.iter().filter(|r| &r.policy == p && r.load == l).collect();
            let mut stats = BTreeMap::new();
            for (m, _) in METRICS {
                let xs: Vec<f64> = members.iter().filter_map(|r| r.values.get(*m).copied()).collect();
                if !xs.is_empty() {
                    stats.insert(m.to_string(), mean_ci95(&xs));
                }
            }
            groups.push(LoadGroup {
                policy: p.clone(),
                load: l,
                n: members.len(),
                stats,
            });
        }
    }
    MeansByLoad { groups }
}

impl MeansByLoad {
    pub fn csv(&self) -> String {
        let mut out = String::from("policy,load,runs");
        for (m, _) in METRICS {
            out.push_str(&format!(",{m}_mean,{m}_ci95"));
        }
        out.push('\n');
        for g in &self.groups {
            out.push_str(&format!("{},{},{}", g.policy, g.load, g.n));
            for (m, _) in METRICS {
                match g.stats.get(*m) {
                    Some((mean, ci)) => out.push_str(&format!(",{mean:.5},{ci:.5}")),
                    None => out.push_str(",,"),
                }
            }
            out.push('\n');
        }
        out
    }

    /// A text table like the paper's Table 8 (mean ± CI half-width).
    pub fn table(&self) -> String {
        let mut out = format!("{:<10}{:>6}{:>5}", "policy", "load", "n");
        let cols = [
            "acceptance_pct",
            "active_hosts",
            "active_gpus_pct",
            "packing_pct",
            "energy_mwh",
            "kwh_per_gpu_hour",
            "switch_ons_per_h",
            "migrations_per_h",
            "wait_s_mean",
        ];
        for c in cols {
            let label = METRICS.iter().find(|m| m.0 == c).map(|m| m.1).unwrap_or(c);
            out.push_str(&format!("{label:>20}"));
        }
        out.push('\n');
        for g in &self.groups {
            out.push_str(&format!("{:<10}{:>6}{:>5}", g.policy, g.load, g.n));
            for c in cols {
                let cell = match g.stats.get(c) {
                    Some((m, ci)) if c == "kwh_per_gpu_hour" => format!("{m:.4} ± {ci:.4}"),
                    Some((m, ci)) if c == "energy_mwh" => format!("{m:.2} ± {ci:.2}"),
                    Some((m, ci)) => format!("{m:.1} ± {ci:.1}"),
                    None => "-".into(),
                };
                out.push_str(&format!("{cell:>20}"));
            }
            out.push('\n');
        }
        out
    }

    /// Fig. 4's four panels (acceptance, active PMs, packing, energy per GPU-hour) against the
    /// offered load, one line per policy with 95 % CI bars.
    pub fn svg(&self, path: &Path) -> anyhow::Result<()> {
        use plotters::prelude::*;
        let panels = [
            ("acceptance_pct", "(a) Acceptance", "Admitted slices (%)"),
            ("active_hosts_pct", "(b) Active PMs", "Share of the PMs (%)"),
            ("packing_pct", "(c) Packing density", "Occupied slices (%)"),
            (
                "kwh_per_gpu_hour",
                "(d) Energy per GPU-hour",
                "kWh per admitted GPU-hour",
            ),
        ];
        let mut policies: Vec<&str> = Vec::new();
        for g in &self.groups {
            if !policies.contains(&g.policy.as_str()) {
                policies.push(&g.policy);
            }
        }
        let palette = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
        let mut text = String::new();
        let root = SVGBackend::with_string(&mut text, (1000, 760)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("{}: cannot draw: {e}", path.display());
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (lo, hi) = self
            .groups
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), g| {
                (a.min(g.load), b.max(g.load))
            });
        if !lo.is_finite() {
            bail!("no runs to plot");
        }
        let pad = ((hi - lo) * 0.05).max(0.02);
        for (area, (metric, title, ylabel)) in root.split_evenly((2, 2)).iter().zip(panels) {
            let pts: Vec<(&LoadGroup, f64, f64)> = self
                .groups
                .iter()
                .filter_map(|g| g.stats.get(metric).map(|&(m, c)| (g, m, c)))
                .collect();
            let (ymin, ymax) = pts
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (_, m, c)| {
                    (a.min(m - c), b.max(m + c))
                });
            if !ymin.is_finite() {
                continue;
            }
            let ypad = ((ymax - ymin) * 0.1).max(ymax.abs() * 0.005).max(1e-6);
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(60)
                .build_cartesian_2d((lo - pad)..(hi + pad), (ymin - ypad)..(ymax + ypad))
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc("Offered load")
                .y_desc(ylabel)
                .draw()
                .map_err(|e| err(&e))?;
            for (i, p) in policies.iter().enumerate() {
                let color = palette[i % palette.len()];
                let series: Vec<(f64, f64, f64)> = pts
                    .iter()
                    .filter(|(g, _, _)| g.policy == *p)
                    .map(|(g, m, c)| (g.load, *m, *c))
                    .collect();
                chart
                    .draw_series(LineSeries::new(
                        series.iter().map(|&(x, y, _)| (x, y)),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?
                    .label(p.to_uppercase())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                let w = pad * 0.3;
                for &(x, y, c) in &series {
                    let bars = [
                        vec![(x, y - c), (x, y + c)],
                        vec![(x - w, y - c), (x + w, y - c)],
                        vec![(x - w, y + c), (x + w, y + c)],
                    ];
                    chart
                        .draw_series(bars.into_iter().map(|b| PathElement::new(b, color)))
                        .map_err(|e| err(&e))?;
                    chart
                        .draw_series(std::iter::once(Circle::new((x, y), 3, color.filled())))
                        .map_err(|e| err(&e))?;
                }
            }
            draw_legend(&mut chart).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
        drop(root);
        crate::fsutil::write_atomic(path, text.as_bytes())
    }
}

/// The legend of an SVG chart as the CLI's charts draw it: upper left, framed, on white.
pub(crate) fn draw_legend<'a, DB, CT>(
    chart: &mut plotters::chart::ChartContext<'a, DB, CT>,
) -> Result<(), plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: plotters::prelude::DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
{
    use plotters::prelude::*;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
}
