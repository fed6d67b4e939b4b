//! The pattern formulation of the restricted BILP: the same feasible placements and the same
//! Eq. (5) as §4, written with columns that describe whole decisions.
//!
//! - A[i, j, pi]: VM i runs on host j with its GIs on the GPUs pi (one GPU per GI). This is
//!   x_ij split by GPU assignment; it ties a VM's GIs together, so the LP relaxation can no
//!   longer place one GI of a half-admitted VM where its other GI could never be (the plain LP
//!   does, and its bound is the weak part; see `docs/optimizer.md`).
//! - L[j, k, c]: GPU k of host j holds configuration c (a set of (profile, start) GIs, §3's
//!   configuration space). A GPU holds at most one configuration, only on a host that is on
//!   (sum_c L <= phi_j); gamma_jk is sum_c L and the free-start term of Eq. (5) is w_p CF(c), so
//!   the column's objective is w_p CF(c) - e_jk (the f of §4 at their optimum: Eq. 11 lets
//!   sum_z f equal |S(F, p)|).
//! - Counting rows link them: for each GPU and profile, the GIs that the patterns put there equal
//!   the GIs of that profile in the chosen configuration. GIs of one profile are interchangeable
//!   on a GPU, so any such solution is a placement of §4 (each GI takes a slot of its profile)
//!   and every placement of §4 is such a solution: the feasible sets map onto each other.
//! - Migrations: m_i >= 1 - x_{i, old host} is tight at the optimum (m is penalized), so m_i is
//!   replaced by 1 - sum_pi A[i, old host, pi] (a constant and a coefficient). omega_i >= 1 -
//!   y at the old slot of each GI (Eq. 15) is tight at the optimum too: omega_i = 1 - s_i with
//!   s_i ("VM i keeps every GI where it was") <= A[i, old host, old GPUs] and, per GI,
//!   s_i <= sum of L over configurations of its old GPU that contain its old (profile, start).
//!
//! Exact reductions on top (each keeps an optimum):
//! - Patterns only on hosts that can hold the VM (`toolkit::host_can_hold`) and GPUs of the GI's
//!   class (Eq. 4), and only when the GIs put on each GPU fit it together (the profile counts
//!   are those of some configuration; otherwise the counting row cannot hold).
//! - Two GIs of one VM with the same profile are interchangeable: only the pattern with their
//!   GPUs in ascending order is kept (plus the VM's current pattern); the other has the same
//!   counts and, not being the current one, the same omega_i = 1.
//! - Configurations needing more GIs of a profile than the neighborhood can put on the GPU
//!   cannot satisfy the counting row: dropped.
//! - Among configurations with the same profile counts, one is dropped when another has at least
//!   its CF and keeps at least the same current GIs of the GPU (the only other thing that
//!   matters, through s_i); ties keep the first. On a GPU that holds nothing now this leaves one
//!   configuration per profile multiset (77 non-empty ones on an A100-40GB instead of 722).
//! - The host fixings of `toolkit::forced_on`, and sum_i c_i x_ij <= C_j phi_j.
//! - Conflict cliques (`conflict_cliques`): VMs of which no two fit on a host together take at
//!   most one place there, sum_C x_ij <= phi_j, which replaces Eq. (12) for the VMs it covers.
//!   Valid for every placement; it tightens the LP, which otherwise rotates fractions of big VMs
//!   around half-on hosts. Added on hosts with GPUs of 8 memory slices or more only (see
//!   `conflict_cliques`).

use super::configs::{self, Config};
use super::toolkit::{self, finish, sum, Built, Cols};
use super::Inst;
use crate::catalog::GpuModel;
use crate::fleet::{GiRequest, GiSlot, Placement, VmId};
use good_lp::{constraint, Constraint};
use std::collections::{BTreeMap, BTreeSet};

/// Row terms: (coefficient, column).
type Terms = Vec<(f64, usize)>;

