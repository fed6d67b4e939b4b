//! The regime view: the scenario's `[regime]` played over simulated time. Each node and GPU
//! with its instances allocated (■) or free (□), the layout the planner heads each GPU for with
//! its hysteresis count (consecutive identical plans so far / needed); the pending queue per
//! profile with the longest wait; the layout planner's settings and next run; each drain as it
//! happened (node, evicted pods, GPUs re-laid out); the run's counts so far.

use super::super::app::regime::regime_clock;
use super::super::app::{App, RegimePlay};
use super::fleet::truncate;
use crate::regime::NodeView;
use crate::scenario::RegimeKind;
use crate::session;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

pub fn render(app: &App, r: &RegimePlay, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    Clear.render(area, buf);
    buf.set_style(area, t.base);
    let block = Block::bordered()
        .title(Span::styled(title(app, r), t.title))
        .border_style(t.border_focus);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 4 || inner.width < 40 {
        return;
    }
    let [body, totals] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    let (nodes, side) = if body.width >= 120 {
        let [a, b] = Layout::horizontal([Constraint::Min(1), Constraint::Length(56)]).areas(body);
        (a, b)
    } else {
        let [a, b] = Layout::vertical([Constraint::Percentage(55), Constraint::Min(1)]).areas(body);
        (a, b)
    };
    // Each pane keeps a column of margin on either side.
    let padded = |a: Rect| Rect::new(a.x + 1, a.y, a.width.saturating_sub(2), a.height);
    let (nodes, side) = (padded(nodes), padded(side));
    Paragraph::new(node_lines(app, r, nodes.width as usize, nodes.height as usize)).render(nodes, buf);
    Paragraph::new(side_lines(app, r, side.width as usize, side.height as usize)).render(side, buf);
    let line = totals_line(r);
    buf.set_string(
        totals.x + 1,
        totals.y,
        truncate(&line, totals.width.saturating_sub(2) as usize),
        t.dim,
    );
}

/// The border title: regime, scenario, the regime's clock, the phase, play state and speed.
fn title(app: &App, r: &RegimePlay) -> String {
    let (set, _) = r.run.settings();
    let (warmup, horizon) = r.run.window();
    let now = r.run.now();
    let phase = if now >= horizon {
        "at the horizon".to_string()
    } else if now < warmup {
        format!("warm-up, measuring from {}", regime_clock(warmup))
    } else {
        format!(
            "measuring, {:.0} of {:.0} h",
            (now - warmup) / 3600.0,
            (horizon - warmup) / 3600.0
        )
    };
    format!(
        " Regime {} · {} · {} ({phase}) · {} · {}/tick ",
        set.kind.name(),
        app.session.name(),
        regime_clock(now),
        if r.playing { "PLAYING" } else { "paused" },
        session::format_duration(r.step_s)
    )
}

/// Nodes and GPUs from the scroll position, as many as fit.
fn node_lines(app: &App, r: &RegimePlay, w: usize, h: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let (set, hyst) = r.run.settings();
    let nodes = r.run.nodes_view();
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("Nodes ({}) ", nodes.len()), t.header),
        Span::styled("instances: ", t.dim),
        Span::styled("■", t.gi.first().copied().unwrap_or(t.base)),
        Span::styled(" allocated  ", t.dim),
        Span::styled("□", t.free),
        Span::styled(" free", t.dim),
        Span::styled(
            if set.kind == RegimeKind::StaticLayouts {
                "   → next layout n/h: identical plans so far / hysteresis"
            } else {
                "   (dynamic: instances exist while a pod holds them)"
            },
            t.dim,
        ),
    ])];
    for (n, node) in nodes.iter().enumerate().skip(r.scroll) {
        if lines.len() + 1 + node.gpus.len() > h {
            if lines.len() < h {
                lines.push(Line::from(Span::styled(
                    format!("… {} more node(s): j/k scroll", nodes.len() - n),
                    t.dim,
                )));
            }
            break;
        }
        lines.push(node_head(app, node));
        for (g, gpu) in node.gpus.iter().enumerate() {
            let mut spans = vec![Span::styled(
                truncate(&format!("  {g} {:<22} ", gpu.layout), 27),
                t.base,
            )];
            for (p, used) in &gpu.instances {
                let short = p.split('.').next().unwrap_or(p);
                let cell = format!("{short}{} ", if *used { '■' } else { '□' });
                let style: Style = if *used {
                    t.gi.first().copied().unwrap_or(t.base)
                } else {
                    t.free
                };
                spans.push(Span::styled(cell, style));
            }
            let free = gpu.instances.iter().filter(|(_, u)| !u).count();
            let tail = if set.kind == RegimeKind::Dynamic {
                format!(
                    " {} in use, {}/{} compute slices free",
                    gpu.in_use, gpu.free_compute, gpu.compute_slices
                )
            } else if gpu.instances.is_empty() {
                " no instance".to_string()
            } else {
                format!(" {}/{} in use, {free} free", gpu.in_use, gpu.instances.len())
            };
            spans.push(Span::styled(tail, t.dim));
            if let Some(next) = &gpu.next {
                let s = format!("  → {next} {}/{hyst}", gpu.streak);
                spans.push(Span::styled(s, if gpu.streak >= hyst { t.warn } else { t.note }));
            }
            lines.push(clip(spans, w));
        }
    }
    lines
}

