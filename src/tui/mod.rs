//! The TUI (the "interactive planner" of the user docs): a thin ratatui front end over
//! [`crate::session`]. It draws the session and maps keys to the session's named actions; it
//! holds no domain logic.
//!
//! The terminal is put back (raw mode off, main screen, mouse capture off, cursor shown) on every
//! way out: a normal quit, an error, and a panic (through a panic hook).

pub mod app;
pub mod command;
pub mod keymap;
pub mod latency;
pub mod theme;
pub(crate) mod ui;
pub mod views;
pub(crate) mod widgets;

pub use app::App;

use crate::session::Session;
use anyhow::Result;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{stdout, IsTerminal};

/// Arguments of `migplan tui`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML) to open.
    #[arg(required_unless_present = "import")]
    pub file: Option<std::path::PathBuf>,
    /// Open a fleet imported on the fly instead: `--import nvidia-smi DIR` (captures, one per
    /// host; see `migplan import nvidia-smi`). Save it from the planner to keep it.
    #[arg(long, num_args = 2, value_names = ["FORMAT", "PATH"], conflicts_with = "file")]
    pub import: Vec<String>,
}

/// The session `migplan tui` opens: the scenario file, or the fleet `--import` reads.
pub fn session_of(a: &Args) -> Result<Session> {
    match (&a.file, a.import.as_slice()) {
        (Some(f), _) => Session::open(f),
        (None, [format, path]) if format == "nvidia-smi" => {
            let (s, _) = crate::fleet_import::from_nvidia_smi(
                &[std::path::PathBuf::from(path)],
                None,
                None,
                "imported",
            )?;
            Session::new(s, None)
        }
        (None, [format, _]) => anyhow::bail!("--import: unknown format `{format}` (known: nvidia-smi)"),
        _ => anyhow::bail!("give a scenario file or --import nvidia-smi DIR"),
    }
}

/// Puts the terminal back into its normal state. Safe to call more than once.
pub(crate) fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), DisableMouseCapture, LeaveAlternateScreen, cursor::Show);
}

/// Runs the TUI on a session in the real terminal until the user quits.
pub fn run(session: Session) -> Result<()> {
    if !stdout().is_terminal() {
        anyhow::bail!("the planner needs a terminal (stdout is not one); use the subcommands for batch work");
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        previous(info);
    }));
    enable_raw_mode()?;
    let result = (|| -> Result<()> {
        execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
        let mut app = App::new(session, theme::Theme::from_env());
        let tx = app.sender();
        // Terminal input arrives on its own thread, so the loop can also wait for the solver.
        std::thread::spawn(move || {
            while let Ok(ev) = crossterm::event::read() {
                if tx.send(app::Msg::Term(ev)).is_err() {
                    break;
                }
            }
        });
        app.run(&mut terminal)
    })();
    restore_terminal();
    let _ = std::panic::take_hook();
    result
}
