//! The selected GPU in detail: its slice map drawn large, CF (Eq. 2), per-profile free starts
//! S(F, p) and capacity, and, for one chosen profile, each start with the reason it is open or
//! blocked (the three fragmentation cases of the paper's Fig. 1).

use super::super::app::App;
use super::super::widgets::SliceMap;
use super::fleet::{ghosts_for, truncate};
use crate::explore::{self, StartStatus, Verdict};
use crate::mig;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let block = Block::bordered().border_style(t.border);
    let Some(host) = fleet.hosts.get(app.view.sel.host) else {
        block.render(area, buf);
        return;
    };
    let Some(gpu) = host.gpus.get(app.view.sel.gpu) else {
        let b = block.title(Span::styled(format!(" {} has no GPU ", host.name), t.title));
        let inner = b.inner(area);
        b.render(area, buf);
        if let Some(n) = &host.note {
            Paragraph::new(Span::styled(n.as_str(), t.note)).render(inner, buf);
        }
        return;
    };
    let model = fleet.catalog.model(gpu.model);
    if gpu.mode != crate::fleet::GpuMode::Mig {
        return render_out_of_mig(app, host, gpu, block, area, buf);
    }
    let cf = mig::cf(model, &gpu.occ);
    let title = Line::from(vec![
        Span::styled(format!(" GPU {}/{} ", host.name, app.view.sel.gpu), t.title),
        Span::styled(
            format!(
                "{} · CF {cf} · {}/{} slices used ",
                model.name,
                gpu.occ.used_slices(),
                model.memory_slices
            ),
            t.desc,
        ),
    ]);
    let block = block.title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 3 {
        return;
    }
    let n = model.memory_slices as u16;
    let cw = (inner.width.saturating_sub(2) / n).clamp(1, 9);
    let map_w = cw * n;
    let map_x = inner.x + 1;
    // Slice numbers over the map.
    for u in 0..n {
        let label = u.to_string();
        buf.set_string(map_x + u * cw + (cw.saturating_sub(1)) / 2, inner.y, label, t.dim);
    }
    let map_h: u16 = if inner.height >= 14 { 3 } else { 1 };
    let ghosts = ghosts_for(app, app.view.sel.host, app.view.sel.gpu);
    SliceMap::new(fleet, gpu, t)
        .cursor(Some(app.view.sel.slice))
        .ghosts(&ghosts)
        .render(Rect::new(map_x, inner.y + 1, map_w, map_h), buf);
    let mut y = inner.y + 1 + map_h;
    let note = host.gpu_notes.get(&app.view.sel.gpu).or(host.note.as_ref());
    if let Some(note) = note {
        if y < inner.bottom() {
            buf.set_string(
                inner.x + 1,
                y,
                truncate(note, inner.width.saturating_sub(2) as usize),
                t.note,
            );
            y += 1;
        }
    }
    if y >= inner.bottom() {
        return;
    }
    let rest = Rect::new(inner.x, y, inner.width, inner.bottom() - y);
    let teach = app.view.teach_profile % model.profiles.len().max(1);
    let table = profile_table(app, gpu, teach);
    let explain = explanation(app, gpu, teach);
    if rest.width >= 70 {
        let table_w = 34u16;
        let left = Rect::new(rest.x + 1, rest.y, rest.width - table_w - 2, rest.height);
        let right = Rect::new(rest.right() - table_w, rest.y, table_w, rest.height);
        Paragraph::new(explain)
            .wrap(Wrap { trim: false })
            .render(left, buf);
        Paragraph::new(table).render(right, buf);
    } else {
        let mut lines = explain;
        lines.push(Line::default());
        lines.extend(table);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .render(Rect::new(rest.x + 1, rest.y, rest.width - 1, rest.height), buf);
    }
}

