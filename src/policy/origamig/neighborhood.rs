//! Neighborhood selection of OrigaMIG: Algorithm 1 of the paper (§5.2).
//!
//! A call selects at most `m_max` hosts M̂; N̂ holds the VMs running on M̂ and the pending VMs of
//! the call. A host whose VMs would raise |N̂| above `n_max` is skipped, except the first host
//! selected for the oldest pending VM, so every admission call decides that VM.
//!
//! The "fit" test of §5.2 ignores start slices: a host's free resources fit a VM when it has the
//! VM's cores and RAM free and each GI, largest first, fits some GPU of its class with enough
//! free memory and compute slices (each GI reserves what it takes).
//!
//! Readings of the pseudo-code (the paper leaves these open):
//! - Lines 4 and 8 consider active hosts; a switched-off host joins only through line 14. A
//!   pending VM is rejected at line 12 only when no host of the fleet, on or off, could take it
//!   even empty (it never could be admitted); one that only a switched-off host can take waits
//!   (or, when it is the oldest, gets that host through line 14).
//! - "by free memory slices" sorts by the free memory slices of the GPUs of the VM's class,
//!   most first; line 13 fills with active hosts that have a GPU of a class of the call's pending
//!   VMs, most free slices of those classes first, then most free cores, then lowest id.
//! - One slot of M̂ is kept for the switched-off host of line 14 when there is one.
//! - A pending VM counts in |N̂| when its first host joins M̂ (line 15).
//! - Consolidation: R is ordered like line 13 (most free slices of class h first). Line 20
//!   fills M̂ with S, then R; M̂ is S plus the receivers it took. A call whose S ends empty is
//!   not made (it could not switch a host off).
//! - Lines 21-22 as written: while the sources cannot be emptied together into the receivers of
//!   M̂ (with the fit test, sources in order), the last source is removed from S, and from M̂
//!   with it (M̂ is not filled again). The test is on S as a whole, as the call "tries to empty"
//!   S, and removing the last source can only help it. This reading reproduces the pattern of
//!   the paper's Table 10 (§6.6): with δ = 5 lightly loaded sources pass line 18, few hosts
//!   are left for R, and the calls are smaller and faster than with δ = 10 for about as many
//!   moves. An earlier reading kept each removed source in M̂ as a receiver; its calls stayed
//!   large at δ = 5, made more moves there than at δ = 10 and more than the paper's at δ = 10
//!   (docs/results/table8.md and docs/results/gap-to-opt.md for the measured comparison). The setting `keep_removed_sources` selects it: each
//!   source that can be emptied jointly with those kept before it stays a source, the others
//!   stay in M̂ as receivers. It is the default, with δ = 15; `preset = "paper"` selects the
//!   reading as written (docs/results/origamig-default.md).
//! - One case Algorithm 1 leaves without a call: when every active host of the class is a
//!   source, R is empty and lines 21-22 remove every source. There (small fleets), a removed
//!   source stays in M̂ as a receiver, so the sources can still be emptied into each other.
//! - A candidate source whose VMs fit into no other active host of the class (R plus the other
//!   candidates, with the fit test) is dropped before line 20 keeps ½Mmax sources. S is ordered
//!   fewest VMs first, and such a host is common: one VM holding a whole-GPU 7g.40gb GI beside
//!   another GI needs a free GPU that no receiver has. Left at the head of S, it would make lines
//!   21-22 remove every source and the call would do nothing; without this step, consolidation
//!   on `scenarios/paper-32.toml` at load 0.75 never changed the fleet.
//! - Beyond Algorithm 1: with `merge_hosts` = k (the default 4), a consolidation call whose S
//!   ends empty takes instead the k least-loaded active hosts of the class, each a source and a
//!   receiver ([`merge_in`]); with `neighborhood_vms` (§7) a call is bounded by its VMs instead
//!   of its hosts. `preset = "paper"` sets both off (docs/policies.md).

use super::hostset::HostSet;
use super::objective::Weights;
use super::triggers::{CallKind, Class};
use crate::catalog::ModelId;
use crate::fleet::{Fleet, Host, HostId, Vm, VmId};
use crate::mig;
use crate::policy_settings::OrigamigSettings;
use std::collections::BTreeSet;

