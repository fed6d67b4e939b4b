//! The session: one fleet under a simulated clock, an arrival policy, an undo history and
//! the scenario file it came from, driven by named [`Action`]s through one reducer, [`update`].
//!
//! The TUI maps keys and `:` commands to these actions, tests script them, and the CLI could drive
//! the same session headless: nothing here knows about terminals. Undo keeps whole snapshots of the
//! state (fleet, clock, log, charts, plan preview), which is simple and cannot drift from the
//! state it restores.

use crate::catalog::{ModelId, ProfileId};
use crate::executor::{self, Schedule, StepKind};
use crate::fleet::{Fleet, GiRequest, GiSlot, HostId, Placement, Vm, VmId, VmKind};
use crate::mig::{self, Occupancy};
use crate::ops::layouts::Layout;
use crate::ops::mode::{ModePreview, ModeTarget};
use crate::ops::relayout::DrainPreview;
use crate::plan::Plan;
use crate::policy::origamig::{self, bilp, bilp::SolveControl};
use crate::policy_kind::PolicyKind;
use crate::scenario::{self, PolicySettings, Scenario};
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod command;
mod describe;
mod engine;
mod handlers;
pub use command::*;
pub use describe::*;
use engine::Engine;
pub use engine::{Event, EventKind};

/// The simulation tick, re-exported for the front ends (one constant, defined by the simulator).
pub use crate::sim::STEP_S;
/// Most log entries kept (older ones are dropped).
const LOG_CAP: usize = 2000;
/// Most chart samples kept; when full, every other old sample is dropped.
const SAMPLE_CAP: usize = 2048;

use crate::policy::origamig::objective::Terms;
/// Which kind of OrigaMIG call to run (§5): decided by the triggers, or forced.
pub use crate::policy::origamig::CallMode;

/// Parses a call mode: `auto`, `admission`, `consolidation`, `opt`.
pub(crate) fn parse_call_mode(s: &str) -> Result<CallMode> {
    Ok(match s {
        "" | "auto" => CallMode::Auto,
        "admission" | "admit" => CallMode::Admission,
        "consolidation" | "consolidate" => CallMode::Consolidation,
        "opt" | "full" => CallMode::Opt,
        other => bail!("unknown optimizer mode `{other}` (auto, admission, consolidation, opt)"),
    })
}

/// A VM to add by hand.
#[derive(Debug, Clone, PartialEq)]
pub struct VmRequest {
    /// One GI per entry, all of one class.
    pub gis: Vec<GiRequest>,
    pub cores: u32,
    pub ram_gb: u32,
    /// Seconds from admission; `None` is open-ended.
    pub lifetime_s: Option<f64>,
    pub kind: VmKind,
    pub tenant: Option<String>,
    /// Pinned placement; `None` lets the arrival policy choose.
    pub pin: Option<Placement>,
    /// MIG (the `gis`), a soft share or a gang (then `gis` is empty).
    pub shape: crate::fleet::Shape,
}

/// The origin of the plans of the defragmentation pass (`:defrag`), as the preview shows it.
pub(crate) const DEFRAG_ORIGIN: &str = crate::ops::defrag::ORIGIN;
/// The origin of the GPU compaction's plans (a plan the planner shows under its own title).
pub(crate) const GPU_COMPACTION_ORIGIN: &str = origamig::GPU_COMPACTION_ORIGIN;

