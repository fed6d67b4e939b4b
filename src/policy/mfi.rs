//! MFI (§6.3): the Minimum Fragmentation Increment policy of Zambianco et al., adapted to VMs on
//! hosts as the paper does. A GPU's fragmentation score sums, over the profiles whose memory
//! slices fit in the GPU's free slices, the profile's memory slices times the number of its
//! permitted starts that are not all free ([`super::cache::mfi_score`]). The GIs of a VM go,
//! largest first, to one host with enough cores and RAM, each GI to the GPU and start of that
//! host that raise the score least; the host with the smallest total increase wins. Ties go to
//! the lowest host, GPU and start.

use super::cache::{Lazy, Tables};
use super::Policy;
use crate::fleet::{Fleet, GiSlot, GpuMode, HostId, Placement, Vm};
use crate::mig::Occupancy;

#[derive(Debug, Clone, Default)]
pub(crate) struct Mfi {
    tables: Lazy,
}

impl Mfi {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The MFI placement of `vm` on host `h` and its total score increase, if the host has room.
pub(crate) fn host_placement(tables: &Tables, fleet: &Fleet, vm: &Vm, h: HostId) -> Option<(i64, Placement)> {
    let host = &fleet.hosts[h];
    if host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
        return None;
    }
    let catalog = fleet.catalog;
    let mut occs: Vec<Occupancy> = host.gpus.iter().map(|g| g.occ).collect();
    let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
    let mut total: i64 = 0;
    for i in vm.gis_largest_first(catalog) {
        let req = vm.gis[i];
        // (increase, gpu, start)
        let mut best: Option<(i64, usize, u8)> = None;
        for (k, gpu) in host.gpus.iter().enumerate() {
            // MFI treats MIG GPUs only; whole and shared GPUs take no GI.
            if gpu.mode != GpuMode::Mig || !catalog.same_class(req.model, gpu.model) {
                continue;
            }
            let model = catalog.model(gpu.model);
            let occ = &occs[k];
            if occ.counts[req.profile] >= model.profiles[req.profile].max_instances {
                continue;
            }
            let before = tables.mfi(gpu.model, occ.mask) as i64;
            let prof = &model.profiles[req.profile];
            for &z in &prof.starts {
                let m = prof.mask_at(z);
                if occ.mask & m != 0 {
                    continue;
                }
                let inc = tables.mfi(gpu.model, occ.mask | m) as i64 - before;
                if best.is_none_or(|(b, _, _)| inc < b) {
                    best = Some((inc, k, z));
                }
            }
        }
        let (inc, k, z) = best?;
        let model = catalog.model(host.gpus[k].model);
        occs[k].add(model, req.profile, z);
        slots[i] = GiSlot { gpu: k, start: z };
        total += inc;
    }
    Some((total, Placement { host: h, gis: slots }))
}

impl Policy for Mfi {
    fn name(&self) -> &str {
        "mfi"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) -> Option<Placement> {
        if !vm.is_mig() {
            // Shares and gangs: first fit (MFI scores MIG placements only).
            return fleet.ff_placement(vm);
        }
        let tables = self.tables.get(fleet.catalog);
        let mut best: Option<(i64, Placement)> = None;
        for h in 0..fleet.hosts.len() {
            if let Some((inc, p)) = host_placement(&tables, fleet, vm, h) {
                if best.as_ref().is_none_or(|(b, _)| inc < *b) {
                    best = Some((inc, p));
                }
            }
        }
        best.map(|(_, p)| p)
    }
}
