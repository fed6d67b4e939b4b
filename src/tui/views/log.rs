//! The event log: arrivals, admissions, departures, migrations and plan steps with their
//! simulated times, newest at the bottom.

use super::super::app::App;
use super::fleet::truncate;
use crate::session::EventKind;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Widget};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let s = &app.session;
    let block = Block::bordered()
        .title(Span::styled(format!(" Log ({}) ", s.log().len()), t.title))
        .border_style(t.border);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width < 20 {
        return;
    }
    let n = inner.height as usize;
    let entries: Vec<_> = s.log().rev().take(n).collect();
    if entries.is_empty() {
        buf.set_string(inner.x + 1, inner.y, "nothing has happened yet", t.dim);
        return;
    }
    for (i, e) in entries.iter().rev().enumerate() {
        let y = inner.y + i as u16;
        let when = s.date_at(e.t);
        let stamp = when.format("%d %H:%M:%S").to_string();
        let style = match e.kind {
            EventKind::Departure | EventKind::Removal => t.dim,
            EventKind::Rejection | EventKind::Queued => t.warn,
            EventKind::Migration | EventKind::Plan => t.warn,
            EventKind::Admission => t.ok,
            _ => t.base,
        };
        buf.set_string(inner.x + 1, y, &stamp, t.dim);
        let x = inner.x + 1 + stamp.len() as u16 + 1;
        buf.set_string(x, y, format!("{:<7}", e.kind.label()), style);
        let x = x + 8;
        if x < inner.right() {
            buf.set_string(x, y, truncate(&e.text, (inner.right() - x) as usize), t.base);
        }
    }
}