/// Everything a user (or a script) can do to a session.
#[derive(Debug, Clone)]
pub enum Action {
    AddVm(VmRequest),
    RemoveVm(VmId),
    MoveVm {
        vm: VmId,
        to: Placement,
    },
    /// One simulation step (10 s).
    Step,
    /// Advance the clock by this many seconds.
    StepFor(f64),
    /// Advance the clock to the next departure or arrival.
    StepToNextEvent,
    /// Start or stop continuous play (the front end advances the clock while playing).
    TogglePlay,
    /// Advance the clock while playing; the whole play counts as one undo step.
    PlayTick(f64),
    /// The result of a step handed out as [`Outcome::Step`] (run on a worker thread in the
    /// TUI, or by [`update_blocking`]).
    Stepped(Box<StepResult>),
    /// Arrivals from the scenario's workload on or off.
    SetArrivals(bool),
    /// Ask for a solve; the result comes back as [`Outcome::Solve`], to be run by the caller.
    Optimize(CallMode),
    /// The result of a solve started by [`Action::Optimize`].
    Proposed(Box<PlanProposal>),
    /// Execute the rest of the previewed plan.
    ApplyPlan,
    /// Play one phase of the next plan step (create GI, migrate, destroy old GI).
    PlanStep,
    DiscardPlan,
    Undo,
    Redo,
    /// Save to this file, or to the current one.
    Save(Option<PathBuf>),
    Open(PathBuf),
    /// Switch the arrival policy (ff, mfi, tc, origamig, ...).
    SetPolicy(String),
    /// Preview a GPU's mode change as a drain (`:mode`): nothing changes, the preview goes to
    /// the log.
    PreviewMode {
        host: HostId,
        gpu: usize,
        target: ModeTarget,
    },
    /// Change a GPU's mode (`:mode!`): the drain and the re-placement of the preview, one undo
    /// step.
    SetMode {
        host: HostId,
        gpu: usize,
        target: ModeTarget,
    },
    /// Preview the defragmentation pass's plan (`:defrag`): soft shares repacked, MIG tenants
    /// restarted at their next deploy; apply, discard and undo as any plan.
    Defrag(crate::ops::defrag::Goal),
}

/// How a front end shows an outcome's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A note: nothing changed, or work started or stopped where the user asked.
    Info,
    /// The change asked for was made.
    Ok,
    /// A change was made but falls short of what was asked.
    Warning,
}

/// What an action did, for the status line.
#[derive(Debug)]
pub enum Outcome {
    /// The state changed as asked.
    Changed(String),
    /// The VM asked for was added but does not fit: it waits in the pending queue.
    Pending(String),
    /// A step of the clock stopped where the user cancelled it; the session keeps the state
    /// reached.
    Cancelled(String),
    /// Nothing changed; a note for the user.
    Info(String),
    /// Run this solve (on a worker thread in the TUI) and send back [`Action::Proposed`].
    Solve(Box<SolveRequest>),
    /// Run this step of the clock (on a worker thread in the TUI) and send back
    /// [`Action::Stepped`]. Every action that advances time hands one out: under a policy that
    /// calls the optimizer a step can take minutes.
    Step(Box<StepRequest>),
}

impl Outcome {
    /// The message to show.
    pub fn message(&self) -> String {
        match self {
            Outcome::Changed(s) | Outcome::Pending(s) | Outcome::Cancelled(s) | Outcome::Info(s) => s.clone(),
            Outcome::Solve(r) => format!("optimizing ({})", r.mode.name()),
            Outcome::Step(r) => format!("stepping {}", format_duration(r.target_s - r.from_s)),
        }
    }

    /// How to show the message.
    pub(crate) fn tone(&self) -> Tone {
        match self {
            Outcome::Changed(_) => Tone::Ok,
            Outcome::Pending(_) => Tone::Warning,
            Outcome::Cancelled(_) | Outcome::Info(_) | Outcome::Solve(_) | Outcome::Step(_) => Tone::Info,
        }
    }
}

/// A step of the clock to run: a copy of the session's simulator and where to stop. It is
/// `Send`, so a worker thread can own it while the screen goes on.
#[derive(Clone)]
pub struct StepRequest {
    engine: Engine,
    /// Simulated time when the step was asked for.
    pub from_s: f64,
    /// Where the step stops unless cancelled.
    pub target_s: f64,
    /// The session revision the simulator was copied from; a stale result is refused.
    pub revision: u64,
    /// A tick of continuous play (the whole play run is one undo step).
    pub play: bool,
}

impl std::fmt::Debug for StepRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepRequest")
            .field("from_s", &self.from_s)
            .field("target_s", &self.target_s)
            .field("revision", &self.revision)
            .field("play", &self.play)
            .finish()
    }
}

/// How far a running step has come.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepProgress {
    pub from_s: f64,
    /// Simulated time reached (a 10 s step boundary).
    pub now_s: f64,
    pub target_s: f64,
    /// Optimizer calls the arrival policy made during this step so far.
    pub calls: usize,
}

