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
use crate::fleet::{Fleet, GiSlot, HostId, Placement, Vm, VmId};
use crate::mig::Occupancy;
use crate::plan::Plan;
use crate::scenario::PolicySettings;
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
}

fn joint_util(catalog: &Catalog, g: &GpuView) -> f64 {
    let m = catalog.model(g.model);
    (g.mem + g.comp) as f64 / (m.memory_slices as u32 + m.compute_slices as u32) as f64
}

/// TC's placement of `vm` on one host's GPUs: the score (mean joint utilization after the
/// assignment of the GPUs the VM uses) and the slots, if every GI fits.
fn place_on_host(
    tables: &Tables,
    catalog: &Catalog,
    vm: &Vm,
    gpus: &[GpuView],
) -> Option<(f64, Vec<GiSlot>)> {
    let mut g = gpus.to_vec();
    let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
    let mut used: Vec<usize> = Vec::new();
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
            let u = joint_util(catalog, &after);
            if best.is_none_or(|(b, _, _)| u > b) {
                best = Some((u, k, z));
            }
        }
        let (_, k, z) = best?;
        let v = &mut g[k];
        v.mask |= prof.mask_at(z);
        v.counts[req.profile] += 1;
        v.mem += prof.size as u32;
        v.comp += prof.compute as u32;
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
    Some((score, slots))
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

/// TC's placement of a new VM on the fleet as it is.
pub fn placement(tables: &Tables, fleet: &Fleet, vm: &Vm) -> Option<Placement> {
    let catalog = fleet.catalog;
    let mut views: Vec<GpuView> = Vec::new();
    choose(fleet.hosts.len(), |h| {
        let host = &fleet.hosts[h];
        if host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            return None;
        }
        views.clear();
        views.extend(host.gpus.iter().map(|g| GpuView {
            model: g.model,
            mask: g.occ.mask,
            counts: g.occ.counts,
            mem: g.occ.used_slices(),
            comp: g.occ.used_compute(catalog.model(g.model)),
            allowed: true,
        }));
        place_on_host(tables, catalog, vm, &views)
    })
}

/// One GPU during a compaction.
#[derive(Debug, Clone)]
struct WorkGpu {
    view: GpuView,
    /// VMs with a GI here now (after the compaction's moves so far).
    vms: Vec<VmId>,
    active_before: bool,
}

/// The compaction's working state: resources free before it and not yet taken by its moves,
/// utilization after its moves so far, and where the moved VMs are now.
#[derive(Debug, Clone)]
struct Work {
    gpus: Vec<Vec<WorkGpu>>,
    cores: Vec<u32>,
    ram: Vec<u32>,
    moved: BTreeMap<VmId, Placement>,
    receivers: BTreeSet<(HostId, usize)>,
}

impl Work {
    fn new(fleet: &Fleet) -> Self {
        let catalog = fleet.catalog;
        let gpus = fleet
            .hosts
            .iter()
            .map(|h| {
                h.gpus
                    .iter()
                    .map(|g| {
                        let mut vms: Vec<VmId> = g.gis.iter().map(|r| r.vm).collect();
                        vms.sort_unstable();
                        vms.dedup();
                        WorkGpu {
                            view: GpuView {
                                model: g.model,
                                mask: g.occ.mask,
                                counts: g.occ.counts,
                                mem: g.occ.used_slices(),
                                comp: g.occ.used_compute(catalog.model(g.model)),
                                allowed: false,
                            },
                            vms,
                            active_before: !g.occ.is_empty(),
                        }
                    })
                    .collect()
            })
            .collect();
        Work {
            gpus,
            cores: fleet.hosts.iter().map(|h| h.free_cores()).collect(),
            ram: fleet.hosts.iter().map(|h| h.free_ram()).collect(),
            moved: BTreeMap::new(),
            receivers: BTreeSet::new(),
        }
    }

    fn where_is(&self, fleet: &Fleet, id: VmId) -> Option<Placement> {
        self.moved
            .get(&id)
            .cloned()
            .or_else(|| fleet.vm(id).and_then(|v| v.placement.clone()))
    }

    /// Moves `vm` from `from` to `to` in the working state: the new slots, cores and RAM are
    /// taken; the old ones are not given back (only resources free before count).
    fn apply(&mut self, catalog: &Catalog, vm: &Vm, from: &Placement, to: &Placement) {
        for (req, slot) in vm.gis.iter().zip(&from.gis) {
            let prof = &catalog.model(req.model).profiles[req.profile];
            let g = &mut self.gpus[from.host][slot.gpu];
            g.view.mem -= prof.size as u32;
            g.view.comp -= prof.compute as u32;
            g.vms.retain(|&v| v != vm.id);
        }
        for (req, slot) in vm.gis.iter().zip(&to.gis) {
            let prof = &catalog.model(req.model).profiles[req.profile];
            let g = &mut self.gpus[to.host][slot.gpu];
            g.view.mask |= prof.mask_at(slot.start);
            g.view.counts[req.profile] += 1;
            g.view.mem += prof.size as u32;
            g.view.comp += prof.compute as u32;
            if !g.vms.contains(&vm.id) {
                g.vms.push(vm.id);
            }
            self.receivers.insert((to.host, slot.gpu));
        }
        if to.host != from.host {
            self.cores[to.host] -= vm.cores;
            self.ram[to.host] -= vm.ram_gb;
        }
        self.moved.insert(vm.id, to.clone());
    }

