//! TC (§6.3): the rule-based placement and compaction of Turkkan et al., adapted to VMs on hosts
//! as the paper does.
//!
//! Placement: a GI goes to the GPU whose joint slice utilization (s_m + s_c) / (S_m + S_c) after
//! the assignment is the largest (best fit), at the start of the default GI placement (the
//! paper's adaptation, which also covers the A30). The GIs of a VM go, largest first, to one host
//! with enough cores and RAM; the host with the largest mean utilization of the GPUs the VM uses
//! wins. Ties go to the lowest host, GPU and start.
//!
//! Compaction, every `compaction_min` (15 min) for each class: the active GPUs are examined from
//! the least utilized; a GPU is vacated when every VM with a GI on it fits, by the same rule, on
//! the other active GPUs, using only resources that were free before the compaction (so the
//! moves apply at once). Each VM moves at most once and a GPU that receives a VM is not vacated
//! later. If some GPU cannot be vacated, TC adds one idle GPU (from an active host when one has
//! an idle GPU, so that the compaction does not switch a host on) and keeps those further moves
//! only if they vacate at least two GPUs. The moves form a [`Plan`] that the simulator's
//! scheduler and executor apply, like OrigaMIG's.

use super::cache::{Lazy, Tables};
use super::Policy;
use crate::catalog::{Catalog, ModelId, MAX_PROFILES};
use crate::executor;
use crate::fleet::{Fleet, GiSlot, GpuMode, HostId, Placement, Vm, VmId};
use crate::mig::Occupancy;
use crate::plan::Plan;
use crate::policy_settings::TcSettings;
use std::collections::{BTreeMap, BTreeSet};

/// What the placement rule needs to know of one GPU.
#[derive(Debug, Clone, Copy)]
struct GpuView {
    model: ModelId,
    /// Slices that may not be used (occupied, or not free before a compaction).
    mask: u32,
    counts: [u8; MAX_PROFILES],
    mem: u32,
    comp: u32,
    allowed: bool,
    /// The kinds of the VMs with a GI on the GPU ([`kind_bit`]); read only by a placement with
    /// kind affinity ([`placement_with_affinity`]).
    kinds: u8,
}

/// A VM kind as a bit of [`GpuView::kinds`].
fn kind_bit(kind: crate::fleet::VmKind) -> u8 {
    match kind {
        crate::fleet::VmKind::Job => 1,
        crate::fleet::VmKind::Tenant => 2,
    }
}

/// How a GPU ranks for a GI of a VM of kind `bit` under kind affinity: 0 when it holds VMs of
/// that kind only, 1 when it holds others, 2 when it is empty (so best fit still prefers a GPU
/// in use to an idle one, and among GPUs in use one of the VM's own kind).
fn affinity_rank(v: &GpuView, bit: u8) -> f64 {
    if v.mem == 0 {
        2.0
    } else if v.kinds == bit {
        0.0
    } else {
        1.0
    }
}

fn joint_util(catalog: &Catalog, g: &GpuView) -> f64 {
    let m = catalog.model(g.model);
    (g.mem + g.comp) as f64 / (m.memory_slices as u32 + m.compute_slices as u32) as f64
}

/// Hosts with at most this many GPUs are scored without a heap allocation.
const STACK_GPUS: usize = 16;