/// What a call may use: the hosts of its partition ([`HostSet`]) and the
/// pending VMs it decides. One OrigaMIG instance over the whole fleet has every host and Q.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub hosts: &'a HostSet,
    /// The pending VMs of the call's admission, oldest first (a subset of Q).
    pub pending: &'a [VmId],
}

/// The hosts and VMs of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighborhood {
    pub kind: CallKind,
    /// M̂, in the order selected.
    pub hosts: Vec<HostId>,
    /// The pending VMs of N̂, oldest first.
    pub pending: Vec<VmId>,
    /// Pending VMs that no host of the fleet could take even empty (Algorithm 1, line 12).
    pub rejected: Vec<VmId>,
    /// Consolidation: the sources S the call tries to empty.
    pub sources: Vec<HostId>,
    /// |N̂|: VMs running on M̂ plus the pending VMs of the call.
    pub n_vms: usize,
    /// Whether this is a merge neighborhood ([`merge_in`]) rather than Algorithm 1's or OPT's.
    pub merge: bool,
}

impl Neighborhood {
    /// A consolidation call of `class` with nothing to decide.
    fn nothing_to_consolidate(class: &Class) -> Self {
        Neighborhood {
            kind: CallKind::Consolidation(class.clone()),
            hosts: Vec::new(),
            pending: Vec::new(),
            rejected: Vec::new(),
            sources: Vec::new(),
            n_vms: 0,
            merge: false,
        }
    }

    /// Whether the call has nothing to decide.
    pub fn is_empty(&self) -> bool {
        self.n_vms == 0
    }
}

/// Free resources of a host for the fit test: cores, RAM and, per GPU, its model with free
/// memory and compute slices.
#[derive(Debug, Clone)]
struct Free {
    cores: u32,
    ram: u32,
    gpus: Vec<(ModelId, u32, u32)>,
}

impl Free {
    fn of(fleet: &Fleet, host: &Host) -> Free {
        Free {
            cores: host.free_cores(),
            ram: host.free_ram(),
            gpus: host
                .gpus
                .iter()
                .map(|g| {
                    let m = fleet.catalog.model(g.model);
                    (
                        g.model,
                        m.memory_slices as u32 - g.occ.used_slices(),
                        m.compute_slices as u32 - g.occ.used_compute(m),
                    )
                })
                .collect(),
        }
    }

    fn empty(fleet: &Fleet, host: &Host) -> Free {
        Free {
            cores: host.cores,
            ram: host.ram_gb,
            gpus: host
                .gpus
                .iter()
                .map(|g| {
                    let m = fleet.catalog.model(g.model);
                    (g.model, m.memory_slices as u32, m.compute_slices as u32)
                })
                .collect(),
        }
    }

    /// The fit test of §5.2; on success the VM's resources are reserved.
    fn take(&mut self, fleet: &Fleet, vm: &Vm) -> bool {
        if self.cores < vm.cores || self.ram < vm.ram_gb {
            return false;
        }
        let c = fleet.catalog;
        let mut trial = self.gpus.clone();
        for i in vm.gis_largest_first(c) {
            let req = vm.gis[i];
            let prof = &c.model(req.model).profiles[req.profile];
            let (size, compute) = (prof.size as u32, prof.compute as u32);
            let Some(g) = trial
                .iter_mut()
                .find(|g| c.same_class(req.model, g.0) && g.1 >= size && g.2 >= compute)
            else {
                return false;
            };
            g.1 -= size;
            g.2 -= compute;
        }
        self.gpus = trial;
        self.cores -= vm.cores;
        self.ram -= vm.ram_gb;
        true
    }

    fn fits(&self, fleet: &Fleet, vm: &Vm) -> bool {
        self.clone().take(fleet, vm)
    }
}

/// OrigaMIG treats hosts whose GPUs are all in MIG mode (docs/model.md, "GPU modes"): a host
/// with a whole or shared GPU joins no neighborhood, so no call moves anything on it.
fn all_mig(host: &Host) -> bool {
    host.gpus.iter().all(|g| g.mode == crate::fleet::GpuMode::Mig)
}

/// The fit test of §5.2 on a host's free resources now.
pub(crate) fn fits_free(fleet: &Fleet, host: &Host, vm: &Vm) -> bool {
    Free::of(fleet, host).fits(fleet, vm)
}