    /// GPUs active before the compaction and empty now.
    fn vacated(&self) -> usize {
        self.gpus
            .iter()
            .flatten()
            .filter(|g| g.active_before && g.vms.is_empty())
            .count()
    }
}

/// Where `vm` (now at `from`) goes by TC's rule within the compaction's resources.
fn compaction_target(
    tables: &Tables,
    fleet: &Fleet,
    work: &Work,
    vm: &Vm,
    from: &Placement,
) -> Option<Placement> {
    let catalog = fleet.catalog;
    choose(work.gpus.len(), |h| {
        if h != from.host && (work.cores[h] < vm.cores || work.ram[h] < vm.ram_gb) {
            return None;
        }
        let views: Vec<GpuView> = work.gpus[h].iter().map(|g| g.view).collect();
        place_on_host(tables, catalog, vm, &views)
    })
}

/// One pass over `order`: vacates each GPU whose VMs all fit elsewhere. Returns whether some
/// GPU could not be vacated.
fn pass(tables: &Tables, fleet: &Fleet, work: &mut Work, order: &[(HostId, usize)]) -> bool {
    let catalog = fleet.catalog;
    let mut failed = false;
    for &(h, k) in order {
        if work.receivers.contains(&(h, k)) {
            continue;
        }
        let mut vms = work.gpus[h][k].vms.clone();
        if vms.is_empty() {
            continue;
        }
        if vms.iter().any(|v| work.moved.contains_key(v)) {
            failed = true;
            continue;
        }
        // Largest VM first (memory slices), then by id.
        vms.sort_by_key(|&id| {
            let s = fleet.vm(id).map(|v| v.memory_slices(catalog)).unwrap_or(0);
            (std::cmp::Reverse(s), id)
        });
        let saved = work.clone();
        work.gpus[h][k].view.allowed = false;
        let mut ok = true;
        for id in vms {
            let (Some(vm), Some(from)) = (fleet.vm(id), work.where_is(fleet, id)) else {
                ok = false;
                break;
            };
            match compaction_target(tables, fleet, work, vm, &from) {
                Some(to) => work.apply(catalog, vm, &from, &to),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            // A vacated GPU receives nothing more.
            work.gpus[h][k].view.allowed = false;
        } else {
            *work = saved;
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
) {
    let catalog = fleet.catalog;
    let mut work = Work::new(fleet);
    let mut order: Vec<(f64, HostId, usize)> = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        for (k, g) in host.gpus.iter().enumerate() {
            if !catalog.same_class(g.model, class_model) || g.occ.is_empty() {
                continue;
            }
            work.gpus[h][k].view.allowed = true;
            order.push((joint_util(catalog, &work.gpus[h][k].view), h, k));
        }
    }
    // Least utilized first; ties by host and GPU.
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let order: Vec<(HostId, usize)> = order.into_iter().map(|(_, h, k)| (h, k)).collect();
    if order.len() < 2 {
        return;
    }
    let failed = pass(tables, fleet, &mut work, &order);
    if failed {
        // Add one idle GPU, from an active host if one has an idle GPU.
        let idle = |want_active: bool| {
            fleet.hosts.iter().enumerate().find_map(|(h, host)| {
                if host.is_active() != want_active {
                    return None;
                }
                host.gpus
                    .iter()
                    .position(|g| catalog.same_class(g.model, class_model) && g.occ.is_empty())
                    .map(|k| (h, k))
            })
        };
        if let Some((h, k)) = idle(true).or_else(|| idle(false)) {
            let before = work.vacated();
            let mut more = work.clone();
            more.gpus[h][k].view.allowed = true;
            pass(tables, fleet, &mut more, &order);
            if more.vacated() >= before + 2 {
                work = more;
            }
        }
    }
    for (id, p) in work.moved {
        targets.insert(id, p);
    }
}

/// The TC policy.
#[derive(Debug, Clone)]
pub struct Tc {
    tables: Lazy,
    period_s: f64,
    next_compaction: Option<f64>,
}

impl Tc {
    pub fn new(settings: &PolicySettings) -> Self {
        Tc {
            tables: Lazy::default(),
            period_s: settings.compaction_min * 60.0,
            next_compaction: None,
        }
    }

    /// The plan of one compaction of every class now (empty targets when nothing moves).
    pub fn compaction(&mut self, fleet: &Fleet) -> Plan {
        let tables = self.tables.get(fleet.catalog);
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
            compact_class(&tables, fleet, c, &mut targets);
        }
        Plan {
            targets,
            origin: "tc compaction".into(),
        }
    }
}

impl Policy for Tc {
    fn name(&self) -> &str {
        "tc"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) -> Option<Placement> {
        let tables = self.tables.get(fleet.catalog);
        placement(&tables, fleet, vm)
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
        (!plan.targets.is_empty()).then_some(plan)
    }
}
