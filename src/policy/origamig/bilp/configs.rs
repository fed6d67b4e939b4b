//! Every configuration of one GPU model: the sets of (profile, start) GIs that fit its grid
//! together (no shared memory slice, permitted starts, instance limits), as in §3's
//! configuration space (the empty one included).

use crate::catalog::{GpuModel, ProfileId};
use crate::explore;
use crate::mig;
use std::cmp::Reverse;
use std::sync::Mutex;

/// One configuration of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    /// (profile, start), ascending by start.
    pub gis: Vec<(ProfileId, u8)>,
    /// CF (Eq. 2) of the configuration: free permitted starts of the CF profiles.
    pub cf: u32,
}

/// The configurations of `model` over the profiles `allowed` ([`explore::configurations`]), in
/// the order of a walk over the slices: at the lowest undecided slice, first leave it free, then
/// start a GI of each profile of `allowed` there, in turn. The order fixes the column order of the
/// models built on them.
pub(crate) fn enumerate(model: &GpuModel, allowed: &[ProfileId]) -> Vec<Config> {
    let rank = |p: ProfileId| allowed.iter().position(|&a| a == p).unwrap_or(allowed.len());
    type Order = Vec<(Reverse<u8>, usize)>;
    let mut out: Vec<(Order, Config)> = explore::configurations(model, allowed)
        .into_iter()
        .map(|(key, occ)| {
            let gis = explore::key_gis(key);
            // A configuration leaves a slice free before any that starts a GI there: compared
            // GI by GI (by start), the later start comes first, then the earlier profile.
            let order = gis.iter().map(|&(p, z)| (Reverse(z), rank(p))).collect();
            let cf = mig::cf(model, &occ);
            (order, Config { gis, cf })
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, c)| c).collect()
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
pub(crate) fn undominated<K: Eq + std::hash::Hash>(cands: Vec<Candidate<K>>) -> Vec<Candidate<K>> {
    // Only candidates of equal counts can dominate each other: compare within those groups
    // (an A100's 723 configurations would otherwise make half a million comparisons).
    let dominates =
        |a: &Candidate<K>, b: &Candidate<K>| a.0.cf >= b.0.cf && b.2.iter().all(|g| a.2.contains(g));
    let mut groups: std::collections::HashMap<&K, Vec<usize>> = std::collections::HashMap::new();
    for (i, c) in cands.iter().enumerate() {
        groups.entry(&c.1).or_default().push(i);
    }
    let mut keep = vec![true; cands.len()];
    for members in groups.values() {
        for &i in members {
            keep[i] = !members.iter().any(|&j| {
                j != i && dominates(&cands[j], &cands[i]) && (j < i || !dominates(&cands[i], &cands[j]))
            });
        }
    }
    cands
        .into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}
