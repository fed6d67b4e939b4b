//! What a run measures (§6.3): acceptance, active hosts and GPUs, packing density,
//! energy, energy per admitted GPU-hour, switch-ons, migrations, GB copied, waits in the queue,
//! and stranded capacity per profile (free capacity a profile cannot use without moving anything).
//!
//! The [`Recorder`] integrates piecewise-constant fleet state exactly between events: the
//! simulator calls [`Recorder::advance`] before every change and [`Recorder::refresh_host`] after
//! it. Only the measurement window (after the warm-up) counts.

use crate::catalog::{GpuModel, ProfileId};
use crate::fleet::{Fleet, GpuMode, HostId, Shape, Vm};
use crate::mig;
use serde::Serialize;

/// Free capacity of one profile that its requests cannot use without moving anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stranded {
    pub model: String,
    pub profile: String,
    /// Free memory slices on the fleet's GPUs of this model.
    pub free_slices: u32,
    /// GIs of the profile that still fit, each at its own free permitted start.
    pub fits: u32,
    /// Free slices those GIs would cover.
    pub usable_slices: u32,
    /// Free slices no GI of the profile can use: `free_slices - usable_slices`.
    pub count: u32,
    /// `count / free_slices` (0 when nothing is free).
    pub share: f64,
}

impl Stranded {
    /// The stranded capacity of profile `p` of `model` when `free` slices are free and `fits` GIs
    /// of `p` still fit.
    fn of(model: &GpuModel, p: ProfileId, free: u32, fits: u32) -> Stranded {
        let prof = &model.profiles[p];
        let usable = fits * prof.size as u32;
        let count = free - usable.min(free);
        Stranded {
            model: model.name.clone(),
            profile: prof.name.clone(),
            free_slices: free,
            fits,
            usable_slices: usable,
            count,
            share: if free == 0 {
                0.0
            } else {
                count as f64 / free as f64
            },
        }
    }
}

/// Stranded capacity across GPU modes (docs/simulation.md, "Stranded capacity across modes"):
/// free capacity that no pending shape can use without moving anything. Free capacity of an
/// empty GPU is never stranded (any mode and layout can be set on it without a drain); a whole
/// GPU is either empty or held, so only MIG and shared GPUs that hold work strand capacity.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct StrandedCapacity {
    /// Free compute slices of the MIG GPUs (the 1g units: seven per A100 or H100).
    pub mig_free_slices: u32,
    /// Those of them on GPUs that hold GIs where no reference profile fits.
    pub mig_stranded_slices: u32,
    /// Free memory (GB) of the shared GPUs.
    pub shared_free_gb: u32,
    /// Free GB on shared GPUs holding shares that no reference share can use.
    pub shared_stranded_gb: u32,
    /// Per reference MIG profile: what it alone leaves stranded.
    pub profiles: Vec<ProfileStranded>,
    /// The reference shapes are the pending requests' (`true`) or, with none pending, the largest
    /// profile of each GPU model with MIG GPUs in the fleet and no share (`false`).
    pub from_pending: bool,
}

/// Free compute slices that one MIG profile cannot use on the GPUs of its class that hold GIs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileStranded {
    pub model: String,
    pub profile: String,
    pub free_slices: u32,
    pub stranded_slices: u32,
}

impl StrandedCapacity {
    /// Stranded over free capacity, MIG compute slices and shared GB each as a share of its free
    /// capacity, weighted by free capacity: 0 when nothing is free.
    pub fn mig_share(&self) -> f64 {
        ratio_u32(self.mig_stranded_slices, self.mig_free_slices)
    }

    pub fn shared_share(&self) -> f64 {
        ratio_u32(self.shared_stranded_gb, self.shared_free_gb)
    }
}

fn ratio_u32(a: u32, b: u32) -> f64 {
    if b == 0 {
        0.0
    } else {
        f64::from(a) / f64::from(b)
    }
}

/// [`stranded_for`] against the fleet's pending queue: the measure the TUI's gauge shows.
pub fn stranded_capacity(fleet: &Fleet) -> StrandedCapacity {
    let pending: Vec<&Vm> = fleet.pending().iter().filter_map(|&id| fleet.vm(id)).collect();
    stranded_for(fleet, &pending)
}

