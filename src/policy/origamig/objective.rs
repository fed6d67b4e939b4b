//! The objective of the OrigaMIG BILP, Eq. (5) of the paper (§4), recomputed from placements.
//!
//! §5.3: a call evaluates Eq. (5) over the neighborhood for the returned placement and for the
//! current one, recomputing phi, gamma, m, omega and f from each placement, because a solution
//! found before the proof of optimality may leave those indicator variables at other values.
//! [`evaluate`] is that recomputation; the BILP ([`super::bilp`]) optimizes the same value.

use crate::catalog::Catalog;
use crate::fleet::{Fleet, HostId, Vm};
use crate::mig;
use crate::policy_settings::OrigamigSettings;

/// The weights of Eq. (5) (§6.1 defaults: a = 100, b = 50, e = 20, w_p = 1, delta = 10 for a
/// running VM and 0 for a new one).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Weights {
    /// a_i: reward per VM placed on the hosts.
    pub admit: f64,
    /// b_j: cost per active host (PM).
    pub host: f64,
    /// e_jk: cost per active GPU.
    pub gpu: f64,
    /// w_p: reward per free permitted start of a CF profile on an active GPU (one value for all
    /// profiles).
    pub free_start: f64,
    /// delta_i of a VM that was placed before the call (a running VM).
    pub delta_running: f64,
    /// delta_i of a VM that was pending before the call (§4: zero, so its initial placement is
    /// not a migration).
    pub delta_new: f64,
    /// Penalty per GB a migration copies (§7, `policy.origamig.delta_per_gb`): a running VM's delta_i is
    /// `delta_running + round(delta_per_gb × GB_i)` ([`Weights::delta_of`]).
    pub delta_per_gb: f64,
    /// What delta_i adds for a running VM declared a job (`policy.origamig.delta_job_extra`; §6.2: jobs
    /// are short-lived, so a host emptied of jobs would soon empty itself).
    #[serde(skip_serializing_if = "is_zero")]
    pub delta_job_extra: f64,
    /// b_j from the host's power (`policy.origamig.host_weight_from_power`): [`Weights::host_of`] scales
    /// `host` by the host curve's idle watts against the catalog's default curve's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub host_from_power: bool,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for Weights {
    fn default() -> Self {
        Weights::from_settings(&OrigamigSettings::default())
    }
}

impl Weights {
    /// The weights a scenario's policy settings give.
    pub fn from_settings(s: &OrigamigSettings) -> Weights {
        Weights {
            admit: s.weight_admit,
            host: s.weight_host,
            gpu: s.weight_gpu,
            free_start: s.weight_free_start,
            delta_running: s.delta,
            delta_new: 0.0,
            delta_per_gb: s.delta_per_gb,
            delta_job_extra: s.delta_job_extra,
            host_from_power: s.host_weight_from_power,
        }
    }

    /// b_j of `host`: `host`, or with [`Weights::host_from_power`] `host` × the idle watts of the
    /// host's curve / the idle watts of the catalog's default curve (the paper's server), rounded
    /// so that Eq. (5) stays integer-valued. A host on the default curve costs `host` exactly.
    ///
    /// Why: §6.1's b = 50 and e = 20 stand for the paper's server (127 W idle without GPUs) and
    /// an A100 (50 W idle): about 0.39 and 0.40 per idle watt, one rate. An eight-GPU node's
    /// chassis idles at several times the paper's server, and switching it off is worth that
    /// much more (docs/policies.md, "Weights from power").
    pub fn host_of(&self, host: &crate::fleet::Host, catalog: &Catalog) -> f64 {
        let reference = catalog.default_curve();
        if !self.host_from_power || host.curve == reference {
            return self.host;
        }
        let idle = |c: usize| catalog.curves[c].watts(0.0);
        let r = idle(reference);
        if r <= 0.0 {
            return self.host;
        }
        (self.host * idle(host.curve) / r).round()
    }

    /// The rate of Eq. (5) per idle watt that `host` and `gpu` give on the paper's server: b over
    /// the default curve's idle watts. With it, e of a GPU model is its idle watts times this
    /// rate (tests compare it with §6.1's e = 20 for the A100).
    pub fn per_idle_watt(&self, catalog: &Catalog) -> f64 {
        self.host / catalog.curves[catalog.default_curve()].watts(0.0)
    }

    /// What a running VM copying `gb` GB per move pays beyond `delta_running`:
    /// round(delta_per_gb × gb), an integer, so Eq. (5) stays integer-valued when the other
    /// weights are ([`Weights::integral`]). 0 when `delta_per_gb` is 0.
    pub fn surcharge(&self, gb: f64) -> f64 {
        if self.delta_per_gb == 0.0 {
            0.0
        } else {
            (self.delta_per_gb * gb).round()
        }
    }

    /// delta_i of running VM `vm`: `delta_running` plus the [`Weights::surcharge`] of what its
    /// migration to another host copies ([`Vm::migration_gb`]: RAM plus its GIs' memory; a
    /// property of the VM, so the same for a move within a host, which the paper prices alike).
    pub fn delta_of(&self, vm: &Vm, catalog: &Catalog) -> f64 {
        self.delta_running + self.surcharge_of(vm, catalog)
    }

