//! The plan preview: what an optimizer call proposes, before anything changes. The ordered
//! steps (with parking), the deltas in active hosts, GPUs, power and energy over a horizon, the
//! objective terms and the admitted requests, and the slice maps of the touched hosts before and
//! after, side by side (with the live state in between while the plan is played step by step).

use super::super::app::App;
use super::super::keymap::Layer;
use super::super::widgets::SliceMap;
use super::fleet::{ghosts_for, truncate};
use crate::executor::StepKind;
use crate::fleet::{Fleet, HostId};
use crate::policy::origamig::objective::Terms;
use crate::session::{self, PlanPhase, Preview};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(p) = app.session.preview() else { return };
    let t = &app.theme;
    Clear.render(area, buf);
    buf.set_style(area, t.popup);
    let block = Block::bordered()
        .title(title(app, p))
        .border_style(t.border_focus);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 6 {
        return;
    }
    let lines = head_lines(app, p);
    let head_h = lines.len() as u16;
    Paragraph::new(lines).render(
        Rect::new(inner.x + 1, inner.y, inner.width.saturating_sub(2), head_h),
        buf,
    );
    steps_and_maps(app, p, inner, head_h, buf);
}

/// The border title: the call (or the defragmentation pass) and its figures.
fn title<'a>(app: &App, p: &Preview) -> Line<'a> {
    let t = &app.theme;
    let prop = &p.proposal;
    let parks = p
        .schedule
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Park)
        .count();
    let restarts = p.schedule.restarts();
    if prop.plan.origin == session::DEFRAG_ORIGIN {
        Line::from(vec![
            Span::styled(" Plan · defragmentation ", t.title),
            Span::styled(
                format!(
                    "· {} steps: {} share move(s), {restarts} restart(s) at deploy ",
                    p.schedule.steps.len(),
                    p.schedule.migrations(),
                ),
                t.desc,
            ),
        ])
    } else if prop.plan.origin == session::GPU_COMPACTION_ORIGIN {
        Line::from(vec![
            Span::styled(" Plan · GPU compaction ", t.title),
            Span::styled(
                format!(
                    "· after an {} call with nothing to do ({:.2} s) · {} steps, {} move(s) ",
                    prop.mode.name(),
                    prop.solve_s,
                    p.schedule.steps.len(),
                    p.schedule.migrations()
                ),
                t.desc,
            ),
        ])
    } else {
        Line::from(vec![
            Span::styled(format!(" Plan · {} call ", prop.mode.name()), t.title),
            Span::styled(
                format!(
                    "· {} · gap {:.1}% · {:.2} s · {} steps, {parks} parking ",
                    prop.status,
                    100.0 * prop.gap,
                    prop.solve_s,
                    p.schedule.steps.len()
                ),
                t.desc,
            ),
        ])
    }
}

/// The lines above the steps: the deltas, the admitted requests, the objective terms, the
/// requests left waiting and the keys.
fn head_lines<'a>(app: &App, p: &Preview) -> Vec<Line<'a>> {
    let t = &app.theme;
    let prop = &p.proposal;
    let mut lines: Vec<Line> = vec![delta_line(app, p)];
    let admitted = if p.admitted.is_empty() {
        "admits no request".to_string()
    } else {
        let list: Vec<String> = p
            .admitted
            .iter()
            .map(|id| {
                let shape = p
                    .before
                    .vm(*id)
                    .map(|v| session::profiles_label(&p.before, &v.gis))
                    .unwrap_or_default();
                format!("VM {id} ({shape})")
            })
            .collect();
        format!("admits {}", list.join(", "))
    };
    lines.push(Line::from(Span::styled(admitted, t.ok)));
    if let Some(terms) = &prop.terms {
        lines.extend(terms_lines(app, p, terms));
    }
    if !prop.not_admitted.is_empty() {
        let ids: Vec<String> = prop.not_admitted.iter().map(|v| format!("VM {v}")).collect();
        lines.push(Line::from(Span::styled(
            format!("not admitted (they stay in the queue): {}", ids.join(", ")),
            t.warn,
        )));
    }
    let keys: Vec<String> = app
        .keymap
        .bindings(Layer::Preview)
        .filter(|b| matches!(b.run.as_str(), "apply" | "discard" | "plan-step"))
        .map(|b| format!("{} {}", b.keys_label(), b.desc))
        .collect();
    lines.push(Line::from(vec![
        Span::styled("Steps ", t.header),
        Span::styled(format!("({})", keys.join(" · ")), t.dim),
    ]));
    lines
}

