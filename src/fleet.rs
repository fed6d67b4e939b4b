//! Fleet state: hosts with GPUs, VMs with their GIs, placements and the pending queue
//! (§4 of the paper). Every operation validates first and then either applies fully or returns a typed
//! [`FleetError`] and changes nothing. [`Fleet::check_invariants`] recomputes everything from
//! scratch; tests call it after every operation.

use crate::catalog::{Catalog, ModelId, ProfileId};
use crate::mig::{self, Occupancy};
use std::collections::BTreeMap;

mod ff_index;
use ff_index::FfIndex;

pub type VmId = u64;
pub type HostId = usize;

/// Job or tenant (§6.2): jobs are short, tenants long-lived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VmKind {
    Job,
    Tenant,
}

/// One GI a VM asks for: a profile of a model's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GiRequest {
    pub model: ModelId,
    pub profile: ProfileId,
}

impl GiRequest {
    /// One GI per profile name, all of the GPU model named `model`; `None` when the catalog has
    /// no such model or the model no such profile.
    pub fn named(catalog: &Catalog, model: &str, profiles: &[&str]) -> Option<Vec<GiRequest>> {
        let m = catalog.model_id(model)?;
        profiles
            .iter()
            .map(|p| {
                Some(GiRequest {
                    model: m,
                    profile: catalog.model(m).profile(p)?,
                })
            })
            .collect()
    }
}

/// Where one GI of a VM sits: a GPU of the VM's host and a start slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GiSlot {
    pub gpu: usize,
    pub start: u8,
}

/// A VM's placement: its host and, per GI (in the VM's order), a GPU and start.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placement {
    pub host: HostId,
    pub gis: Vec<GiSlot>,
}

/// The mode of one GPU (docs/model.md, "GPU modes"): a GPU is in exactly one mode at a time.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum GpuMode {
    /// MIG on: a layout of isolated GPU instances (the paper's model; the default).
    #[default]
    Mig,
    /// MIG off, held by at most one VM: a single-GPU tenant or one member of a gang.
    Whole,
    /// MIG off, soft shares (a memory limit and a compute weight each) with no isolation.
    Shared,
}

impl GpuMode {
    pub const ALL: [GpuMode; 3] = [GpuMode::Mig, GpuMode::Whole, GpuMode::Shared];

    /// The name used in scenario files and messages.
    pub fn name(self) -> &'static str {
        match self {
            GpuMode::Mig => "mig",
            GpuMode::Whole => "whole",
            GpuMode::Shared => "shared",
        }
    }

    /// The mode named `s` (as written in scenario files).
    pub fn parse(s: &str) -> Option<GpuMode> {
        GpuMode::ALL.into_iter().find(|m| m.name() == s)
    }
}

impl std::fmt::Display for GpuMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a VM asks of the GPUs: MIG instances (its `gis`), a soft share of one GPU, or a gang of
/// whole GPUs on one host. The `gis` of a VM are empty unless its shape is [`Shape::Mig`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Shape {
    /// The VM's `gis`, on GPUs in MIG mode (none for a CPU-only VM).
    #[default]
    Mig,
    /// A soft share of one GPU of `model`'s class: a memory limit in GB and a compute weight
    /// (> 0; the weights of a GPU may sum past 1). Without isolation it goes on a shared GPU;
    /// with isolation it never does: it takes a whole GPU alone.
    Share {
        model: ModelId,
        gb: u32,
        weight: f64,
        isolation: bool,
    },
    /// `gpus` whole GPUs of `model`'s class on one host.
    Gang { model: ModelId, gpus: u32 },
}

impl Shape {
    /// GPU slots a placement of this shape lists: one per GI, one for a share, one per gang GPU.
    pub fn slots(&self, gis: usize) -> usize {
        match self {
            Shape::Mig => gis,
            Shape::Share { .. } => 1,
            Shape::Gang { gpus, .. } => *gpus as usize,
        }
    }

    /// The mode of GPU a slot of this shape needs.
    pub(crate) fn gpu_mode(&self) -> GpuMode {
        match self {
            Shape::Mig => GpuMode::Mig,
            Shape::Share { isolation: false, .. } => GpuMode::Shared,
            Shape::Share { isolation: true, .. } | Shape::Gang { .. } => GpuMode::Whole,
        }
    }
}

/// A virtual machine request, placed or pending.
#[derive(Debug, Clone, PartialEq)]
pub struct Vm {
    pub id: VmId,
    pub gis: Vec<GiRequest>,
    /// What the VM asks of the GPUs; [`Shape::Mig`] (its `gis`) unless it is a share or a gang.
    pub shape: Shape,
    pub cores: u32,
    pub ram_gb: u32,
    pub kind: VmKind,
    /// Arrival time, seconds of simulated time.
    pub arrival: f64,
    /// Lifetime in seconds from admission; `None` is open-ended.
    pub lifetime: Option<f64>,
    /// Admission time, once placed.
    pub admitted_at: Option<f64>,
    /// Owning tenant, for quotas and chargeback.
    pub tenant: Option<String>,
    pub placement: Option<Placement>,
}

impl Vm {
    /// A job arriving at time 0 with no lifetime, no tenant and no placement; change the other
    /// fields with struct update syntax (`Vm { kind: VmKind::Tenant, ..Vm::job(..) }`).
    pub fn job(id: VmId, gis: Vec<GiRequest>, cores: u32, ram_gb: u32) -> Vm {
        Vm {
            id,
            gis,
            shape: Shape::Mig,
            cores,
            ram_gb,
            kind: VmKind::Job,
            arrival: 0.0,
            lifetime: None,
            admitted_at: None,
            tenant: None,
            placement: None,
        }
    }

    /// Memory slices requested over all GIs.
    pub fn memory_slices(&self, catalog: &Catalog) -> u32 {
        self.gis
            .iter()
            .map(|g| catalog.model(g.model).profiles[g.profile].size as u32)
            .sum()
    }

    /// Memory in GB of all GIs.
    pub(crate) fn gpu_memory_gb(&self, catalog: &Catalog) -> f64 {
        self.gis
            .iter()
            .map(|g| catalog.model(g.model).profiles[g.profile].memory_gb)
            .sum()
    }

    /// GB a live migration of the VM to another host copies (§6.6): its RAM and the memory of
    /// its GIs. A property of the VM alone; [`crate::executor::copied_gb`] charges it to a move
    /// between hosts and nothing to one within a host.
    pub fn migration_gb(&self, catalog: &Catalog) -> f64 {
        self.ram_gb as f64 + self.gpu_memory_gb(catalog)
    }

    /// A job asking for a soft share of a GPU of `model`: `gb` of memory, compute `weight`.
    pub fn share(
        id: VmId,
        model: ModelId,
        gb: u32,
        weight: f64,
        isolation: bool,
        cores: u32,
        ram_gb: u32,
    ) -> Vm {
        Vm {
            shape: Shape::Share {
                model,
                gb,
                weight,
                isolation,
            },
            ..Vm::job(id, Vec::new(), cores, ram_gb)
        }
    }