/// The fit test of §5.2 on a host as if it were empty.
pub(crate) fn fits_empty(fleet: &Fleet, host: &Host, vm: &Vm) -> bool {
    Free::empty(fleet, host).fits(fleet, vm)
}

/// Free memory slices of a host on GPUs of the given classes (all GPUs when `classes` is empty).
fn free_slices(fleet: &Fleet, host: &Host, classes: &BTreeSet<Class>) -> u32 {
    host.gpus
        .iter()
        .filter(|g| {
            classes.is_empty() || classes.contains(&Class::Gpu(fleet.catalog.model(g.model).class.clone()))
        })
        .map(|g| fleet.catalog.model(g.model).memory_slices as u32 - g.occ.used_slices())
        .sum()
}

/// Sorts hosts by free memory slices of `classes` (most first), then free cores (most first),
/// then id.
fn sort_by_free(fleet: &Fleet, hosts: &mut [HostId], classes: &BTreeSet<Class>) {
    hosts.sort_by_key(|&h| {
        let host = &fleet.hosts[h];
        (
            std::cmp::Reverse(free_slices(fleet, host, classes)),
            std::cmp::Reverse(host.free_cores()),
            h,
        )
    });
}

/// M̂ and |N̂| under construction.
struct Builder {
    hosts: Vec<HostId>,
    in_m: BTreeSet<HostId>,
    n: usize,
}

impl Builder {
    fn new() -> Self {
        Builder {
            hosts: Vec::new(),
            in_m: BTreeSet::new(),
            n: 0,
        }
    }

    fn remove(&mut self, h: HostId, had: usize) {
        if self.in_m.remove(&h) {
            self.hosts.retain(|&x| x != h);
            self.n -= had;
        }
    }

    fn push(&mut self, h: HostId, add: usize) {
        self.hosts.push(h);
        self.in_m.insert(h);
        self.n += add;
    }
}

/// Algorithm 1, AdmissionCall(Q).
pub fn admission(fleet: &Fleet, settings: &OrigamigSettings) -> Neighborhood {
    let all = HostSet::all(fleet.hosts.len());
    admission_in(
        fleet,
        settings,
        Scope {
            hosts: &all,
            pending: fleet.pending(),
        },
    )
}