/// A whole or shared GPU: its bar drawn large, then its residents (holder, or each share with its
/// GB, weight and tenant) and, for a shared GPU, the weight sum (above 1: oversubscribed).
fn render_out_of_mig(
    app: &App,
    host: &crate::fleet::Host,
    gpu: &crate::fleet::Gpu,
    block: Block,
    area: Rect,
    buf: &mut Buffer,
) {
    use crate::fleet::GpuMode;
    let t = &app.theme;
    let fleet = app.session.fleet();
    let model = fleet.catalog.model(gpu.model);
    let cap = crate::fleet::gpu_gb(fleet.catalog, gpu.model);
    let what = match gpu.mode {
        GpuMode::Whole => "whole (MIG off, one holder)".to_string(),
        _ => format!("shared (soft shares) · {}/{cap} GB", gpu.shared_gb()),
    };
    let title = Line::from(vec![
        Span::styled(format!(" GPU {}/{} ", host.name, app.view.sel.gpu), t.title),
        Span::styled(format!("{} · {what} ", model.name), t.desc),
    ]);
    let block = block.title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 3 || inner.width < 4 {
        return;
    }
    let map_h: u16 = if inner.height >= 14 { 3 } else { 1 };
    let map_w = inner.width.saturating_sub(2);
    SliceMap::new(fleet, gpu, t).render(Rect::new(inner.x + 1, inner.y + 1, map_w, map_h), buf);
    let mut lines: Vec<Line> = Vec::new();
    let who = |id: crate::fleet::VmId| -> String {
        match fleet.vm(id) {
            Some(vm) => format!(
                "VM {id}{} · {}",
                vm.tenant
                    .as_deref()
                    .map(|x| format!(" [{x}]"))
                    .unwrap_or_default(),
                crate::session::shape(fleet, vm)
            ),
            None => format!("VM {id}"),
        }
    };
    match gpu.mode {
        GpuMode::Whole => {
            lines.push(Line::from(Span::styled(
                match gpu.holder {
                    Some(id) => format!("held by {}", who(id)),
                    None => "free: takes a single-GPU tenant, an isolated share or a gang member".into(),
                },
                t.base,
            )));
        }
        _ => {
            for sh in &gpu.shares {
                let tenant = fleet.vm(sh.vm).and_then(|v| v.tenant.as_deref());
                lines.push(Line::from(vec![
                    Span::styled("██ ", t.tenant_style(tenant, sh.vm)),
                    Span::styled(
                        format!("{} GB w {:.2} · {}", sh.gb, sh.weight, who(sh.vm)),
                        t.base,
                    ),
                ]));
            }
            let w = gpu.weight_sum();
            lines.push(Line::from(Span::styled(
                format!(
                    "{} GB free · weights sum to {w:.2}{}",
                    cap.saturating_sub(gpu.shared_gb()),
                    if w > 1.0 + 1e-9 {
                        ": oversubscribed, the shares time-slice the compute"
                    } else {
                        ""
                    }
                ),
                if w > 1.0 + 1e-9 { t.warn } else { t.desc },
            )));
            lines.push(Line::from(Span::styled(
                "no memory or fault isolation: an isolated request never lands here",
                t.dim,
            )));
        }
    }
    lines.push(Line::from(Span::styled(
        ":mode HOST/GPU whole|shared|mig LAYOUT previews a mode change (a drain)",
        t.dim,
    )));
    let y = inner.y + 1 + map_h + 1;
    if y < inner.bottom() {
        Paragraph::new(lines).wrap(Wrap { trim: false }).render(
            Rect::new(inner.x + 1, y, inner.width.saturating_sub(2), inner.bottom() - y),
            buf,
        );
    }
}

