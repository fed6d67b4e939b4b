//! The mode-change preview (`:mode HOST/GPU whole|shared|mig LAYOUT`): a GPU's mode changes only
//! while nothing runs on it, so the change is a drain. The overlay shows the change, whether the
//! drain covers the whole host (MIG on either side: the GPU operator restarts every GPU pod of
//! the host) or only the GPU, whether switching MIG on needs a GPU reset, every VM that leaves
//! and where it runs afterwards (moved, restarted in place, or pending), and the active hosts
//! and GPUs before and after. It draws [`crate::ops::mode::mode_preview`]'s result; the apply
//! key makes the change as `:mode!` does (one undo step), the discard key changes nothing.

use super::super::app::{App, ModeView};
use super::super::command::Command;
use super::super::keymap::Layer;
use super::super::widgets::centred;
use super::fleet::truncate;
use super::overlays::popup;
use crate::fleet::GpuMode;
use crate::ops::mode::{Destination, ModeTarget};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

pub fn render(app: &App, m: &ModeView, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let p = &m.preview;
    let Some(model) = fleet
        .hosts
        .get(m.host)
        .and_then(|h| h.gpus.get(m.gpu))
        .map(|g| fleet.catalog.model(g.model))
    else {
        return;
    };
    let width = area.width.min(110);
    if area.height < 8 || width < 40 {
        return;
    }
    let w = width.saturating_sub(4) as usize;
    let line = |text: &str, style| Line::from(Span::styled(truncate(text, w), style));
    let mut lines: Vec<Line> = Vec::new();
    lines.push(Line::from(vec![
        Span::styled(format!("GPU {}/{} ", p.host_name, p.gpu), t.header),
        Span::styled(p.from.name(), t.base),
        Span::styled("  →  ", t.dim),
        Span::styled(p.target.describe(), t.base),
    ]));
    if let ModeTarget::Mig(l) = &p.target {
        lines.push(line(&format!("layout {}: {}", l.name, l.describe(model)), t.desc));
    }
    lines.push(if p.host_drain {
        line(
            &format!(
                "Drain: the whole host {}. A MIG change restarts every GPU pod of the host under the GPU operator.",
                p.host_name
            ),
            t.warn,
        )
    } else {
        line(
            &format!(
                "Drain: GPU {}/{} only (no MIG change): the other GPUs keep running.",
                p.host_name, p.gpu
            ),
            t.desc,
        )
    });
    if p.target.mode() == GpuMode::Mig && p.from != GpuMode::Mig {
        lines.push(if p.needs_reset {
            line(
                &format!("Enabling MIG on a {} needs a GPU reset.", model.name),
                t.warn,
            )
        } else {
            line(
                &format!("Enabling MIG on a {} needs no GPU reset.", model.name),
                t.desc,
            )
        });
    }
    let moved = p
        .leavers
        .iter()
        .filter(|l| matches!(l.to, Destination::Moved(_)))
        .count();
    let in_place = p.leavers.iter().filter(|l| l.to == Destination::InPlace).count();
    let pending = p.stranded().len();
    let summary = if p.leavers.is_empty() {
        (
            "Nobody leaves: nothing runs where the drain reaches.".to_string(),
            t.ok,
        )
    } else {
        (
            format!(
                "{} VM(s) leave: {moved} moved, {in_place} restarted in place, {pending} stay pending.",
                p.leavers.len()
            ),
            if pending == 0 { t.ok } else { t.warn },
        )
    };
    lines.push(line(&summary.0, summary.1));
    let ((hb, gb), (ha, ga)) = p.active(fleet);
    lines.push(line(
        &format!("Active now: {hb} hosts, {gb} GPUs  →  after: {ha} hosts, {ga} GPUs"),
        t.desc,
    ));
    lines.push(Line::default());
    let head = lines.len() as u16;
    let mut rows: Vec<Line> = Vec::new();
    if !p.leavers.is_empty() {
        rows.push(line(
            &format!("{:<7} {:<9} {:<36} {}", "VM", "tenant", "holds", "goes to"),
            t.header,
        ));
    }
    for l in &p.leavers {
        let style = match l.to {
            Destination::Pending => t.warn,
            _ => t.base,
        };
        let text = format!(
            "{:<7} {:<9} {:<36} ",
            format!("#{}", l.vm),
            truncate(l.tenant.as_deref().unwrap_or("-"), 9),
            truncate(&l.what, 36),
        );
        rows.push(Line::from(vec![
            Span::styled(text, t.base),
            Span::styled(p.destination(l), style),
        ]));
    }
    // Room for the keys' line and the border.
    let room = area.height.saturating_sub(head + 4) as usize;
    let max = rows.len().saturating_sub(room) as u16;
    lines.extend(rows.into_iter().skip(m.scroll.min(max) as usize).take(room));
    lines.push(Line::default());
    let key = |c: Command| app.keymap.key_for(Layer::Mode, &c).unwrap_or_default();
    lines.push(Line::from(vec![
        Span::styled(key(Command::ApplyMode), t.key),
        Span::styled(" apply (one undo step)   ", t.desc),
        Span::styled(key(Command::Close), t.key),
        Span::styled(" discard, nothing changes", t.desc),
    ]));
    let rect = centred(area, width, (lines.len() as u16 + 2).min(area.height));
    let title = format!(
        " Mode change {}/GPU {} · {} · preview ",
        p.host_name, p.gpu, model.name
    );
    let inner = popup(app, title, rect, buf);
    Paragraph::new(lines).render(
        Rect::new(inner.x + 1, inner.y, inner.width.saturating_sub(1), inner.height),
        buf,
    );
}