/// Algorithm 1, AdmissionCall(Q) for the pending VMs of `scope` on its hosts. Line 12 still asks
/// whether any host of the fleet could ever take a VM: one that only another partition can take
/// waits for it.
pub(crate) fn admission_in(fleet: &Fleet, settings: &OrigamigSettings, scope: Scope) -> Neighborhood {
    let (m_max, n_max) = limits(fleet, settings, scope.hosts);
    let nvms = |h: HostId| fleet.hosts[h].vms.len();
    let active: Vec<HostId> = scope
        .hosts
        .iter()
        .filter(|&h| fleet.hosts[h].is_active() && all_mig(&fleet.hosts[h]))
        .collect();
    let mut b = Builder::new();
    let mut pending: Vec<VmId> = Vec::new();
    let mut rejected: Vec<VmId> = Vec::new();
    let mut oldest: Option<VmId> = None;
    let mut off_host: Option<HostId> = None;
    for &i in scope.pending {
        let Some(vm) = fleet.vm(i) else { continue };
        if !vm.is_mig() {
            continue;
        }
        let class: BTreeSet<Class> = [Class::of_vm(fleet, vm)].into_iter().collect();
        // Line 4: active hosts whose free resources fit the VM, fewest VMs first.
        let mut c: Vec<HostId> = active
            .iter()
            .copied()
            .filter(|&h| Free::of(fleet, &fleet.hosts[h]).fits(fleet, vm))
            .collect();
        c.sort_by_key(|&h| (nvms(h), h));
        if c.is_empty() {
            // Line 8: active hosts that would fit the VM if empty, by free memory slices.
            c = active
                .iter()
                .copied()
                .filter(|&h| Free::empty(fleet, &fleet.hosts[h]).fits(fleet, vm))
                .collect();
            sort_by_free(fleet, &mut c, &class);
            // Line 12: no host of the fleet could ever take it.
            if c.is_empty() && !fleet.hosts.iter().any(|h| Free::empty(fleet, h).fits(fleet, vm)) {
                rejected.push(i);
                continue;
            }
        }
        let is_oldest = oldest.is_none();
        if is_oldest {
            oldest = Some(i);
            // Line 14's switched-off host, chosen now so that a slot of M̂ is kept for it.
            off_host = scope.hosts.iter().find(|&h| {
                let host = &fleet.hosts[h];
                !host.is_active() && all_mig(host) && Free::of(fleet, host).fits(fleet, vm)
            });
        }
        let cap = m_max - usize::from(off_host.is_some() && m_max >= 2);
        let Some(&first) = c.first() else {
            // Only a switched-off host can take it: the oldest gets it through line 14.
            if is_oldest && off_host.is_some() {
                pending.push(i);
                b.n += 1;
            }
            continue;
        };
        // Line 6 / 10: add C to M̂ in order, within Mmax and Nmax; the first host of the oldest
        // pending VM is always added.
        if b.in_m.contains(&first) && (is_oldest || b.n < n_max) {
            pending.push(i);
            b.n += 1;
        }
        for (idx, &h) in c.iter().enumerate() {
            if b.in_m.contains(&h) {
                continue;
            }
            let exception = is_oldest && idx == 0;
            if b.hosts.len() >= cap && !exception {
                break;
            }
            let add = nvms(h) + usize::from(idx == 0);
            if exception || b.n + add <= n_max {
                b.push(h, add);
                if idx == 0 {
                    pending.push(i);
                }
            }
        }
    }
    // Line 13: fill M̂ with active hosts of the call's classes, by free memory slices, then CPU.
    let classes: BTreeSet<Class> = pending
        .iter()
        .filter_map(|&i| fleet.vm(i))
        .map(|v| Class::of_vm(fleet, v))
        .collect();
    let gpu_classes: BTreeSet<Class> = classes.iter().filter(|c| **c != Class::NoGpu).cloned().collect();
    let mut rest: Vec<HostId> = active
        .iter()
        .copied()
        .filter(|h| !b.in_m.contains(h))
        .filter(|&h| {
            classes.contains(&Class::NoGpu) || classes.iter().any(|c| c.has_host(fleet, &fleet.hosts[h]))
        })
        .collect();
    sort_by_free(fleet, &mut rest, &gpu_classes);
    let cap = m_max - usize::from(off_host.is_some() && m_max >= 2);
    for h in rest {
        if b.hosts.len() >= cap {
            break;
        }
        if b.n + nvms(h) <= n_max {
            b.push(h, nvms(h));
        }
    }
    // Line 14: a switched-off host that fits the oldest pending VM.
    if let Some(h) = off_host {
        if !b.in_m.contains(&h) && b.hosts.len() < m_max && !pending.is_empty() {
            b.push(h, 0);
        }
    }
    if pending.is_empty() {
        // Nothing to admit: the call decides nothing.
        b = Builder::new();
    }
    Neighborhood {
        kind: CallKind::Admission,
        hosts: b.hosts,
        pending,
        rejected,
        sources: Vec::new(),
        n_vms: b.n,
        merge: false,
    }
}

/// CF_j: the CF (Eq. 2) of the active GPUs of a host.
fn host_cf(fleet: &Fleet, host: &Host) -> u32 {
    host.gpus
        .iter()
        .filter(|g| !g.occ.is_empty())
        .map(|g| mig::cf(fleet.catalog.model(g.model), &g.occ))
        .sum()
}

/// Algorithm 1, ConsolidationCall(h).
pub fn consolidation(fleet: &Fleet, class: &Class, settings: &OrigamigSettings) -> Neighborhood {
    consolidation_in(fleet, class, settings, &HostSet::all(fleet.hosts.len()))
}

/// Algorithm 1, ConsolidationCall(h) on the hosts of a partition.
pub(crate) fn consolidation_in(
    fleet: &Fleet,
    class: &Class,
    settings: &OrigamigSettings,
    hosts: &HostSet,
) -> Neighborhood {
    let nb = algorithm1_consolidation(fleet, class, settings, hosts);
    if nb.sources.is_empty() && settings.merge_hosts >= 2 {
        return merge_in(fleet, class, settings, hosts);
    }
    nb
}

/// Mmax and Nmax of a call on `hosts`: the settings', or, with `neighborhood_vms` (§7), as many
/// hosts as the VM bound lets in; with `host_scaled_limits`, counted in GPUs ([`scaled_limits`]).
fn limits(fleet: &Fleet, settings: &OrigamigSettings, hosts: &HostSet) -> (usize, usize) {
    if settings.neighborhood_vms > 0 {
        (hosts.len().max(1), settings.neighborhood_vms)
    } else if settings.host_scaled_limits {
        scaled_limits(settings, most_gpus(fleet, hosts))
    } else {
        (settings.m_max.max(1), settings.n_max.max(1))
    }
}