/// Free capacity that none of `requests` could use without moving anything (see
/// [`StrandedCapacity`]). On a MIG GPU holding GIs, the usable compute slices are the most that
/// GIs of one reference profile of its class still take (Table 3's capacity times the profile's
/// compute slices); on a shared GPU holding shares, the most GB that copies of one reference
/// share (without isolation, of its class) take. With no request given, the reference is the
/// largest profile of each MIG class and no share.
pub fn stranded_for(fleet: &Fleet, requests: &[&Vm]) -> StrandedCapacity {
    let catalog = fleet.catalog;
    let from_pending = !requests.is_empty();
    // Reference MIG profiles per model and share sizes per model (class members expanded).
    let mut profiles: Vec<(usize, ProfileId)> = Vec::new();
    let mut shares: Vec<(usize, u32)> = Vec::new();
    for (m, model) in catalog.models.iter().enumerate() {
        for v in requests {
            match v.shape {
                Shape::Mig => {
                    for g in &v.gis {
                        if catalog.same_class(g.model, m) && !profiles.contains(&(m, g.profile)) {
                            profiles.push((m, g.profile));
                        }
                    }
                }
                Shape::Share {
                    model: sm,
                    gb,
                    isolation: false,
                    ..
                } if catalog.same_class(sm, m) && !shares.contains(&(m, gb)) => shares.push((m, gb)),
                _ => {}
            }
        }
        let in_fleet = || {
            fleet
                .hosts
                .iter()
                .flat_map(|h| &h.gpus)
                .any(|g| g.model == m && g.mode == GpuMode::Mig)
        };
        if !from_pending && in_fleet() {
            let largest = model
                .cf_profiles()
                .max_by_key(|&p| (model.profiles[p].size, model.profiles[p].compute));
            profiles.extend(largest.map(|p| (m, p)));
        }
    }
    profiles.sort_unstable();
    let mut out = StrandedCapacity {
        from_pending,
        profiles: profiles
            .iter()
            .map(|&(m, p)| ProfileStranded {
                model: catalog.model(m).name.clone(),
                profile: catalog.model(m).profiles[p].name.clone(),
                free_slices: 0,
                stranded_slices: 0,
            })
            .collect(),
        ..Default::default()
    };
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        let model = catalog.model(g.model);
        match g.mode {
            GpuMode::Mig => {
                let free = u32::from(model.compute_slices).saturating_sub(g.occ.used_compute(model));
                out.mig_free_slices += free;
                let mut best = 0;
                for (i, &(m, p)) in profiles.iter().enumerate() {
                    if m != g.model {
                        continue;
                    }
                    let usable = if g.occ.is_empty() {
                        free
                    } else {
                        (mig::capacity(model, &g.occ, p) * u32::from(model.profiles[p].compute)).min(free)
                    };
                    out.profiles[i].free_slices += free;
                    out.profiles[i].stranded_slices += free - usable;
                    best = best.max(usable);
                }
                if g.occ.is_empty() {
                    best = free;
                }
                out.mig_stranded_slices += free - best;
            }
            GpuMode::Shared => {
                let free = g.free_share_gb(catalog);
                out.shared_free_gb += free;
                if g.shares.is_empty() {
                    continue;
                }
                let best = shares
                    .iter()
                    .filter(|&&(m, gb)| m == g.model && gb > 0)
                    .map(|&(_, gb)| free / gb * gb)
                    .max()
                    .unwrap_or(0);
                out.shared_stranded_gb += free - best;
            }
            GpuMode::Whole => {}
        }
    }
    out
}

/// Stranded capacity per (model, profile) of the models in the fleet, the paper's profiles only
/// (no +me), in catalog order. A slice is usable by a profile when a free permitted start of the
/// profile covers it; the starts of one profile are disjoint (multiples of its size), so the
/// usable slices are the per-profile capacity (Table 3) times the profile's size.
pub fn stranded(fleet: &Fleet) -> Vec<Stranded> {
    let catalog = fleet.catalog;
    let mut out = Vec::new();
    for (m, model) in catalog.models.iter().enumerate() {
        let gpus: Vec<&mig::Occupancy> = fleet
            .hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .filter(|g| g.model == m && g.mode == GpuMode::Mig)
            .map(|g| &g.occ)
            .collect();
        if !gpus.is_empty() {
            out.extend(stranded_on(model, &gpus).into_iter().map(|(_, s)| s));
        }
    }
    out
}

/// The stranded capacity of each of `model`'s paper profiles (no +me) over the GPUs `gpus`, all
/// of `model`'s class, in catalog order.
pub(crate) fn stranded_on(model: &GpuModel, gpus: &[&mig::Occupancy]) -> Vec<(ProfileId, Stranded)> {
    let free: u32 = gpus
        .iter()
        .map(|o| model.memory_slices as u32 - o.used_slices())
        .sum();
    model
        .cf_profiles()
        .map(|p| {
            let fits: u32 = gpus.iter().map(|o| mig::capacity(model, o, p)).sum();
            (p, Stranded::of(model, p, free, fits))
        })
        .collect()
}

/// Time average of the stranded capacity of one profile over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StrandedMean {
    pub model: String,
    pub profile: String,
    /// Mean stranded slices per sample.
    pub count: f64,
    /// Stranded slices over free slices, summed over the samples.
    pub share: f64,
}

