//! When OrigaMIG calls its optimizer (§5.1): an admission call while the pending queue Q is not
//! empty; a consolidation call for class h when the gap Γh reaches the threshold θ. One call at a
//! time, admission first, checked every `check_every_s` seconds of simulated time (10 s in §6.1).
//! A consolidation call that changes nothing disables its class until Γh grows (by
//! `reenable_gap_rise` above its lowest value since) or a VM leaves a host of that class
//! (`reenable`: which departures count, [`Reenable`]).
//!
//! Γh (Eq. 17) = active GPUs of class h - ceil(memory slices of the placed GIs of class h / |Uh|);
//! for the hosts without GPUs, M0, Γ0 (Eq. 18) = active M0 hosts - max(ceil(cores / Cmax),
//! ceil(RAM / Rmax)) over the VMs running there. Both read the fleet's counters
//! ([`crate::fleet::GapCounters`]), which every placement and release updates in O(1).

use super::hostset::HostSet;
use super::objective::Weights;
use crate::fleet::{Fleet, GapCounters, Host, HostId, Vm};
use crate::policy_settings::{OrigamigSettings, Reenable};
use std::collections::{BTreeMap, BTreeSet};

/// A compatibility class (§6.1: each GPU model forms its own class), or M0, the hosts without
/// GPUs (§5.1).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// GPUs of this class string ([`crate::catalog::GpuModel::class`]).
    Gpu(String),
    /// Hosts without GPUs.
    NoGpu,
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Class::Gpu(c) => f.write_str(c),
            Class::NoGpu => f.write_str("none"),
        }
    }
}

