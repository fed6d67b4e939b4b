//! Small custom widgets: the MIG slice map of one GPU, a one-line bar gauge, and `centred`, the
//! rectangle that popups are drawn in.
//!
//! A slice map is a discrete grid of 4 to 8 memory slices, so it is drawn cell by cell into the
//! buffer rather than on a canvas: each memory slice gets `width / slices` columns; a GI is one
//! block over its slices, labelled with as much of `profile VM` as fits; a free slice shows the
//! compute size (`Ng`) of the largest profile that could start there, or `·` when none can.
//!
//! A GPU out of MIG mode takes the same width: a whole GPU is one block (its holder, `whole #VM`
//! or `gang #VM`, or `whole free`), a shared GPU a memory bar with one segment per share, as wide
//! as its memory limit and in its tenant's colour, labelled with the VM and its compute weight,
//! then the free GB.

use super::theme::Theme;
use crate::fleet::{gpu_gb, Fleet, Gpu, GpuMode, Shape, VmId};
use crate::session;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

/// A GI that a plan step is creating (or destroying), drawn over free slices.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ghost {
    pub start: u8,
    pub size: u8,
    pub vm: VmId,
    /// `+` being created, `-` being destroyed.
    pub sign: char,
}

/// The slice map of one GPU.
pub(crate) struct SliceMap<'a> {
    pub fleet: &'a Fleet,
    pub gpu: &'a Gpu,
    pub theme: &'a Theme,
    /// Slice under the cursor.
    pub cursor: Option<u8>,
    pub ghosts: &'a [Ghost],
}

impl<'a> SliceMap<'a> {
    pub fn new(fleet: &'a Fleet, gpu: &'a Gpu, theme: &'a Theme) -> Self {
        SliceMap {
            fleet,
            gpu,
            theme,
            cursor: None,
            ghosts: &[],
        }
    }

    pub fn cursor(mut self, c: Option<u8>) -> Self {
        self.cursor = c;
        self
    }

    pub(crate) fn ghosts(mut self, g: &'a [Ghost]) -> Self {
        self.ghosts = g;
        self
    }
}

/// The longest label of a GI that fits in `width` columns.
fn gi_label(profile: &str, vm: VmId, width: usize) -> String {
    let short = profile.split('.').next().unwrap_or(profile);
    let candidates = [
        format!("{profile} VM {vm}"),
        format!("{profile} #{vm}"),
        format!("{short} #{vm}"),
        format!("#{vm}"),
        format!("{vm}"),
    ];
    candidates
        .into_iter()
        .find(|c| c.chars().count() <= width)
        .unwrap_or_default()
}

/// Writes `text` centred in `width` columns starting at `x`, over cells already filled.
fn put_centred(buf: &mut Buffer, x: u16, y: u16, width: u16, text: &str, style: Style) {
    let len = text.chars().count() as u16;
    if len == 0 || len > width {
        return;
    }
    let x0 = x + (width - len) / 2;
    buf.set_string(x0, y, text, style);
}

fn fill(buf: &mut Buffer, area: Rect, ch: char, style: Style) {
    let mut s = [0u8; 4];
    let sym: &str = ch.encode_utf8(&mut s);
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.set_symbol(sym).set_style(style);
            }
        }
    }
}

