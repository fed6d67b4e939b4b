//! Placement policies (§6.3, §5). A policy is online and non-clairvoyant: it sees a request when
//! it arrives and may act on every simulation step, but it only proposes; the simulator or the
//! session applies what it proposes (a placement on arrival, a [`Plan`] on a step).

pub mod origamig;

use crate::fleet::{Fleet, Placement, Vm};
use crate::plan::Plan;
use crate::policy_kind::{PolicyKind, UnknownPolicy};
use crate::scenario::PolicySettings;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub mod cache;
pub mod ff;
pub mod mfi;
pub mod packing;
pub mod tc;

/// The policy called `name` (case-insensitive), configured from `settings`.
pub fn by_name(name: &str, settings: &PolicySettings) -> anyhow::Result<Box<dyn Policy>> {
    let kind = name
        .parse::<PolicyKind>()
        .map_err(|_| UnknownPolicy(name.to_ascii_lowercase()))?;
    build(kind, settings)
}

/// The policy `kind`, configured from `settings`.
pub fn build(kind: PolicyKind, settings: &PolicySettings) -> anyhow::Result<Box<dyn Policy>> {
    let (o, gbps) = (&settings.origamig, settings.migration_gbps);
    Ok(match kind {
        PolicyKind::Ff => Box::new(ff::FirstFit),
        PolicyKind::Mfi => Box::new(mfi::Mfi::new()),
        PolicyKind::Tc => Box::new(tc::Tc::new(&settings.tc, gbps)),
        PolicyKind::Origamig if o.partitions > 1 || o.partition_hosts > 0 => {
            Box::new(origamig::Partitioned::new(o).with_migration_gbps(gbps))
        }
        PolicyKind::Origamig => Box::new(origamig::Origamig::new(o).with_migration_gbps(gbps)),
        PolicyKind::Opt => Box::new(origamig::Origamig::opt(o).with_migration_gbps(gbps)),
        PolicyKind::Packing => {
            packing::Packing::validate(&settings.packing)?;
            Box::new(packing::Packing::new(&settings.packing, o))
        }
    })
}

/// A placement policy driven by the simulation clock.
pub trait Policy: Send {
    /// Short name (`ff`, `mfi`, `tc`, `origamig`, ...).
    fn name(&self) -> &str;

    /// A copy of the policy with its state (the TUI's undo snapshots whole sessions).
    fn clone_box(&self) -> Box<dyn Policy>;

    /// Where a newly arrived VM goes, or `None` when the policy cannot place it now.
    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, now_s: f64) -> Option<Placement>;

    /// Whether a VM that [`Policy::on_arrival`] cannot place waits in the pending queue
    /// (OrigaMIG) rather than being rejected (FF, MFI, TC).
    fn queues_unplaced(&self) -> bool {
        false
    }

    /// A VM left the fleet (it has already been removed).
    fn on_departure(&mut self, _fleet: &Fleet, _vm: &Vm, _now_s: f64) {}

    /// A VM left the fleet from `host`, where it ran (`Fleet::remove` hands the VM back without
    /// its placement). By default [`Policy::on_departure`].
    fn on_departure_from(&mut self, fleet: &Fleet, vm: &Vm, _host: Option<crate::fleet::HostId>, now_s: f64) {
        self.on_departure(fleet, vm, now_s)
    }

    /// Called once per simulation step after arrivals and departures; may propose a plan.
    fn on_step(&mut self, _fleet: &Fleet, _now_s: f64) -> Option<Plan> {
        None
    }

    /// The plans of one step, applied in order. Partitioned OrigaMIG returns one per partition
    /// whose call improved (each on its own hosts); by default the plan of [`Policy::on_step`].
    fn on_step_plans(&mut self, fleet: &Fleet, now_s: f64) -> Vec<Plan> {
        self.on_step(fleet, now_s).into_iter().collect()
    }

    /// Pending VMs that the policy's last [`Policy::on_step`] call rejected (an OrigaMIG call
    /// rejects the pending VMs of its neighborhood that its solution does not admit, §5.2). The
    /// caller takes them off the queue and counts them as rejected. Empty by default.
    fn take_rejected(&mut self) -> Vec<crate::fleet::VmId> {
        Vec::new()
    }

    /// Wall-clock seconds of each optimizer call made so far that ran the solver (a call whose
    /// neighborhood is empty is not counted); empty for policies without calls.
    fn call_times_s(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Trigger checks that built a neighborhood and found nothing to solve (an empty N̂): how
    /// many, and their wall-clock seconds in total. (0, 0.0) for policies without calls.
    fn trigger_checks(&self) -> (u64, f64) {
        (0, 0.0)
    }

    /// The VMs of the neighborhood (|N̂|, pending VMs included) of each call of
    /// [`Policy::call_times_s`], in the same order; empty for policies without calls.
    fn call_vms(&self) -> Vec<usize> {
        Vec::new()
    }

    /// Optimizer calls made so far that a limit ended before the optimum was proven: by the
    /// node budget (reproducible) or by the wall clock (not reproducible). Zero for policies
    /// without calls.
    fn limited_calls(&self) -> LimitedCalls {
        LimitedCalls::default()
    }

    /// The calls and trigger checks made so far by what fired them and the neighborhood they
    /// took ([`crate::metrics::CallTally`]); empty for policies without calls.
    fn call_tallies(&self) -> Vec<crate::metrics::CallTally> {
        Vec::new()
    }

    /// Optimizer calls made so far (for progress reports); by default those of
    /// [`Policy::call_times_s`].
    fn optimizer_calls(&self) -> usize {
        self.call_times_s().len()
    }

    /// A flag that, once set from any thread, stops the optimizer call the policy is running
    /// soon after: the call ends as at its time limit, with its best plan so far. `None` takes
    /// the flag away again. Policies that make no optimizer calls ignore it.
    fn set_cancel(&mut self, _cancel: Option<Arc<AtomicBool>>) {}
}

/// Optimizer calls that a limit ended before the optimum was proven (docs/optimizer.md, "Call
/// budget").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitedCalls {
    /// Ended by the node budget (`node_limit`): the same on any machine.
    pub node_limited: u64,
    /// Ended by the wall clock (`sim_time_limit_s`): where depends on the machine's speed and
    /// load, so the run's figures may differ elsewhere.
    pub wall_limited: u64,
}

impl LimitedCalls {
    /// Counts a call that ended with `status` (`None`: no solve ran).
    pub fn count(&mut self, status: Option<origamig::bilp::SolveStatus>) {
        use origamig::bilp::SolveStatus;
        match status {
            Some(SolveStatus::NodeLimit) => self.node_limited += 1,
            Some(SolveStatus::TimeLimit) => self.wall_limited += 1,
            _ => {}
        }
    }
}

/// The cancel flag a policy holds while the planner steps time ([`Policy::set_cancel`]). It is
/// no part of what the policy decides, so two policies compare equal whatever their flags.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(pub Option<Arc<AtomicBool>>);

impl CancelFlag {
    /// The flag for a solve: the one set, or a fresh one nobody sets.
    pub fn for_solve(&self) -> Arc<AtomicBool> {
        self.0.clone().unwrap_or_default()
    }
}

impl PartialEq for CancelFlag {
    fn eq(&self, _: &CancelFlag) -> bool {
        true
    }
}

impl Clone for Box<dyn Policy> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