/// Reads a placement out of a pattern model.
pub(crate) struct Decode {
    /// Per VM: (host position, GPU per GI, column).
    pats: Vec<Vec<(usize, Vec<usize>, usize)>>,
    /// Per host position, per GPU: (configuration, column).
    cfgs: Vec<Vec<Vec<(&'static Config, usize)>>>,
    /// phi column per host position, and whether it is fixed at 1.
    phi: Vec<(usize, bool)>,
    /// s column per VM (running VMs with GIs).
    stay: Vec<Option<usize>>,
    ncols: usize,
}

/// Profile counts of a list of GIs.
fn counts(n: usize, gis: impl Iterator<Item = usize>) -> Vec<u8> {
    let mut c = vec![0u8; n];
    for p in gis {
        c[p] += 1;
    }
    c
}

/// The profile-count vectors of every configuration of `model`.
fn multisets(model: &GpuModel) -> BTreeSet<Vec<u8>> {
    configs::of_model(model)
        .iter()
        .map(|c| counts(model.profiles.len(), c.gis.iter().map(|g| g.0)))
        .collect()
}

/// A model being written: its columns, objective terms, objective constant and rows.
struct Lp {
    cols: Cols,
    obj: Vec<(f64, usize)>,
    offset: f64,
    rows: Vec<Constraint>,
}

impl Lp {
    fn row_leq(&mut self, t: &[(f64, usize)], rhs: f64) {
        let r = constraint::leq(sum(&self.cols, t), rhs);
        self.rows.push(r);
    }

