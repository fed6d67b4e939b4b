//! The re-layout preview: a GPU's MIG layout changes only while the GPU holds no instance, so
//! its host is drained first. For the selected GPU, the layouts of `assets/layouts.toml`
//! it can take and, for the chosen one, what draining its host would do: every VM of the host,
//! whether it gets its instance back and whether it has a free place elsewhere meanwhile. It
//! only shows [`crate::ops::relayout::drain_preview`]'s result; nothing changes.

use super::super::app::{App, RelayoutView};
use super::super::command::{Command, Dir};
use super::super::keymap::Layer;
use super::super::widgets::centred;
use super::fleet::truncate;
use super::overlays::popup;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub fn render(app: &App, r: &RelayoutView, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let (Some(host), Some(model)) = (
        fleet.hosts.get(r.host),
        fleet
            .hosts
            .get(r.host)
            .and_then(|h| h.gpus.get(r.gpu))
            .map(|g| fleet.catalog.model(g.model)),
    ) else {
        return;
    };
    let width = area.width.min(118);
    if area.height < 6 || width < 32 {
        return;
    }
    let w = width.saturating_sub(4) as usize;
    let mut lines: Vec<Line> = Vec::new();
    // The layouts, a window of them around the choice.
    let next = app
        .keymap
        .key_for(Layer::Relayout, &Command::Choice(Dir::Next))
        .unwrap_or_default();
    let prev = app
        .keymap
        .key_for(Layer::Relayout, &Command::Choice(Dir::Prev))
        .unwrap_or_default();
    lines.push(Line::from(vec![
        Span::styled(format!("Layouts ({} on file) ", r.layouts.len()), t.header),
        Span::styled(format!("{next}/{prev} choose"), t.dim),
    ]));
    let shown = 5usize.min(r.layouts.len());
    let first = r
        .choice
        .saturating_sub(shown / 2)
        .min(r.layouts.len().saturating_sub(shown));
    for (i, l) in r.layouts.iter().enumerate().skip(first).take(shown) {
        let lm = fleet.catalog.model(l.model);
        let text = format!(
            "{} {:<22} {}",
            if i == r.choice { "▶" } else { " " },
            l.name,
            l.describe(lm)
        );
        let style = if i == r.choice { t.selected } else { t.base };
        lines.push(Line::from(Span::styled(truncate(&text, w), style)));
    }
    lines.push(Line::default());
    match &r.preview {
        Err(e) => lines.push(Line::from(Span::styled(truncate(e, w), t.warn))),
        Ok(p) => {
            lines.push(Line::from(vec![
                Span::styled("GPU now ", t.header),
                Span::styled(p.from.clone(), t.base),
                Span::styled("  →  ", t.dim),
                Span::styled(format!("{}: {}", p.layout, p.to), t.base),
            ]));
            lines.push(Line::from(Span::styled(
                truncate(
                    &format!(
                        "Re-laying out drains the whole host: every GPU VM on {} stops.",
                        p.host_name
                    ),
                    w,
                ),
                t.desc,
            )));
            let stranded = p.stranded();
            let lose = p.lose_instance();
            let summary = if p.displaced.is_empty() {
                ("no VM runs on the host: nothing is displaced".to_string(), t.ok)
            } else if stranded.is_empty() {
                (
                    format!(
                        "all {} VMs have a free place elsewhere meanwhile",
                        p.displaced.len()
                    ),
                    t.ok,
                )
            } else {
                (
                    format!(
                        "{} of {} VMs have no free instance elsewhere: the drain interrupts {}",
                        stranded.len(),
                        p.displaced.len(),
                        ids(&stranded)
                    ),
                    t.warn,
                )
            };
            lines.push(Line::from(Span::styled(truncate(&summary.0, w), summary.1)));
            if !lose.is_empty() {
                lines.push(Line::from(Span::styled(
                    truncate(
                        &format!("the new layout has no instance for {} afterwards", ids(&lose)),
                        w,
                    ),
                    t.warn,
                )));
            }
            lines.push(Line::default());
            lines.push(Line::from(Span::styled(
                truncate(
                    &format!(
                        "{:<6} {:<8} {:<18} {:<7} {:<5} {}",
                        "VM", "tenant", "GIs GPU:profile", "changed", "back", "meanwhile"
                    ),
                    w,
                ),
                t.header,
            )));
            let head = lines.len() as u16;
            let rows: Vec<Line> = p
                .displaced
                .iter()
                .map(|d| {
                    let gis: Vec<String> = d.gis.iter().map(|(g, pr)| format!("{g}:{pr}")).collect();
                    let (where_, style) = match &d.elsewhere_host {
                        Some(h) => (format!("free place on {h}"), t.ok),
                        None => ("none: interrupted".to_string(), t.warn),
                    };
                    let text = format!(
                        "{:<6} {:<8} {:<18} {:<7} {:<5} ",
                        format!("#{}", d.vm),
                        truncate(d.tenant.as_deref().unwrap_or("-"), 8),
                        truncate(&gis.join(" "), 18),
                        if d.on_changed_gpu { "yes" } else { "no" },
                        if d.returns_after { "yes" } else { "no" },
                    );
                    Line::from(vec![Span::styled(text, t.base), Span::styled(where_, style)])
                })
                .collect();
            let room = area.height.saturating_sub(2 + head) as usize;
            let max = rows.len().saturating_sub(room) as u16;
            lines.extend(rows.into_iter().skip(r.scroll.min(max) as usize));
        }
    }
    let rect = centred(area, width, (lines.len() as u16 + 2).min(area.height));
    let title = format!(
        " Re-layout {}/GPU {} · {} · preview, nothing changes ",
        host.name, r.gpu, model.name
    );
    let inner = popup(app, title, rect, buf);
    Paragraph::new(lines).render(
        Rect::new(inner.x + 1, inner.y, inner.width - 1, inner.height),
        buf,
    );
}

fn ids(v: &[crate::fleet::VmId]) -> String {
    v.iter()
        .map(|id| format!("VM {id}"))
        .collect::<Vec<_>>()
        .join(", ")
}
