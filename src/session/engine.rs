//! The session's clock and fleet: the simulator ([`sim::Simulator`]) itself, so that stepping
//! time in the session brings what a simulation run brings: arrivals from the scenario's
//! workload (switchable off, leaving only departures), departures at the end of lifetimes, and
//! whatever the arrival policy does on its steps (an OrigaMIG call, a TC compaction). The
//! simulator's event log becomes the session's log lines; its recorder gives energy and
//! acceptance since the session started. Changes by hand go through the simulator too, so its
//! bookkeeping stays whole.

use crate::executor::Schedule;
use crate::fleet::{Fleet, Placement, Vm, VmId};
use crate::policy::{self, Policy};
use crate::policy_kind::PolicyKind;
use crate::scenario::Scenario;
use crate::sim::{self, Simulator};
use anyhow::{anyhow, bail, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Origin of the plans the session runs by hand; the session logs them itself.
pub(crate) const HAND: &str = "planner";

/// Hours the session measures over: its metrics run from the opening time on (no warm-up).
const MEASURE_H: f64 = 24.0 * 365.0 * 100.0;

/// What happened, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Arrival,
    Admission,
    /// A request the policy could not place joined the pending queue.
    Queued,
    Departure,
    Migration,
    Removal,
    Rejection,
    Plan,
    Setting,
}

impl EventKind {
    pub fn label(self) -> &'static str {
        match self {
            EventKind::Arrival => "arrive",
            EventKind::Admission => "admit",
            EventKind::Queued => "queue",
            EventKind::Departure => "depart",
            EventKind::Migration => "migrate",
            EventKind::Removal => "remove",
            EventKind::Rejection => "reject",
            EventKind::Plan => "plan",
            EventKind::Setting => "set",
        }
    }
}

/// One event with its simulated time.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub t: f64,
    pub kind: EventKind,
    pub text: String,
}

/// The arrival policy with this name (one the session offers, [`PolicyKind::PLANNER`]; the
/// whole-fleet OPT is an on-demand call there, `O`), built by [`policy::build`].
pub(crate) fn policy_by_name(
    name: &str,
    settings: &crate::scenario::PolicySettings,
) -> Result<Box<dyn Policy>> {
    let name = name.trim().to_ascii_lowercase();
    let Some(kind) = PolicyKind::PLANNER.into_iter().find(|k| k.name() == name) else {
        bail!(
            "unknown arrival policy `{name}` (available: {})",
            PolicyKind::list(&PolicyKind::PLANNER)
        );
    };
    policy::build(kind, settings)
}

/// The simulator and how far its event log has been read.
#[derive(Clone)]
pub(crate) struct Engine {
    sim: Simulator,
    /// Events of the simulator already turned into log lines.
    seen: u64,
}

impl Engine {
    /// The scenario's fleet, workload and clock under its arrival policy (first fit when the
    /// scenario names none the session offers).
    pub fn new(scenario: &Scenario) -> Result<Engine> {
        let policy = policy::build(scenario.policy.arrival, &scenario.policy)
            .or_else(|_| policy::build(PolicyKind::Ff, &scenario.policy))?;
        let mut sc = scenario.clone();
        sc.workload.warmup_h = 0.0;
        sc.workload.measure_h = MEASURE_H;
        let sim = Simulator::new(&sc, policy)?;
        let seen = sim.events_total();
        Ok(Engine { sim, seen })
    }

    pub fn fleet(&self) -> &Fleet {
        self.sim.fleet()
    }

    /// The fleet for a change by hand (a move); the simulator rebuilds its state from it.
    pub(crate) fn fleet_mut(&mut self) -> &mut Fleet {
        self.sim.fleet_mut()
    }

    pub fn time(&self) -> f64 {
        self.sim.time()
    }

    pub fn now_date(&self) -> chrono::DateTime<chrono::Utc> {
        self.sim.now_date()
    }

    pub(crate) fn date_at(&self, t: f64) -> chrono::DateTime<chrono::Utc> {
        self.sim.date_at(t)
    }

    pub fn arrivals(&self) -> bool {
        self.sim.arrivals()
    }

    /// Switches arrivals from the workload on or off.
    pub fn set_arrivals(&mut self, on: bool) {
        self.sim.set_arrivals(on);
    }

    pub fn policy_name(&self) -> &str {
        self.sim.policy().name()
    }

    pub(crate) fn set_policy(&mut self, p: Box<dyn Policy>) {
        self.sim.set_policy(p);
    }

    /// Energy of the fleet since the session opened.
    pub fn energy_kwh(&self) -> f64 {
        self.sim.metrics().energy_mwh * 1000.0
    }

    /// Admitted share of the memory slices requested since the session opened (the scenario's
    /// pending requests included); 1 when nothing was requested.
    pub fn acceptance(&self) -> f64 {
        self.sim.metrics().acceptance_pct / 100.0
    }

    /// The time of the next arrival (when arrivals are on) or departure.
    pub fn next_event_time(&self) -> Option<f64> {
        self.sim.next_event_time()
    }

