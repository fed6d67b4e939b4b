//! The root of the screen: lays out the views, then draws the open overlays bottom to top in the
//! order of [`App::overlay_stack`] (the same stack that gives the top one the keys), and records the
//! clickable areas for the mouse.

use super::app::{App, Panel, Target, Tone};
use super::keymap::Layer;
use super::views;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

/// The smallest terminal the TUI draws into.
pub(crate) const MIN_W: u16 = 80;
pub(crate) const MIN_H: u16 = 24;
/// From this width on, every panel is visible at once.
pub(crate) const WIDE_W: u16 = 140;

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let mut hits: Vec<(Rect, Target)> = Vec::new();
        render(self, area, buf, &mut hits);
        *self.view.hits.borrow_mut() = hits;
    }
}

fn render(app: &App, area: Rect, buf: &mut Buffer, hits: &mut Vec<(Rect, Target)>) {
    let t = &app.theme;
    buf.set_style(area, t.base);
    if area.width < MIN_W || area.height < MIN_H {
        too_small(app, area, buf);
        return;
    }
    let [main, msg, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1), Constraint::Length(1)]).areas(area);
    if area.width >= WIDE_W {
        let right_w = (area.width / 2).clamp(64, 84);
        let [left, right] = Layout::horizontal([Constraint::Min(1), Constraint::Length(right_w)]).areas(main);
        views::fleet::render(app, left, buf, hits);
        let detail_h = 19.min(right.height / 2);
        let [detail, gauges, bottom] = Layout::vertical([
            Constraint::Length(detail_h),
            Constraint::Length(14),
            Constraint::Min(3),
        ])
        .areas(right);
        views::detail::render(app, detail, buf);
        views::gauges::render(app, gauges, buf);
        let [log, charts] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(bottom);
        views::log::render(app, log, buf);
        views::charts::render(app, charts, buf);
    } else {
        let fleet_h = (main.height * 9 / 20).max(6);
        let [top, bottom] = Layout::vertical([Constraint::Length(fleet_h), Constraint::Min(3)]).areas(main);
        views::fleet::render(app, top, buf, hits);
        let [tabs, panel] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(bottom);
        panel_tabs(app, tabs, buf, hits);
        match app.view.panel {
            Panel::Detail => views::detail::render(app, panel, buf),
            Panel::Gauges => views::gauges::render(app, panel, buf),
            Panel::Log => views::log::render(app, panel, buf),
            Panel::Charts => views::charts::render(app, panel, buf),
        }
    }
    message_line(app, msg, buf);
    views::status::render(app, status, buf);
    // Overlays in the order of the one stack that also decides who gets the keys.
    for layer in app.overlay_stack() {
        match layer {
            Layer::Preview => views::preview::render(app, main, buf),
            Layer::Relayout => {
                if let Some(r) = &app.overlays.relayout {
                    views::relayout::render(app, r, main, buf)
                }
            }
            Layer::Mode => {
                if let Some(m) = &app.overlays.mode {
                    views::mode::render(app, m, main, buf)
                }
            }
            Layer::Regime => {
                if let Some(r) = &app.regime {
                    views::regime::render(app, r, main, buf)
                }
            }
            Layer::Solve => views::overlays::solving(app, main, buf),
            Layer::Dialog => {
                if let Some(f) = &app.overlays.form {
                    views::overlays::form(app, f, main, buf)
                }
            }
            Layer::Palette => {
                if let Some(p) = &app.overlays.palette {
                    views::overlays::palette(app, p, msg, buf)
                }
            }
            Layer::Confirm => {
                if let Some(c) = &app.overlays.confirm {
                    views::overlays::confirm(app, c, main, buf)
                }
            }
            Layer::Help => {
                if let Some(scroll) = app.overlays.help {
                    views::overlays::help(app, scroll, main, buf)
                }
            }
            // A move and a step show in the fleet view and the status bar.
            Layer::Move | Layer::Step | Layer::Fleet => {}
        }
    }
}

fn panel_tabs(app: &App, area: Rect, buf: &mut Buffer, hits: &mut Vec<(Rect, Target)>) {
    let t = &app.theme;
    let mut x = area.x + 1;
    for p in Panel::ALL {
        let label = format!(" {} ", p.title());
        let w = label.chars().count() as u16;
        if x + w > area.right() {
            break;
        }
        let style = if p == app.view.panel { t.mode } else { t.desc };
        buf.set_string(x, area.y, &label, style);
        hits.push((Rect::new(x, area.y, w, 1), Target::Panel(p)));
        x += w + 1;
    }
    if let Some(k) = app.keymap.key_for(Layer::Fleet, &super::command::Command::Panel) {
        let hint = format!("{k}: next panel");
        let w = hint.chars().count() as u16;
        if x + w + 1 < area.right() {
            buf.set_string(area.right() - w - 1, area.y, hint, t.dim);
        }
    }
}

fn message_line(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let (text, style) = match &app.message {
        // A change short of what was asked is shown as an error: the user must look at it.
        Some((m, Tone::Error | Tone::Warning)) => (m.clone(), t.error),
        Some((m, Tone::Ok)) => (m.clone(), t.ok),
        Some((m, Tone::Info)) => (m.clone(), t.desc),
        None => (views::fleet::describe_cursor(app), t.dim),
    };
    let mut shown: String = text.chars().take(area.width as usize).collect();
    if text.chars().count() > area.width as usize && area.width > 1 {
        shown.pop();
        shown.push('…');
    }
    buf.set_string(area.x, area.y, shown, style);
}

fn too_small(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let lines = vec![
        Line::from(Span::styled("Terminal too small", t.title)),
        Line::from(format!(
            "migplan needs at least {MIN_W}x{MIN_H}; this one is {}x{}.",
            area.width, area.height
        )),
        Line::from("Enlarge the window, or press q to quit."),
    ];
    let h = (lines.len() as u16).min(area.height);
    let y = area.y + area.height.saturating_sub(h) / 2;
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .centered()
        .render(Rect::new(area.x, y, area.width, area.height - (y - area.y)), buf);
}