/// Per-host state the integrals need, cached between changes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct HostStat {
    power_w: f64,
    active: bool,
    active_gpus: u32,
    /// Occupied memory slices (all on active GPUs).
    used_slices: u32,
    /// Memory slices of the active GPUs.
    active_slices: u32,
    /// GPUs' worth of compute in use: each GI counts as its share of its GPU's compute slices.
    gpu_share: f64,
    /// GPUs not in MIG mode that hold work (a whole GPU's holder or shares).
    other_used_gpus: u32,
}

impl HostStat {
    fn of(fleet: &Fleet, h: HostId) -> Self {
        let host = &fleet.hosts[h];
        let mut s = HostStat {
            power_w: fleet.host_power_w(h),
            active: host.is_active(),
            ..Default::default()
        };
        for g in &host.gpus {
            if !g.is_used() {
                continue;
            }
            let m = fleet.catalog.model(g.model);
            s.active_gpus += 1;
            s.active_slices += m.memory_slices as u32;
            match g.mode {
                GpuMode::Mig => {
                    s.used_slices += g.occ.used_slices();
                    s.gpu_share += g.occ.used_compute(m) as f64 / m.compute_slices as f64;
                }
                // A held whole GPU is used in full.
                GpuMode::Whole => {
                    s.other_used_gpus += 1;
                    s.used_slices += m.memory_slices as u32;
                    s.gpu_share += 1.0;
                }
                // A shared GPU: its shares' memory in slice units (rounded down), its weights
                // up to 1.
                GpuMode::Shared => {
                    s.other_used_gpus += 1;
                    let gb = crate::fleet::gpu_gb(fleet.catalog, g.model).max(1);
                    s.used_slices += (m.memory_slices as u32 * g.shared_gb().min(gb)) / gb;
                    s.gpu_share += g.weight_sum().min(1.0);
                }
            }
        }
        s
    }
}

/// Sums of [`HostStat`] over the fleet.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Totals {
    power_w: f64,
    active_hosts: u32,
    active_gpus: u32,
    used_slices: u32,
    active_slices: u32,
    gpu_share: f64,
    other_used_gpus: u32,
}

impl Totals {
    fn add(&mut self, s: &HostStat, sign: f64) {
        let i = |x: u32, t: &mut u32| {
            if sign > 0.0 {
                *t += x
            } else {
                *t -= x
            }
        };
        self.power_w += sign * s.power_w;
        i(s.active as u32, &mut self.active_hosts);
        i(s.active_gpus, &mut self.active_gpus);
        i(s.used_slices, &mut self.used_slices);
        i(s.active_slices, &mut self.active_slices);
        i(s.other_used_gpus, &mut self.other_used_gpus);
        self.gpu_share += sign * s.gpu_share;
    }
}

/// Running integrals and counters of one run.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    window: (f64, f64),
    last_t: f64,
    hosts: Vec<HostStat>,
    totals: Totals,
    total_gpus: usize,
    n_hosts: usize,
    // Integrals over the window (seconds x quantity).
    energy_j: f64,
    host_s: f64,
    gpu_s: f64,
    used_slice_s: f64,
    active_slice_s: f64,
    gpu_share_s: f64,
    least_gpu_s: f64,
    /// [`least_gpus`] now, kept up to date by the refreshes.
    least_gpus: u64,
    // Counters over the window.
    requests: u64,
    requested_slices: u64,
    admitted: u64,
    admitted_slices: u64,
    rejected: u64,
    refused: u64,
    wait_sum_s: f64,
    migrations: u64,
    migrations_across: u64,
    /// Migrations in the window by the origin of the plan that made them.
    migrations_by_origin: std::collections::BTreeMap<String, u64>,
    restarts: u64,
    gb_copied: f64,
    migration_s: f64,
    plans: u64,
    switch_ons: u64,
    prev_active: Vec<bool>,
    stranded_sum: Vec<(String, String, f64, f64)>,
    stranded_samples: u64,
    /// Hosts refreshed since the last minute sample (their activity may have changed), or
    /// `None` after a refresh of every host.
    touched: Option<Vec<HostId>>,
    touched_mark: Vec<bool>,
    strand: StrandTally,
}

/// The sums behind [`stranded`] and [`least_gpus`] kept up to date host by host, so that a
/// sample costs the number of (model, profile) pairs rather than a pass over every GPU. Per
/// model of the catalog, at `base[m]`: its count of MIG GPUs, their free slices, their used
/// compute slices, then the fitting GIs of each of its paper profiles. The sums are of integers,
/// so their order does not matter.
#[derive(Debug, Clone, Default)]
struct StrandTally {
    base: Vec<usize>,
    profiles: Vec<Vec<ProfileId>>,
    /// Contribution of one GPU of each model with an empty occupancy.
    empty: Vec<Vec<u32>>,
    totals: Vec<u64>,
    /// Contribution of each host, `None` when every GPU of the host has an empty occupancy.
    hosts: Vec<Option<Box<[u32]>>>,
    /// The catalog's models by class ([`classes`]).
    classes: Vec<Vec<usize>>,
}