    /// A job asking for a gang of `gpus` whole GPUs of `model` on one host.
    pub fn gang(id: VmId, model: ModelId, gpus: u32, cores: u32, ram_gb: u32) -> Vm {
        Vm {
            shape: Shape::Gang { model, gpus },
            ..Vm::job(id, Vec::new(), cores, ram_gb)
        }
    }

    /// Class (model) of the VM's GIs, share or gang, if any.
    pub fn model(&self) -> Option<ModelId> {
        match self.shape {
            Shape::Mig => self.gis.first().map(|g| g.model),
            Shape::Share { model, .. } | Shape::Gang { model, .. } => Some(model),
        }
    }

    /// Whether the VM asks for MIG instances (what FF, MFI, TC and OrigaMIG place).
    pub fn is_mig(&self) -> bool {
        self.shape == Shape::Mig
    }

    /// Departure time, if admitted with a finite lifetime.
    pub fn departure(&self) -> Option<f64> {
        Some(self.admitted_at? + self.lifetime?)
    }

    /// Indices of the GIs, largest memory size first (ties by index): the order in which every
    /// placement policy places them (§6.3).
    pub(crate) fn gis_largest_first(&self, catalog: &Catalog) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.gis.len()).collect();
        order.sort_by_key(|&i| {
            let g = self.gis[i];
            (
                std::cmp::Reverse(catalog.model(g.model).profiles[g.profile].size),
                i,
            )
        });
        order
    }
}

/// A GI resident on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResidentGi {
    pub vm: VmId,
    /// Index of the GI within its VM.
    pub index: usize,
    pub profile: ProfileId,
    pub start: u8,
}

/// A soft share resident on a shared GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResidentShare {
    pub vm: VmId,
    /// Memory limit in GB.
    pub gb: u32,
    /// Compute weight.
    pub weight: f64,
}

/// A GPU of a host, in one [`GpuMode`]: MIG GIs (`occ`, `gis`), one whole-GPU holder, or soft
/// shares; the residents of the other modes are empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub model: ModelId,
    pub mode: GpuMode,
    pub occ: Occupancy,
    pub gis: Vec<ResidentGi>,
    /// The VM holding a whole GPU (a single-GPU tenant, an isolated share or a gang member).
    pub holder: Option<VmId>,
    /// The soft shares of a shared GPU, by VM id.
    pub shares: Vec<ResidentShare>,
}

impl Gpu {
    pub fn new(model: ModelId) -> Self {
        Gpu::with_mode(model, GpuMode::Mig)
    }

    pub(crate) fn with_mode(model: ModelId, mode: GpuMode) -> Self {
        Gpu {
            model,
            mode,
            occ: Occupancy::empty(),
            gis: Vec::new(),
            holder: None,
            shares: Vec::new(),
        }
    }

    /// The GPU holds something: a GI, a whole-GPU holder or a share.
    pub fn is_used(&self) -> bool {
        !self.occ.is_empty() || self.holder.is_some() || !self.shares.is_empty()
    }

    /// Memory in GB taken by the soft shares.
    pub fn shared_gb(&self) -> u32 {
        self.shares.iter().map(|s| s.gb).sum()
    }

    /// Memory in GB still free for soft shares (0 unless the GPU is shared).
    pub fn free_share_gb(&self, catalog: &Catalog) -> u32 {
        if self.mode != GpuMode::Shared {
            return 0;
        }
        gpu_gb(catalog, self.model).saturating_sub(self.shared_gb())
    }

    /// Sum of the compute weights of the soft shares; above 1 the GPU is oversubscribed.
    pub fn weight_sum(&self) -> f64 {
        self.shares.iter().map(|s| s.weight).sum()
    }

    /// Whole GPU free for a holder: whole mode and nobody holds it.
    pub(crate) fn is_free_whole(&self) -> bool {
        self.mode == GpuMode::Whole && self.holder.is_none()
    }

    /// The GI covering memory slice `u`, if any.
    pub(crate) fn gi_at(&self, catalog: &Catalog, u: u8) -> Option<&ResidentGi> {
        let m = catalog.model(self.model);
        self.gis
            .iter()
            .find(|g| m.profiles[g.profile].mask_at(g.start) & (1 << u) != 0)
    }
}

/// A GPU model's memory in whole GB (the capacity of a shared GPU).
pub(crate) fn gpu_gb(catalog: &Catalog, model: ModelId) -> u32 {
    catalog.model(model).memory_gb.floor() as u32
}

/// A physical machine (PM).
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub cores: u32,
    pub ram_gb: u32,
    pub gpus: Vec<Gpu>,
    /// Index of the host's power curve in the catalog.
    pub curve: usize,
    pub used_cores: u32,
    pub used_ram: u32,
    /// VMs placed here, ascending.
    pub vms: Vec<VmId>,
    /// Free-text teaching notes shown beside the host (and per GPU index).
    pub note: Option<String>,
    pub gpu_notes: BTreeMap<usize, String>,
    /// The node's `nvidia.com/mig.config` label as imported from Kubernetes: the layout its GPUs
    /// are configured with, which a Kubernetes export keeps while the instances in use fit it.
    pub mig_config: Option<String>,
}

impl Host {
    pub fn new(name: impl Into<String>, cores: u32, ram_gb: u32, gpus: Vec<ModelId>, curve: usize) -> Self {
        Host {
            name: name.into(),
            cores,
            ram_gb,
            gpus: gpus.into_iter().map(Gpu::new).collect(),
            curve,
            used_cores: 0,
            used_ram: 0,
            vms: Vec::new(),
            note: None,
            gpu_notes: BTreeMap::new(),
            mig_config: None,
        }
    }

    /// A host is active (switched on) while it runs at least one VM.
    pub fn is_active(&self) -> bool {
        !self.vms.is_empty()
    }

    pub(crate) fn free_cores(&self) -> u32 {
        self.cores - self.used_cores
    }

    pub(crate) fn free_ram(&self) -> u32 {
        self.ram_gb - self.used_ram
    }
}

