//! The executor (§5.4): [`schedule_with`] orders a [`Plan`] into [`Step`]s that each use only free
//! resources, and [`execute`] applies the steps to a fleet.

use crate::fleet::{Fleet, FleetError, GiSlot, GpuMode, HostId, Placement, VmId};
use crate::mig::{self, Occupancy};
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};

/// What a step does. In JSON a step kind is its [`StepKind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// Create the GIs of a pending VM and start it.
    Start,
    /// Create the new GIs, live-migrate the VM, destroy the old GIs.
    Move,
    /// A temporary move out of the way, to unblock other steps (§5.4).
    Park,
    /// No live migration: the VM is stopped and started on its target at its next deploy
    /// (nothing is copied; a restart, not a migration). Its own old resources are free when it
    /// starts again (docs/operations.md, "Defragmentation across modes").
    RestartAtDeploy,
    /// Switch a GPU that holds nothing to this mode (the GPU is the step's `to.gis[0].gpu` on
    /// `to.host`; `from` names the same GPU). A drain of nothing: the steps that empty the GPU
    /// run before it, the steps that need the new mode after it. Turning MIG on or off needs a
    /// GPU reset on some models ([`switch_needs_reset`]).
    SetMode(GpuMode),
}

impl serde::Serialize for StepKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl StepKind {
    /// The name in JSON and in the plan preview: `start`, `move`, `park`, `restart_at_deploy`,
    /// `set_mode`.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Start => "start",
            StepKind::Move => "move",
            StepKind::Park => "park",
            StepKind::RestartAtDeploy => "restart_at_deploy",
            StepKind::SetMode(_) => "set_mode",
        }
    }

    /// Whether the step switches a GPU's mode.
    pub fn is_mode_switch(self) -> bool {
        matches!(self, StepKind::SetMode(_))
    }

    /// Whether the step is a live migration (a move or a parking move) that copies the VM.
    pub(crate) fn is_migration(self) -> bool {
        matches!(self, StepKind::Move | StepKind::Park)
    }
}

/// One executable step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The VM that moves or starts; for a [`StepKind::SetMode`] step, the VM of the plan that the
    /// switch serves (the lowest id whose target uses the GPU; 0 when none does).
    pub vm: VmId,
    pub kind: StepKind,
    pub from: Option<Placement>,
    pub to: Placement,
}

/// An ordered list of steps realizing a plan, and the penalty its parking moves cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schedule {
    pub steps: Vec<Step>,
    /// Eq. 5 value the parking moves cost: delta per park within a host, 2 delta across (§5.3).
    pub parking_penalty: f64,
}

impl Schedule {
    /// Parking moves within the VM's host.
    pub fn parks_within(&self) -> usize {
        self.parks(false)
    }

    /// Parking moves to another host.
    pub fn parks_across(&self) -> usize {
        self.parks(true)
    }

    /// Mode switches of GPUs that hold nothing.
    pub fn mode_switches(&self) -> usize {
        self.steps.iter().filter(|s| s.kind.is_mode_switch()).count()
    }

    /// Restarts at the next deploy.
    pub fn restarts(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.kind == StepKind::RestartAtDeploy)
            .count()
    }

    /// Live migrations: moves and parking moves.
    pub fn migrations(&self) -> usize {
        self.steps.iter().filter(|s| s.kind.is_migration()).count()
    }

    /// GB the live migrations copy ([`copied_gb`]); starts and restarts copy nothing.
    pub fn copied_gb(&self, fleet: &Fleet) -> f64 {
        self.steps
            .iter()
            .filter(|s| s.kind.is_migration())
            .filter_map(|s| Some(copied_gb(fleet, s.vm, s.from.as_ref()?.host, s.to.host)))
            .sum()
    }

    /// Seconds the executor takes to run the steps one after another (§5.4): each move or park
    /// lasts [`copy_seconds`] of what it copies ([`copied_gb`]); a start or a restart at the next
    /// deploy copies nothing.
    pub fn duration_s(&self, fleet: &Fleet, gbps: f64) -> f64 {
        self.steps
            .iter()
            .filter(|s| s.kind.is_migration())
            .filter_map(|s| {
                Some(copy_seconds(
                    copied_gb(fleet, s.vm, s.from.as_ref()?.host, s.to.host),
                    gbps,
                ))
            })
            .sum()
    }

    fn parks(&self, across: bool) -> usize {
        self.steps
            .iter()
            .filter(|s| s.kind == StepKind::Park)
            .filter(|s| s.from.as_ref().is_some_and(|f| (f.host != s.to.host) == across))
            .count()
    }
}