impl StrandTally {
    fn new(fleet: &Fleet) -> Self {
        let catalog = fleet.catalog;
        let mut t = StrandTally::default();
        let mut k = 0;
        for model in &catalog.models {
            let ps: Vec<ProfileId> = model.cf_profiles().collect();
            let empty = mig::Occupancy::default();
            let mut e = vec![1, model.memory_slices as u32 - empty.used_slices(), 0];
            e.extend(ps.iter().map(|&p| mig::capacity(model, &empty, p)));
            t.base.push(k);
            k += 3 + ps.len();
            t.profiles.push(ps);
            t.empty.push(e);
        }
        t.totals = vec![0; k];
        t.hosts = vec![None; fleet.hosts.len()];
        t.classes = classes(catalog);
        for h in 0..fleet.hosts.len() {
            let c = t.of(fleet, h);
            t.apply(fleet, h, c.as_deref(), 1);
            t.hosts[h] = c;
        }
        t
    }

    /// The contribution of host `h`, `None` when all its GPUs have an empty occupancy.
    fn of(&self, fleet: &Fleet, h: HostId) -> Option<Box<[u32]>> {
        let host = &fleet.hosts[h];
        let empty = mig::Occupancy::default();
        if host.gpus.iter().all(|g| g.occ == empty) {
            return None;
        }
        let mut c = vec![0u32; self.totals.len()];
        for g in host.gpus.iter().filter(|g| g.mode == GpuMode::Mig) {
            let model = fleet.catalog.model(g.model);
            let b = self.base[g.model];
            c[b] += 1;
            c[b + 1] += model.memory_slices as u32 - g.occ.used_slices();
            c[b + 2] += g.occ.used_compute(model);
            for (i, &p) in self.profiles[g.model].iter().enumerate() {
                c[b + 3 + i] += mig::capacity(model, &g.occ, p);
            }
        }
        Some(c.into_boxed_slice())
    }

    /// Adds (`sign` 1) or removes (`sign` -1) the contribution `c` of host `h`.
    fn apply(&mut self, fleet: &Fleet, h: HostId, c: Option<&[u32]>, sign: i64) {
        let add = |t: &mut u64, x: u32| {
            if sign > 0 {
                *t += x as u64
            } else {
                *t -= x as u64
            }
        };
        match c {
            Some(c) => {
                for (t, &x) in self.totals.iter_mut().zip(c) {
                    add(t, x);
                }
            }
            None => {
                for g in fleet.hosts[h].gpus.iter().filter(|g| g.mode == GpuMode::Mig) {
                    let b = self.base[g.model];
                    for (i, &x) in self.empty[g.model].iter().enumerate() {
                        add(&mut self.totals[b + i], x);
                    }
                }
            }
        }
    }

    fn refresh_host(&mut self, fleet: &Fleet, h: HostId) {
        let new = self.of(fleet, h);
        let old = std::mem::replace(&mut self.hosts[h], new);
        self.apply(fleet, h, old.as_deref(), -1);
        let new = self.hosts[h].take();
        self.apply(fleet, h, new.as_deref(), 1);
        self.hosts[h] = new;
    }

    /// The same figures as [`stranded`] on the fleet the tally follows.
    fn stranded(&self, fleet: &Fleet) -> Vec<Stranded> {
        let mut out = Vec::new();
        for (m, model) in fleet.catalog.models.iter().enumerate() {
            let b = self.base[m];
            if self.totals[b] == 0 {
                continue;
            }
            let free = self.totals[b + 1] as u32;
            for (i, &p) in self.profiles[m].iter().enumerate() {
                let fits = self.totals[b + 3 + i] as u32;
                out.push(Stranded::of(model, p, free, fits));
            }
        }
        out
    }

    /// [`least_gpus`] of the MIG GPUs the tally follows (on every refresh: no allocation).
    fn least_gpus(&self, fleet: &Fleet) -> u64 {
        let catalog = fleet.catalog;
        least_gpus_of(catalog, &self.classes, |m| {
            let b = self.base[m];
            let mem = self.totals[b] * catalog.model(m).memory_slices as u64 - self.totals[b + 1];
            (mem, self.totals[b + 2])
        })
    }
}