impl StepProgress {
    /// Share of the step done, 0 to 1.
    pub fn fraction(&self) -> f64 {
        let span = self.target_s - self.from_s;
        if span > 0.0 {
            ((self.now_s - self.from_s) / span).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

impl StepRequest {
    /// Runs the step on the copied simulator. Setting `cancel` stops it at the end of the
    /// current 10 s step (an optimizer call running then stops early, as at its time limit);
    /// `progress` hears after every 10 s step.
    pub fn run(
        mut self,
        cancel: Arc<AtomicBool>,
        mut progress: impl FnMut(StepProgress),
    ) -> Result<StepResult> {
        let calls0 = self.engine.optimizer_calls();
        let (from_s, target_s) = (self.from_s, self.target_s);
        let reached = self
            .engine
            .step_until_cancellable(target_s, &cancel, &mut |now_s, calls| {
                progress(StepProgress {
                    from_s,
                    now_s,
                    target_s,
                    calls: calls.saturating_sub(calls0),
                })
            })?;
        Ok(StepResult {
            calls: self.engine.optimizer_calls().saturating_sub(calls0),
            engine: self.engine,
            from_s,
            target_s,
            revision: self.revision,
            play: self.play,
            cancelled: !reached,
        })
    }
}

/// What a step did: the simulator after it, and whether it was cancelled short of its target.
#[derive(Clone)]
pub struct StepResult {
    engine: Engine,
    pub from_s: f64,
    pub target_s: f64,
    pub revision: u64,
    pub play: bool,
    /// Stopped by the cancel flag at a 10 s step boundary before `target_s`.
    pub cancelled: bool,
    /// Optimizer calls the arrival policy made during the step.
    pub calls: usize,
}

impl StepResult {
    /// Simulated time the step reached.
    pub fn reached_s(&self) -> f64 {
        self.engine.time()
    }

    /// The fleet after the step.
    pub fn fleet(&self) -> &Fleet {
        self.engine.fleet()
    }
}

impl std::fmt::Debug for StepResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepResult")
            .field("from_s", &self.from_s)
            .field("target_s", &self.target_s)
            .field("reached_s", &self.reached_s())
            .field("cancelled", &self.cancelled)
            .field("calls", &self.calls)
            .finish()
    }
}

/// Progress of a running solve, as the optimizer reports it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SolveProgress {
    pub elapsed_s: f64,
    /// Objective of the best plan found so far.
    pub incumbent: Option<f64>,
    /// Proven bound on the objective.
    pub bound: Option<f64>,
}

/// A solve to run: a copy of the fleet and the settings. It is `Send`, so a worker thread can
/// own it while the session goes on.
#[derive(Debug, Clone)]
pub struct SolveRequest {
    pub mode: CallMode,
    pub fleet: Fleet,
    pub settings: crate::policy_settings::OrigamigSettings,
    /// The session revision the fleet was copied from; a stale result is refused.
    pub revision: u64,
}

impl SolveRequest {
    /// Runs one OrigaMIG call (§5) on the copied fleet. Setting `cancel` stops the solver soon
    /// after, keeping the best plan found so far; `progress` hears from the solving thread.
    pub fn run(
        self,
        cancel: Arc<AtomicBool>,
        progress: impl Fn(SolveProgress) + Send + Sync + 'static,
    ) -> Result<PlanProposal> {
        let control = SolveControl {
            cancel,
            progress: Some(Arc::new(move |p: &bilp::Progress| {
                progress(SolveProgress {
                    elapsed_s: p.elapsed_s,
                    incumbent: p.incumbent,
                    bound: p.bound,
                })
            })),
            // A user waits for this call: the wall clock bounds it, not the simulation's budget.
            limit: bilp::CallLimit::Clock,
            ..Default::default()
        };
        let call = origamig::propose_with(&self.fleet, self.mode, None, &self.settings, &control)?;
        // On hosts of more than two GPUs the policy's work is mostly its GPU compaction: when
        // the call has nothing to do, the planner gets the compaction's plan (whole GPUs freed)
        // instead of nothing (docs/planner.md).
        let plan = origamig::gpu_compaction_after(&self.fleet, &call, &self.settings);
        if !plan.targets.is_empty() {
            return Ok(PlanProposal::gpu_compaction(
                &self.fleet,
                plan,
                call.solve_s,
                self.revision,
            ));
        }
        Ok(PlanProposal::from_call(call, self.revision))
    }
}

