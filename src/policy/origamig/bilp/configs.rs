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

/// A candidate configuration of one GPU: the configuration, its profile counts, and the GIs of
/// the GPU's current arrangement that it keeps, as (profile, start).
pub(crate) type Candidate<K> = (&'static Config, K, Vec<(ProfileId, u8)>);

/// The candidates that no other candidate dominates, in input order. Among candidates with equal
/// profile counts, one dominates another when it has at least the CF and keeps at least the same
/// current GIs: in any arrangement, mapping GIs of one profile onto each other and the kept ones
/// onto themselves gives the same counts, the same VMs kept in place and no lower CF, so the
/// dominated one can be dropped without changing an optimum. Of two that dominate each other
/// (same CF, same kept GIs), the first stays.
pub(crate) fn undominated<K: Eq>(cands: Vec<Candidate<K>>) -> Vec<Candidate<K>> {
    let dominates = |a: &Candidate<K>, b: &Candidate<K>| {
        a.1 == b.1 && a.0.cf >= b.0.cf && b.2.iter().all(|g| a.2.contains(g))
    };
    let keep: Vec<bool> = (0..cands.len())
        .map(|i| {
            !(0..cands.len()).any(|j| {
                j != i && dominates(&cands[j], &cands[i]) && (j < i || !dominates(&cands[i], &cands[j]))
            })
        })
        .collect();
    cands
        .into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}
