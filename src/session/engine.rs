//! The session's clock and fleet. Departures follow VM lifetimes; after each departure the
//! pending queue is retried in order with the arrival policy. Arrivals from the workload come with
//! the simulator (`sim::Simulator`), which this module will hand over to when it lands.

use crate::fleet::{Fleet, Placement, Vm, VmId};
use crate::plan::Step;
use crate::policy::Policy;
use crate::scenario::{PolicySettings, Scenario};
use anyhow::{anyhow, bail, Result};

/// What happened, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Arrival,
    Admission,
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

/// First fit with the default GI placement (§6.3), the arrival policy of the demo.
#[derive(Clone)]
struct FirstFit;

impl Policy for FirstFit {
    fn name(&self) -> &str {
        "ff"
    }
    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) -> Option<Placement> {
        fleet.ff_placement(vm)
    }
}

/// Names of the arrival policies this build offers, in the order `policy next` cycles.
pub const POLICIES: &[&str] = &["ff", "origamig", "packing"];

/// The arrival policy with this name.
/// The session places arrivals with it; optimizer calls are made by hand (`o`), not on steps.
pub fn policy_by_name(name: &str, settings: &PolicySettings) -> Result<Box<dyn Policy>> {
    match name {
        "ff" => Ok(Box::new(FirstFit)),
        "origamig" => Ok(Box::new(crate::policy::origamig::Origamig::new(settings))),
        "packing" => Ok(Box::new(crate::ops::packing::Packing::new(settings))),
        other => bail!(
            "unknown or unavailable arrival policy `{other}` (available: {})",
            POLICIES.join(", ")
        ),
    }
}

/// Fleet, clock, policy and the running totals the gauges show.
#[derive(Clone)]
pub struct Engine {
    fleet: Fleet,
    now_s: f64,
    policy: Box<dyn Policy>,
    arrivals: bool,
    events: Vec<Event>,
    energy_j: f64,
    requested_slices: f64,
    admitted_slices: f64,
}

impl Engine {
    pub fn new(scenario: &Scenario) -> Result<Engine> {
        let policy = policy_by_name(&scenario.policy.arrival, &scenario.policy)
            .or_else(|_| policy_by_name("ff", &scenario.policy))?;
        let fleet = scenario.fleet.clone();
        let catalog = fleet.catalog;
        let placed: f64 = fleet
            .vms()
            .filter(|v| v.placement.is_some())
            .map(|v| v.memory_slices(catalog) as f64)
            .sum();
        let pending: f64 = fleet
            .pending()
            .iter()
            .filter_map(|&id| fleet.vm(id))
            .map(|v| v.memory_slices(catalog) as f64)
            .sum();
        Ok(Engine {
            fleet,
            now_s: scenario.now_s,
            policy,
            arrivals: false,
            events: Vec::new(),
            energy_j: 0.0,
            requested_slices: placed + pending,
            admitted_slices: placed,
        })
    }

    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    pub fn fleet_mut(&mut self) -> &mut Fleet {
        &mut self.fleet
    }

    pub fn time(&self) -> f64 {
        self.now_s
    }

    pub fn arrivals(&self) -> bool {
        self.arrivals
    }

    /// Switches arrivals from the workload on or off.
    pub fn set_arrivals(&mut self, on: bool) -> Result<()> {
        if on {
            bail!("arrivals from the workload need the simulator, which this build lacks");
        }
        self.arrivals = false;
        Ok(())
    }

    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    pub fn set_policy(&mut self, p: Box<dyn Policy>) {
        self.policy = p;
    }

    pub fn energy_kwh(&self) -> f64 {
        self.energy_j / 3.6e6
    }

    /// Admitted share of the requested memory slices (1 when nothing was requested).
    pub fn acceptance(&self) -> f64 {
        if self.requested_slices == 0.0 {
            1.0
        } else {
            self.admitted_slices / self.requested_slices
        }
    }

    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    fn event(&mut self, kind: EventKind, text: String) {
        self.events.push(Event {
            t: self.now_s,
            kind,
            text,
        });
    }

