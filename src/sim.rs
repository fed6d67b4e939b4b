//! The simulation clock (§6.1): discrete time in 10 s steps over one fleet, with arrivals,
//! admissions, departures (a lifetime starts at admission), the pending queue and a policy hook
//! on every step. Free of I/O, deterministic for a seed, and `Clone` so that a front end can
//! snapshot it (the TUI's undo).
//!
//! Within a step, arrivals and departures happen at their exact times, in time order (a
//! departure first on a tie); the policy sees each arrival when it happens and gets its
//! [`Policy::on_step_plans`] call at the end of the step. Each plan it proposes, in order, is ordered by
//! [`executor::schedule_with`] and applied by [`executor::execute`]; nothing else changes the fleet.
//! The API follows the clock of nexosim: [`Simulator::time`], [`Simulator::step`],
//! [`Simulator::step_until`] (a deadline in the past is an error) and [`Simulator::run`].

use crate::executor::{self, StepKind};
use crate::fleet::{Fleet, HostId, Placement, Vm, VmId};
use crate::metrics::{self, Recorder, Summary};
use crate::plan::Plan;
use crate::policy::Policy;
use crate::scenario::{PolicySettings, Scenario, WorkloadSettings};
use crate::workload::{ClassRate, Workload};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

pub mod admission;

/// The paper's step: OrigaMIG checks its triggers every 10 s of simulated time (§6.1).
pub const STEP_S: f64 = 10.0;
/// The event log keeps at least this many of the latest events (and at most twice as many).
pub const EVENT_LOG: usize = 4096;
/// Stranded capacity is sampled this often (seconds).
const STRANDED_EVERY_S: f64 = 300.0;

/// What happened, for the event log.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A request arrived.
    Arrival { vm: VmId },
    /// A VM started on a host after waiting `wait_s` seconds.
    Admission { vm: VmId, host: HostId, wait_s: f64 },
    /// A request the policy could not place joined the pending queue.
    Queued { vm: VmId },
    /// A request the policy could not place was rejected.
    Reject { vm: VmId },
    /// A request failed an admission check before the policy saw it (over its
    /// tenant's quota, or multi-GPU work on slices; [`admission::admission`]).
    Refused { vm: VmId, reason: String },
    /// A VM left at the end of its lifetime.
    Departure { vm: VmId, host: Option<HostId> },
    /// A VM moved (live migration); `gb` copied when it changed host.
    Migration {
        vm: VmId,
        from: HostId,
        to: HostId,
        gb: f64,
    },
    /// A VM was stopped and started on another place at its next deploy (nothing copied).
    Restart { vm: VmId, from: HostId, to: HostId },
    /// A plan was applied.
    Plan { origin: String, steps: usize },
    /// A plan or placement could not be applied and was discarded.
    Discarded { origin: String, reason: String },
}

/// One entry of the event log, stamped with simulated time (seconds).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Event {
    pub t: f64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Errors of the clock a caller can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The deadline lies before the current simulated time; nothing was done.
    #[error("deadline {deadline_s} s is before the current simulated time {now_s} s")]
    Past { deadline_s: f64, now_s: f64 },
    /// The deadline is not a finite number of seconds.
    #[error("deadline {0} is not a finite time")]
    NotFinite(f64),
}

/// A departure time as a heap key (times are finite and non-negative).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}
impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Time {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A discrete-time simulation of one fleet under one policy.
#[derive(Clone)]
pub struct Simulator {
    fleet: Fleet,
    policy: Box<dyn Policy>,
    settings: PolicySettings,
    workload_settings: WorkloadSettings,
    start: chrono::DateTime<chrono::Utc>,
    t0: f64,
    now: f64,
    /// Grid points passed: the k-th step ends at t0 + k x STEP_S.
    steps: u64,
    horizon: f64,
    workload: Workload,
    arrivals: bool,
    departures: BinaryHeap<Reverse<(Time, VmId)>>,
    events: Vec<Event>,
    events_total: u64,
    recorder: Recorder,
    /// The fleet was handed out mutably: departures and cached state are rebuilt before use.
    dirty: bool,
    next_id: VmId,
    last_minute: u64,
    last_stranded: u64,
    check_invariants: bool,
    /// Per-tenant quotas of the scenario, checked on arrival ([`admission`]).
    quotas: admission::Quotas,
    /// Requests refused by those admission checks since the start.
    refused: u64,
    /// Optimizer calls the policy had made when the measurement window opened.
    calls_before_window: Option<usize>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("policy", &self.policy.name())
            .field("now", &self.now)
            .field("horizon", &self.horizon)
            .field("vms", &self.fleet.vms().count())
            .finish()
    }
}