/// TC's placement of `vm` on one host's GPUs: the score (mean joint utilization after the
/// assignment of the GPUs the VM uses) and the slots, if every GI fits. With `affinity` (the
/// VM's [`kind_bit`]) each GI goes to the GPU of the lowest [`affinity_rank`] first, best fit
/// among those, and the score is lowered by the ranks of the GPUs used, so that hosts compare
/// by rank first. With a `fragmentation` weight
/// w > 0, each GI's GPU scores its joint utilization after the GI less w times the rise of its
/// expected fragmentation ([`Tables::fragmentation`]), and the host's score is lowered by w
/// times the rises summed over the VM's GIs.
fn place_on_host_with(
    tables: &Tables,
    catalog: &Catalog,
    vm: &Vm,
    gpus: &[GpuView],
    affinity: Option<u8>,
    fragmentation: f64,
) -> Option<(f64, Vec<GiSlot>)> {
    let mut ranks = 0.0;
    let mut frag_rise = 0.0;
    let rise = |v: &GpuView, m: u32| {
        tables.fragmentation(v.model, v.mask | m) - tables.fragmentation(v.model, v.mask)
    };
    let first = *gpus.first()?;
    // A working copy of the host's GPUs: on the stack for every host of the catalog (this runs
    // for every host and every VM a compaction tries, so it must not allocate).
    let mut stack = [first; STACK_GPUS];
    let mut heap = Vec::new();
    let g: &mut [GpuView] = if gpus.len() <= STACK_GPUS {
        stack[..gpus.len()].copy_from_slice(gpus);
        &mut stack[..gpus.len()]
    } else {
        heap.extend_from_slice(gpus);
        &mut heap
    };
    let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
    let mut used: Vec<usize> = Vec::with_capacity(vm.gis.len());
    for i in vm.gis_largest_first(catalog) {
        let req = vm.gis[i];
        let prof = &catalog.model(req.model).profiles[req.profile];
        let mut best: Option<(f64, usize, u8)> = None;
        for (k, v) in g.iter().enumerate() {
            if !v.allowed || !catalog.same_class(req.model, v.model) {
                continue;
            }
            let occ = Occupancy {
                mask: v.mask,
                counts: v.counts,
            };
            let Some(z) = tables.default_start(v.model, &occ, v.mask, req.profile) else {
                continue;
            };
            let after = GpuView {
                mem: v.mem + prof.size as u32,
                comp: v.comp + prof.compute as u32,
                ..*v
            };
            let mut u = joint_util(catalog, &after) - affinity.map_or(0.0, |b| 10.0 * affinity_rank(v, b));
            if fragmentation > 0.0 {
                u -= fragmentation * rise(v, prof.mask_at(z));
            }
            if best.is_none_or(|(b, _, _)| u > b) {
                best = Some((u, k, z));
            }
        }
        let (_, k, z) = best?;
        if let Some(b) = affinity {
            ranks += affinity_rank(&g[k], b);
        }
        if fragmentation > 0.0 {
            frag_rise += rise(&g[k], prof.mask_at(z));
        }
        let v = &mut g[k];
        v.mask |= prof.mask_at(z);
        v.counts[req.profile] += 1;
        v.mem += prof.size as u32;
        v.comp += prof.compute as u32;
        if let Some(b) = affinity {
            v.kinds |= b;
        }
        slots[i] = GiSlot { gpu: k, start: z };
        if !used.contains(&k) {
            used.push(k);
        }
    }
    let score = if used.is_empty() {
        0.0
    } else {
        used.iter().map(|&k| joint_util(catalog, &g[k])).sum::<f64>() / used.len() as f64
    };
    Some((score - 10.0 * ranks - fragmentation * frag_rise, slots))
}

/// Whether the allowed GPUs of `vm`'s class on a host have enough unmasked slices in all for
/// the VM's GIs: a cheap necessary condition checked before [`place_on_host_with`].
fn may_fit(catalog: &Catalog, vm: &Vm, gpus: &[GpuView]) -> bool {
    let Some(first) = vm.gis.first() else {
        return true;
    };
    let need: u32 = vm
        .gis
        .iter()
        .map(|r| catalog.model(r.model).profiles[r.profile].size as u32)
        .sum();
    let free: u32 = gpus
        .iter()
        .filter(|v| v.allowed && catalog.same_class(first.model, v.model))
        .map(|v| {
            let n = catalog.model(v.model).memory_slices as u32;
            n - (v.mask & ((1u32 << n) - 1)).count_ones()
        })
        .sum();
    free >= need
}

/// TC's choice among hosts: the largest score, ties to the lowest host.
fn choose<F>(n_hosts: usize, mut on_host: F) -> Option<Placement>
where
    F: FnMut(HostId) -> Option<(f64, Vec<GiSlot>)>,
{
    let mut best: Option<(f64, Placement)> = None;
    for h in 0..n_hosts {
        if let Some((s, gis)) = on_host(h) {
            if best.as_ref().is_none_or(|(b, _)| s > *b) {
                best = Some((s, Placement { host: h, gis }));
            }
        }
    }
    best.map(|(_, p)| p)
}

/// TC's placement of a new VM on the fleet as it is, on the hosts for which `open(host)` holds.
pub fn placement(
    tables: &Tables,
    fleet: &Fleet,
    vm: &Vm,
    open: impl Fn(HostId) -> bool,
) -> Option<Placement> {
    placement_with_affinity(tables, fleet, vm, open, false, 0.0)
}