/// The deltas in active hosts, GPUs, power and energy.
fn delta_line<'a>(app: &App, p: &Preview) -> Line<'a> {
    let t = &app.theme;
    Line::from(vec![
        Span::styled("Δ ", t.header),
        delta(
            app,
            "active hosts",
            p.delta_hosts() as f64,
            p.before.active_hosts(),
            p.after.active_hosts(),
        ),
        Span::raw(" · "),
        delta(
            app,
            "GPUs",
            p.delta_gpus() as f64,
            p.before.active_gpus(),
            p.after.active_gpus(),
        ),
        Span::raw(" · "),
        Span::styled(
            format!(
                "power {:+.0} W · energy over {:.0} h {:+.2} kWh",
                p.delta_power_w(),
                p.horizon_h,
                p.delta_energy_kwh()
            ),
            if p.delta_power_w() <= 0.0 { t.ok } else { t.warn },
        ),
    ])
}

/// Eq. 5 before and after, the verdict, and the terms one by one.
fn terms_lines<'a>(app: &App, p: &Preview, (b, a): &(Terms, Terms)) -> [Line<'a>; 2] {
    let t = &app.theme;
    let prop = &p.proposal;
    let verdict = if prop.improves {
        Span::styled("improves Eq. 5: OrigaMIG would apply it", t.ok)
    } else {
        Span::styled("does not improve Eq. 5: OrigaMIG would not apply it", t.warn)
    };
    let eq5 = Line::from(vec![
        Span::styled(
            format!(
                "Eq. 5 over {} hosts: {:.1} -> {:.1}",
                prop.hosts.len(),
                b.total,
                prop.value_after
            ),
            t.base,
        ),
        Span::styled(
            if p.schedule.parking_penalty > 0.0 {
                format!(" (parking -{:.0})", p.schedule.parking_penalty)
            } else {
                String::new()
            },
            t.dim,
        ),
        Span::raw(" · "),
        verdict,
    ]);
    let terms = Line::from(Span::styled(
        format!(
            "terms before -> after: admitted {} -> {} · hosts {} -> {} · GPUs {} -> {} \
             · migrations {} -> {} · free starts {} -> {}",
            signed(b.admitted),
            signed(a.admitted),
            signed(-b.hosts),
            signed(-a.hosts),
            signed(-b.gpus),
            signed(-a.gpus),
            signed(-b.migrations),
            signed(-a.migrations),
            signed(b.free_starts),
            signed(a.free_starts)
        ),
        t.desc,
    ));
    [eq5, terms]
}

/// The steps, then the slice maps of the touched hosts before, now (while playing) and after.
fn steps_and_maps(app: &App, p: &Preview, inner: Rect, head_h: u16, buf: &mut Buffer) {
    let fleet = app.session.fleet();
    let touched = p.touched_hosts();
    // The steps get what they need up to a third of the room; the maps get the rest.
    let room = inner.height.saturating_sub(head_h + 1);
    let n_steps = p.schedule.steps.len() as u16;
    let maps_need = touched.len() as u16 + 2;
    let steps_h = n_steps.min(room.saturating_sub(maps_need).max(room / 3)).max(1);
    steps(
        app,
        p,
        Rect::new(inner.x + 1, inner.y + head_h, inner.width - 2, steps_h),
        buf,
    );
    let maps_y = inner.y + head_h + steps_h + 1;
    let maps = Rect::new(
        inner.x + 1,
        maps_y,
        inner.width - 2,
        inner.bottom().saturating_sub(maps_y),
    );
    let playing = p.done > 0 || p.phase != PlanPhase::Pending;
    let mut columns: Vec<(&str, &Fleet, bool)> = Vec::new();
    if !playing || maps.width >= 120 {
        columns.push(("Before", &p.before, false));
    }
    if playing {
        columns.push(("Now", fleet, true));
    }
    columns.push(("After", &p.after, false));
    let col_w = maps.width / columns.len() as u16;
    for (i, (name, f, live)) in columns.iter().enumerate() {
        let r = Rect::new(
            maps.x + i as u16 * col_w,
            maps.y,
            col_w.saturating_sub(1),
            maps.height,
        );
        host_maps(app, name, f, &touched, *live, r, buf);
    }
}

