//! Per-model lookup tables of the slice rules for the online policies: CF, the default start
//! (Eq. 3), MFI's fragmentation score and the expected fragmentation
//! ([`mig::expected_fragmentation`]), indexed by a GPU's occupied-slice mask. MFI and TC
//! evaluate every GPU of the fleet on each arrival, so they read these tables instead of
//! recomputing the rules; the tables agree with [`crate::mig`] (tested).

use crate::catalog::{Catalog, GpuModel, ModelId, ProfileId};
use crate::mig::{self, Occupancy};
use std::sync::Arc;

/// Grids up to this many slices get tables (2^16 masks); larger ones use the rules directly.
const MAX_TABLE_SLICES: u8 = 16;

/// Tables of one model.
#[derive(Debug)]
pub(crate) struct ModelTables {
    /// `default_start[p][mask]`: Eq. 3's start for profile p on a GPU whose occupied slices are
    /// `mask`, ignoring p's own instance limit (checked by the caller); `u8::MAX` when none.
    default_start: Vec<Vec<u8>>,
    /// MFI's fragmentation score of a mask (§6.3).
    mfi: Vec<u32>,
    /// [`mig::expected_fragmentation`] of a mask.
    frag: Vec<f64>,
}

/// Tables for every model of a catalog that qualifies.
#[derive(Debug)]
pub struct Tables {
    catalog: &'static Catalog,
    models: Vec<Option<ModelTables>>,
}

/// MFI's fragmentation score (Zambianco et al., as §6.3 states it): over the profiles whose
/// memory slices fit in the GPU's free slices, the profile's memory slices times the number of
/// its permitted starts at which they are not all free.
pub(crate) fn mfi_score(model: &GpuModel, mask: u32) -> u32 {
    let free = model.memory_slices as u32 - (mask & model.full_mask()).count_ones();
    let mut score = 0;
    for p in model.cf_profiles() {
        let prof = &model.profiles[p];
        if prof.size as u32 > free {
            continue;
        }
        let blocked = prof
            .starts
            .iter()
            .filter(|&&z| mask & prof.mask_at(z) != 0)
            .count() as u32;
        score += prof.size as u32 * blocked;
    }
    score
}

impl ModelTables {
    fn build(model: &GpuModel) -> Option<Self> {
        if model.memory_slices > MAX_TABLE_SLICES {
            return None;
        }
        // CF depends on the mask alone when no CF profile can hit its instance limit before
        // running out of starts; otherwise the tables would be wrong, so do without them.
        if model
            .cf_profiles()
            .any(|p| (model.profiles[p].max_instances as usize) < model.profiles[p].starts.len())
        {
            return None;
        }
        let n = 1usize << model.memory_slices;
        let mut default_start = vec![vec![u8::MAX; n]; model.profiles.len()];
        for (p, row) in default_start.iter_mut().enumerate() {
            for (mask, cell) in row.iter_mut().enumerate() {
                // An occupancy with this mask and no counts: the limit of p itself is ignored.
                let occ = Occupancy {
                    mask: mask as u32,
                    counts: [0; crate::catalog::MAX_PROFILES],
                };
                if let Some(z) = mig::default_start(model, &occ, p) {
                    *cell = z;
                }
            }
        }
        let mfi = (0..n).map(|mask| mfi_score(model, mask as u32)).collect();
        let frag = (0..n)
            .map(|mask| mig::expected_fragmentation(model, mask as u32))
            .collect();
        Some(ModelTables {
            default_start,
            mfi,
            frag,
        })
    }
}

impl Tables {
    /// Builds the tables of every model of `catalog`.
    pub fn build(catalog: &'static Catalog) -> Arc<Tables> {
        Arc::new(Tables {
            catalog,
            models: catalog.models.iter().map(ModelTables::build).collect(),
        })
    }

    /// Whether these tables were built for `catalog`.
    pub(crate) fn is_for(&self, catalog: &Catalog) -> bool {
        std::ptr::eq(self.catalog, catalog)
    }

    /// Eq. 3's start for profile `p` on a GPU of `model` whose occupied slices are `mask` and
    /// whose instance counts are `occ_counts` (the profile's limit is checked).
    pub fn default_start(&self, model: ModelId, occ: &Occupancy, mask: u32, p: ProfileId) -> Option<u8> {
        let m = self.catalog.model(model);
        if occ.counts[p] >= m.profiles[p].max_instances {
            return None;
        }
        match &self.models[model] {
            Some(t) => {
                let z = t.default_start[p][mask as usize];
                (z != u8::MAX).then_some(z)
            }
            None => {
                let o = Occupancy {
                    mask,
                    counts: occ.counts,
                };
                mig::default_start(m, &o, p)
            }
        }
    }

    /// [`mig::expected_fragmentation`] of a mask on `model`.
    pub fn fragmentation(&self, model: ModelId, mask: u32) -> f64 {
        match &self.models[model] {
            Some(t) => t.frag[mask as usize],
            None => mig::expected_fragmentation(self.catalog.model(model), mask),
        }
    }

    /// MFI's score of a mask on `model`.
    pub fn mfi(&self, model: ModelId, mask: u32) -> u32 {
        match &self.models[model] {
            Some(t) => t.mfi[mask as usize],
            None => mfi_score(self.catalog.model(model), mask),
        }
    }
}

/// Lazily built tables held by a policy (shared between clones).
#[derive(Debug, Clone, Default)]
pub(crate) struct Lazy(Option<Arc<Tables>>);

impl Lazy {
    /// The tables for `catalog`, built on first use.
    pub fn get(&mut self, catalog: &'static Catalog) -> Arc<Tables> {
        match &self.0 {
            Some(t) if t.is_for(catalog) => t.clone(),
            _ => {
                let t = Tables::build(catalog);
                self.0 = Some(t.clone());
                t
            }
        }
    }
}

#[cfg(test)]
mod tests;
