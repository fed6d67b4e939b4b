//! The restricted BILP of §4 (Eq. 4-16) over a neighborhood with the paper's variables (x per VM
//! and host, y per GI, GPU and start), in the formulations [`Formulation::Plain`],
//! [`Formulation::Tight`] and [`Formulation::Config`]. Every formulation has the same optimum
//! value; each reduction is justified where it is applied and compared with
//! [`Formulation::Plain`] by tests.

use super::configs::{self, Config};
use super::toolkit::{finish, forced_on, host_can_hold, sum, Built, Cols};
use super::Decode;
use super::{Formulation, Inst};
use crate::catalog::GpuModel;
use crate::fleet::{GiSlot, Placement, VmId};
use crate::mig;
use good_lp::{constraint, Constraint, Expression};
use std::collections::BTreeMap;

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
            Formulation::Config => Flags { configs: true, ..all },
            Formulation::Tight | Formulation::Pattern | Formulation::Host => all,
        }
    }
}

/// A model being written: its columns, objective terms and rows.
struct Lp {
    cols: Cols,
    obj: Vec<(f64, usize)>,
    rows: Vec<Constraint>,
}

impl Lp {
    fn row(&mut self, t: &[(f64, usize)], cmp: fn(Expression, f64) -> Constraint, rhs: f64) {
        let r = cmp(sum(&self.cols, t), rhs);
        self.rows.push(r);
    }
}

fn leq(e: Expression, rhs: f64) -> Constraint {
    constraint::leq(e, rhs)
}

fn geq(e: Expression, rhs: f64) -> Constraint {
    constraint::geq(e, rhs)
}

fn eq(e: Expression, rhs: f64) -> Constraint {
    constraint::eq(e, rhs)
}

/// x columns per VM and host position (`None`: dropped).
type XMap = Vec<Vec<Option<usize>>>;

/// Builds the model of `inst` in formulation `form` (Plain, Tight or Config), optionally as the
/// LP relaxation and with column names (diagnostics).
pub(crate) fn build(inst: &Inst, form: Formulation, relax: bool, named: bool) -> Built {
    let fl = Flags::of(form);
    let mut lp = Lp {
        cols: Cols::new(relax, named),
        obj: Vec::new(),
        rows: Vec::new(),
    };
    let phi = host_columns(inst, fl, &mut lp);
    let (x, y) = placement_columns(inst, fl, &mut lp);
    migration_columns(inst, fl, &x, &y, &mut lp);
    host_rows(inst, fl, &x, &phi, &mut lp);
    vm_rows(inst, &x, &y, &mut lp);
    for (h, &hid) in inst.hosts.iter().enumerate() {
        for k in 0..inst.fleet.hosts[hid].gpus.len() {
            gpu_rows(inst, fl, (h, k), &y, phi[h], &mut lp);
        }
    }
    let Lp { cols, obj, rows } = lp;
    finish(cols, &obj, 0.0, rows, Decode::Slots { x, y }, inst.w.integral())
}

/// The phi column of every host position (fixed at 1 for the hosts `forced_on` keeps on, in
/// the formulations that fix them), each costing b_j.
fn host_columns(inst: &Inst, fl: Flags, lp: &mut Lp) -> Vec<usize> {
    let fleet = inst.fleet;
    let nh = inst.hosts.len();
    let forced = if fl.fix_on {
        forced_on(inst)
    } else {
        vec![false; nh]
    };
    let mut phi = Vec::with_capacity(nh);
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let active = fleet.hosts[hid].is_active();
        let c = if forced[h] {
            lp.cols.one(|| format!("phi[{h}]=1"))
        } else {
            lp.cols.bin(active, || format!("phi[{h}]"))
        };
        lp.obj
            .push((-inst.w.host_of(&fleet.hosts[hid], fleet.catalog), c));
        phi.push(c);
    }
    phi
}

/// The x columns of every VM (each worth a; with `prune`, only on hosts that can hold it) and
/// the y columns of its GIs.
fn placement_columns(inst: &Inst, fl: Flags, lp: &mut Lp) -> (XMap, YMap) {
    let nv = inst.vms.len();
    let mut x: XMap = vec![vec![None; inst.hosts.len()]; nv];
    let mut y: YMap = Vec::with_capacity(nv);
    for (i, vm) in inst.vms.iter().enumerate() {
        for (h, xh) in x[i].iter_mut().enumerate() {
            if fl.prune && !host_can_hold(inst, i, h) {
                continue;
            }
            let start = vm.old.as_ref().is_some_and(|(oh, _)| *oh == h);
            let c = lp.cols.bin(start, || format!("x[vm{}][{h}]", vm.id));
            lp.obj.push((inst.w.admit, c));
            *xh = Some(c);
        }
        let ys = (0..vm.gis.len())
            .map(|v| gi_columns(inst, i, v, &x[i], lp))
            .collect();
        y.push(ys);
    }
    (x, y)
}