/// The fewest GPUs that could hold the fleet's work as it is now: for each MIG class, the
/// memory slices and the compute slices of its GIs packed full onto GPUs of the class (the
/// larger of the two GPU counts, each rounded up), plus every GPU in another mode that holds
/// work, as it is. No placement, whatever it moves, holds the GIs on fewer GPUs, so the fleet's
/// GPUs less this bound the whole GPUs a repack could leave free. It leaves out permitted
/// starts, instance limits and the hosts' cores and RAM, so it is not always attainable.
pub fn least_gpus(fleet: &Fleet) -> u64 {
    let catalog = fleet.catalog;
    let mut used = vec![(0u64, 0u64); catalog.models.len()];
    let mut other = 0u64;
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        match g.mode {
            GpuMode::Mig => {
                let m = catalog.model(g.model);
                used[g.model].0 += g.occ.used_slices() as u64;
                used[g.model].1 += g.occ.used_compute(m) as u64;
            }
            _ if g.is_used() => other += 1,
            _ => {}
        }
    }
    least_gpus_of(catalog, &classes(catalog), |m| used[m]) + other
}

/// The catalog's models grouped by class (GIs of a class run on any GPU of it).
fn classes(catalog: &crate::catalog::Catalog) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for m in 0..catalog.models.len() {
        match out.iter_mut().find(|c| catalog.same_class(c[0], m)) {
            Some(c) => c.push(m),
            None => out.push(vec![m]),
        }
    }
    out
}

/// [`least_gpus`] of the MIG GPUs from the memory and compute slices in use per model
/// (`used(model)`), the models grouped by [`classes`].
fn least_gpus_of(
    catalog: &crate::catalog::Catalog,
    classes: &[Vec<usize>],
    used: impl Fn(usize) -> (u64, u64),
) -> u64 {
    let mut total = 0;
    for class in classes {
        // The class's slices summed, each count over the slices of the class's largest GPU
        // (models of one class share one profile table, so they are equal).
        let (mut mem, mut comp, mut per_mem, mut per_comp) = (0u64, 0u64, 1u64, 1u64);
        for &b in class {
            let m = catalog.model(b);
            let (m_used, c_used) = used(b);
            mem += m_used;
            comp += c_used;
            per_mem = per_mem.max(m.memory_slices as u64);
            per_comp = per_comp.max(m.compute_slices as u64);
        }
        total += mem.div_ceil(per_mem).max(comp.div_ceil(per_comp));
    }
    total
}

/// The metrics of a run over its measurement window (§6.3), as `simulate --json` prints them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Hours measured so far (the window after the warm-up, up to now).
    pub measured_h: f64,
    /// Share of the requested memory slices admitted (requests arriving in the window).
    pub acceptance_pct: f64,
    /// Time average of the hosts running a VM.
    pub active_hosts: f64,
    /// The same as a share of all hosts.
    pub active_hosts_pct: f64,
    /// Time average of the GPUs holding a GI, as a share of all GPUs.
    pub active_gpus_pct: f64,
    /// Time average of [`least_gpus`], the fewest GPUs that could hold the work (each MIG
    /// class's GIs packed full by memory and compute slices), as a share of all GPUs: no
    /// placement keeps `active_gpus_pct` below it.
    pub least_gpus_pct: f64,
    /// Occupied share of the memory slices of the active GPUs (ratio of time integrals).
    pub packing_pct: f64,
    /// Energy of the active hosts and their GPUs.
    pub energy_mwh: f64,
    /// Energy per admitted GPU-hour (a GI counts as its share of its GPU's compute slices).
    pub kwh_per_gpu_hour: f64,
    /// Hosts switched on per hour, sampled once per simulated minute.
    pub switch_ons_per_h: f64,
    pub migrations_per_h: f64,
    /// The window's migrations by the origin of the plan that made them (the policy's name for
    /// its optimizer's or compaction's plans, or a named pass such as `origamig gpu compaction`
    /// and `origamig host emptying`); they add up to `migrations_per_h` times the window's
    /// hours. Absent from the JSON when nothing moved.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub migrations_by_origin: std::collections::BTreeMap<String, u64>,
    /// GB copied per hour by moves across hosts (VM RAM plus GI memory).
    pub gb_per_h: f64,
    /// Mean wait in the queue of the VMs admitted from the window's requests, seconds.
    pub wait_s_mean: f64,
    pub requests: u64,
    pub admitted: u64,
    pub rejected: u64,
    /// Of the rejected requests, those refused by an admission check (quota, multi-GPU work on
    /// slices) before the policy saw them.
    pub refused: u64,
    /// Mean duration of a move across hosts at the migration bandwidth, seconds.
    pub migration_s_mean: f64,
    /// Plans applied in the window.
    pub plans: u64,
    /// VMs restarted on another place at their next deploy by the plans (not migrations; absent
    /// from the JSON while 0, so runs without such plans print what they always did).
    #[serde(skip_serializing_if = "is_zero")]
    pub restarts: u64,
    /// Mean power of the fleet, kW.
    pub mean_power_kw: f64,
    /// Optimizer calls that ran the solver in the window, per hour (OrigaMIG and OPT; 0 for
    /// the others).
    pub calls_per_h: f64,
    /// Median and 95th percentile of the wall-clock time of those calls, seconds.
    pub call_s_median: f64,
    pub call_s_p95: f64,
    /// Mean |N̂| of those calls: the VMs of the neighborhood, pending ones included (§6.6 gives
    /// about 11 with δ <= 5 and 44 to 58 with δ >= 10).
    pub call_vms_mean: f64,
    /// Where the run's time went, over the whole run (warm-up included): optimizer calls that
    /// ran the solver and their wall-clock seconds in total, and trigger checks that built a
    /// neighborhood without solving (nothing to do) and their seconds.
    pub calls: u64,
    pub call_s_total: f64,
    pub trigger_checks: u64,
    pub trigger_check_s_total: f64,
    /// Of those calls, the ones the node budget (`node_limit`) ended before the optimum was
    /// proven: the same on any machine (absent from the JSON while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub calls_node_limited: u64,
    /// Of those calls, the ones the wall-clock safety limit (`sim_time_limit_s`) ended: where
    /// they stopped depends on the machine's speed and load, so the run's figures may differ on
    /// another machine or at another load (absent from the JSON while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub calls_wall_limited: u64,
    /// The same calls and checks by what fired them and the neighborhood they took, over the
    /// whole run (OrigaMIG; absent from the JSON for the other policies).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls_by_trigger: Vec<CallTally>,
    pub stranded: Vec<StrandedMean>,
}

