//! A greedy start for the restricted BILP: a placement of the neighborhood found in
//! milliseconds, handed to HiGHS as its incumbent when it beats the current placement.
//!
//! The solver's time goes both into finding the optimum and into proving it. A good incumbent
//! from the start lets the branch and bound prune from the first node. The greedy rule mirrors
//! what optimal solutions do (every move either empties a host or makes room for a new VM; see
//! `docs/optimizer.md`):
//! 1. each pending VM, oldest first, goes to the first active host of the neighborhood where the
//!    default GI placement fits it, else the first inactive one (admission, a_i);
//! 2. each active host, fewest VMs first, is emptied when all its VMs fit on the other active
//!    hosts (best fit: the host with the fewest free memory slices that takes the VM, GIs at
//!    their default starts; with `arrival_gpu_best_fit` on a host of more than two GPUs, TC's
//!    best fit over the other active hosts' GPUs) and Eq. (5) rises (b_j, e_jk against 2
//!    delta_i per VM).
//!
//! Every step is kept only when Eq. (5), recomputed from the placement ([`objective::evaluate`]),
//! rises, so the start is never worse than the current placement. It changes nothing in the
//! model: the optimum is the same with or without it.

use super::objective::{self, Weights};
use crate::fleet::{Fleet, HostId, Placement, VmId};
use std::collections::BTreeMap;

/// A greedy placement of a neighborhood.
#[derive(Debug, Clone)]
pub struct Start {
    /// Every running VM of the neighborhood, plus the admitted pending VMs.
    pub targets: BTreeMap<VmId, Placement>,
    /// Eq. (5) over the neighborhood.
    pub value: f64,
}

/// The greedy placement of the neighborhood, or `None` when it does not beat the current
/// placement.
pub fn start(fleet: &Fleet, hosts: &[HostId], pending: &[VmId], w: &Weights) -> Option<Start> {
    start_with(fleet, hosts, pending, w, false)
}

thread_local! {
    static TABLES: std::cell::RefCell<crate::policy::cache::Lazy> = Default::default();
}

/// Where `vm` goes on host `h`: the default GI placement (first GPU where each GI fits), or,
/// with `best_fit_big` on a host of more than two GPUs, TC's best fit over its GPUs (the
/// arrival rule's `arrival_gpu_best_fit`), which fills partly used GPUs first.
fn big(fleet: &Fleet, h: HostId) -> bool {
    fleet.hosts[h].gpus.len() > super::neighborhood::PAPER_HOST_GPUS
}

fn place_on(fleet: &Fleet, vm: &crate::fleet::Vm, h: HostId, best_fit_big: bool) -> Option<Placement> {
    if best_fit_big && big(fleet, h) && vm.is_mig() {
        let t = TABLES.with(|t| t.borrow_mut().get(fleet.catalog));
        return crate::policy::tc::placement(&t, fleet, vm, |x| x == h);
    }
    fleet.host_placement_default(vm, h)
}

/// [`start`], with `best_fit_big`: on hosts of more than two GPUs, VMs go to the GPUs by best
/// fit ([`place_on`]).
pub(crate) fn start_with(
    fleet: &Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    w: &Weights,
    best_fit_big: bool,
) -> Option<Start> {
    let value = |f: &Fleet| objective::evaluate(fleet, f, hosts, w).total;
    let mut best = fleet.clone();
    let mut best_v = value(&best);
    let start_v = best_v;

    // 1. Admission.
    for &id in pending {
        let Some(vm) = best.vm(id).cloned() else { continue };
        if vm.placement.is_some() {
            continue;
        }
        let mut order: Vec<HostId> = hosts.to_vec();
        order.sort_by_key(|&h| !best.hosts[h].is_active());
        if let Some(p) = order.iter().find_map(|&h| place_on(&best, &vm, h, best_fit_big)) {
            let mut trial = best.clone();
            if trial.place(id, p).is_ok() {
                let v = value(&trial);
                if v > best_v {
                    best = trial;
                    best_v = v;
                }
            }
        }
    }

    // 2. Consolidation: empty hosts, fewest VMs first.
    let mut sources: Vec<HostId> = hosts
        .iter()
        .copied()
        .filter(|&h| best.hosts[h].is_active())
        .collect();
    sources.sort_by_key(|&h| (best.hosts[h].vms.len(), h));
    for s in sources {
        if !best.hosts[s].is_active() {
            continue;
        }
        let mut trial = best.clone();
        let mut vms: Vec<VmId> = trial.hosts[s].vms.clone();
        vms.sort_by_key(|&id| {
            std::cmp::Reverse(trial.vm(id).map(|v| v.memory_slices(fleet.catalog)).unwrap_or(0))
        });
        let mut ok = true;
        for id in vms {
            let Some(mut vm) = trial.vm(id).cloned() else {
                ok = false;
                break;
            };
            if trial.unplace(id).is_err() {
                ok = false;
                break;
            }
            vm.placement = None;
            let receiver = |h: HostId| h != s && trial.hosts[h].is_active() && hosts.contains(&h);
            let target = if best_fit_big && big(&trial, s) && vm.is_mig() {
                // Big hosts: the receiver and its GPUs by TC's best fit, the fullest GPUs that
                // take the VM, so that an emptied host fills partly used GPUs first.
                let t = TABLES.with(|t| t.borrow_mut().get(fleet.catalog));
                crate::policy::tc::placement(&t, &trial, &vm, receiver).map(|p| (p.host, p))
            } else {
                hosts
                    .iter()
                    .copied()
                    .filter(|&h| receiver(h))
                    .filter_map(|h| Some((h, place_on(&trial, &vm, h, best_fit_big)?)))
                    .min_by_key(|(h, _)| (free_slices(&trial, *h), *h))
            };
            let placed = match target {
                Some((_, p)) => trial.place(id, p).is_ok(),
                None => false,
            };
            if !placed {
                ok = false;
                break;
            }
        }
        if ok {
            let v = value(&trial);
            if v > best_v {
                best = trial;
                best_v = v;
            }
        }
    }

    if best_v <= start_v {
        return None;
    }
    let mut out = BTreeMap::new();
    for &h in hosts {
        for &id in &fleet.hosts[h].vms {
            out.insert(id, best.vm(id)?.placement.clone()?);
        }
    }
    for &id in pending {
        if let Some(p) = best.vm(id).and_then(|v| v.placement.clone()) {
            out.insert(id, p);
        }
    }
    Some(Start {
        targets: out,
        value: best_v,
    })
}

/// Free memory slices on the GPUs of host `h`.
fn free_slices(fleet: &Fleet, h: HostId) -> u32 {
    fleet.hosts[h]
        .gpus
        .iter()
        .map(|g| {
            let m = fleet.catalog.model(g.model);
            (m.memory_slices as u32).saturating_sub(g.occ.used_slices())
        })
        .sum()
}
