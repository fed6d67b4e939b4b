//! The application: the session plus what only the screen needs (cursor, scroll, overlays,
//! the running solve), and the event loop. Keys become named commands through the key map;
//! commands that change the fleet become [`Action`]s on the session. The loop is generic over the
//! ratatui backend, so tests drive it with real key sequences against a `TestBackend`.

use super::keymap::{Key, Keymap, Layer};
use super::theme::Theme;
use crate::fleet::{GiRequest, HostId, VmId, VmKind};
use crate::session::{
    self, Action, Outcome, PlanProposal, Session, SolveProgress, StepProgress, StepResult, VmRequest,
};
use anyhow::Result;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::backend::Backend;
use ratatui::layout::{Position, Rect};
use ratatui::Terminal;
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod form;
mod workers;
pub use form::{AddForm, Field};

/// What the loop reacts to.
#[derive(Debug)]
pub enum Msg {
    Term(Event),
    Solver(SolverMsg),
    Stepper(StepMsg),
    /// Time passed while playing, solving or stepping (to advance the clock or the elapsed time).
    Tick,
    /// Tests: handle nothing else until the running solve or step has reported its result.
    WaitIdle,
}

/// Reports from the thread that steps the clock.
#[derive(Debug)]
pub enum StepMsg {
    Progress(StepProgress),
    Done(Box<std::result::Result<StepResult, String>>),
}

/// Reports from the solver thread.
#[derive(Debug)]
pub enum SolverMsg {
    Progress(SolveProgress),
    Done(Box<std::result::Result<PlanProposal, String>>),
}

/// The lower panel in a narrow layout (all are visible at once on wide terminals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Detail,
    Gauges,
    Log,
    Charts,
}

impl Panel {
    pub const ALL: [Panel; 4] = [Panel::Detail, Panel::Gauges, Panel::Log, Panel::Charts];

    pub fn title(self) -> &'static str {
        match self {
            Panel::Detail => "GPU",
            Panel::Gauges => "Gauges",
            Panel::Log => "Log",
            Panel::Charts => "Charts",
        }
    }
}

/// Where a mouse click lands: areas recorded while drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Host(HostId),
    Slice { host: HostId, gpu: usize, slice: u8 },
    Panel(Panel),
}

/// The cursor: a host, one of its GPUs and a memory slice of that GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Selection {
    pub host: HostId,
    pub gpu: usize,
    pub slice: u8,
}

/// A destructive action waiting for a yes.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirm {
    Remove(VmId),
    Quit,
    Open(PathBuf),
}

/// The `:` command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Palette {
    pub input: String,
    pub history_pos: Option<usize>,
}

/// The re-layout preview of one GPU (read-only): the layouts it can take and what the drain of
/// its host would do for the chosen one.
pub struct RelayoutView {
    pub host: HostId,
    pub gpu: usize,
    pub layouts: Vec<&'static crate::ops::layouts::Layout>,
    pub choice: usize,
    /// The drain preview of the chosen layout, or why there is none.
    pub preview: std::result::Result<crate::ops::relayout::DrainPreview, String>,
    /// Scroll of the displaced VMs.
    pub scroll: u16,
}

impl RelayoutView {
    fn refresh(&mut self, session: &Session) {
        self.preview = match self.layouts.get(self.choice) {
            Some(l) => session
                .relayout_preview(self.host, self.gpu, l)
                .map_err(|e| format!("{e:#}")),
            None => Err("no layout on file for this GPU's class".into()),
        };
        self.scroll = 0;
    }
}

/// A solve running on a worker thread.
pub struct Solving {
    pub mode: session::OptimizeMode,
    pub started: Instant,
    pub progress: SolveProgress,
    pub cancel: Arc<AtomicBool>,
    pub cancelled: bool,
}

/// A step of the clock running on a worker thread (on a copy of the session's simulator).
pub struct Stepping {
    pub started: Instant,
    pub progress: StepProgress,
    pub cancel: Arc<AtomicBool>,
    pub cancelled: bool,
    /// A tick of continuous play.
    pub play: bool,
}

/// Kind of the status message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Info,
    Ok,
    Error,
}