/// The optimizer calls of OrigaMIG of one trigger and one kind of neighborhood, over a run.
///
/// Every call the triggers start ends as exactly one of: `solved` (the solver ran; `unchanged`
/// of those left the placements as they were), `empty` (the neighborhood had nothing to decide:
/// a trigger check, no solve), or `repeat` (the neighborhood, hosts and VMs, was identical to
/// one a solve had proven optimal as it stood, so the solve was skipped: it could only change
/// nothing again). `*_s` are wall-clock seconds of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallTally {
    /// What fired the call: `admission` (the pending queue), `gap` (Γh >= θ, Eq. 17-18),
    /// `host_gap` (only the host gap of `merge_hosts` >= θ), `whole` (OPT).
    pub trigger: &'static str,
    /// The neighborhood: `algorithm1` (§5.2), `merge` (`merge_hosts`), `whole` (OPT).
    pub neighborhood: &'static str,
    pub solved: u64,
    pub unchanged: u64,
    /// Migrations (moves and parking moves) in the plans these calls applied.
    pub moves: u64,
    pub empty: u64,
    pub repeat: u64,
    pub solved_s: f64,
    pub unchanged_s: f64,
    pub empty_s: f64,
    pub repeat_s: f64,
}

impl Recorder {
    /// A recorder for `fleet` measuring over `window` (seconds of simulated time), starting at
    /// `t0`.
    pub fn new(fleet: &Fleet, window: (f64, f64), t0: f64) -> Self {
        let mut r = Recorder {
            window,
            last_t: t0,
            hosts: vec![HostStat::default(); fleet.hosts.len()],
            totals: Totals::default(),
            total_gpus: fleet.total_gpus(),
            n_hosts: fleet.hosts.len(),
            energy_j: 0.0,
            host_s: 0.0,
            gpu_s: 0.0,
            used_slice_s: 0.0,
            active_slice_s: 0.0,
            gpu_share_s: 0.0,
            least_gpu_s: 0.0,
            least_gpus: 0,
            requests: 0,
            requested_slices: 0,
            admitted: 0,
            admitted_slices: 0,
            rejected: 0,
            refused: 0,
            wait_sum_s: 0.0,
            migrations: 0,
            migrations_across: 0,
            migrations_by_origin: Default::default(),
            restarts: 0,
            gb_copied: 0.0,
            migration_s: 0.0,
            plans: 0,
            switch_ons: 0,
            prev_active: fleet.hosts.iter().map(|h| h.is_active()).collect(),
            stranded_sum: Vec::new(),
            stranded_samples: 0,
            touched: None,
            touched_mark: Vec::new(),
            strand: StrandTally::default(),
        };
        r.refresh_all(fleet);
        r
    }

    /// The measurement window.
    pub fn window(&self) -> (f64, f64) {
        self.window
    }

    /// Changes the measurement window (counters already taken stay).
    pub fn set_window(&mut self, window: (f64, f64)) {
        self.window = window;
    }

