//! The defragmentation pass across GPU modes (docs/operations.md, "Defragmentation across
//! modes"). It proposes one [`Plan`] and changes nothing:
//!
//! 1. **Soft shares move freely**: a share is a memory limit and a compute weight, pinned to no
//!    slice, so it can live-migrate to any shared GPU of its class with room. The pass empties
//!    shared GPUs, the least loaded (in GB) first: every share of the GPU, largest first, goes to
//!    the shared GPU with the least free memory that still holds it (best fit by bytes, ties by
//!    host and GPU index). A GPU is emptied only when all its shares find room; a GPU that
//!    received shares is not emptied afterwards. Isolated shares hold whole GPUs and never move.
//! 2. **MIG tenants restart at their next deploy**: when the goal asks for free GPUs (a number, a
//!    given GPU, or the GPUs a pending gang or whole-GPU request lacks), the pass finds the fewest
//!    tenants whose restart frees a MIG GPU (all its GIs gone): the GPU's own tenants and, when
//!    they find no room elsewhere, other tenants that make room, each re-placed on another MIG GPU
//!    at a permitted start ([`crate::executor::StepKind::RestartAtDeploy`] steps). The search
//!    tries sets by size, smallest first, so the first set whose tenants all find room and whose
//!    restarts the executor can order is a minimum ([`Defrag::exact`] says whether the search
//!    stayed within its budget). Several GPUs are freed one after another, each at its own
//!    minimum.
//!
//! 3. **The pending request starts in the same plan** (goal [`Goal::Auto`]): once its host has
//!    the free GPUs it needs, the plan switches those still in another mode to whole
//!    ([`crate::executor::StepKind::SetMode`] steps, a drain of nothing, after the restarts that
//!    empty them) and starts the gang or isolated share on them.
//!
//! The moves of step 1 and the restarts of step 2 only take resources that are free when the
//! pass starts or that the plan frees, so the executor orders them into steps that each use free
//! resources ([`crate::executor::schedule_with`]); the pass checks that it does.

use crate::executor::{self, PlanError, Schedule};
use crate::fleet::{Fleet, GiSlot, GpuMode, HostId, Placement, Shape, VmId};
use crate::mig;
use crate::plan::Plan;
use std::collections::{BTreeMap, BTreeSet};

/// The origin of the pass's plans (logs, previews).
pub(crate) const ORIGIN: &str = "defrag";

/// Placements the restart search may try before it gives up (each candidate placement of a
/// tenant and each set of tenants counts one).
pub(crate) const SEARCH_BUDGET: u64 = 200_000;

/// What the pass is asked to free beyond repacking the shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Repack the shares; then, if the oldest pending gang or whole-GPU request (an isolated
    /// share) finds no room, free the GPUs it lacks on the host where that costs the fewest
    /// restarts.
    Auto,
    /// Repack the shares and free MIG GPUs until at least this many GPUs of the fleet hold
    /// nothing.
    FreeGpus(usize),
    /// Repack the shares and free this MIG GPU (host, GPU index).
    Gpu(HostId, usize),
}

/// Why the pass could not propose a plan.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DefragError {
    #[error("no host {0}")]
    UnknownHost(HostId),
    #[error("host {host} has no GPU {gpu}")]
    UnknownGpu { host: String, gpu: usize },
    #[error("GPU {host}/{gpu} is in {mode} mode: only a MIG GPU is freed by restarting its tenants")]
    NotMig { host: String, gpu: usize, mode: GpuMode },
    #[error("{want} free GPUs asked for, but the fleet has {total} GPUs")]
    TooMany { want: usize, total: usize },
    #[error("the plan cannot be ordered into steps: {0}")]
    Plan(#[from] PlanError),
}

/// A soft share the plan live-migrates to another shared GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareMove {
    pub vm: VmId,
    pub gb: u32,
    /// (host, GPU) before and after.
    pub from: (HostId, usize),
    pub to: (HostId, usize),
}

/// A MIG tenant the plan restarts on another place at its next deploy.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub vm: VmId,
    pub from: Placement,
    pub to: Placement,
}

/// The fleet's footprint before or after the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Footprint {
    pub active_hosts: usize,
    /// GPUs holding something, of every mode.
    pub used_gpus: usize,
    pub used_mig: usize,
    pub used_whole: usize,
    pub used_shared: usize,
    /// GPUs holding nothing.
    pub free_gpus: usize,
}

impl Footprint {
    pub fn of(fleet: &Fleet) -> Footprint {
        let mut f = Footprint {
            active_hosts: fleet.active_hosts(),
            ..Default::default()
        };
        for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
            if !g.is_used() {
                f.free_gpus += 1;
                continue;
            }
            f.used_gpus += 1;
            match g.mode {
                GpuMode::Mig => f.used_mig += 1,
                GpuMode::Whole => f.used_whole += 1,
                GpuMode::Shared => f.used_shared += 1,
            }
        }
        f
    }
}

