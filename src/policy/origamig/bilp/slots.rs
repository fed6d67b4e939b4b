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
use good_lp::{constraint, Constraint};
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

/// Builds the model of `inst` in formulation `form` (Plain, Tight or Config), optionally as the
/// LP relaxation and with column names (diagnostics).
pub(crate) fn build(inst: &Inst, form: Formulation, relax: bool, named: bool) -> Built {
    let fl = Flags::of(form);
    let fleet = inst.fleet;
    let cat = fleet.catalog;
    let w = &inst.w;
    let nh = inst.hosts.len();
    let nv = inst.vms.len();
    let mut cols = Cols::new(relax, named);
    let mut obj: Vec<(f64, usize)> = Vec::new();
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
        obj.push((-w.host_of(&fleet.hosts[hid], fleet.catalog), c));
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
                gpu_configs(&mut cols, &mut obj, &mut rows, inst, model, gpu, &here, phi[h]);
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

    finish(cols, &obj, 0.0, rows, Decode::Slots { x, y }, w.integral())
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
