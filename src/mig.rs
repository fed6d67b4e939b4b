//! MIG slice rules of one GPU (paper §3): permitted free starts S(F, p) (Eq. 1), configuration
//! flexibility CF (Eq. 2), the default GI placement policy (Eq. 3) and per-profile capacity.
//!
//! A GPU's state for these rules is an [`Occupancy`]: the bit mask of occupied memory slices and
//! the number of GIs of each profile (needed for per-profile instance limits such as +me's one).

use crate::catalog::{GpuModel, ProfileId, MAX_PROFILES};

/// Occupied memory slices and per-profile instance counts of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Occupancy {
    /// Bit u set: memory slice u is covered by a GI.
    pub mask: u32,
    /// GIs of each profile (indexed by profile id).
    pub counts: [u8; MAX_PROFILES],
}

impl Occupancy {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Builds the occupancy of a list of (profile, start) GIs; `None` if two GIs overlap, a start
    /// is not permitted, or an instance limit is exceeded.
    pub fn from_gis(model: &GpuModel, gis: &[(ProfileId, u8)]) -> Option<Self> {
        let mut occ = Self::empty();
        for &(p, z) in gis {
            if !occ.can_place(model, p, z) {
                return None;
            }
            occ.add(model, p, z);
        }
        Some(occ)
    }

    /// Whether a GI of profile `p` may start at `z` now: a permitted start, all its slices free,
    /// and the profile's instance limit not reached.
    pub fn can_place(&self, model: &GpuModel, p: ProfileId, z: u8) -> bool {
        let prof = &model.profiles[p];
        prof.starts.contains(&z) && self.mask & prof.mask_at(z) == 0 && self.counts[p] < prof.max_instances
    }

    /// Adds a GI; the caller has checked [`Occupancy::can_place`].
    pub fn add(&mut self, model: &GpuModel, p: ProfileId, z: u8) {
        debug_assert!(self.can_place(model, p, z));
        self.mask |= model.profiles[p].mask_at(z);
        self.counts[p] += 1;
    }

    /// Removes a GI that is present.
    pub fn remove(&mut self, model: &GpuModel, p: ProfileId, z: u8) {
        let m = model.profiles[p].mask_at(z);
        debug_assert_eq!(self.mask & m, m);
        debug_assert!(self.counts[p] > 0);
        self.mask &= !m;
        self.counts[p] -= 1;
    }

    /// Memory slices in use.
    pub fn used_slices(&self) -> u32 {
        self.mask.count_ones()
    }

    /// Compute slices in use.
    pub fn used_compute(&self, model: &GpuModel) -> u32 {
        model
            .profiles
            .iter()
            .enumerate()
            .map(|(i, p)| p.compute as u32 * self.counts[i] as u32)
            .sum()
    }

    /// Whether no GI is placed.
    pub fn is_empty(&self) -> bool {
        self.mask == 0
    }
}

/// S(F, p) (Eq. 1): the permitted starts of `p` whose slices are all free, in ascending order.
/// Empty when the profile's instance limit is reached.
pub fn free_starts<'a>(model: &'a GpuModel, occ: &Occupancy, p: ProfileId) -> impl Iterator<Item = u8> + 'a {
    let prof = &model.profiles[p];
    let limit_ok = occ.counts[p] < prof.max_instances;
    let mask = occ.mask;
    prof.starts
        .iter()
        .copied()
        .filter(move |&z| limit_ok && mask & prof.mask_at(z) == 0)
}

/// CF(G) (Eq. 2): free permitted starts summed over the paper's profiles (no +me).
pub fn cf(model: &GpuModel, occ: &Occupancy) -> u32 {
    model
        .cf_profiles()
        .map(|p| free_starts(model, occ, p).count() as u32)
        .sum()
}

/// The default GI placement policy (Eq. 3): the free permitted start that maximizes CF after
/// placing, the lowest such start on ties. `None` when the profile cannot be placed.
pub fn default_start(model: &GpuModel, occ: &Occupancy, p: ProfileId) -> Option<u8> {
    let mut best: Option<(u32, u8)> = None;
    for z in free_starts(model, occ, p) {
        let mut after = *occ;
        after.add(model, p, z);
        let v = cf(model, &after);
        if best.is_none_or(|(bv, _)| v > bv) {
            best = Some((v, z));
        }
    }
    best.map(|(_, z)| z)
}

/// Per-profile capacity: how many more GIs of `p` fit without moving anything (Table 3).
/// GIs of one profile have equal sizes, so taking the leftmost free start each time is optimal.
pub fn capacity(model: &GpuModel, occ: &Occupancy, p: ProfileId) -> u32 {
    let prof = &model.profiles[p];
    let room = prof.max_instances.saturating_sub(occ.counts[p]) as u32;
    let mut mask = occ.mask;
    let mut n = 0;
    for &z in &prof.starts {
        if n >= room {
            break;
        }
        let m = prof.mask_at(z);
        if mask & m == 0 {
            mask |= m;
            n += 1;
        }
    }
    n
}

/// Expected fragmentation of a GPU whose occupied memory slices are `mask`: over the profiles of
/// [`GpuModel::cf_profiles`], equally weighted (the synthetic workload draws them uniformly,
/// §6.2), the mean number of free memory slices that no free permitted start of the profile
/// covers. A full GPU scores 0; a free slice that only some profiles can use counts for those
/// that cannot, so an idle A100 scores 7/6 (1g.5gb never starts at slice 7, 2g.10gb never at
/// 6, 4g.20gb only at 0). This is the fragmentation measure of Weng et al. (USENIX ATC 2023,
/// "fragmentation gradient descent", made for the Alibaba GPU trace) on MIG slices: a
/// placement that raises it the least leaves room that the coming requests can use. Instance
/// limits are not looked at (the mask alone decides, as in the per-mask tables).
pub fn expected_fragmentation(model: &GpuModel, mask: u32) -> f64 {
    let free = model.full_mask() & !mask;
    let nfree = free.count_ones();
    let mut sum = 0u32;
    let mut n = 0u32;
    for p in model.cf_profiles() {
        let prof = &model.profiles[p];
        let cover = prof
            .starts
            .iter()
            .map(|&z| prof.mask_at(z))
            .filter(|&m| mask & m == 0)
            .fold(0u32, |a, m| a | m);
        sum += nfree - (cover & free).count_ones();
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        sum as f64 / n as f64
    }
}

#[cfg(test)]
mod tests;