/// [`placement`], and with `affinity` by kind: the VM's GIs go to GPUs that hold VMs of its kind
/// only (a job with jobs, a tenant with tenants) before GPUs that hold others, and to those
/// before idle GPUs, best fit within each rank; hosts compare by the ranks of the GPUs used,
/// then by TC's score. GPUs whose VMs leave at about the same time empty whole. A
/// `fragmentation` weight w > 0 weighs the rise of each GPU's expected fragmentation against
/// best fit ([`place_on_host_with`]); 0 is TC's rule.
pub fn placement_with_affinity(
    tables: &Tables,
    fleet: &Fleet,
    vm: &Vm,
    open: impl Fn(HostId) -> bool,
    affinity: bool,
    fragmentation: f64,
) -> Option<Placement> {
    let catalog = fleet.catalog;
    let bit = affinity.then(|| kind_bit(vm.kind));
    let mut views: Vec<GpuView> = Vec::new();
    choose(fleet.hosts.len(), |h| {
        let host = &fleet.hosts[h];
        if !open(h) || host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            return None;
        }
        views.clear();
        views.extend(host.gpus.iter().map(|g| GpuView {
            model: g.model,
            mask: g.occ.mask,
            counts: g.occ.counts,
            mem: g.occ.used_slices(),
            comp: g.occ.used_compute(catalog.model(g.model)),
            // TC treats MIG GPUs only; whole and shared GPUs take no GI.
            allowed: g.mode == GpuMode::Mig,
            kinds: if bit.is_some() {
                g.gis
                    .iter()
                    .filter_map(|r| fleet.vm(r.vm))
                    .fold(0, |a, v| a | kind_bit(v.kind))
            } else {
                0
            },
        }));
        place_on_host_with(tables, catalog, vm, &views, bit, fragmentation)
    })
}

/// The compaction's working state: resources free before it and not yet taken by its moves,
/// utilization after its moves so far, and where the moved VMs are now. A trial to vacate one
/// GPU that fails is rolled back through a journal of what it changed (copying the whole state
/// for every GPU tried made a compaction of 128 hosts cost milliseconds).
#[derive(Debug, Clone)]
struct Work {
    /// Per host, per GPU: what the placement rule sees.
    views: Vec<Vec<GpuView>>,
    /// Per host, per GPU: the VMs with a GI there now (after the compaction's moves so far).
    vms: Vec<Vec<Vec<VmId>>>,
    /// Per host, per GPU: whether the GPU held a GI before the compaction.
    active_before: Vec<Vec<bool>>,
    /// Per host: the memory slices its GPUs held before the compaction.
    slices_before: Vec<u32>,
    cores: Vec<u32>,
    ram: Vec<u32>,
    moved: BTreeMap<VmId, Placement>,
    receivers: BTreeSet<(HostId, usize)>,
    journal: Vec<Undo>,
    /// Per host: whether it is one of the emptiest active hosts that an exact fill
    /// ([`Scope::exact_fill`]) may not send VMs to (set once per compaction).
    spared: Vec<bool>,
}

/// One change to [`Work`], with what it replaced.
#[derive(Debug, Clone)]
enum Undo {
    Gpu(HostId, usize, GpuView, Vec<VmId>),
    Host(HostId, u32, u32),
    Moved(VmId, Option<Placement>),
    Receiver(HostId, usize),
}

impl Work {
    fn new(fleet: &Fleet) -> Self {
        let catalog = fleet.catalog;
        let views = fleet
            .hosts
            .iter()
            .map(|h| {
                h.gpus
                    .iter()
                    .map(|g| GpuView {
                        model: g.model,
                        mask: g.occ.mask,
                        counts: g.occ.counts,
                        mem: g.occ.used_slices(),
                        comp: g.occ.used_compute(catalog.model(g.model)),
                        allowed: false,
                        kinds: 0,
                    })
                    .collect()
            })
            .collect();
        let vms = fleet
            .hosts
            .iter()
            .map(|h| {
                h.gpus
                    .iter()
                    .map(|g| {
                        let mut vms: Vec<VmId> = g.gis.iter().map(|r| r.vm).collect();
                        vms.sort_unstable();
                        vms.dedup();
                        vms
                    })
                    .collect()
            })
            .collect();
        Work {
            views,
            vms,
            active_before: fleet
                .hosts
                .iter()
                .map(|h| h.gpus.iter().map(|g| !g.occ.is_empty()).collect())
                .collect(),
            slices_before: fleet
                .hosts
                .iter()
                .map(|h| h.gpus.iter().map(|g| g.occ.used_slices()).sum())
                .collect(),
            cores: fleet.hosts.iter().map(|h| h.free_cores()).collect(),
            ram: fleet.hosts.iter().map(|h| h.free_ram()).collect(),
            moved: BTreeMap::new(),
            receivers: BTreeSet::new(),
            journal: Vec::new(),
            spared: vec![false; fleet.hosts.len()],
        }
    }

    fn where_is(&self, fleet: &Fleet, id: VmId) -> Option<Placement> {
        self.moved
            .get(&id)
            .cloned()
            .or_else(|| fleet.vm(id).and_then(|v| v.placement.clone()))
    }

