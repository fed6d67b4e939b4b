//! Planning a batch of pending requests across GPU modes (docs/model.md, "GPU modes"): the
//! fractional-GPU scheduling note's serving case. Single-GI MIG requests of a GPU model get
//! whole-GPU layouts from the exact layout planner (the fewest GPUs for that demand), laid out on
//! the model's empty MIG GPUs in fleet order (a host filled before the next); every other pending
//! request (soft shares, gangs, multi-GI VMs) then goes through the packing policy's score, so
//! fractional work keeps off hosts whose GPUs are all free and gangs take such hosts.

use super::layout_planner::{self, ExactSettings, PlanError};
use super::layouts::{self, arrange};
use crate::fleet::{Fleet, FleetError, GiSlot, GpuMode, Placement, VmId};
use crate::policy::packing::Packing;
use crate::policy_settings::PackingSettings;
use std::collections::BTreeMap;

/// Why a batch could not be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BatchError {
    #[error("{model}: {source}")]
    Layouts { model: String, source: PlanError },
    #[error("VM {vm}: {source}")]
    Place { vm: VmId, source: FleetError },
}

/// A planned batch: the fleet after it and what it used.
#[derive(Debug, Clone)]
pub struct BatchPlan {
    pub fleet: Fleet,
    /// VMs placed, in the order they were placed.
    pub placed: Vec<VmId>,
    /// MIG GPUs the layouts used, per GPU model name.
    pub layout_gpus: BTreeMap<String, u32>,
    /// Whether HiGHS proved each model's layout plan optimal.
    pub proven_optimal: bool,
    /// GPU models with single-GI requests pending but no free GPU in MIG mode to lay out, with
    /// the number of such requests: they stay pending until a GPU is freed.
    pub no_free_gpu: Vec<(String, usize)>,
}

/// Hosts whose GPUs are all whole and free: room for a whole-node gang.
pub fn free_gang_hosts(fleet: &Fleet) -> usize {
    fleet
        .hosts
        .iter()
        .filter(|h| !h.gpus.is_empty() && h.gpus.iter().all(|g| g.is_free_whole()))
        .count()
}

/// GPUs per mode that hold something: (MIG, whole, shared).
pub fn used_gpus_by_mode(fleet: &Fleet) -> (usize, usize, usize) {
    let mut n = (0, 0, 0);
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus).filter(|g| g.is_used()) {
        match g.mode {
            GpuMode::Mig => n.0 += 1,
            GpuMode::Whole => n.1 += 1,
            GpuMode::Shared => n.2 += 1,
        }
    }
    n
}

/// Plans every pending request of `fleet` (see the module notes); requests that find no room
/// stay pending.
pub fn plan_pending(
    fleet: &Fleet,
    settings: &PackingSettings,
    exact: ExactSettings,
) -> Result<BatchPlan, BatchError> {
    let catalog = fleet.catalog;
    let mut after = fleet.clone();
    let mut placed = Vec::new();
    let mut layout_gpus = BTreeMap::new();
    let mut proven_optimal = true;
    let mut no_free_gpu = Vec::new();
    // Single-GI MIG requests per GPU model, oldest first per profile.
    let mut by_model: BTreeMap<usize, Vec<Vec<VmId>>> = BTreeMap::new();
    for &id in fleet.pending() {
        let Some(vm) = fleet.vm(id) else { continue };
        if vm.is_mig() && vm.gis.len() == 1 {
            let g = vm.gis[0];
            let queues = by_model
                .entry(g.model)
                .or_insert_with(|| vec![Vec::new(); catalog.model(g.model).profiles.len()]);
            queues[g.profile].push(id);
        }
    }
    for (m, mut queues) in by_model {
        let model = catalog.model(m);
        let targets: Vec<(usize, usize)> = after
            .hosts
            .iter()
            .enumerate()
            .flat_map(|(h, host)| {
                host.gpus
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.model == m && g.mode == GpuMode::Mig && !g.is_used())
                    .map(move |(k, _)| (h, k))
            })
            .collect();
        let demand: Vec<u32> = queues.iter().map(|q| q.len() as u32).collect();
        if targets.is_empty() {
            no_free_gpu.push((model.name.clone(), queues.iter().map(Vec::len).sum()));
            continue;
        }
        let plan = layout_planner::exact(
            layouts::embedded(),
            m,
            model,
            &demand,
            targets.len() as u32,
            exact,
        )
        .map_err(|source| BatchError::Layouts {
            model: model.name.clone(),
            source,
        })?;
        proven_optimal &= plan.proven_optimal;
        layout_gpus.insert(model.name.clone(), plan.gpus_used());
        for (planned, &(h, k)) in plan.gpus.iter().zip(&targets) {
            let Some(gis) = arrange(model, &planned.counts) else {
                continue;
            };
            for (p, start) in gis {
                if queues[p].is_empty() {
                    continue;
                }
                let id = queues[p].remove(0);
                let at = Placement {
                    host: h,
                    gis: vec![GiSlot { gpu: k, start }],
                };
                after
                    .place(id, at)
                    .map_err(|source| BatchError::Place { vm: id, source })?;
                placed.push(id);
            }
        }
    }
    // Everything else, oldest first, through the packing score.
    let packing = Packing::new(settings, &Default::default());
    let rest: Vec<VmId> = after.pending().to_vec();
    for id in rest {
        let Some(vm) = after.vm(id).cloned() else { continue };
        if let Some(c) = packing.choose(&after, &vm) {
            after
                .place(id, c.placement)
                .map_err(|source| BatchError::Place { vm: id, source })?;
            placed.push(id);
        }
    }
    Ok(BatchPlan {
        fleet: after,
        placed,
        layout_gpus,
        proven_optimal,
        no_free_gpu,
    })
}
