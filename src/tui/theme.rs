//! One place for every colour and glyph of the TUI. Widgets ask the theme for a named style
//! and never name a colour, so the monochrome theme (chosen when `NO_COLOR` is set) changes the
//! whole screen at once. In monochrome, slice states read from glyphs alone: `█` a GI, `▒` a GI
//! being created or destroyed by a plan, `░` a free slice where some profile can start, `·` a
//! free slice where none can (stranded).

use ratatui::style::{Color, Modifier, Style};

/// The glyphs of the slice states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Glyphs {
    /// Fill of a GI block (a space in colour, where the background carries the block).
    pub gi: char,
    /// A GI a plan step is creating or destroying.
    pub ghost: char,
    /// A free slice where some profile can start.
    pub free: char,
    /// A free slice where no profile can start.
    pub stranded: char,
    /// The selection marker of a row.
    pub marker: char,
}

/// Named styles of the TUI.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub mono: bool,
    pub glyphs: Glyphs,
    pub base: Style,
    pub border: Style,
    pub border_focus: Style,
    pub title: Style,
    pub header: Style,
    pub dim: Style,
    pub note: Style,
    pub selected: Style,
    /// The slice under the cursor.
    pub cursor: Style,
    pub host_on: Style,
    pub host_off: Style,
    /// GI blocks, one per VM id modulo the length.
    pub gi: Vec<Style>,
    /// Labels on GI blocks; `None` uses the block's style.
    pub gi_label: Option<Style>,
    pub free: Style,
    pub stranded: Style,
    pub ghost: Style,
    pub ok: Style,
    pub warn: Style,
    pub error: Style,
    pub key: Style,
    pub desc: Style,
    pub status: Style,
    pub mode: Style,
    pub modified: Style,
    pub gauge_fill: Style,
    pub gauge_empty: Style,
    /// Chart series, in order: active hosts, power, acceptance, stranded.
    pub series: [Style; 4],
    pub popup: Style,
    pub input: Style,
}

impl Theme {
    /// `NO_COLOR` set to anything non-empty selects the monochrome theme (no-color.org).
    pub(crate) fn from_env() -> Theme {
        match std::env::var_os("NO_COLOR") {
            Some(v) if !v.is_empty() => Theme::mono(),
            _ => Theme::color(),
        }
    }

    pub fn color() -> Theme {
        let fg = |c| Style::new().fg(c);
        let block = |c| Style::new().fg(Color::Black).bg(c);
        Theme {
            mono: false,
            glyphs: Glyphs {
                gi: ' ',
                ghost: '▒',
                free: '░',
                stranded: '·',
                marker: '▶',
            },
            base: Style::new(),
            border: fg(Color::DarkGray),
            border_focus: fg(Color::Cyan),
            title: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            header: fg(Color::Gray).add_modifier(Modifier::BOLD),
            dim: fg(Color::DarkGray),
            note: fg(Color::Yellow).add_modifier(Modifier::ITALIC),
            selected: Style::new()
                .bg(Color::Rgb(40, 44, 52))
                .add_modifier(Modifier::BOLD),
            cursor: Style::new().add_modifier(Modifier::REVERSED | Modifier::UNDERLINED),
            host_on: fg(Color::Green),
            host_off: fg(Color::DarkGray),
            gi: vec![
                block(Color::Rgb(102, 178, 255)),
                block(Color::Rgb(255, 179, 102)),
                block(Color::Rgb(153, 221, 136)),
                block(Color::Rgb(221, 153, 221)),
                block(Color::Rgb(255, 221, 119)),
                block(Color::Rgb(119, 221, 221)),
                block(Color::Rgb(238, 136, 136)),
                block(Color::Rgb(187, 187, 255)),
            ],
            gi_label: None,
            free: fg(Color::Green),
            stranded: fg(Color::Red),
            ghost: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ok: fg(Color::Green),
            warn: fg(Color::Yellow),
            error: fg(Color::Red).add_modifier(Modifier::BOLD),
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            desc: fg(Color::Gray),
            status: Style::new().fg(Color::White).bg(Color::Rgb(30, 34, 42)),
            mode: Style::new()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            modified: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            gauge_fill: fg(Color::Cyan),
            gauge_empty: fg(Color::DarkGray),
            series: [
                fg(Color::Cyan),
                fg(Color::Yellow),
                fg(Color::Green),
                fg(Color::Red),
            ],
            popup: Style::new().bg(Color::Rgb(22, 24, 30)),
            input: fg(Color::White).add_modifier(Modifier::BOLD),
        }
    }

    /// The monochrome theme: no colour at all; emphasis by bold, reverse and underline only.
    pub fn mono() -> Theme {
        let plain = Style::new();
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Theme {
            mono: true,
            glyphs: Glyphs {
                gi: '█',
                ghost: '▒',
                free: '░',
                stranded: '·',
                marker: '>',
            },
            base: plain,
            border: plain,
            border_focus: bold,
            title: bold,
            header: bold,
            dim: plain,
            note: Style::new().add_modifier(Modifier::ITALIC),
            selected: bold,
            cursor: Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
            host_on: bold,
            host_off: plain,
            gi: vec![plain],
            gi_label: Some(Style::new().add_modifier(Modifier::REVERSED)),
            free: plain,
            stranded: plain,
            ghost: bold,
            ok: plain,
            warn: bold,
            error: bold,
            key: bold,
            desc: plain,
            status: Style::new().add_modifier(Modifier::REVERSED),
            mode: bold,
            modified: bold,
            gauge_fill: plain,
            gauge_empty: plain,
            series: [plain; 4],
            popup: plain,
            input: bold,
        }
    }

    /// The style of the GI block of a VM.
    pub(crate) fn gi_style(&self, vm: u64) -> Style {
        self.gi[(vm as usize) % self.gi.len()]
    }

    /// The colour of a tenant (a share or a whole GPU on the fleet view): one palette entry per
    /// tenant name, so all of a tenant's shares look alike; a VM with no tenant takes its own.
    pub(crate) fn tenant_style(&self, tenant: Option<&str>, vm: u64) -> Style {
        match tenant {
            Some(t) => {
                // FNV-1a of the name: stable across runs and platforms.
                let h = t.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                });
                self.gi[(h as usize) % self.gi.len()]
            }
            None => self.gi_style(vm),
        }
    }

    /// The style of the label on the GI block of a VM.
    pub(crate) fn gi_label_style(&self, vm: u64) -> Style {
        self.gi_label.unwrap_or_else(|| self.gi_style(vm))
    }
}