/// The y columns of GI `v` of VM `i`: every GPU of its class on the hosts with an x column, at
/// every permitted start of its profile (Eq. 4).
fn gi_columns(inst: &Inst, i: usize, v: usize, xi: &[Option<usize>], lp: &mut Lp) -> Vec<YCol> {
    let fleet = inst.fleet;
    let cat = fleet.catalog;
    let vm = &inst.vms[i];
    let g = &vm.gis[v];
    let prof = &cat.model(g.model).profiles[g.profile];
    let mut list = Vec::new();
    for (h, xh) in xi.iter().enumerate() {
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
                let c = lp.cols.bin(start, || format!("y[vm{}.{v}][{h}.{k}@{z}]", vm.id));
                list.push(YCol { h, k, z, col: c });
            }
        }
    }
    list
}

/// m and omega of every VM (Eq. 14, 15), each costing delta_i.
fn migration_columns(inst: &Inst, fl: Flags, x: &XMap, y: &YMap, lp: &mut Lp) {
    for (i, vm) in inst.vms.iter().enumerate() {
        let delta = vm.delta;
        let Some((oh, slots)) = vm.old.as_ref() else {
            // A new VM: sum_j x'_ij = 0, so Eq. (14) and (15) read m >= 0 and omega >= 0. With
            // delta_i = 0 the variables do not touch the objective: the reduced formulations drop
            // them.
            if fl.drop_new_mw && delta == 0.0 {
                continue;
            }
            let m = lp.cols.bin(false, || format!("m[vm{}]", vm.id));
            lp.obj.push((-delta, m));
            if !vm.gis.is_empty() || !fl.drop_new_mw {
                let om = lp.cols.bin(false, || format!("w[vm{}]", vm.id));
                lp.obj.push((-delta, om));
            }
            continue;
        };
        let m = lp.cols.bin(false, || format!("m[vm{}]", vm.id));
        lp.obj.push((-delta, m));
        // Eq. (14): m_i >= 1 - x_{i, old host}.
        let xo = x[i][*oh].expect("the old host can hold the VM");
        lp.row(&[(1.0, m), (1.0, xo)], geq, 1.0);
        if vm.gis.is_empty() && fl.drop_new_mw {
            // No GI: Eq. (15) is empty, omega_i = 0 at the optimum; dropped.
            continue;
        }
        let om = lp.cols.bin(false, || format!("w[vm{}]", vm.id));
        lp.obj.push((-delta, om));
        for (v, s) in slots.iter().enumerate() {
            // Eq. (15), per GI: omega_i >= 1 - y at the GI's old host, GPU and start.
            let old = y[i][v]
                .iter()
                .find(|e| e.h == *oh && e.k == s.gpu && e.z == s.start)
                .map(|e| e.col)
                .expect("the old slot is a permitted start");
            lp.row(&[(1.0, om), (1.0, old)], geq, 1.0);
        }
    }
}

/// Per host: Eq. (12) for each VM it may hold, and Eq. (6)-(7) (times phi_j with
/// `cap_times_phi`).
fn host_rows(inst: &Inst, fl: Flags, x: &XMap, phi: &[usize], lp: &mut Lp) {
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &inst.fleet.hosts[hid];
        let mut cores: Vec<(f64, usize)> = Vec::new();
        let mut ram: Vec<(f64, usize)> = Vec::new();
        for (i, vm) in inst.vms.iter().enumerate() {
            if let Some(c) = x[i][h] {
                cores.push((vm.cores as f64, c));
                ram.push((vm.ram as f64, c));
                // Eq. (12): x_ij <= phi_j.
                lp.row(&[(1.0, c), (-1.0, phi[h])], leq, 0.0);
            }
        }
        if fl.cap_times_phi {
            // Eq. (6)-(7) times phi_j: sum c_i x_ij <= C_j phi_j. Equal to Eq. (6)-(7) at
            // phi_j = 1, and implied by Eq. (12) at phi_j = 0; tighter in the LP relaxation.
            cores.push((-(host.cores as f64), phi[h]));
            ram.push((-(host.ram_gb as f64), phi[h]));
            lp.row(&cores, leq, 0.0);
            lp.row(&ram, leq, 0.0);
        } else {
            lp.row(&cores, leq, host.cores as f64);
            lp.row(&ram, leq, host.ram_gb as f64);
        }
    }
}