    fn row_eq(&mut self, t: &[(f64, usize)], rhs: f64) {
        let r = constraint::eq(sum(&self.cols, t), rhs);
        self.rows.push(r);
    }
}

/// A VM's patterns: (host position, GPU per GI, column).
type Patterns = Vec<(usize, Vec<usize>, usize)>;

/// Per host position, per GPU, per profile: (count, column) of the patterns putting GIs of the
/// profile on the GPU.
type OnGpu = Vec<Vec<BTreeMap<usize, Terms>>>;

/// Per host position, per GPU: (configuration, column).
type Configs = Vec<Vec<Vec<(&'static Config, usize)>>>;

pub(crate) fn build(inst: &Inst, relax: bool, named: bool) -> Built {
    let mut lp = Lp {
        cols: Cols::new(relax, named),
        obj: Vec::new(),
        offset: 0.0,
        rows: Vec::new(),
    };
    let forced = toolkit::forced_on(inst);
    let phi = host_columns(inst, &forced, &mut lp);
    let mut ms_cache: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
    let mut feasible = |m: &GpuModel, c: &[u8]| -> bool {
        ms_cache
            .entry(m.name.clone())
            .or_insert_with(|| multisets(m))
            .contains(c)
    };
    let (pats, on) = pattern_columns(inst, &mut lp, &mut feasible);
    let cfgs = configuration_columns(inst, &pats, &on, &phi, &mut lp);
    containment_rows(inst, &pats, &cfgs, &mut lp);
    let in_clique = if inst.cliques {
        conflict_cliques(inst, &pats, &phi, &mut feasible, &lp.cols, &mut lp.rows)
    } else {
        vec![vec![false; inst.hosts.len()]; inst.vms.len()]
    };
    let stay = vm_rows(inst, &pats, &cfgs, &phi, &in_clique, &mut lp);
    host_capacity_rows(inst, &pats, &phi, &mut lp);
    let Lp {
        cols,
        obj,
        offset,
        rows,
    } = lp;
    let ncols = cols.len();
    let phi = phi.into_iter().zip(forced).collect();
    finish(
        cols,
        &obj,
        offset,
        rows,
        super::Decode::Patterns(Decode {
            pats,
            cfgs,
            phi,
            stay,
            ncols,
        }),
        inst.w.integral(),
    )
}

/// The phi column of every host position (fixed at 0 or 1 for the fixings of `phi_fix` and
/// `toolkit::forced_on`), each costing b_j.
fn host_columns(inst: &Inst, forced: &[bool], lp: &mut Lp) -> Vec<usize> {
    let fleet = inst.fleet;
    inst.hosts
        .iter()
        .enumerate()
        .map(|(h, &hid)| {
            let c = if inst.phi_fix[h] == Some(false) {
                lp.cols.zero(|| format!("phi[{h}]=0"))
            } else if forced[h] || inst.phi_fix[h] == Some(true) {
                lp.cols.one(|| format!("phi[{h}]=1"))
            } else {
                lp.cols.bin(fleet.hosts[hid].is_active(), || format!("phi[{h}]"))
            };
            lp.obj
                .push((-inst.w.host_of(&fleet.hosts[hid], fleet.catalog), c));
            c
        })
        .collect()
}

/// The A columns of every VM (see the module notes: hosts that can hold it, GPUs of each GI's
/// class whose GIs fit together, canonical order of GIs of one profile, plus its current
/// pattern), each worth a (plus delta_i on its old host: m_i = 1 - sum A[i, old host, .], whose
/// constant goes to the offset). Returns the patterns per VM and the patterns' GIs per GPU and
/// profile.
fn pattern_columns(
    inst: &Inst,
    lp: &mut Lp,
    feasible: &mut impl FnMut(&GpuModel, &[u8]) -> bool,
) -> (Vec<Patterns>, OnGpu) {
    let fleet = inst.fleet;
    let mut pats: Vec<Patterns> = Vec::with_capacity(inst.vms.len());
    let mut on: OnGpu = inst
        .hosts
        .iter()
        .map(|&hid| vec![BTreeMap::new(); fleet.hosts[hid].gpus.len()])
        .collect();
    for (i, vm) in inst.vms.iter().enumerate() {
        let mut list = Vec::new();
        for (h, on_h) in on.iter_mut().enumerate() {
            if toolkit::host_can_hold(inst, i, h) {
                vm_patterns_on_host(inst, i, h, on_h, lp, feasible, &mut list);
            }
        }
        if vm.old.is_some() {
            lp.offset -= vm.delta; // the constant of m_i = 1 - sum A[i, old host, .]
        }
        pats.push(list);
    }
    (pats, on)
}

/// The A columns of VM `i` on host position `h`, added to `list` and to the host's GIs per GPU
/// and profile `on_h`.
fn vm_patterns_on_host(
    inst: &Inst,
    i: usize,
    h: usize,
    on_h: &mut [BTreeMap<usize, Terms>],
    lp: &mut Lp,
    feasible: &mut impl FnMut(&GpuModel, &[u8]) -> bool,
    list: &mut Patterns,
) {
    let vm = &inst.vms[i];
    let old_gpus: Option<(usize, Vec<usize>)> = vm
        .old
        .as_ref()
        .map(|(h, slots)| (*h, slots.iter().map(|s| s.gpu).collect()));
    let gis: Vec<&GiRequest> = vm.gis.iter().collect();
    let Some(cand) = candidate_gpus(inst, h, &gis) else {
        return;
    };
    let mut idx = vec![0usize; vm.gis.len()];
    loop {
        let gpus: Vec<usize> = idx.iter().zip(&cand).map(|(&j, c)| c[j]).collect();
        let is_old = old_gpus.as_ref().is_some_and(|(oh, og)| *oh == h && *og == gpus);
        // Canonical order among GIs of one profile (see the module notes).
        let canonical = (0..gpus.len()).all(|a| {
            (a + 1..gpus.len()).all(|b| vm.gis[a].profile != vm.gis[b].profile || gpus[a] <= gpus[b])
        });
        if (canonical || is_old) && gis_fit(inst, h, &gis, &gpus, feasible) {
            let col = lp.cols.bin(is_old, || format!("A[vm{}][{h}]{gpus:?}", vm.id));
            let mut coef = inst.w.admit;
            if vm.old.as_ref().is_some_and(|(oh, _)| *oh == h) {
                coef += vm.delta; // m_i = 1 - sum A[i, old host, .]
            }
            lp.obj.push((coef, col));
            for (g, &k) in vm.gis.iter().zip(&gpus) {
                let e = on_h[k].entry(g.profile).or_default();
                match e.iter_mut().find(|t| t.1 == col) {
                    Some(t) => t.0 += 1.0,
                    None => e.push((1.0, col)),
                }
            }
            list.push((h, gpus, col));
        }
        if !toolkit::next_combination(&mut idx, &cand) {
            break;
        }
    }
}

/// The L columns of every GPU, each worth w_p CF(c) - e, with its rows: one configuration per
/// GPU on a host that is on, and the counting rows.
fn configuration_columns(inst: &Inst, pats: &[Patterns], on: &OnGpu, phi: &[usize], lp: &mut Lp) -> Configs {
    let fleet = inst.fleet;
    let mut cfgs: Configs = Vec::with_capacity(inst.hosts.len());
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &fleet.hosts[hid];
        let mut per_gpu = Vec::with_capacity(host.gpus.len());
        for (k, on_k) in on[h].iter().enumerate() {
            let list = gpu_configuration_columns(inst, pats, h, k, lp);
            // One configuration per GPU, on a host that is on.
            if !list.is_empty() {
                let mut t: Vec<(f64, usize)> = list.iter().map(|e| (1.0, e.1)).collect();
                t.push((-1.0, phi[h]));
                lp.row_leq(&t, 0.0);
            }
            counting_rows(on_k, &list, lp);
            per_gpu.push(list);
        }
        cfgs.push(per_gpu);
    }
    cfgs
}

/// The L columns of GPU `k` of host position `h`: its configurations, non-empty, within what
/// the patterns can put there, none dominated within equal counts.
fn gpu_configuration_columns(
    inst: &Inst,
    pats: &[Patterns],
    h: usize,
    k: usize,
    lp: &mut Lp,
) -> Vec<(&'static Config, usize)> {
    let gpu = &inst.fleet.hosts[inst.hosts[h]].gpus[k];
    let m = inst.fleet.catalog.model(gpu.model);
    let np = m.profiles.len();
    let avail = available_gis(inst, pats, h, k, np);
    let mut current: Vec<(usize, u8)> = gpu.gis.iter().map(|g| (g.profile, g.start)).collect();
    current.sort_by_key(|g| g.1);
    let old: BTreeSet<(usize, u8)> = current.iter().copied().collect();
    // Candidates: non-empty, within availability, none dominated within equal counts.
    let mut cand: Vec<configs::Candidate<Vec<u8>>> = Vec::new();
    for c in configs::of_model(m) {
        if c.gis.is_empty() {
            continue;
        }
        let cnt = counts(np, c.gis.iter().map(|g| g.0));
        if cnt.iter().zip(&avail).any(|(&n, &a)| n as u32 > a) {
            continue;
        }
        let kept: Vec<(usize, u8)> = c.gis.iter().copied().filter(|g| old.contains(g)).collect();
        cand.push((c, cnt, kept));
    }
    let mut list = Vec::new();
    for (c, _, _) in configs::undominated(cand) {
        let is_current = c.gis == current;
        let col = lp.cols.bin(is_current, || format!("L[{h}.{k}]{:?}", c.gis));
        lp.obj.push((inst.w.free_start * c.cf as f64 - inst.w.gpu, col));
        list.push((c, col));
    }
    list
}

/// Most GIs of each profile the patterns can put on GPU `k` of host position `h`: per VM the
/// most of its patterns there, summed over the VMs.
fn available_gis(inst: &Inst, pats: &[Patterns], h: usize, k: usize, np: usize) -> Vec<u32> {
    let mut avail = vec![0u32; np];
    for (i, list) in pats.iter().enumerate() {
        let mut best = vec![0u32; np];
        for (_, gpus, _) in list.iter().filter(|t| t.0 == h) {
            let mut c = vec![0u32; np];
            for (g, &gk) in inst.vms[i].gis.iter().zip(gpus) {
                if gk == k {
                    c[g.profile] += 1;
                }
            }
            for p in 0..np {
                best[p] = best[p].max(c[p]);
            }
        }
        for p in 0..np {
            avail[p] += best[p];
        }
    }
    avail
}

/// Counting rows of one GPU: per profile, the GIs the patterns put there (`on_k`) equal the
/// GIs of that profile in its configuration (`list`).
fn counting_rows(on_k: &BTreeMap<usize, Terms>, list: &[(&'static Config, usize)], lp: &mut Lp) {
    let mut profiles: BTreeSet<usize> = on_k.keys().copied().collect();
    for (c, _) in list {
        profiles.extend(c.gis.iter().map(|g| g.0));
    }
    for p in profiles {
        let mut t: Vec<(f64, usize)> = on_k.get(&p).cloned().unwrap_or_default();
        for (c, col) in list {
            let n = c.gis.iter().filter(|g| g.0 == p).count();
            if n > 0 {
                t.push((-(n as f64), *col));
            }
        }
        lp.row_eq(&t, 0.0);
    }
}

/// Containment rows. A VM whose pattern puts the GIs M on GPU k needs a configuration of k that
/// contains M: sum of its patterns with M on k <= sum of L over configurations containing M.
/// Valid (a VM takes one pattern, a GPU one configuration) and not implied by the counting rows,
/// which let two halves of one VM's GIs sit in two different half-configurations. Rows for
/// single GIs are implied often enough to cost more than they give; only multisets of two or
/// more GIs get one.
fn containment_rows(inst: &Inst, pats: &[Patterns], cfgs: &Configs, lp: &mut Lp) {
    let fleet = inst.fleet;
    let cat = fleet.catalog;
    let min_m = 2;
    for (i, vm) in inst.vms.iter().enumerate() {
        if vm.gis.len() < min_m {
            continue;
        }
        let mut groups: BTreeMap<(usize, usize, Vec<u8>), Terms> = BTreeMap::new();
        for (h, gpus, col) in &pats[i] {
            for k in gpus.iter().copied().collect::<BTreeSet<usize>>() {
                let np = cat
                    .model(fleet.hosts[inst.hosts[*h]].gpus[k].model)
                    .profiles
                    .len();
                let m = counts(
                    np,
                    vm.gis
                        .iter()
                        .zip(gpus)
                        .filter(|(_, &gk)| gk == k)
                        .map(|(g, _)| g.profile),
                );
                if m.iter().map(|&n| n as usize).sum::<usize>() >= min_m {
                    groups.entry((*h, k, m)).or_default().push((1.0, *col));
                }
            }
        }
        for ((h, k, m), mut t) in groups {
            for (c, col) in &cfgs[h][k] {
                let cc = counts(m.len(), c.gis.iter().map(|g| g.0));
                if cc.iter().zip(&m).all(|(a, b)| a >= b) {
                    t.push((-1.0, *col));
                }
            }
            lp.row_leq(&t, 0.0);
        }
    }
}

/// The rows of each VM: Eq. (8), Eq. (12) (where no clique row holds the VM on the host), and
/// for a running VM with GIs its s column with omega_i = 1 - s_i. Returns the s column per VM.
fn vm_rows(
    inst: &Inst,
    pats: &[Patterns],
    cfgs: &Configs,
    phi: &[usize],
    in_clique: &[Vec<bool>],
    lp: &mut Lp,
) -> Vec<Option<usize>> {
    let mut stay: Vec<Option<usize>> = vec![None; inst.vms.len()];
    for (i, vm) in inst.vms.iter().enumerate() {
        let all: Vec<(f64, usize)> = pats[i].iter().map(|t| (1.0, t.2)).collect();
        // Eq. (8).
        if vm.old.is_some() {
            lp.row_eq(&all, 1.0);
        } else if !all.is_empty() {
            lp.row_leq(&all, 1.0);
        }
        // Eq. (12): x_ij <= phi_j.
        for (h, &ph) in phi.iter().enumerate() {
            let mut t: Vec<(f64, usize)> = pats[i].iter().filter(|p| p.0 == h).map(|p| (1.0, p.2)).collect();
            // A clique row holding VM i on host j implies this one.
            if t.is_empty() || in_clique[i][h] {
                continue;
            }
            t.push((-1.0, ph));
            lp.row_leq(&t, 0.0);
        }
        if let Some((oh, slots)) = &vm.old {
            if !vm.gis.is_empty() {
                stay[i] = Some(stay_column(inst, i, (*oh, slots), &pats[i], cfgs, lp));
            }
        }
    }
    stay
}

/// omega_i = 1 - s_i for running VM `i` with GIs, on host position `oh` at `slots` now: the s column (worth delta_i, the constant to
/// the offset), at most its current pattern and, per GI, at most the configurations of its old
/// GPU that contain its old (profile, start).
fn stay_column(
    inst: &Inst,
    i: usize,
    (oh, slots): (usize, &[GiSlot]),
    pats: &Patterns,
    cfgs: &Configs,
    lp: &mut Lp,
) -> usize {
    let vm = &inst.vms[i];
    lp.offset -= vm.delta;
    let s = lp.cols.bin(true, || format!("s[vm{}]", vm.id));
    lp.obj.push((vm.delta, s));
    let old_gpus: Vec<usize> = slots.iter().map(|s| s.gpu).collect();
    let a_old = pats
        .iter()
        .find(|p| p.0 == oh && p.1 == old_gpus)
        .map(|p| p.2)
        .expect("the current pattern exists");
    lp.row_leq(&[(1.0, s), (-1.0, a_old)], 0.0);
    for (g, sl) in vm.gis.iter().zip(slots) {
        let mut t: Vec<(f64, usize)> = cfgs[oh][sl.gpu]
            .iter()
            .filter(|(c, _)| c.gis.contains(&(g.profile, sl.start)))
            .map(|(_, col)| (-1.0, *col))
            .collect();
        t.push((1.0, s));
        lp.row_leq(&t, 0.0);
    }
    s
}

/// Eq. (6)-(7) times phi_j: the cores and RAM of the VMs a host holds, within the host's when
/// it is on.
fn host_capacity_rows(inst: &Inst, pats: &[Patterns], phi: &[usize], lp: &mut Lp) {
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &inst.fleet.hosts[hid];
        let mut cores: Vec<(f64, usize)> = Vec::new();
        let mut ram: Vec<(f64, usize)> = Vec::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            for p in pats[i].iter().filter(|p| p.0 == h) {
                cores.push((vm.cores as f64, p.2));
                ram.push((vm.ram as f64, p.2));
            }
        }
        cores.push((-(host.cores as f64), phi[h]));
        ram.push((-(host.ram_gb as f64), phi[h]));
        lp.row_leq(&cores, 0.0);
        lp.row_leq(&ram, 0.0);
    }
}

/// The GPUs of host position `h` each GI may go to (its class, Eq. 4); `None` when some GI
/// has none.
fn candidate_gpus(inst: &Inst, h: usize, gis: &[&GiRequest]) -> Option<Vec<Vec<usize>>> {
    let cat = inst.fleet.catalog;
    let host = &inst.fleet.hosts[inst.hosts[h]];
    let cand: Vec<Vec<usize>> = gis
        .iter()
        .map(|g| {
            (0..host.gpus.len())
                .filter(|&k| cat.same_class(g.model, host.gpus[k].model))
                .collect()
        })
        .collect();
    cand.iter().all(|c| !c.is_empty()).then_some(cand)
}

/// Whether the GIs, on the GPUs `gpus` of host position `h` (one per GI), fit together: the
/// profile counts on each GPU are those of some configuration.
fn gis_fit(
    inst: &Inst,
    h: usize,
    gis: &[&GiRequest],
    gpus: &[usize],
    feasible: &mut impl FnMut(&GpuModel, &[u8]) -> bool,
) -> bool {
    let cat = inst.fleet.catalog;
    let host = &inst.fleet.hosts[inst.hosts[h]];
    (0..host.gpus.len()).all(|k| {
        let m = cat.model(host.gpus[k].model);
        let c = counts(
            m.profiles.len(),
            gis.iter()
                .zip(gpus)
                .filter(|(_, &gk)| gk == k)
                .map(|(g, _)| g.profile),
        );
        c.iter().all(|&n| n == 0) || feasible(m, &c)
    })
}

/// Whether VMs `a` and `b` fit together on an otherwise empty host position `h`: cores, RAM,
/// and some assignment of their GIs to GPUs of the right class whose profile counts on each GPU
/// are those of a configuration (the test the patterns use for one VM).
fn pair_fits(
    inst: &Inst,
    a: usize,
    b: usize,
    h: usize,
    feasible: &mut impl FnMut(&GpuModel, &[u8]) -> bool,
) -> bool {
    let host = &inst.fleet.hosts[inst.hosts[h]];
    let (va, vb) = (&inst.vms[a], &inst.vms[b]);
    if va.cores + vb.cores > host.cores || va.ram + vb.ram > host.ram_gb {
        return false;
    }
    let gis: Vec<&GiRequest> = va.gis.iter().chain(&vb.gis).collect();
    let Some(cand) = candidate_gpus(inst, h, &gis) else {
        return false;
    };
    let mut idx = vec![0usize; gis.len()];
    loop {
        let gpus: Vec<usize> = idx.iter().zip(&cand).map(|(&j, c)| c[j]).collect();
        if gis_fit(inst, h, &gis, &gpus, feasible) {
            return true;
        }
        if !toolkit::next_combination(&mut idx, &cand) {
            return false;
        }
    }
}

/// Conflict cliques: VMs of which no two fit together on a host can have at most one of them
/// there, so sum over such a set C of x_ij <= phi_j. Valid for every placement (a conflict is
/// tested on an empty host, so it holds whatever else the host holds). The LP relaxation lacks
/// them: it rotates fractions of big VMs around hosts (host 9 holding 1.75 VMs each needing a
/// whole GPU and a slice of the other) and so keeps hosts half on. Cliques are found greedily
/// per kind of host (cores, RAM, GPU models), covering each conflicting pair at least once.
fn conflict_cliques(
    inst: &Inst,
    pats: &[Vec<(usize, Vec<usize>, usize)>],
    phi: &[usize],
    feasible: &mut impl FnMut(&GpuModel, &[u8]) -> bool,
    cols: &Cols,
    rows: &mut Vec<Constraint>,
) -> Vec<Vec<bool>> {
    let fleet = inst.fleet;
    let n = inst.vms.len();
    let mut in_clique = vec![vec![false; inst.hosts.len()]; n];
    let mut by_kind: BTreeMap<(u32, u32, Vec<usize>), Vec<Vec<usize>>> = BTreeMap::new();
    for h in 0..inst.hosts.len() {
        let host = &fleet.hosts[inst.hosts[h]];
        let kind = (
            host.cores,
            host.ram_gb,
            host.gpus.iter().map(|g| g.model).collect::<Vec<_>>(),
        );
        // Only on hosts whose GPUs all have 8 memory slices or more (A100, H100). On GPUs of 4
        // slices (A30-24GB), where most pairs of VMs conflict, the rows tighten the root LP too
        // but make the calls slower on the solver bench; on 8-slice GPUs they make them faster
        // (`docs/optimizer.md`).
        if host
            .gpus
            .iter()
            .any(|g| fleet.catalog.model(g.model).memory_slices < 8)
        {
            continue;
        }
        let cliques = by_kind.entry(kind).or_insert_with(|| {
            let on: Vec<usize> = (0..n).filter(|&i| pats[i].iter().any(|p| p.0 == h)).collect();
            let mut conflict = vec![vec![false; n]; n];
            for (x, &a) in on.iter().enumerate() {
                for &b in &on[x + 1..] {
                    let c = !pair_fits(inst, a, b, h, feasible);
                    conflict[a][b] = c;
                    conflict[b][a] = c;
                }
            }
            let degree = |i: usize| conflict[i].iter().filter(|&&c| c).count();
            let mut order = on.clone();
            order.sort_by_key(|&i| std::cmp::Reverse(degree(i)));
            let mut covered = vec![vec![false; n]; n];
            let mut out = Vec::new();
            for &a in &order {
                for &b in &order {
                    if !conflict[a][b] || covered[a][b] {
                        continue;
                    }
                    let mut clique = vec![a, b];
                    for &c in &order {
                        if !clique.contains(&c) && clique.iter().all(|&m| conflict[m][c]) {
                            clique.push(c);
                        }
                    }
                    for &x in &clique {
                        for &y in &clique {
                            covered[x][y] = true;
                        }
                    }
                    clique.sort_unstable();
                    out.push(clique);
                }
            }
            out.sort();
            out.dedup();
            out
        });
        for clique in cliques.iter() {
            let mut t: Terms = clique
                .iter()
                .flat_map(|&i| pats[i].iter().filter(|p| p.0 == h).map(|p| (1.0, p.2)))
                .collect();
            t.push((-1.0, phi[h]));
            rows.push(constraint::leq(sum(cols, &t), 0.0));
            for &i in clique {
                in_clique[i][h] = true;
            }
        }
    }
    in_clique
}

impl Decode {
    /// A complete start vector for the placement `targets` (every running VM of the neighborhood
    /// and the admitted pending ones), or `None` when the model cannot express it exactly (a
    /// GPU arrangement whose configuration was dropped as dominated keeps its counts through
    /// the best remaining one).
    pub(crate) fn start_from(&self, inst: &Inst, targets: &BTreeMap<VmId, Placement>) -> Option<Vec<f64>> {
        let mut v = vec![0.0; self.ncols];
        for &(c, fixed) in &self.phi {
            if fixed {
                v[c] = 1.0;
            }
        }
        let pos: BTreeMap<usize, usize> = inst.hosts.iter().enumerate().map(|(i, &h)| (h, i)).collect();
        // GIs per GPU in the target, and which of them keep their current slot.
        type Kept = Vec<((usize, u8), bool)>;
        let mut on: BTreeMap<(usize, usize), Kept> = BTreeMap::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            let Some(t) = targets.get(&vm.id) else {
                if vm.old.is_some() {
                    return None;
                }
                continue;
            };
            let h = *pos.get(&t.host)?;
            let gpus: Vec<usize> = t.gis.iter().map(|s| s.gpu).collect();
            let mut col = self.pats[i].iter().find(|p| p.0 == h && p.1 == gpus).map(|p| p.2);
            if col.is_none() {
                // A non-canonical order of GIs with one profile: the canonical pattern has the
                // same counts.
                let mut canon = gpus.clone();
                for a in 0..canon.len() {
                    for b in a + 1..canon.len() {
                        if vm.gis[a].profile == vm.gis[b].profile && canon[a] > canon[b] {
                            canon.swap(a, b);
                        }
                    }
                }
                col = self.pats[i]
                    .iter()
                    .find(|p| p.0 == h && p.1 == canon)
                    .map(|p| p.2);
            }
            v[col?] = 1.0;
            v[self.phi[h].0] = 1.0;
            for (g, s) in vm.gis.iter().zip(&t.gis) {
                let kept = vm.old.as_ref().is_some_and(|(oh, old)| {
                    *oh == h
                        && old
                            .iter()
                            .zip(&vm.gis)
                            .any(|(o, og)| o == s && og.profile == g.profile)
                });
                on.entry((h, s.gpu))
                    .or_default()
                    .push(((g.profile, s.start), kept));
            }
        }
        let mut chosen: BTreeMap<(usize, usize), &'static Config> = BTreeMap::new();
        for ((h, k), gis) in &on {
            let mut want: Vec<(usize, u8)> = gis.iter().map(|g| g.0).collect();
            want.sort_by_key(|g| (g.1, g.0));
            let list = &self.cfgs[*h][*k];
            let exact = list.iter().find(|(c, _)| {
                let mut cg = c.gis.clone();
                cg.sort_by_key(|g| (g.1, g.0));
                cg == want
            });
            let pick = exact.or_else(|| {
                let fleet = inst.fleet;
                let np = fleet
                    .catalog
                    .model(fleet.hosts[inst.hosts[*h]].gpus[*k].model)
                    .profiles
                    .len();
                let cnt = counts(np, want.iter().map(|g| g.0));
                list.iter()
                    .filter(|(c, _)| {
                        counts(np, c.gis.iter().map(|g| g.0)) == cnt
                            && gis.iter().filter(|g| g.1).all(|g| c.gis.contains(&g.0))
                    })
                    .max_by_key(|(c, _)| c.cf)
            })?;
            v[pick.1] = 1.0;
            chosen.insert((*h, *k), pick.0);
        }
        for (i, vm) in inst.vms.iter().enumerate() {
            let (Some(sc), Some((oh, old)), Some(t)) = (self.stay[i], &vm.old, targets.get(&vm.id)) else {
                continue;
            };
            let same = t.host == inst.hosts[*oh] && t.gis == *old;
            let present = vm.gis.iter().zip(old).all(|(g, s)| {
                chosen
                    .get(&(*oh, s.gpu))
                    .is_some_and(|c| c.gis.contains(&(g.profile, s.start)))
            });
            if same && present {
                v[sc] = 1.0;
            }
        }
        Some(v)
    }