/// `+80`, `-200`, `0`: a term's contribution to Eq. 5.
fn signed(v: f64) -> String {
    if v.abs() < 0.5 {
        "0".into()
    } else {
        format!("{v:+.0}")
    }
}

fn delta(app: &App, what: &str, d: f64, before: usize, after: usize) -> Span<'static> {
    let t = &app.theme;
    let style = if d < 0.0 {
        t.ok
    } else if d > 0.0 {
        t.warn
    } else {
        t.base
    };
    Span::styled(format!("{what} {d:+.0} ({before}→{after})"), style)
}

fn steps(app: &App, p: &Preview, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let n = p.schedule.steps.len();
    // Keep the current step in view; the user scrolls from there.
    let first = (p.done.saturating_sub(1) + app.view.preview_scroll as usize).min(n.saturating_sub(1));
    for (row, i) in (first..n).take(area.height as usize).enumerate() {
        let st = &p.schedule.steps[i];
        let y = area.y + row as u16;
        let (mark, style) = if i < p.done {
            ("✓", t.dim)
        } else if i == p.done {
            ("▸", t.selected)
        } else {
            (" ", t.base)
        };
        let kind = match st.kind {
            StepKind::Start => "start",
            StepKind::Move => "move",
            StepKind::Park => "park",
            StepKind::RestartAtDeploy => "restart at deploy",
            StepKind::SetMode(_) => "set mode",
        };
        if let Some(words) = crate::executor::set_mode_text(&p.before, st) {
            let text = format!("{mark} {:>2}. {kind:<5} {words}", i + 1);
            buf.set_string(area.x, y, truncate(&text, area.width as usize), style);
            continue;
        }
        let from = st
            .from
            .as_ref()
            .map(|f| session::placement_label(&p.before, f))
            .unwrap_or_else(|| "queue".into());
        let phase = if i == p.done {
            match p.phase {
                PlanPhase::Pending => "",
                PlanPhase::Created => "  [new GIs created]",
                PlanPhase::Migrated => "  [migrated; old GIs next]",
            }
        } else {
            ""
        };
        let text = format!(
            "{mark} {:>2}. {kind:<5} VM {:<4} {from} → {}{phase}",
            i + 1,
            st.vm,
            session::placement_label(&p.before, &st.to)
        );
        buf.set_string(area.x, y, truncate(&text, area.width as usize), style);
    }
}

fn host_maps(
    app: &App,
    name: &str,
    fleet: &Fleet,
    hosts: &[HostId],
    live: bool,
    area: Rect,
    buf: &mut Buffer,
) {
    let t = &app.theme;
    if area.height == 0 || area.width < 12 {
        return;
    }
    buf.set_string(area.x, area.y, name, t.header);
    let name_w = hosts
        .iter()
        .filter_map(|&h| fleet.hosts.get(h))
        .map(|h| h.name.chars().count())
        .max()
        .unwrap_or(4)
        .min(12) as u16;
    let slices: u16 = hosts
        .iter()
        .filter_map(|&h| fleet.hosts.get(h))
        .map(|h| {
            h.gpus
                .iter()
                .map(|g| fleet.catalog.model(g.model).memory_slices as u16 + 1)
                .sum::<u16>()
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let cw = (area.width.saturating_sub(name_w + 1) / slices).clamp(1, 4);
    // Taller maps when there is room: up to three rows a host, one blank row between hosts.
    let per_host = (area.height.saturating_sub(1) / hosts.len().max(1) as u16).clamp(1, 4);
    let map_h = if per_host >= 3 && cw >= 2 { per_host - 1 } else { 1 };
    let step = if map_h > 1 { per_host } else { 1 };
    for (row, &h) in hosts.iter().enumerate() {
        let y = area.y + 1 + row as u16 * step;
        if y + map_h > area.bottom() {
            break;
        }
        let Some(host) = fleet.hosts.get(h) else { continue };
        buf.set_stringn(area.x, y + (map_h - 1) / 2, &host.name, name_w as usize, t.base);
        let mut x = area.x + name_w + 1;
        for (k, gpu) in host.gpus.iter().enumerate() {
            let n = fleet.catalog.model(gpu.model).memory_slices as u16;
            let w = n * cw;
            if x + w > area.right() {
                break;
            }
            let ghosts = if live { ghosts_for(app, h, k) } else { Vec::new() };
            SliceMap::new(fleet, gpu, t)
                .ghosts(&ghosts)
                .render(Rect::new(x, y, w, map_h), buf);
            x += w + 1;
        }
    }
}
