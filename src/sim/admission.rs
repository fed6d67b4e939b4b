//! Admission checks of arriving requests (docs/operations.md): per-tenant quotas per profile, and the rule that multi-GPU work
//! runs on whole GPUs only.
//!
//! Quotas work like a Kubernetes `ResourceQuota` on the extended resources
//! `nvidia.com/mig-<profile>`: tenant -> profile -> the most GIs of that profile the tenant's VMs
//! may hold at once. They live in the scenario (`[quotas.<tenant>]`, parsed by
//! the scenario module); a key may be written `1g.10gb` or `nvidia.com/mig-1g.10gb` (with or
//! without `requests.`). A tenant without quotas, and a VM without a tenant, is not limited.
//!
//! Multi-GPU work (a VM with two or more GIs) needs NCCL or P2P between its GPUs, which MIG does
//! not support, so it is routed to whole GPUs (MIG disabled, or the full-GPU profile such as
//! 7g.80gb) and never to slices. With the setting `multi_gpu_whole_only` on, a multi-GPU request
//! for a slice profile is refused with that reason.

use crate::catalog::Catalog;
use crate::fleet::{Fleet, Vm};
use crate::scenario::PolicySettings;
use std::collections::BTreeMap;

/// Tenant -> profile -> most GIs at once (as in `Scenario::quotas`).
pub type Quotas = BTreeMap<String, BTreeMap<String, u32>>;

/// The profile a quota key names: `requests.nvidia.com/mig-3g.40gb`, `nvidia.com/mig-3g.40gb` and
/// `3g.40gb` all name `3g.40gb`.
pub(crate) fn profile_of_key(key: &str) -> &str {
    let k = key.strip_prefix("requests.").unwrap_or(key);
    k.strip_prefix("nvidia.com/mig-").unwrap_or(k)
}

/// A quota key that names no MIG profile of any known GPU model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quotas.{tenant}: `{key}` names no MIG profile of any known GPU model")]
pub struct QuotaKeyError {
    pub tenant: String,
    pub key: String,
}

/// Why an arriving request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Admitting it would take its tenant over a quota.
    #[error(
        "VM {vm} refused: tenant `{tenant}` has a quota of {limit} x nvidia.com/mig-{profile}, \
         holds {has}{} and the request asks for {asked} more",
        queue_note(*.queue)
    )]
    OverQuota {
        vm: u64,
        tenant: String,
        profile: String,
        limit: u32,
        has: u32,
        queue: u32,
        asked: u32,
    },
    /// Multi-GPU work asks for a slice profile.
    #[error(
        "VM {vm} refused: multi-GPU work ({gis} GIs) runs on whole GPUs only (MIG disabled or {whole}), \
         never on slices such as {slice}: NCCL and P2P are not supported between MIG instances"
    )]
    MultiGpuOnSlice {
        vm: u64,
        gis: usize,
        whole: String,
        slice: String,
    },
}

fn queue_note(queue: u32) -> String {
    if queue > 0 {
        format!(", has {queue} more waiting in the queue")
    } else {
        String::new()
    }
}

/// Checks that every quota names a profile some GPU model of the catalog has.
pub fn validate(quotas: &Quotas, catalog: &Catalog) -> Result<(), QuotaKeyError> {
    for (tenant, limits) in quotas {
        for key in limits.keys() {
            let p = profile_of_key(key);
            if !catalog.models.iter().any(|m| m.profile(p).is_some()) {
                return Err(QuotaKeyError {
                    tenant: tenant.clone(),
                    key: key.clone(),
                });
            }
        }
    }
    Ok(())
}

/// GIs per profile name held by the placed VMs of `tenant`, leaving out VM `except`.
pub fn usage(fleet: &Fleet, tenant: &str, except: Option<u64>) -> BTreeMap<String, u32> {
    let mut used = BTreeMap::new();
    for v in fleet.vms() {
        if v.placement.is_none() || v.tenant.as_deref() != Some(tenant) || Some(v.id) == except {
            continue;
        }
        for g in &v.gis {
            let name = &fleet.catalog.model(g.model).profiles[g.profile].name;
            *used.entry(name.clone()).or_insert(0) += 1;
        }
    }
    used
}

