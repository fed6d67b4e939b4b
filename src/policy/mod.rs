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
mod calls;
pub use calls::{CallLog, LimitedCalls};
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

    /// What the policy's optimizer calls have done so far ([`CallLog`]); empty for policies
    /// without calls.
    fn call_log(&self) -> CallLog {
        CallLog::default()
    }

    /// A flag that, once set from any thread, stops the optimizer call the policy is running
    /// soon after: the call ends as at its time limit, with its best plan so far. `None` takes
    /// the flag away again. Policies that make no optimizer calls ignore it.
    fn set_cancel(&mut self, _cancel: Option<Arc<AtomicBool>>) {}
}

/// The cancel flag a policy holds while the planner steps time ([`Policy::set_cancel`]). It is
/// no part of what the policy decides, so two policies compare equal whatever their flags.
#[derive(Debug, Clone, Default)]
pub(crate) struct CancelFlag(pub Option<Arc<AtomicBool>>);

impl CancelFlag {
    /// The flag for a solve: the one set, or a fresh one nobody sets.
    pub(crate) fn for_solve(&self) -> Arc<AtomicBool> {
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
