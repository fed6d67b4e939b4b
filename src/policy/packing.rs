//! The packing arrival policy (docs/policies.md): fill a GPU before opening another, fill a host before
//! opening another, and keep hosts whose GPUs are all free for whole-host gangs.
//!
//! For each host with room (cores, RAM, and every GI placeable with the default GI placement, the
//! largest GI first), the score is
//!
//! ```text
//! score(host) = w1 x (GPUs left with no free capacity by the placement)   # finish a GPU
//!             + w2 x (the host already runs work)                         # finish a host
//!             - w3 x (every GPU of the host is free)                      # protect gang space
//! ```
//!
//! with the weights `packing_finish_gpu`, `packing_finish_host` and `packing_protect_host` of the
//! policy settings. A GPU has no free capacity when no profile of its model (+me left out) fits.
//! The highest score wins. Ties go to the placement leaving the fewest free memory slices on the
//! host (a best-fit score), then to the lowest index, so a GI goes to a half-used GPU of a host rather than to its empty one. Within a host
//! each GI takes the GPU where it leaves no free capacity, else the fewest free slices, else the
//! lowest index.
//!
//! The score covers the three GPU modes (docs/model.md, "GPU modes"): GIs go on MIG GPUs only;
//! a soft share on the shared GPU where it leaves the fewest GB (best fit by bytes), an isolated
//! share on a free whole GPU, both with the same three terms; a gang only on a host whose GPUs
//! are all whole and free, without the protection penalty (that space is kept for it). With
//! w3 > 0 a host with every GPU free scores below any other host with room, so fractional work
//! never takes a gang-capable host while another host has room.
//!
//! Optional defragmentation trigger (periodically compute the stranded capacity and, when it
//! exceeds a threshold, migrate): with `defrag_stranded_share` > 0, every `check_every_s` the
//! policy reads [`crate::metrics::stranded`]; when for some GPU model the stranded share of its
//! largest profile (free slices a whole-GPU request cannot use) reaches the threshold, it asks
//! OrigaMIG for a consolidation call of that class and proposes the plan if the call improves
//! Eq. (5). A call that changes nothing disables the trigger until a VM leaves.

use crate::fleet::{Fleet, GiSlot, GpuMode, HostId, Placement, Shape, Vm};
use crate::mig::{self, Occupancy};
use crate::plan::Plan;
use crate::policy::origamig::bilp::SolveControl;
use crate::policy::origamig::triggers::{CallKind, Class};
use crate::policy::origamig::CallMode;
use crate::policy::Policy;
use crate::policy_settings::{OrigamigSettings, PackingSettings};

/// The packing policy with its three weights and its optional defragmentation trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Packing {
    pub finish_gpu: f64,
    pub finish_host: f64,
    pub protect_host: f64,
    /// Stranded share that triggers a consolidation call (0: off).
    pub defrag_share: f64,
    /// The settings of the trigger's OrigaMIG calls.
    settings: OrigamigSettings,
    last_check: Option<f64>,
    /// Set after a call that changed nothing; cleared when a VM leaves.
    idle: bool,
    /// Consolidation calls made by the trigger.
    pub defrag_calls: u32,
    /// Of those, the calls ended by the node budget or by the wall clock.
    limited: crate::policy::LimitedCalls,
    /// Stops a running consolidation call early (the planner's cancel of a step).
    cancel: crate::policy::CancelFlag,
}

/// Why the policy settings do not configure a packing policy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PackingSettingsError {
    /// A weight is infinite or NaN.
    #[error("policy.packing.{name} must be a finite number, not {value}")]
    NotFinite { name: &'static str, value: f64 },
    /// The defragmentation threshold is outside 0..1.
    #[error("policy.packing.defrag_stranded_share must be within 0..1 (0 = off), not {0}")]
    ShareOutOfRange(f64),
}

/// A candidate placement on one host and how it scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub placement: Placement,
    pub score: f64,
    /// GPUs the placement leaves without free capacity.
    pub finished_gpus: u32,
    /// Free memory slices on the host after the placement.
    pub free_after: u32,
}

fn no_capacity(model: &crate::catalog::GpuModel, occ: &Occupancy) -> bool {
    model.cf_profiles().all(|p| mig::capacity(model, occ, p) == 0)
}

impl Packing {
    /// Checks the policy's settings: finite weights, a trigger share within 0..1.
    pub fn validate(settings: &PackingSettings) -> Result<(), PackingSettingsError> {
        for (name, w) in [
            ("finish_gpu", settings.finish_gpu),
            ("finish_host", settings.finish_host),
            ("protect_host", settings.protect_host),
        ] {
            if !w.is_finite() {
                return Err(PackingSettingsError::NotFinite { name, value: w });
            }
        }
        let s = settings.defrag_stranded_share;
        if !(0.0..=1.0).contains(&s) {
            return Err(PackingSettingsError::ShareOutOfRange(s));
        }
        Ok(())
    }