impl Simulator {
    /// A simulator over the scenario's fleet, workload and start time, driven by `policy`. The
    /// clock starts at the scenario's `now_s`; the warm-up and measurement window follow it. A
    /// trace workload is read and checked here, before anything runs.
    pub fn new(scenario: &Scenario, policy: Box<dyn Policy>) -> anyhow::Result<Simulator> {
        let w = &scenario.workload;
        if !(w.warmup_h >= 0.0 && w.measure_h >= 0.0 && w.warmup_h.is_finite() && w.measure_h.is_finite()) {
            anyhow::bail!("workload.warmup_h and workload.measure_h must be non-negative hours");
        }
        if scenario.policy.migration_gbps.is_nan() || scenario.policy.migration_gbps <= 0.0 {
            anyhow::bail!("policy.migration_gbps must be positive");
        }
        let t0 = scenario.now_s;
        let fleet = scenario.fleet.clone();
        fleet
            .check_invariants()
            .map_err(|e| anyhow::anyhow!("scenario `{}`: {e}", scenario.name))?;
        let workload = Workload::new(w, &fleet, t0)?;
        let ws = t0 + w.warmup_h * 3600.0;
        let horizon = ws + w.measure_h * 3600.0;
        let mut recorder = Recorder::new(&fleet, (ws, horizon), t0);
        // The scenario's pending VMs are requests too: admitting one later must not count an
        // admission without its request.
        for v in fleet.pending().iter().filter_map(|&id| fleet.vm(id)) {
            recorder.on_request(v.arrival, v.memory_slices(fleet.catalog));
        }
        let mut sim = Simulator {
            next_id: fleet.next_vm_id(),
            fleet,
            policy,
            settings: scenario.policy.clone(),
            workload_settings: w.clone(),
            start: scenario.start,
            t0,
            now: t0,
            steps: 0,
            horizon,
            workload,
            arrivals: w.enabled,
            departures: BinaryHeap::new(),
            events: Vec::new(),
            events_total: 0,
            recorder,
            dirty: true,
            last_minute: 0,
            last_stranded: 0,
            check_invariants: false,
            quotas: scenario.quotas.clone(),
            refused: 0,
            calls_before_window: None,
        };
        sim.resync();
        sim.offer_waiting_shapes();
        Ok(sim)
    }

    /// The scenario's pending shares and gangs are offered to the policy once at the start, as
    /// arrivals are: placed, or rejected (only MIG requests wait in the queue).
    fn offer_waiting_shapes(&mut self) {
        let t = self.now;
        let waiting: Vec<VmId> = self
            .fleet
            .pending()
            .iter()
            .copied()
            .filter(|&id| self.fleet.vm(id).is_some_and(|v| !v.is_mig()))
            .collect();
        for id in waiting {
            let Some(vm) = self.fleet.vm(id).cloned() else {
                continue;
            };
            let placed = match self.policy.on_arrival(&self.fleet, &vm, t) {
                Some(p) => {
                    let host = p.host;
                    let ok = self.fleet.place(id, p).is_ok();
                    if ok {
                        if let Some(v) = self.fleet.vm_meta_mut(id) {
                            v.admitted_at = Some(t);
                        }
                        self.admitted(id, t, 0);
                        self.recorder.refresh_host(&self.fleet, host);
                    }
                    ok
                }
                None => false,
            };
            if !placed && self.fleet.reject_pending(id).is_ok() {
                self.recorder.on_reject(vm.arrival);
                self.log(t, EventKind::Reject { vm: id });
            }
        }
    }

