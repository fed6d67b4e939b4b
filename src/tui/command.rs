//! The TUI's own commands, typed: what a key binding's `run` string or a `:` line means to
//! the screen (move the cursor, open or answer an overlay, quit). Lines of the session's command
//! language (`step 1h`, `optimize opt`, `w FILE`) stay text here and become an action through
//! [`session::parse_command`] when they run, against the session as it is then.

use crate::session;
use anyhow::{anyhow, bail, Result};
use std::fmt;

/// A way through a cycle (profiles, fields, choices, history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Next,
    Prev,
}

impl Dir {
    /// The index after (or before) `i` in a cycle of `n` (at least 1).
    pub fn step(self, i: usize, n: usize) -> usize {
        match self {
            Dir::Next => (i + 1) % n,
            Dir::Prev => (i + n - 1) % n,
        }
    }
}

/// A way up or down (scrolling, play speed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpDown {
    Up,
    Down,
}

/// A command of the TUI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Previous host (or scroll up, in the help and the plan preview).
    Up,
    /// Next host (or scroll down, in the help and the plan preview).
    Down,
    /// Previous slice, then previous GPU.
    Left,
    /// Next slice, then next GPU.
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Next lower panel of the narrow layout.
    Panel,
    /// The profile the detail explains.
    Profile(Dir),
    /// Simulated time per play tick.
    Speed(UpDown),
    /// Mouse selection on or off.
    Mouse,
    Help,
    Palette,
    /// Closes the top overlay.
    Close,
    /// Runs the palette's line, or adds the form's VM.
    Submit,
    /// Completes the palette's command name.
    Complete,
    /// Walks the palette's history.
    History(Dir),
    /// The add-VM form's field.
    Field(Dir),
    /// The choice of the form's field, or the layout of the re-layout preview.
    Choice(Dir),
    /// Scrolls the re-layout preview's displaced VMs, or the mode preview's leaving VMs.
    Scroll(UpDown),
    Yes,
    No,
    /// Cancels the running solve or step.
    Cancel,
    /// Opens the add-VM form.
    AddVm,
    /// Asks to remove the VM under the cursor.
    RemoveUnderCursor,
    /// Starts moving the VM under the cursor by hand.
    StartMove,
    /// Moves the VM being moved to the cursor.
    MoveHere,
    /// Opens the re-layout preview of the selected GPU, on this layout (empty: the first one).
    Relayout(String),
    /// Applies the mode change the mode preview shows (`:mode`), as `:mode!` would.
    ApplyMode,
    /// Quits, asking first when there is work not saved.
    Quit,
    /// Quits without asking.
    ForceQuit,
    /// Opens the regime view (the scenario's `[regime]` played over simulated time), or closes it.
    Regime,
    /// Plays or pauses the regime view's clock.
    RegimePlay,
    /// Steps the regime view's clock by this many seconds.
    RegimeStep(u64),
    /// Steps the regime view's clock to the next event, planner run or drain.
    RegimeNext(RegimeTarget),
    /// A line of the session's command language.
    Session(String),
}

/// Where `regime-next` stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegimeTarget {
    /// The next event (arrival, departure, node back, timeout, planner run).
    Event,
    /// Right after the layout planner's next run.
    Plan,
    /// Right after the next drain.
    Drain,
}

impl RegimeTarget {
    pub fn name(self) -> &'static str {
        match self {
            RegimeTarget::Event => "event",
            RegimeTarget::Plan => "plan",
            RegimeTarget::Drain => "drain",
        }
    }
}

fn dir(head: &str, arg: &str) -> Result<Dir> {
    match arg {
        "" | "next" => Ok(Dir::Next),
        "prev" => Ok(Dir::Prev),
        o => bail!("`{head} {o}`: say next or prev"),
    }
}

fn up_down(head: &str, arg: &str, default: UpDown) -> Result<UpDown> {
    match arg {
        "" => Ok(default),
        "up" => Ok(UpDown::Up),
        "down" => Ok(UpDown::Down),
        o => bail!("`{head} {o}`: say up or down"),
    }
}

