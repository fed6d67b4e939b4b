//! Chargeback (docs/operations.md): what share of a GPU each instance is billed, and GPU-hours per tenant.
//!
//! The rule (docs/operations.md):
//!
//! ```text
//! raw(i)    = max(compute slices of i / compute slices of the GPU,
//!                 memory slices of i  / memory slices of the GPU)
//! weight(i) = raw(i) / sum of raw(j) over the instances j on the same GPU
//! GPU-hours of a tenant = integral over the period of the sum of weight(i) over its instances
//! ```
//!
//! The larger share is what an instance denies to others; normalizing per GPU makes each GPU's
//! instances sum to exactly one GPU, so a layout is never billed more (or less) than the GPU.
//! On all-balanced (H100: 2 x 1g.10gb + 2g.20gb + 3g.40gb) the raw weights 1/7, 2/7, 1/2 sum to
//! 15/14 and normalize to 2/15, 4/15 and 7/15 (0.133, 0.267, 0.467). The layout of a GPU is the
//! set of instances on it at that moment, so a GPU's whole cost goes to the instances it holds; a
//! GPU without instances is billed to nobody (reported as idle GPU-hours).

use crate::catalog::{GpuModel, ProfileId};
use crate::fleet::{Fleet, HostId, VmId};
use crate::sim::{SimError, Simulator};
use std::collections::BTreeMap;

/// The tenant name under which VMs without a tenant are billed.
pub(crate) const NO_TENANT: &str = "(no tenant)";

/// raw(i) = max(compute share, memory share) of one instance of profile `p`.
pub(crate) fn raw_weight(model: &GpuModel, p: ProfileId) -> f64 {
    let pr = &model.profiles[p];
    let compute = pr.compute as f64 / model.compute_slices as f64;
    let memory = pr.size as f64 / model.memory_slices as f64;
    compute.max(memory)
}

/// Normalized weight of one instance of each profile on a GPU holding the instances `counts`
/// (0 for profiles it does not hold).
pub fn layout_weights(model: &GpuModel, counts: &[u32]) -> Vec<f64> {
    let sum: f64 = counts
        .iter()
        .enumerate()
        .map(|(p, &n)| n as f64 * raw_weight(model, p))
        .sum();
    counts
        .iter()
        .enumerate()
        .map(|(p, &n)| {
            if n > 0 && sum > 0.0 {
                raw_weight(model, p) / sum
            } else {
                0.0
            }
        })
        .collect()
}

/// What one instance is billed now.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InstanceCharge {
    pub vm: VmId,
    pub tenant: String,
    pub host: HostId,
    pub gpu: usize,
    pub profile: String,
    /// max(compute share, memory share).
    pub raw: f64,
    /// `raw` normalized over the GPU's instances: the share of the GPU billed.
    pub weight: f64,
}

/// The charge of every instance of the fleet now, by host, GPU and start slice.
pub fn instance_charges(fleet: &Fleet) -> Vec<InstanceCharge> {
    let mut out = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        for (k, gpu) in host.gpus.iter().enumerate() {
            let model = fleet.catalog.model(gpu.model);
            let sum: f64 = gpu.gis.iter().map(|g| raw_weight(model, g.profile)).sum();
            for g in &gpu.gis {
                let raw = raw_weight(model, g.profile);
                let tenant = fleet
                    .vm(g.vm)
                    .and_then(|v| v.tenant.clone())
                    .unwrap_or_else(|| NO_TENANT.to_string());
                out.push(InstanceCharge {
                    vm: g.vm,
                    tenant,
                    host: h,
                    gpu: k,
                    profile: model.profiles[g.profile].name.clone(),
                    raw,
                    weight: raw / sum,
                });
            }
        }
    }
    out
}

/// GPUs billed per tenant right now (the sum of its instances' weights), and GPUs without
/// instances.
pub fn rates(fleet: &Fleet) -> (BTreeMap<String, f64>, f64) {
    let mut by_tenant: BTreeMap<String, f64> = BTreeMap::new();
    for c in instance_charges(fleet) {
        *by_tenant.entry(c.tenant).or_insert(0.0) += c.weight;
    }
    let idle = fleet
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| g.gis.is_empty())
        .count() as f64;
    (by_tenant, idle)
}

