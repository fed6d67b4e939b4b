//! Helpers shared by the integration tests: driving the planner's loop with real key sequences
//! against a `TestBackend` (here), running the binary (`cli`), scenarios and VM requests
//! (`fleet`), and the import fixtures and commands (`import`).
#![allow(dead_code)]

pub mod cli;
pub mod fleet;
pub mod import;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use migplan::session::Session;
use migplan::tui::app::Msg;
use migplan::tui::keymap::Key;
use migplan::tui::theme::Theme;
use migplan::tui::App;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;

/// The OpenB pod list (`openb_pod_list_default.csv`, from Alibaba's GPU cluster trace), which the
/// repository does not ship: the file named by `MIGPLAN_OPENB_TRACE`, else `shared/data/` beside
/// the checkout or one directory higher. `None`, with a note naming what is skipped, when absent.
pub fn openb_trace(what: &str) -> Option<PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let name = "shared/data/openb_pod_list_default.csv";
    let candidates: Vec<PathBuf> = std::env::var_os("MIGPLAN_OPENB_TRACE")
        .map(PathBuf::from)
        .into_iter()
        .chain([root.join("..").join(name), root.join("../..").join(name)])
        .collect();
    let found = candidates.iter().find(|p| p.exists()).cloned();
    if found.is_none() {
        eprintln!("note: the OpenB trace is absent (set MIGPLAN_OPENB_TRACE); skipping {what}");
    }
    found
}

pub struct Harness {
    pub app: App,
    pub term: Terminal<TestBackend>,
}

impl Harness {
    pub fn demo(w: u16, h: u16, theme: Theme) -> Harness {
        Harness::new(Session::demo().unwrap(), w, h, theme)
    }

    pub fn new(session: Session, w: u16, h: u16, theme: Theme) -> Harness {
        let mut app = App::new(session, theme);
        // Steps of the clock run at once on the loop's thread (same request and result as on
        // the worker thread), so that screens do not depend on thread timing. Tests of the
        // background step turn this back on.
        app.workers.background_steps = false;
        let term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let mut h = Harness { app, term };
        h.app.run_queued(&mut h.term).unwrap();
        h
    }

    /// Sends keys written as in the key map, separated by spaces: `a <Tab> <Enter> :step 1h<Enter>`
    /// (a word not in `<>` is typed character by character), then runs the loop until idle.
    pub fn keys(&mut self, keys: &str) -> &mut Self {
        let tx = self.app.sender();
        for m in key_msgs(keys) {
            tx.send(m).unwrap();
        }
        self.app.run_queued(&mut self.term).unwrap();
        self
    }

    /// Handles keys (written as for [`Harness::keys`]) one by one and draws, without taking
    /// anything else from the loop's channel: a worker's reports stay queued, so the screen
    /// shows the state while the worker still runs, whatever its speed.
    pub fn press(&mut self, keys: &str) -> &mut Self {
        for m in key_msgs(keys) {
            self.app.handle(m);
        }
        self.draw()
    }

    /// Draws the current state without handling any message.
    pub fn draw(&mut self) -> &mut Self {
        let app = &self.app;
        self.term.draw(|f| f.render_widget(app, f.area())).unwrap();
        self
    }

    /// Waits for a running solve or step to report, then handles what is queued.
    pub fn wait_solver(&mut self) -> &mut Self {
        self.app.sender().send(Msg::WaitIdle).unwrap();
        self.app.run_queued(&mut self.term).unwrap();
        self
    }

    pub fn resize(&mut self, w: u16, h: u16) -> &mut Self {
        self.term.backend_mut().resize(w, h);
        self.app.run_queued(&mut self.term).unwrap();
        self
    }

    /// The screen as text, one line per row, trailing spaces trimmed.
    pub fn screen(&self) -> String {
        let buf = self.term.backend().buffer();
        let a = buf.area;
        (a.top()..a.bottom())
            .map(|y| {
                let line: String = (a.left()..a.right()).map(|x| buf[(x, y)].symbol()).collect();
                line.trim_end().to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn message(&self) -> String {
        self.app.message.as_ref().map(|m| m.0.clone()).unwrap_or_default()
    }
}

/// Key messages for keys written as in the key map, separated by spaces.
fn key_msgs(keys: &str) -> Vec<Msg> {
    let mut out = Vec::new();
    for word in keys.split(' ').filter(|w| !w.is_empty()) {
        for k in split_keys(word) {
            let key = Key::parse(&k).unwrap_or_else(|e| panic!("{k}: {e}"));
            let mut mods = KeyModifiers::NONE;
            if key.ctrl {
                mods |= KeyModifiers::CONTROL;
            }
            if key.code == KeyCode::BackTab {
                mods |= KeyModifiers::SHIFT;
            }
            out.push(Msg::Term(Event::Key(KeyEvent::new(key.code, mods))));
        }
    }
    out
}

/// `abc<Enter>` -> `a`, `b`, `c`, `<Enter>`.
fn split_keys(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '<' && chars.peek().is_some_and(|n| n.is_ascii_alphabetic()) {
            let mut name = String::from("<");
            for n in chars.by_ref() {
                name.push(n);
                if n == '>' {
                    break;
                }
            }
            out.push(name);
        } else {
            out.push(c.to_string());
        }
    }
    out
}

/// The fields of `simulate --json` that are wall-clock times: they differ between two runs of the
/// same input, so comparisons of figures leave them out. The last [`CALL_TALLY_TIMING_FIELDS`]
/// of them are in the rows of `calls_by_trigger`, printed only for policies that make calls.
pub const TIMING_FIELDS: &[&str] = &[
    "wall_s",
    "call_s_median",
    "call_s_p95",
    "call_s_total",
    "trigger_check_s_total",
    // CALL_TALLY_TIMING_FIELDS:
    "solved_s",
    "unchanged_s",
    "empty_s",
    "repeat_s",
];

/// How many of the last [`TIMING_FIELDS`] are those of a `calls_by_trigger` row.
pub const CALL_TALLY_TIMING_FIELDS: usize = 4;

/// The arguments of the golden figures' run (tests/it/figures.rs) of `policy` on `scenario`:
/// seed 1, load 0.85, two hours of warm-up, two measured hours, JSON out. The window is short so
/// that OrigaMIG's solves end well inside their time limit.
pub fn golden_args(scenario: &str, policy: &str) -> Vec<String> {
    [
        "simulate", scenario, "--policy", policy, "--seed", "1", "--load", "0.85", "--warmup", "2",
        "--hours", "2", "--json",
    ]
    .map(String::from)
    .to_vec()
}

/// `simulate --json` of the golden run of `policy` on `scenario`, with `RAYON_NUM_THREADS` set
/// when given, timing fields removed.
pub fn golden_run(scenario: &str, policy: &str, threads: Option<&str>) -> serde_json::Value {
    let mut cmd = cli::migplan();
    if let Some(t) = threads {
        cmd.env("RAYON_NUM_THREADS", t);
    }
    let out = cmd.args(golden_args(scenario, policy)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    without_timing(serde_json::from_slice(&out.stdout).expect("simulate --json prints JSON"))
}

/// `v` without the timing fields, at any depth.
pub fn without_timing(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| !TIMING_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k, without_timing(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_timing).collect()),
        other => other,
    }
}
