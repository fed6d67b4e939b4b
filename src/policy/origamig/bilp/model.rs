//! The restricted BILP of §4 (Eq. 4-16) over a neighborhood, built with good_lp, in the
//! formulations of [`Formulation`]. Every formulation has the same optimum value; each reduction
//! is justified where it is applied and compared with [`Formulation::Plain`] by tests.

use super::configs::{self, Config};
use super::{Formulation, Inst};
use crate::catalog::{GpuModel, ModelId};
use crate::fleet::{GiSlot, Placement, VmId};
use crate::mig::{self, Occupancy};
use good_lp::{constraint, variable, Constraint, Expression, ProblemVariables, Variable};
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

    pub(crate) fn bin(&mut self, start: bool, name: impl FnOnce() -> String) -> usize {
        let d = self.def();
        self.v.push(self.pv.add(d));
        self.start.push(if start { 1.0 } else { 0.0 });
        if let Some(n) = &mut self.names {
            n.push(name());
        }
        self.v.len() - 1
    }

    /// An integer in [0, max] (the LP relaxation: continuous).
    pub(crate) fn int(&mut self, max: u32, name: impl FnOnce() -> String) -> usize {
        let d = if self.relax {
            variable().min(0.0).max(max as f64)
        } else {
            variable().integer().min(0.0).max(max as f64)
        };
        self.v.push(self.pv.add(d));
        self.start.push(0.0);
        if let Some(n) = &mut self.names {
            n.push(name());
        }
        self.v.len() - 1
    }

    /// A binary fixed at 0 (experiments).
    pub(crate) fn zero(&mut self, name: impl FnOnce() -> String) -> usize {
        let d = self.def().max(0.0);
        self.v.push(self.pv.add(d));
        self.start.push(0.0);
        if let Some(n) = &mut self.names {
            n.push(name());
        }
        self.v.len() - 1
    }

    /// A binary fixed at 1 (an exact fixing; HiGHS drops it at no cost).
    pub(crate) fn one(&mut self, name: impl FnOnce() -> String) -> usize {
        let d = self.def().min(1.0);
        self.v.push(self.pv.add(d));
        self.start.push(1.0);
        if let Some(n) = &mut self.names {
            n.push(name());
        }
        self.v.len() - 1
    }
}

/// One y column: GI at (host position, gpu, start).
#[derive(Debug, Clone, Copy)]
pub(crate) struct YCol {
    pub h: usize,
    pub k: usize,
    pub z: u8,
    pub col: usize,
}

/// y columns per VM, per GI.
pub(crate) type YMap = Vec<Vec<Vec<YCol>>>;

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
    pub names: Option<Vec<String>>,
}

/// Which reductions a formulation applies.
#[derive(Debug, Clone, Copy)]
struct Flags {
    prune: bool,
    drop_full_f: bool,
    merged_rows: bool,
    gamma_le_phi: bool,
    cap_times_phi: bool,
    fix_on: bool,
    drop_new_mw: bool,
    configs: bool,
}

impl Flags {
    fn of(f: Formulation) -> Flags {
        let all = Flags {
            prune: true,
            drop_full_f: true,
            merged_rows: true,
            gamma_le_phi: true,
            cap_times_phi: true,
            fix_on: true,
            drop_new_mw: true,
            configs: false,
        };
        match f {
            Formulation::Plain => Flags {
                prune: false,
                drop_full_f: false,
                merged_rows: false,
                gamma_le_phi: false,
                cap_times_phi: false,
                fix_on: false,
                drop_new_mw: false,
                configs: false,
            },
            Formulation::Tight => all,
            Formulation::Config => Flags { configs: true, ..all },
            Formulation::Pattern | Formulation::Host => all,
        }
    }
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

/// Hosts that are on in every optimal solution we need to keep (exact fixings, SOLVER-NOTES):
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
            d + f >= w.host + w.gpu * g
        })
        .collect()
}

/// Builds the model of `inst` in formulation `form`.
pub(crate) fn build(inst: &Inst, form: Formulation) -> Built {
    build_with(inst, form, false, false)
}