/// GB a live migration of VM `vm` from host `from` to host `to` copies (§6.6): the VM's RAM and
/// the memory of its GIs between hosts, nothing within a host (0 for a VM not in the fleet).
pub fn copied_gb(fleet: &Fleet, vm: VmId, from: HostId, to: HostId) -> f64 {
    match fleet.vm(vm) {
        Some(v) if from != to => v.migration_gb(fleet.catalog),
        _ => 0.0,
    }
}

/// Seconds to copy `gb` gigabytes at `gbps` Gbit/s (§6.6: half the 25 Gbit/s of a host, 12.5).
pub(crate) fn copy_seconds(gb: f64, gbps: f64) -> f64 {
    gb * 8.0 / gbps
}

/// Whether switching a GPU of `model` from mode `from` to `to` needs a GPU reset: turning MIG on
/// or off on a model that needs one for it (A100, A30: `mig_enable_reset` in `assets/gpus.toml`;
/// not the H100 and later).
pub(crate) fn switch_needs_reset(fleet: &Fleet, model: usize, from: GpuMode, to: GpuMode) -> bool {
    (from == GpuMode::Mig) != (to == GpuMode::Mig) && fleet.catalog.model(model).mig_enable_reset
}

/// The words of a [`StepKind::SetMode`] step, `fleet` being the fleet before the plan: `switch
/// GPU mig-0/1 mig -> whole (holds nothing; h100-80gb: no GPU reset)`, or `... needs a GPU
/// reset` on an A100 or A30. `None` for another kind of step.
pub fn set_mode_text(fleet: &Fleet, step: &Step) -> Option<String> {
    let StepKind::SetMode(to) = step.kind else {
        return None;
    };
    let (h, k) = step_gpu(step)?;
    let gpu = fleet.hosts.get(h)?.gpus.get(k)?;
    let model = &fleet.catalog.model(gpu.model).name;
    let reset = if switch_needs_reset(fleet, gpu.model, gpu.mode, to) {
        format!("{model}: needs a GPU reset")
    } else {
        format!("{model}: no GPU reset")
    };
    Some(format!(
        "switch GPU {} {} -> {to} (holds nothing; {reset})",
        fleet.gpu_label(h, k),
        gpu.mode
    ))
}

/// The GPU (host, index) a [`StepKind::SetMode`] step switches.
pub fn step_gpu(step: &Step) -> Option<(HostId, usize)> {
    step.to.gis.first().map(|g| (step.to.host, g.gpu))
}

/// Why a plan cannot be executed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A VM of the plan is unknown, or its target is invalid on its own.
    #[error("VM {0}: {1}")]
    Invalid(VmId, FleetError),
    /// No order of steps (with parking) reaches the target; nothing was changed.
    #[error("no executable order for the steps of VMs {remaining:?} (no parking place)")]
    Stuck { remaining: Vec<VmId> },
    /// A mode switch of the plan is refused in the target state (an unknown GPU, a GPU that
    /// still holds a VM the plan does not move away, MIG on a model without MIG).
    #[error("mode switch of GPU {gpu} to {mode}: {error}")]
    Mode {
        gpu: String,
        mode: GpuMode,
        error: FleetError,
    },
}

