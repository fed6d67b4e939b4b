//! A cheap, exact test that a call without pending VMs cannot improve Eq. (5) (§4) over its
//! neighborhood: an upper bound on the gain of every placement of the neighborhood's running
//! VMs on its hosts, from a Lagrangian relaxation that keeps each GPU's MIG rules exact and
//! couples the GPUs only through the count of GIs of each profile. When the bound is below what
//! §5.3 needs to apply a plan (a strictly larger Eq. 5), no solve can change the placements and
//! the call skips the model's build and HiGHS.
//!
//! The gain of a placement over the current one is split by host and GPU:
//!
//! - a host that was active and is emptied gains b_j and pays delta_i (m_i = 1) for every VM it
//!   ran; a host that stays active gains nothing; a host that was idle gains nothing or pays b_j;
//! - a GPU k whose GIs go from the set O (current (profile, start) pairs) to O' gains
//!   `base(O') - base(O)`, with base = w_p × CF - e_k on an active GPU and 0 on an idle one, and
//!   pays delta_i / n_i (omega_i; n_i the VM's GIs) for each GI of O that is not in O', at least
//!   what the VM's omega_i costs when one of its GIs changes;
//! - a price lambda_p per GI profile (of one GPU class) is added for each GI of profile p a GPU
//!   receives and subtracted for each it gives: every running VM keeps its GIs, so these sum to
//!   zero over the hosts and any lambda leaves the bound valid.
//!
//! Each host's best choice is found exactly by enumerating every valid occupancy of each of its
//! GPUs (the MIG placement rules, instance limits included), and the prices are improved by a
//! few subgradient steps. CPU cores and RAM are relaxed away (they only restrict placements).
//! Neighborhoods with anything but MIG-mode GPUs and VMs of GIs only are not checked.

use super::super::objective::Weights;
use crate::catalog::{GpuModel, ModelId};
use crate::fleet::{Fleet, GpuMode, HostId, Shape};
use crate::mig::{self, Occupancy};
use std::collections::HashMap;

/// At most this many (profile, start) pairs per GPU class (a bit each).
const MAX_PAIRS: usize = 64;
/// At most this many occupancies per GPU model (an A100-40GB has a few hundred).
const MAX_OCCUPANCIES: usize = 50_000;
/// Subgradient steps on the prices.
const STEPS: usize = 60;
/// After this many steps, a bound still above [`GIVE_UP_ABOVE`] ends the check unproven.
const GIVE_UP_AFTER: usize = 20;
const GIVE_UP_ABOVE: f64 = 8.0;

/// Whether no placement of the running VMs of `hosts` (no pending VMs) has an Eq. (5) that §5.3
/// would apply: every placement's value is proven below the current one + 1 when the weights are
/// integers (Eq. 5 then moves in whole units), else not above the current one + 1e-6. `false`
/// means "not proven", never "an improvement exists".
pub fn no_improving_plan(fleet: &Fleet, hosts: &[HostId], w: &Weights) -> bool {
    let Some(rel) = Relaxation::new(fleet, hosts, w) else {
        return false;
    };
    let need = if w.integral() { 1.0 - 1e-6 } else { 1e-6 - 1e-9 };
    rel.bound_below(need)
}

/// The (profile, start) pairs of one GPU class, a bit each.
struct Pairs {
    /// Bit of profile p's first start, or `None` when no GI of the neighborhood has profile p.
    first: Vec<Option<usize>>,
    /// Profile of each bit.
    profile: Vec<usize>,
}

/// Every valid occupancy of one GPU model with the neighborhood's profiles of its class.
struct Occupancies {
    /// Occupied pairs (bits of the class's [`Pairs`]).
    bits: Vec<u64>,
    /// base(O') = w_p × CF - e on an active GPU, 0 on an idle one.
    base: Vec<f64>,
}

