//! One OrigaMIG call (§5.2-§5.4): select the neighborhood, solve the restricted BILP, order the
//! solution with the executor and evaluate it (§5.3): Eq. (5) is recomputed for the returned and
//! the current placement from the placements themselves, the parking penalties of the executor's
//! plan are subtracted, and the plan is applied only if its value is strictly larger.
//!
//! [`propose`] makes the call on a fleet without changing it; [`Proposal::apply`] applies it.
//! `migplan solve`, the `origamig` and `opt` policies and the TUI preview share this code.

use super::bilp::{self, CallLimit, SolveControl, SolveStatus};
use super::neighborhood::{self, Neighborhood, Scope};
use super::objective::{self, Terms, Weights};
use super::triggers::{self, CallKind, Class};
use crate::executor::{self, PlanError, Schedule};
use crate::fleet::{Fleet, VmId};
use crate::plan::Plan;
use crate::policy_settings::OrigamigSettings;
use std::time::Instant;

/// Which call to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CallMode {
    /// Admission while the queue is not empty, else consolidation of the class with the largest
    /// gap (or of `--class`).
    #[default]
    Auto,
    /// An admission call (Algorithm 1, AdmissionCall).
    Admission,
    /// A consolidation call for one class (Algorithm 1, ConsolidationCall).
    Consolidation,
    /// The BILP over the whole fleet (OPT).
    Opt,
}

impl CallMode {
    pub fn name(&self) -> &'static str {
        match self {
            CallMode::Auto => "auto",
            CallMode::Admission => "admission",
            CallMode::Consolidation => "consolidation",
            CallMode::Opt => "opt",
        }
    }
}

impl std::fmt::Display for CallMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Active hosts, active GPUs and power of a fleet state.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Footprint {
    pub active_hosts: usize,
    pub active_gpus: usize,
    pub power_w: f64,
}

impl Footprint {
    pub fn of(fleet: &Fleet) -> Footprint {
        Footprint {
            active_hosts: fleet.active_hosts(),
            active_gpus: fleet.active_gpus(),
            power_w: fleet.power_w(),
        }
    }
}

/// What one call proposes, and how it was found.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The mode asked for.
    pub mode: CallMode,
    /// The call made, or `None` when there was nothing to call for.
    pub kind: Option<CallKind>,
    /// The neighborhood (M̂, the pending VMs of N̂, the sources of a consolidation).
    pub neighborhood: Neighborhood,
    /// Eq. (5) over M̂ for the current placement (pending VMs rejected) and for the solution.
    pub before: Terms,
    pub after: Terms,
    /// Parking penalty of the executor's plan (delta_i within a host, 2 delta_i across).
    pub parking_penalty: f64,
    /// `after.total - parking_penalty`: the value §5.3 compares with `before.total`.
    pub value_after: f64,
    /// Targets of the VMs that start or move.
    pub plan: Plan,
    /// The executor's ordered steps (empty when the plan cannot run).
    pub schedule: Schedule,
    /// Why the executor discarded the plan (no parking place), if it did.
    pub discarded: Option<String>,
    /// The plan runs and strictly improves Eq. (5): the call applies it.
    pub improves: bool,
    /// Pending VMs the call admits (empty unless `improves`).
    pub admitted: Vec<VmId>,
    /// Pending VMs the call rejects: those of N̂ it does not admit, and those no host could
    /// ever take (Algorithm 1, line 12).
    pub rejected: Vec<VmId>,
    /// Solver status, MIP gap, solver wall time (seconds); `None` when no solve ran.
    pub status: Option<SolveStatus>,
    pub gap: f64,
    pub solve_s: f64,
    /// The formulation the solver's model was built in (`None` when no solve ran).
    pub model: Option<super::bilp::Formulation>,
    /// The call was proven to change nothing by [`bilp::no_improving_plan`] before any model was
    /// built (`status` is then `Optimal`, `model` `None`): a simulated call without pending VMs.
    pub bounded: bool,
    /// Wall time of the whole call: selection, solve, executor, evaluation.
    pub call_s: f64,
    /// The fleet now and after the plan (the proposed state, applied or not).
    pub footprint_before: Footprint,
    pub footprint_after: Footprint,
}