/// The executor of §5.4: orders a plan (a target state) into steps that each use only free
/// resources, on a copy of the fleet (the fleet itself is untouched).
///
/// - One step per VM whose target differs from its placement: create the new GIs, start or
///   live-migrate the VM, destroy the old GIs. A step is *ready* ([`is_ready`]) when its target
///   slices are free, counting the VM's own old GIs as taken (they stay until the migration
///   completes), and, for a start or a move to another host, the destination has free cores and
///   RAM.
/// - Ready steps run one at a time, always the ready step of the lowest VM id (deterministic).
/// - When no step is ready the remaining steps block each other in a cycle (possibly of one
///   step). The executor parks the VM whose removal makes the most steps ready (ties: the VM
///   holding more slices that remaining steps target, then the lowest id), on free slices of its
///   class and free cores and RAM that no remaining step needs: its own host first, then the
///   other hosts of the plan, then other active hosts, then switched-off hosts, each ascending.
///   Each VM parks at most once. If that VM has no parking place the next VM in the same ranking
///   is tried; if none has one, the plan is discarded ([`PlanError::Stuck`]) before any step ran.
/// - A parking move costs `delta` within a host and `2 delta` across hosts (§5.3), summed in
///   [`Schedule::parking_penalty`].
/// - A running VM listed in [`Plan::restarts`] becomes a [`StepKind::RestartAtDeploy`] step: it
///   is stopped before it starts on its target, so its own old resources count as free, and it is
///   never parked (parking is a live migration). Soft shares, whole-GPU holders and gangs move
///   when the fleet would take them now ([`Fleet::validate_placement`]) and are never parked
///   either.
/// - A mode switch of [`Plan::modes`] becomes a [`StepKind::SetMode`] step as soon as its GPU
///   holds nothing: before every other step when it is empty already, else right after the step
///   that empties it; the steps whose targets need the new mode become ready only after it.
///
/// The plan is first checked as a whole: the target state (every VM of the plan at its target,
/// every switched GPU in its new mode, every other VM where it is) must satisfy the fleet
/// invariants ([`Fleet::check_invariants`]), else [`PlanError::Invalid`] names the first VM whose
/// target does not fit, or [`PlanError::Mode`] the switch the fleet refuses.
pub fn schedule_with(fleet: &Fleet, plan: &Plan, delta: f64) -> Result<Schedule, PlanError> {
    schedule_priced(fleet, plan, &|_| delta)
}

/// [`schedule_with`] with a parking move of VM `v` priced `delta_of(v)` within a host and twice
/// that across hosts (the optimizer's per-VM δ_i, `objective::Weights`).
pub fn schedule_priced(
    fleet: &Fleet,
    plan: &Plan,
    delta_of: &dyn Fn(&crate::fleet::Vm) -> f64,
) -> Result<Schedule, PlanError> {
    let remaining = changed_targets(fleet, plan)?;
    let mut modes = changed_modes(fleet, plan);
    check_target_state(fleet, &remaining, &modes)?;
    let mut remaining = remaining;
    let mut sim = fleet.clone();
    let mut parked: BTreeSet<VmId> = BTreeSet::new();
    let mut out = Schedule::default();
    while !remaining.is_empty() || !modes.is_empty() {
        let empty: Vec<((HostId, usize), GpuMode)> = modes
            .iter()
            .filter(|(&(h, k), _)| !sim.hosts[h].gpus[k].is_used())
            .map(|(&g, &m)| (g, m))
            .collect();
        for ((h, k), mode) in empty {
            let r = sim.set_gpu_mode(h, k, mode);
            debug_assert!(r.is_ok(), "an empty GPU must switch: {r:?}");
            let at = Placement {
                host: h,
                gis: vec![GiSlot { gpu: k, start: 0 }],
            };
            let vm = plan
                .targets
                .iter()
                .find(|(_, to)| to.host == h && to.gis.iter().any(|g| g.gpu == k))
                .map_or(0, |(&id, _)| id);
            out.steps.push(Step {
                vm,
                kind: StepKind::SetMode(mode),
                from: Some(at.clone()),
                to: at,
            });
            modes.remove(&(h, k));
        }
        if remaining.is_empty() {
            if modes.is_empty() {
                break;
            }
            // A switched GPU that never empties: the target-state check rules this out.
            return Err(PlanError::Stuck {
                remaining: Vec::new(),
            });
        }
        let next = remaining
            .iter()
            .find(|(&id, to)| step_ready(&sim, plan, id, to))
            .map(|(&id, to)| (id, to.clone()));
        if let Some((id, to)) = next {
            let from = sim.vm(id).and_then(|v| v.placement.clone());
            let kind = if from.is_none() {
                StepKind::Start
            } else if plan.restarts_at_deploy(id) {
                StepKind::RestartAtDeploy
            } else {
                StepKind::Move
            };
            apply(&mut sim, id, from.is_none(), &to);
            out.steps.push(Step {
                vm: id,
                kind,
                from,
                to,
            });
            remaining.remove(&id);
            continue;
        }
        let Some((id, to)) = find_parking(&sim, plan, &remaining, &parked) else {
            return Err(PlanError::Stuck {
                remaining: remaining.keys().copied().collect(),
            });
        };
        let from = sim.vm(id).and_then(|v| v.placement.clone());
        let across = from.as_ref().is_some_and(|f| f.host != to.host);
        let delta = sim.vm(id).map_or(0.0, delta_of);
        apply(&mut sim, id, false, &to);
        parked.insert(id);
        out.parking_penalty += if across { 2.0 * delta } else { delta };
        out.steps.push(Step {
            vm: id,
            kind: StepKind::Park,
            from,
            to,
        });
    }
    Ok(out)
}