impl Class {
    /// The class of a GPU model name (case-insensitive), or `none` for hosts without GPUs.
    pub fn parse(fleet: &Fleet, name: &str) -> anyhow::Result<Class> {
        if name.eq_ignore_ascii_case("none") {
            return Ok(Class::NoGpu);
        }
        let c = fleet.catalog;
        let id = c.model_id(name).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown GPU model `{name}`; known: {}, or `none` for hosts without GPUs",
                c.model_names()
            )
        })?;
        Ok(Class::Gpu(c.model(id).class.clone()))
    }

    /// Whether a host belongs to the class: it has a GPU of the class (§5.1), or no GPU at all
    /// for M0.
    pub(crate) fn has_host(&self, fleet: &Fleet, host: &Host) -> bool {
        match self {
            Class::NoGpu => host.gpus.is_empty(),
            Class::Gpu(c) => host.gpus.iter().any(|g| &fleet.catalog.model(g.model).class == c),
        }
    }

    /// The class of a VM's GIs (M0 for a VM without GIs).
    pub(crate) fn of_vm(fleet: &Fleet, vm: &Vm) -> Class {
        match vm.model() {
            Some(m) => Class::Gpu(fleet.catalog.model(m).class.clone()),
            None => Class::NoGpu,
        }
    }

    /// The classes present in the fleet, in order (GPU classes by name, then M0).
    pub fn all(fleet: &Fleet) -> Vec<Class> {
        Class::all_in(fleet, &HostSet::all(fleet.hosts.len()))
    }

    /// The classes present on the hosts of a partition, in the order of [`Class::all`].
    pub fn all_in(fleet: &Fleet, hosts: &HostSet) -> Vec<Class> {
        let hosts: Vec<&Host> = hosts.iter().map(|h| &fleet.hosts[h]).collect();
        let mut out: Vec<Class> = Vec::new();
        for h in &hosts {
            for g in &h.gpus {
                let c = Class::Gpu(fleet.catalog.model(g.model).class.clone());
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out.sort();
        if hosts.iter().any(|h| h.gpus.is_empty()) {
            out.push(Class::NoGpu);
        }
        out
    }
}

/// Γh of Eq. 17 (Eq. 18 for M0), from the fleet's counters.
pub fn gap(fleet: &Fleet, class: &Class) -> i64 {
    gap_of(
        fleet,
        fleet.gap_counters(),
        class,
        &HostSet::all(fleet.hosts.len()),
    )
}

/// Γh of Eq. 17 (Eq. 18 for M0) over the hosts of a partition, counted from them.
pub(crate) fn gap_in(fleet: &Fleet, class: &Class, hosts: &HostSet) -> i64 {
    let models = fleet.catalog.models.len();
    let mut g = GapCounters {
        active_gpus: vec![0; models],
        placed_slices: vec![0; models],
        ..Default::default()
    };
    for host in hosts.iter().map(|h| &fleet.hosts[h]) {
        for gpu in &host.gpus {
            if !gpu.occ.is_empty() {
                g.active_gpus[gpu.model] += 1;
            }
            g.placed_slices[gpu.model] += gpu.occ.used_slices();
        }
        if host.gpus.is_empty() && host.is_active() {
            g.m0_active += 1;
            for vm in host.vms.iter().filter_map(|&id| fleet.vm(id)) {
                g.m0_cores += vm.cores as u64;
                g.m0_ram += vm.ram_gb as u64;
            }
        }
    }
    gap_of(fleet, &g, class, hosts)
}

/// Γh from counters over `hosts` (Cmax and Rmax of M0 are those of its hosts there).
fn gap_of(fleet: &Fleet, g: &GapCounters, class: &Class, hosts: &HostSet) -> i64 {
    match class {
        Class::Gpu(c) => {
            let (mut active, mut slices, mut grid) = (0i64, 0i64, 0i64);
            for (m, model) in fleet.catalog.models.iter().enumerate() {
                if &model.class == c {
                    active += g.active_gpus.get(m).copied().unwrap_or(0) as i64;
                    slices += g.placed_slices.get(m).copied().unwrap_or(0) as i64;
                    grid = grid.max(model.memory_slices as i64);
                }
            }
            if grid == 0 {
                return 0;
            }
            active - (slices + grid - 1) / grid
        }
        Class::NoGpu => {
            if g.m0_active == 0 {
                return 0;
            }
            // Cmax and Rmax: the largest M0 host (a pass over the hosts, only for M0).
            let (mut cmax, mut rmax) = (0u64, 0u64);
            for h in hosts
                .iter()
                .map(|h| &fleet.hosts[h])
                .filter(|h| h.gpus.is_empty())
            {
                cmax = cmax.max(h.cores as u64);
                rmax = rmax.max(h.ram_gb as u64);
            }
            let need = g
                .m0_cores
                .div_ceil(cmax.max(1))
                .max(g.m0_ram.div_ceil(rmax.max(1)));
            g.m0_active as i64 - need as i64
        }
    }
}

/// The host gap of a GPU class (with `merge_hosts`): the active hosts with a GPU of the class
/// minus the fewest hosts that could hold its placed slices, ceil(ceil(slices / |Uh|) / the most
/// GPUs of the class on one host). Γh counts GPUs only, so two hosts each with one full GPU of a
/// two-GPU class give Γh = 0 while one host could carry both. M0's Γ0 already counts hosts: 0.
pub fn host_gap(fleet: &Fleet, class: &Class, hosts: &HostSet) -> i64 {
    let Class::Gpu(c) = class else { return 0 };
    let (mut active, mut per_host, mut slices, mut grid) = (0i64, 0i64, 0i64, 0i64);
    for host in hosts.iter().map(|h| &fleet.hosts[h]) {
        let mut of_class = 0i64;
        for g in &host.gpus {
            let m = fleet.catalog.model(g.model);
            if &m.class == c {
                of_class += 1;
                slices += g.occ.used_slices() as i64;
                grid = grid.max(m.memory_slices as i64);
            }
        }
        per_host = per_host.max(of_class);
        if of_class > 0 && host.is_active() {
            active += 1;
        }
    }
    if grid == 0 || per_host == 0 {
        return 0;
    }
    let gpus = (slices + grid - 1) / grid;
    active - (gpus + per_host - 1) / per_host
}

/// What kind of optimizer call to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallKind {
    /// Admit pending VMs (Algorithm 1, AdmissionCall).
    Admission,
    /// Switch off hosts of a class (Algorithm 1, ConsolidationCall).
    Consolidation(Class),
    /// The whole fleet at once (OPT, §6.3).
    Whole,
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallKind::Admission => f.write_str("admission"),
            CallKind::Consolidation(c) => write!(f, "consolidation of {c}"),
            CallKind::Whole => f.write_str("whole fleet"),
        }
    }
}

