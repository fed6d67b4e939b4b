//! The application: the session plus what only the screen needs (cursor, scroll, overlays,
//! the running solve), and the event loop. Keys become typed [`Command`]s through the key map;
//! commands that change the fleet become [`Action`]s on the session. The loop is generic over the
//! ratatui backend, so tests drive it with real key sequences against a `TestBackend`.

use super::command::{Command, Dir, UpDown};
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
pub(crate) mod regime;
mod workers;
pub(crate) use form::{AddForm, Field, FormShape};
pub use regime::RegimePlay;

/// What the loop reacts to.
#[derive(Debug)]
pub enum Msg {
    Term(Event),
    Solver(SolverMsg),
    /// A report of the step numbered so ([`Stepping::id`]); those of a dropped play tick are
    /// ignored.
    Stepper(u64, StepMsg),
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

/// The preview of a GPU's mode change (`:mode HOST/GPU MODE`): what the drain does, kept until
/// it is applied (as `:mode!`, one undo step) or discarded.
pub struct ModeView {
    pub host: HostId,
    pub gpu: usize,
    pub target: crate::ops::mode::ModeTarget,
    pub preview: crate::ops::mode::ModePreview,
    /// Scroll of the leaving VMs.
    pub scroll: u16,
    /// The session's revision the preview was computed on.
    pub revision: u64,
}

/// A solve running on a worker thread.
pub struct Solving {
    pub mode: session::CallMode,
    pub started: Instant,
    pub progress: SolveProgress,
    pub cancel: Arc<AtomicBool>,
    pub cancelled: bool,
}

/// A step of the clock running on a worker thread (on a copy of the session's simulator).
pub struct Stepping {
    /// The step's number, which its reports carry.
    pub id: u64,
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
    /// Done, but short of what was asked.
    Warning,
    Error,
}

impl From<session::Tone> for Tone {
    fn from(t: session::Tone) -> Tone {
        match t {
            session::Tone::Info => Tone::Info,
            session::Tone::Ok => Tone::Ok,
            session::Tone::Warning => Tone::Warning,
        }
    }
}

/// Where the user looks: the cursor, scrolling, the panel, and how the screen reacts.
pub struct View {
    pub sel: Selection,
    /// First visible host row; adjusted while drawing to keep the cursor visible.
    pub scroll: Cell<usize>,
    /// Rows of hosts the last frame showed (for page up/down).
    pub page: Cell<usize>,
    pub panel: Panel,
    /// Profile index (within the selected GPU's model) the detail explains.
    pub teach_profile: usize,
    /// Scroll of the preview's step list.
    pub preview_scroll: u16,
    pub mouse: bool,
    /// Simulated seconds per play tick.
    pub play_step_s: f64,
    /// Areas of the last frame, for mouse hit-testing.
    pub hits: RefCell<Vec<(Rect, Target)>>,
}

/// What the overlays hold while they are open; [`OVERLAYS`] is the order they stack in.
#[derive(Default)]
pub struct Overlays {
    /// The help, with its scroll.
    pub help: Option<u16>,
    pub confirm: Option<Confirm>,
    pub palette: Option<Palette>,
    pub form: Option<AddForm>,
    pub relayout: Option<RelayoutView>,
    pub mode: Option<ModeView>,
    /// The VM being moved by hand.
    pub moving: Option<VmId>,
}

/// The work running off the event loop, and the loop's channel that hears from it.
pub struct Workers {
    pub solving: Option<Solving>,
    pub stepping: Option<Stepping>,
    /// Run steps of the clock on a worker thread (the terminal); when off, a step runs at
    /// once on the loop's thread through the same request and result (scripted tests, whose
    /// screens must not depend on thread timing).
    pub background_steps: bool,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    /// Messages put aside while waiting for a worker (tests), handled first afterwards.
    deferred: std::collections::VecDeque<Msg>,
    /// When the next [`Msg::Tick`] is due while the loop wants ticks: every [`TICK`] of
    /// wall-clock time whatever else arrives, so that keys do not hold play back.
    next_tick: Option<Instant>,
    /// Steps started so far (the next one's number).
    steps_started: u64,
}

/// The TUI application.
pub struct App {
    pub session: Session,
    pub theme: Theme,
    pub keymap: Keymap,
    pub view: View,
    pub overlays: Overlays,
    pub workers: Workers,
    pub message: Option<(String, Tone)>,
    /// The regime view's run (the scenario's `[regime]` played), once opened.
    pub regime: Option<RegimePlay>,
    /// Lines run in the palette, oldest first.
    history: Vec<String>,
    pub quit: bool,
}

/// The overlays, bottom to top. A confirmation sits above the palette and the form, since it
/// asks about what they started; the help explains the layer under it, so it is the top.
pub(crate) const OVERLAYS: [Layer; 11] = [
    Layer::Preview,
    Layer::Move,
    Layer::Step,
    Layer::Solve,
    Layer::Regime,
    Layer::Relayout,
    Layer::Mode,
    Layer::Dialog,
    Layer::Palette,
    Layer::Confirm,
    Layer::Help,
];

/// Wall-clock time between play ticks.
const TICK: Duration = Duration::from_millis(250);
/// Least wall-clock time between two progress reports of a step: a long step passes thousands
/// of 10 s boundaries, and each report costs a redraw.
const STEP_PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl App {
    pub fn new(session: Session, theme: Theme) -> App {
        let (tx, rx) = channel();
        let mut app = App {
            session,
            theme,
            keymap: Keymap::embedded(),
            view: View {
                sel: Selection::default(),
                scroll: Cell::new(0),
                page: Cell::new(10),
                panel: Panel::Detail,
                teach_profile: 0,
                preview_scroll: 0,
                mouse: true,
                play_step_s: 60.0,
                hits: RefCell::new(Vec::new()),
            },
            overlays: Overlays::default(),
            workers: Workers {
                solving: None,
                stepping: None,
                background_steps: true,
                tx,
                rx,
                deferred: Default::default(),
                next_tick: None,
                steps_started: 0,
            },
            message: None,
            regime: None,
            history: Vec::new(),
            quit: false,
        };
        // A scenario with a Kubernetes regime opens on the regime view.
        if app
            .session
            .to_scenario()
            .regime
            .is_some_and(|r| r.kind != crate::scenario::RegimeKind::Paper)
        {
            app.toggle_regime();
        }
        app
    }

    /// A sender for terminal events (the input thread) or scripted messages (tests).
    pub fn sender(&self) -> Sender<Msg> {
        self.workers.tx.clone()
    }

    /// Whether the overlay of `layer` is open now (the fleet view always is).
    fn is_open(&self, layer: Layer) -> bool {
        match layer {
            Layer::Fleet => true,
            Layer::Preview => self.session.preview().is_some(),
            Layer::Move => self.overlays.moving.is_some(),
            Layer::Step => self.workers.stepping.is_some(),
            Layer::Solve => self.workers.solving.is_some(),
            Layer::Relayout => self.overlays.relayout.is_some(),
            Layer::Mode => self.overlays.mode.is_some(),
            Layer::Dialog => self.overlays.form.is_some(),
            Layer::Palette => self.overlays.palette.is_some(),
            Layer::Confirm => self.overlays.confirm.is_some(),
            Layer::Help => self.overlays.help.is_some(),
            Layer::Regime => self.regime.as_ref().is_some_and(|r| r.open),
        }
    }

    /// The overlays open now, bottom to top: the screen draws them in this order, and the top
    /// one gets the keys ([`App::layer`]), so what the user sees on top is what answers.
    pub(crate) fn overlay_stack(&self) -> impl Iterator<Item = Layer> + '_ {
        OVERLAYS.into_iter().filter(|l| self.is_open(*l))
    }