/// The planner application.
pub struct App {
    pub session: Session,
    pub theme: Theme,
    pub keymap: Keymap,
    pub sel: Selection,
    /// First visible host row; adjusted while drawing to keep the cursor visible.
    pub scroll: Cell<usize>,
    /// Rows of hosts the last frame showed (for page up/down).
    pub page: Cell<usize>,
    pub panel: Panel,
    /// Profile index (within the selected GPU's model) the detail explains.
    pub teach_profile: usize,
    pub form: Option<AddForm>,
    pub confirm: Option<Confirm>,
    pub palette: Option<Palette>,
    pub help: Option<u16>,
    /// The VM being moved by hand.
    pub moving: Option<VmId>,
    pub solving: Option<Solving>,
    pub stepping: Option<Stepping>,
    /// Run steps of the clock on a worker thread (the terminal); when off, a step runs at
    /// once on the loop's thread through the same request and result (scripted tests, whose
    /// screens must not depend on thread timing).
    pub background_steps: bool,
    pub relayout: Option<RelayoutView>,
    /// Scroll of the preview's step list.
    pub preview_scroll: u16,
    pub message: Option<(String, Tone)>,
    pub mouse: bool,
    /// Simulated seconds per play tick.
    pub play_step_s: f64,
    pub history: Vec<String>,
    pub quit: bool,
    /// Areas of the last frame, for mouse hit-testing.
    pub hits: RefCell<Vec<(Rect, Target)>>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    deferred: std::collections::VecDeque<Msg>,
}

