//! Every configuration of one GPU model: the sets of (profile, start) GIs that fit its grid
//! together (no shared memory slice, permitted starts, instance limits), as in §3's
//! configuration space (723 for the A100-40GB with the paper's profiles, the empty one included).

use crate::catalog::{GpuModel, ProfileId};
use crate::mig::{self, Occupancy};
use std::sync::Mutex;

/// One configuration of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// (profile, start), ascending by start.
    pub gis: Vec<(ProfileId, u8)>,
    /// CF (Eq. 2) of the configuration: free permitted starts of the CF profiles.
    pub cf: u32,
}

/// Enumerates the configurations of `model` over the profiles `allowed` (each set once: at the
/// lowest undecided slice, either leave it free or start a GI there).
pub(crate) fn enumerate(model: &GpuModel, allowed: &[ProfileId]) -> Vec<Config> {
    fn rec(
        model: &GpuModel,
        allowed: &[ProfileId],
        u: u8,
        occ: &mut Occupancy,
        gis: &mut Vec<(ProfileId, u8)>,
        out: &mut Vec<Config>,
    ) {
        if u >= model.memory_slices {
            out.push(Config {
                gis: gis.clone(),
                cf: mig::cf(model, occ),
            });
            return;
        }
        rec(model, allowed, u + 1, occ, gis, out);
        for &p in allowed {
            if occ.can_place(model, p, u) {
                occ.add(model, p, u);
                gis.push((p, u));
                rec(model, allowed, u + model.profiles[p].size, occ, gis, out);
                gis.pop();
                occ.remove(model, p, u);
            }
        }
    }
    let mut out = Vec::new();
    rec(
        model,
        allowed,
        0,
        &mut Occupancy::empty(),
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// All configurations of a model (every profile, +me included), enumerated once per model and
/// kept for the life of the process (a handful of models).
pub(crate) fn of_model(model: &GpuModel) -> &'static [Config] {
    static CACHE: Mutex<Vec<(GpuModel, &'static [Config])>> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, c)) = cache.iter().find(|(m, _)| m == model) {
        return c;
    }
    let allowed: Vec<ProfileId> = (0..model.profiles.len()).collect();
    let list: &'static [Config] = Box::leak(enumerate(model, &allowed).into_boxed_slice());
    cache.push((model.clone(), list));
    list
}

#[cfg(test)]
mod tests;