    /// Current simulated time, seconds since the scenario's start date.
    pub fn time(&self) -> f64 {
        self.now
    }

    /// Current simulated time as a date.
    pub fn now_date(&self) -> chrono::DateTime<chrono::Utc> {
        self.date_at(self.now)
    }

    /// The date of simulated time `t` (seconds since the start date).
    pub(crate) fn date_at(&self, t: f64) -> chrono::DateTime<chrono::Utc> {
        self.start + chrono::Duration::milliseconds((t * 1000.0).round() as i64)
    }

    /// The scenario's start date (simulated time zero).
    pub fn start_date(&self) -> chrono::DateTime<chrono::Utc> {
        self.start
    }

    /// End of the run: the warm-up plus the measurement window after the starting time.
    pub fn horizon(&self) -> f64 {
        self.horizon
    }

    /// The measurement window (start, end) in simulated seconds.
    pub fn window(&self) -> (f64, f64) {
        self.recorder.window()
    }

    /// Sets the measurement window; `run` then stops at its end.
    pub fn set_window(&mut self, start: f64, end: f64) {
        self.recorder.set_window((start, end));
        self.horizon = end;
    }

    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// The fleet for changes by hand (the TUI). Departures and the metrics' cached state are
    /// rebuilt before the clock moves again; a VM placed by hand is admitted now.
    pub(crate) fn fleet_mut(&mut self) -> &mut Fleet {
        self.dirty = true;
        &mut self.fleet
    }

    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// Replaces the policy from now on.
    pub(crate) fn set_policy(&mut self, policy: Box<dyn Policy>) {
        self.policy = policy;
    }

    /// The policy, to hand it a cancel flag ([`Policy::set_cancel`]).
    pub(crate) fn policy_mut(&mut self) -> &mut dyn Policy {
        self.policy.as_mut()
    }

    pub fn policy_settings(&self) -> &PolicySettings {
        &self.settings
    }

    pub fn workload_settings(&self) -> &WorkloadSettings {
        &self.workload_settings
    }

    /// Per-class arrival rates of the synthetic workload.
    pub fn class_rates(&self) -> &[ClassRate] {
        self.workload.class_rates()
    }

    /// Whether the workload's requests arrive. While off, they are drawn and dropped, so the
    /// requests after switching back on are the same as in an uninterrupted run.
    pub fn set_arrivals(&mut self, on: bool) {
        self.arrivals = on;
    }

    pub fn arrivals(&self) -> bool {
        self.arrivals
    }

    /// Checks the fleet's invariants after every arrival, departure and executor step, and
    /// panics on a violation (for tests).
    pub fn set_check_invariants(&mut self, on: bool) {
        self.check_invariants = on;
    }

    /// The latest events, oldest first (at least the last [`EVENT_LOG`] of them).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Events logged since the start, including those the log no longer holds.
    pub fn events_total(&self) -> u64 {
        self.events_total
    }

    /// Requests refused by the admission checks (quota, multi-GPU on slices) since
    /// the start; each is also logged as [`EventKind::Refused`] and counted as rejected.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// The metrics over the measurement window up to now.
    pub fn metrics(&self) -> Summary {
        let mut s = self.recorder.summary(self.now);
        let (ws, _) = self.window();
        let log = self.policy.call_log();
        let times = &log.times_s;
        s.calls = times.len() as u64;
        s.call_s_total = times.iter().fold(0.0, |a, b| a + b);
        (s.trigger_checks, s.trigger_check_s_total) = (log.trigger_checks, log.trigger_check_s);
        s.calls_node_limited = log.limited.node_limited;
        s.calls_wall_limited = log.limited.wall_limited;
        s.calls_by_trigger = log.tallies.clone();
        if self.now > ws && !times.is_empty() {
            let skip = self.calls_before_window.unwrap_or(0).min(times.len());
            let calls = &times[skip..];
            s.calls_per_h = if s.measured_h > 0.0 {
                calls.len() as f64 / s.measured_h
            } else {
                0.0
            };
            s.call_s_median = metrics::quantile(calls, 0.5);
            s.call_s_p95 = metrics::quantile(calls, 0.95);
            let sizes = &log.vms;
            if sizes.len() == times.len() {
                let sizes = &sizes[skip..];
                s.call_vms_mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
            }
        }
        s
    }