impl Command {
    /// Parses a command line. A line whose first word is not one of the TUI's own commands
    /// is a line of the session's language, checked only when it runs.
    pub fn parse(line: &str) -> Result<Command> {
        use Command as C;
        let line = line.trim();
        let (head, arg) = line
            .split_once(' ')
            .map(|(h, a)| (h, a.trim()))
            .unwrap_or((line, ""));
        let plain = |c: Command| {
            if arg.is_empty() {
                Ok(c)
            } else {
                Err(anyhow!("`{head}` takes no argument (got `{arg}`)"))
            }
        };
        match head {
            "up" => plain(C::Up),
            "down" => plain(C::Down),
            "left" => plain(C::Left),
            "right" => plain(C::Right),
            "page-up" => plain(C::PageUp),
            "page-down" => plain(C::PageDown),
            "top" => plain(C::Top),
            "bottom" => plain(C::Bottom),
            "panel" => match arg {
                "" | "next" => Ok(C::Panel),
                o => bail!("`panel {o}`: say next"),
            },
            "profile" => dir(head, arg).map(C::Profile),
            "speed" => up_down(head, arg, UpDown::Down).map(C::Speed),
            "mouse" => plain(C::Mouse),
            "help" => plain(C::Help),
            "palette" => plain(C::Palette),
            "close" => plain(C::Close),
            "submit" => plain(C::Submit),
            "complete" => plain(C::Complete),
            "history" => dir(head, arg).map(C::History),
            "field" => dir(head, arg).map(C::Field),
            "choice" => dir(head, arg).map(C::Choice),
            "scroll" => up_down(head, arg, UpDown::Down).map(C::Scroll),
            "yes" => plain(C::Yes),
            "no" => plain(C::No),
            "cancel" => plain(C::Cancel),
            "add-vm" => plain(C::AddVm),
            "remove" if arg.is_empty() => Ok(C::RemoveUnderCursor),
            "move" if arg.is_empty() => Ok(C::StartMove),
            "move-here" => plain(C::MoveHere),
            "relayout" => Ok(C::Relayout(arg.to_string())),
            "mode-apply" => plain(C::ApplyMode),
            "regime" => plain(C::Regime),
            "regime-play" => plain(C::RegimePlay),
            "regime-step" => {
                let secs = session::parse_positive_duration(arg)
                    .map_err(|e| anyhow!("`regime-step {arg}`: {e:#}"))?;
                Ok(C::RegimeStep(secs.round().max(1.0) as u64))
            }
            "regime-next" => match arg {
                "" | "event" => Ok(C::RegimeNext(RegimeTarget::Event)),
                "plan" => Ok(C::RegimeNext(RegimeTarget::Plan)),
                "drain" => Ok(C::RegimeNext(RegimeTarget::Drain)),
                o => bail!("`regime-next {o}`: say event, plan or drain"),
            },
            "quit" | "q" => plain(C::Quit),
            "q!" => plain(C::ForceQuit),
            _ => Ok(C::Session(line.to_string())),
        }
    }

    /// Parses the `run` string of a key binding: as [`Command::parse`], and a line of the
    /// session's language must name one of its commands ([`session::COMMANDS`]) with a
    /// well-formed duration or optimizer mode where it takes one, since a binding cannot be
    /// corrected at the moment its key is pressed.
    pub(crate) fn parse_binding(run: &str) -> Result<Command> {
        let cmd = Command::parse(run)?;
        if let Command::Session(line) = &cmd {
            let (head, arg) = line
                .split_once(' ')
                .map(|(h, a)| (h, a.trim()))
                .unwrap_or((line.as_str(), ""));
            if !session::COMMANDS.iter().any(|(name, _)| *name == head) {
                bail!("unknown command `{head}`");
            }
            match head {
                "step" if !matches!(arg, "" | "next" | "event") => {
                    session::parse_positive_duration(arg)?;
                }
                "optimize" => {
                    session::parse_call_mode(arg)?;
                }
                _ => {}
            }
        }
        Ok(cmd)
    }
}

