//! Key bindings as data (`assets/keymap.toml`): per layer a list of `{ on, run, desc }`. The one
//! table drives the key dispatch, the status bar and the help overlay, so they cannot disagree.
//! Every `run` string is parsed into a [`Command`] when the key map loads, so a misspelt one is
//! an error then, not a key that silently does nothing.

use super::command::Command;
use anyhow::{anyhow, bail, Result};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The embedded key map.
pub(crate) const KEYMAP_TOML: &str = include_str!("../../assets/keymap.toml");

/// Where the keys go: the top overlay decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    Fleet,
    Move,
    Preview,
    Solve,
    Step,
    Dialog,
    Confirm,
    Palette,
    Help,
    Relayout,
    Mode,
    Regime,
}

impl Layer {
    pub const ALL: [Layer; 12] = [
        Layer::Fleet,
        Layer::Regime,
        Layer::Move,
        Layer::Preview,
        Layer::Relayout,
        Layer::Mode,
        Layer::Solve,
        Layer::Step,
        Layer::Dialog,
        Layer::Confirm,
        Layer::Palette,
        Layer::Help,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Fleet => "fleet",
            Layer::Move => "move",
            Layer::Preview => "preview",
            Layer::Solve => "solve",
            Layer::Step => "step",
            Layer::Dialog => "dialog",
            Layer::Confirm => "confirm",
            Layer::Palette => "palette",
            Layer::Help => "help",
            Layer::Relayout => "relayout",
            Layer::Mode => "mode",
            Layer::Regime => "regime",
        }
    }

    /// What the layer is for, as a heading in the help.
    pub fn title(self) -> &'static str {
        match self {
            Layer::Fleet => "Fleet view",
            Layer::Move => "Moving a VM",
            Layer::Preview => "Plan preview",
            Layer::Solve => "While the optimizer runs",
            Layer::Step => "While the clock steps",
            Layer::Dialog => "Add-VM form",
            Layer::Confirm => "Confirmation",
            Layer::Palette => "Command palette (:)",
            Layer::Help => "Help",
            Layer::Relayout => "Re-layout preview",
            Layer::Mode => "Mode change preview",
            Layer::Regime => "Regime view (the scenario's [regime] played)",
        }
    }
}

/// A key with its modifiers (Shift is folded into the character for printable keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    /// The key of a terminal key event.
    pub(crate) fn from_event(e: &KeyEvent) -> Key {
        Key {
            code: e.code,
            ctrl: e.modifiers.contains(KeyModifiers::CONTROL),
            alt: e.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// Parses `j`, `G`, `?`, `<C-r>`, `<Down>`, `<S-Tab>`, `<F1>`, `<Space>`.
    pub fn parse(s: &str) -> Result<Key> {
        let mut key = Key {
            code: KeyCode::Null,
            ctrl: false,
            alt: false,
        };
        let mut chars = s.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            key.code = KeyCode::Char(c);
            return Ok(key);
        }
        let inner = s
            .strip_prefix('<')
            .and_then(|r| r.strip_suffix('>'))
            .ok_or_else(|| anyhow!("`{s}` is not a key (one character, or a name in <>)"))?;
        let mut name = inner;
        let mut shift = false;
        loop {
            if let Some(r) = name.strip_prefix("C-") {
                key.ctrl = true;
                name = r;
            } else if let Some(r) = name.strip_prefix("A-") {
                key.alt = true;
                name = r;
            } else if let Some(r) = name.strip_prefix("S-") {
                shift = true;
                name = r;
            } else {
                break;
            }
        }
        key.code = match name {
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Tab" if shift => KeyCode::BackTab,
            "Tab" => KeyCode::Tab,
            "Space" => KeyCode::Char(' '),
            "Up" => KeyCode::Up,
            "Down" => KeyCode::Down,
            "Left" => KeyCode::Left,
            "Right" => KeyCode::Right,
            "Home" => KeyCode::Home,
            "End" => KeyCode::End,
            "PageUp" => KeyCode::PageUp,
            "PageDown" => KeyCode::PageDown,
            "Delete" => KeyCode::Delete,
            "Backspace" => KeyCode::Backspace,
            f if f.starts_with('F') && f.len() > 1 => KeyCode::F(
                f[1..]
                    .parse()
                    .map_err(|_| anyhow!("`{s}`: unknown function key"))?,
            ),
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            _ => bail!("`{s}`: unknown key name"),
        };
        Ok(key)
    }
}

/// How a key is shown to the user: `j`, `↓`, `Ctrl-r`, `F1`.
pub(crate) fn key_label(s: &str) -> String {
    let Some(inner) = s.strip_prefix('<').and_then(|r| r.strip_suffix('>')) else {
        return s.to_string();
    };
    let (prefix, name) = if let Some(r) = inner.strip_prefix("C-") {
        ("Ctrl-", r)
    } else if let Some(r) = inner.strip_prefix("S-") {
        ("Shift-", r)
    } else if let Some(r) = inner.strip_prefix("A-") {
        ("Alt-", r)
    } else {
        ("", inner)
    };
    let name = match name {
        "Up" => "↑",
        "Down" => "↓",
        "Left" => "←",
        "Right" => "→",
        "PageUp" => "PgUp",
        "PageDown" => "PgDn",
        "Delete" => "Del",
        n => n,
    };
    format!("{prefix}{name}")
}

/// One binding.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    pub on: Vec<String>,
    pub run: String,
    pub desc: String,
}