/// GIs per profile name asked for by the queued (pending, not yet placed) VMs of `tenant`,
/// leaving out VM `except`.
pub fn queued(fleet: &Fleet, tenant: &str, except: Option<u64>) -> BTreeMap<String, u32> {
    let mut asked = BTreeMap::new();
    for &id in fleet.pending() {
        let Some(v) = fleet.vm(id) else { continue };
        if v.placement.is_some() || v.tenant.as_deref() != Some(tenant) || Some(v.id) == except {
            continue;
        }
        for g in &v.gis {
            let name = &fleet.catalog.model(g.model).profiles[g.profile].name;
            *asked.entry(name.clone()).or_insert(0) += 1;
        }
    }
    asked
}

/// The quota check: `Err` with a visible reason when admitting `vm` would take its tenant over a
/// quota of one of its profiles. The VM itself is not counted (it may be pending). As with a
/// Kubernetes ResourceQuota, which counts pods from their creation, the tenant's other requests
/// waiting in the queue count against the quota too, so queued requests cannot together overrun
/// it once they are placed.
pub fn check(quotas: &Quotas, fleet: &Fleet, vm: &Vm) -> Result<(), Refusal> {
    let Some(tenant) = vm.tenant.as_deref() else {
        return Ok(());
    };
    let Some(limits) = quotas.get(tenant) else {
        return Ok(());
    };
    let mut asked: BTreeMap<&str, u32> = BTreeMap::new();
    for g in &vm.gis {
        *asked
            .entry(fleet.catalog.model(g.model).profiles[g.profile].name.as_str())
            .or_insert(0) += 1;
    }
    let held = usage(fleet, tenant, Some(vm.id));
    let waiting = queued(fleet, tenant, Some(vm.id));
    for (profile, &n) in &asked {
        let limit = limits
            .iter()
            .find(|(k, _)| profile_of_key(k) == *profile)
            .map(|(_, &l)| l);
        let Some(limit) = limit else { continue };
        let has = held.get(*profile).copied().unwrap_or(0);
        let queue = waiting.get(*profile).copied().unwrap_or(0);
        if has + queue + n > limit {
            return Err(Refusal::OverQuota {
                vm: vm.id,
                tenant: tenant.to_string(),
                profile: profile.to_string(),
                limit,
                has,
                queue,
                asked: n,
            });
        }
    }
    Ok(())
}

/// Whether a VM is multi-GPU work: it asks for two or more GIs.
pub(crate) fn is_multi_gpu(vm: &Vm) -> bool {
    vm.gis.len() >= 2
}

/// The routing rule: multi-GPU work only on whole GPUs (every GI the full-GPU profile of
/// its model), never on slices. `Err` names the slice profile and the reason.
pub fn check_multi_gpu(catalog: &Catalog, vm: &Vm) -> Result<(), Refusal> {
    if !is_multi_gpu(vm) {
        return Ok(());
    }
    for g in &vm.gis {
        let model = catalog.model(g.model);
        let p = &model.profiles[g.profile];
        if !is_whole_gpu(model, g.profile) {
            let whole = model
                .profiles
                .iter()
                .enumerate()
                .find(|&(i, _)| is_whole_gpu(model, i))
                .map(|(_, w)| w.name.as_str())
                .unwrap_or("the full-GPU profile");
            return Err(Refusal::MultiGpuOnSlice {
                vm: vm.id,
                gis: vm.gis.len(),
                whole: whole.to_string(),
                slice: p.name.clone(),
            });
        }
    }
    Ok(())
}

/// Whether profile `p` of `model` is the whole GPU (all compute and all memory slices).
pub(crate) fn is_whole_gpu(model: &crate::catalog::GpuModel, p: usize) -> bool {
    let pr = &model.profiles[p];
    pr.size == model.memory_slices && pr.compute == model.compute_slices
}

/// Every admission check of this module for a request about to be placed: the tenant's quotas,
/// then (when `settings.multi_gpu_whole_only` is on) the multi-GPU routing rule. The reason is
/// the [`Refusal`]'s text, as the simulation logs it.
pub fn admission(quotas: &Quotas, settings: &PolicySettings, fleet: &Fleet, vm: &Vm) -> Result<(), String> {
    check(quotas, fleet, vm).map_err(|e| e.to_string())?;
    if settings.multi_gpu_whole_only {
        check_multi_gpu(fleet.catalog, vm).map_err(|e| e.to_string())?;
    }
    Ok(())
}