    /// Current fleet power in watts.
    pub fn power_w(&self) -> f64 {
        if self.dirty {
            self.fleet.power_w()
        } else {
            self.recorder.power_w()
        }
    }

    /// Time of the next arrival (if arrivals are on) or departure, whichever comes first.
    pub fn next_event_time(&self) -> Option<f64> {
        let dep = if self.dirty {
            self.fleet
                .vms()
                .filter(|v| v.placement.is_some())
                .filter_map(|v| v.departure().or(v.lifetime.map(|l| self.now + l)))
                .min_by(|a, b| a.total_cmp(b))
        } else {
            self.departures
                .iter()
                .filter(|Reverse((t, id))| self.fleet.vm(*id).and_then(Vm::departure) == Some(t.0))
                .map(|Reverse((t, _))| t.0)
                .min_by(|a, b| a.total_cmp(b))
        };
        let arr = if self.arrivals {
            self.workload.peek_time()
        } else {
            None
        };
        match (dep, arr) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The end of the next step: the next multiple of [`STEP_S`] after the start.
    fn next_grid(&self) -> f64 {
        self.t0 + (self.steps + 1) as f64 * STEP_S
    }

    /// Advances one step (to the next 10 s grid point) and gives the policy its step.
    pub fn step(&mut self) {
        let t = self.next_grid();
        self.advance_to(t);
        self.steps += 1;
        self.grid_point(t);
    }

    /// Runs the next `hours` and shows `observe` every fleet state on the way, with whether it may
    /// differ from the one shown before (the event count moved) and how many hours it lasts: the
    /// clock stops at every event and every step, so nothing changes within one call.
    pub(crate) fn run_for(
        &mut self,
        hours: f64,
        mut observe: impl FnMut(&Fleet, bool, f64),
    ) -> Result<(), SimError> {
        let t0 = self.time();
        let end = t0 + hours * 3600.0;
        let mut seen = u64::MAX;
        while self.time() < end {
            let t = self.time();
            let grid = t0 + ((t - t0) / STEP_S).floor() * STEP_S + STEP_S;
            let next = self
                .next_event_time()
                .filter(|&x| x > t)
                .unwrap_or(f64::INFINITY)
                .min(grid)
                .min(end);
            let changed = self.events_total() != seen;
            seen = self.events_total();
            observe(&self.fleet, changed, (next - t) / 3600.0);
            self.step_until(next)?;
        }
        Ok(())
    }

    /// Advances to `deadline`: whole steps up to it, then the events up to the deadline itself
    /// (the policy's next step comes at the next grid point).
    pub fn step_until(&mut self, deadline: f64) -> Result<(), SimError> {
        self.step_until_while(deadline, &mut |_| true).map(|_| ())
    }

    /// [`Self::step_until`] that asks `go_on` after each whole step (the policy's step
    /// included) whether to continue. When it says no, the clock stays at that step's grid
    /// point, short of the deadline, with every event up to it handled: a state as whole as
    /// after any step. Returns whether the deadline was reached. The planner runs long steps
    /// this way on a worker thread, to report progress and to stop when the user cancels.
    pub fn step_until_while(
        &mut self,
        deadline: f64,
        go_on: &mut dyn FnMut(&Simulator) -> bool,
    ) -> Result<bool, SimError> {
        if !deadline.is_finite() {
            return Err(SimError::NotFinite(deadline));
        }
        if deadline < self.now {
            return Err(SimError::Past {
                deadline_s: deadline,
                now_s: self.now,
            });
        }
        while self.next_grid() <= deadline {
            self.step();
            if !go_on(self) {
                return Ok(self.now >= deadline);
            }
        }
        self.advance_to(deadline);
        Ok(true)
    }

    /// Runs to the end of the measurement window.
    pub fn run(&mut self) {
        self.run_with(&mut |_| {});
    }

    /// Runs to the end of the measurement window, reporting the fraction done about once per
    /// simulated hour.
    pub(crate) fn run_with(&mut self, progress: &mut dyn FnMut(f64)) {
        let (from, to) = (self.now, self.horizon);
        while self.now < to {
            let next = (self.now + 3600.0).min(to);
            // `next` is never in the past.
            let _ = self.step_until(next);
            if to > from {
                progress((self.now - from) / (to - from));
            }
        }
    }

    /// A request made by hand (the TUI) arrives now and goes through the policy like any other.
    /// Returns the VM's id.
    pub fn submit(&mut self, mut vm: Vm) -> VmId {
        self.resync();
        let id = self.fresh_id(vm.id);
        vm.id = id;
        vm.arrival = self.now;
        vm.placement = None;
        vm.admitted_at = None;
        self.arrive(vm, self.now);
        id
    }

    /// Applies a plan now through the scheduler and executor (the TUI's "apply"), with the
    /// same bookkeeping as a plan from the policy.
    pub fn apply_plan(&mut self, plan: &Plan) -> Result<(), executor::PlanError> {
        self.resync();
        let now = self.now;
        self.apply(plan, now)
    }

    /// A request made by hand (the TUI) arrives now: it goes to `pin` when given (an error, with
    /// nothing changed, when it does not fit there), else where the policy places it, and waits
    /// in the pending queue when the policy cannot place it, whatever the policy does with its
    /// own unplaced arrivals (a user who asked for it may then run an optimizer call to admit
    /// it). Returns the VM's id and whether it was placed.
    pub(crate) fn submit_by_hand(
        &mut self,
        mut vm: Vm,
        pin: Option<Placement>,
    ) -> anyhow::Result<(VmId, bool)> {
        self.resync();
        let t = self.now;
        vm.arrival = t;
        vm.placement = None;
        vm.admitted_at = None;
        self.fleet.validate_request(&vm)?;
        // The admission checks refuse it before anything changes.
        admission::admission(&self.quotas, &self.settings, &self.fleet, &vm)
            .map_err(|reason| anyhow::anyhow!("refused: {reason}"))?;
        if let Some(p) = &pin {
            let mut probe = vm.clone();
            probe.id = self.next_id.max(self.fleet.next_vm_id());
            self.fleet.validate_placement(&probe, p, false)?;
        }
        let id = self.fresh_id(vm.id);
        vm.id = id;
        let slices = vm.memory_slices(self.fleet.catalog);
        self.recorder.advance(t);
        self.recorder.on_request(t, slices);
        self.log(t, EventKind::Arrival { vm: id });
        let placement = match pin {
            Some(p) => Some(p),
            None => self.policy.on_arrival(&self.fleet, &vm, t),
        };
        if let Some(p) = placement {
            let host = p.host;
            let mut placed = vm.clone();
            placed.admitted_at = Some(t);
            if self.fleet.add_placed(placed, p).is_ok() {
                self.admitted(id, t, slices);
                self.recorder.refresh_host(&self.fleet, host);
                self.check("an admission by hand");
                return Ok((id, true));
            }
        }
        self.fleet.add_pending(vm)?;
        self.log(t, EventKind::Queued { vm: id });
        Ok((id, false))
    }

    /// Runs an already ordered schedule now (the TUI plays a previewed plan step by step), with
    /// the same bookkeeping as a plan from the policy; `origin` names it in the log.
    pub(crate) fn apply_schedule(
        &mut self,
        schedule: &executor::Schedule,
        origin: &str,
    ) -> Result<(), executor::PlanError> {
        self.resync();
        let now = self.now;
        self.run_schedule(schedule, origin.to_string(), now)
    }

    fn fresh_id(&mut self, wanted: VmId) -> VmId {
        let id = if wanted != 0 && self.fleet.vm(wanted).is_none() && wanted >= self.next_id {
            wanted
        } else {
            self.next_id.max(self.fleet.next_vm_id())
        };
        self.next_id = id + 1;
        id
    }

    fn log(&mut self, t: f64, kind: EventKind) {
        if self.events.len() >= 2 * EVENT_LOG {
            self.events.drain(..EVENT_LOG);
        }
        self.events.push(Event { t, kind });
        self.events_total += 1;
    }

    fn check(&self, what: &str) {
        if self.check_invariants {
            if let Err(e) = self.fleet.check_invariants() {
                panic!("invariant broken after {what} at t = {}: {e}", self.now);
            }
        }
    }

    /// Rebuilds departures and cached metrics after changes made through [`Self::fleet_mut`].
    fn resync(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let now = self.now;
        let ids: Vec<VmId> = self
            .fleet
            .vms()
            .filter(|v| v.placement.is_some() && v.admitted_at.is_none())
            .map(|v| v.id)
            .collect();
        for id in ids {
            if let Some(v) = self.fleet.vm_meta_mut(id) {
                v.admitted_at = Some(now);
            }
        }
        self.departures = self
            .fleet
            .vms()
            .filter(|v| v.placement.is_some())
            .filter_map(|v| v.departure().map(|t| Reverse((Time(t), v.id))))
            .collect();
        self.recorder.refresh_all(&self.fleet);
        self.next_id = self.next_id.max(self.fleet.next_vm_id());
    }

    /// Processes every arrival and departure up to `t` in time order and moves the clock there.
    fn advance_to(&mut self, t: f64) {
        self.resync();
        loop {
            let dep = self
                .departures
                .peek()
                .map(|Reverse((d, _))| d.0)
                .filter(|&d| d <= t);
            let arr = self.workload.peek_time().filter(|&a| a <= t);
            match (dep, arr) {
                (Some(d), a) if a.is_none_or(|a| d <= a) => {
                    let Some(Reverse((_, id))) = self.departures.pop() else {
                        break;
                    };
                    self.depart(id, d);
                }
                (_, Some(a)) => {
                    let Some(req) = self.workload.pop() else {
                        break;
                    };
                    if self.arrivals {
                        let id = self.fresh_id(0);
                        self.arrive(req.to_vm(id), a.max(self.now));
                    }
                }
                _ => break,
            }
        }
        self.recorder.advance(t);
        self.now = self.now.max(t);
    }

    fn depart(&mut self, id: VmId, t: f64) {
        // Entries go stale when a VM is removed or re-admitted by hand.
        let Some(vm) = self.fleet.vm(id) else { return };
        if vm.placement.is_none() || vm.departure() != Some(t) {
            return;
        }
        // `Fleet::remove` hands the VM back without its placement.
        let host = vm.placement.as_ref().map(|p| p.host);
        let t = t.max(self.now);
        self.recorder.advance(t);
        self.now = t;
        let Ok(vm) = self.fleet.remove(id) else { return };
        if let Some(h) = host {
            self.recorder.refresh_host(&self.fleet, h);
        }
        self.check("a departure");
        self.policy.on_departure_from(&self.fleet, &vm, host, t);
        self.log(t, EventKind::Departure { vm: id, host });
    }

    fn arrive(&mut self, vm: Vm, t: f64) {
        self.recorder.advance(t);
        self.now = t;
        let id = vm.id;
        let slices = vm.memory_slices(self.fleet.catalog);
        self.recorder.on_request(t, slices);
        self.log(t, EventKind::Arrival { vm: id });
        // Admission checks ([`admission`]): a request over its tenant's quota, or
        // multi-GPU work on slices when `multi_gpu_whole_only` is on, is refused with its reason
        // before the policy sees it, and counts as a rejection.
        let check = admission::admission(&self.quotas, &self.settings, &self.fleet, &vm);
        if let Err(reason) = check {
            self.recorder.on_refuse(t);
            self.refused += 1;
            self.log(t, EventKind::Refused { vm: id, reason });
            return;
        }
        let placement = self.policy.on_arrival(&self.fleet, &vm, t);
        let mut vm = vm;
        if let Some(p) = placement {
            let host = p.host;
            vm.admitted_at = Some(t);
            match self.fleet.add_placed(vm.clone(), p) {
                Ok(_) => {
                    self.admitted(id, t, slices);
                    self.recorder.refresh_host(&self.fleet, host);
                    self.check("an admission");
                    return;
                }
                Err(e) => {
                    let origin = self.policy.name().to_string();
                    self.log(
                        t,
                        EventKind::Discarded {
                            origin,
                            reason: format!("placement of VM {id}: {e}"),
                        },
                    );
                    vm.admitted_at = None;
                }
            }
        }
        // Only MIG requests wait in the queue Q (OrigaMIG's admission calls decide MIG work); a
        // share or a gang that finds no room at its arrival is rejected under every policy.
        if vm.is_mig() && self.policy.queues_unplaced() && self.fleet.add_pending(vm).is_ok() {
            self.log(t, EventKind::Queued { vm: id });
        } else {
            self.recorder.on_reject(t);
            self.log(t, EventKind::Reject { vm: id });
        }
    }

    /// Bookkeeping of a VM that has just been placed: its departure, the metrics, the log.
    fn admitted(&mut self, id: VmId, t: f64, slices: u32) {
        let Some(vm) = self.fleet.vm(id) else { return };
        let (arrival, host, dep) = (
            vm.arrival,
            vm.placement.as_ref().map(|p| p.host).unwrap_or(0),
            vm.departure(),
        );
        if let Some(d) = dep {
            self.departures.push(Reverse((Time(d), id)));
        }
        self.recorder.on_admit(arrival, t, slices);
        self.log(
            t,
            EventKind::Admission {
                vm: id,
                host,
                wait_s: t - arrival,
            },
        );
    }

    /// End of a step at grid time `t`: the minute samples, then the policy's step.
    fn grid_point(&mut self, t: f64) {
        if self.calls_before_window.is_none() && t > self.window().0 {
            self.calls_before_window = Some(self.policy.call_log().times_s.len());
        }
        let minute = ((t - self.t0) / 60.0).floor() as u64;
        if minute > self.last_minute {
            self.last_minute = minute;
            self.recorder.sample_minute(t, &self.fleet);
        }
        let slot = ((t - self.t0) / STRANDED_EVERY_S).floor() as u64;
        if slot > self.last_stranded {
            self.last_stranded = slot;
            self.recorder.sample_stranded(t, &self.fleet);
        }
        for plan in self.policy.on_step_plans(&self.fleet, t) {
            let _ = self.apply(&plan, t);
        }
        // Pending VMs the policy's call decided not to admit leave the queue as rejections.
        for id in self.policy.take_rejected() {
            if let Ok(vm) = self.fleet.reject_pending(id) {
                self.recorder.on_reject(vm.arrival);
                self.log(t, EventKind::Reject { vm: id });
            }
        }
    }

    /// Orders a plan with [`executor::schedule_with`] and runs it with [`Self::run_schedule`].
    fn apply(&mut self, p: &Plan, t: f64) -> Result<(), executor::PlanError> {
        let origin = if p.origin.is_empty() {
            self.policy.name().to_string()
        } else {
            p.origin.clone()
        };
        let schedule = match executor::schedule_with(&self.fleet, p, self.settings.origamig.delta) {
            Ok(s) => s,
            Err(e) => {
                self.log(
                    t,
                    EventKind::Discarded {
                        origin,
                        reason: e.to_string(),
                    },
                );
                return Err(e);
            }
        };
        self.run_schedule(&schedule, origin, t)
    }

    /// Runs an ordered schedule step by step with [`executor::execute`], counting admissions,
    /// migrations and GB copied.
    fn run_schedule(
        &mut self,
        schedule: &executor::Schedule,
        origin: String,
        t: f64,
    ) -> Result<(), executor::PlanError> {
        if schedule.steps.is_empty() {
            return Ok(());
        }
        self.recorder.advance(t);
        let catalog = self.fleet.catalog;
        let gbps = self.settings.migration_gbps;
        let n = schedule.steps.len();
        for step in &schedule.steps {
            let one = executor::Schedule {
                steps: vec![step.clone()],
                parking_penalty: 0.0,
            };
            if let Err(e) = executor::execute(&mut self.fleet, &one) {
                // A schedule of this fleet never fails; keep the state consistent if it does.
                self.recorder.refresh_all(&self.fleet);
                self.log(
                    t,
                    EventKind::Discarded {
                        origin: origin.clone(),
                        reason: format!("step of VM {}: {e}", step.vm),
                    },
                );
                return Err(executor::PlanError::Invalid(step.vm, e));
            }
            self.check("an executor step");
            self.recorder.refresh_host(&self.fleet, step.to.host);
            match (step.kind, &step.from) {
                // A GPU that holds nothing changes mode: nobody starts, moves or restarts.
                (StepKind::SetMode(_), _) => {}
                (StepKind::Start, _) | (_, None) => {
                    if let Some(v) = self.fleet.vm_meta_mut(step.vm) {
                        v.admitted_at = Some(t);
                    }
                    let slices = self
                        .fleet
                        .vm(step.vm)
                        .map(|v| v.memory_slices(catalog))
                        .unwrap_or(0);
                    self.admitted(step.vm, t, slices);
                }
                (StepKind::RestartAtDeploy, Some(from)) => {
                    self.recorder.refresh_host(&self.fleet, from.host);
                    self.recorder.on_restart(t);
                    self.log(
                        t,
                        EventKind::Restart {
                            vm: step.vm,
                            from: from.host,
                            to: step.to.host,
                        },
                    );
                }
                (StepKind::Move | StepKind::Park, Some(from)) => {
                    self.recorder.refresh_host(&self.fleet, from.host);
                    let across = from.host != step.to.host;
                    let gb = executor::copied_gb(&self.fleet, step.vm, from.host, step.to.host);
                    let secs = executor::copy_seconds(gb, gbps);
                    self.recorder.on_migration(t, &origin, across, gb, secs);
                    self.log(
                        t,
                        EventKind::Migration {
                            vm: step.vm,
                            from: from.host,
                            to: step.to.host,
                            gb,
                        },
                    );
                }
            }
        }
        self.recorder.on_plan(t);
        self.log(t, EventKind::Plan { origin, steps: n });
        Ok(())
    }
}

/// Parses a duration such as `90`, `45s`, `15m`, `1h30m`, `2d`, `1.5h` into seconds (a bare
/// number is seconds).
pub(crate) fn parse_duration(text: &str) -> anyhow::Result<f64> {
    let s = text.trim();
    if s.is_empty() {
        anyhow::bail!("empty duration; write e.g. `90s`, `15m`, `1h30m` or `2d`");
    }
    if let Ok(x) = s.parse::<f64>() {
        if x.is_finite() && x >= 0.0 {
            return Ok(x);
        }
        anyhow::bail!("duration `{text}` must be a non-negative number of seconds");
    }
    let mut total = 0.0;
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = match c {
            'd' => 86400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => anyhow::bail!("duration `{text}`: unknown unit `{c}` (use d, h, m, s)"),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| anyhow::anyhow!("duration `{text}`: a number must come before `{c}`"))?;
        total += v * unit;
        num.clear();
    }
    if !num.is_empty() {
        anyhow::bail!("duration `{text}`: `{num}` has no unit (use d, h, m, s)");
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