impl fmt::Display for Command {
    /// The command as a line that parses back to it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Command as C;
        let next_prev = |d: &Dir| match d {
            Dir::Next => "next",
            Dir::Prev => "prev",
        };
        let up_down = |d: &UpDown| match d {
            UpDown::Up => "up",
            UpDown::Down => "down",
        };
        match self {
            C::Up => f.write_str("up"),
            C::Down => f.write_str("down"),
            C::Left => f.write_str("left"),
            C::Right => f.write_str("right"),
            C::PageUp => f.write_str("page-up"),
            C::PageDown => f.write_str("page-down"),
            C::Top => f.write_str("top"),
            C::Bottom => f.write_str("bottom"),
            C::Panel => f.write_str("panel next"),
            C::Profile(d) => write!(f, "profile {}", next_prev(d)),
            C::Speed(d) => write!(f, "speed {}", up_down(d)),
            C::Mouse => f.write_str("mouse"),
            C::Help => f.write_str("help"),
            C::Palette => f.write_str("palette"),
            C::Close => f.write_str("close"),
            C::Submit => f.write_str("submit"),
            C::Complete => f.write_str("complete"),
            C::History(d) => write!(f, "history {}", next_prev(d)),
            C::Field(d) => write!(f, "field {}", next_prev(d)),
            C::Choice(d) => write!(f, "choice {}", next_prev(d)),
            C::Scroll(d) => write!(f, "scroll {}", up_down(d)),
            C::Yes => f.write_str("yes"),
            C::No => f.write_str("no"),
            C::Cancel => f.write_str("cancel"),
            C::AddVm => f.write_str("add-vm"),
            C::RemoveUnderCursor => f.write_str("remove"),
            C::StartMove => f.write_str("move"),
            C::MoveHere => f.write_str("move-here"),
            C::Relayout(name) if name.is_empty() => f.write_str("relayout"),
            C::Relayout(name) => write!(f, "relayout {name}"),
            C::ApplyMode => f.write_str("mode-apply"),
            C::Regime => f.write_str("regime"),
            C::RegimePlay => f.write_str("regime-play"),
            C::RegimeStep(s) => write!(f, "regime-step {s}s"),
            C::RegimeNext(t) => write!(f, "regime-next {}", t.name()),
            C::Quit => f.write_str("quit"),
            C::ForceQuit => f.write_str("q!"),
            C::Session(line) => f.write_str(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_to_typed_commands_and_print_back() {
        let cases = [
            ("down", Command::Down),
            ("profile prev", Command::Profile(Dir::Prev)),
            ("profile", Command::Profile(Dir::Next)),
            ("speed up", Command::Speed(UpDown::Up)),
            ("choice next", Command::Choice(Dir::Next)),
            ("remove", Command::RemoveUnderCursor),
            ("move", Command::StartMove),
            ("q", Command::Quit),
            ("q!", Command::ForceQuit),
            ("relayout 4x1g", Command::Relayout("4x1g".into())),
            ("mode-apply", Command::ApplyMode),
            ("regime", Command::Regime),
            ("regime-play", Command::RegimePlay),
            ("regime-step 1h", Command::RegimeStep(3600)),
            ("regime-next", Command::RegimeNext(RegimeTarget::Event)),
            ("regime-next drain", Command::RegimeNext(RegimeTarget::Drain)),
            ("step 1h", Command::Session("step 1h".into())),
            ("remove 7", Command::Session("remove 7".into())),
            ("move 7 a30-1 1@2", Command::Session("move 7 a30-1 1@2".into())),
        ];
        for (line, want) in cases {
            let got = Command::parse(line).unwrap();
            assert_eq!(got, want, "{line}");
            assert_eq!(Command::parse(&got.to_string()).unwrap(), got, "{line}");
        }
    }

    #[test]
    fn malformed_arguments_of_planner_commands_are_errors() {
        for bad in [
            "profile sideways",
            "speed fast",
            "down 3",
            "yes please",
            "panel prev",
            "regime-next sideways",
            "regime-step 1x",
            "regime-play now",
        ] {
            let e = Command::parse(bad).unwrap_err().to_string();
            let head = bad.split(' ').next().unwrap();
            assert!(e.contains(head), "{bad}: {e}");
        }
    }

    #[test]
    fn a_binding_must_name_a_known_command_with_a_valid_argument() {
        assert_eq!(
            Command::parse_binding("optimize opt").unwrap(),
            Command::Session("optimize opt".into())
        );
        assert!(Command::parse_binding("step 1h").is_ok());
        assert!(Command::parse_binding("step next").is_ok());
        let e = Command::parse_binding("bogus").unwrap_err().to_string();
        assert!(e.contains("`bogus`"), "{e}");
        assert!(Command::parse_binding("step 1x").is_err());
        assert!(Command::parse_binding("optimize sideways").is_err());
        // The palette accepts what the session may know (aliases, files): it checks at run time.
        assert_eq!(Command::parse("bogus").unwrap(), Command::Session("bogus".into()));
    }
}
