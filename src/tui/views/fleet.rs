//! The fleet view: one row per host (name, GPUs, on/off, cores and RAM in use, each GPU's slice
//! map, its teaching note). Only the visible rows are drawn, so a 4096-host fleet costs what a
//! screenful costs.

use super::super::app::{App, Target};
use super::super::widgets::{Ghost, SliceMap};
use crate::fleet::{Fleet, Host, HostId};
use crate::session::{self, PlanPhase};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

/// `2×a100-40gb`, `a100-40gb+a30-24gb`, `no GPU`.
pub(crate) fn gpus_label(fleet: &Fleet, h: &Host) -> String {
    let Some(first) = h.gpus.first() else {
        return "no GPU".into();
    };
    if h.gpus.iter().all(|g| g.model == first.model) {
        format!("{}×{}", h.gpus.len(), fleet.catalog.model(first.model).name)
    } else {
        h.gpus
            .iter()
            .map(|g| fleet.catalog.model(g.model).name.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// Columns (in cells) of a GPU in its host's row: a MIG model's memory slices; a model without
/// MIG (one slice, only whole or shared) as wide as an eight-slice GPU, so that its memory bar
/// or holder shows.
fn cell_slices(model: &crate::catalog::GpuModel) -> u16 {
    if model.mig {
        model.memory_slices as u16
    } else {
        8
    }
}

fn gpus_label_len(fleet: &Fleet, h: &Host) -> usize {
    match h.gpus.first() {
        None => 6,
        Some(first) if h.gpus.iter().all(|g| g.model == first.model) => {
            digits(h.gpus.len() as u64) + 1 + fleet.catalog.model(first.model).name.chars().count()
        }
        Some(_) => gpus_label(fleet, h).chars().count(),
    }
}

fn digits(n: u64) -> usize {
    n.max(1).ilog10() as usize + 1
}

/// GIs a playing plan step is creating or destroying on one GPU.
pub(crate) fn ghosts_for(app: &App, host: HostId, gpu: usize) -> Vec<Ghost> {
    let Some(p) = app.session.preview() else {
        return Vec::new();
    };
    let Some(step) = p.schedule.steps.get(p.done) else {
        return Vec::new();
    };
    let (placement, sign) = match p.phase {
        PlanPhase::Pending => return Vec::new(),
        PlanPhase::Created => (Some(&step.to), '+'),
        PlanPhase::Migrated => (step.from.as_ref(), '-'),
    };
    let Some(pl) = placement else {
        return Vec::new();
    };
    let fleet = app.session.fleet();
    let Some(vm) = fleet.vm(step.vm) else {
        return Vec::new();
    };
    pl.gis
        .iter()
        .zip(&vm.gis)
        .filter(|(slot, _)| pl.host == host && slot.gpu == gpu)
        .map(|(slot, req)| Ghost {
            start: slot.start,
            size: fleet.catalog.model(req.model).profiles[req.profile].size,
            vm: step.vm,
            sign,
        })
        .collect()
}

/// Column widths shared by the header and the rows.
struct Columns {
    name: u16,
    model: u16,
    cores: u16,
    ram: u16,
    cell: u16,
    gap: u16,
}

fn columns(fleet: &Fleet, width: u16) -> Columns {
    let mut name = 4u16;
    let mut model = 4u16;
    let mut cores = 5u16;
    let mut ram = 6u16;
    let mut slices = 1u16;
    let mut gpus = 1u16;
    for h in &fleet.hosts {
        name = name.max(h.name.chars().count() as u16);
        model = model.max(gpus_label_len(fleet, h) as u16);
        cores = cores.max(2 * digits(h.cores as u64) as u16 + 1);
        ram = ram.max(2 * digits(h.ram_gb as u64) as u16 + 1);
        let s: u16 = h
            .gpus
            .iter()
            .map(|g| cell_slices(fleet.catalog.model(g.model)))
            .sum();
        slices = slices.max(s);
        gpus = gpus.max(h.gpus.len() as u16);
    }
    name = name.min(14);
    model = model.min(18);
    let fixed = |model: u16| 1 + name + 1 + model + 1 + 3 + 1 + cores + 1 + ram + 1;
    let gaps = gpus.saturating_sub(1);
    let cell = |fixed: u16| (width.saturating_sub(fixed + gaps) / slices).min(4);
    let mut c = Columns {
        name,
        model,
        cores,
        ram,
        cell: cell(fixed(model)),
        gap: 1,
    };
    if c.cell < 2 {
        // Too narrow for labels: drop the GPU column before shrinking the maps.
        c.model = 0;
        c.cell = cell(fixed(0) - 1).max(1);
    }
    c
}

/// Memory slices per column in a host's row: 1, or more when the row's maps at one column per
/// slice would not fit in `room` columns (eight-GPU nodes in a half-width panel), so that every
/// GPU of the row shows.
fn slices_per_column(fleet: &Fleet, host: &Host, cols: &Columns, room: u16) -> u16 {
    let slices: u16 = host
        .gpus
        .iter()
        .map(|g| cell_slices(fleet.catalog.model(g.model)))
        .sum();
    let gaps = (host.gpus.len() as u16).saturating_sub(1) * cols.gap;
    if slices * cols.cell + gaps <= room {
        1
    } else {
        slices.div_ceil(room.saturating_sub(gaps).max(1)).clamp(1, 8)
    }
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer, hits: &mut Vec<(Rect, Target)>) {
    let t = &app.theme;
    let s = &app.session;
    let fleet = s.fleet();
    let g = s.gauges();
    let title = Line::from(vec![
        Span::styled(" Fleet ", t.title),
        Span::styled(
            format!(
                "{} hosts, {} on · {}/{} GPUs active · policy {} ",
                g.hosts,
                g.active_hosts,
                g.active_gpus,
                g.gpus,
                s.policy_name()
            ),
            t.desc,
        ),
    ]);
    let block = Block::bordered().title(title).border_style(t.border_focus);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 2 || inner.width < 10 {
        return;
    }
    let cols = columns(fleet, inner.width);
    let rows = (inner.height - 1) as usize;
    app.view.page.set(rows);
    let n = fleet.hosts.len();
    let sel = app.view.sel.host.min(n.saturating_sub(1));
    let mut scroll = app.view.scroll.get();
    if sel < scroll {
        scroll = sel;
    }
    if sel >= scroll + rows {
        scroll = sel + 1 - rows;
    }
    scroll = scroll.min(n.saturating_sub(rows));
    app.view.scroll.set(scroll);

    header(app, &cols, inner, buf);
    for (row, h) in (scroll..n.min(scroll + rows)).enumerate() {
        host_row(app, &cols, inner, (h, sel), inner.y + 1 + row as u16, buf, hits);
    }
    if n > rows {
        let info = format!(" {}-{} of {} ", scroll + 1, (scroll + rows).min(n), n);
        let w = info.chars().count() as u16;
        if w + 2 < area.width {
            buf.set_string(area.right() - w - 2, area.bottom() - 1, info, t.desc);
        }
    }
}

/// The header row: the column names, then a legend of the slice states over the maps.
fn header(app: &App, cols: &Columns, inner: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut x = inner.x + 1;
    let y = inner.y;
    let mut head = |label: &str, w: u16, x: &mut u16| {
        if w > 0 {
            buf.set_stringn(*x, y, label, w as usize, t.header);
            *x += w + 1;
        }
    };
    head("host", cols.name, &mut x);
    head("GPUs", cols.model, &mut x);
    head("on", 3, &mut x);
    head("cores", cols.cores, &mut x);
    head("RAM GB", cols.ram, &mut x);
    let maps_x = x;
    // Legend: a sample of each slice state in its own style.
    let g = &t.glyphs;
    let legend: [(String, ratatui::style::Style); 6] = [
        (format!("{0}{0}", g.gi), t.gi_style(1)),
        (" GI ".into(), t.dim),
        (format!("{}N", g.free), t.free),
        (" free, Ng fits ".into(), t.dim),
        (g.stranded.to_string(), t.stranded),
        (" none fits".into(), t.dim),
    ];
    let mut lx = maps_x;
    for (text, style) in legend {
        let w = text.chars().count() as u16;
        if lx + w > inner.right() {
            break;
        }
        buf.set_string(lx, y, &text, style);
        lx += w;
    }
}

/// One host's row at `y`: name, GPUs, power state, cores, RAM, then each GPU's slice map, and
/// the host's note; records the mouse areas.
fn host_row(
    app: &App,
    cols: &Columns,
    inner: Rect,
    (h, sel): (HostId, HostId),
    y: u16,
    buf: &mut Buffer,
    hits: &mut Vec<(Rect, Target)>,
) {
    let t = &app.theme;
    let fleet = app.session.fleet();
    let host = &fleet.hosts[h];
    let row_rect = Rect::new(inner.x, y, inner.width, 1);
    let selected = h == sel;
    if selected {
        buf.set_style(row_rect, t.selected);
        let mut m = [0u8; 4];
        buf.set_string(inner.x, y, t.glyphs.marker.encode_utf8(&mut m), t.title);
    }
    let mut x = inner.x + 1;
    buf.set_stringn(x, y, &host.name, cols.name as usize, t.base);
    x += cols.name + 1;
    if cols.model > 0 {
        buf.set_stringn(x, y, gpus_label(fleet, host), cols.model as usize, t.desc);
        x += cols.model + 1;
    }
    let (on, st) = if host.is_active() {
        ("on", t.host_on)
    } else {
        ("off", t.host_off)
    };
    buf.set_string(x, y, on, st);
    x += 4;
    let cores = format!("{}/{}", host.used_cores, host.cores);
    buf.set_string(x + cols.cores - cores.chars().count() as u16, y, cores, t.base);
    x += cols.cores + 1;
    let ram = format!("{}/{}", host.used_ram, host.ram_gb);
    buf.set_string(x + cols.ram - ram.chars().count() as u16, y, ram, t.base);
    x += cols.ram + 1;
    hits.push((Rect::new(inner.x, y, x - inner.x, 1), Target::Host(h)));
    let per_column = slices_per_column(fleet, host, cols, inner.right().saturating_sub(x));
    for (k, gpu) in host.gpus.iter().enumerate() {
        let model = fleet.catalog.model(gpu.model);
        let slices = model.memory_slices.max(1) as u16;
        let w = if per_column > 1 {
            cell_slices(model).div_ceil(per_column)
        } else {
            cell_slices(model) * cols.cell
        };
        // Mouse areas: one per memory slice (a GPU without MIG is one area), or one per column
        // (its first slice) when a column holds several.
        let (hit_w, per) = if w >= slices {
            (w / slices, 1)
        } else {
            (1, slices.div_ceil(w.max(1)))
        };
        if x + w > inner.right() {
            break;
        }
        let r = Rect::new(x, y, w, 1);
        let ghosts = ghosts_for(app, h, k);
        let cursor = (selected && k == app.view.sel.gpu).then_some(app.view.sel.slice);
        SliceMap::new(fleet, gpu, t)
            .cursor(cursor)
            .ghosts(&ghosts)
            .render(r, buf);
        for u in 0..slices.div_ceil(per) {
            hits.push((
                Rect::new(x + u * hit_w, y, hit_w, 1),
                Target::Slice {
                    host: h,
                    gpu: k,
                    slice: (u * per) as u8,
                },
            ));
        }
        x += w + cols.gap;
    }
    let note = host
        .note
        .as_deref()
        .or_else(|| host.gpu_notes.values().next().map(String::as_str));
    if let Some(note) = note {
        if x + 4 < inner.right() {
            let w = (inner.right() - x - 1) as usize;
            let text = truncate(note, w);
            buf.set_string(x + 1, y, text, t.note);
        }
    }
}

/// Cuts `s` to `w` characters, marking the cut with `…`.
pub fn truncate(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// One line about what the cursor is on, shown when there is no message.
pub(crate) fn describe_cursor(app: &App) -> String {
    let s = &app.session;
    let fleet = s.fleet();
    let Some(host) = fleet.hosts.get(app.view.sel.host) else {
        return String::new();
    };
    let Some(gpu) = host.gpus.get(app.view.sel.gpu) else {
        return format!("{}: no GPU; {} VMs", host.name, host.vms.len());
    };
    let model = fleet.catalog.model(gpu.model);
    if gpu.mode != crate::fleet::GpuMode::Mig {
        return describe_gpu_mode(fleet, &format!("{}/{}", host.name, app.view.sel.gpu), gpu);
    }
    let u = app.view.sel.slice;
    let at = format!("{}/{} slice {u}", host.name, app.view.sel.gpu);
    if let Some(gi) = gpu.gi_at(fleet.catalog, u) {
        let Some(vm) = fleet.vm(gi.vm) else {
            return at;
        };
        let kind = match vm.kind {
            crate::fleet::VmKind::Job => "job",
            crate::fleet::VmKind::Tenant => "tenant",
        };
        let mut text = format!("{at}: VM {} ({}, {kind}", vm.id, session::shape(fleet, vm));
        match vm.departure() {
            Some(d) => text += &format!(", departs in {})", session::format_duration(d - s.now_s())),
            None => text += ", open-ended)",
        }
        return text + "  x remove · m move";
    }
    match session::largest_start_at(model, &gpu.occ, u) {
        Some(p) => format!(
            "{at}: free; the largest profile that can start here is {}",
            model.profiles[p].name
        ),
        None => format!("{at}: free, but no profile can start here (stranded)"),
    }
}

/// A whole or shared GPU in one line: its mode and residents.
pub(crate) fn describe_gpu_mode(fleet: &Fleet, at: &str, gpu: &crate::fleet::Gpu) -> String {
    use crate::fleet::GpuMode;
    match gpu.mode {
        GpuMode::Whole => match gpu.holder.and_then(|id| fleet.vm(id)) {
            Some(vm) => format!(
                "{at}: whole GPU held by VM {} ({})",
                vm.id,
                session::shape(fleet, vm)
            ),
            None => format!("{at}: whole GPU, free (a single-GPU tenant or a gang member)"),
        },
        GpuMode::Shared => {
            let cap = crate::fleet::gpu_gb(fleet.catalog, gpu.model);
            let w = gpu.weight_sum();
            format!(
                "{at}: shared, {} share(s), {}/{cap} GB, weights {w:.2}{}",
                gpu.shares.len(),
                gpu.shared_gb(),
                if w > 1.0 + 1e-9 { " (oversubscribed)" } else { "" }
            )
        }
        GpuMode::Mig => format!("{at}: MIG"),
    }
}
