//! Mode changes of one GPU (docs/operations.md, "Mode changes"): whole, MIG with a layout from
//! `assets/layouts.toml`, or shared. A mode change is a drain: every instance, holder and share on
//! the GPU leaves first. When MIG is on either side of the change (MIG switched on or off, or a
//! new MIG layout), the GPU operator's MIG Manager applies it and restarts every GPU pod of the
//! host, so the drain covers the host, as a re-layout does ([`crate::ops::relayout`]); a change
//! between whole and shared touches only the GPU's own residents.
//!
//! [`mode_preview`] computes the change on a copy of the fleet and lists, for every displaced VM,
//! where it runs afterwards:
//! - a VM with no slot on the changed GPU restarts in place (its GPUs keep their mode);
//! - a VM of the changed GPU gets the first-fit placement of the fleet after the change
//!   (`Fleet::ff_placement`: its GIs at the default start, a share on the first shared GPU with
//!   room, a gang on the first host with enough free whole GPUs), the changed GPU included in its
//!   new mode; largest memory first, then by VM id, so two VMs are never promised one place;
//! - a VM with no such place stays pending.
//!
//! The result is the fleet after the change ([`ModePreview::after`]); applying the change is
//! adopting it, so what the preview says is exactly what applying does.

use crate::catalog::Catalog;
use crate::fleet::{Fleet, GpuMode, HostId, Placement, Shape, VmId};
use crate::ops::layouts::{self, Layout};
use crate::ops::relayout::{drained_gpu, DrainError};

/// The mode asked for: MIG takes a layout of the menu (of the GPU's class, MIG on).
#[derive(Debug, Clone, PartialEq)]
pub enum ModeTarget {
    Whole,
    Mig(Layout),
    Shared,
}

impl ModeTarget {
    pub fn mode(&self) -> GpuMode {
        match self {
            ModeTarget::Whole => GpuMode::Whole,
            ModeTarget::Mig(_) => GpuMode::Mig,
            ModeTarget::Shared => GpuMode::Shared,
        }
    }

    /// `whole`, `mig LAYOUT` or `shared`.
    pub fn describe(&self) -> String {
        match self {
            ModeTarget::Mig(l) => format!("mig {}", l.name),
            o => o.mode().name().to_string(),
        }
    }
}

/// Where a displaced VM runs after the change.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// Restarted where it was (a GPU of the host whose mode does not change).
    InPlace,
    /// A new placement, possibly on the changed GPU in its new mode.
    Moved(Placement),
    /// Nowhere: it waits in the pending queue.
    Pending,
}

/// One VM the drain displaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaver {
    pub vm: VmId,
    pub tenant: Option<String>,
    /// What it holds, e.g. `1g.10gb@gpu 2`, `share 20 GB w 0.25`, `whole`.
    pub what: String,
    /// Whether it has a slot on the changed GPU.
    pub on_changed_gpu: bool,
    pub to: Destination,
}

/// What changing the mode of one GPU does.
#[derive(Debug, Clone)]
pub struct ModePreview {
    pub host: HostId,
    pub host_name: String,
    pub gpu: usize,
    pub from: GpuMode,
    pub target: ModeTarget,
    /// The drain covers every GPU pod of the host (MIG on either side of the change).
    pub host_drain: bool,
    /// Switching MIG on needs a GPU reset on this model (A100, A30); `false` also when MIG is
    /// not being switched on.
    pub needs_reset: bool,
    /// Every displaced VM, by VM id.
    pub leavers: Vec<Leaver>,
    /// The fleet after the change.
    pub after: Fleet,
}

impl ModePreview {
    /// VMs that find no place: they stay pending.
    pub fn stranded(&self) -> Vec<VmId> {
        self.leavers
            .iter()
            .filter(|l| l.to == Destination::Pending)
            .map(|l| l.vm)
            .collect()
    }

    /// Active hosts and GPUs (running at least one VM) before the change, in `fleet`, and after
    /// it: ((hosts, GPUs) before, (hosts, GPUs) after).
    pub fn active(&self, fleet: &Fleet) -> ((usize, usize), (usize, usize)) {
        (
            (fleet.active_hosts(), fleet.active_gpus()),
            (self.after.active_hosts(), self.after.active_gpus()),
        )
    }

    /// Where a leaver goes, in words: `restarts in place`, `-> HOST gpu K`, `nowhere: stays
    /// pending`.
    pub fn destination(&self, l: &Leaver) -> String {
        match &l.to {
            Destination::InPlace => "restarts in place".to_string(),
            Destination::Moved(p) => format!("-> {}", place_label(&self.after, p)),
            Destination::Pending => "nowhere: stays pending".to_string(),
        }
    }

