//! Teaching and analysis over the slice rules of one GPU (paper §3 and Fig. 1).
//!
//! - [`explain`] and friends: for a profile on a GPU, every permitted start and why it is free or
//!   blocked (which slices, which GI or VM, the instance limit), and a verdict when the profile
//!   cannot be placed: not enough free slices; enough but not contiguous (Fig. 1a); a contiguous
//!   free run exists but at no permitted start (Fig. 1b); and, separately, whether the same GIs
//!   rearranged on this GPU would admit it (compaction, Fig. 1c), with the fewest GIs moved.
//! - [`Space`]: the configuration space of §3, every configuration reachable from an empty GPU
//!   by adding GIs, with the terminal ones, the suboptimal ones and the ones the default policy
//!   (Eq. 3) reaches when GIs are only added.
//!
//! A configuration is a *set of (start, profile) pairs*: §3 writes a placement as Start:Size, but
//! its figures (723 configurations, 78 terminal on the A100-40GB) count 1g.10gb and 2g.10gb at the
//! same start as different configurations. It is keyed by a `u128` holding, per memory
//! slice, 4 bits: `p + 1` when a GI of profile `p` starts there, 0 otherwise.

use crate::catalog::{Catalog, GpuModel, ProfileId, MAX_PROFILES};
use crate::fleet::{Gpu, VmId};
use crate::mig::{self, Occupancy};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

// ------------------------------------------------------------------------------------------------
// Building a GPU from a list of GIs
// ------------------------------------------------------------------------------------------------

/// Why a list of (profile, start) GIs is not a valid configuration of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GiError {
    /// The start is not one of the profile's permitted starts.
    #[error(
        "`{profile}@{start}`: {profile} may not start at slice {start}; permitted starts: {}",
        join(permitted)
    )]
    StartNotPermitted {
        profile: String,
        start: u8,
        permitted: Vec<u8>,
    },
    /// The GI covers a slice already covered by an earlier GI of the list.
    #[error("`{profile}@{start}` overlaps `{other_profile}@{other_start}` on memory slice {slice}")]
    Overlap {
        profile: String,
        start: u8,
        slice: u8,
        other_profile: String,
        other_start: u8,
    },
    /// More instances of the profile than one GPU holds.
    #[error("`{profile}`: a GPU holds at most {max} instance(s) of {profile}")]
    InstanceLimit { profile: String, max: u8 },
}

/// The occupancy of a GPU holding `gis` (in order), or why that is impossible.
pub fn build(model: &GpuModel, gis: &[(ProfileId, u8)]) -> Result<Occupancy, GiError> {
    let mut occ = Occupancy::empty();
    for (i, &(p, z)) in gis.iter().enumerate() {
        let prof = &model.profiles[p];
        if !prof.starts.contains(&z) {
            return Err(GiError::StartNotPermitted {
                profile: prof.name.clone(),
                start: z,
                permitted: prof.starts.clone(),
            });
        }
        let m = prof.mask_at(z);
        if occ.mask & m != 0 {
            let slice = (occ.mask & m).trailing_zeros() as u8;
            let &(op, oz) = gis[..i]
                .iter()
                .find(|&&(q, y)| model.profiles[q].mask_at(y) & (1 << slice) != 0)
                .expect("an earlier GI covers the slice");
            return Err(GiError::Overlap {
                profile: prof.name.clone(),
                start: z,
                slice,
                other_profile: model.profiles[op].name.clone(),
                other_start: oz,
            });
        }
        if occ.counts[p] >= prof.max_instances {
            return Err(GiError::InstanceLimit {
                profile: prof.name.clone(),
                max: prof.max_instances,
            });
        }
        occ.add(model, p, z);
    }
    Ok(occ)
}

// ------------------------------------------------------------------------------------------------
// Explanation of one profile on one GPU (Fig. 1)
// ------------------------------------------------------------------------------------------------

/// A GI resident on the GPU being explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResidentRef {
    pub profile: ProfileId,
    pub start: u8,
    /// The VM owning the GI, when known.
    pub vm: Option<VmId>,
}

/// A resident GI that blocks a start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocker {
    pub profile: String,
    pub start: u8,
    pub vm: Option<VmId>,
}