impl Proposal {
    /// Applies the call to the fleet it was made on: runs the steps when the plan improves,
    /// then rejects the pending VMs the call rejects. Returns the steps run.
    pub fn apply(&self, fleet: &mut Fleet) -> anyhow::Result<usize> {
        let mut n = 0;
        if self.improves {
            executor::execute(fleet, &self.schedule)
                .map_err(|e| anyhow::anyhow!("the plan no longer fits the fleet: {e}"))?;
            n = self.schedule.steps.len();
        }
        for &id in &self.rejected {
            if fleet.pending().contains(&id) {
                fleet.reject_pending(id)?;
            }
        }
        Ok(n)
    }

    /// Whether the call changes the fleet's placements.
    pub fn changes_placements(&self) -> bool {
        self.improves && !self.schedule.steps.is_empty()
    }
}

/// The call `mode` asks for on this fleet: admission while Q is not empty (auto), else
/// consolidation of `class` or of the class with the largest gap Γh (ties: class order).
pub(crate) fn call_kind(fleet: &Fleet, mode: CallMode, class: Option<&Class>) -> CallKind {
    let consolidation = || {
        let c = class.cloned().unwrap_or_else(|| {
            let mut best: Option<(i64, Class)> = None;
            for c in Class::all(fleet) {
                let g = triggers::gap(fleet, &c);
                if best.as_ref().is_none_or(|(bg, _)| g > *bg) {
                    best = Some((g, c));
                }
            }
            best.map(|(_, c)| c).unwrap_or(Class::NoGpu)
        });
        CallKind::Consolidation(c)
    };
    match mode {
        CallMode::Auto if !fleet.pending().is_empty() => CallKind::Admission,
        CallMode::Auto | CallMode::Consolidation => consolidation(),
        CallMode::Admission => CallKind::Admission,
        CallMode::Opt => CallKind::Whole,
    }
}

/// What bounds a simulated call of a policy that holds `cancel` ([`crate::policy::Policy::set_cancel`]):
/// the planner's play, which sets the flag, keeps the wall-clock safety net
/// ([`CallLimit::Interactive`]); a batch run (`simulate`, `sweep`, `experiment`) has the work
/// budget only ([`CallLimit::Budget`]), so no outcome of its calls depends on the wall clock.
pub(crate) fn sim_limit(cancel: &crate::policy::CancelFlag) -> CallLimit {
    if cancel.0.is_some() {
        CallLimit::Interactive
    } else {
        CallLimit::Budget
    }
}

/// One call in `mode` on the fleet's current state, as `migplan solve` makes it: a user waits,
/// so `time_limit_s` of wall clock bounds it ([`CallLimit::Clock`]); the fleet is not changed.
pub fn propose(
    fleet: &Fleet,
    mode: CallMode,
    class: Option<&Class>,
    settings: &OrigamigSettings,
) -> anyhow::Result<Proposal> {
    let control = SolveControl {
        limit: CallLimit::Clock,
        ..SolveControl::default()
    };
    propose_with(fleet, mode, class, settings, &control)
}

/// [`propose`] with the solver's progress reports and cancel flag.
pub fn propose_with(
    fleet: &Fleet,
    mode: CallMode,
    class: Option<&Class>,
    settings: &OrigamigSettings,
    control: &SolveControl,
) -> anyhow::Result<Proposal> {
    let kind = call_kind(fleet, mode, class);
    call(fleet, mode, kind, settings, control)
}

/// One call of a given kind (the policies choose the kind with their triggers).
pub fn call(
    fleet: &Fleet,
    mode: CallMode,
    kind: CallKind,
    settings: &OrigamigSettings,
    control: &SolveControl,
) -> anyhow::Result<Proposal> {
    let all = super::hostset::HostSet::all(fleet.hosts.len());
    let scope = Scope {
        hosts: &all,
        pending: fleet.pending(),
    };
    call_in(fleet, mode, kind, settings, control, scope)
}

/// [`call`] with its neighborhood selected within a scope (a partition's hosts and the pending
/// VMs it decides).
pub(crate) fn call_in(
    fleet: &Fleet,
    mode: CallMode,
    kind: CallKind,
    settings: &OrigamigSettings,
    control: &SolveControl,
    scope: Scope,
) -> anyhow::Result<Proposal> {
    let t0 = Instant::now();
    let nb = neighborhood::select_in(fleet, &kind, settings, scope);
    call_on(fleet, mode, kind, settings, control, nb, t0)
}