/// GPU-hours over a period.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Bill {
    /// Length of the period in hours.
    pub hours: f64,
    /// GPU-hours billed per tenant.
    pub tenants: BTreeMap<String, f64>,
    /// GPU-hours of GPUs that held no instance (billed to nobody).
    pub idle_gpu_hours: f64,
    /// GPUs x hours: the tenants' GPU-hours plus the idle ones.
    pub total_gpu_hours: f64,
}

impl Bill {
    /// Adds `dt_h` hours at the fleet's current rates.
    pub fn accrue(&mut self, fleet: &Fleet, dt_h: f64) {
        if dt_h <= 0.0 {
            return;
        }
        let (rates, idle) = rates(fleet);
        for (t, r) in rates {
            *self.tenants.entry(t).or_insert(0.0) += r * dt_h;
        }
        self.idle_gpu_hours += idle * dt_h;
        self.total_gpu_hours += fleet.total_gpus() as f64 * dt_h;
        self.hours += dt_h;
    }
}

/// GPU-hours per tenant over `hours` from the fleet's state at `now_s`, with no arrivals and no
/// moves: each VM leaves at the end of its lifetime (admission + lifetime; a VM already past it
/// leaves at once), and every GPU's weights are renormalized when one of its instances leaves.
pub fn bill_state(fleet: &Fleet, now_s: f64, hours: f64) -> Bill {
    let mut f = fleet.clone();
    let end = now_s + hours * 3600.0;
    let mut departures: Vec<(f64, VmId)> = f
        .vms()
        .filter(|v| v.placement.is_some())
        .filter_map(|v| v.departure().map(|t| (t.max(now_s), v.id)))
        .filter(|&(t, _)| t < end)
        .collect();
    departures.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut bill = Bill::default();
    let mut t = now_s;
    for (at, vm) in departures {
        bill.accrue(&f, (at - t) / 3600.0);
        t = at;
        // Known and placed: it came from the fleet's own list above.
        let _ = f.remove(vm);
    }
    bill.accrue(&f, (end - t) / 3600.0);
    // Report the requested length exactly (the sum of the pieces may differ by rounding).
    bill.hours = hours;
    bill
}

/// A bill built from the fleet states a simulation goes through ([`Simulator::run_for`]): each
/// state is billed for as long as it lasts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meter {
    bill: Bill,
    /// The charges per hour of the current state.
    rates: Bill,
}

impl Meter {
    /// Bills `fleet` for `dt_h` hours; `changed` says whether it may differ from the state seen
    /// last (the charges change only when something happens, so they are recomputed only then).
    pub(crate) fn observe(&mut self, fleet: &Fleet, changed: bool, dt_h: f64) {
        if changed {
            self.rates = Bill::default();
            self.rates.accrue(fleet, 1.0);
        }
        for (tenant, per_h) in &self.rates.tenants {
            *self.bill.tenants.entry(tenant.clone()).or_insert(0.0) += per_h * dt_h;
        }
        self.bill.idle_gpu_hours += self.rates.idle_gpu_hours * dt_h;
        self.bill.total_gpu_hours += self.rates.total_gpu_hours * dt_h;
    }

    /// The bill of a period of `hours` (reported exactly, whatever the rounding of the pieces).
    pub fn bill(self, hours: f64) -> Bill {
        Bill { hours, ..self.bill }
    }
}

/// GPU-hours per tenant over the next `hours` of a simulation: the simulator runs (arrivals,
/// departures and the policy's plans, as the scenario configures them) and a [`Meter`] reads the
/// fleet states it goes through, so the charges are integrated exactly between events and policy
/// steps.
pub fn bill_simulation(sim: &mut Simulator, hours: f64) -> Result<Bill, SimError> {
    let mut meter = Meter::default();
    sim.run_for(hours, |fleet, changed, dt_h| meter.observe(fleet, changed, dt_h))?;
    Ok(meter.bill(hours))
}

#[cfg(test)]
mod tests;