/// [`build`], optionally as the LP relaxation and with column names (diagnostics).
pub(crate) fn build_with(inst: &Inst, form: Formulation, relax: bool, named: bool) -> Built {
    let fl = Flags::of(form);
    let fleet = inst.fleet;
    let cat = fleet.catalog;
    let w = &inst.w;
    let nh = inst.hosts.len();
    let nv = inst.vms.len();
    if form == Formulation::Host {
        if let Some(b) = super::hostcols::build(inst, relax, named) {
            return b;
        }
    }
    if matches!(form, Formulation::Pattern | Formulation::Host) {
        return super::pattern::build(inst, relax, named);
    }
    let mut cols = Cols::new(relax, named);
    let mut obj: Vec<(f64, usize)> = Vec::new();
    let mut offset = 0.0;
    let mut rows: Vec<Constraint> = Vec::new();

    // --- host and GPU variables -------------------------------------------------------------
    let forced = if fl.fix_on {
        forced_on(inst)
    } else {
        vec![false; nh]
    };
    let mut phi = Vec::with_capacity(nh);
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let active = fleet.hosts[hid].is_active();
        let c = if forced[h] {
            cols.one(|| format!("phi[{h}]=1"))
        } else {
            cols.bin(active, || format!("phi[{h}]"))
        };
        obj.push((-w.host, c));
        phi.push(c);
    }

    // --- x and y ----------------------------------------------------------------------------
    let mut x: Vec<Vec<Option<usize>>> = vec![vec![None; nh]; nv];
    let mut y: YMap = Vec::with_capacity(nv);
    for (i, vm) in inst.vms.iter().enumerate() {
        for (h, xh) in x[i].iter_mut().enumerate() {
            if fl.prune && !host_can_hold(inst, i, h) {
                continue;
            }
            let start = vm.old.as_ref().is_some_and(|(oh, _)| *oh == h);
            let c = cols.bin(start, || format!("x[vm{}][{h}]", vm.id));
            obj.push((w.admit, c));
            *xh = Some(c);
        }
        let mut ys = Vec::with_capacity(vm.gis.len());
        for (v, g) in vm.gis.iter().enumerate() {
            let prof = &cat.model(g.model).profiles[g.profile];
            let mut list = Vec::new();
            for (h, xh) in x[i].iter().enumerate() {
                if xh.is_none() {
                    continue;
                }
                for (k, gpu) in fleet.hosts[inst.hosts[h]].gpus.iter().enumerate() {
                    if !cat.same_class(g.model, gpu.model) {
                        continue;
                    }
                    // Eq. (4): the permitted starts of the profile on an empty grid.
                    for &z in &prof.starts {
                        let start = vm
                            .old
                            .as_ref()
                            .is_some_and(|(oh, slots)| *oh == h && slots[v].gpu == k && slots[v].start == z);
                        let c = cols.bin(start, || format!("y[vm{}.{v}][{h}.{k}@{z}]", vm.id));
                        list.push(YCol { h, k, z, col: c });
                    }
                }
            }
            ys.push(list);
        }
        y.push(ys);
    }

    // --- m and omega (Eq. 14, 15) -----------------------------------------------------------
    for (i, vm) in inst.vms.iter().enumerate() {
        let delta = vm.delta;
        if vm.old.is_none() {
            // A new VM: sum_j x'_ij = 0, so Eq. (14) and (15) read m >= 0 and omega >= 0. With
            // delta_i = 0 the variables do not touch the objective: the reduced formulations drop
            // them.
            if fl.drop_new_mw && delta == 0.0 {
                continue;
            }
            let m = cols.bin(false, || format!("m[vm{}]", vm.id));
            obj.push((-delta, m));
            if !vm.gis.is_empty() || !fl.drop_new_mw {
                let om = cols.bin(false, || format!("w[vm{}]", vm.id));
                obj.push((-delta, om));
            }
            continue;
        }
        let (oh, slots) = vm.old.as_ref().expect("running");
        let m = cols.bin(false, || format!("m[vm{}]", vm.id));
        obj.push((-delta, m));
        // Eq. (14): m_i >= 1 - x_{i, old host}.
        let xo = x[i][*oh].expect("the old host can hold the VM");
        rows.push(constraint::geq(sum(&cols, &[(1.0, m), (1.0, xo)]), 1.0));
        if vm.gis.is_empty() && fl.drop_new_mw {
            // No GI: Eq. (15) is empty, omega_i = 0 at the optimum; dropped.
            continue;
        }
        let om = cols.bin(false, || format!("w[vm{}]", vm.id));
        obj.push((-delta, om));
        for (v, s) in slots.iter().enumerate() {
            // Eq. (15), per GI: omega_i >= 1 - y at the GI's old host, GPU and start.
            let old = y[i][v]
                .iter()
                .find(|e| e.h == *oh && e.k == s.gpu && e.z == s.start)
                .map(|e| e.col)
                .expect("the old slot is a permitted start");
            rows.push(constraint::geq(sum(&cols, &[(1.0, om), (1.0, old)]), 1.0));
        }
    }

    // --- Eq. (6)-(9), (12) ------------------------------------------------------------------
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &fleet.hosts[hid];
        let mut cores: Vec<(f64, usize)> = Vec::new();
        let mut ram: Vec<(f64, usize)> = Vec::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            if let Some(c) = x[i][h] {
                cores.push((vm.cores as f64, c));
                ram.push((vm.ram as f64, c));
                // Eq. (12): x_ij <= phi_j.
                rows.push(constraint::leq(sum(&cols, &[(1.0, c), (-1.0, phi[h])]), 0.0));
            }
        }
        if fl.cap_times_phi {
            // Eq. (6)-(7) times phi_j: sum c_i x_ij <= C_j phi_j. Equal to Eq. (6)-(7) at
            // phi_j = 1, and implied by Eq. (12) at phi_j = 0; tighter in the LP relaxation.
            cores.push((-(host.cores as f64), phi[h]));
            ram.push((-(host.ram_gb as f64), phi[h]));
            rows.push(constraint::leq(sum(&cols, &cores), 0.0));
            rows.push(constraint::leq(sum(&cols, &ram), 0.0));
        } else {
            rows.push(constraint::leq(sum(&cols, &cores), host.cores as f64));
            rows.push(constraint::leq(sum(&cols, &ram), host.ram_gb as f64));
        }
    }
    for (i, vm) in inst.vms.iter().enumerate() {
        let xs: Vec<(f64, usize)> = x[i].iter().flatten().map(|&c| (1.0, c)).collect();
        // Eq. (8): a running VM stays placed, a new one may be rejected.
        if vm.old.is_some() {
            rows.push(constraint::eq(sum(&cols, &xs), 1.0));
        } else if !xs.is_empty() {
            rows.push(constraint::leq(sum(&cols, &xs), 1.0));
        }
        // Eq. (9): each GI on the VM's host, once.
        for ys in &y[i] {
            for (h, xh) in x[i].iter().enumerate() {
                let Some(xc) = *xh else { continue };
                let mut t: Vec<(f64, usize)> = ys.iter().filter(|e| e.h == h).map(|e| (1.0, e.col)).collect();
                t.push((-1.0, xc));
                rows.push(constraint::eq(sum(&cols, &t), 0.0));
            }
        }
    }

    // --- per GPU: slices, gamma, f (Eq. 10, 11, 13) or configurations ------------------------
    for (h, &hid) in inst.hosts.iter().enumerate() {
        for (k, gpu) in fleet.hosts[hid].gpus.iter().enumerate() {
            let model = cat.model(gpu.model);
            // GIs that may land on this GPU: (profile, start, column).
            let mut here: Vec<(usize, u8, usize)> = Vec::new();
            for (i, vm) in inst.vms.iter().enumerate() {
                for (v, g) in vm.gis.iter().enumerate() {
                    for e in &y[i][v] {
                        if e.h == h && e.k == k {
                            here.push((g.profile, e.z, e.col));
                        }
                    }
                }
            }
            let active_now = !gpu.occ.is_empty();
            if fl.configs {
                gpu_configs(
                    &mut cols,
                    &mut obj,
                    &mut rows,
                    &mut offset,
                    inst,
                    model,
                    gpu,
                    &here,
                    phi[h],
                    fl,
                );
                continue;
            }
            let gamma = cols.bin(active_now, || format!("gamma[{h}.{k}]"));
            obj.push((-w.gpu, gamma));
            if fl.gamma_le_phi {
                // gamma_jk <= phi_j: a GPU holds a GI only on a host that runs its VM (Eq. 9, 12);
                // valid and tighter in the LP.
                rows.push(constraint::leq(sum(&cols, &[(1.0, gamma), (-1.0, phi[h])]), 0.0));
            }
            // Eq. (13): gamma_jk <= sum of y on the GPU.
            let mut t: Vec<(f64, usize)> = here.iter().map(|e| (1.0, e.2)).collect();
            t.push((-1.0, gamma));
            rows.push(constraint::geq(sum(&cols, &t), 0.0));
            // o_jku: the GIs covering slice u.
            let cover: Vec<Vec<(f64, usize)>> = (0..model.memory_slices)
                .map(|u| {
                    here.iter()
                        .filter(|&&(p, z, _)| model.profiles[p].mask_at(z) & (1 << u) != 0)
                        .map(|e| (1.0, e.2))
                        .collect()
                })
                .collect();
            // f_jkpz over the CF profiles of the GPU's class.
            let mut in_window = vec![false; model.memory_slices as usize];
            for p in model.cf_profiles() {
                let prof = &model.profiles[p];
                if fl.drop_full_f && prof.size == model.memory_slices {
                    // A profile that spans the whole grid is never free on an active GPU (some GI
                    // covers one of its slices, and f <= gamma otherwise): f = 0, dropped.
                    continue;
                }
                let free_now: Vec<u8> = if active_now {
                    mig::free_starts(model, &gpu.occ, p).collect()
                } else {
                    Vec::new()
                };
                for &z in &prof.starts {
                    let f = cols.bin(free_now.contains(&z), || format!("f[{h}.{k}][{}@{z}]", prof.name));
                    obj.push((w.free_start, f));
                    for u in z..z + prof.size {
                        in_window[u as usize] = true;
                        let mut t = cover[u as usize].clone();
                        t.push((1.0, f));
                        if fl.merged_rows {
                            // f + o_u <= gamma: equal to Eq. (11) and (10) at gamma = 1; at
                            // gamma = 0 both sides are 0 as in (10) and f <= gamma.
                            t.push((-1.0, gamma));
                            rows.push(constraint::leq(sum(&cols, &t), 0.0));
                        } else {
                            rows.push(constraint::leq(sum(&cols, &t), 1.0));
                        }
                    }
                    if !fl.merged_rows {
                        rows.push(constraint::leq(sum(&cols, &[(1.0, f), (-1.0, gamma)]), 0.0));
                    }
                }
            }
            for u in 0..model.memory_slices as usize {
                if fl.merged_rows && in_window[u] {
                    continue; // implied by the merged rows
                }
                // Eq. (10): at most one GI per slice, only on an active GPU.
                let mut t = cover[u].clone();
                if t.is_empty() {
                    continue;
                }
                t.push((-1.0, gamma));
                rows.push(constraint::leq(sum(&cols, &t), 0.0));
            }
            instance_limits(&cols, &mut rows, model, &here);
        }
    }

    finish(cols, &obj, offset, rows, Decode::Slots { x, y }, w.integral())
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
        names,
    }
}

