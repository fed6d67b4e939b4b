//! Re-layout previews: changing one GPU's layout drains its whole host (docs/operations.md).
//!
//! When a node's MIG config changes, MIG Manager stops every GPU pod on the node, applies the new
//! geometry and restarts them: every tenant on every GPU of the host loses its instance, not only
//! the tenants of the GPU being changed. [`drain_preview`] lists, before anything is applied, every
//! VM the drain would displace and whether each has somewhere else to go: a placement on another
//! host that uses only free slices, cores and RAM (a free instance of its profile elsewhere). The homes are found for all displaced VMs together (largest GI first, then by VM
//! id, each first-fit with the default GI placement), so two VMs are never promised the same free
//! slices. It also says which VMs get an instance back on the host after the re-layout: those on
//! the other GPUs (their geometry is re-applied) and those on the changed GPU whose profiles the
//! new layout still holds (in VM id order, while instances last).
//!
//! The preview only reads the fleet; applying a re-layout is the caller's business.

use crate::fleet::{Fleet, Gpu, Host, HostId, Placement, VmId};
use crate::ops::layouts::{self, Layout};

/// One VM the drain would displace.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Displaced {
    pub vm: VmId,
    pub tenant: Option<String>,
    /// `(gpu, profile)` of each of its GIs on the drained host.
    pub gis: Vec<(usize, String)>,
    /// Whether one of its GIs is on the GPU whose layout changes.
    pub on_changed_gpu: bool,
    /// Whether it gets its instances back on this host once the new layout is applied.
    pub returns_after: bool,
    /// Where it could run meanwhile, on another host, using free resources only; `None` when
    /// there is no such place (the drain would interrupt it).
    #[serde(skip)]
    pub elsewhere: Option<Placement>,
    /// Name of the host of `elsewhere`, for display.
    pub elsewhere_host: Option<String>,
}

/// What re-laying out one GPU would do to its host.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DrainPreview {
    pub host: HostId,
    pub host_name: String,
    pub gpu: usize,
    /// The GPU's instances now, e.g. `2x1g.10gb + 1x2g.20gb + 1x3g.40gb`.
    pub from: String,
    /// The new layout's name and instances.
    pub layout: String,
    pub to: String,
    /// Every VM on the host, by VM id.
    pub displaced: Vec<Displaced>,
}

impl DrainPreview {
    /// Whether every displaced VM has a place on another host.
    pub fn all_have_a_place(&self) -> bool {
        self.displaced.iter().all(|d| d.elsewhere.is_some())
    }

    /// VMs with no place elsewhere: the drain interrupts them.
    pub fn stranded(&self) -> Vec<VmId> {
        self.displaced
            .iter()
            .filter(|d| d.elsewhere.is_none())
            .map(|d| d.vm)
            .collect()
    }

    /// VMs that do not get an instance back on the host after the re-layout.
    pub fn lose_instance(&self) -> Vec<VmId> {
        self.displaced
            .iter()
            .filter(|d| !d.returns_after)
            .map(|d| d.vm)
            .collect()
    }
}

/// Why a GPU cannot be drained for a change: re-layouts and mode changes
/// ([`crate::ops::mode`]) check the GPU they change through the one function [`drained_gpu`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrainError {
    #[error("no host {0}")]
    UnknownHost(HostId),
    #[error("host {host} has no GPU {gpu}")]
    UnknownGpu { host: String, gpu: usize },
    /// A MIG layout asked of a GPU whose model has no MIG.
    #[error("GPU {gpu} of host {host} is a {model}, which has no MIG: it can only be whole or shared")]
    NoMig { host: String, gpu: usize, model: String },
    /// The layout is for another GPU class than the GPU's.
    #[error("layout `{layout}` is for {layout_model} GPUs; GPU {gpu} of host {host} is a {gpu_model}")]
    OtherClass {
        layout: String,
        layout_model: String,
        host: String,
        gpu: usize,
        gpu_model: String,
    },
}