/// Why a fleet operation was refused. Nothing was changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FleetError {
    #[error("no VM {0}")]
    UnknownVm(VmId),
    #[error("no host {0}")]
    UnknownHost(HostId),
    #[error("host {host} has no GPU {gpu}")]
    UnknownGpu { host: String, gpu: usize },
    #[error("VM {0} exists already")]
    DuplicateVm(VmId),
    /// The VM is already placed (for `place`) or not placed (for `move_vm`).
    #[error("VM {0} is already placed")]
    AlreadyPlaced(VmId),
    #[error("VM {0} is not placed")]
    NotPlaced(VmId),
    /// The placement lists a different number of GIs than the VM asks for.
    #[error("VM {vm} asks for {want} GIs but the placement gives {got}")]
    GiCount { vm: VmId, want: usize, got: usize },
    #[error("profile {profile} cannot run on a {gpu_model} GPU (another class)")]
    ClassMismatch { gpu_model: String, profile: String },
    #[error("{profile} may not start at slice {start}: permitted starts are {permitted:?}")]
    StartNotPermitted {
        profile: String,
        start: u8,
        permitted: Vec<u8>,
    },
    #[error("slice {slice} of host {host} GPU {gpu} is taken by {}", taker(by))]
    SliceTaken {
        host: String,
        gpu: usize,
        slice: u8,
        by: Option<VmId>,
    },
    #[error("a GPU holds at most {max} instance(s) of {profile}")]
    InstanceLimit { profile: String, max: u8 },
    #[error("host {host} has {free} free cores, {need} needed")]
    Cores { host: String, need: u32, free: u32 },
    #[error("host {host} has {free} GB free RAM, {need} needed")]
    Ram { host: String, need: u32, free: u32 },
    /// The GPU is not in the mode the request needs (a GI needs MIG, a share a shared GPU, an
    /// isolated share or a gang member a whole GPU).
    #[error("host {host} GPU {gpu} is in {mode} mode; VM {vm} needs a GPU in {need} mode")]
    ModeMismatch {
        host: String,
        gpu: usize,
        vm: VmId,
        mode: GpuMode,
        need: GpuMode,
    },
    /// A request with isolation may not go on a shared GPU (soft shares have no isolation).
    #[error("VM {vm} asks for isolation but host {host} GPU {gpu} is shared (soft shares have no memory or fault isolation)")]
    IsolationOnShared { host: String, gpu: usize, vm: VmId },
    /// The share does not fit in the memory the shared GPU has left.
    #[error(
        "host {host} GPU {gpu} has {free} GB of its {total} GB free for shares, VM {vm} asks for {need} GB"
    )]
    ShareMemory {
        host: String,
        gpu: usize,
        vm: VmId,
        need: u32,
        free: u32,
        total: u32,
    },
    /// A whole GPU is held by another VM.
    #[error("host {host} GPU {gpu} is held whole by VM {by}")]
    GpuHeld { host: String, gpu: usize, by: VmId },
    /// A gang lists one GPU twice.
    #[error("VM {vm} lists host {host} GPU {gpu} twice")]
    GpuTwice { host: String, gpu: usize, vm: VmId },
    /// A mode change on a GPU that still holds work (a mode change is a drain: all leave first).
    #[error("host {host} GPU {gpu} still holds {residents} instance(s) or share(s): drain it before changing its mode")]
    GpuBusy {
        host: String,
        gpu: usize,
        residents: usize,
    },
    /// MIG mode on a GPU model without MIG.
    #[error("{model} has no MIG: its GPUs can only be whole or shared")]
    NoMig { model: String },
    /// No host can take the VM under the policy in use.
    #[error("no host has room for VM {0}")]
    NoRoom(VmId),
    #[error("{0}")]
    BadRequest(String),
}

/// What a non-MIG shape is called in messages.
fn shape_word(shape: &Shape) -> &'static str {
    match shape {
        Shape::Mig => "GI",
        Shape::Share { isolation: false, .. } => "share",
        Shape::Share { isolation: true, .. } => "isolated share",
        Shape::Gang { .. } => "gang",
    }
}

/// Who holds a taken slice, for [`FleetError::SliceTaken`].
fn taker(by: &Option<VmId>) -> String {
    match by {
        Some(v) => format!("VM {v}"),
        None => "another GI of the same VM".to_string(),
    }
}

/// What [`Fleet::check_invariants`] recomputes per host: cores, RAM, VMs, GPU occupancies and
/// resident GIs (vm, index, profile, start) per GPU.
type HostTally = (
    u32,
    u32,
    Vec<VmId>,
    Vec<Occupancy>,
    Vec<Vec<(VmId, usize, ProfileId, u8)>>,
);

/// The counters behind the consolidation gap of §5.1 (Eq. 17 and 18), kept up to date by every
/// placement and release in O(1) per GI, so that the gap of a class costs O(models) to read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GapCounters {
    /// Per GPU model (by [`ModelId`]): GPUs holding at least one GI.
    pub active_gpus: Vec<u32>,
    /// Per GPU model: memory slices of the GIs placed on GPUs of that model.
    pub placed_slices: Vec<u32>,
    /// Hosts without GPUs (the class M0 of Eq. 18) that run a VM.
    pub m0_active: u32,
    /// Cores and RAM (GB) of the VMs running on hosts without GPUs.
    pub m0_cores: u64,
    pub m0_ram: u64,
}

impl GapCounters {
    /// Counts everything from scratch.
    fn tally(catalog: &Catalog, hosts: &[Host], vms: &BTreeMap<VmId, Vm>) -> Self {
        let mut c = GapCounters {
            active_gpus: vec![0; catalog.models.len()],
            placed_slices: vec![0; catalog.models.len()],
            ..Default::default()
        };
        for host in hosts {
            for gpu in &host.gpus {
                if !gpu.occ.is_empty() {
                    c.active_gpus[gpu.model] += 1;
                }
                c.placed_slices[gpu.model] += gpu.occ.used_slices();
            }
            if host.gpus.is_empty() && host.is_active() {
                c.m0_active += 1;
                for id in &host.vms {
                    if let Some(vm) = vms.get(id) {
                        c.m0_cores += vm.cores as u64;
                        c.m0_ram += vm.ram_gb as u64;
                    }
                }
            }
        }
        c
    }
}

/// The state of a fleet: hosts, VMs (placed or pending) and the pending queue Q.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    pub catalog: &'static Catalog,
    pub hosts: Vec<Host>,
    vms: BTreeMap<VmId, Vm>,
    /// Pending VMs, oldest first.
    pending: Vec<VmId>,
    next_id: VmId,
    gap: GapCounters,
    /// First fit's index of hosts by free resources, kept current by every placement change.
    ff_index: FfIndex,
}

impl Fleet {
    /// Per GI of `vm`, every (GPU, start) of host `h` that the GI's class and profile permit,
    /// free or not: the search space of brute-force checks (an empty list when the host has no
    /// GPU of the class).
    pub fn slot_options(&self, vm: &Vm, h: HostId) -> Vec<Vec<GiSlot>> {
        let c = self.catalog;
        vm.gis
            .iter()
            .map(|g| {
                let prof = &c.model(g.model).profiles[g.profile];
                let mut o = Vec::new();
                for (k, gpu) in self.hosts[h].gpus.iter().enumerate() {
                    if c.same_class(g.model, gpu.model) {
                        o.extend(prof.starts.iter().map(|&z| GiSlot { gpu: k, start: z }));
                    }
                }
                o
            })
            .collect()
    }