impl Binding {
    /// The keys as shown to the user, `/`-joined.
    pub(crate) fn keys_label(&self) -> String {
        self.on.iter().map(|k| key_label(k)).collect::<Vec<_>>().join("/")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    keymap: Vec<Binding>,
}

/// The parsed key map.
#[derive(Debug, Clone)]
pub struct Keymap {
    layers: BTreeMap<Layer, Vec<Bound>>,
}

/// A binding with its keys and command parsed.
#[derive(Debug, Clone)]
struct Bound {
    keys: Vec<Key>,
    command: Command,
    binding: Binding,
}

impl Keymap {
    /// The embedded key map (validated by a test).
    pub fn embedded() -> Keymap {
        Keymap::parse(KEYMAP_TOML)
            .expect("assets/keymap.toml is fixed at build time and parsed by a unit test of this module")
    }

    /// Parses a key map; errors name the layer and the key.
    pub fn parse(text: &str) -> Result<Keymap> {
        let file: BTreeMap<String, LayerFile> = toml::from_str(text)
            .map_err(|e| anyhow!("keymap: {}", crate::catalog::one_line(&e.to_string())))?;
        let mut layers = BTreeMap::new();
        for (name, lf) in file {
            let layer = Layer::ALL
                .into_iter()
                .find(|l| l.name() == name)
                .ok_or_else(|| anyhow!("keymap: unknown layer `{name}`"))?;
            let mut out: Vec<Bound> = Vec::new();
            for b in lf.keymap {
                let keys =
                    b.on.iter()
                        .map(|k| Key::parse(k).map_err(|e| anyhow!("keymap layer `{name}`: {e}")))
                        .collect::<Result<Vec<_>>>()?;
                let command = Command::parse_binding(&b.run).map_err(|e| {
                    anyhow!(
                        "keymap layer `{name}`: key `{}`: run = \"{}\": {e}",
                        b.on.first().map(String::as_str).unwrap_or("?"),
                        b.run
                    )
                })?;
                for k in &keys {
                    if let Some(o) = out.iter().find(|o| o.keys.contains(k)) {
                        bail!(
                            "keymap layer `{name}`: key {:?} is bound to both `{}` and `{}`",
                            k.code,
                            o.binding.run,
                            b.run
                        );
                    }
                }
                out.push(Bound {
                    keys,
                    command,
                    binding: b,
                });
            }
            layers.insert(layer, out);
        }
        Ok(Keymap { layers })
    }

    /// The command bound to `key` in `layer`.
    pub(crate) fn lookup(&self, layer: Layer, key: &Key) -> Option<&Command> {
        self.layers
            .get(&layer)?
            .iter()
            .find(|b| b.keys.contains(key))
            .map(|b| &b.command)
    }

    /// The bindings of a layer, in file order.
    pub fn bindings(&self, layer: Layer) -> impl Iterator<Item = &Binding> {
        self.layers.get(&layer).into_iter().flatten().map(|b| &b.binding)
    }

    /// The first key bound to `command` in `layer`, as shown to the user.
    pub(crate) fn key_for(&self, layer: Layer, command: &Command) -> Option<String> {
        self.layers
            .get(&layer)?
            .iter()
            .find(|b| b.command == *command)
            .and_then(|b| b.binding.on.first())
            .map(|k| key_label(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_keymap_parses_and_has_every_layer() {
        let k = Keymap::embedded();
        for l in Layer::ALL {
            assert!(k.bindings(l).count() > 0, "{}", l.name());
        }
        let ctrl_r = Key {
            code: KeyCode::Char('r'),
            ctrl: true,
            alt: false,
        };
        let redo = Command::Session("redo".into());
        assert_eq!(k.lookup(Layer::Fleet, &ctrl_r), Some(&redo));
        assert_eq!(k.key_for(Layer::Fleet, &redo).as_deref(), Some("Ctrl-r"));
        assert_eq!(k.key_for(Layer::Step, &Command::Cancel).as_deref(), Some("Esc"));
    }

    #[test]
    fn unknown_or_malformed_run_is_an_error_at_load_naming_key_and_string() {
        for (run, what) in [
            ("bogus", "unknown command `bogus`"),
            ("profile sideways", "say next or prev"),
            ("step 1x", "1x"),
            ("optimize sideways", "sideways"),
        ] {
            let text =
                format!("[fleet]\nkeymap = [ {{ on = [\"z\", \"Z\"], run = \"{run}\", desc = \"\" }} ]");
            let e = Keymap::parse(&text).unwrap_err().to_string();
            assert!(e.contains("layer `fleet`"), "{e}");
            assert!(e.contains("key `z`"), "{e}");
            assert!(e.contains(&format!("\"{run}\"")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }

    #[test]
    fn duplicate_key_is_an_error_naming_both_commands() {
        let e = Keymap::parse(
            "[fleet]\nkeymap = [ { on = [\"a\"], run = \"undo\", desc = \"\" }, { on = [\"a\"], run = \"redo\", desc = \"\" } ]",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`undo`") && e.contains("`redo`"), "{e}");
    }

    #[test]
    fn key_names_parse() {
        assert_eq!(Key::parse("<S-Tab>").unwrap().code, KeyCode::BackTab);
        assert_eq!(Key::parse("<F1>").unwrap().code, KeyCode::F(1));
        assert!(Key::parse("<Bogus>").is_err());
        assert_eq!(key_label("<C-d>"), "Ctrl-d");
    }
}