    fn in_window(&self, t: f64) -> bool {
        t >= self.window.0 && t <= self.window.1
    }

    /// Recomputes the cached state of host `h` after a change.
    pub(crate) fn refresh_host(&mut self, fleet: &Fleet, h: HostId) {
        let new = HostStat::of(fleet, h);
        let old = std::mem::replace(&mut self.hosts[h], new);
        self.totals.add(&old, -1.0);
        self.totals.add(&new, 1.0);
        self.strand.refresh_host(fleet, h);
        self.refresh_least(fleet);
        if let Some(t) = &mut self.touched {
            if !self.touched_mark[h] {
                self.touched_mark[h] = true;
                t.push(h);
            }
        }
    }

    /// Recomputes the cached state of every host (after changes the simulator did not see).
    pub(crate) fn refresh_all(&mut self, fleet: &Fleet) {
        if fleet.hosts.len() != self.hosts.len() {
            self.hosts = vec![HostStat::default(); fleet.hosts.len()];
            self.prev_active = fleet.hosts.iter().map(|h| h.is_active()).collect();
            self.n_hosts = fleet.hosts.len();
        }
        self.total_gpus = fleet.total_gpus();
        self.totals = Totals::default();
        for h in 0..fleet.hosts.len() {
            self.hosts[h] = HostStat::of(fleet, h);
            self.totals.add(&self.hosts[h], 1.0);
        }
        self.strand = StrandTally::new(fleet);
        self.refresh_least(fleet);
        self.touched = None;
        // Guard against drift of the float sums.
        self.totals.power_w = self.hosts.iter().map(|s| s.power_w).sum();
        self.totals.gpu_share = self.hosts.iter().map(|s| s.gpu_share).sum();
    }

    /// Recomputes [`least_gpus`] from the tallies.
    fn refresh_least(&mut self, fleet: &Fleet) {
        self.least_gpus = self.strand.least_gpus(fleet) + self.totals.other_used_gpus as u64;
    }

    /// Integrates the current state from the last time up to `t` (only the part in the window).
    pub(crate) fn advance(&mut self, t: f64) {
        let a = self.last_t.max(self.window.0);
        let b = t.min(self.window.1);
        if b > a {
            let dt = b - a;
            let s = &self.totals;
            self.energy_j += s.power_w * dt;
            self.host_s += s.active_hosts as f64 * dt;
            self.gpu_s += s.active_gpus as f64 * dt;
            self.used_slice_s += s.used_slices as f64 * dt;
            self.active_slice_s += s.active_slices as f64 * dt;
            self.gpu_share_s += s.gpu_share * dt;
            self.least_gpu_s += self.least_gpus as f64 * dt;
        }
        if t > self.last_t {
            self.last_t = t;
        }
    }

    /// Current fleet power in watts (as cached).
    pub fn power_w(&self) -> f64 {
        self.totals.power_w
    }

    /// A request for `slices` memory slices arrived at `t`.
    pub(crate) fn on_request(&mut self, t: f64, slices: u32) {
        if self.in_window(t) {
            self.requests += 1;
            self.requested_slices += slices as u64;
        }
    }

    /// A request that arrived at `arrival` was admitted at `t`.
    pub(crate) fn on_admit(&mut self, arrival: f64, t: f64, slices: u32) {
        if self.in_window(arrival) {
            self.admitted += 1;
            self.admitted_slices += slices as u64;
            self.wait_sum_s += t - arrival;
        }
    }

    /// A request that arrived at `arrival` was rejected.
    pub(crate) fn on_reject(&mut self, arrival: f64) {
        if self.in_window(arrival) {
            self.rejected += 1;
        }
    }

    /// A request arriving at `arrival` was refused by an admission check (quota, multi-GPU
    /// work on slices) before any policy saw it: a rejection with its own count.
    pub(crate) fn on_refuse(&mut self, arrival: f64) {
        self.on_reject(arrival);
        if self.in_window(arrival) {
            self.refused += 1;
        }
    }

    /// A VM moved at `t` by a plan of `origin`; `gb` copied when it changed host, taking `secs`.
    pub(crate) fn on_migration(&mut self, t: f64, origin: &str, across: bool, gb: f64, secs: f64) {
        if self.in_window(t) {
            self.migrations += 1;
            *self.migrations_by_origin.entry(origin.to_string()).or_default() += 1;
            if across {
                self.migrations_across += 1;
                self.gb_copied += gb;
                self.migration_s += secs;
            }
        }
    }

    /// A VM was restarted on another place at its next deploy at `t` (not a migration).
    pub(crate) fn on_restart(&mut self, t: f64) {
        if self.in_window(t) {
            self.restarts += 1;
        }
    }

    /// A plan was applied at `t`.
    pub(crate) fn on_plan(&mut self, t: f64) {
        if self.in_window(t) {
            self.plans += 1;
        }
    }