/// The state of one permitted start of the explained profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum StartStatus {
    /// All slices free and the instance limit not reached: the GI may start here.
    Free,
    /// Some of its slices are occupied (by the listed GIs when the caller named them).
    Occupied { slices: Vec<u8>, by: Vec<Blocker> },
    /// Its slices are free but the GPU already holds the most instances of the profile.
    LimitReached,
}

/// One permitted start of the explained profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartEntry {
    pub start: u8,
    /// The memory slices a GI at this start covers (first, last).
    pub covers: (u8, u8),
    #[serde(flatten)]
    pub status: StartStatus,
}

/// Why the profile can or cannot be placed, looking only at this GPU as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// It fits at `starts`; the default policy (Eq. 3) picks `default_start`.
    Fits { starts: Vec<u8>, default_start: u8 },
    /// The GPU already holds `max` instances of the profile.
    InstanceLimit { max: u8 },
    /// Fewer free memory slices than the profile's size: no rearrangement helps.
    NotEnoughFree { free: u32, need: u8 },
    /// Enough free slices, but no `need` of them contiguous (Fig. 1a).
    NotContiguous {
        free_slices: Vec<u8>,
        longest_run: u8,
        need: u8,
    },
    /// Contiguous free runs of at least `need` slices exist (as (first, length)) but none holds a
    /// permitted start of the profile (Fig. 1b).
    NoPermittedStart {
        runs: Vec<(u8, u8)>,
        need: u8,
        permitted: Vec<u8>,
    },
}

/// A GI of a compacted arrangement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArrangedGi {
    pub profile: String,
    pub profile_id: ProfileId,
    pub start: u8,
    /// Where the GI is now, when it moves; `None` when it stays or is the new GI.
    pub from: Option<u8>,
    pub vm: Option<VmId>,
    /// The GI that is being explained (not yet on the GPU).
    pub new: bool,
}

/// A rearrangement of the GPU's GIs that admits the explained profile (Fig. 1c).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compaction {
    /// Every GI after the rearrangement (the new one included), by start.
    pub arrangement: Vec<ArrangedGi>,
    /// Start of the new GI.
    pub start: u8,
    /// Resident GIs that change start; `None` when the caller did not give the resident GIs
    /// (then only the profile counts are known and the arrangement is one of the lowest).
    pub moved: Option<usize>,
}

/// Why a profile does or does not fit a GPU, start by start (the TUI teaching view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub model: String,
    pub profile: String,
    pub profile_id: ProfileId,
    /// Every permitted start of the profile, ascending.
    pub starts: Vec<StartEntry>,
    pub verdict: Verdict,
    /// When the profile does not fit as things are: a rearrangement of the same GIs on this GPU
    /// that admits it (fewest GIs moved), or `None` when no arrangement does.
    pub compaction: Option<Compaction>,
    /// One line for humans.
    pub reason: String,
}

impl Explanation {
    /// Whether the profile can be placed now.
    pub fn fits(&self) -> bool {
        matches!(self.verdict, Verdict::Fits { .. })
    }

    /// Whether it cannot be placed now but fits once the resident GIs are rearranged (Fig. 1c).
    pub fn fits_after_compaction(&self) -> bool {
        !self.fits() && self.compaction.is_some()
    }
}

/// Explains profile `p` on a GPU known only by its occupancy: blockers are not named and a
/// compaction is given without its moves.
pub fn explain(model: &GpuModel, occ: &Occupancy, p: ProfileId) -> Explanation {
    explain_inner(model, occ, None, p)
}

/// Explains profile `p` on a GPU holding `gis` (profile, start), optionally owned by `vms`
/// (same length as `gis`), naming the GIs that block each start and the fewest moves of a
/// compaction. Fails when `gis` is not a valid configuration.
pub fn explain_gis(
    model: &GpuModel,
    gis: &[(ProfileId, u8)],
    vms: Option<&[VmId]>,
    p: ProfileId,
) -> Result<Explanation, GiError> {
    let occ = build(model, gis)?;
    let residents: Vec<ResidentRef> = gis
        .iter()
        .enumerate()
        .map(|(i, &(profile, start))| ResidentRef {
            profile,
            start,
            vm: vms.and_then(|v| v.get(i).copied()),
        })
        .collect();
    Ok(explain_inner(model, &occ, Some(&residents), p))
}