    /// What delta_i of running VM `vm` adds to `delta_running`: the [`Weights::surcharge`] of
    /// its migration's GB, plus `delta_job_extra` for a job.
    pub(crate) fn surcharge_of(&self, vm: &Vm, catalog: &Catalog) -> f64 {
        let job = if vm.kind == crate::fleet::VmKind::Job {
            self.delta_job_extra
        } else {
            0.0
        };
        self.surcharge(vm.migration_gb(catalog)) + job
    }

    /// Whether every running VM has delta_i = `delta_running`.
    pub fn uniform_delta(&self) -> bool {
        self.delta_per_gb == 0.0 && self.delta_job_extra == 0.0
    }

    /// Whether every weight is an integer: Eq. (5) then takes integer values only, and a MIP gap
    /// below 1 proves optimality (`delta_per_gb` need not be: its surcharges are rounded).
    pub fn integral(&self) -> bool {
        [
            self.admit,
            self.host,
            self.gpu,
            self.free_start,
            self.delta_running,
            self.delta_new,
            self.delta_job_extra,
        ]
        .iter()
        .all(|v| v.fract() == 0.0)
    }
}

/// The terms of Eq. (5) for one placement: weighted values (all non-negative) and the counts they
/// come from. `total = admitted - hosts - gpus - migrations + free_starts`.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Terms {
    /// sum of a_i over the VMs placed on the hosts.
    pub admitted: f64,
    /// sum of b_j over the active hosts.
    pub hosts: f64,
    /// sum of e_jk over the active GPUs.
    pub gpus: f64,
    /// sum of delta_i (m_i + omega_i).
    pub migrations: f64,
    /// sum of w_p over the free permitted starts of the active GPUs (their CF with all w_p = 1).
    pub free_starts: f64,
    /// The value of Eq. (5).
    pub total: f64,
    /// VMs placed on the hosts.
    pub n_vms: usize,
    /// Active hosts (running at least one VM).
    pub n_hosts: usize,
    /// Active GPUs (holding at least one GI).
    pub n_gpus: usize,
    /// Running VMs that changed host (m_i = 1).
    pub n_host_moves: usize,
    /// Running VMs of which some GI changed GPU or start slice (omega_i = 1).
    pub n_gi_moves: usize,
    /// Free permitted starts of the active GPUs.
    pub n_free_starts: usize,
}

/// Eq. (5) over `hosts` for the placement `after`, with the migration terms measured against the
/// placement `before` (the state at the start of the call; `after` may equal `before`).
///
/// A VM counts when it is placed on one of `hosts` in `after`. It is a running VM (its delta_i,
/// [`Weights::delta_of`]) when it was placed in `before`; then m_i = 1 when its host differs and omega_i = 1 when any of
/// its GIs sits on another host, GPU or start slice (§4, Eq. 14-15: a different slice is a
/// different GI). A VM pending in `before` has delta_new and m_i = omega_i = 0 (x'_ij = 0).
/// Active hosts run a VM; active GPUs hold a GI; free starts are summed over the CF profiles
/// (Eq. 2) of the active GPUs only (f_jkpz <= gamma_jk).
pub fn evaluate(before: &Fleet, after: &Fleet, hosts: &[HostId], w: &Weights) -> Terms {
    let mut t = Terms::default();
    let catalog = after.catalog;
    for &h in hosts {
        let Some(host) = after.hosts.get(h) else { continue };
        if host.is_active() {
            t.n_hosts += 1;
        }
        for gpu in &host.gpus {
            if gpu.occ.is_empty() {
                continue;
            }
            t.n_gpus += 1;
            let model = catalog.model(gpu.model);
            for p in model.cf_profiles() {
                t.n_free_starts += mig::free_starts(model, &gpu.occ, p).count();
            }
        }
        for &id in &host.vms {
            let Some(vm) = after.vm(id) else { continue };
            let Some(pa) = &vm.placement else { continue };
            t.n_vms += 1;
            t.admitted += w.admit;
            match before.vm(id).and_then(|v| v.placement.as_ref()) {
                Some(pb) => {
                    let moved_host = pb.host != pa.host;
                    let moved_gi = !vm.gis.is_empty() && (moved_host || pb.gis != pa.gis);
                    let n = moved_host as usize + moved_gi as usize;
                    t.n_host_moves += moved_host as usize;
                    t.n_gi_moves += moved_gi as usize;
                    t.migrations += w.delta_of(vm, catalog) * n as f64;
                }
                None => {
                    // A new VM: x'_ij = 0 for every j, so m_i = omega_i = 0 (§4, Eq. 14-15).
                }
            }
        }
    }
    t.hosts = if w.host_from_power {
        hosts
            .iter()
            .filter_map(|&h| after.hosts.get(h))
            .filter(|host| host.is_active())
            .map(|host| w.host_of(host, catalog))
            .sum()
    } else {
        w.host * t.n_hosts as f64
    };
    t.gpus = w.gpu * t.n_gpus as f64;
    t.free_starts = w.free_start * t.n_free_starts as f64;
    t.total = t.admitted - t.hosts - t.gpus - t.migrations + t.free_starts;
    t
}

#[cfg(test)]
mod tests;
