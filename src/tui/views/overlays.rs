//! Overlays: the add-VM form, solve progress, confirmations, the `:` palette and the help. The
//! help is generated from the key map (and the palette's command list), never written by hand.

use super::super::app::{AddForm, App, Confirm, Field, FormShape, Palette};
use super::super::keymap::Layer;
use super::super::widgets::centred;
use super::fleet::truncate;
use crate::session;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

pub(crate) fn popup(app: &App, title: String, area: Rect, buf: &mut Buffer) -> Rect {
    let t = &app.theme;
    Clear.render(area, buf);
    buf.set_style(area, t.popup);
    let block = Block::bordered()
        .title(Span::styled(title, t.title))
        .border_style(t.border_focus);
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

pub fn form(app: &App, f: &AddForm, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let r = centred(area, 72, 16);
    let inner = popup(app, " Add a VM ".into(), r, buf);
    let model = fleet.catalog.model(f.model_id());
    let prof = &model.profiles[f.profile.min(model.profiles.len() - 1)];
    let host = fleet.hosts.get(f.host).map(|h| h.name.as_str()).unwrap_or("?");
    let mut lines = Vec::new();
    for (i, field) in Field::ALL.iter().enumerate() {
        let focused = i == f.field;
        let (value, hint) = match field {
            Field::Model => (format!("◂ {} ▸", model.name), String::new()),
            Field::Shape => (
                format!("◂ {} ▸", f.shape.label()),
                match f.shape {
                    FormShape::Mig => "isolated slices of a MIG GPU",
                    FormShape::Share => "memory limit on a shared GPU",
                    FormShape::IsolatedShare => "a whole GPU, never a shared one",
                    FormShape::Gang => "free whole GPUs of one host",
                }
                .into(),
            ),
            Field::Profile if f.shape != FormShape::Mig => ("-".into(), "MIG only".into()),
            Field::Profile => (
                format!("◂ {} ▸", prof.name),
                format!(
                    "{} slice{}, {} compute, {} GB",
                    prof.size,
                    if prof.size == 1 { "" } else { "s" },
                    prof.compute,
                    prof.memory_gb
                ),
            ),
            Field::Count => (
                format!("◂ {} ▸", f.count),
                match f.shape {
                    FormShape::Mig => "GIs of this profile".into(),
                    FormShape::Share | FormShape::IsolatedShare => format!(
                        "GB of {} GB; weight {:.2}",
                        model.memory_gb,
                        f.count as f64 / model.memory_gb
                    ),
                    FormShape::Gang => "whole GPUs of one host".into(),
                },
            ),
            Field::Cores => (
                f.cores.clone(),
                match f.shape {
                    FormShape::Mig => "4 per compute slice by default",
                    FormShape::Share | FormShape::IsolatedShare => "4 by default",
                    FormShape::Gang => "8 per GPU by default",
                }
                .into(),
            ),
            Field::Ram => (
                f.ram.clone(),
                match f.shape {
                    FormShape::Mig => "16 GB per compute slice by default",
                    FormShape::Share | FormShape::IsolatedShare => "16 GB by default",
                    FormShape::Gang => "64 GB per GPU by default",
                }
                .into(),
            ),
            Field::Lifetime => (f.lifetime.clone(), "e.g. 2h, 90m; open = open-ended".into()),
            Field::Kind => (
                format!(
                    "◂ {} ▸",
                    match f.kind {
                        crate::fleet::VmKind::Job => "job",
                        crate::fleet::VmKind::Tenant => "tenant",
                    }
                ),
                String::new(),
            ),
            Field::Place => (
                f.place.clone(),
                if f.place.trim() == "policy" {
                    format!("by {}; ←/→ pins to a start", app.session.policy_name())
                } else {
                    format!("pinned on {host} (GPU@START)")
                },
            ),
        };
        let cursor = if focused && matches!(field, Field::Cores | Field::Ram | Field::Lifetime | Field::Place)
        {
            "▏"
        } else {
            ""
        };
        let marker = if focused { "▶ " } else { "  " };
        lines.push(Line::from(vec![
            Span::styled(format!("{marker}{:<11}", field.label()), t.header),
            Span::styled(
                format!("{:<18}", format!("{value}{cursor}")),
                if focused { t.input } else { t.base },
            ),
            Span::styled(hint, t.dim),
        ]));
    }
    lines.push(Line::default());
    match &f.error {
        Some(e) => lines.push(Line::from(Span::styled(e.clone(), t.error))),
        None => lines.push(Line::from(Span::styled(
            if f.shape == FormShape::Mig {
                "A request that fits nowhere waits in the queue, with the reason."
            } else {
                "A share or a gang that fits nowhere is refused, not queued."
            },
            t.dim,
        ))),
    }
    let keys: Vec<String> = app
        .keymap
        .bindings(Layer::Dialog)
        .filter(|b| b.run != "help")
        .take(3)
        .map(|b| format!("{} {}", b.keys_label(), b.desc))
        .collect();
    lines.push(Line::from(Span::styled(keys.join(" · "), t.desc)));
    Paragraph::new(lines).wrap(Wrap { trim: false }).render(
        Rect::new(inner.x + 1, inner.y, inner.width - 1, inner.height),
        buf,
    );
}

pub fn solving(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(s) = &app.workers.solving else { return };
    let t = &app.theme;
    let r = centred(area, 56, 6);
    let inner = popup(app, format!(" Optimizing · {} call ", s.mode.name()), r, buf);
    let fmt = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into());
    let cancel = app
        .keymap
        .bindings(Layer::Solve)
        .find(|b| b.run == "cancel")
        .map(|b| format!("{}: {}", b.keys_label(), b.desc))
        .unwrap_or_default();
    let lines = vec![
        Line::from(format!(
            "elapsed {:.1} s (wall clock) · solver time {:.1} s",
            s.started.elapsed().as_secs_f64(),
            s.progress.elapsed_s
        )),
        Line::from(format!(
            "incumbent {} · bound {}",
            fmt(s.progress.incumbent),
            fmt(s.progress.bound)
        )),
        Line::from(Span::styled(
            if s.cancelled {
                "cancelling…".to_string()
            } else {
                cancel
            },
            t.dim,
        )),
    ];
    Paragraph::new(lines).render(
        Rect::new(inner.x + 1, inner.y, inner.width - 1, inner.height),
        buf,
    );
}