    pub(crate) fn targets(&self, inst: &Inst, colv: &[f64]) -> anyhow::Result<BTreeMap<VmId, Placement>> {
        // Chosen configuration slots per GPU.
        let mut free: Vec<Vec<Vec<(usize, u8)>>> = self
            .cfgs
            .iter()
            .map(|gpus| {
                gpus.iter()
                    .map(|list| {
                        list.iter()
                            .filter(|(_, col)| colv[*col] > 0.5)
                            .flat_map(|(c, _)| c.gis.iter().copied())
                            .collect()
                    })
                    .collect()
            })
            .collect();
        // Chosen pattern per VM.
        let mut chosen: Vec<Option<(usize, &Vec<usize>)>> = Vec::with_capacity(inst.vms.len());
        for (i, vm) in inst.vms.iter().enumerate() {
            let on: Vec<_> = self.pats[i].iter().filter(|p| colv[p.2] > 0.5).collect();
            match on.as_slice() {
                [] if vm.old.is_none() => chosen.push(None),
                [p] => chosen.push(Some((p.0, &p.1))),
                _ => anyhow::bail!("solver gave VM {} {} placements", vm.id, on.len()),
            }
        }
        let mut slots: Vec<Vec<Option<GiSlot>>> = inst.vms.iter().map(|v| vec![None; v.gis.len()]).collect();
        // GIs that can keep their slot keep it.
        for (i, vm) in inst.vms.iter().enumerate() {
            let (Some((h, gpus)), Some((oh, old))) = (chosen[i], &vm.old) else {
                continue;
            };
            if h != *oh {
                continue;
            }
            for (v, g) in vm.gis.iter().enumerate() {
                let s = old[v];
                if gpus[v] != s.gpu {
                    continue;
                }
                let f = &mut free[h][s.gpu];
                if let Some(pos) = f.iter().position(|&e| e == (g.profile, s.start)) {
                    f.remove(pos);
                    slots[i][v] = Some(s);
                }
            }
        }
        // The others take the lowest free slot of their profile.
        for (i, vm) in inst.vms.iter().enumerate() {
            let Some((h, gpus)) = chosen[i] else { continue };
            for (v, g) in vm.gis.iter().enumerate() {
                if slots[i][v].is_some() {
                    continue;
                }
                let k = gpus[v];
                let f = &mut free[h][k];
                let pos = f
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.0 == g.profile)
                    .min_by_key(|(_, e)| e.1)
                    .map(|(p, _)| p)
                    .ok_or_else(|| {
                        anyhow::anyhow!("no {} slot left for VM {} on GPU {k}", g.profile, vm.id)
                    })?;
                let (_, z) = f.remove(pos);
                slots[i][v] = Some(GiSlot { gpu: k, start: z });
            }
        }
        let mut out = BTreeMap::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            let Some((h, _)) = chosen[i] else { continue };
            let gis: Vec<GiSlot> = slots[i].iter().map(|s| s.expect("every GI has a slot")).collect();
            out.insert(
                vm.id,
                Placement {
                    host: inst.hosts[h],
                    gis,
                },
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