/// One GPU of the neighborhood.
struct GpuItem {
    class: usize,
    occs: usize,
    /// The current pairs.
    cur: u64,
    /// base of the current occupancy.
    cur_base: f64,
    /// delta_i / n_i of the GI on each current pair's bit.
    charge: Vec<(usize, f64)>,
}

/// One host of the neighborhood.
struct HostItem {
    gpus: Vec<usize>,
    active: bool,
    b: f64,
    /// Sum of delta_i of its VMs (m_i = 1 for all of them when it is emptied).
    leave: f64,
}

struct Relaxation {
    pairs: Vec<Pairs>,
    occs: Vec<Occupancies>,
    gpus: Vec<GpuItem>,
    hosts: Vec<HostItem>,
}

/// A host's best choice under the prices: its bound and, per GPU, the chosen occupancy.
struct Choice {
    value: f64,
    picks: Vec<Option<usize>>,
}

impl Relaxation {
    fn new(fleet: &Fleet, hosts: &[HostId], w: &Weights) -> Option<Relaxation> {
        let catalog = fleet.catalog;
        let mut classes: Vec<&str> = Vec::new();
        let class_of = |classes: &mut Vec<&'static str>, m: ModelId| -> usize {
            let c = catalog.model(m).class.as_str();
            match classes.iter().position(|x| *x == c) {
                Some(i) => i,
                None => {
                    classes.push(c);
                    classes.len() - 1
                }
            }
        };
        // The profiles the neighborhood's GIs use, per class; a representative model per class.
        let mut used: Vec<Vec<bool>> = Vec::new();
        let mut rep: Vec<ModelId> = Vec::new();
        for &h in hosts {
            let host = fleet.hosts.get(h)?;
            for gpu in &host.gpus {
                if gpu.mode != GpuMode::Mig || gpu.holder.is_some() || !gpu.shares.is_empty() {
                    return None;
                }
                let c = class_of(&mut classes, gpu.model);
                if c == rep.len() {
                    rep.push(gpu.model);
                    used.push(vec![false; catalog.model(gpu.model).profiles.len()]);
                }
            }
            for &id in &host.vms {
                let vm = fleet.vm(id)?;
                if vm.shape != Shape::Mig {
                    return None;
                }
                for g in &vm.gis {
                    let c = class_of(&mut classes, g.model);
                    let u = used.get_mut(c)?;
                    *u.get_mut(g.profile)? = true;
                }
            }
        }
        let mut pairs = Vec::new();
        for (c, u) in used.iter().enumerate() {
            let model = catalog.model(rep[c]);
            let mut first = vec![None; u.len()];
            let mut profile = Vec::new();
            for (p, &on) in u.iter().enumerate() {
                if on {
                    first[p] = Some(profile.len());
                    profile.extend(std::iter::repeat_n(p, model.profiles[p].starts.len()));
                }
            }
            if profile.len() > MAX_PAIRS {
                return None;
            }
            pairs.push(Pairs { first, profile });
        }
        let mut occs: Vec<Occupancies> = Vec::new();
        let mut occ_of: HashMap<ModelId, usize> = HashMap::new();
        let mut gpus = Vec::new();
        let mut items = Vec::new();
        for &h in hosts {
            let host = &fleet.hosts[h];
            let mut item = HostItem {
                gpus: Vec::new(),
                active: host.is_active(),
                b: w.host_of(host, catalog),
                leave: 0.0,
            };
            for &id in &host.vms {
                item.leave += w.delta_of(fleet.vm(id)?, catalog);
            }
            for gpu in &host.gpus {
                let model = catalog.model(gpu.model);
                let class = classes.iter().position(|x| *x == model.class)?;
                let pc = &pairs[class];
                let o = match occ_of.get(&gpu.model) {
                    Some(&o) => o,
                    None => {
                        occs.push(enumerate(model, pc, w)?);
                        occ_of.insert(gpu.model, occs.len() - 1);
                        occs.len() - 1
                    }
                };
                let mut g = GpuItem {
                    class,
                    occs: o,
                    cur: 0,
                    cur_base: base(model, &gpu.occ, w),
                    charge: Vec::new(),
                };
                for r in &gpu.gis {
                    let vm = fleet.vm(r.vm)?;
                    let z = model.profiles[r.profile]
                        .starts
                        .iter()
                        .position(|&s| s == r.start)?;
                    let bit = pc.first[r.profile]? + z;
                    g.cur |= 1 << bit;
                    g.charge
                        .push((bit, w.delta_of(vm, catalog) / vm.gis.len() as f64));
                }
                item.gpus.push(gpus.len());
                gpus.push(g);
            }
            items.push(item);
        }
        Some(Relaxation {
            pairs,
            occs,
            gpus,
            hosts: items,
        })
    }

    /// Whether some prices bring the bound below `need` (a few subgradient steps from zero).
    fn bound_below(&self, need: f64) -> bool {
        let mut lambda: Vec<Vec<f64>> = self.pairs.iter().map(|p| vec![0.0; p.first.len()]).collect();
        let mut best = f64::INFINITY;
        for step in 0..STEPS {
            let (ub, grad) = self.evaluate(&lambda);
            if ub < need {
                return true;
            }
            best = best.min(ub);
            if step >= GIVE_UP_AFTER && best > GIVE_UP_ABOVE {
                // Far from the target: more steps seldom close the gap (docs/results/speed-44.md).
                return false;
            }
            let norm: f64 = grad.iter().flatten().map(|g| g * g).sum();
            if norm == 0.0 {
                // The best choices give and receive as many GIs of each profile: no price
                // changes the bound's value there.
                return false;
            }
            // Polyak's step towards a bound of half the target.
            let t = (ub - need / 2.0) / norm;
            for (l, g) in lambda.iter_mut().zip(&grad) {
                for (x, d) in l.iter_mut().zip(g) {
                    *x -= t * d;
                }
            }
        }
        false
    }

    /// The bound under `lambda` and its subgradient (GIs received minus given, per profile).
    fn evaluate(&self, lambda: &[Vec<f64>]) -> (f64, Vec<Vec<f64>>) {
        // Sum of the prices of each occupancy's pairs, per occupancy list.
        let priced: Vec<Vec<f64>> = self
            .occs
            .iter()
            .enumerate()
            .map(|(o, occ)| {
                let class = self.gpus.iter().find(|g| g.occs == o).map_or(0, |g| g.class);
                let pr = &self.pairs[class];
                occ.bits
                    .iter()
                    .map(|&b| bits_sum(b, |i| lambda[class][pr.profile[i]]))
                    .collect()
            })
            .collect();
        let mut ub = 0.0;
        let mut grad: Vec<Vec<f64>> = lambda.iter().map(|l| vec![0.0; l.len()]).collect();
        for host in &self.hosts {
            let c = self.host_choice(host, lambda, &priced);
            ub += c.value;
            for (&k, pick) in host.gpus.iter().zip(&c.picks) {
                let g = &self.gpus[k];
                let new = pick.map_or(g.cur, |o| self.occs[g.occs].bits[o]);
                let pr = &self.pairs[g.class];
                for_bits(new & !g.cur, |i| grad[g.class][pr.profile[i]] += 1.0);
                for_bits(g.cur & !new, |i| grad[g.class][pr.profile[i]] -= 1.0);
            }
        }
        (ub, grad)
    }

    /// The best of a host's choices: emptied (if active), or each GPU at its best occupancy.
    fn host_choice(&self, host: &HostItem, lambda: &[Vec<f64>], priced: &[Vec<f64>]) -> Choice {
        let mut best_sum = 0.0;
        let mut picks = Vec::with_capacity(host.gpus.len());
        let mut empty_sum = 0.0;
        let mut empty_picks = Vec::with_capacity(host.gpus.len());
        for &k in &host.gpus {
            let g = &self.gpus[k];
            let occ = &self.occs[g.occs];
            let pr = &self.pairs[g.class];
            // What giving every current GI would pay and earn: sum over O of (charge + lambda).
            let give_all: f64 = g
                .charge
                .iter()
                .map(|&(b, c)| c + lambda[g.class][pr.profile[b]])
                .sum();
            let constant = -g.cur_base - give_all;
            // The current occupancy (gain 0) unless another is strictly better.
            let mut best = 0.0;
            let mut pick = None;
            let mut empty = None;
            for (o, &bits) in occ.bits.iter().enumerate() {
                let kept: f64 = g
                    .charge
                    .iter()
                    .filter(|&&(b, _)| bits & (1 << b) != 0)
                    .map(|&(_, c)| c)
                    .sum();
                let v = occ.base[o] + priced[g.occs][o] + constant + kept;
                if bits == 0 {
                    empty = Some((o, v));
                }
                if v > best {
                    best = v;
                    pick = Some(o);
                }
            }
            best_sum += best;
            picks.push(pick);
            let (eo, ev) = empty.unwrap_or((0, constant));
            empty_sum += ev;
            empty_picks.push(Some(eo));
        }
        if host.active {
            let emptied = host.b - host.leave + empty_sum;
            if emptied > best_sum {
                return Choice {
                    value: emptied,
                    picks: empty_picks,
                };
            }
            Choice {
                value: best_sum,
                picks,
            }
        } else if best_sum - host.b > 0.0 {
            // An idle host that receives GIs is switched on.
            Choice {
                value: best_sum - host.b,
                picks,
            }
        } else {
            Choice {
                value: 0.0,
                picks: vec![None; host.gpus.len()],
            }
        }
    }
}