    /// The policy with the weights and trigger of `settings` (see [`Packing::validate`]), its
    /// trigger's calls made with `origamig`.
    pub fn new(settings: &PackingSettings, origamig: &OrigamigSettings) -> Self {
        Packing {
            finish_gpu: settings.finish_gpu,
            finish_host: settings.finish_host,
            protect_host: settings.protect_host,
            defrag_share: settings.defrag_stranded_share,
            settings: origamig.clone(),
            last_check: None,
            idle: false,
            defrag_calls: 0,
            limited: Default::default(),
            cancel: Default::default(),
        }
    }

    /// The GPU class whose largest profile has the highest stranded share at or above the
    /// threshold, with that share; `None` when no model reaches it (or the trigger is off).
    pub fn defrag_due(&self, fleet: &Fleet) -> Option<(String, f64)> {
        if self.defrag_share <= 0.0 {
            return None;
        }
        let catalog = fleet.catalog;
        let mut best: Option<(String, f64)> = None;
        for s in crate::metrics::stranded(fleet) {
            let Some(mid) = catalog.model_id(&s.model) else {
                continue;
            };
            let model = catalog.model(mid);
            let largest = model
                .cf_profiles()
                .max_by_key(|&p| (model.profiles[p].size, model.profiles[p].compute));
            if largest.map(|p| model.profiles[p].name.as_str()) != Some(s.profile.as_str()) {
                continue;
            }
            if s.count > 0 && s.share >= self.defrag_share && best.as_ref().is_none_or(|(_, b)| s.share > *b)
            {
                best = Some((model.class.clone(), s.share));
            }
        }
        best
    }

    /// The placement of `vm` on host `h` this policy would choose, with its score; `None` when
    /// the host has no room.
    pub fn candidate(&self, fleet: &Fleet, vm: &Vm, h: HostId) -> Option<Candidate> {
        let catalog = fleet.catalog;
        let host = &fleet.hosts[h];
        if host.free_cores() < vm.cores || host.free_ram() < vm.ram_gb {
            return None;
        }
        if !vm.is_mig() {
            return self.candidate_whole_or_share(fleet, vm, h);
        }
        let mut occs: Vec<Occupancy> = host.gpus.iter().map(|g| g.occ).collect();
        let mut slots = vec![GiSlot { gpu: 0, start: 0 }; vm.gis.len()];
        let mut touched = vec![false; host.gpus.len()];
        for i in vm.gis_largest_first(catalog) {
            let req = vm.gis[i];
            // (leaves no capacity, free slices after, gpu): best is the smallest with full first.
            let mut best: Option<((bool, u32, usize), u8)> = None;
            for (k, gpu) in host.gpus.iter().enumerate() {
                if gpu.mode != GpuMode::Mig || !catalog.same_class(req.model, gpu.model) {
                    continue;
                }
                let model = catalog.model(gpu.model);
                let Some(z) = mig::default_start(model, &occs[k], req.profile) else {
                    continue;
                };
                let mut after = occs[k];
                after.add(model, req.profile, z);
                let key = (
                    !no_capacity(model, &after),
                    model.memory_slices as u32 - after.used_slices(),
                    k,
                );
                if best.is_none_or(|(b, _)| key < b) {
                    best = Some((key, z));
                }
            }
            let ((_, _, k), z) = best?;
            let model = catalog.model(host.gpus[k].model);
            occs[k].add(model, req.profile, z);
            slots[i] = GiSlot { gpu: k, start: z };
            touched[k] = true;
        }
        let finished = host
            .gpus
            .iter()
            .enumerate()
            .filter(|&(k, g)| touched[k] && no_capacity(catalog.model(g.model), &occs[k]))
            .count() as u32;
        let in_use = host.is_active();
        let all_free = !host.gpus.is_empty() && host.gpus.iter().all(|g| !g.is_used());
        let score = self.finish_gpu * finished as f64 + if in_use { self.finish_host } else { 0.0 }
            - if all_free { self.protect_host } else { 0.0 };
        let free_after = host
            .gpus
            .iter()
            .zip(&occs)
            .filter(|(g, _)| g.mode == GpuMode::Mig)
            .map(|(g, o)| catalog.model(g.model).memory_slices as u32 - o.used_slices())
            .sum();
        Some(Candidate {
            placement: Placement { host: h, gis: slots },
            score,
            finished_gpus: finished,
            free_after,
        })
    }

