//! What every formulation of the restricted BILP shares: columns with their start values, the
//! finished good_lp model, and the checks and exact fixings that do not depend on how the GIs are
//! modelled. It names no formulation: how each one's columns are read back as a placement is the
//! parent's `Decode`.

use super::{Decode, Inst};
use crate::catalog::ModelId;
use crate::mig::{self, Occupancy};
use good_lp::{variable, Constraint, Expression, ProblemVariables, Variable};
use std::collections::BTreeMap;

/// Columns in creation order (= HiGHS column order) with their start values.
pub(crate) struct Cols {
    pv: ProblemVariables,
    v: Vec<Variable>,
    start: Vec<f64>,
    /// Diagnostics: continuous variables (the LP relaxation) and column names.
    relax: bool,
    names: Option<Vec<String>>,
}

impl Cols {
    fn def(&self) -> good_lp::VariableDefinition {
        if self.relax {
            variable().min(0.0).max(1.0)
        } else {
            variable().binary()
        }
    }

    pub(crate) fn new(relax: bool, named: bool) -> Cols {
        Cols {
            pv: ProblemVariables::new(),
            v: Vec::new(),
            start: Vec::new(),
            relax,
            names: named.then(Vec::new),
        }
    }

    /// Columns so far.
    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    /// Adds a column of definition `d` with its start value.
    fn push(&mut self, d: good_lp::VariableDefinition, start: f64, name: impl FnOnce() -> String) -> usize {
        self.v.push(self.pv.add(d));
        self.start.push(start);
        if let Some(n) = &mut self.names {
            n.push(name());
        }
        self.v.len() - 1
    }

    /// A binary (the LP relaxation: in [0, 1]).
    pub(crate) fn bin(&mut self, start: bool, name: impl FnOnce() -> String) -> usize {
        let d = self.def();
        self.push(d, if start { 1.0 } else { 0.0 }, name)
    }

    /// An integer in [0, max] (the LP relaxation: continuous).
    pub(crate) fn int(&mut self, max: u32, name: impl FnOnce() -> String) -> usize {
        let d = if self.relax {
            variable().min(0.0).max(max as f64)
        } else {
            variable().integer().min(0.0).max(max as f64)
        };
        self.push(d, 0.0, name)
    }

    /// A binary fixed at 0 (experiments).
    pub(crate) fn zero(&mut self, name: impl FnOnce() -> String) -> usize {
        let d = self.def().max(0.0);
        self.push(d, 0.0, name)
    }

    /// A binary fixed at 1 (an exact fixing; HiGHS drops it at no cost).
    pub(crate) fn one(&mut self, name: impl FnOnce() -> String) -> usize {
        let d = self.def().min(1.0);
        self.push(d, 1.0, name)
    }
}

/// A built model: the good_lp problem plus the map from placements to columns.
pub(crate) struct Built {
    pub problem: good_lp::solvers::highs::HighsProblem,
    /// Complete start vector: the current placement, pending VMs rejected (§5.3).
    pub start: Vec<f64>,
    /// Objective constant that HiGHS does not see.
    pub offset: f64,
    /// How to read a placement out of the column values.
    pub decode: Decode,
    /// Whether every objective coefficient is an integer.
    pub integral: bool,
    /// Column names (diagnostics only).
    #[cfg(feature = "solver-lab")]
    pub names: Option<Vec<String>>,
}

pub(crate) fn sum(cols: &Cols, terms: &[(f64, usize)]) -> Expression {
    let mut e = Expression::with_capacity(terms.len());
    for &(c, i) in terms {
        e.add_mul(c, cols.v[i]);
    }
    e
}

/// Whether host position `h` can hold VM `i` at all: cores, RAM, a GPU of the class of each GI
/// and enough slices of that class. When it cannot, x_ij = 1 would violate Eq. (6), (7), (9) or
/// (10), so the variable is dropped (fixed at 0).
pub(crate) fn host_can_hold(inst: &Inst, i: usize, h: usize) -> bool {
    let vm = &inst.vms[i];
    let host = &inst.fleet.hosts[inst.hosts[h]];
    if vm.cores > host.cores || vm.ram > host.ram_gb {
        return false;
    }
    let cat = inst.fleet.catalog;
    let mut need: BTreeMap<&str, u32> = BTreeMap::new();
    for g in &vm.gis {
        let m = cat.model(g.model);
        let p = &m.profiles[g.profile];
        let fits_one = host
            .gpus
            .iter()
            .any(|gpu| cat.same_class(g.model, gpu.model) && p.size <= cat.model(gpu.model).memory_slices);
        if !fits_one {
            return false;
        }
        *need.entry(m.class.as_str()).or_default() += p.size as u32;
    }
    need.iter().all(|(class, &n)| {
        let have: u32 = host
            .gpus
            .iter()
            .filter(|gpu| cat.model(gpu.model).class == *class)
            .map(|gpu| cat.model(gpu.model).memory_slices as u32)
            .sum();
        n <= have
    })
}