/// The host and the GPU a drain changes, checked: both exist and, when a MIG layout is asked
/// for, the GPU's model has MIG and the layout is of the GPU's class.
pub(crate) fn drained_gpu<'a>(
    fleet: &'a Fleet,
    host: HostId,
    gpu: usize,
    layout: Option<&Layout>,
) -> Result<(&'a Host, &'a Gpu), DrainError> {
    let catalog = fleet.catalog;
    let h = fleet.hosts.get(host).ok_or(DrainError::UnknownHost(host))?;
    let g = h.gpus.get(gpu).ok_or_else(|| DrainError::UnknownGpu {
        host: h.name.clone(),
        gpu,
    })?;
    if let Some(layout) = layout {
        let model = catalog.model(g.model);
        if !model.mig {
            return Err(DrainError::NoMig {
                host: h.name.clone(),
                gpu,
                model: model.name.clone(),
            });
        }
        if !catalog.same_class(layout.model, g.model) {
            return Err(DrainError::OtherClass {
                layout: layout.name.clone(),
                layout_model: catalog.model(layout.model).name.clone(),
                host: h.name.clone(),
                gpu,
                gpu_model: model.name.clone(),
            });
        }
    }
    Ok((h, g))
}

/// Previews giving GPU `gpu` of host `host` the layout `layout` (see the module documentation).
/// `Err` when the host or GPU does not exist or the layout is for another GPU class.
pub fn drain_preview(
    fleet: &Fleet,
    host: HostId,
    gpu: usize,
    layout: &Layout,
) -> Result<DrainPreview, DrainError> {
    let catalog = fleet.catalog;
    let (h, g) = drained_gpu(fleet, host, gpu, Some(layout))?;
    let model = catalog.model(g.model);
    let current: Vec<u32> = (0..model.profiles.len())
        .map(|p| g.occ.counts[p] as u32)
        .collect();
    // Instances of the new layout still free for returning VMs, by profile.
    let mut left: Vec<u32> = layout.counts.clone();
    let mut displaced = Vec::new();
    for &id in &h.vms {
        let Some(vm) = fleet.vm(id) else { continue };
        let Some(p) = &vm.placement else { continue };
        let gis: Vec<(usize, String)> = vm
            .gis
            .iter()
            .zip(&p.gis)
            .map(|(r, s)| (s.gpu, catalog.model(r.model).profiles[r.profile].name.clone()))
            .collect();
        let on_changed: Vec<usize> = vm
            .gis
            .iter()
            .zip(&p.gis)
            .filter(|(_, s)| s.gpu == gpu)
            .map(|(r, _)| r.profile)
            .collect();
        let returns_after = if on_changed.is_empty() {
            true
        } else {
            let mut trial = left.clone();
            let ok = layout.mig_enabled
                && on_changed.iter().all(|&pr| {
                    if trial[pr] > 0 {
                        trial[pr] -= 1;
                        true
                    } else {
                        false
                    }
                });
            if ok {
                left = trial;
            }
            ok
        };
        displaced.push(Displaced {
            vm: id,
            tenant: vm.tenant.clone(),
            gis,
            on_changed_gpu: !on_changed.is_empty(),
            returns_after,
            elsewhere: None,
            elsewhere_host: None,
        });
    }
    // Homes elsewhere for all displaced VMs together, on a scratch copy of the fleet.
    let mut scratch = fleet.clone();
    let mut order: Vec<usize> = (0..displaced.len()).collect();
    order.sort_by_key(|&i| {
        let vm = fleet.vm(displaced[i].vm).expect("listed above");
        (std::cmp::Reverse(vm.memory_slices(catalog)), vm.id)
    });
    for i in order {
        let id = displaced[i].vm;
        let vm = fleet.vm(id).expect("listed above").clone();
        let found = (0..scratch.hosts.len())
            .filter(|&o| o != host)
            .find_map(|o| scratch.host_placement_default(&vm, o));
        if let Some(pl) = found {
            // Reserve it: the VM leaves its old place on the copy and takes the new one.
            if scratch.move_vm(id, pl.clone()).is_ok() {
                displaced[i].elsewhere_host = Some(fleet.hosts[pl.host].name.clone());
                displaced[i].elsewhere = Some(pl);
            }
        }
    }
    Ok(DrainPreview {
        host,
        host_name: h.name.clone(),
        gpu,
        from: layouts::describe_counts(model, &current),
        layout: layout.name.clone(),
        to: layout.describe(model),
        displaced,
    })
}
