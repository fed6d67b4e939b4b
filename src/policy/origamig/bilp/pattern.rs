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

pub(crate) fn build(inst: &Inst, relax: bool, named: bool) -> Built {
    let fleet = inst.fleet;
    let cat = fleet.catalog;
    let w = &inst.w;
    let nh = inst.hosts.len();
    let mut cols = Cols::new(relax, named);
    let mut obj: Vec<(f64, usize)> = Vec::new();
    let mut offset = 0.0;
    let mut rows: Vec<Constraint> = Vec::new();

    let forced = toolkit::forced_on(inst);
    let phi: Vec<usize> = inst
        .hosts
        .iter()
        .enumerate()
        .map(|(h, &hid)| {
            let c = if inst.phi_fix[h] == Some(false) {
                cols.zero(|| format!("phi[{h}]=0"))
            } else if forced[h] || inst.phi_fix[h] == Some(true) {
                cols.one(|| format!("phi[{h}]=1"))
            } else {
                cols.bin(fleet.hosts[hid].is_active(), || format!("phi[{h}]"))
            };
            obj.push((-w.host_of(&fleet.hosts[hid], fleet.catalog), c));
            c
        })
        .collect();

    let mut ms_cache: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
    let mut feasible = |m: &GpuModel, c: &[u8]| -> bool {
        ms_cache
            .entry(m.name.clone())
            .or_insert_with(|| multisets(m))
            .contains(c)
    };

    // --- patterns ---------------------------------------------------------------------------
    // pats[i] = (host, gpus, column); on[h][k][p] = (count, column) of patterns putting GIs of
    // profile p on GPU k of host h.
    let mut pats: Vec<Vec<(usize, Vec<usize>, usize)>> = Vec::with_capacity(inst.vms.len());
    let mut on: Vec<Vec<BTreeMap<usize, Terms>>> = inst
        .hosts
        .iter()
        .map(|&hid| vec![BTreeMap::new(); fleet.hosts[hid].gpus.len()])
        .collect();
    for (i, vm) in inst.vms.iter().enumerate() {
        let mut list = Vec::new();
        let old_gpus: Option<(usize, Vec<usize>)> = vm
            .old
            .as_ref()
            .map(|(h, slots)| (*h, slots.iter().map(|s| s.gpu).collect()));
        for (h, on_h) in on.iter_mut().enumerate() {
            if !toolkit::host_can_hold(inst, i, h) {
                continue;
            }
            let gis: Vec<&GiRequest> = vm.gis.iter().collect();
            let Some(cand) = candidate_gpus(inst, h, &gis) else {
                continue;
            };
            let mut idx = vec![0usize; vm.gis.len()];
            loop {
                let gpus: Vec<usize> = idx.iter().zip(&cand).map(|(&j, c)| c[j]).collect();
                let is_old = old_gpus.as_ref().is_some_and(|(oh, og)| *oh == h && *og == gpus);
                // Canonical order among GIs of one profile (see the module notes).
                let canonical = (0..gpus.len()).all(|a| {
                    (a + 1..gpus.len()).all(|b| vm.gis[a].profile != vm.gis[b].profile || gpus[a] <= gpus[b])
                });
                if (canonical || is_old) && gis_fit(inst, h, &gis, &gpus, &mut feasible) {
                    let col = cols.bin(is_old, || format!("A[vm{}][{h}]{gpus:?}", vm.id));
                    let mut coef = w.admit;
                    if vm.old.as_ref().is_some_and(|(oh, _)| *oh == h) {
                        coef += vm.delta; // m_i = 1 - sum A[i, old host, .]
                    }
                    obj.push((coef, col));
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
        if vm.old.is_some() {
            offset -= vm.delta; // the constant of m_i = 1 - sum A[i, old host, .]
        }
        pats.push(list);
    }

    // --- configurations ---------------------------------------------------------------------
    let mut cfgs: Vec<Vec<Vec<(&'static Config, usize)>>> = Vec::with_capacity(nh);
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &fleet.hosts[hid];
        let mut per_gpu = Vec::with_capacity(host.gpus.len());
        for (k, gpu) in host.gpus.iter().enumerate() {
            let m = cat.model(gpu.model);
            let np = m.profiles.len();
            // Most GIs of each profile the patterns can put here.
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
                let col = cols.bin(is_current, || format!("L[{h}.{k}]{:?}", c.gis));
                obj.push((w.free_start * c.cf as f64 - w.gpu, col));
                list.push((c, col));
            }
            // One configuration per GPU, on a host that is on.
            if !list.is_empty() {
                let mut t: Vec<(f64, usize)> = list.iter().map(|e| (1.0, e.1)).collect();
                t.push((-1.0, phi[h]));
                rows.push(constraint::leq(sum(&cols, &t), 0.0));
            }
            // Counting rows.
            let mut profiles: BTreeSet<usize> = on[h][k].keys().copied().collect();
            for (c, _) in &list {
                profiles.extend(c.gis.iter().map(|g| g.0));
            }
            for p in profiles {
                let mut t: Vec<(f64, usize)> = on[h][k].get(&p).cloned().unwrap_or_default();
                for (c, col) in &list {
                    let n = c.gis.iter().filter(|g| g.0 == p).count();
                    if n > 0 {
                        t.push((-(n as f64), *col));
                    }
                }
                rows.push(constraint::eq(sum(&cols, &t), 0.0));
            }
            per_gpu.push(list);
        }
        cfgs.push(per_gpu);
    }

    // --- containment rows -------------------------------------------------------------------
    // A VM whose pattern puts the GIs M on GPU k needs a configuration of k that contains M:
    // sum of its patterns with M on k <= sum of L over configurations containing M. Valid (a VM
    // takes one pattern, a GPU one configuration) and not implied by the counting rows, which
    // let two halves of one VM's GIs sit in two different half-configurations.
    // Rows for single GIs are implied often enough to cost more than they give; only multisets
    // of two or more GIs get one.
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
            rows.push(constraint::leq(sum(&cols, &t), 0.0));
        }
    }

    // --- conflict cliques --------------------------------------------------------------------
    let in_clique = if inst.cliques {
        conflict_cliques(inst, &pats, &phi, &mut feasible, &cols, &mut rows)
    } else {
        vec![vec![false; nh]; inst.vms.len()]
    };

    // --- per VM and per host rows -----------------------------------------------------------
    let mut stay: Vec<Option<usize>> = vec![None; inst.vms.len()];
    for (i, vm) in inst.vms.iter().enumerate() {
        let all: Vec<(f64, usize)> = pats[i].iter().map(|t| (1.0, t.2)).collect();
        // Eq. (8).
        if vm.old.is_some() {
            rows.push(constraint::eq(sum(&cols, &all), 1.0));
        } else if !all.is_empty() {
            rows.push(constraint::leq(sum(&cols, &all), 1.0));
        }
        // Eq. (12): x_ij <= phi_j.
        for (h, &ph) in phi.iter().enumerate() {
            let mut t: Vec<(f64, usize)> = pats[i].iter().filter(|p| p.0 == h).map(|p| (1.0, p.2)).collect();
            // A clique row holding VM i on host j implies this one.
            if t.is_empty() || in_clique[i][h] {
                continue;
            }
            t.push((-1.0, ph));
            rows.push(constraint::leq(sum(&cols, &t), 0.0));
        }
        // omega_i = 1 - s_i.
        if let Some((oh, slots)) = &vm.old {
            if vm.gis.is_empty() {
                continue;
            }
            offset -= vm.delta;
            let s = cols.bin(true, || format!("s[vm{}]", vm.id));
            stay[i] = Some(s);
            obj.push((vm.delta, s));
            let old_gpus: Vec<usize> = slots.iter().map(|s| s.gpu).collect();
            let a_old = pats[i]
                .iter()
                .find(|p| p.0 == *oh && p.1 == old_gpus)
                .map(|p| p.2)
                .expect("the current pattern exists");
            rows.push(constraint::leq(sum(&cols, &[(1.0, s), (-1.0, a_old)]), 0.0));
            for (g, sl) in vm.gis.iter().zip(slots) {
                let mut t: Vec<(f64, usize)> = cfgs[*oh][sl.gpu]
                    .iter()
                    .filter(|(c, _)| c.gis.contains(&(g.profile, sl.start)))
                    .map(|(_, col)| (-1.0, *col))
                    .collect();
                t.push((1.0, s));
                rows.push(constraint::leq(sum(&cols, &t), 0.0));
            }
        }
    }
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &fleet.hosts[hid];
        let mut cores: Vec<(f64, usize)> = Vec::new();
        let mut ram: Vec<(f64, usize)> = Vec::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            for p in pats[i].iter().filter(|p| p.0 == h) {
                cores.push((vm.cores as f64, p.2));
                ram.push((vm.ram as f64, p.2));
            }
        }
        // Eq. (6)-(7) times phi_j.
        cores.push((-(host.cores as f64), phi[h]));
        ram.push((-(host.ram_gb as f64), phi[h]));
        rows.push(constraint::leq(sum(&cols, &cores), 0.0));
        rows.push(constraint::leq(sum(&cols, &ram), 0.0));
    }

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
        w.integral(),
    )
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