/// The trigger state of one OrigaMIG instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Triggers {
    /// Classes whose consolidation threshold is disabled, with the lowest Γh seen since; the
    /// class is enabled again when Γh rises `gap_rise` above it.
    disabled: BTreeMap<Class, i64>,
    /// `reenable_gap_rise` of the settings (at least 1), set at each
    /// [`Triggers::next_call_with`].
    gap_rise: i64,
    /// Time of the last check.
    last_check_s: Option<f64>,
    /// The hosts of the instance's partition; `None` for the whole fleet.
    hosts: Option<HostSet>,
    /// Whether the gap also counts hosts ([`host_gap`]); set from `merge_hosts` at each
    /// [`Triggers::next_call_with`].
    count_hosts: bool,
    /// Whether the last consolidation call [`Triggers::next_call_with`] returned was fired by
    /// the host gap alone (Γh itself was below θ).
    by_host_gap: bool,
    /// `reenable` of the settings, set at each [`Triggers::next_call_with`].
    reenable: Reenable,
    /// With `reenable = "neighborhood"`: the hosts M̂ of the call that disabled each class.
    watched: BTreeMap<Class, BTreeSet<HostId>>,
    /// With `reenable = "room"`: what each class disabled by a call on hosts waits for.
    room: BTreeMap<Class, Room>,
    /// The weights of Eq. (5) and `reenable_room_share`, set at each
    /// [`Triggers::next_call_with`] (`reenable = "room"`).
    weights: Weights,
    room_share: f64,
    /// Time of the last check that found the instance's share of Q not empty
    /// (`consolidation_hold_s`).
    last_pending_s: Option<f64>,
}

impl Triggers {
    pub fn new() -> Self {
        Self::default()
    }

    /// The triggers of an instance that owns a partition: Γh and the classes are those of its
    /// hosts.
    pub(crate) fn for_hosts(hosts: HostSet) -> Self {
        Triggers {
            hosts: Some(hosts),
            ..Self::default()
        }
    }

    /// Γh of Eq. 17-18 over the instance's hosts.
    fn gpu_gap(&self, fleet: &Fleet, class: &Class) -> i64 {
        match &self.hosts {
            Some(r) => gap_in(fleet, class, r),
            None => gap(fleet, class),
        }
    }

    fn gap(&self, fleet: &Fleet, class: &Class) -> i64 {
        let g = self.gpu_gap(fleet, class);
        if self.count_hosts {
            let all = HostSet::all(fleet.hosts.len());
            g.max(host_gap(fleet, class, self.hosts.as_ref().unwrap_or(&all)))
        } else {
            g
        }
    }

    /// The GPUs of `class` on the instance's hosts (hosts without GPUs for M0): the class's
    /// size, against which `reenable_gap_rise_min_gpus` is read.
    fn class_gpus(&self, fleet: &Fleet, class: &Class) -> usize {
        let all = HostSet::all(fleet.hosts.len());
        let hosts = self.hosts.as_ref().unwrap_or(&all);
        hosts
            .iter()
            .map(|h| &fleet.hosts[h])
            .map(|h| match class {
                Class::Gpu(c) => h
                    .gpus
                    .iter()
                    .filter(|g| &fleet.catalog.model(g.model).class == c)
                    .count(),
                Class::NoGpu => usize::from(h.gpus.is_empty()),
            })
            .sum()
    }