/// A pending request that needs whole GPUs (a gang, an isolated share), after the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct WholeFit {
    pub vm: VmId,
    /// Whole GPUs it needs on one host.
    pub gpus: u32,
    /// Whether it fits before the plan, as the GPUs' modes are.
    pub fits_before: bool,
    /// Whether the plan starts it (goal [`Goal::Auto`], the oldest such request with no room).
    pub started: bool,
    /// The host it starts on in the plan, else the first host with enough free GPUs of its
    /// class after the plan, if any.
    pub host: Option<HostId>,
    /// GPUs of that host that are not whole before the plan: for a started request, the GPUs
    /// the plan switches to whole before it starts; else those of the first `gpus` free ones
    /// still to switch (a `:mode GPU whole` each, a drain of nothing) before it can start.
    pub switch: Vec<usize>,
}

/// The pass's proposal.
#[derive(Debug, Clone)]
pub struct Defrag {
    pub goal: Goal,
    /// Targets of the moved shares and the restarted tenants; `plan.restarts` names the latter.
    pub plan: Plan,
    /// The executor's order of the plan.
    pub schedule: Schedule,
    pub share_moves: Vec<ShareMove>,
    pub restarts: Vec<Restart>,
    /// GPUs that hold something before and nothing after, ascending.
    pub freed_gpus: Vec<(HostId, usize)>,
    /// Hosts that run a VM before and none after.
    pub freed_hosts: Vec<HostId>,
    /// Used shared GPUs after, and the fewest that could hold the shares (their GB over a GPU's,
    /// rounded up, per GPU model).
    pub shared_used: usize,
    pub shared_bound: usize,
    pub before: Footprint,
    pub after: Footprint,
    /// The restart search finished within [`SEARCH_BUDGET`]: every count of restarts is a minimum.
    pub exact: bool,
    /// What the goal asked for and the pass could not reach, if anything.
    pub short: Option<String>,
    /// The pending gangs and isolated shares, oldest first: whether each fits after the plan.
    pub whole_requests: Vec<WholeFit>,
    /// The fleet after the plan.
    pub after_fleet: Fleet,
}