/// Explains profile `p` (an index into the profile table of the GPU's class) on a fleet GPU,
/// naming the VMs that block each start.
pub fn explain_gpu(catalog: &Catalog, gpu: &Gpu, p: ProfileId) -> Explanation {
    let model = catalog.model(gpu.model);
    let residents: Vec<ResidentRef> = gpu
        .gis
        .iter()
        .map(|g| ResidentRef {
            profile: g.profile,
            start: g.start,
            vm: Some(g.vm),
        })
        .collect();
    explain_inner(model, &gpu.occ, Some(&residents), p)
}

fn explain_inner(
    model: &GpuModel,
    occ: &Occupancy,
    residents: Option<&[ResidentRef]>,
    p: ProfileId,
) -> Explanation {
    let prof = &model.profiles[p];
    let limit_reached = occ.counts[p] >= prof.max_instances;
    let starts: Vec<StartEntry> = prof
        .starts
        .iter()
        .map(|&z| {
            let m = prof.mask_at(z);
            let taken = m & occ.mask;
            let status = if taken != 0 {
                let by = residents
                    .unwrap_or(&[])
                    .iter()
                    .filter(|r| model.profiles[r.profile].mask_at(r.start) & taken != 0)
                    .map(|r| Blocker {
                        profile: model.profiles[r.profile].name.clone(),
                        start: r.start,
                        vm: r.vm,
                    })
                    .collect();
                StartStatus::Occupied {
                    slices: bits(taken),
                    by,
                }
            } else if limit_reached {
                StartStatus::LimitReached
            } else {
                StartStatus::Free
            };
            StartEntry {
                start: z,
                covers: (z, z + prof.size - 1),
                status,
            }
        })
        .collect();

    let free_mask = model.full_mask() & !occ.mask;
    let free = free_mask.count_ones();
    let runs = free_runs(free_mask, model.memory_slices);
    let need = prof.size;
    let verdict = if limit_reached {
        Verdict::InstanceLimit {
            max: prof.max_instances,
        }
    } else if let Some(d) = mig::default_start(model, occ, p) {
        Verdict::Fits {
            starts: mig::free_starts(model, occ, p).collect(),
            default_start: d,
        }
    } else if free < need as u32 {
        Verdict::NotEnoughFree { free, need }
    } else {
        let longest = runs.iter().map(|r| r.1).max().unwrap_or(0);
        if longest < need {
            Verdict::NotContiguous {
                free_slices: bits(free_mask),
                longest_run: longest,
                need,
            }
        } else {
            Verdict::NoPermittedStart {
                runs: runs.into_iter().filter(|r| r.1 >= need).collect(),
                need,
                permitted: prof.starts.clone(),
            }
        }
    };
    let compaction = match verdict {
        Verdict::NotContiguous { .. } | Verdict::NoPermittedStart { .. } => compact(model, occ, residents, p),
        _ => None,
    };
    let reason = reason_line(model, p, &verdict, compaction.as_ref());
    Explanation {
        model: model.name.clone(),
        profile: prof.name.clone(),
        profile_id: p,
        starts,
        verdict,
        compaction,
        reason,
    }
}

fn reason_line(model: &GpuModel, p: ProfileId, v: &Verdict, c: Option<&Compaction>) -> String {
    let name = &model.profiles[p].name;
    let mut s = match v {
        Verdict::Fits {
            starts,
            default_start,
        } => {
            return format!(
                "{name} fits at start(s) {}; the default policy picks {default_start}",
                join(starts)
            )
        }
        Verdict::InstanceLimit { max } => {
            return format!("{name} cannot be placed: the GPU already holds {max} {name}, the most allowed")
        }
        Verdict::NotEnoughFree { free, need } => {
            return format!("{name} cannot be placed: it needs {need} free memory slice(s), only {free} free")
        }
        Verdict::NotContiguous {
            free_slices, need, ..
        } => format!(
            "{name} cannot be placed: {} free slices ({}) are enough but no {need} of them are contiguous",
            free_slices.len(),
            ranges(free_slices)
        ),
        Verdict::NoPermittedStart { runs, permitted, .. } => {
            let r: Vec<String> = runs.iter().map(|&(a, l)| range(a, a + l - 1)).collect();
            let one = runs.len() == 1 && runs[0].1 == 1;
            format!(
                "{name} cannot be placed: {} {} {} but {name} may start only at {} (permitted starts)",
                if one { "slice" } else { "slices" },
                r.join(" and "),
                if one { "is free" } else { "are free and contiguous" },
                ranges(permitted)
            )
        }
    };
    match c {
        Some(c) => {
            let moves: Vec<String> = c
                .arrangement
                .iter()
                .filter_map(|g| g.from.map(|f| format!("{}@{}->{}", g.profile, f, g.start)))
                .collect();
            match c.moved {
                Some(_) => s.push_str(&format!(
                    "; it fits at {} after compaction (move {})",
                    c.start,
                    moves.join(", ")
                )),
                None => s.push_str(&format!(
                    "; it fits at {} after the resident GIs are rearranged",
                    c.start
                )),
            }
        }
        None => s.push_str("; no rearrangement of the resident GIs admits it either"),
    }
    s
}