    /// How far Γh of `class` must rise to enable it again: `reenable_gap_rise`, at most 2 on
    /// a class of fewer than `reenable_gap_rise_min_gpus` GPUs.
    fn gap_rise_of(&self, fleet: &Fleet, class: &Class, settings: &OrigamigSettings) -> i64 {
        if self.gap_rise > 2 && self.class_gpus(fleet, class) < settings.reenable_gap_rise_min_gpus {
            2
        } else {
            self.gap_rise
        }
    }

    fn classes(&self, fleet: &Fleet) -> Vec<Class> {
        match &self.hosts {
            Some(r) => Class::all_in(fleet, r),
            None => Class::all(fleet),
        }
    }

    /// Whether a check is due at `now_s` (one every `check_every_s`); records the check.
    pub fn due(&mut self, now_s: f64, settings: &OrigamigSettings) -> bool {
        if let Some(t) = self.last_check_s {
            if now_s - t < settings.check_every_s - 1e-9 {
                return false;
            }
        }
        self.last_check_s = Some(now_s);
        true
    }

    /// The call to make now, if any: admission while Q is not empty; else consolidation of the
    /// enabled class with the largest Γh >= θ (ties: class order). A disabled class whose Γh
    /// has risen `reenable_gap_rise` above its lowest value since is enabled again first.
    pub fn next_call(&mut self, fleet: &Fleet, settings: &OrigamigSettings) -> Option<CallKind> {
        self.next_call_with(fleet, settings, !fleet.pending().is_empty())
    }

    /// [`Triggers::next_call`] for an instance whose share of Q is empty or not (`has_pending`).
    pub fn next_call_with(
        &mut self,
        fleet: &Fleet,
        settings: &OrigamigSettings,
        has_pending: bool,
    ) -> Option<CallKind> {
        self.count_hosts = settings.merge_hosts >= 2;
        self.reenable = settings.reenable;
        self.weights = Weights::from_settings(settings);
        self.room_share = settings.reenable_room_share;
        self.gap_rise = (settings.reenable_gap_rise as i64).max(1);
        if has_pending {
            self.last_pending_s = self.last_check_s;
            return Some(CallKind::Admission);
        }
        if let (Some(now), Some(t)) = (self.last_check_s, self.last_pending_s) {
            if now - t < settings.consolidation_hold_s - 1e-9 {
                return None;
            }
        }
        let mut best: Option<(i64, Class)> = None;
        for class in self.classes(fleet) {
            let g = self.gap(fleet, &class);
            let rise = self.gap_rise_of(fleet, &class, settings);
            if let Some(low) = self.disabled.get_mut(&class) {
                if g - *low >= rise {
                    self.disabled.remove(&class);
                    self.watched.remove(&class);
                    self.room.remove(&class);
                } else {
                    *low = (*low).min(g);
                    continue;
                }
            }
            if g >= settings.theta.max(1) && best.as_ref().is_none_or(|(bg, _)| g > *bg) {
                best = Some((g, class));
            }
        }
        let (_, class) = best?;
        self.by_host_gap = self.count_hosts && self.gpu_gap(fleet, &class) < settings.theta.max(1);
        Some(CallKind::Consolidation(class))
    }