/// The targets that differ from the current placements, checked to name known VMs.
fn changed_targets(fleet: &Fleet, plan: &Plan) -> Result<BTreeMap<VmId, Placement>, PlanError> {
    let mut remaining = BTreeMap::new();
    for (&id, to) in &plan.targets {
        let vm = fleet
            .vm(id)
            .ok_or(PlanError::Invalid(id, FleetError::UnknownVm(id)))?;
        if vm.placement.as_ref() != Some(to) {
            remaining.insert(id, to.clone());
        }
    }
    Ok(remaining)
}

/// The mode switches of the plan whose GPU is in another mode now (unknown GPUs are kept: the
/// target-state check names them).
fn changed_modes(fleet: &Fleet, plan: &Plan) -> BTreeMap<(HostId, usize), GpuMode> {
    plan.modes
        .iter()
        .filter(|(&(h, k), &m)| {
            fleet
                .hosts
                .get(h)
                .and_then(|host| host.gpus.get(k))
                .is_none_or(|g| g.mode != m)
        })
        .map(|(&g, &m)| (g, m))
        .collect()
}

/// Builds the target state on a copy and checks that every switch and every target fits in it:
/// the VMs that move leave, the GPUs switch (each must then hold nothing), the VMs take their
/// targets.
fn check_target_state(
    fleet: &Fleet,
    remaining: &BTreeMap<VmId, Placement>,
    modes: &BTreeMap<(HostId, usize), GpuMode>,
) -> Result<(), PlanError> {
    if modes.is_empty() {
        return fleet
            .with_placements(remaining)
            .map(drop)
            .map_err(|(id, e)| PlanError::Invalid(id, e));
    }
    let mut f = fleet.clone();
    for &id in remaining.keys() {
        if f.vm(id).is_some_and(|v| v.placement.is_some()) {
            f.unplace(id).map_err(|e| PlanError::Invalid(id, e))?;
        }
    }
    for (&(h, k), &mode) in modes {
        f.set_gpu_mode(h, k, mode).map_err(|error| PlanError::Mode {
            gpu: match f.hosts.get(h) {
                Some(host) => format!("{}/{k}", host.name),
                None => format!("{h}/{k}"),
            },
            mode,
            error,
        })?;
    }
    for (&id, to) in remaining {
        f.place(id, to.clone()).map_err(|e| PlanError::Invalid(id, e))?;
    }
    Ok(())
}

/// Applies one checked step to the simulated fleet.
fn apply(sim: &mut Fleet, id: VmId, start: bool, to: &Placement) {
    let r = if start {
        sim.place(id, to.clone())
    } else {
        sim.move_vm(id, to.clone())
    };
    debug_assert!(r.is_ok(), "a ready step must apply: {r:?}");
    debug_assert_eq!(sim.check_invariants(), Ok(()));
}

/// Whether the step of VM `id` to `to` can run now: a restart at the next deploy or a VM of
/// another shape than MIG when the fleet would take the placement with the VM's own resources
/// free (a restart stops the VM first; a share or a holder moves to another GPU), else
/// [`is_ready`].
fn step_ready(fleet: &Fleet, plan: &Plan, id: VmId, to: &Placement) -> bool {
    let Some(vm) = fleet.vm(id) else { return false };
    if vm.placement.is_some() && (plan.restarts_at_deploy(id) || !vm.is_mig()) {
        return fleet.validate_placement(vm, to, true).is_ok();
    }
    if !vm.is_mig() {
        return fleet.validate_placement(vm, to, false).is_ok();
    }
    is_ready_ignoring(fleet, id, to, None)
}

/// Whether the step taking VM `id` to `to` can run now (§5.4): every target slice is free, the
/// VM's own current GIs counting as taken (a live migration holds both ends), instance limits
/// hold, and, for a start or a move to another host, the destination has the VM's cores and RAM
/// free.
pub fn is_ready(fleet: &Fleet, id: VmId, to: &Placement) -> bool {
    is_ready_ignoring(fleet, id, to, None)
}