/// Maximal runs of free slices as (first, length), ascending.
fn free_runs(free: u32, slices: u8) -> Vec<(u8, u8)> {
    let mut runs = Vec::new();
    let mut u = 0u8;
    while u < slices {
        if free & (1 << u) != 0 {
            let a = u;
            while u < slices && free & (1 << u) != 0 {
                u += 1;
            }
            runs.push((a, u - a));
        } else {
            u += 1;
        }
    }
    runs
}

/// The arrangement of the resident GIs plus one GI of `p` that keeps the most resident GIs in
/// place, or `None` when no arrangement on this GPU holds them all.
fn compact(
    model: &GpuModel,
    occ: &Occupancy,
    residents: Option<&[ResidentRef]>,
    p: ProfileId,
) -> Option<Compaction> {
    let mut counts = occ.counts;
    counts[p] += 1;
    if counts[p] > model.profiles[p].max_instances {
        return None;
    }
    // Profiles with GIs to arrange, largest first (then by id).
    let mut order: Vec<ProfileId> = (0..model.profiles.len()).filter(|&q| counts[q] > 0).collect();
    order.sort_by_key(|&q| (std::cmp::Reverse(model.profiles[q].size), q));
    let old: HashSet<(ProfileId, u8)> = residents
        .unwrap_or(&[])
        .iter()
        .map(|r| (r.profile, r.start))
        .collect();
    let old_in_group: Vec<usize> = order
        .iter()
        .map(|&q| old.iter().filter(|g| g.0 == q).count())
        .collect();
    let mut search = CompactSearch {
        model,
        order: &order,
        counts: &counts,
        old: &old,
        old_in_group,
        current: Vec::new(),
        best: None,
        budget: 2_000_000,
    };
    search.run(0, 0, 0, 0, 0, 0);
    let (kept, arr) = search.best?;
    // Per profile, the resident GIs whose start is not kept move to the starts that are not
    // kept (both ascending); the start left over for `p` is the new GI.
    let mut arrangement = Vec::new();
    for &q in &order {
        let name = &model.profiles[q].name;
        let mut olds: Vec<&ResidentRef> = residents
            .unwrap_or(&[])
            .iter()
            .filter(|r| r.profile == q)
            .collect();
        olds.sort_by_key(|r| r.start);
        let news: Vec<u8> = arr.iter().filter(|g| g.0 == q).map(|g| g.1).collect();
        let mut movers = olds.iter().filter(|r| !news.contains(&r.start));
        for &z in &news {
            let (from, vm, new) = if let Some(r) = olds.iter().find(|r| r.start == z) {
                (None, r.vm, false)
            } else if let Some(r) = movers.next() {
                (Some(r.start), r.vm, false)
            } else {
                // With the resident list known only `p` has a start left over (the new GI);
                // without it every GI lands here and the new one is chosen below.
                (None, None, residents.is_some())
            };
            arrangement.push(ArrangedGi {
                profile: name.clone(),
                profile_id: q,
                start: z,
                from,
                vm,
                new,
            });
        }
    }
    if residents.is_none() {
        // Only the counts are known: call new the GI of `p` whose start is free now, if any.
        let idx = arrangement
            .iter()
            .position(|g| g.profile_id == p && model.profiles[p].mask_at(g.start) & occ.mask == 0)
            .or_else(|| arrangement.iter().rposition(|g| g.profile_id == p))
            .expect("the arrangement holds a GI of p");
        arrangement[idx].new = true;
    }
    arrangement.sort_by_key(|g| g.start);
    let start = arrangement
        .iter()
        .find(|g| g.new)
        .expect("the arrangement holds the new GI")
        .start;
    Some(Compaction {
        start,
        arrangement,
        moved: residents.map(|_| old.len() - kept),
    })
}