    /// Records GPU `(h, k)` before it changes.
    fn save_gpu(&mut self, h: HostId, k: usize) {
        let old = Undo::Gpu(h, k, self.views[h][k], self.vms[h][k].clone());
        self.journal.push(old);
    }

    /// Forbids GPU `(h, k)` as a destination.
    fn forbid(&mut self, h: HostId, k: usize) {
        self.save_gpu(h, k);
        self.views[h][k].allowed = false;
    }

    /// Moves `vm` from `from` to `to` in the working state: the new slots, cores and RAM are
    /// taken; the old ones are not given back (only resources free before count).
    fn apply(&mut self, catalog: &Catalog, vm: &Vm, from: &Placement, to: &Placement) {
        for (req, slot) in vm.gis.iter().zip(&from.gis) {
            let prof = &catalog.model(req.model).profiles[req.profile];
            self.save_gpu(from.host, slot.gpu);
            let v = &mut self.views[from.host][slot.gpu];
            v.mem -= prof.size as u32;
            v.comp -= prof.compute as u32;
            self.vms[from.host][slot.gpu].retain(|&v| v != vm.id);
        }
        for (req, slot) in vm.gis.iter().zip(&to.gis) {
            let prof = &catalog.model(req.model).profiles[req.profile];
            self.save_gpu(to.host, slot.gpu);
            let v = &mut self.views[to.host][slot.gpu];
            v.mask |= prof.mask_at(slot.start);
            v.counts[req.profile] += 1;
            v.mem += prof.size as u32;
            v.comp += prof.compute as u32;
            let vms = &mut self.vms[to.host][slot.gpu];
            if !vms.contains(&vm.id) {
                vms.push(vm.id);
            }
            if self.receivers.insert((to.host, slot.gpu)) {
                self.journal.push(Undo::Receiver(to.host, slot.gpu));
            }
        }
        if to.host != from.host {
            let h = to.host;
            self.journal.push(Undo::Host(h, self.cores[h], self.ram[h]));
            self.cores[h] -= vm.cores;
            self.ram[h] -= vm.ram_gb;
        }
        let old = self.moved.insert(vm.id, to.clone());
        self.journal.push(Undo::Moved(vm.id, old));
    }

    /// Undoes every change recorded after `mark` (a journal length), newest first.
    fn rollback(&mut self, mark: usize) {
        while self.journal.len() > mark {
            match self.journal.pop() {
                Some(Undo::Gpu(h, k, view, vms)) => {
                    self.views[h][k] = view;
                    self.vms[h][k] = vms;
                }
                Some(Undo::Host(h, cores, ram)) => {
                    self.cores[h] = cores;
                    self.ram[h] = ram;
                }
                Some(Undo::Moved(id, old)) => match old {
                    Some(p) => {
                        self.moved.insert(id, p);
                    }
                    None => {
                        self.moved.remove(&id);
                    }
                },
                Some(Undo::Receiver(h, k)) => {
                    self.receivers.remove(&(h, k));
                }
                None => break,
            }
        }
    }

    /// Whether GPU `(h, k)` holds every VM of host `h` (and none has moved there), so vacating
    /// it across hosts switches the host off; false when its VMs must stay (`within_host`).
    fn only_vms_of(&self, fleet: &Fleet, h: HostId, k: usize, within_host: bool) -> bool {
        let others_empty = self.vms[h]
            .iter()
            .enumerate()
            .all(|(j, v)| j == k || v.is_empty());
        let host_vms = fleet.hosts.get(h).map_or(0, |x| x.vms.len());
        !within_host && others_empty && host_vms == self.vms[h][k].len()
    }

    /// VMs the compaction has sent to another host so far.
    fn across_moves(&self, fleet: &Fleet) -> usize {
        self.moved
            .iter()
            .filter(|(&id, to)| {
                fleet
                    .vm(id)
                    .and_then(|v| v.placement.as_ref())
                    .is_some_and(|p| p.host != to.host)
            })
            .count()
    }

    /// GPUs active before the compaction and empty now.
    fn vacated(&self) -> usize {
        self.active_before
            .iter()
            .flatten()
            .zip(self.vms.iter().flatten())
            .filter(|(&before, vms)| before && vms.is_empty())
            .count()
    }
}