    /// What fired a call of `kind` that [`Triggers::next_call_with`] just returned: `admission`,
    /// `gap` (Γh >= θ) or `host_gap` (only the host gap of `merge_hosts` >= θ); `whole` for OPT.
    pub fn cause(&self, kind: &CallKind) -> &'static str {
        match kind {
            CallKind::Admission => "admission",
            CallKind::Consolidation(_) if self.by_host_gap => "host_gap",
            CallKind::Consolidation(_) => "gap",
            CallKind::Whole => "whole",
        }
    }

    /// Records the outcome of a call: a consolidation call that changed nothing disables its
    /// class at the current Γh.
    pub fn after_call(&mut self, fleet: &Fleet, kind: &CallKind, changed: bool) {
        self.after_call_on(fleet, kind, changed, &[]);
    }

    /// [`Triggers::after_call`] for a call on the hosts M̂ `hosts` (empty when it solved
    /// nothing): with `reenable = "neighborhood"`, a VM leaving one of them enables the class
    /// again; with `reenable = "room"`, departures from them that could pay ([`Room`]).
    pub fn after_call_on(&mut self, fleet: &Fleet, kind: &CallKind, changed: bool, hosts: &[HostId]) {
        if let CallKind::Consolidation(c) = kind {
            if !changed {
                let g = self.gap(fleet, c);
                self.disabled.insert(c.clone(), g);
                match self.reenable {
                    Reenable::Neighborhood => {
                        self.watched.insert(c.clone(), hosts.iter().copied().collect());
                    }
                    Reenable::Room => {
                        let room = Room::at_call(fleet, c, hosts, &self.weights, self.room_share);
                        self.room.insert(c.clone(), room);
                    }
                    Reenable::Departure => {}
                }
            }
        }
    }

    /// A VM left the fleet. With `reenable = "departure"`: its class is enabled again (a VM with
    /// GIs of class h ran on a host of class h); a VM without GIs may have run on a host of any
    /// class, so all are enabled. With `reenable = "neighborhood"`: the classes whose disabling
    /// call had the VM's host (`host`, where it ran) in M̂ are enabled again. With `reenable =
    /// "room"`: the classes whose disabling call had `host` in M̂ are enabled again once the
    /// departures from M̂ could pay ([`Room::could_pay_after`]). `fleet` is the fleet without the
    /// VM.
    pub fn on_departure(&mut self, fleet: &Fleet, vm: &Vm, host: Option<HostId>) {
        match self.reenable {
            Reenable::Departure => match vm.model() {
                Some(_) => {
                    self.disabled.remove(&Class::of_vm(fleet, vm));
                }
                None => self.disabled.clear(),
            },
            Reenable::Neighborhood => {
                let Some(host) = host else { return };
                let hit: Vec<Class> = self
                    .watched
                    .iter()
                    .filter(|(_, hosts)| hosts.contains(&host))
                    .map(|(c, _)| c.clone())
                    .collect();
                for c in hit {
                    self.disabled.remove(&c);
                    self.watched.remove(&c);
                }
            }
            Reenable::Room => {
                let Some(host) = host else { return };
                let weights = self.weights;
                let hit: Vec<Class> = self
                    .room
                    .iter_mut()
                    .filter(|(_, r)| r.hosts.contains(&host))
                    .filter_map(|(c, r)| r.could_pay_after(fleet, c, vm, host, &weights).then(|| c.clone()))
                    .collect();
                for c in hit {
                    self.disabled.remove(&c);
                    self.room.remove(&c);
                }
            }
        }
    }

    /// Whether consolidation of a class is disabled now.
    pub fn is_disabled(&self, class: &Class) -> bool {
        self.disabled.contains_key(class)
    }
}

/// With `reenable = "room"`: what a class disabled by a consolidation call on the hosts M̂ that
/// changed nothing waits for before it is enabled again (besides Γh rising).
///
/// Eq. (5) pays b_j + e per active GPU for switching host j off and charges δ_i per move of its
/// VMs, 2δ_i across hosts for a VM with GIs (m_i + ω_i). The call found no plan on M̂ better than
/// the current placement, so no host of M̂ was both worth its moves and able to fit its VMs into
/// the rest of M̂. Until departures change that, a call on M̂ would find the same: arrivals only
/// add VMs and take room, and the weights do not change. Two kinds of departure can:
///
/// - cost: a host of M̂ whose moves cost at least what it is worth loses a VM, and now its moves
///   cost less ([`host_could_pay`]);
/// - room: the departures from M̂ free, in memory slices of the class (cores for M0), `share` ×
///   what the lightest host of M̂ that was worth its moves held at the call (`need`): that many
///   slices would take its VMs. Fragmentation, cores and RAM may still stop the call, and a
///   smaller shortfall may have been enough; exactness is not the aim, fewer calls on standing
///   neighborhoods is.
#[derive(Debug, Clone, PartialEq)]
struct Room {
    /// M̂ of the call.
    hosts: BTreeSet<HostId>,
    /// The hosts of M̂ that were worth their moves at the call.
    paid: BTreeSet<HostId>,
    /// Slices (cores for M0) the departures must free; `None` when no host of M̂ was worth its
    /// moves, so only the cost side or Γh can enable the class.
    need: Option<u64>,
    /// Slices (cores for M0) the departures from M̂ freed since the call.
    freed: u64,
}

