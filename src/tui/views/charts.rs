//! Charts over simulated time: active hosts (a line chart), and power, acceptance and stranded
//! share as sparklines, so a step-by-step demo shows the trend a defragmentation changes.

use super::super::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols;
use ratatui::text::Span;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Sparkline, Widget};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let s = &app.session;
    let block = Block::bordered()
        .title(Span::styled(" Charts over simulated time ", t.title))
        .border_style(t.border);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 4 || inner.width < 20 {
        return;
    }
    let samples = s.samples();
    let hours: Vec<(f64, f64)> = samples
        .iter()
        .map(|x| (x.t / 3600.0, x.active_hosts as f64))
        .collect();
    let t0 = hours.first().map(|p| p.0).unwrap_or(0.0);
    let t1 = hours.last().map(|p| p.0).unwrap_or(1.0).max(t0 + 1e-6);
    let hosts = s.fleet().hosts.len().max(1) as f64;
    let spark_rows = 3u16.min(inner.height.saturating_sub(3));
    let [chart_area, sparks] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(spark_rows)]).areas(inner);
    let data = [Dataset::default()
        .name("active hosts")
        .marker(if t.mono {
            symbols::Marker::Dot
        } else {
            symbols::Marker::Braille
        })
        .graph_type(GraphType::Line)
        .style(t.series[0])
        .data(&hours)];
    Chart::new(data.to_vec())
        .x_axis(
            Axis::default()
                .bounds([t0, t1])
                .labels([format!("{t0:.1}h"), format!("{t1:.1}h")])
                .style(t.dim),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, hosts])
                .labels(["0".to_string(), format!("{hosts:.0}")])
                .style(t.dim),
        )
        .render(chart_area, buf);
    if spark_rows == 0 {
        return;
    }
    let width = sparks.width.saturating_sub(12) as usize;
    let tail = |f: &dyn Fn(&crate::session::Sample) -> u64| -> Vec<u64> {
        let skip = samples.len().saturating_sub(width);
        samples[skip..].iter().map(f).collect()
    };
    let series: [(&str, Vec<u64>, u64, String); 3] = [
        (
            "power",
            tail(&|x| x.power_w as u64),
            samples.iter().map(|x| x.power_w as u64).max().unwrap_or(1).max(1),
            format!("{:.1}kW", s.gauges().power_w / 1000.0),
        ),
        (
            "accept",
            tail(&|x| (x.acceptance * 1000.0) as u64),
            1000,
            format!("{:.0}%", 100.0 * s.gauges().acceptance),
        ),
        (
            "strand",
            tail(&|x| (x.stranded * 1000.0) as u64),
            1000,
            format!(
                "{:.0}%",
                100.0 * samples.last().map(|x| x.stranded).unwrap_or(0.0)
            ),
        ),
    ];
    let rows = Layout::vertical(vec![Constraint::Length(1); spark_rows as usize]).split(sparks);
    for (i, (name, data, max, now)) in series.iter().take(spark_rows as usize).enumerate() {
        let r = rows[i];
        buf.set_string(r.x, r.y, format!("{name:<6}{now:>6}"), t.desc);
        Sparkline::default()
            .data(data)
            .max(*max)
            .style(t.series[i + 1])
            .render(Rect::new(r.x + 12, r.y, r.width.saturating_sub(12), 1), buf);
    }
}