    /// The preview in lines of text (the CLI prints them, the TUI shows them).
    pub fn lines(&self, fleet: &Fleet) -> Vec<String> {
        let mut out = vec![format!(
            "GPU {}/{}: {} -> {}",
            self.host_name,
            self.gpu,
            self.from,
            self.target.describe()
        )];
        if let ModeTarget::Mig(l) = &self.target {
            if let Some(g) = fleet.hosts.get(self.host).and_then(|h| h.gpus.get(self.gpu)) {
                out.push(format!(
                    "layout {}: {}",
                    l.name,
                    l.describe(fleet.catalog.model(g.model))
                ));
            }
        }
        out.push(if self.host_drain {
            format!(
                "drain: host {} (a MIG change restarts every GPU pod of the host under the GPU operator)",
                self.host_name
            )
        } else {
            format!("drain: GPU {}/{} only (no MIG change)", self.host_name, self.gpu)
        });
        if self.target.mode() == GpuMode::Mig && self.from != GpuMode::Mig {
            out.push(if self.needs_reset {
                "enabling MIG on this model needs a GPU reset".into()
            } else {
                "enabling MIG on this model needs no GPU reset".into()
            });
        }
        if self.leavers.is_empty() {
            out.push("nobody leaves".into());
        }
        for l in &self.leavers {
            let to = self.destination(l);
            out.push(format!(
                "VM {}{} ({}): {to}",
                l.vm,
                l.tenant.as_deref().map(|t| format!(" [{t}]")).unwrap_or_default(),
                l.what
            ));
        }
        out
    }
}

/// Why a mode change cannot be previewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    /// The host or GPU does not exist, or the layout does not suit the GPU
    /// ([`crate::ops::relayout::drained_gpu`], shared with re-layouts).
    #[error(transparent)]
    Gpu(#[from] DrainError),
    #[error("layout `{0}` has MIG off: say `whole` or `shared` instead")]
    MigOff(String),
    #[error("GPU {host}/{gpu} is already {mode}")]
    Same { host: String, gpu: usize, mode: String },
    #[error("the change cannot be made: {0}")]
    Fleet(String),
}

/// `HOST/GPU` or `HOST:GPU` (a host's name or index, a GPU's index on it) into (host, gpu).
/// The error says in one phrase what is wrong: the form, an unknown host (naming the first
/// hosts) or a GPU index the host does not have.
pub(crate) fn parse_gpu_ref(fleet: &Fleet, s: &str) -> Result<(HostId, usize), String> {
    let example = fleet.example_gpu_label();
    let Some((h, k)) = s.rsplit_once('/').or_else(|| s.rsplit_once(':')) else {
        return Err(format!("say a host and a GPU index, e.g. `{example}`"));
    };
    let host = fleet
        .hosts
        .iter()
        .position(|x| x.name == h)
        .or_else(|| h.parse::<usize>().ok().filter(|&i| i < fleet.hosts.len()));
    let Some(host) = host else {
        let names: Vec<&str> = fleet.hosts.iter().take(8).map(|h| h.name.as_str()).collect();
        let more = if fleet.hosts.len() > 8 { ", ..." } else { "" };
        return Err(format!("no host `{h}` (hosts: {}{more})", names.join(", ")));
    };
    let n = fleet.hosts[host].gpus.len();
    match k.parse::<usize>() {
        Ok(g) if g < n => Ok((host, g)),
        _ if n == 0 => Err(format!("host `{h}` has no GPUs")),
        _ => Err(format!(
            "host `{h}` has {n} GPU{} (0..={}), no GPU `{k}`",
            if n == 1 { "" } else { "s" },
            n - 1
        )),
    }
}

/// `whole`, `shared` or `mig LAYOUT` (a layout of the menu for the GPU's model or class).
pub fn parse_target(fleet: &Fleet, host: HostId, gpu: usize, words: &[&str]) -> Result<ModeTarget, String> {
    let g = &fleet.hosts[host].gpus[gpu];
    match words {
        ["whole"] => Ok(ModeTarget::Whole),
        ["shared"] => Ok(ModeTarget::Shared),
        ["mig", ..] if !fleet.catalog.model(g.model).mig => Err(format!(
            "GPU {}/{gpu} is a {}, which has no MIG: say whole or shared",
            fleet.hosts[host].name,
            fleet.catalog.model(g.model).name
        )),
        ["mig", name] => {
            let menu = layouts::embedded();
            let l = menu
                .get(g.model, name)
                .or_else(|| {
                    menu.all()
                        .iter()
                        .find(|l| l.name == *name && fleet.catalog.same_class(l.model, g.model))
                })
                .or_else(|| menu.all().iter().find(|l| l.name == *name))
                .ok_or_else(|| {
                    let names: Vec<&str> = menu
                        .all()
                        .iter()
                        .filter(|l| l.mig_enabled && fleet.catalog.same_class(l.model, g.model))
                        .map(|l| l.name.as_str())
                        .collect();
                    format!(
                        "unknown layout `{name}` (known for this GPU: {})",
                        names.join(", ")
                    )
                })?;
            Ok(ModeTarget::Mig(l.clone()))
        }
        ["mig"] => Err("`mig` needs a layout name: mig LAYOUT".into()),
        _ => Err(format!("`{}`: say whole, shared or mig LAYOUT", words.join(" "))),
    }
}