/// The status of a [`PlanProposal`] made by the GPU compaction rather than by a BILP call.
pub const GPU_COMPACTION_STATUS: &str = "gpu compaction";

/// What a solve returned: a plan (target placements) and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanProposal {
    pub mode: CallMode,
    pub revision: u64,
    pub plan: Plan,
    /// The neighborhood the call optimized over.
    pub hosts: Vec<HostId>,
    /// Solver status, e.g. `optimal`, `time limit`, `cancelled`.
    pub status: String,
    pub gap: f64,
    pub solve_s: f64,
    /// Eq. (5) over the neighborhood for the current placement and for the plan's.
    pub terms: Option<(Terms, Terms)>,
    /// Eq. (5) after minus the parking penalties (what §5.3 compares).
    pub value_after: f64,
    /// The plan strictly improves Eq. (5): OrigaMIG itself would apply it.
    pub improves: bool,
    /// Why the executor could not order the plan (no parking place), if it could not.
    pub discarded: Option<String>,
    /// Pending VMs of the neighborhood the plan does not admit.
    pub not_admitted: Vec<VmId>,
}

impl PlanProposal {
    /// A proposal from an OrigaMIG call made on the session's fleet at `revision`.
    pub(crate) fn from_call(call: origamig::Proposal, revision: u64) -> PlanProposal {
        let not_admitted = call
            .neighborhood
            .pending
            .iter()
            .copied()
            .filter(|id| !call.plan.targets.contains_key(id))
            .collect();
        PlanProposal {
            mode: call.mode,
            revision,
            hosts: call.neighborhood.hosts.clone(),
            status: call
                .status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "nothing to solve".into()),
            gap: call.gap,
            solve_s: call.solve_s,
            terms: Some((call.before, call.after)),
            value_after: call.value_after,
            improves: call.improves,
            discarded: call.discarded,
            not_admitted,
            plan: call.plan,
        }
    }

    /// A proposal of the GPU compaction of big hosts ([`origamig::gpu_compaction_plan`]), made
    /// after a call (`call_s` seconds) that had nothing to do: no objective figures.
    pub(crate) fn gpu_compaction(fleet: &Fleet, plan: Plan, call_s: f64, revision: u64) -> PlanProposal {
        PlanProposal {
            hosts: plan.hosts(fleet).into_iter().collect(),
            status: GPU_COMPACTION_STATUS.into(),
            solve_s: call_s,
            ..PlanProposal::by_hand(plan, revision)
        }
    }

    /// A proposal for a plan written by hand (tests, scripts): no objective figures.
    pub fn by_hand(plan: Plan, revision: u64) -> PlanProposal {
        PlanProposal {
            mode: CallMode::Auto,
            revision,
            hosts: Vec::new(),
            status: "by hand".into(),
            gap: 0.0,
            solve_s: 0.0,
            terms: None,
            value_after: 0.0,
            improves: true,
            discarded: None,
            not_admitted: Vec::new(),
            plan,
        }
    }
}

/// Where the playback of a plan is: steps before `step` are done; `phase` is what the next
/// step has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanPhase {
    /// Nothing of the step has happened.
    #[default]
    Pending,
    /// The new GIs exist; the VM still runs on the old ones.
    Created,
    /// The VM runs on the new GIs; the old ones still exist.
    Migrated,
}

/// A plan under preview: the proposal, its executable schedule and the fleet before and after.
#[derive(Debug, Clone)]
pub struct Preview {
    pub proposal: PlanProposal,
    pub schedule: Schedule,
    pub before: Fleet,
    pub after: Fleet,
    /// Steps already executed on the live fleet.
    pub done: usize,
    pub phase: PlanPhase,
    /// Pending VMs the plan starts.
    pub admitted: Vec<VmId>,
    /// Hours over which the energy delta is shown.
    pub horizon_h: f64,
}

