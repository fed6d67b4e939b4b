//! The status bar: mode, simulated clock, scenario name with a modified marker, arrival policy,
//! and as many keys of the active layer as fit, taken from the same key map as the help. While a
//! step of the clock runs on its worker thread, the clock gives way to the step's progress.

use super::super::app::{App, Stepping};
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
        Layer::Step => "STEPPING",
        Layer::Dialog => "ADD VM",
        Layer::Confirm => "CONFIRM",
        Layer::Palette => "COMMAND",
        Layer::Help => "HELP",
        Layer::Relayout => "RELAYOUT",
        Layer::Mode => "MODE",
        Layer::Regime if app.regime.as_ref().is_some_and(|r| r.playing) => "REGIME PLAYING",
        Layer::Regime => "REGIME",
    };
    let mut x = area.x;
    let mode = format!(" {mode} ");
    buf.set_string(x, area.y, &mode, t.mode);
    x += mode.chars().count() as u16 + 1;
    let wide = area.width >= 120;
    let clock = match &app.workers.stepping {
        Some(st) => step_progress(app, st, wide),
        None => regime_date(app)
            .unwrap_or_else(|| s.now_date())
            .format(if wide {
                "%Y-%m-%d %H:%M:%S"
            } else {
                "%m-%d %H:%M:%S"
            })
            .to_string(),
    };
    buf.set_string(x, area.y, &clock, t.status);
    x += clock.chars().count() as u16 + 2;
    if app.workers.stepping.is_some() && !wide {
        // No room for the name and policy next to the progress: the cancel key matters more.
        keys(app, layer, x, area, buf);
        return;
    }
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
    keys(app, layer, x, area, buf);
}

/// `2024-01-05 13:20:10 of 2024-01-07 08:00:00 (28%) · 3 optimizer calls · 41.2 s`: simulated time reached and the
/// step's target, the optimizer calls the policy made on the way, and the wall-clock time.
pub(crate) fn step_progress(app: &App, st: &Stepping, wide: bool) -> String {
    let s = &app.session;
    let fmt = if wide {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%m-%d %H:%M:%S"
    };
    let p = &st.progress;
    let calls = match (p.calls, wide) {
        (1, true) => "1 optimizer call".to_string(),
        (n, true) => format!("{n} optimizer calls"),
        (1, false) => "1 call".to_string(),
        (n, false) => format!("{n} calls"),
    };
    let cancelling = if st.cancelled { " · cancelling" } else { "" };
    let (now, target) = (s.date_at(p.now_s).format(fmt), s.date_at(p.target_s).format(fmt));
    let pct = 100.0 * p.fraction();
    let elapsed = st.started.elapsed().as_secs_f64();
    if wide {
        format!("{now} of {target} ({pct:.0}%) · {calls} · {elapsed:.1} s{cancelling}")
    } else {
        // 80 columns: short enough to leave room for the cancel key.
        format!("{now}→{target} {pct:.0}% · {calls} · {elapsed:.0} s{cancelling}")
    }
}

/// Keys of the active layer from column `x` on, while they fit, and the help key at the right.
/// The date the regime view's clock shows, while it is on screen.
fn regime_date(app: &App) -> Option<chrono::DateTime<chrono::Utc>> {
    let r = app.regime.as_ref().filter(|r| r.open)?;
    let s = &app.session;
    let ms = ((r.run.now() - s.now_s()) * 1000.0).round() as i64;
    Some(s.now_date() + chrono::Duration::milliseconds(ms))
}

fn keys(app: &App, layer: Layer, mut x: u16, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    // Keys of the active layer, in key-map order, while they fit; help last.
    let help = app
        .keymap
        .key_for(layer, &super::super::command::Command::Help)
        .map(|k| format!("{k} help"));
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