/// Runs the pass (module notes) on `fleet` for `goal`.
pub fn defrag(fleet: &Fleet, goal: Goal) -> Result<Defrag, DefragError> {
    check_goal(fleet, goal)?;
    let mut st = Pass {
        orig: fleet,
        work: fleet.clone(),
        plan: Plan {
            origin: ORIGIN.into(),
            ..Default::default()
        },
        incoming: BTreeMap::new(),
        budget: SEARCH_BUDGET,
        exhausted: false,
    };
    st.repack_shares(&BTreeSet::new());
    let mut short = None;
    match goal {
        Goal::Auto => {
            if let Some((vm, n, model)) = first_unplaceable_whole(&st.work) {
                short = st.free_for_whole(vm, n, model);
                if short.is_none() {
                    st.start_whole(vm, n, model);
                }
            }
        }
        Goal::FreeGpus(n) => {
            // A tenant restarted onto a GPU that holds nothing would free one GPU by filling
            // another: the free GPUs are no targets.
            let mut excluded: BTreeSet<(HostId, usize)> = BTreeSet::new();
            while Footprint::of(&st.work).free_gpus < n {
                for (h, host) in st.work.hosts.iter().enumerate() {
                    for (k, g) in host.gpus.iter().enumerate() {
                        if !g.is_used() {
                            excluded.insert((h, k));
                        }
                    }
                }
                let candidates = used_mig_gpus(&st.work, |_| true);
                match st.cheapest_free(&candidates, &excluded) {
                    Some(g) => {
                        excluded.insert(g);
                    }
                    None => {
                        short = Some(format!(
                            "{n} free GPUs asked for; {} reached: no further GPU frees by restarts{}",
                            Footprint::of(&st.work).free_gpus,
                            if st.exhausted {
                                " within the search budget"
                            } else {
                                ""
                            }
                        ));
                        break;
                    }
                }
            }
        }
        Goal::Gpu(h, k) => {
            if st.work.hosts[h].gpus[k].is_used() {
                let excluded = BTreeSet::from([(h, k)]);
                if st.cheapest_free(&[(h, k)], &excluded).is_none() {
                    short = Some(format!(
                        "{} cannot be freed: its tenants find no room elsewhere{}",
                        fleet.gpu_label(h, k),
                        if st.exhausted {
                            " within the search budget"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
    }
    st.finish(goal, short)
}

fn check_goal(fleet: &Fleet, goal: Goal) -> Result<(), DefragError> {
    match goal {
        Goal::Auto => Ok(()),
        Goal::FreeGpus(n) => {
            let total = fleet.total_gpus();
            if n > total {
                return Err(DefragError::TooMany { want: n, total });
            }
            Ok(())
        }
        Goal::Gpu(h, k) => {
            let host = fleet.hosts.get(h).ok_or(DefragError::UnknownHost(h))?;
            let gpu = host.gpus.get(k).ok_or_else(|| DefragError::UnknownGpu {
                host: host.name.clone(),
                gpu: k,
            })?;
            if gpu.mode != GpuMode::Mig {
                return Err(DefragError::NotMig {
                    host: host.name.clone(),
                    gpu: k,
                    mode: gpu.mode,
                });
            }
            Ok(())
        }
    }
}

/// Whole GPUs a pending request needs, and their class: a gang's GPUs, 1 for an isolated share.
fn whole_need(fleet: &Fleet, id: VmId) -> Option<(u32, usize)> {
    match fleet.vm(id)?.shape {
        Shape::Gang { model, gpus } => Some((gpus, model)),
        Shape::Share {
            model,
            isolation: true,
            ..
        } => Some((1, model)),
        _ => None,
    }
}

/// The oldest pending gang or isolated share that finds no room: (VM, GPUs, model).
fn first_unplaceable_whole(fleet: &Fleet) -> Option<(VmId, u32, usize)> {
    fleet.pending().iter().find_map(|&id| {
        let (n, model) = whole_need(fleet, id)?;
        let vm = fleet.vm(id)?;
        fleet.ff_placement(vm).is_none().then_some((id, n, model))
    })
}

/// Used MIG GPUs of hosts `keep` accepts, by (host, GPU).
fn used_mig_gpus(fleet: &Fleet, keep: impl Fn(HostId) -> bool) -> Vec<(HostId, usize)> {
    fleet
        .hosts
        .iter()
        .enumerate()
        .filter(|(h, _)| keep(*h))
        .flat_map(|(h, host)| {
            host.gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| g.mode == GpuMode::Mig && g.is_used())
                .map(move |(k, _)| (h, k))
        })
        .collect()
}

/// MIG VMs with a GI on GPU `g`, ascending.
fn residents(fleet: &Fleet, (h, k): (HostId, usize)) -> Vec<VmId> {
    let mut v: Vec<VmId> = fleet.hosts[h].gpus[k].gis.iter().map(|g| g.vm).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The pass's working state.
struct Pass<'a> {
    orig: &'a Fleet,
    /// The fleet with what the pass decided so far.
    work: Fleet,
    plan: Plan,
    /// Cores and RAM that VMs coming from other hosts (than in `orig`) take, per host.
    incoming: BTreeMap<HostId, (u32, u32)>,
    budget: u64,
    exhausted: bool,
}

impl Pass<'_> {
    /// Whether VM `id` may come to host `to` with the cores and RAM free in the original fleet
    /// beyond what others bring (a VM staying on its host needs nothing more).
    fn host_room(&self, id: VmId, to: HostId) -> bool {
        let Some(vm) = self.orig.vm(id) else { return false };
        if vm.placement.as_ref().is_some_and(|p| p.host == to) {
            return true;
        }
        let (c, r) = self.incoming.get(&to).copied().unwrap_or((0, 0));
        let host = &self.orig.hosts[to];
        host.free_cores() >= c + vm.cores && host.free_ram() >= r + vm.ram_gb
    }

    /// Records VM `id`'s new target in the plan and the host accounting.
    fn record(&mut self, id: VmId, to: Placement, restart: bool) {
        // Undo the accounting of an earlier target of the same VM.
        if let Some(prev) = self.plan.targets.get(&id) {
            self.account(id, prev.host, false);
        }
        self.account(id, to.host, true);
        if restart {
            self.plan.restarts.insert(id);
        }
        self.plan.targets.insert(id, to);
    }

    fn account(&mut self, id: VmId, host: HostId, add: bool) {
        let Some(vm) = self.orig.vm(id) else { return };
        if vm.placement.as_ref().is_some_and(|p| p.host == host) {
            return;
        }
        let e = self.incoming.entry(host).or_default();
        if add {
            e.0 += vm.cores;
            e.1 += vm.ram_gb;
        } else {
            e.0 -= vm.cores;
            e.1 -= vm.ram_gb;
        }
    }

    /// Step 1 of the module notes: empties shared GPUs, least loaded first, never onto the GPUs
    /// of `avoid`. Returns the GPUs emptied.
    fn repack_shares(&mut self, avoid: &BTreeSet<(HostId, usize)>) -> Vec<(HostId, usize)> {
        let mut emptied: Vec<(HostId, usize)> = Vec::new();
        let mut receivers: BTreeSet<(HostId, usize)> = BTreeSet::new();
        loop {
            let mut order: Vec<(u32, (HostId, usize))> = Vec::new();
            for (h, host) in self.work.hosts.iter().enumerate() {
                for (k, g) in host.gpus.iter().enumerate() {
                    if g.mode == GpuMode::Shared && !g.shares.is_empty() && !receivers.contains(&(h, k)) {
                        order.push((g.shared_gb(), (h, k)));
                    }
                }
            }
            order.sort_unstable();
            let mut progress = false;
            for (_, g) in order {
                let mut blocked = avoid.clone();
                blocked.extend(emptied.iter().copied());
                if let Some(moves) = self.empty_shared(g, &blocked, false) {
                    for (id, to) in moves {
                        receivers.insert(to);
                        self.move_share(id, to);
                    }
                    emptied.push(g);
                    progress = true;
                    break;
                }
            }
            if !progress {
                return emptied;
            }
        }
    }

    /// Where every share of shared GPU `g` goes (largest first, best fit by bytes), avoiding
    /// `g` and the GPUs of `blocked`, and shared GPUs that hold nothing unless `onto_empty` (a
    /// repack that fills an empty GPU frees none); `None` when one finds no room.
    fn empty_shared(
        &self,
        g: (HostId, usize),
        blocked: &BTreeSet<(HostId, usize)>,
        onto_empty: bool,
    ) -> Option<Vec<(VmId, (HostId, usize))>> {
        let catalog = self.work.catalog;
        let gpu = &self.work.hosts[g.0].gpus[g.1];
        let mut shares: Vec<(u32, VmId)> = gpu.shares.iter().map(|s| (s.gb, s.vm)).collect();
        shares.sort_by_key(|&(gb, id)| (std::cmp::Reverse(gb), id));
        let mut free: BTreeMap<(HostId, usize), u32> = BTreeMap::new();
        let mut extra: BTreeMap<HostId, (u32, u32)> = BTreeMap::new();
        let mut out = Vec::new();
        for (gb, id) in shares {
            let vm = self.work.vm(id)?;
            let Shape::Share { model, .. } = vm.shape else {
                return None;
            };
            let mut best: Option<(u32, (HostId, usize))> = None;
            for (h, host) in self.work.hosts.iter().enumerate() {
                for (k, t) in host.gpus.iter().enumerate() {
                    let at = (h, k);
                    if at == g
                        || blocked.contains(&at)
                        || t.mode != GpuMode::Shared
                        || (t.shares.is_empty() && !onto_empty)
                        || !catalog.same_class(model, t.model)
                    {
                        continue;
                    }
                    let room = *free.entry(at).or_insert_with(|| t.free_share_gb(catalog));
                    if room < gb || best.is_some_and(|(b, _)| b <= room) {
                        continue;
                    }
                    // Cores and RAM on another host, counting the other shares of this GPU.
                    if h != g.0 {
                        let (c, r) = extra.get(&h).copied().unwrap_or((0, 0));
                        let (ic, ir) = self.incoming.get(&h).copied().unwrap_or((0, 0));
                        let o = &self.orig.hosts[h];
                        let own = self
                            .orig
                            .vm(id)
                            .and_then(|v| v.placement.as_ref())
                            .map(|p| p.host);
                        if own != Some(h)
                            && (o.free_cores() < ic + c + vm.cores || o.free_ram() < ir + r + vm.ram_gb)
                        {
                            continue;
                        }
                    }
                    best = Some((room, at));
                }
            }
            let (room, at) = best?;
            free.insert(at, room - gb);
            if at.0 != g.0 {
                let e = extra.entry(at.0).or_default();
                e.0 += vm.cores;
                e.1 += vm.ram_gb;
            }
            out.push((id, at));
        }
        Some(out)
    }

    fn move_share(&mut self, id: VmId, (h, k): (HostId, usize)) {
        let to = Placement {
            host: h,
            gis: vec![GiSlot { gpu: k, start: 0 }],
        };
        // The target was checked for memory, class and mode; the fleet checks it again.
        if self.work.move_vm(id, to.clone()).is_ok() {
            self.record(id, to, false);
        }
    }

    /// Step 2: frees the candidate MIG GPU that costs the fewest restarts, never placing a
    /// tenant on the GPUs of `excluded` (the candidate itself is always excluded). Returns the
    /// GPU freed.
    fn cheapest_free(
        &mut self,
        candidates: &[(HostId, usize)],
        excluded: &BTreeSet<(HostId, usize)>,
    ) -> Option<(HostId, usize)> {
        let mig_vms: Vec<VmId> = self
            .work
            .vms()
            .filter(|v| v.is_mig() && v.placement.is_some() && !v.gis.is_empty())
            .map(|v| v.id)
            .collect();
        let mut by_size: Vec<(usize, (HostId, usize), Vec<VmId>)> = candidates
            .iter()
            .map(|&g| {
                let r = residents(&self.work, g);
                (r.len(), g, r)
            })
            .filter(|(n, _, _)| *n > 0)
            .collect();
        by_size.sort();
        // Restarting more tenants adds as many slices to place as it frees outside the GPU, so
        // a GPU whose own tenants lack the free slices elsewhere frees with no set.
        by_size.retain(|(_, g, own)| {
            let mut blocked = excluded.clone();
            blocked.insert(*g);
            slices_fit(&self.work, own, &blocked)
        });
        for cost in 1..=mig_vms.len() {
            for (n, g, own) in &by_size {
                if *n > cost {
                    continue;
                }
                let others: Vec<VmId> = mig_vms.iter().copied().filter(|v| !own.contains(v)).collect();
                let mut blocked = excluded.clone();
                blocked.insert(*g);
                let mut found = None;
                for_each_subset(&others, cost - n, &mut |extra| {
                    if self.budget == 0 {
                        self.exhausted = true;
                        return true;
                    }
                    self.budget -= 1;
                    let set: Vec<VmId> = own.iter().chain(extra).copied().collect();
                    if let Some(t) = self.place_set(&set, &blocked) {
                        found = Some(t);
                        return true;
                    }
                    self.exhausted
                });
                if let Some(targets) = found {
                    for (id, to) in targets {
                        self.record(id, to, true);
                    }
                    if let Ok(after) = self.orig.with_placements(&self.plan.targets) {
                        self.work = after;
                    }
                    return Some(*g);
                }
                if self.exhausted {
                    return None;
                }
            }
        }
        None
    }

    /// New places for every VM of `set` (restarted: their own old GIs are free) on MIG GPUs
    /// outside `blocked`, each different from where it is, such that the executor orders the
    /// whole plan; the first such assignment in search order.
    fn place_set(
        &mut self,
        set: &[VmId],
        blocked: &BTreeSet<(HostId, usize)>,
    ) -> Option<Vec<(VmId, Placement)>> {
        if !slices_fit(&self.work, set, blocked) {
            return None;
        }
        let mut tmp = self.work.clone();
        for &id in set {
            tmp.unplace(id).ok()?;
        }
        let mut order: Vec<VmId> = set.to_vec();
        let catalog = self.work.catalog;
        order.sort_by_key(|&id| {
            let s = self.work.vm(id).map_or(0, |v| v.memory_slices(catalog));
            (std::cmp::Reverse(s), id)
        });
        let mut chosen: Vec<(VmId, Placement)> = Vec::new();
        if self.search(&mut tmp, &order, blocked, &mut chosen) {
            Some(chosen)
        } else {
            None
        }
    }

    fn search(
        &mut self,
        tmp: &mut Fleet,
        order: &[VmId],
        blocked: &BTreeSet<(HostId, usize)>,
        chosen: &mut Vec<(VmId, Placement)>,
    ) -> bool {
        let Some((&id, rest)) = order.split_first() else {
            return self.orderable(chosen);
        };
        let current = self.work.vm(id).and_then(|v| v.placement.clone());
        let idle = |h: HostId| !self.orig.hosts[h].is_active() && !self.incoming.contains_key(&h);
        for p in candidate_placements(tmp, id, blocked, idle) {
            if Some(&p) == current.as_ref() || !self.host_room_with(id, p.host, chosen) {
                continue;
            }
            if self.budget == 0 {
                self.exhausted = true;
                return false;
            }
            self.budget -= 1;
            if tmp.place(id, p.clone()).is_err() {
                continue;
            }
            chosen.push((id, p));
            if self.search(tmp, rest, blocked, chosen) {
                return true;
            }
            chosen.pop();
            let _ = tmp.unplace(id);
            if self.exhausted {
                return false;
            }
        }
        false
    }

    /// [`Pass::host_room`] counting the hosts the tenants chosen so far come to.
    fn host_room_with(&self, id: VmId, to: HostId, chosen: &[(VmId, Placement)]) -> bool {
        let Some(vm) = self.orig.vm(id) else { return false };
        if vm.placement.as_ref().is_some_and(|p| p.host == to) {
            return true;
        }
        let (mut c, mut r) = self.incoming.get(&to).copied().unwrap_or((0, 0));
        for (o, p) in chosen {
            let Some(v) = self.orig.vm(*o) else { continue };
            if p.host == to && v.placement.as_ref().is_none_or(|q| q.host != to) {
                // Skip what an earlier target of the same VM counted.
                if self.plan.targets.get(o).is_none_or(|t| t.host != to) {
                    c += v.cores;
                    r += v.ram_gb;
                }
            }
        }
        let host = &self.orig.hosts[to];
        host.free_cores() >= c + vm.cores && host.free_ram() >= r + vm.ram_gb && self.host_room(id, to)
    }

    /// Whether the plan so far with `chosen` restarted is orderable into executor steps.
    fn orderable(&self, chosen: &[(VmId, Placement)]) -> bool {
        let mut plan = self.plan.clone();
        for (id, p) in chosen {
            plan.targets.insert(*id, p.clone());
            plan.restarts.insert(*id);
        }
        executor::schedule_with(self.orig, &plan, 0.0).is_ok()
    }

    /// Frees the GPUs a pending whole-GPU request `vm` lacks (`n` of `model`'s class on one
    /// host), on the host where that costs the fewest restarts, then the fewest share moves.
    /// Returns what could not be done.
    fn free_for_whole(&mut self, vm: VmId, n: u32, model: usize) -> Option<String> {
        let catalog = self.work.catalog;
        let mut best: Option<((usize, usize, HostId), Pass<'_>)> = None;
        for (h, host) in self.work.hosts.iter().enumerate() {
            let class: Vec<usize> = (0..host.gpus.len())
                .filter(|&k| catalog.same_class(model, host.gpus[k].model))
                .collect();
            // A GPU held whole (a tenant, an isolated share, a gang member) does not free here.
            let freeable = class
                .iter()
                .filter(|&&k| host.gpus[k].mode != GpuMode::Whole || host.gpus[k].holder.is_none())
                .count();
            if freeable < n as usize {
                continue;
            }
            let mut trial = Pass {
                orig: self.orig,
                work: self.work.clone(),
                plan: self.plan.clone(),
                incoming: self.incoming.clone(),
                budget: self.budget,
                exhausted: false,
            };
            let host_gpus: BTreeSet<(HostId, usize)> = (0..host.gpus.len()).map(|k| (h, k)).collect();
            let free_on = |f: &Fleet| class.iter().filter(|&&k| !f.hosts[h].gpus[k].is_used()).count();
            // Shares leave the host's shared GPUs first (moves, no restart), then MIG GPUs free.
            if free_on(&trial.work) < n as usize {
                let shared: Vec<usize> = class
                    .iter()
                    .copied()
                    .filter(|&k| trial.work.hosts[h].gpus[k].mode == GpuMode::Shared)
                    .filter(|&k| trial.work.hosts[h].gpus[k].is_used())
                    .collect();
                for k in shared {
                    if free_on(&trial.work) >= n as usize {
                        break;
                    }
                    if let Some(moves) = trial.empty_shared((h, k), &host_gpus, true) {
                        for (id, to) in moves {
                            trial.move_share(id, to);
                        }
                    }
                }
            }
            let mut ok = true;
            while free_on(&trial.work) < n as usize {
                let candidates: Vec<(HostId, usize)> = class
                    .iter()
                    .map(|&k| (h, k))
                    .filter(|&(h, k)| {
                        let g = &trial.work.hosts[h].gpus[k];
                        g.mode == GpuMode::Mig && g.is_used()
                    })
                    .collect();
                if trial.cheapest_free(&candidates, &host_gpus).is_none() {
                    ok = false;
                    break;
                }
            }
            self.exhausted |= trial.exhausted;
            if !ok {
                continue;
            }
            let key = (
                trial.plan.restarts.len(),
                trial.plan.targets.len() - trial.plan.restarts.len(),
                h,
            );
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, trial));
            }
        }
        match best {
            Some((_, trial)) => {
                self.work = trial.work;
                self.plan = trial.plan;
                self.incoming = trial.incoming;
                None
            }
            None => Some(format!(
                "pending VM {vm} needs {n} free GPU(s) on one host: no host gets them by moving shares and restarting tenants{}",
                if self.exhausted { " within the search budget" } else { "" }
            )),
        }
    }

    /// Step 3: switches the free GPUs request `vm` takes (`n` of `model`'s class on one host)
    /// to whole and starts it on them. Changes nothing when no host has them.
    fn start_whole(&mut self, vm: VmId, n: u32, model: usize) {
        let Some(req) = self.work.vm(vm).cloned() else {
            return;
        };
        let Some((h, take, switch)) = whole_room(&self.work, &req, n, model) else {
            return;
        };
        let mut trial = self.work.clone();
        for &k in &switch {
            if trial.set_gpu_mode(h, k, GpuMode::Whole).is_err() {
                return;
            }
        }
        let to = Placement {
            host: h,
            gis: take.iter().map(|&k| GiSlot { gpu: k, start: 0 }).collect(),
        };
        if trial.place(vm, to.clone()).is_err() {
            return;
        }
        let mut plan = self.plan.clone();
        plan.modes
            .extend(switch.iter().map(|&k| ((h, k), GpuMode::Whole)));
        plan.targets.insert(vm, to.clone());
        if executor::schedule_with(self.orig, &plan, 0.0).is_err() {
            return;
        }
        self.work = trial;
        self.plan.modes = plan.modes;
        self.record(vm, to, false);
    }

    fn finish(self, goal: Goal, short: Option<String>) -> Result<Defrag, DefragError> {
        let orig = self.orig;
        let schedule = executor::schedule_with(orig, &self.plan, 0.0)?;
        let mut after = orig.clone();
        executor::execute(&mut after, &schedule).map_err(|e| {
            DefragError::Plan(PlanError::Invalid(schedule.steps.first().map_or(0, |s| s.vm), e))
        })?;
        let mut share_moves = Vec::new();
        let mut restarts = Vec::new();
        for (&id, to) in &self.plan.targets {
            let Some(from) = orig.vm(id).and_then(|v| v.placement.clone()) else {
                continue;
            };
            if &from == to {
                continue;
            }
            if self.plan.restarts_at_deploy(id) {
                restarts.push(Restart {
                    vm: id,
                    from,
                    to: to.clone(),
                });
            } else if let Some(Shape::Share { gb, .. }) = orig.vm(id).map(|v| v.shape) {
                share_moves.push(ShareMove {
                    vm: id,
                    gb,
                    from: (from.host, from.gis.first().map_or(0, |s| s.gpu)),
                    to: (to.host, to.gis.first().map_or(0, |s| s.gpu)),
                });
            }
        }
        let mut freed_gpus = Vec::new();
        for (h, host) in orig.hosts.iter().enumerate() {
            for (k, g) in host.gpus.iter().enumerate() {
                if g.is_used() && !after.hosts[h].gpus[k].is_used() {
                    freed_gpus.push((h, k));
                }
            }
        }
        let freed_hosts = (0..orig.hosts.len())
            .filter(|&h| orig.hosts[h].is_active() && !after.hosts[h].is_active())
            .collect();
        let (shared_used, shared_bound) = shared_figures(&after);
        let whole_requests = orig
            .pending()
            .iter()
            .filter_map(|&id| {
                let (n, model) = whole_need(orig, id)?;
                let vm = orig.vm(id)?;
                let started = after.vm(id).and_then(|v| v.placement.as_ref());
                let (host, switch) = match (started, whole_room(&after, vm, n, model)) {
                    (Some(p), _) => {
                        let mut s: Vec<usize> = p
                            .gis
                            .iter()
                            .map(|g| g.gpu)
                            .filter(|&k| orig.hosts[p.host].gpus[k].mode != GpuMode::Whole)
                            .collect();
                        s.sort_unstable();
                        (Some(p.host), s)
                    }
                    (None, Some((h, _, s))) => (Some(h), s),
                    (None, None) => (None, Vec::new()),
                };
                Some(WholeFit {
                    vm: id,
                    gpus: n,
                    fits_before: orig.ff_placement(vm).is_some(),
                    started: started.is_some(),
                    host,
                    switch,
                })
            })
            .collect();
        Ok(Defrag {
            goal,
            before: Footprint::of(orig),
            after: Footprint::of(&after),
            plan: self.plan,
            schedule,
            share_moves,
            restarts,
            freed_gpus,
            freed_hosts,
            shared_used,
            shared_bound,
            exact: !self.exhausted,
            short,
            whole_requests,
            after_fleet: after,
        })
    }
}

/// Whether the memory slices of the GIs of `set` fit, class by class, in the slices that are free
/// on MIG GPUs outside `blocked` once `set` left (a necessary condition for re-placing them).
fn slices_fit(fleet: &Fleet, set: &[VmId], blocked: &BTreeSet<(HostId, usize)>) -> bool {
    let catalog = fleet.catalog;
    let mut need: BTreeMap<usize, u32> = BTreeMap::new();
    for &id in set {
        let Some(v) = fleet.vm(id) else { return false };
        for g in &v.gis {
            *need.entry(g.model).or_default() += catalog.model(g.model).profiles[g.profile].size as u32;
        }
    }
    need.iter().all(|(&m, &want)| {
        let mut free = 0u32;
        for (h, host) in fleet.hosts.iter().enumerate() {
            for (k, gpu) in host.gpus.iter().enumerate() {
                if gpu.mode != GpuMode::Mig || !catalog.same_class(m, gpu.model) || blocked.contains(&(h, k))
                {
                    continue;
                }
                let model = catalog.model(gpu.model);
                let own: u32 = gpu
                    .gis
                    .iter()
                    .filter(|r| set.contains(&r.vm))
                    .map(|r| model.profiles[r.profile].size as u32)
                    .sum();
                free += model.memory_slices as u32 - gpu.occ.used_slices() + own;
            }
        }
        free >= want
    })
}

/// Used shared GPUs, and the fewest that could hold their shares: per GPU model, the shares' GB
/// over the model's GB, rounded up.
fn shared_figures(fleet: &Fleet) -> (usize, usize) {
    let mut used = 0;
    let mut gb: BTreeMap<usize, u64> = BTreeMap::new();
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        if g.mode == GpuMode::Shared && !g.shares.is_empty() {
            used += 1;
            *gb.entry(g.model).or_default() += u64::from(g.shared_gb());
        }
    }
    let bound = gb
        .iter()
        .map(|(&m, &total)| {
            let cap = u64::from(crate::fleet::gpu_gb(fleet.catalog, m)).max(1);
            total.div_ceil(cap) as usize
        })
        .sum();
    (used, bound)
}

/// The host with `n` GPUs of `model`'s class that hold nothing and the fewest of them still to
/// switch to whole (free whole GPUs taken first; ties by host index), the `n` GPUs taken and
/// which of those are to switch, each ascending; the host also has the cores and RAM of `vm`
/// free.
fn whole_room(
    fleet: &Fleet,
    vm: &crate::fleet::Vm,
    n: u32,
    model: usize,
) -> Option<(HostId, Vec<usize>, Vec<usize>)> {
    let catalog = fleet.catalog;
    if n == 0 {
        return None;
    }
    let mut best: Option<(HostId, Vec<usize>, Vec<usize>)> = None;
    for (h, host) in fleet.hosts.iter().enumerate() {
        let mut free: Vec<usize> = (0..host.gpus.len())
            .filter(|&k| catalog.same_class(model, host.gpus[k].model) && !host.gpus[k].is_used())
            .collect();
        if free.len() < n as usize || host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            continue;
        }
        free.sort_by_key(|&k| (host.gpus[k].mode != GpuMode::Whole, k));
        let mut take: Vec<usize> = free.into_iter().take(n as usize).collect();
        take.sort_unstable();
        let switch: Vec<usize> = take
            .iter()
            .copied()
            .filter(|&k| host.gpus[k].mode != GpuMode::Whole)
            .collect();
        if best.as_ref().is_none_or(|(_, _, s)| switch.len() < s.len()) {
            best = Some((h, take, switch));
        }
    }
    best
}