impl SliceMap<'_> {
    /// A whole GPU: one block for its holder, or free.
    fn render_whole(&self, area: Rect, buf: &mut Buffer) {
        let g = &self.theme.glyphs;
        let mid = area.y + (area.height - 1) / 2;
        match self.gpu.holder.and_then(|id| self.fleet.vm(id)) {
            Some(vm) => {
                let style = self.theme.tenant_style(vm.tenant.as_deref(), vm.id);
                fill(buf, area, g.gi, style);
                let what = if matches!(vm.shape, Shape::Gang { .. }) {
                    "gang"
                } else {
                    "whole"
                };
                let room = area.width.saturating_sub(1) as usize;
                let label = [
                    format!("{what} VM {}", vm.id),
                    format!("{what} #{}", vm.id),
                    format!("#{}", vm.id),
                ]
                .into_iter()
                .find(|c| c.chars().count() <= room)
                .unwrap_or_default();
                let label_style = self.theme.gi_label.unwrap_or(style);
                put_centred(buf, area.x, mid, area.width, &label, label_style);
            }
            None => {
                fill(buf, area, g.free, self.theme.free);
                let label = ["whole free", "whole", "W"]
                    .into_iter()
                    .find(|c| c.chars().count() as u16 <= area.width.saturating_sub(1))
                    .unwrap_or_default();
                put_centred(buf, area.x, mid, area.width, label, self.theme.free);
            }
        }
    }

    /// A shared GPU: a memory bar, one segment per share (its GB, its tenant's colour).
    fn render_shared(&self, area: Rect, buf: &mut Buffer) {
        let g = &self.theme.glyphs;
        let mid = area.y + (area.height - 1) / 2;
        let cap = gpu_gb(self.fleet.catalog, self.gpu.model).max(1) as u64;
        let w = area.width as u64;
        let mut x = 0u64;
        let mut used = 0u64;
        for sh in &self.gpu.shares {
            used += sh.gb as u64;
            // A bar narrower than its shares is full: the rest do not show (and `clamp` below
            // needs x + 1 <= w).
            if x >= w {
                break;
            }
            // Segment ends at the rounded share of the bar, at least one column per share.
            let end = ((used * w + cap / 2) / cap).clamp(x + 1, w);
            let r = Rect::new(area.x + x as u16, area.y, (end - x) as u16, area.height);
            let tenant = self.fleet.vm(sh.vm).and_then(|v| v.tenant.as_deref());
            let style = self.theme.tenant_style(tenant, sh.vm);
            fill(buf, r, g.gi, style);
            let room = r.width.saturating_sub(1) as usize;
            let label = [
                format!("#{} {}G w{:.2}", sh.vm, sh.gb, sh.weight),
                format!("#{} w{:.2}", sh.vm, sh.weight),
                format!("#{}", sh.vm),
            ]
            .into_iter()
            .find(|c| c.chars().count() <= room)
            .unwrap_or_default();
            put_centred(
                buf,
                r.x,
                mid,
                r.width,
                &label,
                self.theme.gi_label.unwrap_or(style),
            );
            x = end;
        }
        if x < w {
            let r = Rect::new(area.x + x as u16, area.y, (w - x) as u16, area.height);
            fill(buf, r, g.free, self.theme.free);
            let free = cap.saturating_sub(used);
            let over = if self.gpu.weight_sum() > 1.0 + 1e-9 {
                "!"
            } else {
                ""
            };
            let label = [
                format!("S {free}G free{over}"),
                format!("S {free}G{over}"),
                format!("{free}{over}"),
            ]
            .into_iter()
            .find(|c| c.chars().count() as u16 <= r.width.saturating_sub(1))
            .unwrap_or_default();
            put_centred(buf, r.x, mid, r.width, &label, self.theme.free);
        } else if self.gpu.weight_sum() > 1.0 + 1e-9 {
            // Full and oversubscribed: the last column says so.
            buf.set_string(area.right() - 1, mid, "!", self.theme.warn);
        }
    }
}