impl Room {
    fn at_call(fleet: &Fleet, class: &Class, hosts: &[HostId], w: &Weights, share: f64) -> Room {
        let hosts: BTreeSet<HostId> = hosts.iter().copied().collect();
        let paid: BTreeSet<HostId> = hosts
            .iter()
            .copied()
            .filter(|&h| host_could_pay(fleet, class, h, w))
            .collect();
        let need = paid
            .iter()
            .map(|&h| class_load(fleet, class, &fleet.hosts[h]))
            .min()
            .map(|l| ((share * l as f64).ceil() as u64).max(1));
        Room {
            hosts,
            paid,
            need,
            freed: 0,
        }
    }

    /// Counts VM `vm` leaving `host` of M̂ (`fleet` is without it); whether the class may be
    /// enabled again. A share or gang of the class (no GI slices to count) always may.
    fn could_pay_after(&mut self, fleet: &Fleet, class: &Class, vm: &Vm, host: HostId, w: &Weights) -> bool {
        let freed = match class {
            Class::NoGpu => vm.cores as u64,
            Class::Gpu(c) => {
                if !vm.is_mig() && vm.model().is_some_and(|m| &fleet.catalog.model(m).class == c) {
                    return true;
                }
                vm.gis
                    .iter()
                    .filter(|g| &fleet.catalog.model(g.model).class == c)
                    .map(|g| fleet.catalog.model(g.model).profiles[g.profile].size as u64)
                    .sum()
            }
        };
        self.freed += freed;
        if self.need.is_some_and(|n| self.freed >= n) {
            return true;
        }
        !self.paid.contains(&host) && host_could_pay(fleet, class, host, w)
    }
}

/// What a host holds of a class: the memory slices of its GPUs of the class in use, or for M0
/// the cores of its VMs.
fn class_load(fleet: &Fleet, class: &Class, host: &Host) -> u64 {
    match class {
        Class::NoGpu => host
            .vms
            .iter()
            .filter_map(|&id| fleet.vm(id))
            .map(|vm| vm.cores as u64)
            .sum(),
        Class::Gpu(c) => host
            .gpus
            .iter()
            .filter(|g| &fleet.catalog.model(g.model).class == c)
            .map(|g| g.occ.used_slices() as u64)
            .sum(),
    }
}

/// Whether switching host `h` of the class off could pay under Eq. (5): it is active, and moving
/// its VMs elsewhere (δ_i per move, two moves, m_i and ω_i, for a VM with GIs) costs less than
/// b_j plus e per active GPU. A necessary condition only: the free starts its GPUs lose and any
/// GPU the receivers switch on count against it too.
fn host_could_pay(fleet: &Fleet, class: &Class, h: HostId, w: &Weights) -> bool {
    let host = &fleet.hosts[h];
    if !host.is_active() || !class.has_host(fleet, host) {
        return false;
    }
    let worth = w.host_of(host, fleet.catalog)
        + w.gpu * host.gpus.iter().filter(|g| !g.occ.is_empty()).count() as f64;
    let cost: f64 = host
        .vms
        .iter()
        .filter_map(|&id| fleet.vm(id))
        .map(|vm| w.delta_of(vm, fleet.catalog) * if vm.gis.is_empty() { 1.0 } else { 2.0 })
        .sum();
    cost < worth
}