/// The GPUs of the paper's host (§6.1), on which `m_max` and `n_max` were set.
pub(crate) const PAPER_HOST_GPUS: usize = 2;

/// The most GPUs on one MIG host of `hosts` (at least 1).
pub fn most_gpus(fleet: &Fleet, hosts: &HostSet) -> usize {
    hosts
        .iter()
        .filter_map(|h| fleet.hosts.get(h))
        .filter(|h| all_mig(h))
        .map(|h| h.gpus.len())
        .max()
        .unwrap_or(1)
        .max(1)
}

/// θ counted per GPU for hosts of `g` GPUs (`host_scaled_limits`): ceil(θ × g / 2), the gap a
/// paper host's θ stands for on each of its GPUs (4θ on an eight-GPU node), as `n_max` scales.
/// Hosts of two GPUs or fewer keep θ.
pub fn scaled_theta(theta: i64, g: usize) -> i64 {
    let theta = theta.max(1);
    if g <= PAPER_HOST_GPUS {
        return theta;
    }
    let g = i64::try_from(g).unwrap_or(i64::MAX);
    theta.saturating_mul(g).saturating_add(1) / PAPER_HOST_GPUS as i64
}

/// The hosts of a merge call counted in GPUs for hosts of `g` GPUs (`host_scaled_limits`): the
/// GPUs of `k` paper hosts, ceil(k × 2 / g) hosts, at least 2 (2 DGX hosts for the default 4).
/// Hosts of two GPUs or fewer keep `k`, and so does `k` = 0 (merge calls off).
pub fn scaled_merge(k: usize, g: usize) -> usize {
    if g <= PAPER_HOST_GPUS || k < 2 {
        return k;
    }
    (k * PAPER_HOST_GPUS).div_ceil(g).max(2)
}

/// Mmax and Nmax counted in GPUs for hosts of `g` GPUs: ceil(`m_max_gpus` / g) hosts (at least
/// 2; with the default 32, the GPUs of the paper's 16 hosts), and `n_max` × g / 2 VMs as many
/// VMs per GPU as `n_max` gives a paper host. Hosts of two GPUs or fewer keep `m_max` and
/// `n_max`.
pub fn scaled_limits(settings: &OrigamigSettings, g: usize) -> (usize, usize) {
    let (m, n) = (settings.m_max.max(1), settings.n_max.max(1));
    if g <= PAPER_HOST_GPUS {
        return (m, n);
    }
    (
        settings.m_max_gpus.max(1).div_ceil(g).max(2),
        n * g / PAPER_HOST_GPUS,
    )
}