impl Widget for SliceMap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        match self.gpu.mode {
            GpuMode::Mig => {}
            GpuMode::Whole => {
                self.render_whole(area, buf);
                return self.draw_cursor(area, buf);
            }
            GpuMode::Shared => {
                self.render_shared(area, buf);
                return self.draw_cursor(area, buf);
            }
        }
        let catalog = self.fleet.catalog;
        let model = catalog.model(self.gpu.model);
        let n = model.memory_slices as u16;
        if area.width < n {
            self.render_compact(area, buf);
            return self.draw_cursor(area, buf);
        }
        let cw = area.width / n;
        let mid = area.y + (area.height - 1) / 2;
        let g = &self.theme.glyphs;
        let cell = |u: u16, w: u16| Rect::new(area.x + u * cw, area.y, w, area.height);
        let mut u = 0u16;
        while u < n {
            if let Some(gi) = self.gpu.gi_at(catalog, u as u8) {
                let prof = &model.profiles[gi.profile];
                let w = (prof.size as u16).min(n - u) * cw;
                let r = cell(u, w);
                fill(buf, r, g.gi, self.theme.gi_style(gi.vm));
                // In monochrome a block keeps at least one glyph, so it reads as a GI; wide
                // blocks keep a margin so that neighbouring labels do not run together.
                let room = if self.theme.mono || w >= 4 {
                    w.saturating_sub(1)
                } else {
                    w
                };
                let label = gi_label(&prof.name, gi.vm, room as usize);
                put_centred(buf, r.x, mid, w, &label, self.theme.gi_label_style(gi.vm));
                u += prof.size as u16;
                continue;
            }
            let ghost = self
                .ghosts
                .iter()
                .find(|gh| gh.start as u16 <= u && u < gh.start as u16 + gh.size as u16);
            if let Some(gh) = ghost {
                let end = (gh.start as u16 + gh.size as u16).min(n);
                // Only the free part of the ghost from here on (a real GI wins).
                let mut stop = u;
                while stop < end && self.gpu.gi_at(catalog, stop as u8).is_none() {
                    stop += 1;
                }
                let w = (stop - u) * cw;
                let r = cell(u, w);
                fill(buf, r, g.ghost, self.theme.ghost);
                let label = format!("{}{}", gh.sign, gi_label("", gh.vm, w as usize - 1).trim());
                if label.chars().count() as u16 <= w {
                    put_centred(buf, r.x, mid, w, &label, self.theme.ghost);
                }
                u = stop;
                continue;
            }
            let r = cell(u, cw);
            match session::largest_start_at(model, &self.gpu.occ, u as u8) {
                Some(p) => {
                    fill(buf, r, g.free, self.theme.free);
                    if cw >= 2 {
                        let c = model.profiles[p].compute;
                        let text = if cw >= 4 { format!("{c}g") } else { c.to_string() };
                        buf.set_string(r.x + 1, mid, text, self.theme.free);
                    }
                }
                None => {
                    fill(buf, r, ' ', self.theme.stranded);
                    let mut s = [0u8; 4];
                    put_centred(
                        buf,
                        r.x,
                        mid,
                        cw,
                        g.stranded.encode_utf8(&mut s),
                        self.theme.stranded,
                    );
                }
            }
            u += 1;
        }
        self.draw_cursor(area, buf);
    }
}

impl SliceMap<'_> {
    /// The cursor's cell: a memory slice's columns (on any mode, the GPU keeps its slice grid),
    /// or the column that holds the slice when a column holds several.
    fn draw_cursor(&self, area: Rect, buf: &mut Buffer) {
        let n = self.fleet.catalog.model(self.gpu.model).memory_slices.max(1) as u16;
        let mid = area.y + (area.height - 1) / 2;
        let Some(c) = self.cursor.map(u16::from).filter(|&c| c < n) else {
            return;
        };
        let cw = area.width / n;
        if cw > 0 {
            buf.set_style(Rect::new(area.x + c * cw, mid, cw, 1), self.theme.cursor);
        } else if area.width > 0 {
            let per = n.div_ceil(area.width);
            buf.set_style(Rect::new(area.x + c / per, mid, 1, 1), self.theme.cursor);
        }
    }

    /// A MIG GPU narrower than its memory slices: each column stands for `per` slices, a GI's
    /// glyph in its colour when a GI covers all of them, half a block when only some, else
    /// free (some profile starts there) or stranded. No labels.
    fn render_compact(&self, area: Rect, buf: &mut Buffer) {
        let catalog = self.fleet.catalog;
        let model = catalog.model(self.gpu.model);
        let n = model.memory_slices as u16;
        let g = &self.theme.glyphs;
        let per = n.div_ceil(area.width.max(1));
        for col in 0..area.width {
            let (lo, hi) = (col * per, ((col + 1) * per).min(n));
            if lo >= n {
                break;
            }
            let gis: Vec<_> = (lo..hi)
                .filter_map(|u| self.gpu.gi_at(catalog, u as u8))
                .collect();
            let r = Rect::new(area.x + col, area.y, 1, area.height);
            if let Some(first) = gis.first() {
                let glyph = if gis.len() as u16 == hi - lo { g.gi } else { '▌' };
                fill(buf, r, glyph, self.theme.gi_style(first.vm));
            } else if (lo..hi).any(|u| session::largest_start_at(model, &self.gpu.occ, u as u8).is_some()) {
                fill(buf, r, g.free, self.theme.free);
            } else {
                let mut s = [0u8; 4];
                fill(buf, r, ' ', self.theme.stranded);
                put_centred(
                    buf,
                    r.x,
                    area.y + (area.height - 1) / 2,
                    1,
                    g.stranded.encode_utf8(&mut s),
                    self.theme.stranded,
                );
            }
        }
    }
}