/// Branch and bound over arrangements: per profile (largest first) a combination of ascending
/// starts; maximizes the resident GIs kept in place. Grids of the catalog (at most 8 slices) take
/// a few hundred nodes; the budget only guards against pathological data.
struct CompactSearch<'a> {
    model: &'a GpuModel,
    order: &'a [ProfileId],
    counts: &'a [u8; MAX_PROFILES],
    old: &'a HashSet<(ProfileId, u8)>,
    /// Resident GIs of each group's profile.
    old_in_group: Vec<usize>,
    current: Vec<(ProfileId, u8)>,
    best: Option<(usize, Vec<(ProfileId, u8)>)>,
    budget: u64,
}

impl CompactSearch<'_> {
    /// Places GI number `placed` of group `gi` (profile `order[gi]`) at a start of index `from`
    /// or later; `kept` resident GIs stay so far, `kept_here` of them in this group.
    fn run(&mut self, gi: usize, placed: u8, from: usize, mask: u32, kept: usize, kept_here: usize) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if gi == self.order.len() {
            if self.best.as_ref().is_none_or(|b| kept > b.0) {
                self.best = Some((kept, self.current.clone()));
            }
            return;
        }
        // Bound: at best every resident GI not yet decided stays.
        let open = self.old_in_group[gi] - kept_here + self.old_in_group[gi + 1..].iter().sum::<usize>();
        if self.best.as_ref().is_some_and(|b| kept + open <= b.0) {
            return;
        }
        let q = self.order[gi];
        if placed == self.counts[q] {
            self.run(gi + 1, 0, 0, mask, kept, 0);
            return;
        }
        let prof = &self.model.profiles[q];
        for i in from..prof.starts.len() {
            let z = prof.starts[i];
            let m = prof.mask_at(z);
            if mask & m != 0 {
                continue;
            }
            let stays = usize::from(self.old.contains(&(q, z)));
            self.current.push((q, z));
            self.run(gi, placed + 1, i + 1, mask | m, kept + stays, kept_here + stays);
            self.current.pop();
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Configuration space (§3)
// ------------------------------------------------------------------------------------------------

/// A configuration key: per memory slice u, bits 4u..4u+3 hold `p + 1` when a GI of profile `p`
/// starts at u.
pub(crate) type ConfigKey = u128;

fn key_add(key: ConfigKey, p: ProfileId, z: u8) -> ConfigKey {
    key | ((p as u128 + 1) << (4 * z as u32))
}

/// The (profile, start) GIs of a configuration key, by start.
pub(crate) fn key_gis(key: ConfigKey) -> Vec<(ProfileId, u8)> {
    (0..32u8)
        .filter_map(|z| {
            let v = (key >> (4 * z as u32)) & 0xF;
            (v != 0).then(|| (v as usize - 1, z))
        })
        .collect()
}

/// The key of a list of GIs.
pub(crate) fn key_of(gis: &[(ProfileId, u8)]) -> ConfigKey {
    gis.iter().fold(0, |k, &(p, z)| key_add(k, p, z))
}

/// One configuration of the space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceConfig {
    pub key: ConfigKey,
    pub occ: Occupancy,
    /// CF over the space's profiles.
    pub cf: u32,
    /// No GI of the space's profiles can be added.
    pub terminal: bool,
    /// Another arrangement of the same GIs (same count per profile) has a strictly higher CF.
    pub suboptimal: bool,
    /// The default policy (Eq. 3) reaches it from an empty GPU when GIs are only added.
    pub default_reached: bool,
}

impl SpaceConfig {
    /// Its GIs as (profile, start), by start.
    pub fn gis(&self) -> Vec<(ProfileId, u8)> {
        key_gis(self.key)
    }
}

/// The §3 statistics of one GPU model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpaceStats {
    pub model: String,
    pub cf_empty: u32,
    pub configurations: usize,
    pub terminal: usize,
    pub suboptimal: usize,
    pub default_reached: usize,
    pub default_suboptimal: usize,
    /// Configurations with a higher capacity for some profile than another arrangement of the
    /// same GIs (§3: 428 on the A100-40GB).
    pub profile_advantaged: usize,
}