    /// The layer that receives keys now: the top overlay, or the fleet view.
    pub fn layer(&self) -> Layer {
        self.overlay_stack().last().unwrap_or(Layer::Fleet)
    }

    /// The layer the help explains: the top one under the help itself.
    pub(crate) fn context_layer(&self) -> Layer {
        self.overlay_stack()
            .filter(|l| *l != Layer::Help)
            .last()
            .unwrap_or(Layer::Fleet)
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
            Msg::Stepper(id, s) => self.on_stepper(id, s),
            Msg::Tick => {
                if self.regime.as_ref().is_some_and(|r| r.open) {
                    self.regime_tick();
                }
                // A tick while a step runs only redraws (the elapsed time); the next play tick
                // waits for the running one rather than queueing behind it.
                if self.session.playing() && !self.busy() {
                    match session::update(&mut self.session, Action::PlayTick(self.view.play_step_s)) {
                        Ok(Outcome::Step(req)) => self.start_step(*req),
                        Ok(_) => {}
                        Err(e) => self.say(format!("{e:#}"), Tone::Error),
                    }
                }
            }
            Msg::WaitIdle => {
                while self.busy() {
                    match self.workers.rx.recv() {
                        Ok(Msg::Solver(s)) => self.on_solver(s),
                        Ok(Msg::Stepper(id, s)) => self.on_stepper(id, s),
                        Ok(other) => self.workers.deferred.push_back(other),
                        Err(_) => break,
                    }
                }
            }
        }
        self.refresh_mode();
    }

    /// A solve or a step runs on a worker thread: the session must not change meanwhile, since
    /// the worker's result replaces (or is checked against) the state it copied.
    pub fn busy(&self) -> bool {
        self.workers.solving.is_some() || self.workers.stepping.is_some()
    }

    /// Makes way for a change to the session while play runs: play pauses, and the play tick
    /// running on its worker thread is dropped (cancelled, its result ignored), so that the
    /// change is made at once on the session as the screen shows it, at the last tick that
    /// landed. Nothing the simulator did is altered: the dropped tick's work is simply not taken
    /// in. A step asked for by hand is kept (and the change refused).
    fn drop_play_tick(&mut self) {
        if !self.workers.stepping.as_ref().is_some_and(|s| s.play) {
            return;
        }
        if let Some(s) = self.workers.stepping.take() {
            s.cancel.store(true, Ordering::SeqCst);
        }
        if self.session.playing() {
            let _ = session::update(&mut self.session, Action::TogglePlay);
        }
    }

    /// Why a change to the session is refused now, if it is.
    fn busy_refusal(&self) -> Option<String> {
        if self.workers.stepping.is_some() {
            let key = self
                .keymap
                .key_for(Layer::Step, &Command::Cancel)
                .unwrap_or_else(|| "Esc".into());
            Some(format!(
                "refused: the clock is stepping; wait for the step to end, or press {key} to cancel it"
            ))
        } else if self.workers.solving.is_some() {
            Some("the optimizer is running: wait, or press c to cancel".into())
        } else {
            None
        }
    }

    /// Whether the loop should wake up without input (playing, or showing solve or step
    /// progress).
    fn wants_tick(&self) -> bool {
        self.session.playing() || self.busy() || self.regime.as_ref().is_some_and(|r| r.open && r.playing)
    }

    /// The next message: deferred ones first, then the channel, with a tick every [`TICK`]
    /// while playing (on time even when keys keep arriving).
    fn next_msg(&mut self, block: bool) -> Option<Msg> {
        if let Some(m) = self.workers.deferred.pop_front() {
            return Some(m);
        }
        if !block {
            return self.workers.rx.try_recv().ok();
        }
        if !self.wants_tick() {
            self.workers.next_tick = None;
            return self.workers.rx.recv().ok();
        }
        let now = Instant::now();
        let due = *self.workers.next_tick.get_or_insert(now + TICK);
        if due > now {
            match self.workers.rx.recv_timeout(due - now) {
                Ok(m) => return Some(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
        self.workers.next_tick = Some(Instant::now() + TICK);
        Some(Msg::Tick)
    }

    /// Runs until quit: draw, wait for a message, handle it. Redraws only after messages.
    pub fn run<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<()>
    where
        B::Error: Send + Sync + 'static,
    {
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
    pub fn run_queued<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<()>
    where
        B::Error: Send + Sync + 'static,
    {
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
        if let Some(cmd) = self.keymap.lookup(layer, &key).cloned() {
            self.run_command(cmd);
            return;
        }
        // While a worker runs, the fleet view's keys still work: navigation moves, and a key
        // that would change the session says why it is refused instead of doing nothing.
        if matches!(layer, Layer::Solve | Layer::Step) {
            if let Some(cmd) = self.keymap.lookup(Layer::Fleet, &key).cloned() {
                self.run_command(cmd);
            }
            return;
        }
        // Text input in the palette and in the form's text fields.
        if let KeyCode::Char(c) = k.code {
            if key.ctrl || key.alt {
                return;
            }
            if let Some(p) = &mut self.overlays.palette {
                p.input.push(c);
                return;
            }
            if let Some(f) = &mut self.overlays.form {
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
            if let Some(p) = &mut self.overlays.palette {
                if p.input.pop().is_none() {
                    self.overlays.palette = None;
                }
                return;
            }
            if let Some(f) = &mut self.overlays.form {
                if Field::ALL[f.field].is_text() {
                    f.text_mut().pop();
                }
            }
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        if !self.view.mouse {
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
                    .view
                    .hits
                    .borrow()
                    .iter()
                    .rev()
                    .find(|(r, _)| r.contains(pos))
                    .map(|(_, t)| *t);
                match hit {
                    Some(Target::Host(h)) => self.select(h, None, None),
                    Some(Target::Slice { host, gpu, slice }) => self.select(host, Some(gpu), Some(slice)),
                    Some(Target::Panel(p)) => self.view.panel = p,
                    None => {}
                }
            }
            MouseEventKind::ScrollDown => self.run_command(Command::Down),
            MouseEventKind::ScrollUp => self.run_command(Command::Up),
            _ => {}
        }
    }

    fn select(&mut self, host: HostId, gpu: Option<usize>, slice: Option<u8>) {
        let fleet = self.session.fleet();
        if host >= fleet.hosts.len() {
            return;
        }
        self.view.sel.host = host;
        let n = fleet.hosts[host].gpus.len();
        self.view.sel.gpu = gpu.unwrap_or(self.view.sel.gpu).min(n.saturating_sub(1));
        self.view.sel.slice = slice.unwrap_or(0);
        self.clamp_slice();
    }

    fn clamp_slice(&mut self) {
        let fleet = self.session.fleet();
        let Some(h) = fleet.hosts.get(self.view.sel.host) else {
            self.view.sel = Selection::default();
            return;
        };
        if h.gpus.is_empty() {
            self.view.sel.gpu = 0;
            self.view.sel.slice = 0;
            return;
        }
        self.view.sel.gpu = self.view.sel.gpu.min(h.gpus.len() - 1);
        let slices = fleet.catalog.model(h.gpus[self.view.sel.gpu].model).memory_slices;
        self.view.sel.slice = self.view.sel.slice.min(slices.saturating_sub(1));
    }

    /// The VM whose GI covers the cursor.
    pub(crate) fn vm_under_cursor(&self) -> Option<VmId> {
        let fleet = self.session.fleet();
        let gpu = fleet.hosts.get(self.view.sel.host)?.gpus.get(self.view.sel.gpu)?;
        gpu.gi_at(fleet.catalog, self.view.sel.slice).map(|g| g.vm)
    }

    /// Runs a `:` line: one of the TUI's commands, or a line of the session's language.
    fn run_line(&mut self, line: &str) {
        match Command::parse(line) {
            Ok(cmd) => self.run_command(cmd),
            Err(e) => self.say(format!("{e:#}"), Tone::Error),
        }
    }

    /// Runs a command (from a key binding, the palette or the mouse) in the top layer.
    pub(crate) fn run_command(&mut self, cmd: Command) {
        use Command as C;
        // Commands that open a way to change the session (a form, a confirmation, a move) are
        // refused up front while a worker runs; the rest are refused in `dispatch`. A play tick
        // gives way to them instead.
        if matches!(cmd, C::AddVm | C::RemoveUnderCursor | C::StartMove) {
            self.drop_play_tick();
            if let Some(why) = self.busy_refusal() {
                self.say(why, Tone::Error);
                return;
            }
        }
        if let Some(cmd) = self.run_overlay_command(cmd) {
            self.run_any_layer_command(cmd);
        }
    }

    /// A command bound in the top overlay's layer; hands the command back when that layer does
    /// not take it.
    fn run_overlay_command(&mut self, cmd: Command) -> Option<Command> {
        use Command as C;
        match (self.layer(), cmd) {
            (Layer::Help, C::Close) => self.overlays.help = None,
            (Layer::Help, C::Down) => self.overlays.help = self.overlays.help.map(|s| s.saturating_add(1)),
            (Layer::Help, C::Up) => self.overlays.help = self.overlays.help.map(|s| s.saturating_sub(1)),
            (Layer::Confirm, C::Yes) => self.confirmed(),
            (Layer::Confirm, C::No) => {
                self.overlays.confirm = None;
                self.say("cancelled", Tone::Info);
            }
            (Layer::Palette, C::Close) => self.overlays.palette = None,
            (Layer::Palette, C::Submit) => {
                let line = self.overlays.palette.take().map(|p| p.input).unwrap_or_default();
                if !line.trim().is_empty() {
                    self.history.push(line.clone());
                    self.run_line(&line);
                }
            }
            (Layer::Palette, C::Complete) => self.complete(),
            (Layer::Palette, C::History(d)) => self.history_step(d == Dir::Prev),
            (Layer::Dialog, C::Close) => self.overlays.form = None,
            (Layer::Dialog, C::Field(d)) => {
                if let Some(f) = &mut self.overlays.form {
                    f.field = d.step(f.field, Field::ALL.len());
                }
            }
            (Layer::Dialog, C::Choice(d)) => {
                let fleet = self.session.fleet();
                let sel = self.view.sel;
                if let Some(f) = &mut self.overlays.form {
                    f.cycle(fleet, sel, d);
                }
            }
            (Layer::Dialog, C::Submit) => self.submit_form(),
            (Layer::Relayout, C::Close) => self.overlays.relayout = None,
            (Layer::Relayout, C::Choice(d)) => {
                if let Some(r) = &mut self.overlays.relayout {
                    r.choice = d.step(r.choice, r.layouts.len().max(1));
                    r.refresh(&self.session);
                }
            }
            (Layer::Relayout, C::Scroll(d)) => {
                if let Some(r) = &mut self.overlays.relayout {
                    r.scroll = match d {
                        UpDown::Up => r.scroll.saturating_sub(5),
                        UpDown::Down => r.scroll.saturating_add(5),
                    };
                }
            }
            (Layer::Mode, C::Close) => {
                self.overlays.mode = None;
                self.say("mode change discarded: nothing changed", Tone::Info);
            }
            (Layer::Mode, C::ApplyMode) => self.apply_mode(),
            (Layer::Mode, C::Scroll(d)) => {
                if let Some(m) = &mut self.overlays.mode {
                    m.scroll = match d {
                        UpDown::Up => m.scroll.saturating_sub(1),
                        UpDown::Down => m.scroll.saturating_add(1),
                    };
                }
            }
            (Layer::Move, C::Close) => {
                self.overlays.moving = None;
                self.say("move cancelled", Tone::Info);
            }
            (Layer::Move, C::MoveHere) => self.move_here(),
            (Layer::Solve, C::Cancel) => {
                if let Some(s) = &mut self.workers.solving {
                    s.cancel.store(true, Ordering::SeqCst);
                    s.cancelled = true;
                    self.say("cancelling: the best plan so far will be shown", Tone::Info);
                }
            }
            (Layer::Step, C::Cancel) => {
                if let Some(s) = &mut self.workers.stepping {
                    s.cancel.store(true, Ordering::SeqCst);
                    s.cancelled = true;
                    self.say("cancelling: the step stops at the next 10 s boundary", Tone::Info);
                }
            }
            (Layer::Preview, C::Down) => {
                self.view.preview_scroll = self.view.preview_scroll.saturating_add(1)
            }
            (Layer::Preview, C::Up) => self.view.preview_scroll = self.view.preview_scroll.saturating_sub(1),
            (Layer::Regime, cmd) => return self.run_regime_command(cmd),
            (_, cmd) => return Some(cmd),
        }
        None
    }

    /// A command that means the same in every layer (the fleet's own, and those that open an
    /// overlay).
    fn run_any_layer_command(&mut self, cmd: Command) {
        use Command as C;
        let n_hosts = self.session.fleet().hosts.len();
        match cmd {
            C::Help => self.overlays.help = Some(0),
            C::Relayout(name) => self.open_relayout(&name),
            C::Regime => self.toggle_regime(),
            C::RegimePlay | C::RegimeStep(_) | C::RegimeNext(_) if self.regime.is_some() => {
                if let Some(back) = self.run_regime_command(cmd) {
                    self.run_session_line(&back.to_string());
                }
            }
            C::RegimePlay | C::RegimeStep(_) | C::RegimeNext(_) => {
                self.say("the regime view is not open: R opens it", Tone::Error)
            }
            C::Down => {
                self.view.sel.host = (self.view.sel.host + 1).min(n_hosts.saturating_sub(1));
                self.clamp_slice();
            }
            C::Up => {
                self.view.sel.host = self.view.sel.host.saturating_sub(1);
                self.clamp_slice();
            }
            C::PageDown => {
                self.view.sel.host =
                    (self.view.sel.host + self.view.page.get().max(1)).min(n_hosts.saturating_sub(1));
                self.clamp_slice();
            }
            C::PageUp => {
                self.view.sel.host = self.view.sel.host.saturating_sub(self.view.page.get().max(1));
                self.clamp_slice();
            }
            C::Top => self.select(0, Some(0), Some(0)),
            C::Bottom => self.select(n_hosts.saturating_sub(1), Some(0), Some(0)),
            C::Right => self.cursor_right(),
            C::Left => self.cursor_left(),
            C::Panel => {
                let i = Panel::ALL.iter().position(|p| *p == self.view.panel).unwrap_or(0);
                self.view.panel = Panel::ALL[Dir::Next.step(i, Panel::ALL.len())];
            }
            C::Profile(d) => {
                let n = self
                    .selected_model()
                    .map(|m| m.profiles.len())
                    .unwrap_or(1)
                    .max(1);
                self.view.teach_profile = d.step(self.view.teach_profile, n);
            }
            C::Speed(d) => {
                self.view.play_step_s = match d {
                    UpDown::Up => (self.view.play_step_s * 2.0).min(86400.0),
                    UpDown::Down => (self.view.play_step_s / 2.0).max(session::STEP_S),
                };
                let msg = format!(
                    "play speed: {} of simulated time per tick",
                    session::format_duration(self.view.play_step_s)
                );
                self.say(msg, Tone::Info);
            }
            C::Mouse => {
                self.view.mouse = !self.view.mouse;
                let msg = format!("mouse selection {}", if self.view.mouse { "on" } else { "off" });
                self.say(msg, Tone::Info);
            }
            C::Palette => self.overlays.palette = Some(Palette::default()),
            C::AddVm => {
                let form = AddForm::new(&self.session, self.view.sel);
                match form {
                    Some(f) => self.overlays.form = Some(f),
                    None => self.say("the fleet has no GPU model to ask for", Tone::Error),
                }
            }
            C::RemoveUnderCursor => match self.vm_under_cursor() {
                Some(vm) => self.overlays.confirm = Some(Confirm::Remove(vm)),
                None => self.say("no VM under the cursor: move onto a GI first (h/l)", Tone::Error),
            },
            C::StartMove => match self.vm_under_cursor() {
                Some(vm) => {
                    self.overlays.moving = Some(vm);
                    self.say(
                        format!("moving VM {vm}: put the cursor on the target GPU and start, then Enter"),
                        Tone::Info,
                    );
                }
                None => self.say("no VM under the cursor: move onto a GI first (h/l)", Tone::Error),
            },
            C::Quit => {
                // A running step is work not yet in the session: quitting asks, as for unsaved
                // changes.
                if self.session.modified() || self.workers.stepping.is_some() {
                    self.overlays.confirm = Some(Confirm::Quit);
                } else {
                    self.stop_workers();
                    self.quit = true;
                }
            }
            C::ForceQuit => {
                self.stop_workers();
                self.quit = true;
            }
            C::Session(line) => self.run_session_line(&line),
            // A command of an overlay that is not open: the session's language does not know
            // it either, and says so.
            other => self.run_session_line(&other.to_string()),
        }
    }

    /// Runs a line of the session's language. A removal, and an open over unsaved changes,
    /// ask first, as from their keys.
    fn run_session_line(&mut self, line: &str) {
        let action = match session::parse_command(&self.session, line) {
            Ok(a) => a,
            Err(e) => return self.say(format!("{e:#}"), Tone::Error),
        };
        // `:mode` opens the preview overlay (the session logs the preview too); `:mode!` applies
        // at once, and a preview left open would then describe a fleet that is gone.
        match action {
            Action::PreviewMode { host, gpu, target } => return self.open_mode(host, gpu, target),
            Action::SetMode { .. } => {
                self.overlays.mode = None;
                return self.dispatch(action);
            }
            _ => {}
        }
        let asks = match &action {
            Action::RemoveVm(_) => true,
            Action::Open(_) => self.session.modified(),
            _ => false,
        };
        if !asks {
            return self.dispatch(action);
        }
        if let Some(why) = self.busy_refusal() {
            return self.say(why, Tone::Error);
        }
        match action {
            Action::RemoveVm(vm) if self.session.fleet().vm(vm).is_some() => {
                self.overlays.confirm = Some(Confirm::Remove(vm))
            }
            Action::Open(path) => self.overlays.confirm = Some(Confirm::Open(path)),
            _ => {
                let arg = line.trim().split_once(' ').map(|(_, a)| a).unwrap_or("");
                self.say(format!("no VM `{arg}`"), Tone::Error)
            }
        }
    }

    /// Opens the mode-change preview of GPU `gpu` of `host`: the session computes it (and logs
    /// it), the overlay shows it until it is applied or discarded.
    fn open_mode(&mut self, host: HostId, gpu: usize, target: crate::ops::mode::ModeTarget) {
        let preview = match self.session.mode_preview(host, gpu, &target) {
            Ok(p) => p,
            Err(e) => return self.say(format!("{e:#}"), Tone::Error),
        };
        self.dispatch(Action::PreviewMode {
            host,
            gpu,
            target: target.clone(),
        });
        let key = |c: Command| self.keymap.key_for(Layer::Mode, &c).unwrap_or_default();
        let head = preview
            .lines(self.session.fleet())
            .into_iter()
            .next()
            .unwrap_or_default();
        let msg = format!(
            "{head}: {} applies, {} discards",
            key(Command::ApplyMode),
            key(Command::Close)
        );
        self.say(msg, Tone::Info);
        self.overlays.mode = Some(ModeView {
            host,
            gpu,
            target,
            preview,
            scroll: 0,
            revision: self.session.revision(),
        });
        self.select(host, Some(gpu), Some(0));
    }

    /// Applies the previewed mode change as `:mode!` does (one undo step); on a refusal the
    /// preview stays open with the reason in the message line.
    fn apply_mode(&mut self) {
        let Some(m) = self.overlays.mode.take() else {
            return;
        };
        let revision = self.session.revision();
        self.dispatch(Action::SetMode {
            host: m.host,
            gpu: m.gpu,
            target: m.target.clone(),
        });
        if self.session.revision() == revision {
            self.overlays.mode = Some(m);
        }
    }

    /// Opens the re-layout preview of the selected GPU, on the layout named `name` (or the first
    /// one of its class).
    fn open_relayout(&mut self, name: &str) {
        let (host, gpu) = (self.view.sel.host, self.view.sel.gpu);
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
        self.overlays.relayout = Some(view);
    }

    fn selected_model(&self) -> Option<&'static crate::catalog::GpuModel> {
        let fleet = self.session.fleet();
        let gpu = fleet.hosts.get(self.view.sel.host)?.gpus.get(self.view.sel.gpu)?;
        Some(fleet.catalog.model(gpu.model))
    }

    fn cursor_right(&mut self) {
        let fleet = self.session.fleet();
        let Some(h) = fleet.hosts.get(self.view.sel.host) else {
            return;
        };
        let Some(gpu) = h.gpus.get(self.view.sel.gpu) else {
            return;
        };
        let slices = fleet.catalog.model(gpu.model).memory_slices;
        if self.view.sel.slice + 1 < slices {
            self.view.sel.slice += 1;
        } else if self.view.sel.gpu + 1 < h.gpus.len() {
            self.view.sel.gpu += 1;
            self.view.sel.slice = 0;
        }
    }

    fn cursor_left(&mut self) {
        if self.view.sel.slice > 0 {
            self.view.sel.slice -= 1;
        } else if self.view.sel.gpu > 0 {
            self.view.sel.gpu -= 1;
            let fleet = self.session.fleet();
            let slices = fleet.hosts[self.view.sel.host].gpus[self.view.sel.gpu].model;
            self.view.sel.slice = fleet.catalog.model(slices).memory_slices.saturating_sub(1);
        }
    }

    fn complete(&mut self) {
        let Some(p) = &mut self.overlays.palette else {
            return;
        };
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
        let Some(p) = &mut self.overlays.palette else {
            return;
        };
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
        match self.overlays.confirm.take() {
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
        let Some(vm) = self.overlays.moving else { return };
        let fleet = self.session.fleet();
        let Some(v) = fleet.vm(vm) else {
            self.overlays.moving = None;
            return;
        };
        let Some(cur) = v.placement.clone() else {
            self.overlays.moving = None;
            return;
        };
        // The first GI goes to the cursor; the others keep their GPU and start.
        let mut to = cur.clone();
        to.host = self.view.sel.host;
        if let Some(first) = to.gis.first_mut() {
            first.gpu = self.view.sel.gpu;
            first.start = self.view.sel.slice;
        }
        match session::update(&mut self.session, Action::MoveVm { vm, to }) {
            Ok(o) => {
                self.overlays.moving = None;
                self.say(o.message(), o.tone().into());
            }
            Err(e) => self.say(format!("{e:#} (Esc cancels the move)"), Tone::Error),
        }
    }

    fn submit_form(&mut self) {
        let Some(f) = self.overlays.form.clone() else {
            return;
        };
        let req = match f.request(&self.session) {
            Ok(r) => r,
            Err(e) => {
                if let Some(form) = &mut self.overlays.form {
                    form.error = Some(format!("{e:#}"));
                }
                return;
            }
        };
        match session::update(&mut self.session, Action::AddVm(req)) {
            Ok(o) => {
                self.overlays.form = None;
                self.say(o.message(), o.tone().into());
            }
            Err(e) => {
                if let Some(form) = &mut self.overlays.form {
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
            Action::TogglePlay => self.workers.stepping.as_ref().is_none_or(|s| s.play),
            _ => false,
        };
        if !harmless {
            self.drop_play_tick();
            if let Some(why) = self.busy_refusal() {
                self.say(why, Tone::Error);
                return;
            }
        }
        match session::update(&mut self.session, action) {
            Ok(Outcome::Solve(req)) => self.start_solve(*req),
            Ok(Outcome::Step(req)) => self.start_step(*req),
            Ok(o) => {
                self.say(o.message(), o.tone().into());
                self.clamp_slice();
            }
            Err(e) => self.say(format!("{e:#}"), Tone::Error),
        }
        self.refresh_mode();
    }

    /// Recomputes the open mode preview when the fleet changed under it (a step or an edit from
    /// the palette), so that it always shows what applying would do now; closes it when the
    /// change can no longer be made.
    fn refresh_mode(&mut self) {
        let revision = self.session.revision();
        let Some(m) = &mut self.overlays.mode else { return };
        if m.revision == revision {
            return;
        }
        match self.session.mode_preview(m.host, m.gpu, &m.target) {
            Ok(p) => {
                m.preview = p;
                m.revision = revision;
            }
            Err(e) => {
                self.overlays.mode = None;
                self.say(format!("mode preview closed: {e:#}"), Tone::Warning);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;
    use ratatui::backend::TestBackend;

    fn demo() -> App {
        let mut app = App::new(Session::demo().expect("the demo scenario opens"), Theme::mono());
        app.workers.background_steps = false;
        app
    }

    fn screen(app: &App) -> String {
        let mut term = Terminal::new(TestBackend::new(160, 48)).expect("a test terminal");
        term.draw(|f| f.render_widget(app, f.area()))
            .expect("the frame draws");
        let buf = term.backend().buffer();
        let a = buf.area;
        (a.top()..a.bottom())
            .map(|y| {
                (a.left()..a.right())
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn esc(app: &mut App) {
        app.handle(Msg::Term(Event::Key(KeyEvent::new(
            KeyCode::Esc,
            KeyModifiers::NONE,
        ))));
    }

    /// Opens the add-VM form from the palette, over whatever is open.
    fn open_form_from_palette(app: &mut App) {
        app.run_command(Command::Palette);
        if let Some(p) = &mut app.overlays.palette {
            p.input = "add-vm".into();
        }
        app.run_command(Command::Submit);
        assert!(app.overlays.form.is_some(), "{:?}", app.message);
    }

    #[test]
    fn the_form_over_the_relayout_preview_is_drawn_on_top_and_gets_the_keys() {
        let mut app = demo();
        app.run_command(Command::Relayout(String::new()));
        assert!(app.overlays.relayout.is_some(), "{:?}", app.message);
        let relayout_only = screen(&app);
        open_form_from_palette(&mut app);
        assert_eq!(
            app.overlay_stack().collect::<Vec<_>>(),
            [Layer::Relayout, Layer::Dialog]
        );
        assert_eq!(app.layer(), Layer::Dialog);
        let both = screen(&app);
        assert!(!relayout_only.contains("Add a VM"));
        assert!(both.contains(" Add a VM "), "the form is hidden:\n{both}");
        // The form's box (72 x 15, centred over the 46 rows above the message and status lines)
        // reads exactly as when the form is open alone: nothing is drawn over it.
        let relayout = app.overlays.relayout.take();
        let form_only = screen(&app);
        app.overlays.relayout = relayout;
        let rows = |s: &str| -> Vec<Vec<char>> { s.lines().map(|l| l.chars().collect()).collect() };
        let (both_rows, form_rows) = (rows(&both), rows(&form_only));
        let r = super::super::widgets::centred(Rect::new(0, 0, 160, 46), 72, 15);
        for y in r.top()..r.bottom() {
            let span = r.left() as usize..r.right() as usize;
            assert_eq!(
                both_rows[y as usize][span.clone()],
                form_rows[y as usize][span],
                "row {y} of the form is drawn over:\n{both}"
            );
        }
        // Esc goes to the form on top; the preview under it stays.
        esc(&mut app);
        assert!(app.overlays.form.is_none());
        assert!(app.overlays.relayout.is_some());
        assert_eq!(screen(&app), relayout_only);
    }

    #[test]
    fn a_preview_opened_over_a_running_solve_is_drawn_on_top_and_gets_the_keys() {
        let mut app = demo();
        app.workers.solving = Some(Solving {
            mode: session::CallMode::Auto,
            started: Instant::now(),
            progress: SolveProgress::default(),
            cancel: Arc::new(AtomicBool::new(false)),
            cancelled: false,
        });
        let solving_only = screen(&app);
        assert!(solving_only.contains("Optimizing"), "{solving_only}");
        app.run_command(Command::Relayout(String::new()));
        assert_eq!(app.layer(), Layer::Relayout);
        let both = screen(&app);
        assert!(
            !both.contains("Optimizing"),
            "the solve's box is drawn over the preview:\n{both}"
        );
        esc(&mut app);
        assert!(app.overlays.relayout.is_none());
        let solve = app.workers.solving.as_ref().expect("the solve still runs");
        assert!(!solve.cancelled, "Esc closed the preview, not the solve");
        assert_eq!(app.layer(), Layer::Solve);
    }

    #[test]
    fn a_confirmation_stacks_over_the_palette_and_answers_first() {
        let mut app = demo();
        app.overlays.palette = Some(Palette::default());
        app.overlays.confirm = Some(Confirm::Quit);
        assert_eq!(app.overlay_stack().last(), Some(Layer::Confirm));
        assert_eq!(app.layer(), Layer::Confirm);
        esc(&mut app);
        assert!(app.overlays.confirm.is_none(), "Esc answered the question");
        assert!(app.overlays.palette.is_some());
        assert_eq!(app.layer(), Layer::Palette);
        // The help explains the layer under it.
        app.run_command(Command::Help);
        assert_eq!(app.layer(), Layer::Help);
        assert_eq!(app.context_layer(), Layer::Palette);
    }

    #[test]
    fn the_tone_of_an_added_vm_comes_from_the_outcome() {
        let mut app = demo();
        // Every A100 of the demo fleet holds a GI: a whole one waits pending.
        app.run_line("add a100-40gb 7g.40gb");
        let (text, tone) = app.message.clone().expect("a message");
        assert!(text.contains("pending"), "{text}");
        assert_eq!(tone, Tone::Warning, "{text}");
        app.run_line("undo");
        assert_eq!(app.message.as_ref().map(|m| m.1), Some(Tone::Ok));
    }
}