    /// The next departure time, if any VM has a finite lifetime.
    pub fn next_event_time(&self) -> Option<f64> {
        self.fleet
            .vms()
            .filter_map(|v| v.departure())
            .filter(|&t| t > self.now_s)
            .min_by(f64::total_cmp)
    }

    /// Advances the clock to `t`: departures in time order, each followed by a retry of the
    /// pending queue; energy integrated at the power between events.
    pub fn step_until(&mut self, t: f64) -> Result<()> {
        if t < self.now_s {
            bail!(
                "cannot step back in time (now {:.0} s, asked {:.0} s)",
                self.now_s,
                t
            );
        }
        loop {
            let next = self
                .fleet
                .vms()
                .filter_map(|v| v.departure().map(|d| (d.max(self.now_s), v.id)))
                .filter(|&(d, _)| d <= t)
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let Some((d, id)) = next else { break };
            self.energy_j += self.fleet.power_w() * (d - self.now_s);
            self.now_s = d;
            let vm = self.fleet.remove(id).map_err(|e| anyhow!("{e}"))?;
            let fleet = &self.fleet;
            self.policy.on_departure(fleet, &vm, d);
            let text = format!("VM {id} ({}) departed", super::shape(&self.fleet, &vm));
            self.event(EventKind::Departure, text);
            self.retry_pending();
        }
        self.energy_j += self.fleet.power_w() * (t - self.now_s);
        self.now_s = t;
        Ok(())
    }

    /// Offers every pending VM, oldest first, to the arrival policy.
    fn retry_pending(&mut self) {
        for id in self.fleet.pending().to_vec() {
            let Some(vm) = self.fleet.vm(id).cloned() else {
                continue;
            };
            if let Some(p) = self.policy.on_arrival(&self.fleet, &vm, self.now_s) {
                if self.fleet.place(id, p.clone()).is_ok() {
                    self.admitted(id);
                    let text = format!(
                        "VM {id} admitted from the queue to {}",
                        super::placement_label(&self.fleet, &p)
                    );
                    self.event(EventKind::Admission, text);
                }
            }
        }
    }

    fn admitted(&mut self, id: VmId) {
        let now = self.now_s;
        let catalog = self.fleet.catalog;
        if let Some(v) = self.fleet.vm_meta_mut(id) {
            v.admitted_at = Some(now);
            self.admitted_slices += v.memory_slices(catalog) as f64;
        }
    }

    /// A new VM: at `pin` when given, else where the policy puts it, else pending.
    /// Returns its id and whether it was placed.
    pub fn submit(&mut self, vm: Vm, pin: Option<Placement>) -> Result<(VmId, bool)> {
        self.requested_slices += vm.memory_slices(self.fleet.catalog) as f64;
        let placement = match pin {
            Some(p) => Some(p),
            None => {
                let mut probe = vm.clone();
                probe.id = self.fleet.next_vm_id();
                self.policy.on_arrival(&self.fleet, &probe, self.now_s)
            }
        };
        match placement {
            Some(p) => {
                let id = self.fleet.add_placed(vm, p).map_err(|e| anyhow!("{e}"))?;
                self.admitted(id);
                Ok((id, true))
            }
            None => {
                let id = self.fleet.add_pending(vm).map_err(|e| anyhow!("{e}"))?;
                Ok((id, false))
            }
        }
    }

    pub fn remove_vm(&mut self, id: VmId) -> Result<Vm> {
        let vm = self.fleet.remove(id).map_err(|e| anyhow!("{e}"))?;
        if vm.placement.is_none() {
            // A pending request withdrawn by hand no longer counts as requested.
            self.requested_slices -= vm.memory_slices(self.fleet.catalog) as f64;
        }
        Ok(vm)
    }

    /// Bookkeeping after a plan step ran on the fleet.
    pub fn note_plan_step(&mut self, step: &Step) {
        if step.kind == crate::plan::StepKind::Start {
            let catalog = self.fleet.catalog;
            if let Some(v) = self.fleet.vm(step.vm) {
                self.admitted_slices += v.memory_slices(catalog) as f64;
            }
        }
    }
}