/// Algorithm 1, ConsolidationCall(h), with the module's readings.
fn algorithm1_consolidation(
    fleet: &Fleet,
    class: &Class,
    settings: &OrigamigSettings,
    hosts: &HostSet,
) -> Neighborhood {
    let (m_max, n_max) = limits(fleet, settings, hosts);
    let nvms = |h: HostId| fleet.hosts[h].vms.len();
    let of_class: Vec<HostId> = hosts
        .iter()
        .filter(|&h| {
            let host = &fleet.hosts[h];
            host.is_active() && all_mig(host) && class.has_host(fleet, host)
        })
        .collect();
    // Line 17: sources, fewest VMs first.
    let mut s: Vec<HostId> = of_class.clone();
    s.sort_by_key(|&h| (nvms(h), h));
    // Line 18: keep a source only if switching it off outweighs its CF and the moves of its VMs
    // (2 delta_i each: m_i and omega_i).
    let w = Weights::from_settings(settings);
    let moves_cost = |host: &Host| -> f64 {
        if w.uniform_delta() {
            2.0 * w.delta_running * host.vms.len() as f64
        } else {
            host.vms
                .iter()
                .filter_map(|&id| fleet.vm(id))
                .map(|vm| 2.0 * w.delta_of(vm, fleet.catalog))
                .sum()
        }
    };
    s.retain(|&h| {
        let host = &fleet.hosts[h];
        let active_gpus = host.gpus.iter().filter(|g| !g.occ.is_empty()).count() as f64;
        let value = w.host_of(host, fleet.catalog) + w.gpu * active_gpus;
        let cost = settings.weight_free_start * host_cf(fleet, host) as f64 + moves_cost(host);
        value > cost
    });
    // Line 19's pool: the active hosts of the class plus the active hosts of M0.
    let mut pool: Vec<HostId> = of_class.clone();
    if *class != Class::NoGpu {
        pool.extend(
            hosts
                .iter()
                .filter(|&h| fleet.hosts[h].is_active() && fleet.hosts[h].gpus.is_empty()),
        );
    }
    // A candidate whose VMs fit into no other host of the pool is not a source (module notes).
    s.retain(|&h| {
        let others: Vec<HostId> = pool.iter().copied().filter(|&o| o != h).collect();
        can_empty(fleet, &[h], &others)
    });
    // Line 19: receivers, the other hosts of the pool.
    let mut r: Vec<HostId> = pool.iter().copied().filter(|h| !s.contains(h)).collect();
    let classes: BTreeSet<Class> = match class {
        Class::NoGpu => BTreeSet::new(),
        c => [c.clone()].into_iter().collect(),
    };
    sort_by_free(fleet, &mut r, &classes);
    // Line 20: at most Mmax / 2 sources; fill M̂ with S, then R.
    let r_empty = r.is_empty();
    let half = if settings.host_scaled_limits && settings.neighborhood_vms == 0 {
        (m_max / 2).max(1)
    } else {
        settings.m_max.max(1) / 2
    };
    s.truncate(half);
    let mut b = Builder::new();
    let mut sources = Vec::new();
    for h in s {
        if b.hosts.len() < m_max && b.n + nvms(h) <= n_max {
            b.push(h, nvms(h));
            sources.push(h);
        }
    }
    for h in r {
        if b.hosts.len() >= m_max {
            break;
        }
        if b.n + nvms(h) <= n_max {
            b.push(h, nvms(h));
        }
    }
    if settings.keep_removed_sources {
        // The earlier reading of lines 21-22: keep, in order, each source that can be emptied
        // into the other hosts of M̂ jointly with the sources kept before it; the others stay in
        // M̂ as receivers.
        let candidates = std::mem::take(&mut sources);
        for h in candidates {
            sources.push(h);
            let others: Vec<HostId> = b.hosts.iter().copied().filter(|o| !sources.contains(o)).collect();
            if !can_empty(fleet, &sources, &others) {
                sources.pop();
            }
        }
    } else {
        // Lines 21-22: while S cannot be emptied into the receivers of M̂, the last source
        // leaves S and M̂; when line 19 found no receiver at all, it stays in M̂ as one.
        loop {
            let receivers: Vec<HostId> = b.hosts.iter().copied().filter(|o| !sources.contains(o)).collect();
            if sources.is_empty() || can_empty(fleet, &sources, &receivers) {
                break;
            }
            if let Some(last) = sources.pop() {
                if !r_empty {
                    b.remove(last, nvms(last));
                }
            }
        }
    }
    if sources.is_empty() {
        return Neighborhood::nothing_to_consolidate(class);
    }
    Neighborhood {
        kind: CallKind::Consolidation(class.clone()),
        hosts: b.hosts,
        pending: Vec::new(),
        rejected: Vec::new(),
        sources,
        n_vms: b.n,
        merge: false,
    }
}

/// GPU memory slices in use on the GPUs of `class` of a host (all its GPUs for M0, none there).
fn used_slices_of(fleet: &Fleet, host: &Host, class: &Class) -> u32 {
    host.gpus
        .iter()
        .filter(|g| match class {
            Class::Gpu(c) => &fleet.catalog.model(g.model).class == c,
            Class::NoGpu => true,
        })
        .map(|g| g.occ.used_slices())
        .sum()
}