    pub fn new(catalog: &'static Catalog, hosts: Vec<Host>) -> Self {
        let vms = BTreeMap::new();
        let gap = GapCounters::tally(catalog, &hosts, &vms);
        let ff_index = FfIndex::new(catalog, &hosts);
        Fleet {
            catalog,
            ff_index,
            hosts,
            vms,
            pending: Vec::new(),
            next_id: 1,
            gap,
        }
    }

    /// The counters of the consolidation gap (§5.1, Eq. 17 and 18).
    pub fn gap_counters(&self) -> &GapCounters {
        &self.gap
    }

    /// All VMs, placed and pending, by id.
    pub fn vms(&self) -> impl Iterator<Item = &Vm> {
        self.vms.values()
    }

    pub fn vm(&self, id: VmId) -> Option<&Vm> {
        self.vms.get(&id)
    }

    /// Mutable access to a VM's bookkeeping fields; the placement must not be changed through it.
    pub(crate) fn vm_meta_mut(&mut self, id: VmId) -> Option<&mut Vm> {
        self.vms.get_mut(&id)
    }

    /// Pending VMs, oldest first.
    pub fn pending(&self) -> &[VmId] {
        &self.pending
    }

    /// A fresh VM id (ids are never reused).
    pub fn next_vm_id(&self) -> VmId {
        self.next_id
    }

    /// Validates a VM request on its own: GI classes and profiles, resources.
    pub(crate) fn validate_request(&self, vm: &Vm) -> Result<(), FleetError> {
        let bad = |what: String| Err(FleetError::BadRequest(format!("VM {}: {what}", vm.id)));
        match vm.shape {
            Shape::Mig => {}
            Shape::Share {
                model, gb, weight, ..
            } => {
                if !vm.gis.is_empty() {
                    return bad("a share lists no MIG profiles".into());
                }
                if model >= self.catalog.models.len() {
                    return bad("unknown GPU model".into());
                }
                if gb == 0 {
                    return bad("a share needs at least 1 GB".into());
                }
                if !(weight.is_finite() && weight > 0.0) {
                    return bad(format!("a share's weight must be a number > 0, not {weight}"));
                }
            }
            Shape::Gang { model, gpus } => {
                if !vm.gis.is_empty() {
                    return bad("a gang lists no MIG profiles".into());
                }
                if model >= self.catalog.models.len() {
                    return bad("unknown GPU model".into());
                }
                if gpus == 0 {
                    return bad("a gang needs at least 1 GPU".into());
                }
            }
        }
        if let Some(first) = vm.gis.first() {
            for g in &vm.gis {
                if g.model >= self.catalog.models.len() {
                    return Err(FleetError::BadRequest(format!("VM {}: unknown GPU model", vm.id)));
                }
                if g.profile >= self.catalog.model(g.model).profiles.len() {
                    return Err(FleetError::BadRequest(format!("VM {}: unknown profile", vm.id)));
                }
                if !self.catalog.same_class(first.model, g.model) {
                    return Err(FleetError::BadRequest(format!(
                        "VM {}: all GIs of a VM must be of one class",
                        vm.id
                    )));
                }
            }
        }
        Ok(())
    }

    fn insert_vm(&mut self, mut vm: Vm) -> Result<VmId, FleetError> {
        if vm.id == 0 {
            vm.id = self.next_id;
        }
        if self.vms.contains_key(&vm.id) {
            return Err(FleetError::DuplicateVm(vm.id));
        }
        self.validate_request(&vm)?;
        let id = vm.id;
        self.next_id = self.next_id.max(id + 1);
        vm.placement = None;
        self.vms.insert(id, vm);
        Ok(id)
    }

    /// Adds a VM to the pending queue (id 0 assigns a fresh id). Returns its id.
    pub fn add_pending(&mut self, vm: Vm) -> Result<VmId, FleetError> {
        let id = self.insert_vm(vm)?;
        self.pending.push(id);
        Ok(id)
    }

    /// Adds a VM and places it at once at `placement` (id 0 assigns a fresh id).
    pub fn add_placed(&mut self, mut vm: Vm, placement: Placement) -> Result<VmId, FleetError> {
        if vm.id == 0 {
            vm.id = self.next_id;
        }
        if self.vms.contains_key(&vm.id) {
            return Err(FleetError::DuplicateVm(vm.id));
        }
        self.validate_request(&vm)?;
        self.validate_placement(&vm, &placement, false)?;
        let id = self.insert_vm(vm)?;
        self.apply_placement(id, placement);
        Ok(id)
    }

    /// Places a pending VM at `placement` and takes it off the queue.
    pub fn place(&mut self, id: VmId, placement: Placement) -> Result<(), FleetError> {
        let vm = self.vms.get(&id).ok_or(FleetError::UnknownVm(id))?;
        if vm.placement.is_some() {
            return Err(FleetError::AlreadyPlaced(id));
        }
        self.validate_placement(vm, &placement, false)?;
        self.pending.retain(|&p| p != id);
        self.apply_placement(id, placement);
        Ok(())
    }

    /// Moves a placed VM to `placement` (its own current GIs, cores and RAM count as free).
    pub fn move_vm(&mut self, id: VmId, placement: Placement) -> Result<(), FleetError> {
        let vm = self.vms.get(&id).ok_or(FleetError::UnknownVm(id))?;
        if vm.placement.is_none() {
            return Err(FleetError::NotPlaced(id));
        }
        self.validate_placement(vm, &placement, true)?;
        self.release(id);
        self.apply_placement(id, placement);
        Ok(())
    }

    /// Removes a VM (placed or pending) from the fleet and returns it.
    pub fn remove(&mut self, id: VmId) -> Result<Vm, FleetError> {
        // `release` reads the VM, so it runs first; for an unknown VM it changes nothing.
        self.release(id);
        let vm = self.vms.remove(&id).ok_or(FleetError::UnknownVm(id))?;
        self.pending.retain(|&p| p != id);
        Ok(vm)
    }

    /// Takes a placed VM off its host and puts it back on the pending queue (at the back).
    pub fn unplace(&mut self, id: VmId) -> Result<(), FleetError> {
        let vm = self.vms.get(&id).ok_or(FleetError::UnknownVm(id))?;
        if vm.placement.is_none() {
            return Err(FleetError::NotPlaced(id));
        }
        self.release(id);
        self.pending.push(id);
        Ok(())
    }

    /// A copy of the fleet with every VM of `targets` at its target placement. VMs already at
    /// their target are left as they are; the others are all taken off first, so a VM may take a
    /// slot that another one leaves (placing them one by one would fail on such a swap). On
    /// failure: the VM whose target the fleet refuses, and why.
    pub(crate) fn with_placements(
        &self,
        targets: &BTreeMap<VmId, Placement>,
    ) -> Result<Fleet, (VmId, FleetError)> {
        let mut after = self.clone();
        let movers: Vec<(VmId, &Placement)> = targets
            .iter()
            .filter(|(id, to)| self.vm(**id).and_then(|v| v.placement.as_ref()) != Some(*to))
            .map(|(&id, to)| (id, to))
            .collect();
        for &(id, _) in &movers {
            if after.vm(id).is_some_and(|v| v.placement.is_some()) {
                after.unplace(id).map_err(|e| (id, e))?;
            }
        }
        for &(id, to) in &movers {
            after.place(id, to.clone()).map_err(|e| (id, e))?;
        }
        Ok(after)
    }