/// Previews changing GPU `gpu` of `host` to `target` (see the module documentation).
pub fn mode_preview(
    fleet: &Fleet,
    host: HostId,
    gpu: usize,
    target: &ModeTarget,
) -> Result<ModePreview, ModeError> {
    let catalog = fleet.catalog;
    let layout = match target {
        ModeTarget::Mig(l) => Some(l),
        _ => None,
    };
    let (h, g) = drained_gpu(fleet, host, gpu, layout)?;
    let model = catalog.model(g.model);
    if let Some(l) = layout {
        if !l.mig_enabled {
            return Err(ModeError::MigOff(l.name.clone()));
        }
    } else if target.mode() == g.mode {
        return Err(ModeError::Same {
            host: h.name.clone(),
            gpu,
            mode: g.mode.name().into(),
        });
    }
    let to = target.mode();
    let host_drain = g.mode == GpuMode::Mig || to == GpuMode::Mig;
    let needs_reset = to == GpuMode::Mig && g.mode != GpuMode::Mig && model.mig_enable_reset;
    // Who leaves: every VM of the host under a host drain, else the residents of the GPU.
    let mut leavers = Vec::new();
    for &id in &h.vms {
        let Some(vm) = fleet.vm(id) else { continue };
        let Some(p) = &vm.placement else { continue };
        let on_changed = p.gis.iter().any(|s| s.gpu == gpu);
        if p.gis.is_empty() || !(on_changed || host_drain) {
            continue;
        }
        leavers.push(Leaver {
            vm: id,
            tenant: vm.tenant.clone(),
            what: holding(catalog, fleet, id, p),
            on_changed_gpu: on_changed,
            to: Destination::Pending,
        });
    }
    // The change on a copy: everybody leaves, the mode changes, then the VMs come back.
    let mut after = fleet.clone();
    let err = |e: crate::fleet::FleetError| ModeError::Fleet(e.to_string());
    for l in &leavers {
        after.unplace(l.vm).map_err(err)?;
    }
    if to != g.mode {
        after.set_gpu_mode(host, gpu, to).map_err(err)?;
    }
    for l in leavers.iter_mut().filter(|l| !l.on_changed_gpu) {
        let p = fleet
            .vm(l.vm)
            .and_then(|v| v.placement.clone())
            .ok_or_else(|| ModeError::Fleet(format!("VM {} lost its placement", l.vm)))?;
        after.place(l.vm, p).map_err(err)?;
        l.to = Destination::InPlace;
    }
    let mut order: Vec<usize> = (0..leavers.len())
        .filter(|&i| leavers[i].on_changed_gpu)
        .collect();
    order.sort_by_key(|&i| {
        let id = leavers[i].vm;
        let size = fleet.vm(id).map(|v| demand(catalog, v)).unwrap_or(0);
        (std::cmp::Reverse(size), id)
    });
    for i in order {
        let id = leavers[i].vm;
        let Some(vm) = after.vm(id).cloned() else { continue };
        if let Some(p) = after.ff_placement(&vm) {
            after.place(id, p.clone()).map_err(err)?;
            leavers[i].to = Destination::Moved(p);
        }
    }
    Ok(ModePreview {
        host,
        host_name: h.name.clone(),
        gpu,
        from: g.mode,
        target: target.clone(),
        host_drain,
        needs_reset,
        leavers,
        after,
    })
}

/// A VM's size for the order of re-placement: memory slices of its GIs, or GB of a share, or
/// whole GPUs (in GB) of a gang.
fn demand(catalog: &Catalog, vm: &crate::fleet::Vm) -> u32 {
    match vm.shape {
        Shape::Mig => vm.memory_slices(catalog) * 10,
        Shape::Share { gb, .. } => gb,
        Shape::Gang { model, gpus } => gpus * crate::fleet::gpu_gb(catalog, model),
    }
}

fn holding(catalog: &Catalog, fleet: &Fleet, id: VmId, p: &Placement) -> String {
    let Some(vm) = fleet.vm(id) else {
        return String::new();
    };
    match vm.shape {
        Shape::Mig => vm
            .gis
            .iter()
            .zip(&p.gis)
            .map(|(r, s)| {
                format!(
                    "{}@gpu {}",
                    catalog.model(r.model).profiles[r.profile].name,
                    s.gpu
                )
            })
            .collect::<Vec<_>>()
            .join(" + "),
        Shape::Share {
            gb,
            weight,
            isolation,
            ..
        } => format!(
            "{}share {gb} GB w {weight:.2} on gpu {}",
            if isolation { "isolated " } else { "" },
            p.gis.first().map(|s| s.gpu).unwrap_or(0)
        ),
        Shape::Gang { gpus, .. } => format!(
            "gang of {gpus}: gpus {}",
            p.gis
                .iter()
                .map(|s| s.gpu.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn place_label(fleet: &Fleet, p: &Placement) -> String {
    let gpus: Vec<String> = p.gis.iter().map(|s| s.gpu.to_string()).collect();
    format!("{} gpu {}", fleet.hosts[p.host].name, gpus.join(","))
}