/// base of an occupancy: w_p × CF - e on an active GPU, 0 on an idle one (Eq. 5's GPU terms).
fn base(model: &GpuModel, occ: &Occupancy, w: &Weights) -> f64 {
    if occ.is_empty() {
        0.0
    } else {
        w.free_start * mig::cf(model, occ) as f64 - w.gpu
    }
}

/// Every valid occupancy of `model` with GIs of the class's pairs (the empty one first).
fn enumerate(model: &GpuModel, pairs: &Pairs, w: &Weights) -> Option<Occupancies> {
    let list: Vec<(usize, u8)> = pairs
        .profile
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let first = pairs.first[p].unwrap_or(i);
            (p, model.profiles[p].starts[i - first])
        })
        .collect();
    let mut out = Occupancies {
        bits: Vec::new(),
        base: Vec::new(),
    };
    fn rec(
        i: usize,
        list: &[(usize, u8)],
        model: &GpuModel,
        occ: Occupancy,
        bits: u64,
        w: &Weights,
        out: &mut Occupancies,
    ) -> bool {
        if out.bits.len() >= MAX_OCCUPANCIES {
            return false;
        }
        if i == list.len() {
            out.bits.push(bits);
            out.base.push(base(model, &occ, w));
            return true;
        }
        if !rec(i + 1, list, model, occ, bits, w, out) {
            return false;
        }
        let (p, z) = list[i];
        if occ.can_place(model, p, z) {
            let mut next = occ;
            next.add(model, p, z);
            return rec(i + 1, list, model, next, bits | 1 << i, w, out);
        }
        true
    }
    rec(0, &list, model, Occupancy::empty(), 0, w, &mut out).then_some(out)
}

fn for_bits(mut b: u64, mut f: impl FnMut(usize)) {
    while b != 0 {
        let i = b.trailing_zeros() as usize;
        f(i);
        b &= b - 1;
    }
}

fn bits_sum(b: u64, f: impl Fn(usize) -> f64) -> f64 {
    let mut s = 0.0;
    for_bits(b, |i| s += f(i));
    s
}

#[cfg(test)]
mod tests;