    /// Advances the clock to `t`: whole 10 s steps with the policy's step at each, then the
    /// events up to `t`. It stops at the end of a whole step (10 s grid point, the
    /// policy's step included) once `cancel` is set; the policy gets the flag too, so an
    /// optimizer call running then stops early, as at its time limit. `progress` hears the
    /// clock and the policy's optimizer calls so far after every step. Returns whether the clock
    /// reached `t`.
    pub(crate) fn step_until_cancellable(
        &mut self,
        t: f64,
        cancel: &Arc<AtomicBool>,
        progress: &mut dyn FnMut(f64, usize),
    ) -> Result<bool> {
        self.sim.policy_mut().set_cancel(Some(cancel.clone()));
        let reached = self.sim.step_until_while(t, &mut |sim| {
            progress(sim.time(), sim.policy().call_log().calls);
            !cancel.load(Ordering::SeqCst)
        });
        // The flag belongs to this step only: the session's state (and its undo copies) must
        // not carry it into the next one.
        self.sim.policy_mut().set_cancel(None);
        Ok(reached?)
    }

    /// Optimizer calls the arrival policy has made so far.
    pub(crate) fn optimizer_calls(&self) -> usize {
        self.sim.policy().call_log().calls
    }

    /// A new VM by hand: at `pin` when given, else where the policy puts it, else pending.
    /// Returns its id and whether it was placed.
    pub fn submit(&mut self, vm: Vm, pin: Option<Placement>) -> Result<(VmId, bool)> {
        self.sim.submit_by_hand(vm, pin)
    }

    pub(crate) fn remove_vm(&mut self, id: VmId) -> Result<Vm> {
        Ok(self.sim.fleet_mut().remove(id)?)
    }

    /// Runs (part of) a previewed plan's schedule now.
    pub(crate) fn apply_schedule(&mut self, schedule: &Schedule) -> Result<()> {
        self.sim
            .apply_schedule(schedule, HAND)
            .map_err(|e| anyhow!("the plan cannot run: {e}"))
    }

    /// The simulator's events since the last call, as log lines (oldest first). When more
    /// happened than its log keeps, a first line says how many are not shown.
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        let total = self.sim.events_total();
        let new = (total - self.seen) as usize;
        self.seen = total;
        if new == 0 {
            return Vec::new();
        }
        let events = self.sim.events();
        let shown = new.min(events.len());
        let fleet = self.sim.fleet();
        let mut out = Vec::with_capacity(shown + 1);
        if shown < new {
            let t = events[events.len() - shown].t;
            out.push(Event {
                t,
                kind: EventKind::Plan,
                text: format!("… {} earlier events are not shown", new - shown),
            });
        }
        let policy = self.sim.policy().name();
        for e in &events[events.len() - shown..] {
            if matches!(&e.kind, sim::EventKind::Plan { origin, .. } if origin == HAND) {
                continue;
            }
            out.push(describe(fleet, policy, e));
        }
        out
    }
}

fn host_name(fleet: &Fleet, h: usize) -> &str {
    fleet.hosts.get(h).map(|h| h.name.as_str()).unwrap_or("?")
}

/// `VM 7 (3g.20gb, 12c 48G)` while the VM is in the fleet, else `VM 7`.
fn vm_label(fleet: &Fleet, id: VmId) -> String {
    match fleet.vm(id) {
        Some(v) => format!("VM {id} ({})", super::shape(fleet, v)),
        None => format!("VM {id}"),
    }
}

/// A simulator event in words, looking VMs up in the fleet as it is now.
fn describe(fleet: &Fleet, policy: &str, e: &sim::Event) -> Event {
    use sim::EventKind as K;
    let (kind, text) = match &e.kind {
        K::Arrival { vm } => (EventKind::Arrival, format!("{} arrived", vm_label(fleet, *vm))),
        K::Admission { vm, host, wait_s } => {
            let wait = if *wait_s > 0.0 {
                format!(" after waiting {}", super::format_duration(*wait_s))
            } else {
                String::new()
            };
            (
                EventKind::Admission,
                format!("VM {vm} admitted on {}{wait}", host_name(fleet, *host)),
            )
        }
        K::Queued { vm } => (
            EventKind::Queued,
            format!("VM {vm} waits in the queue: {policy} found no place"),
        ),
        K::Refused { vm, reason } => (EventKind::Rejection, format!("VM {vm} refused: {reason}")),
        K::Reject { vm } => (
            EventKind::Rejection,
            format!("VM {vm} rejected: {policy} found no place"),
        ),
        K::Departure { vm, host } => (
            EventKind::Departure,
            match host {
                Some(h) => format!("VM {vm} departed from {}", host_name(fleet, *h)),
                None => format!("VM {vm} left the queue"),
            },
        ),
        K::Migration { vm, from, to, gb } => (
            EventKind::Migration,
            if from == to {
                format!("VM {vm} moved within {}", host_name(fleet, *to))
            } else {
                format!(
                    "VM {vm} migrated {} -> {} ({gb:.0} GB copied)",
                    host_name(fleet, *from),
                    host_name(fleet, *to)
                )
            },
        ),
        K::Restart { vm, from, to } => (
            EventKind::Migration,
            format!(
                "VM {vm} restarted at its deploy: {} -> {} (nothing copied)",
                host_name(fleet, *from),
                host_name(fleet, *to)
            ),
        ),
        K::Plan { origin, steps } => (EventKind::Plan, format!("{origin} plan applied: {steps} step(s)")),
        K::Discarded { origin, reason } => (EventKind::Plan, format!("{origin}: dropped ({reason})")),
    };
    Event { t: e.t, kind, text }
}