impl Preview {
    /// Active hosts after minus before.
    pub fn delta_hosts(&self) -> i64 {
        self.after.active_hosts() as i64 - self.before.active_hosts() as i64
    }

    pub fn delta_gpus(&self) -> i64 {
        self.after.active_gpus() as i64 - self.before.active_gpus() as i64
    }

    pub fn delta_power_w(&self) -> f64 {
        self.after.power_w() - self.before.power_w()
    }

    /// Energy difference over the horizon in kWh, at today's placements.
    pub fn delta_energy_kwh(&self) -> f64 {
        self.delta_power_w() * self.horizon_h / 1000.0
    }

    /// Hosts the plan touches (source or destination of a step), ascending.
    pub fn touched_hosts(&self) -> Vec<HostId> {
        let mut hosts: Vec<HostId> = self
            .schedule
            .steps
            .iter()
            .flat_map(|s| s.from.iter().map(|p| p.host).chain([s.to.host]))
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    pub fn finished(&self) -> bool {
        self.done >= self.schedule.steps.len()
    }
}

/// One line of the session log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// Simulated time, seconds.
    pub t: f64,
    pub kind: EventKind,
    pub text: String,
}

/// A point of the charts over simulated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub active_hosts: usize,
    pub active_gpus: usize,
    pub power_w: f64,
    /// Admitted share of requested memory slices so far.
    pub acceptance: f64,
    /// Stranded share of free slices, worst profile of the largest class.
    pub stranded: f64,
}

/// Free capacity a profile cannot use without moving anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Stranded {
    pub model: ModelId,
    pub profile: ProfileId,
    /// Free slices of the class that the profile cannot use.
    pub count: u32,
    /// `count` over the free slices of the class.
    pub share: f64,
}

/// A VM waiting in the pending queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub vm: VmId,
    pub shape: String,
    pub wait_s: f64,
    pub reason: String,
}

/// The figures the gauges show, recomputed after every change (drawing reads them for free).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gauges {
    pub active_hosts: usize,
    pub hosts: usize,
    pub active_gpus: usize,
    pub gpus: usize,
    /// The fewest GPUs that could hold the work (`metrics::least_gpus`: each class's GIs packed
    /// full by memory and compute slices).
    pub least_gpus: u64,
    /// Occupied share of the memory slices of active GPUs.
    pub packing: f64,
    pub stranded: Vec<Stranded>,
    /// The one stranded-capacity measure across modes (`metrics::stranded_capacity`): MIG
    /// compute slices and shared GB that no pending shape can use.
    pub capacity: crate::metrics::StrandedCapacity,
    /// Gamma_h (Eq. 17) per class: (model of the class, gap).
    pub gamma: Vec<(ModelId, i64)>,
    pub power_w: f64,
    /// Energy since the session opened.
    pub energy_kwh: f64,
    /// Admitted share of the memory slices requested since the session opened (the simulator's
    /// acceptance, §6.3): the scenario's waiting requests count, and a waiting request removed by
    /// hand counts as not admitted.
    pub acceptance: f64,
    pub pending: Vec<Waiting>,
    pub placed_vms: usize,
}

/// The part of a session that undo restores.
#[derive(Clone)]
struct State {
    engine: Engine,
    preview: Option<Preview>,
    log: VecDeque<LogEntry>,
    samples: Vec<Sample>,
    revision: u64,
}

/// The session: what the TUI edits, and what scripts and tests drive headless.
pub struct Session {
    state: State,
    undo: Vec<State>,
    redo: Vec<State>,
    /// The scenario it was opened from (names, settings, host groups for saving).
    scenario: Scenario,
    path: Option<PathBuf>,
    saved_revision: u64,
    next_revision: u64,
    playing: bool,
    /// Whether a snapshot was taken for the current play run.
    play_snapshot: bool,
    gauges: Gauges,
    undo_cap: usize,
}