    /// The once-a-minute sample (§6.3): hosts switched on since the previous sample.
    /// Only the hosts refreshed since the previous sample can have changed, so only those are
    /// looked at (every host after a refresh of them all).
    pub(crate) fn sample_minute(&mut self, t: f64, fleet: &Fleet) {
        let mut ons = 0;
        let mut look = |h: HostId, prev: &mut Vec<bool>| {
            let a = fleet.hosts[h].is_active();
            if a && !prev.get(h).copied().unwrap_or(false) {
                ons += 1;
            }
            if let Some(p) = prev.get_mut(h) {
                *p = a;
            }
        };
        match self.touched.take() {
            Some(mut hosts) => {
                for &h in &hosts {
                    look(h, &mut self.prev_active);
                    self.touched_mark[h] = false;
                }
                hosts.clear();
                self.touched = Some(hosts);
            }
            None => {
                for h in 0..fleet.hosts.len() {
                    look(h, &mut self.prev_active);
                }
                self.touched_mark = vec![false; fleet.hosts.len()];
                self.touched = Some(Vec::new());
            }
        }
        if self.in_window(t) && t > self.window.0 {
            self.switch_ons += ons;
        }
    }

    /// A sample of the stranded capacity per profile.
    pub(crate) fn sample_stranded(&mut self, t: f64, fleet: &Fleet) {
        if !self.in_window(t) {
            return;
        }
        let now = self.strand.stranded(fleet);
        if self.stranded_sum.len() != now.len() {
            self.stranded_sum = now
                .iter()
                .map(|s| (s.model.clone(), s.profile.clone(), 0.0, 0.0))
                .collect();
        }
        for (acc, s) in self.stranded_sum.iter_mut().zip(&now) {
            acc.2 += s.count as f64;
            acc.3 += s.free_slices as f64;
        }
        self.stranded_samples += 1;
    }

    /// The metrics over the window up to `now`.
    pub fn summary(&self, now: f64) -> Summary {
        let span = (now.min(self.window.1) - self.window.0).max(0.0);
        let hours = span / 3600.0;
        let per_s = |x: f64| if span > 0.0 { x / span } else { 0.0 };
        let per_h = |x: f64| if hours > 0.0 { x / hours } else { 0.0 };
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let active_hosts = per_s(self.host_s);
        let energy_kwh = self.energy_j / 3.6e6;
        let gpu_hours = self.gpu_share_s / 3600.0;
        Summary {
            measured_h: hours,
            acceptance_pct: if self.requested_slices > 0 {
                100.0 * self.admitted_slices as f64 / self.requested_slices as f64
            } else {
                100.0
            },
            active_hosts,
            active_hosts_pct: 100.0 * ratio(active_hosts, self.n_hosts as f64),
            active_gpus_pct: 100.0 * ratio(per_s(self.gpu_s), self.total_gpus as f64),
            least_gpus_pct: 100.0 * ratio(per_s(self.least_gpu_s), self.total_gpus as f64),
            packing_pct: 100.0 * ratio(self.used_slice_s, self.active_slice_s),
            energy_mwh: energy_kwh / 1000.0,
            kwh_per_gpu_hour: ratio(energy_kwh, gpu_hours),
            switch_ons_per_h: per_h(self.switch_ons as f64),
            migrations_per_h: per_h(self.migrations as f64),
            migrations_by_origin: self.migrations_by_origin.clone(),
            gb_per_h: per_h(self.gb_copied),
            wait_s_mean: ratio(self.wait_sum_s, self.admitted as f64),
            requests: self.requests,
            admitted: self.admitted,
            rejected: self.rejected,
            refused: self.refused,
            migration_s_mean: ratio(self.migration_s, self.migrations_across as f64),
            plans: self.plans,
            restarts: self.restarts,
            mean_power_kw: per_s(self.energy_j) / 1000.0,
            calls_per_h: 0.0,
            call_s_median: 0.0,
            call_s_p95: 0.0,
            call_vms_mean: 0.0,
            calls: 0,
            call_s_total: 0.0,
            trigger_checks: 0,
            trigger_check_s_total: 0.0,
            calls_node_limited: 0,
            calls_wall_limited: 0,
            calls_by_trigger: Vec::new(),
            stranded: self
                .stranded_sum
                .iter()
                .map(|(m, p, c, f)| StrandedMean {
                    model: m.clone(),
                    profile: p.clone(),
                    count: ratio(*c, self.stranded_samples as f64),
                    share: ratio(*c, *f),
                })
                .collect(),
        }
    }
}

/// The `q`-quantile (0 to 1) of `xs` by the nearest-rank method, or 0 for no values.
pub(crate) fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests;
