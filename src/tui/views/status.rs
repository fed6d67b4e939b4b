//! The status bar: mode, simulated clock, scenario name with a modified marker, arrival policy,
//! and as many keys of the active layer as fit, taken from the same key map as the help.

use super::super::app::App;
use super::super::keymap::Layer;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let s = &app.session;
    buf.set_style(area, t.status);
    let layer = app.layer();
    let mode = match layer {
        Layer::Fleet if s.playing() => "PLAYING",
        Layer::Fleet => "FLEET",
        Layer::Move => "MOVE",
        Layer::Preview => "PLAN",
        Layer::Solve => "SOLVING",
        Layer::Dialog => "ADD VM",
        Layer::Confirm => "CONFIRM",
        Layer::Palette => "COMMAND",
        Layer::Help => "HELP",
        Layer::Relayout => "RELAYOUT",
    };
    let mut x = area.x;
    let mode = format!(" {mode} ");
    buf.set_string(x, area.y, &mode, t.mode);
    x += mode.chars().count() as u16 + 1;
    let wide = area.width >= 120;
    let clock = s
        .now_date()
        .format(if wide {
            "%Y-%m-%d %H:%M:%S"
        } else {
            "%m-%d %H:%M:%S"
        })
        .to_string();
    buf.set_string(x, area.y, &clock, t.status);
    x += clock.len() as u16 + 2;
    let name = s.name().to_string();
    buf.set_string(x, area.y, &name, t.status);
    x += name.chars().count() as u16;
    if s.modified() {
        buf.set_string(x, area.y, "*", t.modified.patch(t.status));
    }
    x += 2;
    let pol = if wide {
        format!(
            "{} · arrivals {}",
            s.policy_name(),
            if s.arrivals() { "on" } else { "off" }
        )
    } else {
        s.policy_name().to_string()
    };
    buf.set_string(x, area.y, &pol, t.status);
    x += pol.chars().count() as u16 + 2;
    // Keys of the active layer, in key-map order, while they fit; help last.
    let help = app.keymap.key_for(layer, "help").map(|k| format!("{k} help"));
    let reserve = help.as_ref().map(|h| h.chars().count() as u16 + 1).unwrap_or(0);
    let right = area.right().saturating_sub(reserve);
    for b in app.keymap.bindings(layer) {
        if b.run == "help" || b.run.starts_with("down") || b.run.starts_with("up") {
            continue;
        }
        let key = super::super::keymap::key_label(&b.on[0]);
        let desc = short_desc(&b.desc, &b.run);
        let w = (key.chars().count() + desc.chars().count() + 2) as u16;
        if x + w > right {
            break;
        }
        buf.set_string(x, area.y, &key, t.key.patch(t.status));
        buf.set_string(x + key.chars().count() as u16 + 1, area.y, &desc, t.status);
        x += w + 1;
    }
    if let Some(h) = help {
        let w = h.chars().count() as u16;
        buf.set_string(area.right() - w - 1, area.y, h, t.key.patch(t.status));
    }
}

/// The description up to its first `(`, when that is short; else the command's name (which
/// the palette accepts too).
fn short_desc(desc: &str, run: &str) -> String {
    let head = desc.split('(').next().unwrap_or(desc).trim();
    if head.chars().count() <= 14 {
        head.to_string()
    } else {
        run.to_string()
    }
}