impl Session {
    /// A session over a loaded scenario; `path` is where `:w` saves.
    pub fn new(scenario: Scenario, path: Option<PathBuf>) -> Result<Session> {
        let engine = Engine::new(&scenario)?;
        let undo_cap = if scenario.fleet.hosts.len() > 1024 {
            16
        } else {
            100
        };
        let mut s = Session {
            state: State {
                engine,
                preview: None,
                log: VecDeque::new(),
                samples: Vec::new(),
                revision: 0,
            },
            undo: Vec::new(),
            redo: Vec::new(),
            scenario,
            path,
            saved_revision: 0,
            next_revision: 1,
            playing: false,
            play_snapshot: false,
            gauges: Gauges::default(),
            undo_cap,
        };
        s.refresh();
        Ok(s)
    }

    /// The embedded demo scenario (not tied to a file).
    pub fn demo() -> Result<Session> {
        Session::new(scenario::parse(scenario::DEMO, "demo.toml")?, None)
    }

    /// Opens a scenario file.
    pub fn open(path: &Path) -> Result<Session> {
        Session::new(scenario::load(path)?, Some(path.to_path_buf()))
    }

    pub fn fleet(&self) -> &Fleet {
        self.state.engine.fleet()
    }

    /// Simulated seconds since the scenario's start.
    pub fn now_s(&self) -> f64 {
        self.state.engine.time()
    }

    /// The simulated clock as a date and time.
    pub fn now_date(&self) -> chrono::DateTime<chrono::Utc> {
        self.state.engine.now_date()
    }