/// Which GPUs a compaction examines and where their VMs may go ([`compaction_in`]).
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    /// The hosts whose GPUs take part: vacated or receiving.
    pub hosts: &'a dyn Fn(HostId) -> bool,
    /// Whether VMs stay on their hosts (only their GIs move to the host's other GPUs) and no idle
    /// GPU is added, except that a GPU holding at most `across_max_vms` VMs may send them to
    /// other hosts of the scope.
    pub within_host: bool,
    /// With `within_host`: the most VMs a GPU may hold to be vacated across hosts (0: none).
    pub across_max_vms: usize,
    /// With `within_host`: the most VMs a GPU may hold to be vacated across hosts when one of
    /// them is a tenant (`kind = "tenant"`, §6.2: 24 h on average against a job's 2 h, so the
    /// GPU would stay busy far longer without the moves); the larger of this and
    /// `across_max_vms` applies to such a GPU.
    pub across_max_vms_tenant: usize,
    /// With `within_host`: a VM sent across hosts goes only to a host that held more memory
    /// slices than its own before the compaction (ties: the lower host index), so that moves
    /// across hosts go the way a consolidation goes.
    pub toward_fuller: bool,
    /// With `within_host`: the most VMs one compaction sends across hosts (0: no limit). GPUs
    /// are tried least utilized first as always; one whose VMs would exceed it stays.
    pub across_budget: usize,
    /// The most VMs one compaction moves in all, within and across hosts (`None`: no limit).
    /// GPUs are tried in order as always; one whose VMs would exceed it stays.
    pub move_budget: Option<usize>,
    /// GPUs holding the fewest VMs are tried first, then the least utilized (TC's order).
    pub fewest_vms_first: bool,
    /// With `within_host`: when some GPU could not be vacated, each active host of the scope
    /// with an idle GPU in turn lends it as a receiver, and the further moves are kept only if
    /// they vacate at least two more GPUs (TC's step, one host at a time).
    pub idle_gpus: bool,
    /// With `within_host`: only GPUs whose vacating empties their host are tried (the host's
    /// one GPU holding VMs, none of them kept there, at most `across_max_vms` VMs), so every
    /// move switches a host off.
    pub emptying_host_only: bool,
    /// With `toward_fuller`: `Some(k)` also lets a VM sent across hosts go to a host that is not
    /// fuller when every GPU its GIs land on is left with no free memory slice (an exact fill),
    /// except to the `k` active hosts of the scope holding the fewest memory slices (the next
    /// to be switched off). `None`: only fuller hosts.
    pub exact_fill: Option<usize>,
    /// Where a VM goes among the GPUs that take it: each GI's GPU scores its joint utilization
    /// after the GI less this weight times the rise of its expected fragmentation
    /// ([`Tables::fragmentation`]), and a host's score is lowered by the weight times the rises
    /// summed over the VM's GIs, as at an arrival with `arrival_fragmentation`. 0: TC's best fit.
    pub fragmentation: f64,
}

impl Scope<'_> {
    /// Whether the VMs `vms` of one GPU may be sent across hosts.
    fn may_cross(&self, fleet: &Fleet, vms: &[VmId]) -> bool {
        if !self.within_host {
            return true;
        }
        if vms.len() <= self.across_max_vms {
            return true;
        }
        let tenant = vms.iter().any(|&id| {
            fleet
                .vm(id)
                .is_some_and(|v| v.kind == crate::fleet::VmKind::Tenant)
        });
        tenant && vms.len() <= self.across_max_vms_tenant
    }
}

/// TC's own scope: every host, VMs may change host.
const FLEET: Scope<'static> = Scope {
    hosts: &|_| true,
    within_host: false,
    across_max_vms: 0,
    across_max_vms_tenant: 0,
    toward_fuller: false,
    across_budget: 0,
    move_budget: None,
    fewest_vms_first: false,
    idle_gpus: false,
    emptying_host_only: false,
    exact_fill: None,
    fragmentation: 0.0,
};

/// Which hosts a compaction may send a VM to.
#[derive(Debug, Clone, Copy)]
struct Destinations {
    /// Only the VM's own host.
    within_host: bool,
    /// Another host only when it held more memory slices ([`Scope::toward_fuller`]).
    toward_fuller: bool,
    /// With `toward_fuller`, a host that did not also takes the VM as an exact fill
    /// ([`Scope::exact_fill`]).
    exact_fill: bool,
    /// The weight of the rise of expected fragmentation in the choice ([`Scope::fragmentation`]).
    fragmentation: f64,
}

/// Any active host (TC's own compaction and the host emptying).
const ANY_HOST: Destinations = Destinations {
    within_host: false,
    toward_fuller: false,
    exact_fill: false,
    fragmentation: 0.0,
};