pub fn confirm(app: &App, c: &Confirm, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let (title, question) = match c {
        Confirm::Remove(vm) => {
            let what = fleet
                .vm(*vm)
                .map(|v| {
                    let at = v
                        .placement
                        .as_ref()
                        .map(|p| format!(" from {}", session::placement_label(fleet, p)))
                        .unwrap_or_default();
                    format!("{}{at}", session::shape(fleet, v))
                })
                .unwrap_or_default();
            (
                " Remove a VM ",
                format!("Remove VM {vm} ({what})? Undo (u) brings it back."),
            )
        }
        Confirm::Quit if app.workers.stepping.is_some() => (
            " Quit ",
            "A step of the clock is running; quitting drops it (and any unsaved changes). Quit?".to_string(),
        ),
        Confirm::Quit => (
            " Quit ",
            "There are unsaved changes. Quit without saving? (:w FILE saves)".to_string(),
        ),
        Confirm::Open(p) => (
            " Open ",
            format!(
                "There are unsaved changes. Open {} and lose them? Opening cannot be undone.",
                p.display()
            ),
        ),
    };
    let r = centred(area, 64, 6);
    let inner = popup(app, title.into(), r, buf);
    let keys: Vec<String> = app
        .keymap
        .bindings(Layer::Confirm)
        .map(|b| format!("{} {}", b.keys_label(), b.desc))
        .collect();
    Paragraph::new(vec![
        Line::from(question),
        Line::default(),
        Line::from(Span::styled(keys.join(" · "), t.key)),
    ])
    .wrap(Wrap { trim: true })
    .render(
        Rect::new(inner.x + 1, inner.y, inner.width - 1, inner.height),
        buf,
    );
}

pub fn palette(app: &App, p: &Palette, line: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    buf.set_style(line, t.popup);
    for x in line.left()..line.right() {
        if let Some(c) = buf.cell_mut((x, line.y)) {
            c.set_symbol(" ");
        }
    }
    let text = format!(":{}▏", p.input);
    buf.set_string(line.x, line.y, &text, t.input);
    let word = p.input.split_whitespace().next().unwrap_or("");
    let hint = session::COMMANDS
        .iter()
        .filter(|c| !word.is_empty() && c.0.starts_with(word))
        .map(|c| c.1)
        .next()
        .unwrap_or("Tab completes · ↑/↓ history · Esc closes");
    let x = line.x + text.chars().count() as u16 + 2;
    if x + 10 < line.right() {
        buf.set_string(x, line.y, truncate(hint, (line.right() - x) as usize), t.dim);
    }
}

/// The lines of the help for a layer: its keys, then (from the fleet view) the palette commands,
/// the glyphs and what undo cannot take back.
pub(crate) fn help_lines(app: &App, layer: Layer) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let mut layers = vec![layer];
    if layer != Layer::Fleet {
        layers.push(Layer::Fleet);
    }
    for l in layers {
        lines.push(Line::from(Span::styled(l.title().to_string(), t.title)));
        for b in app.keymap.bindings(l) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<18}", b.keys_label()), t.key),
                Span::styled(b.desc.clone(), t.base),
            ]));
        }
        lines.push(Line::default());
    }
    lines.push(Line::from(Span::styled(
        "Commands (type : then a command)",
        t.title,
    )));
    for (name, usage) in session::COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {name:<10}"), t.key),
            Span::styled(usage.to_string(), t.base),
        ]));
    }
    lines.push(Line::default());
    let g = t.glyphs;
    lines.push(Line::from(Span::styled("Slice maps", t.title)));
    lines.push(Line::from(format!(
        "  {} a GI (labelled profile and VM)   {} a GI a plan step creates (+) or destroys (-)",
        g.gi, g.ghost
    )));
    lines.push(Line::from(format!(
        "  {}N free; N = compute of the largest profile that can start here   {} free, nothing can start",
        g.free, g.stranded
    )));
    lines.push(Line::default());
    lines.push(Line::from(Span::styled("Undo", t.title)));
    lines.push(Line::from(
        "  u undoes adds, removals, moves, steps of time (a play run is one step), applied plans and",
    ));
    lines.push(Line::from(
        "  setting changes. Saving, opening a file and quitting cannot be undone.",
    ));
    lines
}

pub fn help(app: &App, scroll: u16, area: Rect, buf: &mut Buffer) {
    let layer = app.context_layer();
    let r = centred(area, 120, area.height);
    let inner = popup(app, format!(" Help · {} (Esc closes) ", layer.title()), r, buf);
    let lines = help_lines(app, layer);
    let max = (lines.len() as u16).saturating_sub(inner.height);
    Paragraph::new(lines).scroll((scroll.min(max), 0)).render(
        Rect::new(inner.x + 1, inner.y, inner.width - 1, inner.height),
        buf,
    );
}