/// [`call`] on a neighborhood already selected (at `t0`, from which [`Proposal::call_s`]
/// counts).
pub(crate) fn call_on(
    fleet: &Fleet,
    mode: CallMode,
    kind: CallKind,
    settings: &OrigamigSettings,
    control: &SolveControl,
    nb: Neighborhood,
    t0: Instant,
) -> anyhow::Result<Proposal> {
    let w = Weights::from_settings(settings);
    let footprint_before = Footprint::of(fleet);
    let before = objective::evaluate(fleet, fleet, &nb.hosts, &w);
    let mut p = Proposal {
        mode,
        kind: Some(kind),
        before,
        after: before,
        parking_penalty: 0.0,
        value_after: before.total,
        plan: Plan {
            targets: Default::default(),
            origin: format!("origamig {}", nb.kind),
            ..Default::default()
        },
        schedule: Schedule::default(),
        discarded: None,
        improves: false,
        admitted: Vec::new(),
        rejected: nb.rejected.clone(),
        status: None,
        gap: 0.0,
        solve_s: 0.0,
        model: None,
        bounded: false,
        call_s: 0.0,
        footprint_before,
        footprint_after: footprint_before,
        neighborhood: nb,
    };
    if p.neighborhood.is_empty() {
        p.call_s = t0.elapsed().as_secs_f64();
        return Ok(p);
    }
    let nb = &p.neighborhood;
    if nb.pending.is_empty()
        && control.limit != CallLimit::Clock
        && bilp::no_improving_plan(fleet, &nb.hosts, &w)
    {
        // No placement of the neighborhood can be applied (§5.3): the solver would return the
        // current placement or one worth no more. The call changes nothing, proven without a model.
        p.status = Some(SolveStatus::Optimal);
        p.bounded = true;
        p.call_s = t0.elapsed().as_secs_f64();
        return Ok(p);
    }
    let out = bilp::solve_with(fleet, &nb.hosts, &nb.pending, settings, control)?;
    p.status = Some(out.status);
    p.gap = out.gap;
    p.solve_s = out.solve_s;
    p.model = Some(out.formulation);
    // The VMs that start or move.
    for (&id, to) in &out.targets {
        let cur = fleet.vm(id).and_then(|v| v.placement.as_ref());
        if cur != Some(to) {
            p.plan.targets.insert(id, to.clone());
        }
    }
    // The proposed state, built from the placements (checked by the fleet's rules).
    let mut target = fleet
        .with_placements(&p.plan.targets)
        .map_err(|(id, e)| anyhow::anyhow!("the solver's placement of VM {id} is invalid: {e}"))?;
    // §5.3: Eq. (5) of the returned placement, recomputed from it.
    p.after = objective::evaluate(fleet, &target, &nb.hosts, &w);
    match executor::schedule_priced(fleet, &p.plan, &|vm| w.delta_of(vm, fleet.catalog)) {
        Ok(s) => {
            p.parking_penalty = s.parking_penalty;
            p.schedule = s;
        }
        Err(e @ PlanError::Stuck { .. }) => p.discarded = Some(e.to_string()),
        Err(e) => anyhow::bail!("the solver's plan is invalid: {e}"),
    }
    p.value_after = p.after.total - p.parking_penalty;
    // Strictly better (a tolerance far below any weight guards against float noise).
    p.improves = p.discarded.is_none() && !p.plan.targets.is_empty() && p.value_after > p.before.total + 1e-6;
    let admitted: Vec<VmId> = nb
        .pending
        .iter()
        .copied()
        .filter(|id| p.plan.targets.contains_key(id))
        .collect();
    if p.improves {
        p.admitted = admitted;
    }
    for &id in &nb.pending {
        if !p.admitted.contains(&id) {
            p.rejected.push(id);
        }
    }
    for &id in &p.rejected {
        if target.pending().contains(&id) {
            let _ = target.reject_pending(id);
        }
    }
    p.footprint_after = Footprint::of(&target);
    p.call_s = t0.elapsed().as_secs_f64();
    Ok(p)
}