fn profile_table(app: &App, gpu: &crate::fleet::Gpu, teach: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let model = app.session.fleet().catalog.model(gpu.model);
    let mut lines = vec![Line::from(Span::styled(
        format!("{:<11}{:>2} {:<14}{:>4}", "profile", "g", "free starts", "cap"),
        t.header,
    ))];
    for (p, prof) in model.profiles.iter().enumerate() {
        let starts: Vec<String> = mig::free_starts(model, &gpu.occ, p)
            .map(|z| z.to_string())
            .collect();
        let starts = if starts.is_empty() {
            "-".to_string()
        } else {
            starts.join(",")
        };
        let cap = mig::capacity(model, &gpu.occ, p);
        let style = if p == teach {
            t.selected
        } else if cap == 0 {
            t.dim
        } else {
            t.base
        };
        lines.push(Line::from(Span::styled(
            format!(
                "{:<11}{:>2} {:<14}{:>4}",
                prof.name,
                prof.size,
                truncate(&starts, 13),
                cap
            ),
            style,
        )));
    }
    lines
}

/// The teaching lines for profile `teach`, from [`explore::explain_gpu`] (the engine's one
/// explanation): each permitted start with why it is open or blocked, the verdict in words, and
/// a compaction that would make room (Fig. 1c).
fn explanation(app: &App, gpu: &crate::fleet::Gpu, teach: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let model = fleet.catalog.model(gpu.model);
    let prof = &model.profiles[teach];
    let ex = explore::explain_gpu(fleet.catalog, gpu, teach);
    let keys = app
        .keymap
        .key_for(
            super::super::keymap::Layer::Fleet,
            &super::super::command::Command::Profile(super::super::command::Dir::Next),
        )
        .unwrap_or_default();
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("Where can {} start? ", prof.name), t.header),
        Span::styled(format!("({keys}: next)"), t.dim),
    ])];
    let permitted: Vec<String> = prof.starts.iter().map(|z| z.to_string()).collect();
    lines.push(Line::from(Span::styled(
        format!(
            "{} slice{}; permitted starts {}",
            prof.size,
            if prof.size == 1 { "" } else { "s" },
            permitted.join(",")
        ),
        t.desc,
    )));
    let default = match &ex.verdict {
        Verdict::Fits { default_start, .. } => Some(*default_start),
        _ => None,
    };
    for e in &ex.starts {
        let (mark, style, text) = match &e.status {
            StartStatus::Free => {
                let mut after = gpu.occ;
                after.add(model, teach, e.start);
                (
                    "✓",
                    t.ok,
                    format!(
                        "fits, CF after {}{}",
                        mig::cf(model, &after),
                        if default == Some(e.start) {
                            " (default, Eq. 3)"
                        } else {
                            ""
                        }
                    ),
                )
            }
            StartStatus::Occupied { slices, by } => {
                let who: Vec<String> = by
                    .iter()
                    .map(|b| match b.vm {
                        Some(vm) => format!("VM {vm}"),
                        None => b.profile.clone(),
                    })
                    .collect();
                let first = slices.first().copied().unwrap_or(e.start);
                ("✗", t.warn, format!("slice {first} taken by {}", who.join(", ")))
            }
            StartStatus::LimitReached => (
                "✗",
                t.warn,
                format!("limit of {} per GPU reached", prof.max_instances),
            ),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} {}: ", e.start), style),
            Span::styled(text, t.base),
        ]));
    }
    if !ex.fits() {
        // The paper's case first, so that it shows however narrow the panel is.
        let mut figs: Vec<&str> = match ex.verdict {
            Verdict::NotContiguous { .. } => vec!["Fig. 1a"],
            Verdict::NoPermittedStart { .. } => vec!["Fig. 1b"],
            _ => Vec::new(),
        };
        if ex.fits_after_compaction() {
            figs.push("fits after compaction as in Fig. 1c: o optimizes");
        }
        let tag = if figs.is_empty() {
            String::new()
        } else {
            format!("[{}] ", figs.join(" · "))
        };
        lines.push(Line::from(vec![
            Span::styled(tag, t.warn),
            Span::styled(ex.reason.clone(), t.base),
        ]));
    }
    lines
}