/// Every configuration of `model` over `profiles`: each set of (profile, start) GIs of those
/// profiles that fit its grid together (permitted starts, no shared memory slice, instance
/// limits), the empty one first, then in depth-first discovery order from the empty GPU, adding
/// one GI at a time. The one enumeration of the configuration space (§3) that the rules explorer,
/// the optimizer and the layout menu share.
pub fn configurations(model: &GpuModel, profiles: &[ProfileId]) -> Vec<(ConfigKey, Occupancy)> {
    let mut out = vec![(0, Occupancy::empty())];
    let mut seen: HashSet<ConfigKey> = HashSet::from([0]);
    let mut stack: Vec<(ConfigKey, Occupancy)> = vec![(0, Occupancy::empty())];
    while let Some((key, occ)) = stack.pop() {
        for &p in profiles {
            for z in mig::free_starts(model, &occ, p) {
                let k = key_add(key, p, z);
                if seen.insert(k) {
                    let mut o = occ;
                    o.add(model, p, z);
                    out.push((k, o));
                    stack.push((k, o));
                }
            }
        }
    }
    out
}

/// Every configuration reachable from an empty GPU by adding GIs of a set of profiles (§3).
#[derive(Debug, Clone)]
pub struct Space<'m> {
    pub model: &'m GpuModel,
    /// The profiles GIs are drawn from; CF sums over them too.
    pub profiles: Vec<ProfileId>,
    /// In depth-first discovery order; the empty configuration first.
    pub configs: Vec<SpaceConfig>,
    index: HashMap<ConfigKey, usize>,
    best_cf: HashMap<[u8; MAX_PROFILES], u32>,
}

/// CF over `profiles` (Eq. 2 with P = `profiles`).
pub(crate) fn cf_over(model: &GpuModel, occ: &Occupancy, profiles: &[ProfileId]) -> u32 {
    profiles
        .iter()
        .map(|&p| mig::free_starts(model, occ, p).count() as u32)
        .sum()
}

/// The default start (Eq. 3) with CF over `profiles`: the free permitted start that maximizes CF
/// after placing, the lowest on ties.
pub(crate) fn default_start_over(
    model: &GpuModel,
    occ: &Occupancy,
    p: ProfileId,
    profiles: &[ProfileId],
) -> Option<u8> {
    let mut best: Option<(u32, u8)> = None;
    for z in mig::free_starts(model, occ, p) {
        let mut after = *occ;
        after.add(model, p, z);
        let v = cf_over(model, &after, profiles);
        if best.is_none_or(|(bv, _)| v > bv) {
            best = Some((v, z));
        }
    }
    best.map(|(_, z)| z)
}

impl<'m> Space<'m> {
    /// The space of the paper's profiles (no +me), as §3 counts it.
    pub fn enumerate_cf(model: &'m GpuModel) -> Self {
        let profiles: Vec<ProfileId> = model.cf_profiles().collect();
        Self::enumerate(model, &profiles)
    }

    /// The space of every profile of the model, +me included.
    pub fn enumerate_all(model: &'m GpuModel) -> Self {
        let profiles: Vec<ProfileId> = (0..model.profiles.len()).collect();
        Self::enumerate(model, &profiles)
    }

    /// The configurations of [`configurations`], with their CF over `profiles` and what §3
    /// counts about them.
    pub fn enumerate(model: &'m GpuModel, profiles: &[ProfileId]) -> Self {
        let mut configs: Vec<SpaceConfig> = configurations(model, profiles)
            .into_iter()
            .map(|(key, occ)| Self::node(model, profiles, key, occ))
            .collect();
        let index: HashMap<ConfigKey, usize> = configs.iter().enumerate().map(|(i, c)| (c.key, i)).collect();
        for c in &mut configs {
            c.terminal = profiles
                .iter()
                .all(|&p| mig::free_starts(model, &c.occ, p).next().is_none());
        }
        let mut best_cf: HashMap<[u8; MAX_PROFILES], u32> = HashMap::new();
        for c in &configs {
            let b = best_cf.entry(c.occ.counts).or_insert(0);
            *b = (*b).max(c.cf);
        }
        for c in &mut configs {
            c.suboptimal = c.cf < best_cf[&c.occ.counts];
        }
        // The default policy from the empty GPU, any sequence of profiles, GIs only added.
        let mut seen: HashSet<ConfigKey> = HashSet::from([0]);
        let mut stack: Vec<(ConfigKey, Occupancy)> = vec![(0, Occupancy::empty())];
        while let Some((key, occ)) = stack.pop() {
            configs[index[&key]].default_reached = true;
            for &p in profiles {
                if let Some(z) = default_start_over(model, &occ, p, profiles) {
                    let k = key_add(key, p, z);
                    if seen.insert(k) {
                        let mut o = occ;
                        o.add(model, p, z);
                        stack.push((k, o));
                    }
                }
            }
        }
        Space {
            model,
            profiles: profiles.to_vec(),
            configs,
            index,
            best_cf,
        }
    }