/// Where `vm` (now at `from`) goes by TC's rule within the compaction's resources, on the hosts
/// `to` allows.
fn compaction_target(
    tables: &Tables,
    fleet: &Fleet,
    work: &Work,
    vm: &Vm,
    from: &Placement,
    to: Destinations,
) -> Option<Placement> {
    let Destinations {
        within_host,
        toward_fuller,
        exact_fill,
        fragmentation,
    } = to;
    let catalog = fleet.catalog;
    let fuller = |h: HostId| {
        let (a, b) = (work.slices_before[h], work.slices_before[from.host]);
        a > b || (a == b && h < from.host)
    };
    choose(work.views.len(), |h| {
        if within_host && h != from.host {
            return None;
        }
        let emptier = toward_fuller && h != from.host && !fuller(h);
        if emptier && (!exact_fill || work.spared[h]) {
            return None;
        }
        if h != from.host && (work.cores[h] < vm.cores || work.ram[h] < vm.ram_gb) {
            return None;
        }
        let views = &work.views[h];
        if !may_fit(catalog, vm, views) {
            return None;
        }
        let placed = place_on_host_with(tables, catalog, vm, views, None, fragmentation)?;
        if emptier && !fills_exactly(catalog, vm, views, &placed.1) {
            return None;
        }
        Some(placed)
    })
}

/// Whether the GIs of `vm` at `slots` leave every GPU they land on with all its memory slices in
/// use (`views` as before the VM).
fn fills_exactly(catalog: &Catalog, vm: &Vm, views: &[GpuView], slots: &[GiSlot]) -> bool {
    slots.iter().all(|slot| {
        let added: u32 = vm
            .gis
            .iter()
            .zip(slots)
            .filter(|(_, s)| s.gpu == slot.gpu)
            .map(|(req, _)| catalog.model(req.model).profiles[req.profile].size as u32)
            .sum();
        let v = &views[slot.gpu];
        v.mem + added == catalog.model(v.model).memory_slices as u32
    })
}

/// The order in which a compaction or a host emptying moves VMs: the largest first (memory
/// slices), then by id.
fn largest_first(fleet: &Fleet, vms: &mut [VmId]) {
    vms.sort_by_key(|&id| {
        let s = fleet.vm(id).map(|v| v.memory_slices(fleet.catalog)).unwrap_or(0);
        (std::cmp::Reverse(s), id)
    });
}