/// Per VM: Eq. (8) and Eq. (9).
fn vm_rows(inst: &Inst, x: &XMap, y: &YMap, lp: &mut Lp) {
    for (i, vm) in inst.vms.iter().enumerate() {
        let xs: Vec<(f64, usize)> = x[i].iter().flatten().map(|&c| (1.0, c)).collect();
        // Eq. (8): a running VM stays placed, a new one may be rejected.
        if vm.old.is_some() {
            lp.row(&xs, eq, 1.0);
        } else if !xs.is_empty() {
            lp.row(&xs, leq, 1.0);
        }
        // Eq. (9): each GI on the VM's host, once.
        for ys in &y[i] {
            for (h, xh) in x[i].iter().enumerate() {
                let Some(xc) = *xh else { continue };
                let mut t: Vec<(f64, usize)> = ys.iter().filter(|e| e.h == h).map(|e| (1.0, e.col)).collect();
                t.push((-1.0, xc));
                lp.row(&t, eq, 0.0);
            }
        }
    }
}

/// GPU `k` of host position `h`: its slices, gamma and f (Eq. 10, 11, 13), or its
/// configurations (`configs`), and the per-profile instance limits.
fn gpu_rows(inst: &Inst, fl: Flags, (h, k): (usize, usize), y: &YMap, phi_h: usize, lp: &mut Lp) {
    let gpu = &inst.fleet.hosts[inst.hosts[h]].gpus[k];
    let model = inst.fleet.catalog.model(gpu.model);
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
    if fl.configs {
        gpu_configs(
            &mut lp.cols,
            &mut lp.obj,
            &mut lp.rows,
            inst,
            model,
            gpu,
            &here,
            phi_h,
        );
        return;
    }
    let active_now = !gpu.occ.is_empty();
    let gamma = lp.cols.bin(active_now, || format!("gamma[{h}.{k}]"));
    lp.obj.push((-inst.w.gpu, gamma));
    if fl.gamma_le_phi {
        // gamma_jk <= phi_j: a GPU holds a GI only on a host that runs its VM (Eq. 9, 12);
        // valid and tighter in the LP.
        lp.row(&[(1.0, gamma), (-1.0, phi_h)], leq, 0.0);
    }
    // Eq. (13): gamma_jk <= sum of y on the GPU.
    let mut t: Vec<(f64, usize)> = here.iter().map(|e| (1.0, e.2)).collect();
    t.push((-1.0, gamma));
    lp.row(&t, geq, 0.0);
    // o_jku: the GIs covering slice u.
    let cover: Vec<Vec<(f64, usize)>> = (0..model.memory_slices)
        .map(|u| {
            here.iter()
                .filter(|&&(p, z, _)| model.profiles[p].mask_at(z) & (1 << u) != 0)
                .map(|e| (1.0, e.2))
                .collect()
        })
        .collect();
    let in_window = free_start_columns(inst, fl, (h, k), gamma, &cover, lp);
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
        lp.row(&t, leq, 0.0);
    }
    instance_limits(&lp.cols, &mut lp.rows, model, &here);
}

/// The f columns of GPU `k` of host position `h` over the CF profiles of its class (each worth
/// w_p) with Eq. (11) (merged with Eq. 10 under `merged_rows`); returns which slices a window of
/// an f column covers.
fn free_start_columns(
    inst: &Inst,
    fl: Flags,
    (h, k): (usize, usize),
    gamma: usize,
    cover: &[Vec<(f64, usize)>],
    lp: &mut Lp,
) -> Vec<bool> {
    let gpu = &inst.fleet.hosts[inst.hosts[h]].gpus[k];
    let model = inst.fleet.catalog.model(gpu.model);
    let active_now = !gpu.occ.is_empty();
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
            let f = lp
                .cols
                .bin(free_now.contains(&z), || format!("f[{h}.{k}][{}@{z}]", prof.name));
            lp.obj.push((inst.w.free_start, f));
            for u in z..z + prof.size {
                in_window[u as usize] = true;
                let mut t = cover[u as usize].clone();
                t.push((1.0, f));
                if fl.merged_rows {
                    // f + o_u <= gamma: equal to Eq. (11) and (10) at gamma = 1; at
                    // gamma = 0 both sides are 0 as in (10) and f <= gamma.
                    t.push((-1.0, gamma));
                    lp.row(&t, leq, 0.0);
                } else {
                    lp.row(&t, leq, 1.0);
                }
            }
            if !fl.merged_rows {
                lp.row(&[(1.0, f), (-1.0, gamma)], leq, 0.0);
            }
        }
    }
    in_window
}

/// Reads the placement out of x and y.
pub(crate) fn extract_slots(
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

/// Per-profile instance limits of the catalog (e.g. one +me GI per GPU). Not in the paper's model,
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
    inst: &Inst,
    model: &GpuModel,
    gpu: &crate::fleet::Gpu,
    here: &[(usize, u8, usize)],
    phi: usize,
) {
    let w = &inst.w;
    // How many GIs of each profile could land here: configurations with more are useless.
    let mut avail = vec![0u8; model.profiles.len()];
    let seen: std::collections::BTreeSet<usize> = here.iter().map(|e| e.0).collect();
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