/// The merge neighborhood of a consolidation call (`merge_hosts` = k): the k least-loaded
/// active hosts of the class (fewest memory slices of the class in use, then fewest cores in
/// use, then fewest VMs, then lowest id), within Nmax; every one is a source and a receiver, so
/// the BILP may empty any of them into the others. The call is made only when at least one of
/// them can be emptied into the others by the fit test of §5.2.
pub(crate) fn merge_in(
    fleet: &Fleet,
    class: &Class,
    settings: &OrigamigSettings,
    hosts: &HostSet,
) -> Neighborhood {
    let (_, n_max) = limits(fleet, settings, hosts);
    let merge_k = if settings.host_scaled_limits && settings.neighborhood_vms == 0 {
        scaled_merge(settings.merge_hosts, most_gpus(fleet, hosts))
    } else {
        settings.merge_hosts
    };
    let nvms = |h: HostId| fleet.hosts[h].vms.len();
    let mut of_class: Vec<HostId> = hosts
        .iter()
        .filter(|&h| {
            let host = &fleet.hosts[h];
            host.is_active() && all_mig(host) && class.has_host(fleet, host)
        })
        .collect();
    of_class.sort_by_key(|&h| {
        let host = &fleet.hosts[h];
        (
            used_slices_of(fleet, host, class),
            host.cores - host.free_cores(),
            nvms(h),
            h,
        )
    });
    let mut b = Builder::new();
    for h in of_class {
        if b.hosts.len() >= merge_k {
            break;
        }
        if b.n + nvms(h) <= n_max {
            b.push(h, nvms(h));
        }
    }
    let empties = b.hosts.iter().any(|&h| {
        let others: Vec<HostId> = b.hosts.iter().copied().filter(|&o| o != h).collect();
        can_empty(fleet, &[h], &others)
    });
    if b.hosts.len() < 2 || !empties {
        return Neighborhood::nothing_to_consolidate(class);
    }
    Neighborhood {
        kind: CallKind::Consolidation(class.clone()),
        sources: b.hosts.clone(),
        hosts: b.hosts,
        pending: Vec::new(),
        rejected: Vec::new(),
        n_vms: b.n,
        merge: true,
    }
}

/// Whether the VMs of all `sources` fit, with the fit test, into the free resources of the
/// `receivers` (sources in order, each VM largest first, to the first receiver that fits it).
pub fn can_empty(fleet: &Fleet, sources: &[HostId], receivers: &[HostId]) -> bool {
    let mut free: Vec<Free> = receivers
        .iter()
        .map(|&h| Free::of(fleet, &fleet.hosts[h]))
        .collect();
    for &s in sources {
        let mut vms: Vec<&Vm> = fleet.hosts[s].vms.iter().filter_map(|&i| fleet.vm(i)).collect();
        vms.sort_by_key(|v| {
            (
                std::cmp::Reverse(v.memory_slices(fleet.catalog)),
                std::cmp::Reverse(v.cores),
                v.id,
            )
        });
        for vm in vms {
            if !free.iter_mut().any(|f| f.take(fleet, vm)) {
                return false;
            }
        }
    }
    true
}

/// OPT's neighborhood: every host and every pending VM (hosts with a whole or shared GPU and
/// pending shares or gangs left out, as in every call).
pub fn whole(fleet: &Fleet) -> Neighborhood {
    let hosts: Vec<HostId> = (0..fleet.hosts.len())
        .filter(|&h| all_mig(&fleet.hosts[h]))
        .collect();
    let pending: Vec<VmId> = fleet
        .pending()
        .iter()
        .copied()
        .filter(|&id| fleet.vm(id).is_some_and(|v| v.is_mig()))
        .collect();
    let n_vms = hosts.iter().map(|&h| fleet.hosts[h].vms.len()).sum::<usize>() + pending.len();
    Neighborhood {
        kind: CallKind::Whole,
        hosts,
        pending,
        rejected: Vec::new(),
        sources: Vec::new(),
        n_vms,
        merge: false,
    }
}

/// The neighborhood of a call of the given kind.
pub fn select(fleet: &Fleet, kind: &CallKind, settings: &OrigamigSettings) -> Neighborhood {
    let all = HostSet::all(fleet.hosts.len());
    select_in(
        fleet,
        kind,
        settings,
        Scope {
            hosts: &all,
            pending: fleet.pending(),
        },
    )
}

/// The neighborhood of a call of the given kind within a scope (OPT's takes the whole fleet).
pub fn select_in(fleet: &Fleet, kind: &CallKind, settings: &OrigamigSettings, scope: Scope) -> Neighborhood {
    match kind {
        CallKind::Admission => admission_in(fleet, settings, scope),
        CallKind::Consolidation(c) => consolidation_in(fleet, c, settings, scope.hosts),
        CallKind::Whole => whole(fleet),
    }
}