/// Hosts that are on in every optimal solution we need to keep (exact fixings; see
/// `docs/optimizer.md`):
///
/// (a) Restoring a host. Take any solution in which host j is off. Put j's running VMs back on
/// their old GIs (free: j holds nothing) and take them off the hosts that received them. Their
/// m and omega fall to 0 (gain D_j = sum of delta_i (1 + [VM has GIs])), j is on again (cost b)
/// with its old active GPUs (cost e G_j) and its old free starts (gain F_j). A receiver GPU that
/// loses GIs gains free starts, or becomes empty and gains e - w_p CF(its configuration) >= 0
/// when e >= w_p CF(empty GPU) (the third relation of §5.2, checked here); a receiver host that
/// empties gains b. So when D_j + F_j >= b + e G_j the restored solution is at least as good, and
/// some optimum has phi_j = 1. Restored hosts hold exactly their old VMs, so restoring several
/// hosts one after another never empties a restored one: the fixings hold jointly.
///
/// (b) Capacity. If the running VMs of the neighborhood need more cores, RAM or memory slices
/// of a class than the other hosts have in total, j cannot be off (Eq. 6-10).
pub(crate) fn forced_on(inst: &Inst) -> Vec<bool> {
    let cat = inst.fleet.catalog;
    let w = &inst.w;
    let models: Vec<ModelId> = inst
        .hosts
        .iter()
        .flat_map(|&h| inst.fleet.hosts[h].gpus.iter().map(|g| g.model))
        .collect();
    let relation_ok = models.iter().all(|&m| {
        let gm = cat.model(m);
        w.gpu >= w.free_start * mig::cf(gm, &Occupancy::empty()) as f64
    }) && w.free_start >= 0.0;
    // Totals for (b).
    let mut cores_need = 0u64;
    let mut ram_need = 0u64;
    let mut slices_need: BTreeMap<&str, u64> = BTreeMap::new();
    for vm in inst.vms.iter().filter(|v| v.old.is_some()) {
        cores_need += vm.cores as u64;
        ram_need += vm.ram as u64;
        for g in &vm.gis {
            let m = cat.model(g.model);
            *slices_need.entry(m.class.as_str()).or_default() += m.profiles[g.profile].size as u64;
        }
    }
    let cap = |h: usize| {
        let host = &inst.fleet.hosts[inst.hosts[h]];
        let mut s: BTreeMap<&str, u64> = BTreeMap::new();
        for g in &host.gpus {
            let m = cat.model(g.model);
            *s.entry(m.class.as_str()).or_default() += m.memory_slices as u64;
        }
        (host.cores as u64, host.ram_gb as u64, s)
    };
    let caps: Vec<_> = (0..inst.hosts.len()).map(cap).collect();
    let mut tot_cores = 0u64;
    let mut tot_ram = 0u64;
    let mut tot_slices: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &caps {
        tot_cores += c.0;
        tot_ram += c.1;
        for (k, v) in &c.2 {
            *tot_slices.entry(k).or_default() += v;
        }
    }
    (0..inst.hosts.len())
        .map(|h| {
            let host = &inst.fleet.hosts[inst.hosts[h]];
            if !host.is_active() {
                return false;
            }
            // (b)
            let (c, r, s) = &caps[h];
            if cores_need > tot_cores - c || ram_need > tot_ram - r {
                return true;
            }
            for (class, need) in &slices_need {
                let others = tot_slices.get(class).copied().unwrap_or(0) - s.get(class).copied().unwrap_or(0);
                if *need > others {
                    return true;
                }
            }
            // (a)
            if !relation_ok {
                return false;
            }
            let mut d = 0.0;
            for &id in &host.vms {
                let Some(i) = inst.index.get(&id) else { continue };
                let vm = &inst.vms[*i];
                d += vm.delta * if vm.gis.is_empty() { 1.0 } else { 2.0 };
            }
            let mut f = 0.0;
            let mut g = 0.0;
            for gpu in &host.gpus {
                if gpu.occ.is_empty() {
                    continue;
                }
                g += 1.0;
                f += w.free_start * mig::cf(cat.model(gpu.model), &gpu.occ) as f64;
            }
            d + f >= w.host_of(host, cat) + w.gpu * g
        })
        .collect()
}

/// Steps `idx` (one index into each list) to the next combination of one element per list, the
/// first index fastest; false after the last.
pub(crate) fn next_combination<T>(idx: &mut [usize], lists: &[Vec<T>]) -> bool {
    for d in 0..idx.len() {
        idx[d] += 1;
        if idx[d] < lists[d].len() {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// Finishes a model: objective, rows, and the good_lp problem.
pub(crate) fn finish(
    cols: Cols,
    obj: &[(f64, usize)],
    offset: f64,
    rows: Vec<Constraint>,
    decode: Decode,
    integral: bool,
) -> Built {
    let objective = sum(&cols, obj) + offset;
    let Cols { pv, start, names, .. } = cols;
    #[cfg(not(feature = "solver-lab"))]
    let _ = names;
    let mut problem = pv.maximise(objective).using(good_lp::solvers::highs::highs);
    for r in rows {
        good_lp::SolverModel::add_constraint(&mut problem, r);
    }
    Built {
        problem,
        start,
        offset,
        decode,
        integral,
        #[cfg(feature = "solver-lab")]
        names,
    }
}