/// Wall-clock time between play ticks.
const TICK: Duration = Duration::from_millis(250);
/// Least wall-clock time between two progress reports of a step: a long step passes thousands
/// of 10 s boundaries, and each report costs a redraw.
const STEP_PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl App {
    pub fn new(session: Session, theme: Theme) -> App {
        let (tx, rx) = channel();
        App {
            session,
            theme,
            keymap: Keymap::embedded(),
            sel: Selection::default(),
            scroll: Cell::new(0),
            page: Cell::new(10),
            panel: Panel::Detail,
            teach_profile: 0,
            form: None,
            confirm: None,
            palette: None,
            help: None,
            moving: None,
            solving: None,
            stepping: None,
            background_steps: true,
            relayout: None,
            preview_scroll: 0,
            message: None,
            mouse: true,
            play_step_s: 60.0,
            history: Vec::new(),
            quit: false,
            hits: RefCell::new(Vec::new()),
            tx,
            rx,
            deferred: Default::default(),
        }
    }

    /// A sender for terminal events (the input thread) or scripted messages (tests).
    pub fn sender(&self) -> Sender<Msg> {
        self.tx.clone()
    }

    /// The layer that receives keys now: the top overlay.
    pub fn layer(&self) -> Layer {
        if self.help.is_some() {
            Layer::Help
        } else if self.confirm.is_some() {
            Layer::Confirm
        } else if self.palette.is_some() {
            Layer::Palette
        } else if self.form.is_some() {
            Layer::Dialog
        } else if self.relayout.is_some() {
            Layer::Relayout
        } else if self.solving.is_some() {
            Layer::Solve
        } else if self.stepping.is_some() {
            Layer::Step
        } else if self.moving.is_some() {
            Layer::Move
        } else if self.session.preview().is_some() {
            Layer::Preview
        } else {
            Layer::Fleet
        }
    }

    /// The layer the help explains: the one under the help overlay.
    pub fn context_layer(&self) -> Layer {
        let help = self.help;
        // Same decision as `layer`, skipping the help itself.
        if help.is_some() {
            if self.confirm.is_some() {
                return Layer::Confirm;
            }
            if self.palette.is_some() {
                return Layer::Palette;
            }
            if self.form.is_some() {
                return Layer::Dialog;
            }
            if self.relayout.is_some() {
                return Layer::Relayout;
            }
            if self.solving.is_some() {
                return Layer::Solve;
            }
            if self.stepping.is_some() {
                return Layer::Step;
            }
            if self.moving.is_some() {
                return Layer::Move;
            }
            if self.session.preview().is_some() {
                return Layer::Preview;
            }
            return Layer::Fleet;
        }
        self.layer()
    }

    fn say(&mut self, text: impl Into<String>, tone: Tone) {
        let t = text.into();
        self.message = if t.is_empty() { None } else { Some((t, tone)) };
    }

    /// Handles one message.
    pub fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Term(Event::Key(k)) if k.kind != KeyEventKind::Release => self.on_key(k),
            Msg::Term(Event::Mouse(m)) => self.on_mouse(m),
            Msg::Term(_) => {}
            Msg::Solver(s) => self.on_solver(s),
            Msg::Stepper(s) => self.on_stepper(s),
            Msg::Tick => {
                // A tick while a step runs only redraws (the elapsed time); the next play tick
                // waits for the running one rather than queueing behind it.
                if self.session.playing() && !self.busy() {
                    match session::update(&mut self.session, Action::PlayTick(self.play_step_s)) {
                        Ok(Outcome::Step(req)) => self.start_step(*req),
                        Ok(_) => {}
                        Err(e) => self.say(format!("{e:#}"), Tone::Error),
                    }
                }
            }
            Msg::WaitIdle => {
                while self.busy() {
                    match self.rx.recv() {
                        Ok(Msg::Solver(s)) => self.on_solver(s),
                        Ok(Msg::Stepper(s)) => self.on_stepper(s),
                        Ok(other) => self.deferred.push_back(other),
                        Err(_) => break,
                    }
                }
            }
        }
    }

    /// A solve or a step runs on a worker thread: the session must not change meanwhile, since
    /// the worker's result replaces (or is checked against) the state it copied.
    pub fn busy(&self) -> bool {
        self.solving.is_some() || self.stepping.is_some()
    }

    /// Why a change to the session is refused now, if it is.
    fn busy_refusal(&self) -> Option<String> {
        if self.stepping.is_some() {
            let key = self
                .keymap
                .key_for(Layer::Step, "cancel")
                .unwrap_or_else(|| "Esc".into());
            Some(format!(
                "refused: the clock is stepping; wait for the step to end, or press {key} to cancel it"
            ))
        } else if self.solving.is_some() {
            Some("the optimizer is running: wait, or press c to cancel".into())
        } else {
            None
        }
    }

    /// Whether the loop should wake up without input (playing, or showing solve or step
    /// progress).
    fn wants_tick(&self) -> bool {
        self.session.playing() || self.busy()
    }

    /// The next message: deferred ones first, then the channel (with a tick while playing).
    fn next_msg(&mut self, block: bool) -> Option<Msg> {
        if let Some(m) = self.deferred.pop_front() {
            return Some(m);
        }
        if !block {
            return self.rx.try_recv().ok();
        }
        if self.wants_tick() {
            match self.rx.recv_timeout(TICK) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => Some(Msg::Tick),
                Err(RecvTimeoutError::Disconnected) => None,
            }
        } else {
            self.rx.recv().ok()
        }
    }

    /// Runs until quit: draw, wait for a message, handle it. Redraws only after messages.
    pub fn run<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<()> {
        loop {
            terminal.draw(|f| f.render_widget(&*self, f.area()))?;
            if self.quit {
                return Ok(());
            }
            match self.next_msg(true) {
                Some(m) => self.handle(m),
                None => return Ok(()),
            }
        }
    }

    /// Handles every message already queued, drawing after each, and returns (tests).
    pub fn run_queued<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<()> {
        terminal.draw(|f| f.render_widget(&*self, f.area()))?;
        while let Some(m) = self.next_msg(false) {
            self.handle(m);
            terminal.draw(|f| f.render_widget(&*self, f.area()))?;
            if self.quit {
                break;
            }
        }
        Ok(())
    }

    fn on_key(&mut self, k: KeyEvent) {
        let key = Key::from_event(&k);
        let layer = self.layer();
        if let Some(cmd) = self.keymap.lookup(layer, &key).map(str::to_string) {
            self.command(&cmd);
            return;
        }
        // While a worker runs, the fleet view's keys still work: navigation moves, and a key
        // that would change the session says why it is refused instead of doing nothing.
        if matches!(layer, Layer::Solve | Layer::Step) {
            if let Some(cmd) = self.keymap.lookup(Layer::Fleet, &key).map(str::to_string) {
                self.command(&cmd);
            }
            return;
        }
        // Text input in the palette and in the form's text fields.
        if let KeyCode::Char(c) = k.code {
            if key.ctrl || key.alt {
                return;
            }
            if let Some(p) = &mut self.palette {
                p.input.push(c);
                return;
            }
            if let Some(f) = &mut self.form {
                let field = Field::ALL[f.field];
                if field.is_text() {
                    f.text_mut().push(c);
                    f.error = None;
                    if matches!(field, Field::Cores | Field::Ram) {
                        f.resources_edited = true;
                    }
                }
                return;
            }
        }
        if k.code == KeyCode::Backspace {
            if let Some(p) = &mut self.palette {
                if p.input.pop().is_none() {
                    self.palette = None;
                }
                return;
            }
            if let Some(f) = &mut self.form {
                if Field::ALL[f.field].is_text() {
                    f.text_mut().pop();
                }
            }
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        if !self.mouse {
            return;
        }
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if !matches!(
                    self.layer(),
                    Layer::Fleet | Layer::Move | Layer::Solve | Layer::Step
                ) {
                    return;
                }
                let pos = Position::new(m.column, m.row);
                let hit = self
                    .hits
                    .borrow()
                    .iter()
                    .rev()
                    .find(|(r, _)| r.contains(pos))
                    .map(|(_, t)| *t);
                match hit {
                    Some(Target::Host(h)) => self.select(h, None, None),
                    Some(Target::Slice { host, gpu, slice }) => self.select(host, Some(gpu), Some(slice)),
                    Some(Target::Panel(p)) => self.panel = p,
                    None => {}
                }
            }
            MouseEventKind::ScrollDown => self.command("down"),
            MouseEventKind::ScrollUp => self.command("up"),
            _ => {}
        }
    }

    fn select(&mut self, host: HostId, gpu: Option<usize>, slice: Option<u8>) {
        let fleet = self.session.fleet();
        if host >= fleet.hosts.len() {
            return;
        }
        self.sel.host = host;
        let n = fleet.hosts[host].gpus.len();
        self.sel.gpu = gpu.unwrap_or(self.sel.gpu).min(n.saturating_sub(1));
        self.sel.slice = slice.unwrap_or(0);
        self.clamp_slice();
    }

    fn clamp_slice(&mut self) {
        let fleet = self.session.fleet();
        let Some(h) = fleet.hosts.get(self.sel.host) else {
            self.sel = Selection::default();
            return;
        };
        if h.gpus.is_empty() {
            self.sel.gpu = 0;
            self.sel.slice = 0;
            return;
        }
        self.sel.gpu = self.sel.gpu.min(h.gpus.len() - 1);
        let slices = fleet.catalog.model(h.gpus[self.sel.gpu].model).memory_slices;
        self.sel.slice = self.sel.slice.min(slices.saturating_sub(1));
    }

    /// The VM whose GI covers the cursor.
    pub fn vm_under_cursor(&self) -> Option<VmId> {
        let fleet = self.session.fleet();
        let gpu = fleet.hosts.get(self.sel.host)?.gpus.get(self.sel.gpu)?;
        gpu.gi_at(fleet.catalog, self.sel.slice).map(|g| g.vm)
    }

    /// Runs a named command (from a key binding or the palette).
    pub fn command(&mut self, cmd: &str) {
        let cmd = cmd.trim();
        let (head, arg) = cmd.split_once(' ').unwrap_or((cmd, ""));
        let n_hosts = self.session.fleet().hosts.len();
        // Commands that open a way to change the session (a form, a confirmation, a move) are
        // refused up front while a worker runs; the rest are refused in `dispatch`.
        if matches!(
            head,
            "add-vm" | "remove" | "rm" | "move" | "mv" | "e" | "edit" | "open"
        ) {
            if let Some(why) = self.busy_refusal() {
                self.say(why, Tone::Error);
                return;
            }
        }
        match (self.layer(), head) {
            (Layer::Help, "close") => self.help = None,
            (Layer::Help, "down") => self.help = self.help.map(|s| s.saturating_add(1)),
            (Layer::Help, "up") => self.help = self.help.map(|s| s.saturating_sub(1)),
            (_, "help") => self.help = Some(0),
            (Layer::Confirm, "yes") => self.confirmed(),
            (Layer::Confirm, "no") => {
                self.confirm = None;
                self.say("cancelled", Tone::Info);
            }
            (Layer::Palette, "close") => self.palette = None,
            (Layer::Palette, "submit") => {
                let line = self.palette.take().map(|p| p.input).unwrap_or_default();
                if !line.trim().is_empty() {
                    self.history.push(line.clone());
                    self.command(&line);
                }
            }
            (Layer::Palette, "complete") => self.complete(),
            (Layer::Palette, "history") => self.history_step(arg == "prev"),
            (Layer::Dialog, "close") => self.form = None,
            (Layer::Dialog, "field") => {
                if let Some(f) = &mut self.form {
                    let n = Field::ALL.len();
                    f.field = if arg == "prev" {
                        (f.field + n - 1) % n
                    } else {
                        (f.field + 1) % n
                    };
                }
            }
            (Layer::Dialog, "choice") => {
                let fleet = self.session.fleet();
                let sel = self.sel;
                if let Some(f) = &mut self.form {
                    f.cycle(fleet, sel, arg != "prev");
                }
            }
            (Layer::Dialog, "submit") => self.submit_form(),
            (Layer::Relayout, "close") => self.relayout = None,
            (Layer::Relayout, "choice") => {
                if let Some(r) = &mut self.relayout {
                    let n = r.layouts.len().max(1);
                    r.choice = if arg == "prev" {
                        (r.choice + n - 1) % n
                    } else {
                        (r.choice + 1) % n
                    };
                    r.refresh(&self.session);
                }
            }
            (Layer::Relayout, "scroll") => {
                if let Some(r) = &mut self.relayout {
                    r.scroll = if arg == "up" {
                        r.scroll.saturating_sub(5)
                    } else {
                        r.scroll.saturating_add(5)
                    };
                }
            }
            (_, "relayout") => self.open_relayout(arg),
            (Layer::Move, "close") => {
                self.moving = None;
                self.say("move cancelled", Tone::Info);
            }
            (Layer::Move, "move-here") => self.move_here(),
            (Layer::Solve, "cancel") => {
                if let Some(s) = &mut self.solving {
                    s.cancel.store(true, Ordering::SeqCst);
                    s.cancelled = true;
                    self.say("cancelling: the best plan so far will be shown", Tone::Info);
                }
            }
            (Layer::Step, "cancel") => {
                if let Some(s) = &mut self.stepping {
                    s.cancel.store(true, Ordering::SeqCst);
                    s.cancelled = true;
                    self.say("cancelling: the step stops at the next 10 s boundary", Tone::Info);
                }
            }
            (Layer::Preview, "down") => self.preview_scroll = self.preview_scroll.saturating_add(1),
            (Layer::Preview, "up") => self.preview_scroll = self.preview_scroll.saturating_sub(1),
            (_, "down") => {
                self.sel.host = (self.sel.host + 1).min(n_hosts.saturating_sub(1));
                self.clamp_slice();
            }
            (_, "up") => {
                self.sel.host = self.sel.host.saturating_sub(1);
                self.clamp_slice();
            }
            (_, "page-down") => {
                self.sel.host = (self.sel.host + self.page.get().max(1)).min(n_hosts.saturating_sub(1));
                self.clamp_slice();
            }
            (_, "page-up") => {
                self.sel.host = self.sel.host.saturating_sub(self.page.get().max(1));
                self.clamp_slice();
            }
            (_, "top") => self.select(0, Some(0), Some(0)),
            (_, "bottom") => self.select(n_hosts.saturating_sub(1), Some(0), Some(0)),
            (_, "right") => self.cursor_right(),
            (_, "left") => self.cursor_left(),
            (_, "panel") => {
                let i = Panel::ALL.iter().position(|p| *p == self.panel).unwrap_or(0);
                self.panel = Panel::ALL[(i + 1) % Panel::ALL.len()];
            }
            (_, "profile") => {
                let n = self
                    .selected_model()
                    .map(|m| m.profiles.len())
                    .unwrap_or(1)
                    .max(1);
                self.teach_profile = if arg == "prev" {
                    (self.teach_profile + n - 1) % n
                } else {
                    (self.teach_profile + 1) % n
                };
            }
            (_, "speed") => {
                self.play_step_s = if arg == "up" {
                    (self.play_step_s * 2.0).min(86400.0)
                } else {
                    (self.play_step_s / 2.0).max(session::STEP_S)
                };
                let msg = format!(
                    "play speed: {} of simulated time per tick",
                    session::format_duration(self.play_step_s)
                );
                self.say(msg, Tone::Info);
            }
            (_, "mouse") => {
                self.mouse = !self.mouse;
                let msg = format!("mouse selection {}", if self.mouse { "on" } else { "off" });
                self.say(msg, Tone::Info);
            }
            (_, "palette") => self.palette = Some(Palette::default()),
            (_, "add-vm") => {
                let form = AddForm::new(&self.session, self.sel);
                match form {
                    Some(f) => self.form = Some(f),
                    None => self.say("the fleet has no GPU model to ask for", Tone::Error),
                }
            }
            (_, "remove") | (_, "rm") if !arg.is_empty() => {
                match session::parse_command(&self.session, cmd) {
                    // From the palette: the same confirmation as the key.
                    Ok(Action::RemoveVm(vm)) if self.session.fleet().vm(vm).is_some() => {
                        self.confirm = Some(Confirm::Remove(vm))
                    }
                    Ok(_) => self.say(format!("no VM `{arg}`"), Tone::Error),
                    Err(e) => self.say(format!("{e:#}"), Tone::Error),
                }
            }
            (_, "remove") => match self.vm_under_cursor() {
                Some(vm) => self.confirm = Some(Confirm::Remove(vm)),
                None => self.say("no VM under the cursor: move onto a GI first (h/l)", Tone::Error),
            },
            (_, "move") if arg.is_empty() => match self.vm_under_cursor() {
                Some(vm) => {
                    self.moving = Some(vm);
                    self.say(
                        format!("moving VM {vm}: put the cursor on the target GPU and start, then Enter"),
                        Tone::Info,
                    );
                }
                None => self.say("no VM under the cursor: move onto a GI first (h/l)", Tone::Error),
            },
            (_, "quit") | (_, "q") => {
                // A running step is work not yet in the session: quitting asks, as for unsaved
                // changes.
                if self.session.modified() || self.stepping.is_some() {
                    self.confirm = Some(Confirm::Quit);
                } else {
                    self.stop_workers();
                    self.quit = true;
                }
            }
            (_, "q!") => {
                self.stop_workers();
                self.quit = true;
            }
            (_, "e") | (_, "edit") | (_, "open") if self.session.modified() && !arg.is_empty() => {
                self.confirm = Some(Confirm::Open(PathBuf::from(arg)));
            }
            _ => match session::parse_command(&self.session, cmd) {
                Ok(action) => self.dispatch(action),
                Err(e) => self.say(format!("{e:#}"), Tone::Error),
            },
        }
    }

    /// Opens the re-layout preview of the selected GPU, on the layout named `name` (or the first
    /// one of its class).
    fn open_relayout(&mut self, name: &str) {
        let (host, gpu) = (self.sel.host, self.sel.gpu);
        let fleet = self.session.fleet();
        let Some(h) = fleet.hosts.get(host) else { return };
        if h.gpus.get(gpu).is_none() {
            self.say(format!("{} has no GPU to re-layout", h.name), Tone::Error);
            return;
        }
        let layouts = self.session.layouts_for(host, gpu);
        if layouts.is_empty() {
            self.say(
                "no layout on file for this GPU's class (assets/layouts.toml)",
                Tone::Error,
            );
            return;
        }
        let name = name.trim();
        let choice = if name.is_empty() {
            0
        } else {
            match layouts.iter().position(|l| l.name == name) {
                Some(i) => i,
                None => {
                    let names: Vec<&str> = layouts.iter().map(|l| l.name.as_str()).collect();
                    self.say(
                        format!("no layout `{name}` for this GPU (known: {})", names.join(", ")),
                        Tone::Error,
                    );
                    return;
                }
            }
        };
        let mut view = RelayoutView {
            host,
            gpu,
            layouts,
            choice,
            preview: Err(String::new()),
            scroll: 0,
        };
        view.refresh(&self.session);
        self.relayout = Some(view);
    }

    fn selected_model(&self) -> Option<&'static crate::catalog::GpuModel> {
        let fleet = self.session.fleet();
        let gpu = fleet.hosts.get(self.sel.host)?.gpus.get(self.sel.gpu)?;
        Some(fleet.catalog.model(gpu.model))
    }

    fn cursor_right(&mut self) {
        let fleet = self.session.fleet();
        let Some(h) = fleet.hosts.get(self.sel.host) else {
            return;
        };
        let Some(gpu) = h.gpus.get(self.sel.gpu) else {
            return;
        };
        let slices = fleet.catalog.model(gpu.model).memory_slices;
        if self.sel.slice + 1 < slices {
            self.sel.slice += 1;
        } else if self.sel.gpu + 1 < h.gpus.len() {
            self.sel.gpu += 1;
            self.sel.slice = 0;
        }
    }

    fn cursor_left(&mut self) {
        if self.sel.slice > 0 {
            self.sel.slice -= 1;
        } else if self.sel.gpu > 0 {
            self.sel.gpu -= 1;
            let fleet = self.session.fleet();
            let slices = fleet.hosts[self.sel.host].gpus[self.sel.gpu].model;
            self.sel.slice = fleet.catalog.model(slices).memory_slices.saturating_sub(1);
        }
    }

    fn complete(&mut self) {
        let Some(p) = &mut self.palette else { return };
        let matches: Vec<&str> = session::COMMANDS
            .iter()
            .map(|c| c.0)
            .filter(|c| c.starts_with(p.input.trim()))
            .collect();
        match matches.as_slice() {
            [one] => p.input = format!("{one} "),
            [] => {}
            many => {
                let list = many.join(" ");
                self.say(list, Tone::Info);
            }
        }
    }

    fn history_step(&mut self, back: bool) {
        let Some(p) = &mut self.palette else { return };
        if self.history.is_empty() {
            return;
        }
        let last = self.history.len() - 1;
        let pos = match (p.history_pos, back) {
            (None, true) => Some(last),
            (None, false) => None,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i < last => Some(i + 1),
            (Some(_), false) => None,
        };
        p.history_pos = pos;
        p.input = pos.map(|i| self.history[i].clone()).unwrap_or_default();
    }

    fn confirmed(&mut self) {
        match self.confirm.take() {
            Some(Confirm::Remove(vm)) => self.dispatch(Action::RemoveVm(vm)),
            Some(Confirm::Quit) => {
                self.stop_workers();
                self.quit = true;
            }
            Some(Confirm::Open(p)) => self.dispatch(Action::Open(p)),
            None => {}
        }
    }

    fn move_here(&mut self) {
        let Some(vm) = self.moving else { return };
        let fleet = self.session.fleet();
        let Some(v) = fleet.vm(vm) else {
            self.moving = None;
            return;
        };
        let Some(cur) = v.placement.clone() else {
            self.moving = None;
            return;
        };
        // The first GI goes to the cursor; the others keep their GPU and start.
        let mut to = cur.clone();
        to.host = self.sel.host;
        if let Some(first) = to.gis.first_mut() {
            first.gpu = self.sel.gpu;
            first.start = self.sel.slice;
        }
        match session::update(&mut self.session, Action::MoveVm { vm, to }) {
            Ok(o) => {
                self.moving = None;
                self.say(o.message(), Tone::Ok);
            }
            Err(e) => self.say(format!("{e:#} (Esc cancels the move)"), Tone::Error),
        }
    }

    fn submit_form(&mut self) {
        let Some(f) = self.form.clone() else { return };
        let req = match f.request(&self.session) {
            Ok(r) => r,
            Err(e) => {
                if let Some(form) = &mut self.form {
                    form.error = Some(format!("{e:#}"));
                }
                return;
            }
        };
        match session::update(&mut self.session, Action::AddVm(req)) {
            Ok(o) => {
                self.form = None;
                let text = o.message();
                let tone = if text.contains("pending") {
                    Tone::Error
                } else {
                    Tone::Ok
                };
                self.say(text, tone);
            }
            Err(e) => {
                if let Some(form) = &mut self.form {
                    form.error = Some(format!("{e:#}"));
                }
            }
        }
    }

    /// Applies an action to the session; a solve or step request starts a worker thread.
    pub fn dispatch(&mut self, action: Action) {
        // Saving writes the session as it is (before the running step); play can be paused
        // while a play tick runs, but not started under another step, which would end it.
        let harmless = match &action {
            Action::Save(_) => true,
            Action::TogglePlay => self.stepping.as_ref().is_none_or(|s| s.play),
            _ => false,
        };
        if !harmless {
            if let Some(why) = self.busy_refusal() {
                self.say(why, Tone::Error);
                return;
            }
        }
        match session::update(&mut self.session, action) {
            Ok(Outcome::Solve(req)) => self.start_solve(*req),
            Ok(Outcome::Step(req)) => self.start_step(*req),
            Ok(o) => {
                let tone = match &o {
                    Outcome::Changed(_) => Tone::Ok,
                    _ => Tone::Info,
                };
                self.say(o.message(), tone);
                self.clamp_slice();
            }
            Err(e) => self.say(format!("{e:#}"), Tone::Error),
        }
    }
}