    /// The date of simulated time `t` (seconds since the scenario's start).
    pub(crate) fn date_at(&self, t: f64) -> chrono::DateTime<chrono::Utc> {
        self.state.engine.date_at(t)
    }

    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    pub fn description(&self) -> Option<&str> {
        self.scenario.description.as_deref()
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Unsaved changes since the last save or open.
    pub fn modified(&self) -> bool {
        self.state.revision != self.saved_revision
    }

    pub fn playing(&self) -> bool {
        self.playing
    }

    pub fn arrivals(&self) -> bool {
        self.state.engine.arrivals()
    }

    pub fn policy_name(&self) -> &str {
        self.state.engine.policy_name()
    }

    /// The arrival policy in use (the scenario's when the policy has a name of its own).
    pub fn policy_kind(&self) -> PolicyKind {
        PolicyKind::find(self.policy_name()).unwrap_or(self.scenario.policy.arrival)
    }

    pub fn settings(&self) -> &PolicySettings {
        &self.scenario.policy
    }

    pub fn preview(&self) -> Option<&Preview> {
        self.state.preview.as_ref()
    }

    pub fn log(&self) -> impl DoubleEndedIterator<Item = &LogEntry> + ExactSizeIterator {
        self.state.log.iter()
    }

    pub fn samples(&self) -> &[Sample] {
        &self.state.samples
    }

    pub fn gauges(&self) -> &Gauges {
        &self.gauges
    }

    /// Optimizer calls the arrival policy has made since the session opened (or since its
    /// policy was last set).
    pub(crate) fn optimizer_calls(&self) -> usize {
        self.state.engine.optimizer_calls()
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Revision counter of the state: changes on every change, restored by undo.
    pub fn revision(&self) -> u64 {
        self.state.revision
    }

    /// The layouts GPU `gpu` of `host` can be given (`assets/layouts.toml`, its model's first,
    /// then the rest of its class), for the re-layout preview.
    pub(crate) fn layouts_for(&self, host: HostId, gpu: usize) -> Vec<&'static Layout> {
        let fleet = self.fleet();
        let Some(g) = fleet.hosts.get(host).and_then(|h| h.gpus.get(gpu)) else {
            return Vec::new();
        };
        let menu = crate::ops::layouts::embedded();
        let own = menu.for_model(g.model);
        let class = menu
            .all()
            .iter()
            .filter(|l| l.model != g.model && fleet.catalog.same_class(l.model, g.model));
        own.chain(class).collect()
    }

    /// What giving GPU `gpu` of `host` the layout `layout` would do: the drain
    /// displaces every VM of the host; each is listed with whether it has a free place elsewhere
    /// and whether it gets its instance back. Read-only: nothing changes.
    pub(crate) fn relayout_preview(&self, host: HostId, gpu: usize, layout: &Layout) -> Result<DrainPreview> {
        Ok(crate::ops::relayout::drain_preview(
            self.fleet(),
            host,
            gpu,
            layout,
        )?)
    }

    /// What changing GPU `gpu` of `host` to `target` would do (docs/operations.md, "Mode
    /// changes"): who leaves and where each goes. Read-only.
    pub fn mode_preview(&self, host: HostId, gpu: usize, target: &ModeTarget) -> Result<ModePreview> {
        Ok(crate::ops::mode::mode_preview(self.fleet(), host, gpu, target)?)
    }

    /// The scenario as it would be saved now.
    pub fn to_scenario(&self) -> Scenario {
        let mut sc = self.scenario.clone();
        sc.fleet = self.fleet().clone();
        sc.now_s = self.now_s();
        sc.workload.enabled = self.arrivals();
        sc.policy.arrival = self.policy_kind();
        sc
    }

    /// Saves the current state before a change, and clears redo.
    fn checkpoint(&mut self) {
        self.undo.push(self.state.clone());
        if self.undo.len() > self.undo_cap {
            self.undo.remove(0);
        }
        self.redo.clear();
    }

    /// Marks the state as changed and recomputes the gauges and a chart sample.
    fn changed(&mut self) {
        self.state.revision = self.next_revision;
        self.next_revision += 1;
        self.pull_events();
        self.refresh();
    }

    fn note(&mut self, kind: EventKind, text: String) {
        let t = self.now_s();
        self.push_log(LogEntry { t, kind, text });
    }

    fn push_log(&mut self, e: LogEntry) {
        self.state.log.push_back(e);
        while self.state.log.len() > LOG_CAP {
            self.state.log.pop_front();
        }
    }

    /// Moves the engine's new events into the log.
    fn pull_events(&mut self) {
        for e in self.state.engine.take_events() {
            self.push_log(LogEntry {
                t: e.t,
                kind: e.kind,
                text: e.text,
            });
        }
    }

    fn refresh(&mut self) {
        self.gauges = gauges(
            self.fleet(),
            self.now_s(),
            self.state.engine.energy_kwh(),
            self.state.engine.acceptance(),
        );
        let g = &self.gauges;
        let stranded = g
            .stranded
            .iter()
            .filter(|s| s.share.is_finite())
            .map(|s| s.share)
            .fold(0.0, f64::max);
        let sample = Sample {
            t: self.now_s(),
            active_hosts: g.active_hosts,
            active_gpus: g.active_gpus,
            power_w: g.power_w,
            acceptance: g.acceptance,
            stranded,
        };
        let samples = &mut self.state.samples;
        match samples.last_mut() {
            Some(last) if last.t == sample.t => *last = sample,
            _ => samples.push(sample),
        }
        if samples.len() > SAMPLE_CAP {
            let keep: Vec<Sample> = samples
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 2 == 0 || *i + 1 == samples.len())
                .map(|(_, s)| *s)
                .collect();
            *samples = keep;
        }
    }

    /// Refuses to step while a plan is half played.
    fn check_steppable(&self) -> Result<()> {
        if let Some(p) = &self.state.preview {
            if p.done > 0 || p.phase != PlanPhase::Pending {
                bail!("a plan is being played: apply it (a) or undo (u) before stepping time");
            }
        }
        Ok(())
    }

    /// A step to `t` from now, for the caller to run ([`Outcome::Step`]).
    fn step_request(&self, t: f64, play: bool) -> Result<Outcome> {
        self.check_steppable()?;
        Ok(Outcome::Step(Box::new(StepRequest {
            engine: self.state.engine.clone(),
            from_s: self.now_s(),
            target_s: t,
            revision: self.state.revision,
            play,
        })))
    }