fn node_head(app: &App, node: &NodeView) -> Line<'static> {
    let t = &app.theme;
    let state = match node.relayout_until {
        Some(up) => Span::styled(format!("RE-LAYOUT until {}", regime_clock(up)), t.warn),
        None => Span::styled("serving".to_string(), t.ok),
    };
    Line::from(vec![
        Span::styled(format!("{} ", node.name), t.title),
        state,
        Span::styled(format!("  {} pod(s)", node.pods), t.dim),
    ])
}

/// Cuts spans to `w` characters.
fn clip(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
    let mut out = Vec::new();
    let mut left = w;
    for s in spans {
        let n = s.content.chars().count();
        if n <= left {
            left -= n;
            out.push(s);
        } else {
            if left > 0 {
                out.push(Span::styled(truncate(&s.content, left), s.style));
            }
            break;
        }
    }
    Line::from(out)
}

/// The pending queue, the layout planner and its next plan, the drains.
fn side_lines(app: &App, r: &RegimePlay, w: usize, h: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let (set, hyst) = r.run.settings();
    let now = r.run.now();
    let mut lines = Vec::new();
    let rows = r.run.pending_rows();
    lines.push(Line::from(Span::styled(
        format!("Pending queue ({} pod(s))", r.run.pending_pods()),
        t.header,
    )));
    if rows.is_empty() {
        lines.push(Line::from(Span::styled("  nothing waits", t.dim)));
    } else {
        lines.push(Line::from(Span::styled(
            format!(
                "  {:<14} {:>5} {:>9} {:>12}",
                "profile", "pods", "instances", "oldest wait"
            ),
            t.dim,
        )));
        for row in &rows {
            lines.push(Line::from(Span::styled(
                truncate(
                    &format!(
                        "  {:<14} {:>5} {:>9} {:>12}",
                        row.profile,
                        row.pods,
                        row.instances,
                        session::format_duration(row.oldest_wait_s)
                    ),
                    w,
                ),
                if row.oldest_wait_s > 0.0 { t.warn } else { t.base },
            )));
        }
    }
    if let Some(m) = set.pending_timeout_min {
        lines.push(Line::from(Span::styled(
            format!("  a pod gives up after {m} min"),
            t.dim,
        )));
    }
    lines.push(Line::default());
    if set.kind == RegimeKind::StaticLayouts {
        lines.push(Line::from(Span::styled("Layout planner · next plan", t.header)));
        lines.push(Line::from(Span::styled(
            truncate(
                &format!(
                    "  every {} min, hysteresis {hyst}, plugin {}",
                    set.period_min,
                    set.plugin_choice.name()
                ),
                w,
            ),
            t.base,
        )));
        if let Some(at) = r.run.next_planner_at() {
            lines.push(Line::from(Span::styled(
                format!(
                    "  next run {} (in {})",
                    regime_clock(at),
                    session::format_duration(at - now)
                ),
                t.base,
            )));
        }
        let mut heading = 0;
        for node in r.run.nodes_view() {
            for (g, gpu) in node.gpus.iter().enumerate() {
                if let Some(next) = &gpu.next {
                    heading += 1;
                    let ready = if gpu.streak >= hyst {
                        " ready: drains its node"
                    } else {
                        ""
                    };
                    lines.push(Line::from(Span::styled(
                        truncate(
                            &format!(
                                "  {}/{g}: {} → {next} {}/{hyst}{ready}",
                                node.name, gpu.layout, gpu.streak
                            ),
                            w,
                        ),
                        if gpu.streak >= hyst { t.warn } else { t.note },
                    )));
                }
            }
        }
        if heading == 0 {
            lines.push(Line::from(Span::styled("  every GPU keeps its layout", t.dim)));
        }
        lines.push(Line::default());
    }
    if set.kind == RegimeKind::Dynamic {
        defrag_lines(app, r, w, h, &mut lines);
        return lines;
    }
    let drains = r.run.drains();
    lines.push(Line::from(Span::styled(
        format!("Drains ({})", drains.len()),
        t.header,
    )));
    if drains.is_empty() {
        lines.push(Line::from(Span::styled("  none yet", t.dim)));
    }
    // The latest drains that fit, newest last.
    let room = h.saturating_sub(lines.len());
    let mut drain_lines: Vec<Line<'static>> = Vec::new();
    for d in drains.iter().rev() {
        let mut block = vec![Line::from(Span::styled(
            truncate(
                &format!(
                    "  {} {}: {} pod(s) evicted{}",
                    regime_clock(d.t),
                    d.node,
                    d.evicted,
                    if d.resets > 0 {
                        format!(", {} GPU reset(s)", d.resets)
                    } else {
                        String::new()
                    }
                ),
                w,
            ),
            t.base,
        ))];
        for (g, before, after) in &d.gpus {
            block.push(Line::from(Span::styled(
                truncate(&format!("    GPU {g}: {before} → {after}"), w),
                t.dim,
            )));
        }
        if drain_lines.len() + block.len() > room {
            break;
        }
        block.extend(drain_lines);
        drain_lines = block;
    }
    lines.extend(drain_lines);
    lines
}