    fn node(model: &GpuModel, profiles: &[ProfileId], key: ConfigKey, occ: Occupancy) -> SpaceConfig {
        SpaceConfig {
            key,
            occ,
            cf: cf_over(model, &occ, profiles),
            terminal: false,
            suboptimal: false,
            default_reached: false,
        }
    }

    /// The configuration holding exactly `gis`, if it is in the space.
    pub fn get(&self, gis: &[(ProfileId, u8)]) -> Option<&SpaceConfig> {
        self.index.get(&key_of(gis)).map(|&i| &self.configs[i])
    }

    /// The highest CF over all arrangements of the same GIs as `occ` (same count per profile).
    pub fn best_cf(&self, occ: &Occupancy) -> Option<u32> {
        self.best_cf.get(&occ.counts).copied()
    }

    /// The arrangement of the same GIs as `occ` with the highest CF (the first found on ties).
    pub fn best_arrangement(&self, occ: &Occupancy) -> Option<&SpaceConfig> {
        let best = self.best_cf(occ)?;
        self.configs
            .iter()
            .find(|c| c.occ.counts == occ.counts && c.cf == best)
    }

    /// The §3 statistics.
    pub fn stats(&self) -> SpaceStats {
        let count = |f: &dyn Fn(&SpaceConfig) -> bool| self.configs.iter().filter(|c| f(c)).count();
        SpaceStats {
            model: self.model.name.clone(),
            cf_empty: self.configs[0].cf,
            configurations: self.configs.len(),
            terminal: count(&|c| c.terminal),
            suboptimal: count(&|c| c.suboptimal),
            default_reached: count(&|c| c.default_reached),
            default_suboptimal: count(&|c| c.default_reached && c.suboptimal),
            profile_advantaged: self.profile_advantaged(),
        }
    }

    /// How many configurations have, for some profile of the space, a higher capacity than
    /// another arrangement of the same GIs (§3 reports 428 for the A100-40GB).
    pub fn profile_advantaged(&self) -> usize {
        let caps = |c: &SpaceConfig| -> Vec<u32> {
            self.profiles
                .iter()
                .map(|&p| mig::capacity(self.model, &c.occ, p))
                .collect()
        };
        let all: Vec<Vec<u32>> = self.configs.iter().map(caps).collect();
        let mut least: HashMap<[u8; MAX_PROFILES], Vec<u32>> = HashMap::new();
        for (c, cap) in self.configs.iter().zip(&all) {
            let e = least.entry(c.occ.counts).or_insert_with(|| cap.clone());
            for (l, &v) in e.iter_mut().zip(cap) {
                *l = (*l).min(v);
            }
        }
        self.configs
            .iter()
            .zip(&all)
            .filter(|(c, cap)| cap.iter().zip(&least[&c.occ.counts]).any(|(v, l)| v > l))
            .count()
    }
}

/// The §3 statistics of a model over the paper's profiles.
pub fn stats(model: &GpuModel) -> SpaceStats {
    Space::enumerate_cf(model).stats()
}

// ------------------------------------------------------------------------------------------------
// Small formatting helpers
// ------------------------------------------------------------------------------------------------

fn bits(mask: u32) -> Vec<u8> {
    (0..32u8).filter(|&u| mask & (1 << u) != 0).collect()
}

fn join(v: &[u8]) -> String {
    v.iter().map(|z| z.to_string()).collect::<Vec<_>>().join(", ")
}

fn range(a: u8, b: u8) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

/// `0, 2, 4-7` for slices 0, 2, 4, 5, 6, 7.
pub fn ranges(v: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let a = v[i];
        let mut b = a;
        while i + 1 < v.len() && v[i + 1] == b + 1 {
            i += 1;
            b = v[i];
        }
        out.push(range(a, b));
        i += 1;
    }
    out.join(", ")
}