    /// Takes a pending VM off the queue and out of the fleet (a rejection).
    pub fn reject_pending(&mut self, id: VmId) -> Result<Vm, FleetError> {
        if !self.pending.contains(&id) {
            return Err(FleetError::UnknownVm(id));
        }
        self.remove(id)
    }

    /// Checks that `vm` may take `placement`. With `moving`, the VM's current GIs, cores and RAM
    /// count as free.
    pub fn validate_placement(&self, vm: &Vm, placement: &Placement, moving: bool) -> Result<(), FleetError> {
        let host = self
            .hosts
            .get(placement.host)
            .ok_or(FleetError::UnknownHost(placement.host))?;
        let want = vm.shape.slots(vm.gis.len());
        if placement.gis.len() != want {
            return Err(FleetError::GiCount {
                vm: vm.id,
                want,
                got: placement.gis.len(),
            });
        }
        let current = if moving { vm.placement.as_ref() } else { None };
        let same_host = current.is_some_and(|c| c.host == placement.host);
        let (mut free_cores, mut free_ram) = (host.free_cores(), host.free_ram());
        if same_host {
            free_cores += vm.cores;
            free_ram += vm.ram_gb;
        }
        if vm.cores > free_cores {
            return Err(FleetError::Cores {
                host: host.name.clone(),
                need: vm.cores,
                free: free_cores,
            });
        }
        if vm.ram_gb > free_ram {
            return Err(FleetError::Ram {
                host: host.name.clone(),
                need: vm.ram_gb,
                free: free_ram,
            });
        }
        if vm.shape != Shape::Mig {
            return self.validate_whole_or_share(vm, host, placement, same_host);
        }
        // Occupancy per touched GPU, with the VM's own GIs released when moving within the host.
        let mut occs: BTreeMap<usize, Occupancy> = BTreeMap::new();
        for (req, slot) in vm.gis.iter().zip(&placement.gis) {
            let gpu = host.gpus.get(slot.gpu).ok_or_else(|| FleetError::UnknownGpu {
                host: host.name.clone(),
                gpu: slot.gpu,
            })?;
            let model = self.catalog.model(gpu.model);
            let prof = &self.catalog.model(req.model).profiles[req.profile];
            if gpu.mode != GpuMode::Mig {
                return Err(FleetError::ModeMismatch {
                    host: host.name.clone(),
                    gpu: slot.gpu,
                    vm: vm.id,
                    mode: gpu.mode,
                    need: GpuMode::Mig,
                });
            }
            if !self.catalog.same_class(req.model, gpu.model) {
                return Err(FleetError::ClassMismatch {
                    gpu_model: model.name.clone(),
                    profile: prof.name.clone(),
                });
            }
            if !prof.starts.contains(&slot.start) {
                return Err(FleetError::StartNotPermitted {
                    profile: prof.name.clone(),
                    start: slot.start,
                    permitted: prof.starts.clone(),
                });
            }
            let occ = occs.entry(slot.gpu).or_insert_with(|| {
                let mut o = gpu.occ;
                if same_host {
                    for g in gpu.gis.iter().filter(|g| g.vm == vm.id) {
                        o.remove(model, g.profile, g.start);
                    }
                }
                o
            });
            let m = prof.mask_at(slot.start);
            if occ.mask & m != 0 {
                let slice = (m & occ.mask).trailing_zeros() as u8;
                let by = gpu
                    .gi_at(self.catalog, slice)
                    .map(|g| g.vm)
                    .filter(|&v| !(same_host && v == vm.id));
                return Err(FleetError::SliceTaken {
                    host: host.name.clone(),
                    gpu: slot.gpu,
                    slice,
                    by,
                });
            }
            if occ.counts[req.profile] >= prof.max_instances {
                return Err(FleetError::InstanceLimit {
                    profile: prof.name.clone(),
                    max: prof.max_instances,
                });
            }
            occ.add(model, req.profile, slot.start);
        }
        Ok(())
    }

    /// [`Fleet::validate_placement`] for a share or a gang (cores and RAM checked already).
    fn validate_whole_or_share(
        &self,
        vm: &Vm,
        host: &Host,
        placement: &Placement,
        same_host: bool,
    ) -> Result<(), FleetError> {
        let (model, need_gb) = match vm.shape {
            Shape::Mig => return Ok(()),
            Shape::Share { model, gb, .. } => (model, gb),
            Shape::Gang { model, .. } => (model, 0),
        };
        let need = vm.shape.gpu_mode();
        let mut seen: Vec<usize> = Vec::new();
        for slot in &placement.gis {
            let gpu = host.gpus.get(slot.gpu).ok_or_else(|| FleetError::UnknownGpu {
                host: host.name.clone(),
                gpu: slot.gpu,
            })?;
            if seen.contains(&slot.gpu) {
                return Err(FleetError::GpuTwice {
                    host: host.name.clone(),
                    gpu: slot.gpu,
                    vm: vm.id,
                });
            }
            seen.push(slot.gpu);
            if !self.catalog.same_class(model, gpu.model) {
                return Err(FleetError::ClassMismatch {
                    gpu_model: self.catalog.model(gpu.model).name.clone(),
                    profile: format!("a {} {}", self.catalog.model(model).name, shape_word(&vm.shape)),
                });
            }
            if slot.start != 0 {
                return Err(FleetError::BadRequest(format!(
                    "VM {}: a {} has no start slice (GPU@0), not {}",
                    vm.id,
                    shape_word(&vm.shape),
                    slot.start
                )));
            }
            if need == GpuMode::Whole && gpu.mode == GpuMode::Shared {
                if let Shape::Share { isolation: true, .. } = vm.shape {
                    return Err(FleetError::IsolationOnShared {
                        host: host.name.clone(),
                        gpu: slot.gpu,
                        vm: vm.id,
                    });
                }
            }
            if gpu.mode != need {
                return Err(FleetError::ModeMismatch {
                    host: host.name.clone(),
                    gpu: slot.gpu,
                    vm: vm.id,
                    mode: gpu.mode,
                    need,
                });
            }
            match need {
                GpuMode::Whole => {
                    if let Some(by) = gpu.holder.filter(|&b| !(same_host && b == vm.id)) {
                        return Err(FleetError::GpuHeld {
                            host: host.name.clone(),
                            gpu: slot.gpu,
                            by,
                        });
                    }
                }
                GpuMode::Shared => {
                    let own: u32 = if same_host {
                        gpu.shares.iter().filter(|s| s.vm == vm.id).map(|s| s.gb).sum()
                    } else {
                        0
                    };
                    let free = gpu.free_share_gb(self.catalog) + own;
                    if need_gb > free {
                        return Err(FleetError::ShareMemory {
                            host: host.name.clone(),
                            gpu: slot.gpu,
                            vm: vm.id,
                            need: need_gb,
                            free,
                            total: gpu_gb(self.catalog, gpu.model),
                        });
                    }
                }
                GpuMode::Mig => {}
            }
        }
        Ok(())
    }