/// What makes two idle hosts interchangeable for the search.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct IdleHost {
    cores: u32,
    ram_gb: u32,
    /// Model, mode and whether the search may use it, per GPU.
    gpus: Vec<(usize, GpuMode, bool)>,
}

/// Every placement of pending VM `id` on `fleet` outside `blocked`: per host with its cores and
/// RAM free, every GPU and permitted free start for each GI (largest first). Used GPUs come
/// before empty ones (fewest free slices first); of the empty GPUs of one model on a host only
/// the first is tried, and of the idle hosts of one make that `interchangeable` accepts (idle in
/// the original fleet, nothing planned to come) only the first.
fn candidate_placements(
    fleet: &Fleet,
    id: VmId,
    blocked: &BTreeSet<(HostId, usize)>,
    interchangeable: impl Fn(HostId) -> bool,
) -> Vec<Placement> {
    let Some(vm) = fleet.vm(id) else { return Vec::new() };
    let catalog = fleet.catalog;
    let order = vm.gis_largest_first(catalog);
    let mut out = Vec::new();
    let mut idle_seen: BTreeSet<IdleHost> = BTreeSet::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        if host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            continue;
        }
        if !host.is_active() && interchangeable(h) {
            let sig = IdleHost {
                cores: host.cores,
                ram_gb: host.ram_gb,
                gpus: host
                    .gpus
                    .iter()
                    .enumerate()
                    .map(|(k, g)| (g.model, g.mode, blocked.contains(&(h, k))))
                    .collect(),
            };
            if !idle_seen.insert(sig) {
                continue;
            }
        }
        let mut occs: Vec<mig::Occupancy> = host.gpus.iter().map(|g| g.occ).collect();
        let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
        gi_choices(fleet, h, vm, &order, 0, blocked, &mut occs, &mut slots, &mut out);
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn gi_choices(
    fleet: &Fleet,
    h: HostId,
    vm: &crate::fleet::Vm,
    order: &[usize],
    i: usize,
    blocked: &BTreeSet<(HostId, usize)>,
    occs: &mut [mig::Occupancy],
    slots: &mut [GiSlot],
    out: &mut Vec<Placement>,
) {
    if i == order.len() {
        out.push(Placement {
            host: h,
            gis: slots.to_vec(),
        });
        return;
    }
    let catalog = fleet.catalog;
    let host = &fleet.hosts[h];
    let req = vm.gis[order[i]];
    let mut gpus: Vec<usize> = (0..host.gpus.len())
        .filter(|&k| {
            let g = &host.gpus[k];
            g.mode == GpuMode::Mig && catalog.same_class(req.model, g.model) && !blocked.contains(&(h, k))
        })
        .collect();
    gpus.sort_by_key(|&k| {
        let free = catalog.model(host.gpus[k].model).memory_slices as u32 - occs[k].used_slices();
        (occs[k].is_empty(), free, k)
    });
    let mut empty_models: BTreeSet<usize> = BTreeSet::new();
    for k in gpus {
        if occs[k].is_empty() && !empty_models.insert(host.gpus[k].model) {
            continue;
        }
        let model = catalog.model(host.gpus[k].model);
        let starts: Vec<u8> = mig::free_starts(model, &occs[k], req.profile).collect();
        for z in starts {
            occs[k].add(model, req.profile, z);
            slots[order[i]] = GiSlot { gpu: k, start: z };
            gi_choices(fleet, h, vm, order, i + 1, blocked, occs, slots, out);
            occs[k].remove(model, req.profile, z);
        }
    }
}