    /// After the clock moved: a departure only removes steps of a previewed plan (§5.4): drop
    /// targets of VMs that left, and keep the plan only if the rest still runs on the fleet as
    /// it is now.
    fn keep_preview_after_step(&mut self) {
        if let Some(p) = self.state.preview.take() {
            let mut proposal = p.proposal.clone();
            let fleet = self.state.engine.fleet();
            proposal.plan.targets.retain(|id, _| fleet.vm(*id).is_some());
            if proposal.plan.targets.is_empty() {
                self.note(EventKind::Plan, "plan dropped: its VMs have left".into());
            } else {
                match build_preview(fleet, proposal, p.horizon_h, self.scenario.policy.origamig.delta) {
                    Ok(rebuilt) if rebuilt.schedule.steps.is_empty() => self.note(
                        EventKind::Plan,
                        "plan dropped: nothing of it is left to do".into(),
                    ),
                    Ok(rebuilt) => self.state.preview = Some(rebuilt),
                    Err(e) => self.note(EventKind::Plan, format!("plan dropped: the fleet changed ({e})")),
                }
            }
        }
    }
}

/// The reducer: applies one action to the session.
pub fn update(s: &mut Session, action: Action) -> Result<Outcome> {
    use handlers::*;
    use Action::*;
    // A play tick's step coming back is part of the play run, like the tick that asked for it.
    let play_step = matches!(&action, Stepped(r) if r.play);
    if !matches!(action, PlayTick(_) | TogglePlay) && !play_step && s.playing {
        // Any other action ends a play run, so that the run is one undo step.
        s.playing = false;
        s.play_snapshot = false;
    }
    match action {
        AddVm(req) => fleet::add_vm(s, req),
        RemoveVm(id) => fleet::remove_vm(s, id),
        MoveVm { vm, to } => fleet::move_vm(s, vm, to),
        Step => clock::step(s),
        StepFor(d) => clock::step_for(s, d),
        StepToNextEvent => clock::step_to_next_event(s),
        TogglePlay => clock::toggle_play(s),
        PlayTick(d) => clock::play_tick(s, d),
        Stepped(r) => stepped::stepped(s, *r),
        SetArrivals(on) => settings::set_arrivals(s, on),
        Optimize(mode) => optimizer::optimize(s, mode),
        Proposed(p) => optimizer::proposed(s, p),
        ApplyPlan => plan::apply_plan(s),
        PlanStep => plan_step::plan_step(s),
        DiscardPlan => plan::discard_plan(s),
        Defrag(goal) => defrag::defrag(s, goal),
        PreviewMode { host, gpu, target } => mode::preview_mode(s, host, gpu, target),
        SetMode { host, gpu, target } => mode::set_mode(s, host, gpu, target),
        Undo => history::undo(s),
        Redo => history::redo(s),
        Save(path) => file::save(s, path),
        Open(path) => file::open(s, path),
        SetPolicy(name) => settings::set_policy(s, name),
    }
}

/// [`update`], then a step it hands out ([`Outcome::Step`]) run at once on this thread, its
/// result taken in through [`Action::Stepped`] as the TUI does: for scripts, tests and callers
/// without a worker thread. A solve ([`Outcome::Solve`]) is still handed out.
pub fn update_blocking(s: &mut Session, action: Action) -> Result<Outcome> {
    match update(s, action)? {
        Outcome::Step(req) => {
            let r = req.run(Arc::default(), |_| {})?;
            update(s, Action::Stepped(Box::new(r)))
        }
        other => Ok(other),
    }
}

/// Schedules a proposal's plan on the fleet and computes the fleet after it.
/// `delta` prices parking moves (§5.3).
pub(crate) fn build_preview(
    fleet: &Fleet,
    proposal: PlanProposal,
    horizon_h: f64,
    delta: f64,
) -> Result<Preview> {
    let schedule = executor::schedule_with(fleet, &proposal.plan, delta)
        .map_err(|e| anyhow!("the plan cannot run: {e}"))?;
    let mut after = fleet.clone();
    executor::execute(&mut after, &schedule).map_err(|e| anyhow!("the plan cannot run: {e}"))?;
    let admitted = schedule
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Start)
        .map(|s| s.vm)
        .collect();
    Ok(Preview {
        proposal,
        schedule,
        before: fleet.clone(),
        after,
        done: 0,
        phase: PlanPhase::Pending,
        admitted,
        horizon_h,
    })
}