    /// Sets the mode of an empty GPU (a mode change is a drain: everything leaves first).
    pub fn set_gpu_mode(&mut self, h: HostId, k: usize, mode: GpuMode) -> Result<(), FleetError> {
        let host = self.hosts.get(h).ok_or(FleetError::UnknownHost(h))?;
        let gpu = host.gpus.get(k).ok_or_else(|| FleetError::UnknownGpu {
            host: host.name.clone(),
            gpu: k,
        })?;
        if gpu.is_used() {
            return Err(FleetError::GpuBusy {
                host: host.name.clone(),
                gpu: k,
                residents: gpu.gis.len() + usize::from(gpu.holder.is_some()) + gpu.shares.len(),
            });
        }
        if mode == GpuMode::Mig && !self.catalog.model(gpu.model).mig {
            return Err(FleetError::NoMig {
                model: self.catalog.model(gpu.model).name.clone(),
            });
        }
        let host = &mut self.hosts[h];
        host.gpus[k].mode = mode;
        self.ff_index.update(self.catalog, h, host);
        Ok(())
    }

    /// Writes a validated placement into the state.
    fn apply_placement(&mut self, id: VmId, placement: Placement) {
        let catalog = self.catalog;
        let vm = self
            .vms
            .get_mut(&id)
            .expect("every caller has found the VM in the fleet and validated the placement");
        let host = &mut self.hosts[placement.host];
        let gap = &mut self.gap;
        if host.gpus.is_empty() {
            if host.vms.is_empty() {
                gap.m0_active += 1;
            }
            gap.m0_cores += vm.cores as u64;
            gap.m0_ram += vm.ram_gb as u64;
        }
        host.used_cores += vm.cores;
        host.used_ram += vm.ram_gb;
        if let Err(pos) = host.vms.binary_search(&id) {
            host.vms.insert(pos, id);
        }
        match vm.shape {
            Shape::Mig => {}
            Shape::Share {
                gb,
                weight,
                isolation: false,
                ..
            } => {
                for slot in &placement.gis {
                    let gpu = &mut host.gpus[slot.gpu];
                    let pos = gpu.shares.partition_point(|s| s.vm < id);
                    gpu.shares.insert(pos, ResidentShare { vm: id, gb, weight });
                }
            }
            Shape::Share { isolation: true, .. } | Shape::Gang { .. } => {
                for slot in &placement.gis {
                    host.gpus[slot.gpu].holder = Some(id);
                }
            }
        }
        for (index, (req, slot)) in vm.gis.iter().zip(&placement.gis).enumerate() {
            let gpu = &mut host.gpus[slot.gpu];
            let model = catalog.model(gpu.model);
            if gpu.occ.is_empty() {
                gap.active_gpus[gpu.model] += 1;
            }
            gap.placed_slices[gpu.model] += model.profiles[req.profile].size as u32;
            gpu.occ.add(model, req.profile, slot.start);
            gpu.gis.push(ResidentGi {
                vm: id,
                index,
                profile: req.profile,
                start: slot.start,
            });
            gpu.gis.sort_by_key(|g| g.start);
        }
        self.ff_index.update(catalog, placement.host, host);
        vm.placement = Some(placement);
    }

    /// Frees everything a placed VM holds; the VM stays known, unplaced.
    fn release(&mut self, id: VmId) {
        let catalog = self.catalog;
        let Some(vm) = self.vms.get_mut(&id) else { return };
        let Some(placement) = vm.placement.take() else {
            return;
        };
        let host = &mut self.hosts[placement.host];
        host.used_cores -= vm.cores;
        host.used_ram -= vm.ram_gb;
        host.vms.retain(|&v| v != id);
        let gap = &mut self.gap;
        if host.gpus.is_empty() {
            if host.vms.is_empty() {
                gap.m0_active -= 1;
            }
            gap.m0_cores -= vm.cores as u64;
            gap.m0_ram -= vm.ram_gb as u64;
        }
        if vm.shape != Shape::Mig {
            for slot in &placement.gis {
                let gpu = &mut host.gpus[slot.gpu];
                gpu.shares.retain(|s| s.vm != id);
                if gpu.holder == Some(id) {
                    gpu.holder = None;
                }
            }
        }
        for (req, slot) in vm.gis.iter().zip(&placement.gis) {
            let gpu = &mut host.gpus[slot.gpu];
            let model = catalog.model(gpu.model);
            gpu.occ.remove(model, req.profile, slot.start);
            gap.placed_slices[gpu.model] -= model.profiles[req.profile].size as u32;
            if gpu.occ.is_empty() {
                gap.active_gpus[gpu.model] -= 1;
            }
            gpu.gis.retain(|g| !(g.vm == id && g.start == slot.start));
        }
        self.ff_index.update(catalog, placement.host, host);
    }

    /// FF (§6.3): the first host with room for the VM's cores, RAM and every GI, the GIs placed
    /// largest first, each on the first GPU of the host where it fits, at the default start (Eq. 3).
    pub fn ff_placement(&self, vm: &Vm) -> Option<Placement> {
        self.ff_placement_where(vm, |_| true)
    }

    /// [`Fleet::ff_placement`] over the hosts `allowed` accepts.
    /// The index skips hosts that cannot take the VM; the candidates it yields are tried in
    /// host order, so the result is the first host of a full scan.
    pub(crate) fn ff_placement_where(&self, vm: &Vm, allowed: impl Fn(HostId) -> bool) -> Option<Placement> {
        if self.ff_index.len() != self.hosts.len() {
            return (0..self.hosts.len())
                .filter(|&h| allowed(h))
                .find_map(|h| self.host_placement_default(vm, h));
        }
        let mut from = 0;
        while let Some(h) = self.ff_index.first_candidate(vm, from) {
            if allowed(h) {
                if let Some(p) = self.host_placement_default(vm, h) {
                    return Some(p);
                }
            }
            from = h + 1;
        }
        None
    }

    /// [`Fleet::ff_placement_where`] over the active hosts first, then, when none takes the VM,
    /// over the switched-off ones: a request never switches a host on while an active host has
    /// room for it (OrigaMIG's arrival rule with `policy.origamig.ff_active_first`).
    pub(crate) fn ff_placement_active_first(
        &self,
        vm: &Vm,
        allowed: impl Fn(HostId) -> bool,
    ) -> Option<Placement> {
        self.ff_placement_where(vm, |h| self.hosts[h].is_active() && allowed(h))
            .or_else(|| self.ff_placement_where(vm, |h| !self.hosts[h].is_active() && allowed(h)))
    }