    /// [`Packing::candidate`] for a share or a gang (cores and RAM checked already).
    ///
    /// - A soft share goes on the shared GPU of its class where it leaves the fewest GB free
    ///   (best fit by bytes; ties by lowest GPU index); finishing the GPU (no GB left) counts.
    /// - An isolated share takes the first free whole GPU of its class; it finishes that GPU.
    /// - A gang goes only on a host whose GPUs are all whole and free (whole-node gangs), on its
    ///   first `gpus` GPUs of its class; it is not penalized for taking a free host (that space is
    ///   kept for it), and its GPUs are finished.
    ///
    /// `free_after` is the GB left on the share's GPU, or the free whole GPUs left on the host.
    fn candidate_whole_or_share(&self, fleet: &Fleet, vm: &Vm, h: HostId) -> Option<Candidate> {
        let catalog = fleet.catalog;
        let host = &fleet.hosts[h];
        let in_use = host.is_active();
        let all_free = !host.gpus.is_empty() && host.gpus.iter().all(|g| !g.is_used());
        let protect = if all_free { self.protect_host } else { 0.0 };
        let host_term = if in_use { self.finish_host } else { 0.0 };
        let (slots, finished, free_after, penalty) = match vm.shape {
            Shape::Mig => return None,
            Shape::Share {
                model,
                gb,
                isolation: false,
                ..
            } => {
                let (left, k) = host
                    .gpus
                    .iter()
                    .enumerate()
                    .filter(|(_, g)| g.mode == GpuMode::Shared && catalog.same_class(model, g.model))
                    .filter_map(|(k, g)| Some((g.free_share_gb(catalog).checked_sub(gb)?, k)))
                    .min()?;
                (vec![k], u32::from(left == 0), left, protect)
            }
            Shape::Share { .. } => {
                let slots = fleet.host_slots_first(vm, h)?;
                let left = host.gpus.iter().filter(|g| g.is_free_whole()).count() as u32 - 1;
                (slots.iter().map(|s| s.gpu).collect(), 1, left, protect)
            }
            Shape::Gang { gpus, .. } => {
                if !host.gpus.iter().all(|g| g.is_free_whole()) {
                    return None;
                }
                let slots = fleet.host_slots_first(vm, h)?;
                (
                    slots.iter().map(|s| s.gpu).collect(),
                    gpus,
                    host.gpus.len() as u32 - gpus,
                    0.0,
                )
            }
        };
        Some(Candidate {
            placement: Placement {
                host: h,
                gis: slots.into_iter().map(|gpu| GiSlot { gpu, start: 0 }).collect(),
            },
            score: self.finish_gpu * finished as f64 + host_term - penalty,
            finished_gpus: finished,
            free_after,
        })
    }

    /// The best placement over all hosts: highest score, then fewest free slices left on the
    /// host, then lowest host index.
    pub fn choose(&self, fleet: &Fleet, vm: &Vm) -> Option<Candidate> {
        let mut best: Option<Candidate> = None;
        for h in 0..fleet.hosts.len() {
            let Some(c) = self.candidate(fleet, vm, h) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some(b) => c.score > b.score || (c.score == b.score && c.free_after < b.free_after),
            };
            if better {
                best = Some(c);
            }
        }
        best
    }
}

impl Policy for Packing {
    fn name(&self) -> &str {
        "packing"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) -> Option<Placement> {
        self.choose(fleet, vm).map(|c| c.placement)
    }

    fn on_departure(&mut self, _fleet: &Fleet, _vm: &Vm, _now_s: f64) {
        self.idle = false;
    }

    fn on_step(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        if self.defrag_share <= 0.0 || self.idle {
            return None;
        }
        if self
            .last_check
            .is_some_and(|t| now_s - t < self.settings.check_every_s)
        {
            return None;
        }
        self.last_check = Some(now_s);
        let (class, _) = self.defrag_due(fleet)?;
        self.defrag_calls += 1;
        let kind = CallKind::Consolidation(Class::Gpu(class));
        match crate::policy::origamig::call::call(
            fleet,
            CallMode::Consolidation,
            kind,
            &self.settings,
            &SolveControl {
                cancel: self.cancel.for_solve(),
                limit: crate::policy::origamig::call::sim_limit(&self.cancel),
                ..SolveControl::default()
            },
        ) {
            Ok(p) if p.changes_placements() => {
                self.limited.count(p.status);
                let mut plan = p.plan;
                plan.origin = "packing: defragmentation".into();
                Some(plan)
            }
            Ok(p) => {
                self.limited.count(p.status);
                self.idle = true;
                None
            }
            Err(_) => {
                self.idle = true;
                None
            }
        }
    }

    fn call_log(&self) -> crate::policy::CallLog {
        crate::policy::CallLog {
            limited: self.limited,
            calls: self.defrag_calls as usize,
            ..Default::default()
        }
    }

    fn set_cancel(&mut self, cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {
        self.cancel = crate::policy::CancelFlag(cancel);
    }
}