/// How a model's columns encode a placement.
pub(crate) enum Decode {
    /// x per VM and host, y per GI, host, GPU and start (§4).
    Slots { x: Vec<Vec<Option<usize>>>, y: YMap },
    /// Placement patterns and GPU configurations ([`super::pattern`]).
    Patterns(super::pattern::Decode),
    /// Host contents ([`super::hostcols`]).
    Hosts(super::hostcols::Decode),
}

impl Decode {
    /// The placement of every VM the column values place.
    /// A start vector for a placement other than the current one (pattern models only).
    pub(crate) fn start_from(&self, inst: &Inst, targets: &BTreeMap<VmId, Placement>) -> Option<Vec<f64>> {
        match self {
            Decode::Slots { .. } => None,
            Decode::Patterns(d) => d.start_from(inst, targets),
            Decode::Hosts(d) => d.start_from(inst, targets),
        }
    }

    pub(crate) fn targets(&self, inst: &Inst, colv: &[f64]) -> anyhow::Result<BTreeMap<VmId, Placement>> {
        match self {
            Decode::Slots { x, y } => extract_slots(inst, x, y, colv),
            Decode::Patterns(d) => d.targets(inst, colv),
            Decode::Hosts(d) => d.targets(inst, colv),
        }
    }
}

/// Reads the placement out of x and y.
fn extract_slots(
    inst: &Inst,
    x: &[Vec<Option<usize>>],
    y: &YMap,
    colv: &[f64],
) -> anyhow::Result<BTreeMap<VmId, Placement>> {
    let mut out = BTreeMap::new();
    for (i, vm) in inst.vms.iter().enumerate() {
        let hosts: Vec<usize> = (0..inst.hosts.len())
            .filter(|&h| x[i][h].is_some_and(|c| colv[c] > 0.5))
            .collect();
        match hosts.as_slice() {
            [] => {
                if vm.old.is_some() {
                    anyhow::bail!("solver left running VM {} unplaced", vm.id);
                }
            }
            [h] => {
                let mut gis = Vec::with_capacity(vm.gis.len());
                for (v, ys) in y[i].iter().enumerate() {
                    let on: Vec<_> = ys.iter().filter(|e| e.h == *h && colv[e.col] > 0.5).collect();
                    let [e] = on.as_slice() else {
                        anyhow::bail!("solver gave GI {v} of VM {} {} slots", vm.id, on.len());
                    };
                    gis.push(GiSlot { gpu: e.k, start: e.z });
                }
                out.insert(
                    vm.id,
                    Placement {
                        host: inst.hosts[*h],
                        gis,
                    },
                );
            }
            _ => anyhow::bail!("solver put VM {} on {} hosts", vm.id, hosts.len()),
        }
    }
    Ok(out)
}