/// One pass over `order`: vacates each GPU whose VMs all fit elsewhere. Returns whether some
/// GPU could not be vacated.
fn pass(tables: &Tables, fleet: &Fleet, work: &mut Work, order: &[(HostId, usize)], scope: Scope) -> bool {
    let catalog = fleet.catalog;
    let mut failed = false;
    for &(h, k) in order {
        if work.receivers.contains(&(h, k)) {
            continue;
        }
        let mut vms = work.vms[h][k].clone();
        if vms.is_empty() {
            continue;
        }
        if vms.iter().any(|v| work.moved.contains_key(v)) {
            failed = true;
            continue;
        }
        largest_first(fleet, &mut vms);
        let within_host = !scope.may_cross(fleet, &vms);
        if scope.within_host && scope.emptying_host_only && !work.only_vms_of(fleet, h, k, within_host) {
            continue;
        }
        let mark = work.journal.len();
        work.forbid(h, k);
        let mut ok = true;
        for id in vms {
            let (Some(vm), Some(from)) = (fleet.vm(id), work.where_is(fleet, id)) else {
                ok = false;
                break;
            };
            let to = Destinations {
                within_host,
                toward_fuller: scope.toward_fuller,
                exact_fill: scope.exact_fill.is_some(),
                fragmentation: scope.fragmentation,
            };
            match compaction_target(tables, fleet, work, vm, &from, to) {
                Some(to) => work.apply(catalog, vm, &from, &to),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok && scope.within_host && scope.across_budget > 0 {
            ok = work.across_moves(fleet) <= scope.across_budget;
        }
        if ok && scope.move_budget.is_some_and(|b| work.moved.len() > b) {
            ok = false;
        }
        if ok {
            // A vacated GPU receives nothing more (it stays forbidden).
            work.journal.clear();
        } else {
            work.rollback(mark);
            failed = true;
        }
    }
    failed
}

/// The moves of one compaction of the GPUs of `class` (a representative model), added to
/// `targets`.
fn compact_class(
    tables: &Tables,
    fleet: &Fleet,
    class_model: ModelId,
    targets: &mut BTreeMap<VmId, Placement>,
    scope: Scope,
) {
    let catalog = fleet.catalog;
    let mut work = Work::new(fleet);
    if let Some(k) = scope.exact_fill {
        let mut active: Vec<(u32, HostId)> = (0..fleet.hosts.len())
            .filter(|&h| (scope.hosts)(h) && fleet.hosts[h].is_active())
            .map(|h| (work.slices_before[h], h))
            .collect();
        active.sort_unstable();
        for &(_, h) in active.iter().take(k) {
            work.spared[h] = true;
        }
    }
    let mut order: Vec<(f64, HostId, usize)> = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        if !(scope.hosts)(h) {
            continue;
        }
        for (k, g) in host.gpus.iter().enumerate() {
            if !catalog.same_class(g.model, class_model) || g.occ.is_empty() {
                continue;
            }
            work.views[h][k].allowed = true;
            let u = joint_util(catalog, &work.views[h][k]);
            // Joint utilization is at most 1: ten per VM sorts by VMs first.
            let vms = if scope.fewest_vms_first {
                10.0 * work.vms[h][k].len() as f64
            } else {
                0.0
            };
            order.push((vms + u, h, k));
        }
    }
    // Least utilized first; ties by host and GPU.
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let order: Vec<(HostId, usize)> = order.into_iter().map(|(_, h, k)| (h, k)).collect();
    if order.len() < 2 {
        return;
    }
    let failed = pass(tables, fleet, &mut work, &order, scope);
    if failed && !scope.within_host {
        // Add one idle GPU, from an active host if one has an idle GPU.
        let idle = |want_active: bool| {
            fleet.hosts.iter().enumerate().find_map(|(h, host)| {
                if host.is_active() != want_active || !(scope.hosts)(h) {
                    return None;
                }
                idle_gpu(catalog, host, class_model).map(|k| (h, k))
            })
        };
        if let Some((h, k)) = idle(true).or_else(|| idle(false)) {
            lend_idle_gpu(tables, fleet, &mut work, &order, scope, (h, k));
        }
    }
    if failed && scope.within_host && scope.idle_gpus {
        for (h, host) in fleet.hosts.iter().enumerate() {
            if !host.is_active() || !(scope.hosts)(h) {
                continue;
            }
            if let Some(k) = idle_gpu(catalog, host, class_model) {
                lend_idle_gpu(tables, fleet, &mut work, &order, scope, (h, k));
            }
        }
    }
    for (id, p) in work.moved {
        targets.insert(id, p);
    }
}

/// The first idle MIG GPU of `class_model`'s class on `host`.
fn idle_gpu(catalog: &Catalog, host: &crate::fleet::Host, class_model: ModelId) -> Option<usize> {
    host.gpus
        .iter()
        .position(|g| g.mode == GpuMode::Mig && catalog.same_class(g.model, class_model) && g.occ.is_empty())
}

/// TC's step with an idle GPU: GPU `(h, k)` joins the receivers for a further pass over
/// `order`, whose moves are kept only if they vacate at least two more GPUs.
fn lend_idle_gpu(
    tables: &Tables,
    fleet: &Fleet,
    work: &mut Work,
    order: &[(HostId, usize)],
    scope: Scope,
    (h, k): (HostId, usize),
) {
    let before = work.vacated();
    let mut more = work.clone();
    more.views[h][k].allowed = true;
    pass(tables, fleet, &mut more, order, scope);
    if more.vacated() >= before + 2 {
        *work = more;
    }
}

/// Host emptying: every active host of `hosts` that runs at most `max_vms` VMs, all of them
/// MIG VMs, is tried least used first (memory slices, then host index); it is emptied when each
/// of its VMs fits, by TC's best fit, on GPUs in use on the scope's other hosts (no idle GPU is
/// taken, no host is switched on), with at most `budget` VMs moved in all (0: no limit). A host
/// that receives a VM is not emptied after it. Every move of the plan switches a host off.
pub(crate) fn empty_hosts_in(
    tables: &Tables,
    fleet: &Fleet,
    hosts: &dyn Fn(HostId) -> bool,
    max_vms: usize,
    budget: usize,
    origin: &str,
) -> Plan {
    let catalog = fleet.catalog;
    let mut work = Work::new(fleet);
    let mut order: Vec<(u32, HostId)> = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        if !hosts(h) || !host.is_active() {
            continue;
        }
        for (k, g) in host.gpus.iter().enumerate() {
            if g.mode == GpuMode::Mig && !g.occ.is_empty() {
                work.views[h][k].allowed = true;
            }
        }
        let n = host.vms.len();
        let all_mig = host
            .vms
            .iter()
            .all(|&id| fleet.vm(id).is_some_and(|v| v.is_mig()));
        if n > 0 && n <= max_vms && all_mig {
            order.push((work.slices_before[h], h));
        }
    }
    order.sort_unstable();
    let mut moved = 0usize;
    for (_, h) in order {
        let Some(host) = fleet.hosts.get(h) else { continue };
        if (0..host.gpus.len()).any(|k| work.receivers.contains(&(h, k))) {
            continue;
        }
        if budget > 0 && moved + host.vms.len() > budget {
            continue;
        }
        let mark = work.journal.len();
        for k in 0..host.gpus.len() {
            work.forbid(h, k);
        }
        let mut vms: Vec<VmId> = host.vms.clone();
        largest_first(fleet, &mut vms);
        let mut ok = true;
        for &id in &vms {
            let (Some(vm), Some(from)) = (fleet.vm(id), work.where_is(fleet, id)) else {
                ok = false;
                break;
            };
            match compaction_target(tables, fleet, &work, vm, &from, ANY_HOST) {
                Some(to) if to.host != h => work.apply(catalog, vm, &from, &to),
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            moved += vms.len();
            work.journal.clear();
        } else {
            work.rollback(mark);
        }
    }
    Plan {
        targets: work.moved,
        origin: origin.into(),
        ..Default::default()
    }
}

/// Seconds the executor takes for the moves of `plan` on `fleet`, run one after another
/// (§5.4), each as long as [`executor::copy_seconds`] of what it copies ([`executor::copied_gb`]).
pub fn moves_duration_s(fleet: &Fleet, plan: &Plan, gbps: f64) -> f64 {
    plan.targets
        .iter()
        .filter_map(|(&id, to)| {
            let from = fleet.vm(id)?.placement.as_ref()?.host;
            Some(executor::copy_seconds(
                executor::copied_gb(fleet, id, from, to.host),
                gbps,
            ))
        })
        .sum()
}

/// The TC policy.
#[derive(Debug, Clone)]
pub struct Tc {
    tables: Lazy,
    period_s: f64,
    gbps: f64,
    next_compaction: Option<f64>,
    /// The hosts of the last compaction and the time its moves end: no request is placed on
    /// them before then (§6.3).
    busy: BTreeSet<HostId>,
    busy_until: f64,
}

impl Tc {
    /// TC with its compactions every `settings.compaction_min`, their moves timed at `gbps`
    /// Gbit/s (`[policy] migration_gbps`).
    pub fn new(settings: &TcSettings, gbps: f64) -> Self {
        Tc {
            tables: Lazy::default(),
            period_s: settings.compaction_min * 60.0,
            gbps,
            next_compaction: None,
            busy: BTreeSet::new(),
            busy_until: f64::NEG_INFINITY,
        }
    }

    /// Whether `host` takes part in a compaction whose moves have not ended at `now_s`.
    pub fn is_busy(&self, host: HostId, now_s: f64) -> bool {
        now_s < self.busy_until && self.busy.contains(&host)
    }

    /// The plan of one compaction of every class now (empty targets when nothing moves).
    pub fn compaction(&mut self, fleet: &Fleet) -> Plan {
        let tables = self.tables.get(fleet.catalog);
        compaction_in(&tables, fleet, FLEET, "tc compaction")
    }
}

/// One compaction of every class, TC's rule, on the GPUs of `scope`'s hosts (OrigaMIG's
/// `gpu_compaction` uses it within hosts; TC's own compaction is the whole fleet).
pub(crate) fn compaction_in(tables: &Tables, fleet: &Fleet, scope: Scope, origin: &str) -> Plan {
    let catalog = fleet.catalog;
    let mut classes: Vec<ModelId> = Vec::new();
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        if !classes.iter().any(|&c| catalog.same_class(c, g.model)) {
            classes.push(g.model);
        }
    }
    classes.sort_unstable();
    let mut targets = BTreeMap::new();
    for c in classes {
        compact_class(tables, fleet, c, &mut targets, scope);
    }
    Plan {
        targets,
        origin: origin.into(),
        ..Default::default()
    }
}

impl Policy for Tc {
    fn name(&self) -> &str {
        "tc"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, now_s: f64) -> Option<Placement> {
        if !vm.is_mig() {
            // Shares and gangs: first fit (TC scores MIG placements only).
            return fleet.ff_placement_where(vm, |h| !self.is_busy(h, now_s));
        }
        let tables = self.tables.get(fleet.catalog);
        placement(&tables, fleet, vm, |h| !self.is_busy(h, now_s))
    }

    fn on_step(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        if self.period_s.is_nan() || self.period_s <= 0.0 {
            return None;
        }
        let next = *self
            .next_compaction
            .get_or_insert(((now_s / self.period_s).floor() + 1.0) * self.period_s);
        if now_s + 1e-9 < next {
            return None;
        }
        let mut n = next;
        while n <= now_s + 1e-9 {
            n += self.period_s;
        }
        self.next_compaction = Some(n);
        let plan = self.compaction(fleet);
        if plan.targets.is_empty() {
            return None;
        }
        // §6.3: no request is placed on the hosts of a compaction until its moves end.
        self.busy = plan.hosts(fleet);
        self.busy_until = now_s + moves_duration_s(fleet, &plan, self.gbps);
        Some(plan)
    }
}
