//! A regime's run from a scenario: its fleet as it stands (layouts from the nodes'
//! `nvidia.com/mig.config` labels or the instances in use, the VMs as running pods, the pending
//! queue), its workload's arrivals as pods, and the planner's menu per model.

use super::{GpuSpec, NodeSpec, Pod, Setup};
use crate::catalog::{Catalog, ModelId};
use crate::fleet::{GpuMode, Shape};
use crate::ops::layouts::{self, Layout};
use crate::ops::menu_file::MenuFile;
use crate::scenario::{RegimeSettings, Scenario};
use std::collections::BTreeMap;

/// The planner's menu of each MIG model of the fleet: the layouts a mig-parted file offers the
/// model, or the model's menu in `assets/layouts.toml` (every layout on file when it names none).
pub fn menus(
    catalog: &Catalog,
    models: &[ModelId],
    file: Option<&MenuFile>,
) -> BTreeMap<ModelId, Vec<Layout>> {
    let all = layouts::embedded();
    let mut out = BTreeMap::new();
    for &m in models {
        if !catalog.model(m).mig {
            continue;
        }
        let menu: Vec<Layout> = match file {
            Some(f) => f.layouts_for(catalog, m),
            None => {
                let planner = all.planner_menu(m);
                if planner.is_empty() {
                    all.for_model(m).cloned().collect()
                } else {
                    planner.into_iter().cloned().collect()
                }
            }
        };
        out.insert(m, menu);
    }
    out
}

/// The run of `settings` on scenario `sc` (hysteresis resolved with the legacy `[policy]
/// layout_hysteresis`), with the menu of `file` when given. Arrivals come from the scenario's
/// workload over warm-up plus measurement; requests that are not MIG instances (soft shares,
/// gangs) are left out and counted in the second value.
pub fn from_scenario(
    sc: &Scenario,
    settings: &RegimeSettings,
    file: Option<&MenuFile>,
) -> anyhow::Result<(Setup, u64)> {
    let fleet = &sc.fleet;
    let catalog = fleet.catalog;
    let mut models: Vec<ModelId> = Vec::new();
    for h in &fleet.hosts {
        for g in &h.gpus {
            if !models.contains(&g.model) {
                models.push(g.model);
            }
        }
    }
    let menus = menus(catalog, &models, file);
    let mut nodes = Vec::new();
    for h in &fleet.hosts {
        let mut gpus = Vec::new();
        for g in &h.gpus {
            let model = catalog.model(g.model);
            let in_use: Vec<u32> = g.occ.counts[..model.profiles.len()]
                .iter()
                .map(|&c| c as u32)
                .collect();
            let mig = model.mig && g.mode == GpuMode::Mig;
            // The node's label names its layout when the instances in use fit it.
            let labelled = h.mig_config.as_deref().and_then(|name| {
                menus
                    .get(&g.model)
                    .and_then(|m| m.iter().find(|l| l.name == name))
                    .or_else(|| layouts::embedded().get(g.model, name))
                    .filter(|l| l.mig_enabled && l.counts.iter().zip(&in_use).all(|(a, b)| a >= b))
            });
            let counts = match labelled {
                Some(l) if mig => l.counts.clone(),
                _ if mig => in_use,
                _ => vec![0; model.profiles.len()],
            };
            gpus.push(GpuSpec {
                model: g.model,
                mig_enabled: mig,
                counts,
            });
        }
        nodes.push(NodeSpec {
            name: h.name.clone(),
            cores: h.cores,
            ram_gb: h.ram_gb,
            curve: h.curve,
            gpus,
        });
    }
    let mig_pod = |id: u64, vm: &crate::fleet::Vm, arrival: f64, lifetime: Option<f64>| -> Option<Pod> {
        (vm.shape == Shape::Mig && !vm.gis.is_empty()).then(|| Pod {
            id,
            gis: vm.gis.iter().map(|g| (g.model, g.profile)).collect(),
            cores: vm.cores,
            ram_gb: vm.ram_gb,
            arrival,
            lifetime,
        })
    };
    let mut running = Vec::new();
    let mut arrivals = Vec::new();
    let mut skipped = 0u64;
    for vm in fleet.vms() {
        let left = vm
            .lifetime
            .map(|l| (l - (sc.now_s - vm.admitted_at.unwrap_or(sc.now_s))).max(0.0));
        match (&vm.placement, mig_pod(vm.id, vm, 0.0, left)) {
            (Some(pl), Some(pod)) => running.push((pod, pl.host, pl.gis.iter().map(|s| s.gpu).collect())),
            (None, Some(pod)) => arrivals.push(pod),
            (_, None) => skipped += 1,
        }
    }
    let warmup_s = sc.workload.warmup_h * 3600.0;
    let horizon_s = warmup_s + sc.workload.measure_h * 3600.0;
    if sc.workload.enabled {
        let mut w = crate::workload::Workload::new(&sc.workload, fleet, 0.0)?;
        let mut id = fleet.vms().map(|v| v.id).max().unwrap_or(0) + 1;
        while w.peek_time().is_some_and(|t| t <= horizon_s) {
            let Some(r) = w.pop() else { break };
            let vm = r.to_vm(id);
            match mig_pod(id, &vm, r.arrival, Some(r.lifetime)) {
                Some(p) => arrivals.push(p),
                None => skipped += 1,
            }
            id += 1;
        }
    }
    let hysteresis = settings.hysteresis_or(sc.policy.legacy_layout_hysteresis);
    Ok((
        Setup {
            catalog,
            nodes,
            menus,
            settings: settings.clone(),
            hysteresis,
            running,
            arrivals,
            warmup_s,
            horizon_s,
        },
        skipped,
    ))
}