/// [`is_ready`] as if VM `ignore` had left the fleet.
fn is_ready_ignoring(fleet: &Fleet, id: VmId, to: &Placement, ignore: Option<VmId>) -> bool {
    let Some(vm) = fleet.vm(id) else { return false };
    let Some(host) = fleet.hosts.get(to.host) else {
        return false;
    };
    if to.gis.len() != vm.gis.len() {
        return false;
    }
    let ignored = ignore.and_then(|i| fleet.vm(i)).filter(|v| v.placement.is_some());
    let crosses = vm.placement.as_ref().is_none_or(|p| p.host != to.host);
    if crosses {
        let (mut cores, mut ram) = (host.free_cores(), host.free_ram());
        if let Some(ig) = ignored {
            if ig.placement.as_ref().is_some_and(|p| p.host == to.host) {
                cores += ig.cores;
                ram += ig.ram_gb;
            }
        }
        if cores < vm.cores || ram < vm.ram_gb {
            return false;
        }
    }
    let catalog = fleet.catalog;
    let mut occs: BTreeMap<usize, Occupancy> = BTreeMap::new();
    for (req, slot) in vm.gis.iter().zip(&to.gis) {
        let Some(gpu) = host.gpus.get(slot.gpu) else {
            return false;
        };
        if gpu.mode != crate::fleet::GpuMode::Mig || !catalog.same_class(req.model, gpu.model) {
            return false;
        }
        let model = catalog.model(gpu.model);
        let occ = occs.entry(slot.gpu).or_insert_with(|| {
            let mut o = gpu.occ;
            if let Some(ig) = ignored {
                for g in gpu.gis.iter().filter(|g| g.vm == ig.id) {
                    o.remove(model, g.profile, g.start);
                }
            }
            o
        });
        if !occ.can_place(model, req.profile, slot.start) {
            return false;
        }
        occ.add(model, req.profile, slot.start);
    }
    true
}

/// Slices that remaining steps target, per (host, GPU).
fn reserved_slices(fleet: &Fleet, remaining: &BTreeMap<VmId, Placement>) -> BTreeMap<(HostId, usize), u32> {
    let mut reserved: BTreeMap<(HostId, usize), u32> = BTreeMap::new();
    for (&id, to) in remaining {
        let Some(vm) = fleet.vm(id) else { continue };
        for (req, slot) in vm.gis.iter().zip(&to.gis) {
            let prof = &fleet.catalog.model(req.model).profiles[req.profile];
            *reserved.entry((to.host, slot.gpu)).or_default() |= prof.mask_at(slot.start);
        }
    }
    reserved
}

/// Picks the VM to park and its parking place, or `None` when no blocking VM can park.
fn find_parking(
    sim: &Fleet,
    plan: &Plan,
    remaining: &BTreeMap<VmId, Placement>,
    parked: &BTreeSet<VmId>,
) -> Option<(VmId, Placement)> {
    let reserved = reserved_slices(sim, remaining);
    // Cores and RAM that remaining starts and moves across hosts need on each host.
    let mut incoming: BTreeMap<HostId, (u32, u32)> = BTreeMap::new();
    for (&id, to) in remaining {
        let Some(vm) = sim.vm(id) else { continue };
        if vm.placement.as_ref().is_none_or(|p| p.host != to.host) {
            let e = incoming.entry(to.host).or_default();
            e.0 += vm.cores;
            e.1 += vm.ram_gb;
        }
    }
    // Rank the candidates: steps made ready by their removal, then targeted slices they hold.
    let mut ranked: Vec<(usize, u32, VmId)> = Vec::new();
    for &c in remaining.keys() {
        if parked.contains(&c) {
            continue;
        }
        let Some(vm) = sim.vm(c) else { continue };
        let Some(p) = &vm.placement else { continue };
        // Only a live migration of MIG instances parks.
        if !vm.is_mig() || plan.restarts_at_deploy(c) {
            continue;
        }
        let unblocked = remaining
            .iter()
            .filter(|(&s, to)| s != c && is_ready_ignoring(sim, s, to, Some(c)))
            .count();
        let catalog = sim.catalog;
        let held: u32 = vm
            .gis
            .iter()
            .zip(&p.gis)
            .map(|(req, slot)| {
                let m = catalog.model(req.model).profiles[req.profile].mask_at(slot.start);
                (m & reserved.get(&(p.host, slot.gpu)).copied().unwrap_or(0)).count_ones()
            })
            .sum();
        let blocks_cores = incoming.contains_key(&p.host);
        if unblocked == 0 && held == 0 && !blocks_cores {
            continue;
        }
        ranked.push((unblocked, held, c));
    }
    ranked.sort_by_key(|&(u, h, c)| (std::cmp::Reverse(u), std::cmp::Reverse(h), c));
    ranked
        .into_iter()
        .find_map(|(_, _, c)| parking_place(sim, c, remaining, &reserved, &incoming).map(|p| (c, p)))
}