/// Dynamic MIG: the restart-based defragmentation, its settings and its passes so far (the
/// latest that fit).
fn defrag_lines(app: &App, r: &RegimePlay, w: usize, h: usize, lines: &mut Vec<Line<'static>>) {
    let t = &app.theme;
    let (set, _) = r.run.settings();
    let passes = r.run.defrag_passes();
    lines.push(Line::from(Span::styled(
        format!("Defragmentation by restart ({} pass(es))", passes.len()),
        t.header,
    )));
    let Some(every) = set.defrag_every_h else {
        lines.push(Line::from(Span::styled(
            "  off: pods never move ([regime] defrag_every_h)",
            t.dim,
        )));
        return;
    };
    lines.push(Line::from(Span::styled(
        truncate(
            &format!(
                "  every {every} h, at most {} restarts a pass, {} s down each",
                set.defrag_max_restarts_or_default(),
                set.restart_s_or_default()
            ),
            w,
        ),
        t.base,
    )));
    if let Some(at) = r.run.next_defrag_at() {
        lines.push(Line::from(Span::styled(
            format!(
                "  next pass {} (in {})",
                regime_clock(at),
                session::format_duration(at - r.run.now())
            ),
            t.base,
        )));
    }
    let room = h.saturating_sub(lines.len());
    let shown: Vec<Line<'static>> = passes
        .iter()
        .rev()
        .take(room)
        .map(|p| {
            let gpus: Vec<String> = p.emptied.iter().map(|(n, g)| format!("{n}/{g}")).collect();
            Line::from(Span::styled(
                truncate(
                    &format!(
                        "  {} {} restarted, {} started, emptied {}",
                        regime_clock(p.t),
                        p.restarts,
                        p.pending_started,
                        if gpus.is_empty() {
                            "none".to_string()
                        } else {
                            gpus.join(" ")
                        }
                    ),
                    w,
                ),
                if p.restarts > 0 { t.base } else { t.dim },
            ))
        })
        .collect();
    lines.extend(shown.into_iter().rev());
}

/// The run's counts so far.
fn totals_line(r: &RegimePlay) -> String {
    let rep = r.run.report_now();
    format!(
        "pods running {}, waiting {} · measured window: arrived {}, started {}, gave up {} · {} · menu {}{}",
        r.run.running_pods(),
        r.run.pending_pods(),
        rep.pods_arrived,
        rep.pods_started,
        rep.pods_timed_out,
        if rep.regime == "dynamic" {
            format!(
                "restarts {}, GPUs emptied {}",
                rep.restarts, rep.defrag_emptied_gpus
            )
        } else {
            format!(
                "drains {} · evicted {} · GPU resets {}",
                rep.drains, rep.evicted_pods, rep.gpu_resets
            )
        },
        r.menu,
        if r.skipped > 0 {
            format!(" · {} non-MIG requests left out", r.skipped)
        } else {
            String::new()
        }
    )
}