/// Calls `f` on every subset of `items` of size `k` (lexicographic order) until it returns true.
fn for_each_subset(items: &[VmId], k: usize, f: &mut dyn FnMut(&[VmId]) -> bool) {
    fn go(
        items: &[VmId],
        k: usize,
        from: usize,
        cur: &mut Vec<VmId>,
        f: &mut dyn FnMut(&[VmId]) -> bool,
    ) -> bool {
        if cur.len() == k {
            return f(cur);
        }
        for i in from..items.len() {
            if items.len() - i < k - cur.len() {
                break;
            }
            cur.push(items[i]);
            if go(items, k, i + 1, cur, f) {
                return true;
            }
            cur.pop();
        }
        false
    }
    go(items, k, 0, &mut Vec::new(), f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;
    use crate::fleet::{GiRequest, Host, Vm};

    #[test]
    fn subsets_come_in_lexicographic_order_and_stop_when_asked() {
        let mut seen: Vec<Vec<VmId>> = Vec::new();
        for_each_subset(&[1, 2, 3, 4], 2, &mut |s| {
            seen.push(s.to_vec());
            false
        });
        assert_eq!(
            seen,
            vec![
                vec![1, 2],
                vec![1, 3],
                vec![1, 4],
                vec![2, 3],
                vec![2, 4],
                vec![3, 4]
            ]
        );
        let mut n = 0;
        for_each_subset(&[1, 2, 3, 4], 2, &mut |_| {
            n += 1;
            n == 3
        });
        assert_eq!(n, 3);
        let mut empty = 0;
        for_each_subset(&[1, 2], 0, &mut |s| {
            empty += usize::from(s.is_empty());
            false
        });
        assert_eq!(empty, 1);
    }

    /// Two A100-40GB (8 memory slices each): a 4g.20gb on GPU 0 and a 3g.20gb on GPU 1 leave
    /// 4 + 4 free slices. Freeing GPU 0 needs its 4 slices elsewhere: GPU 1 has 4. Blocking
    /// GPU 1 too leaves none.
    #[test]
    fn slices_fit_counts_free_slices_outside_the_blocked_gpus() {
        let c = embedded();
        let m = c.model_id("a100-40gb").unwrap();
        let mut f = Fleet::new(c, vec![Host::new("h", 64, 512, vec![m, m], 0)]);
        let vm = |id, p: &str| Vm::job(id, GiRequest::named(c, "a100-40gb", &[p]).unwrap(), 4, 16);
        let at = |k, z| Placement {
            host: 0,
            gis: vec![GiSlot { gpu: k, start: z }],
        };
        f.add_placed(vm(1, "4g.20gb"), at(0, 0)).unwrap();
        f.add_placed(vm(2, "3g.20gb"), at(1, 0)).unwrap();
        assert!(slices_fit(&f, &[1], &BTreeSet::from([(0, 0)])));
        assert!(!slices_fit(&f, &[1], &BTreeSet::from([(0, 0), (0, 1)])));
        // Restarting VM 2 too frees its own 4 slices on GPU 1: 8 needed, 8 free there.
        assert!(slices_fit(&f, &[1, 2], &BTreeSet::from([(0, 0)])));
        let fp = Footprint::of(&f);
        assert_eq!(
            (fp.used_gpus, fp.used_mig, fp.free_gpus, fp.active_hosts),
            (2, 2, 0, 1)
        );
    }
}