    /// OrigaMIG's arrival rule (§5.1): [`Fleet::ff_placement_active_first`] when `active_first`
    /// (`policy.origamig.ff_active_first`), else [`Fleet::ff_placement_where`] over every allowed host.
    pub(crate) fn ff_placement_arrival(
        &self,
        vm: &Vm,
        active_first: bool,
        allowed: impl Fn(HostId) -> bool,
    ) -> Option<Placement> {
        if active_first {
            self.ff_placement_active_first(vm, allowed)
        } else {
            self.ff_placement_where(vm, allowed)
        }
    }

    /// The placement of `vm` on host `h` with the default GI placement (largest GI first, first
    /// GPU where it fits), if the host has room; the VM's own resources are not counted as free.
    pub fn host_placement_default(&self, vm: &Vm, h: HostId) -> Option<Placement> {
        let host = &self.hosts[h];
        if host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            return None;
        }
        if vm.shape != Shape::Mig {
            return self.host_slots_first(vm, h).map(|gis| Placement { host: h, gis });
        }
        let mut occs: Vec<Occupancy> = host.gpus.iter().map(|g| g.occ).collect();
        let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
        for i in vm.gis_largest_first(self.catalog) {
            let req = vm.gis[i];
            let mut done = false;
            for (k, gpu) in host.gpus.iter().enumerate() {
                if gpu.mode != GpuMode::Mig || !self.catalog.same_class(req.model, gpu.model) {
                    continue;
                }
                let model = self.catalog.model(gpu.model);
                if let Some(z) = mig::default_start(model, &occs[k], req.profile) {
                    occs[k].add(model, req.profile, z);
                    slots[i] = GiSlot { gpu: k, start: z };
                    done = true;
                    break;
                }
            }
            if !done {
                return None;
            }
        }
        Some(Placement { host: h, gis: slots })
    }

    /// The GPUs of host `h` a share or gang takes first fit: a share the first GPU of its class in
    /// the right mode with room, a gang the first `gpus` free whole GPUs of its class. `None` for
    /// a MIG request or when the host has no room (cores and RAM are not checked here).
    pub(crate) fn host_slots_first(&self, vm: &Vm, h: HostId) -> Option<Vec<GiSlot>> {
        let host = &self.hosts[h];
        let fits = |g: &Gpu| match vm.shape {
            Shape::Mig => false,
            Shape::Share {
                model, gb, isolation, ..
            } => {
                self.catalog.same_class(model, g.model)
                    && if isolation {
                        g.is_free_whole()
                    } else {
                        g.mode == GpuMode::Shared && g.free_share_gb(self.catalog) >= gb
                    }
            }
            Shape::Gang { model, .. } => self.catalog.same_class(model, g.model) && g.is_free_whole(),
        };
        let want = vm.shape.slots(vm.gis.len());
        let slots: Vec<GiSlot> = host
            .gpus
            .iter()
            .enumerate()
            .filter(|(_, g)| fits(g))
            .take(want)
            .map(|(k, _)| GiSlot { gpu: k, start: 0 })
            .collect();
        (slots.len() == want && want > 0).then_some(slots)
    }

    /// Recomputes every derived quantity from the VMs and checks the fleet invariants: no two
    /// GIs share a memory slice, every GI starts at a permitted start on a GPU of its class,
    /// instance limits hold, per-host cores and RAM are within capacity, and the bookkeeping
    /// (occupancy masks, resident lists, queue) agrees with the placements.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut hosts = self.tally_vms()?;
        for (h, (host, acc)) in self.hosts.iter().zip(&mut hosts).enumerate() {
            if acc.0 > host.cores || acc.1 > host.ram_gb {
                return Err(format!("host {h}: cores or RAM over capacity"));
            }
            if acc.0 != host.used_cores || acc.1 != host.used_ram {
                return Err(format!("host {h}: used cores/RAM counters are stale"));
            }
            acc.2.sort_unstable();
            if acc.2 != host.vms {
                return Err(format!("host {h}: VM list is stale"));
            }
            for (k, gpu) in host.gpus.iter().enumerate() {
                self.check_gpu(h, k, gpu, acc)?;
            }
        }
        for id in &self.pending {
            if !self.vms.contains_key(id) {
                return Err(format!("pending VM {id} is unknown"));
            }
        }
        if GapCounters::tally(self.catalog, &self.hosts, &self.vms) != self.gap {
            return Err("the gap counters of §5.1 are stale".into());
        }
        Ok(())
    }

    /// Per host, what its VMs' placements add up to (cores, RAM, VMs, occupancy and GIs per GPU),
    /// checking each placement on the way.
    fn tally_vms(&self) -> Result<Vec<HostTally>, String> {
        let mut hosts: Vec<HostTally> = self
            .hosts
            .iter()
            .map(|h| {
                (
                    0,
                    0,
                    Vec::new(),
                    vec![Occupancy::empty(); h.gpus.len()],
                    vec![Vec::new(); h.gpus.len()],
                )
            })
            .collect();
        for vm in self.vms.values() {
            let queued = self.pending.contains(&vm.id);
            let Some(p) = &vm.placement else {
                if !queued {
                    return Err(format!("VM {} is neither placed nor pending", vm.id));
                }
                continue;
            };
            if queued {
                return Err(format!("VM {} is placed and pending", vm.id));
            }
            let Some(host) = self.hosts.get(p.host) else {
                return Err(format!("VM {} on unknown host {}", vm.id, p.host));
            };
            if p.gis.len() != vm.shape.slots(vm.gis.len()) {
                return Err(format!("VM {}: GI count mismatch", vm.id));
            }
            if vm.shape != Shape::Mig {
                self.check_whole_gpus(vm, p, host)?;
            }
            let acc = &mut hosts[p.host];
            acc.0 += vm.cores;
            acc.1 += vm.ram_gb;
            acc.2.push(vm.id);
            for (i, (req, slot)) in vm.gis.iter().zip(&p.gis).enumerate() {
                let Some(gpu) = host.gpus.get(slot.gpu) else {
                    return Err(format!(
                        "VM {} GI {i}: no GPU {} on host {}",
                        vm.id, slot.gpu, p.host
                    ));
                };
                if !self.catalog.same_class(req.model, gpu.model) {
                    return Err(format!("VM {} GI {i}: class mismatch", vm.id));
                }
                let model = self.catalog.model(gpu.model);
                let occ = &mut acc.3[slot.gpu];
                if !occ.can_place(model, req.profile, slot.start) {
                    return Err(format!(
                        "VM {} GI {i}: start {} on host {} GPU {} overlaps, is not permitted or exceeds a limit",
                        vm.id, slot.start, p.host, slot.gpu
                    ));
                }
                occ.add(model, req.profile, slot.start);
                acc.4[slot.gpu].push((vm.id, i, req.profile, slot.start));
            }
        }
        Ok(hosts)
    }

    /// A share or gang: no GIs, distinct GPUs of its class in its mode, resident where placed.
    fn check_whole_gpus(&self, vm: &Vm, p: &Placement, host: &Host) -> Result<(), String> {
        if !vm.gis.is_empty() {
            return Err(format!("VM {}: a share or gang lists GIs", vm.id));
        }
        let model = vm.model().unwrap_or(0);
        for (n, slot) in p.gis.iter().enumerate() {
            let Some(gpu) = host.gpus.get(slot.gpu) else {
                return Err(format!("VM {}: no GPU {} on host {}", vm.id, slot.gpu, p.host));
            };
            if p.gis[..n].iter().any(|o| o.gpu == slot.gpu) {
                return Err(format!("VM {}: GPU {} listed twice", vm.id, slot.gpu));
            }
            if !self.catalog.same_class(model, gpu.model) {
                return Err(format!("VM {}: class mismatch on GPU {}", vm.id, slot.gpu));
            }
            if gpu.mode != vm.shape.gpu_mode() {
                return Err(format!(
                    "VM {} on host {} GPU {}: a {} on a GPU in {} mode",
                    vm.id,
                    p.host,
                    slot.gpu,
                    shape_word(&vm.shape),
                    gpu.mode
                ));
            }
            let resident = match vm.shape {
                Shape::Share {
                    gb,
                    weight,
                    isolation: false,
                    ..
                } => gpu.shares.iter().filter(|s| s.vm == vm.id).eq([&ResidentShare {
                    vm: vm.id,
                    gb,
                    weight,
                }]),
                _ => gpu.holder == Some(vm.id),
            };
            if !resident {
                return Err(format!(
                    "host {} GPU {}: VM {} is not resident where it is placed",
                    p.host, slot.gpu, vm.id
                ));
            }
        }
        Ok(())
    }

    /// GPU `k` of host `h` against the tally of its host: residents of its mode only, shares
    /// within memory and by VM id, residents placed here, occupancy and GI list up to date.
    fn check_gpu(&self, h: HostId, k: usize, gpu: &Gpu, acc: &HostTally) -> Result<(), String> {
        let in_mode = match gpu.mode {
            GpuMode::Mig => gpu.holder.is_none() && gpu.shares.is_empty(),
            GpuMode::Whole => gpu.gis.is_empty() && gpu.occ.is_empty() && gpu.shares.is_empty(),
            GpuMode::Shared => gpu.gis.is_empty() && gpu.occ.is_empty() && gpu.holder.is_none(),
        };
        if !in_mode {
            return Err(format!(
                "host {h} GPU {k}: residents of another mode on a {} GPU",
                gpu.mode
            ));
        }
        if gpu.mode == GpuMode::Mig && !self.catalog.model(gpu.model).mig {
            return Err(format!("host {h} GPU {k}: MIG mode on a model without MIG"));
        }
        if gpu.shared_gb() > gpu_gb(self.catalog, gpu.model) {
            return Err(format!("host {h} GPU {k}: shares exceed the GPU's memory"));
        }
        if !gpu.shares.windows(2).all(|w| w[0].vm < w[1].vm) {
            return Err(format!("host {h} GPU {k}: share list is not by VM id"));
        }
        let residents = gpu.shares.iter().map(|s| s.vm).chain(gpu.holder);
        for v in residents {
            let placed_here = self
                .vms
                .get(&v)
                .and_then(|vm| vm.placement.as_ref())
                .is_some_and(|p| p.host == h && p.gis.iter().any(|s| s.gpu == k));
            if !placed_here {
                return Err(format!("host {h} GPU {k}: resident VM {v} is not placed here"));
            }
        }
        if gpu.occ != acc.3[k] {
            return Err(format!("host {h} GPU {k}: occupancy is stale"));
        }
        let mut want = acc.4[k].clone();
        want.sort_by_key(|g| g.3);
        let got: Vec<_> = gpu
            .gis
            .iter()
            .map(|g| (g.vm, g.index, g.profile, g.start))
            .collect();
        if got != want {
            return Err(format!("host {h} GPU {k}: resident GI list is stale"));
        }
        Ok(())
    }

    /// Hosts running at least one VM.
    pub fn active_hosts(&self) -> usize {
        self.hosts.iter().filter(|h| h.is_active()).count()
    }

    /// GPUs holding at least one GI, share or whole-GPU holder.
    pub fn active_gpus(&self) -> usize {
        self.hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .filter(|g| g.is_used())
            .count()
    }

    pub fn total_gpus(&self) -> usize {
        self.hosts.iter().map(|h| h.gpus.len()).sum()
    }

    /// Power of one GPU in watts (§6.3): idle + (max - idle) u with u its share of compute
    /// slices in use (a held whole GPU: 1; a shared GPU: its weight sum, at most 1); idle when
    /// it holds nothing; nothing on an off host.
    pub(crate) fn gpu_power_w(&self, host: &Host, gpu: &Gpu) -> f64 {
        if !host.is_active() {
            return 0.0;
        }
        let m = self.catalog.model(gpu.model);
        let u = match gpu.mode {
            GpuMode::Mig => gpu.occ.used_compute(m) as f64 / m.compute_slices as f64,
            GpuMode::Whole => f64::from(u8::from(gpu.holder.is_some())),
            GpuMode::Shared => gpu.weight_sum().min(1.0),
        };
        m.idle_w + (m.max_w - m.idle_w) * u
    }

    /// Power of a host and its GPUs in watts: the host curve at its core load plus its GPUs;
    /// nothing for an off host (§6.3).
    pub(crate) fn host_power_w(&self, h: HostId) -> f64 {
        let host = &self.hosts[h];
        if !host.is_active() {
            return 0.0;
        }
        let load = host.used_cores as f64 / host.cores.max(1) as f64;
        let curve = &self.catalog.curves[host.curve];
        curve.watts(load) + host.gpus.iter().map(|g| self.gpu_power_w(host, g)).sum::<f64>()
    }

    /// Power of the whole fleet in watts.
    pub fn power_w(&self) -> f64 {
        (0..self.hosts.len()).map(|h| self.host_power_w(h)).sum()
    }

    /// A GPU reference of this fleet for messages and examples: GPU 0 of the first host with GPUs
    /// (`node0/0` in a fleet without GPUs).
    pub(crate) fn example_gpu_label(&self) -> String {
        self.hosts
            .iter()
            .position(|h| !h.gpus.is_empty())
            .map(|h| self.gpu_label(h, 0))
            .unwrap_or_else(|| "node0/0".into())
    }

    /// Human label of a GPU: `host/gpu`.
    pub(crate) fn gpu_label(&self, h: HostId, k: usize) -> String {
        format!("{}/{}", self.hosts[h].name, k)
    }
}

#[cfg(test)]
mod tests;