/// A one-line gauge: `label ███████░░░ text`, drawn with theme styles only.
pub(crate) struct Bar<'a> {
    pub ratio: f64,
    pub text: String,
    pub theme: &'a Theme,
}

impl Widget for Bar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 || area.width == 0 {
            return;
        }
        let text_w = self.text.chars().count() as u16 + 1;
        let bar_w = area.width.saturating_sub(text_w);
        let ratio = if self.ratio.is_finite() {
            self.ratio.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let filled = (ratio * bar_w as f64).round() as u16;
        for i in 0..bar_w {
            let (sym, st) = if i < filled {
                ("█", self.theme.gauge_fill)
            } else {
                ("░", self.theme.gauge_empty)
            };
            if let Some(c) = buf.cell_mut((area.x + i, area.y)) {
                c.set_symbol(sym).set_style(st);
            }
        }
        buf.set_stringn(
            area.x + bar_w + 1.min(bar_w),
            area.y,
            &self.text,
            area.width.saturating_sub(bar_w) as usize,
            self.theme.base,
        );
    }
}

/// A rectangle of `w` x `h` centred in `area` (clamped to it).
pub(crate) fn centred(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;
    use crate::fleet::{GiRequest, GiSlot, Host, Placement, Vm, VmId};

    fn lines(buf: &Buffer) -> Vec<String> {
        let a = buf.area;
        (a.top()..a.bottom())
            .map(|y| (a.left()..a.right()).map(|x| buf[(x, y)].symbol()).collect())
            .collect()
    }

    /// One host with one A100 holding a single-GI VM (id, profile, start) per entry.
    fn one_a100(gis: &[(VmId, &str, u8)]) -> Fleet {
        let c = embedded();
        let m = c.model_id("a100-40gb").unwrap();
        let mut f = Fleet::new(c, vec![Host::new("h", 80, 512, vec![m], 0)]);
        for &(id, p, z) in gis {
            let vm = Vm::job(id, GiRequest::named(c, "a100-40gb", &[p]).unwrap(), 4, 16);
            f.add_placed(
                vm,
                Placement {
                    host: 0,
                    gis: vec![GiSlot { gpu: 0, start: z }],
                },
            )
            .unwrap();
        }
        f
    }

    /// A shared bar narrower than its shares (three shares, two columns) draws the first ones
    /// and stops: it used to panic in `clamp` once the bar was full.
    #[test]
    fn a_shared_bar_narrower_than_its_shares_draws_without_panic() {
        let share = |id: u32, gb: u32| {
            format!(
                "[[vm]]\nid = {id}\nmodel = \"l40s-48gb\"\nshare_gb = {gb}\ncores = 1\nram_gb = 1\nhost = \"h\"\nat = [\"0\"]\n"
            )
        };
        let text = format!(
            "name = \"narrow\"\n[[host]]\nname = \"h\"\ncores = 8\nram_gb = 64\ngpus = [\"l40s-48gb\"]\nmodes = [\"shared\"]\n[workload]\nenabled = false\n{}{}{}",
            share(1, 24),
            share(2, 16),
            share(3, 8)
        );
        let s = crate::scenario::parse(&text, "narrow.toml").unwrap();
        let f = &s.fleet;
        let theme = Theme::mono();
        for w in 1..=4 {
            let mut buf = Buffer::empty(Rect::new(0, 0, w, 1));
            SliceMap::new(f, &f.hosts[0].gpus[0], &theme).render(buf.area, &mut buf);
            assert_eq!(lines(&buf)[0].chars().count(), w as usize);
        }
    }

    /// One A100 with 1g.5gb at 0 (VM 1) and 3g.20gb at 4 (VM 2).
    fn fleet() -> Fleet {
        one_a100(&[(1, "1g.5gb", 0), (2, "3g.20gb", 4)])
    }

    #[test]
    fn mono_map_reads_from_glyphs() {
        let f = fleet();
        let theme = Theme::mono();
        let mut buf = Buffer::empty(Rect::new(0, 0, 16, 1));
        SliceMap::new(&f, &f.hosts[0].gpus[0], &theme).render(buf.area, &mut buf);
        // Slice 1: only 1g.5gb starts there; slice 2: 2g.10gb; slice 3: 1g.5gb; 4-7 the 3g GI.
        // A GI keeps at least one `█` in monochrome, so the 1-slice GI of VM 1 shows `1█`.
        assert_eq!(lines(&buf), vec!["1█░1░2░1█3g #2██"]);
        let label = theme.gi_label.unwrap();
        assert_eq!(buf[(0, 0)].style().add_modifier, label.add_modifier);
        assert_eq!(buf[(8, 0)].symbol(), "█");
        assert_eq!(buf[(2, 0)].symbol(), "░");
    }

    #[test]
    fn stranded_slice_shows_a_dot() {
        // A 1g.5gb at 6 leaves slice 7 free where nothing can start (1g.5gb starts end at 6).
        let f = one_a100(&[(3, "1g.5gb", 6)]);
        let theme = Theme::mono();
        let mut buf = Buffer::empty(Rect::new(0, 0, 8, 1));
        SliceMap::new(&f, &f.hosts[0].gpus[0], &theme).render(buf.area, &mut buf);
        assert_eq!(lines(&buf), vec!["░░░░░░█·"]);
        let mut buf = Buffer::empty(Rect::new(0, 0, 24, 3));
        SliceMap::new(&f, &f.hosts[0].gpus[0], &theme)
            .cursor(Some(7))
            .render(buf.area, &mut buf);
        // Slice 0: 4g.20gb is the largest that starts there (7g.40gb would need slice 6);
        // slice 4: 2g.10gb (3g.20gb would need 6); slice 7: nothing can start.
        assert_eq!(
            lines(&buf),
            vec![
                "░░░░░░░░░░░░░░░░░░███   ",
                "░4░░1░░2░░1░░2░░1░#3█ · ",
                "░░░░░░░░░░░░░░░░░░███   ",
            ]
        );
        assert!(buf[(22, 1)]
            .style()
            .add_modifier
            .contains(ratatui::style::Modifier::UNDERLINED));
    }

    #[test]
    fn colour_map_uses_vm_block_styles() {
        let f = fleet();
        let theme = Theme::color();
        let mut buf = Buffer::empty(Rect::new(0, 0, 32, 1));
        SliceMap::new(&f, &f.hosts[0].gpus[0], &theme).render(buf.area, &mut buf);
        assert_eq!(lines(&buf), vec![" #1 ░1g░░2g░░1g░  3g.20gb VM 2  "]);
        assert_eq!(buf[(0, 0)].style().bg, theme.gi_style(1).bg);
        assert_eq!(buf[(20, 0)].style().bg, theme.gi_style(2).bg);
        assert_eq!(buf[(5, 0)].style().fg, theme.free.fg);
    }
}