/// Per-profile instance limits (DESIGN §1; e.g. one +me GI per GPU). Not in the paper's model,
/// whose profiles never reach a limit before their slices run out; a row only where it binds.
fn instance_limits(cols: &Cols, rows: &mut Vec<Constraint>, model: &GpuModel, here: &[(usize, u8, usize)]) {
    for (p, prof) in model.profiles.iter().enumerate() {
        if (prof.max_instances as usize) >= prof.starts.len() {
            continue;
        }
        let t: Vec<(f64, usize)> = here.iter().filter(|e| e.0 == p).map(|e| (1.0, e.2)).collect();
        if t.len() > prof.max_instances as usize {
            rows.push(constraint::leq(sum(cols, &t), prof.max_instances as f64));
        }
    }
}

/// The configuration formulation of one GPU (see [`Formulation::Config`]).
#[allow(clippy::too_many_arguments)]
fn gpu_configs(
    cols: &mut Cols,
    obj: &mut Vec<(f64, usize)>,
    rows: &mut Vec<Constraint>,
    _offset: &mut f64,
    inst: &Inst,
    model: &GpuModel,
    gpu: &crate::fleet::Gpu,
    here: &[(usize, u8, usize)],
    phi: usize,
    _fl: Flags,
) {
    let w = &inst.w;
    // How many GIs of each profile could land here: configurations with more are useless.
    let mut avail = vec![0u8; model.profiles.len()];
    let mut seen = std::collections::BTreeSet::new();
    for &(p, _, c) in here {
        let _ = c;
        seen.insert(p);
    }
    for vm in &inst.vms {
        for g in &vm.gis {
            if seen.contains(&g.profile) && inst.fleet.catalog.same_class(g.model, gpu.model) {
                avail[g.profile] = avail[g.profile].saturating_add(1);
            }
        }
    }
    let current: Vec<(usize, u8)> = gpu.gis.iter().map(|g| (g.profile, g.start)).collect();
    let list: &[Config] = configs::of_model(model);
    let mut lambdas: Vec<(usize, &Config)> = Vec::new();
    for c in list {
        if c.gis.is_empty() {
            continue;
        }
        let mut count = vec![0u8; model.profiles.len()];
        let mut ok = true;
        for &(p, _) in &c.gis {
            count[p] += 1;
            if count[p] > avail[p] {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        let is_current = {
            let mut a = c.gis.clone();
            let mut b = current.clone();
            a.sort();
            b.sort();
            a == b
        };
        let col = cols.bin(is_current, || format!("lambda[{:?}]{:?}", phi, c.gis));
        obj.push((-w.gpu + w.free_start * c.cf as f64, col));
        lambdas.push((col, c));
    }
    // One configuration per GPU, only on a host that is on.
    let mut t: Vec<(f64, usize)> = lambdas.iter().map(|e| (1.0, e.0)).collect();
    t.push((-1.0, phi));
    rows.push(constraint::leq(sum(cols, &t), 0.0));
    // Linking: the GIs of profile p at start z equal the chosen configuration's slot (p, z).
    type Terms = Vec<(f64, usize)>;
    let mut slots: BTreeMap<(usize, u8), (Terms, Terms)> = BTreeMap::new();
    for &(p, z, c) in here {
        slots.entry((p, z)).or_default().0.push((1.0, c));
    }
    for &(col, c) in &lambdas {
        for &(p, z) in &c.gis {
            slots.entry((p, z)).or_default().1.push((-1.0, col));
        }
    }
    for (_, (ys, ls)) in slots {
        let mut t = ys;
        t.extend(ls);
        rows.push(constraint::eq(sum(cols, &t), 0.0));
    }
}