/// Where VM `c` can park: free slices of its class that no remaining step targets, and, on
/// another host, cores and RAM beyond what remaining steps bring to that host. GIs go largest
/// first, each to the first GPU with room at its default start (Eq. 3) among the unreserved
/// slices.
fn parking_place(
    sim: &Fleet,
    c: VmId,
    remaining: &BTreeMap<VmId, Placement>,
    reserved: &BTreeMap<(HostId, usize), u32>,
    incoming: &BTreeMap<HostId, (u32, u32)>,
) -> Option<Placement> {
    let vm = sim.vm(c)?;
    let own = vm.placement.as_ref()?.host;
    let mut in_plan: BTreeSet<HostId> = BTreeSet::new();
    for (&id, to) in remaining {
        in_plan.insert(to.host);
        if let Some(p) = sim.vm(id).and_then(|v| v.placement.as_ref()) {
            in_plan.insert(p.host);
        }
    }
    let mut order: Vec<HostId> = vec![own];
    order.extend(in_plan.iter().copied().filter(|&h| h != own));
    let n = sim.hosts.len();
    order.extend((0..n).filter(|&h| h != own && !in_plan.contains(&h) && sim.hosts[h].is_active()));
    order.extend((0..n).filter(|&h| h != own && !in_plan.contains(&h) && !sim.hosts[h].is_active()));
    let catalog = sim.catalog;
    'hosts: for h in order {
        let host = &sim.hosts[h];
        if h != own {
            let (ic, ir) = incoming.get(&h).copied().unwrap_or((0, 0));
            if host.free_cores() < ic + vm.cores || host.free_ram() < ir + vm.ram_gb {
                continue;
            }
        }
        let mut occs: Vec<Occupancy> = host
            .gpus
            .iter()
            .enumerate()
            .map(|(k, g)| {
                let mut o = g.occ;
                o.mask |= reserved.get(&(h, k)).copied().unwrap_or(0);
                o
            })
            .collect();
        let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
        for i in vm.gis_largest_first(catalog) {
            let req = vm.gis[i];
            let found = host.gpus.iter().enumerate().find_map(|(k, g)| {
                // GIs park on MIG GPUs only (docs/model.md, "GPU modes").
                if g.mode != crate::fleet::GpuMode::Mig || !catalog.same_class(req.model, g.model) {
                    return None;
                }
                mig::default_start(catalog.model(g.model), &occs[k], req.profile).map(|z| (k, z))
            });
            let Some((k, z)) = found else { continue 'hosts };
            occs[k].add(catalog.model(host.gpus[k].model), req.profile, z);
            slots[i] = GiSlot { gpu: k, start: z };
        }
        return Some(Placement { host: h, gis: slots });
    }
    None
}

/// Applies scheduled steps in order. Every step is validated by the fleet; in debug builds the
/// fleet invariants ([`Fleet::check_invariants`]) are asserted after each step. On an error the steps before it stay
/// applied (a schedule from [`schedule_with`] on the same fleet never fails). A mode switch goes
/// through [`Fleet::set_gpu_mode`], which refuses a GPU that still holds anything
/// ([`FleetError::GpuBusy`]).
pub fn execute(fleet: &mut Fleet, schedule: &Schedule) -> Result<(), FleetError> {
    for s in &schedule.steps {
        match s.kind {
            StepKind::Start => fleet.place(s.vm, s.to.clone())?,
            StepKind::Move | StepKind::Park | StepKind::RestartAtDeploy => {
                fleet.move_vm(s.vm, s.to.clone())?
            }
            StepKind::SetMode(mode) => {
                let (h, k) = step_gpu(s).ok_or(FleetError::GiCount {
                    vm: s.vm,
                    want: 1,
                    got: 0,
                })?;
                fleet.set_gpu_mode(h, k, mode)?
            }
        }
        debug_assert_eq!(fleet.check_invariants(), Ok(()));
    }
    Ok(())
}
