//! Unit tests of `policy::origamig::bilp::precheck`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{Fleet, GiRequest, Host, Vm};

fn vm(profiles: &[&str]) -> Vm {
    let gis = GiRequest::named(embedded(), "a100-40gb", profiles).unwrap();
    Vm::job(0, gis, 8, 32)
}

fn fleet(hosts: usize, vms: &[&[&str]]) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    );
    for p in vms {
        let v = vm(p);
        let pl = f.ff_placement(&v).unwrap();
        f.add_placed(v, pl).unwrap();
    }
    f
}

#[test]
fn the_occupancies_are_every_valid_layout_once() {
    let c = embedded();
    let model = c.model(c.model_id("a100-40gb").unwrap());
    let first: Vec<Option<usize>> = {
        let mut n = 0;
        model
            .profiles
            .iter()
            .map(|p| {
                let f = Some(n);
                n += p.starts.len();
                f
            })
            .collect()
    };
    let profile: Vec<usize> = (0..model.profiles.len())
        .flat_map(|p| std::iter::repeat_n(p, model.profiles[p].starts.len()))
        .collect();
    let pairs = Pairs { first, profile };
    let occ = enumerate(model, &pairs, &Weights::default()).unwrap();
    let mut seen = std::collections::HashSet::new();
    assert!(
        occ.bits.iter().all(|b| seen.insert(*b)),
        "an occupancy listed twice"
    );
    assert_eq!(occ.bits[0], 0);
    assert_eq!(occ.base[0], 0.0);
    // Every single GI is a layout of its own, and a full 7g GPU is one.
    let singles: usize = model.profiles.iter().map(|p| p.starts.len()).sum();
    assert_eq!(occ.bits.iter().filter(|b| b.count_ones() == 1).count(), singles);
    assert!(occ.bits.len() > singles + 1);
}

#[test]
fn a_host_that_can_be_emptied_into_free_room_is_not_proven() {
    // Two hosts, one small VM each: moving one VM next to the other switches a host and a GPU
    // off (b = 50, e = 20, minus the 14 free starts of its GPU) for 2 delta = 30 (no job
    // surcharge): a better plan exists. With the job surcharge (delta = 30) it does not pay.
    let mut f = fleet(2, &[&["1g.5gb"]]);
    let pl = crate::fleet::Placement {
        host: 1,
        gis: vec![crate::fleet::GiSlot { gpu: 0, start: 6 }],
    };
    f.add_placed(vm(&["1g.5gb"]), pl).unwrap();
    let w = Weights {
        delta_job_extra: 0.0,
        ..Weights::default()
    };
    assert!(!no_improving_plan(&f, &[0, 1], &w));
    assert_eq!(
        Weights::default().delta_of(f.vm(f.hosts[1].vms[0]).unwrap(), f.catalog),
        30.0
    );
    assert!(no_improving_plan(&f, &[0, 1], &Weights::default()));
}

#[test]
fn a_full_packing_is_proven() {
    // Every GPU holds a 7g GI: no move can switch anything off or free a start.
    let f = fleet(2, &[&["7g.40gb"], &["7g.40gb"], &["7g.40gb"], &["7g.40gb"]]);
    assert!(no_improving_plan(&f, &[0, 1], &Weights::default()));
}

/// A random tiny fleet of MIG GPUs (A100-40GB and A30-24GB hosts of one or two GPUs), VMs of
/// one or two GIs placed by FF, some removed again so that the GPUs are fragmented.
fn random_fleet(rng: &mut rand::rngs::StdRng) -> Fleet {
    use rand::Rng;
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let a30 = c.model_id("a30-24gb").unwrap();
    let nh = rng.gen_range(2..=3);
    let hosts = (0..nh)
        .map(|i| {
            let m = if rng.gen_bool(0.5) { a30 } else { a100 };
            let g = rng.gen_range(1..=2);
            // Small hosts now and then, so that cores bind.
            let cores = if rng.gen_bool(0.3) { 24 } else { 80 };
            Host::new(format!("h{i}"), cores, 512, vec![m; g], 0)
        })
        .collect();
    let mut f = Fleet::new(c, hosts);
    let mut placed = Vec::new();
    let want = rng.gen_range(2..=4);
    for _ in 0..12 {
        if placed.len() > want {
            break;
        }
        let m = if rng.gen_bool(0.5) { a30 } else { a100 };
        let profs: Vec<usize> = c.model(m).cf_profiles().collect();
        let n = if rng.gen_bool(0.35) { 2 } else { 1 };
        let gis: Vec<GiRequest> = (0..n)
            .map(|_| GiRequest {
                model: m,
                profile: profs[rng.gen_range(0..profs.len())],
            })
            .collect();
        let compute: u32 = gis
            .iter()
            .map(|g| c.model(m).profiles[g.profile].compute as u32)
            .sum();
        let mut v = Vm::job(0, gis, 4 * compute.max(1), 16 * compute.max(1));
        if rng.gen_bool(0.5) {
            v.kind = crate::fleet::VmKind::Tenant;
        }
        if let Some(p) = f.ff_placement(&v) {
            placed.push(f.add_placed(v, p).unwrap());
        }
    }
    while placed.len() > want {
        let i = rng.gen_range(0..placed.len());
        f.remove(placed.swap_remove(i)).unwrap();
    }
    f
}

/// The Eq. (5) gain over the current placement of every placement of the running VMs of
/// `hosts` (the fleet's rules: MIG layouts, cores, RAM).
fn every_plan(fleet: &Fleet, hosts: &[HostId], w: &Weights) -> Vec<f64> {
    let base = crate::policy::origamig::objective::evaluate(fleet, fleet, hosts, w).total;
    let mut cur = fleet.clone();
    let vms: Vec<crate::fleet::VmId> = hosts.iter().flat_map(|&h| fleet.hosts[h].vms.clone()).collect();
    for &id in &vms {
        cur.unplace(id).unwrap();
    }
    let mut out = Vec::new();
    rec(0, &vms, &mut cur, fleet, hosts, w, base, &mut out);
    out
}

fn best_plan(fleet: &Fleet, hosts: &[HostId], w: &Weights) -> f64 {
    every_plan(fleet, hosts, w)
        .into_iter()
        .fold(f64::NEG_INFINITY, f64::max)
}

#[allow(clippy::too_many_arguments)]
fn rec(
    i: usize,
    vms: &[crate::fleet::VmId],
    cur: &mut Fleet,
    before: &Fleet,
    hosts: &[HostId],
    w: &Weights,
    base: f64,
    out: &mut Vec<f64>,
) {
    if i == vms.len() {
        out.push(crate::policy::origamig::objective::evaluate(before, cur, hosts, w).total - base);
        return;
    }
    let id = vms[i];
    let vm = cur.vm(id).unwrap().clone();
    for &h in hosts {
        // Every combination of (GPU, start) per GI.
        let options = cur.slot_options(&vm, h);
        if options.iter().any(|o| o.is_empty()) {
            continue;
        }
        let mut idx = vec![0usize; options.len()];
        'combos: loop {
            let gis: Vec<crate::fleet::GiSlot> = idx.iter().zip(&options).map(|(&j, o)| o[j]).collect();
            if cur.place(id, crate::fleet::Placement { host: h, gis }).is_ok() {
                rec(i + 1, vms, cur, before, hosts, w, base, out);
                cur.unplace(id).unwrap();
            }
            for d in 0..idx.len() {
                idx[d] += 1;
                if idx[d] < options[d].len() {
                    continue 'combos;
                }
                idx[d] = 0;
            }
            break;
        }
    }
}

fn weights(rng: &mut rand::rngs::StdRng) -> Weights {
    use rand::Rng;
    let w = Weights::default();
    match rng.gen_range(0..3) {
        0 => w,
        1 => Weights {
            delta_job_extra: 0.0,
            ..w
        },
        _ => Weights {
            delta_running: 5.0,
            delta_job_extra: 0.0,
            ..w
        },
    }
}

fn random_prices(rel: &Relaxation, rng: &mut rand::rngs::StdRng) -> Vec<Vec<f64>> {
    use rand::Rng;
    rel.pairs
        .iter()
        .map(|p| p.first.iter().map(|_| rng.gen_range(-30.0..30.0)).collect())
        .collect()
}

#[test]
fn the_bound_at_any_prices_is_at_least_every_plans_gain() {
    // Weak duality: at any prices the relaxation's value is at least the Eq. (5) gain of every
    // placement (brute force over every placement of tiny fleets).
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(44);
    let mut tight = 0;
    for case in 0..150 {
        let f = random_fleet(&mut rng);
        let w = weights(&mut rng);
        let hosts: Vec<HostId> = (0..f.hosts.len()).collect();
        let rel = Relaxation::new(&f, &hosts, &w).unwrap();
        let plans = every_plan(&f, &hosts, &w);
        assert!(
            plans.contains(&0.0),
            "case {case}: the current placement is a plan"
        );
        let best = plans.into_iter().fold(f64::NEG_INFINITY, f64::max);
        for trial in 0..12 {
            let lambda = if trial == 0 {
                rel.pairs.iter().map(|p| vec![0.0; p.first.len()]).collect()
            } else {
                random_prices(&rel, &mut rng)
            };
            let (ub, _) = rel.evaluate(&lambda);
            assert!(
                ub >= best - 1e-9,
                "case {case} trial {trial}: bound {ub} below a plan's gain {best}"
            );
            if ub - best < 1.0 {
                tight += 1;
            }
        }
    }
    assert!(
        tight > 0,
        "no bound was ever tight: a bound far too high would pass"
    );
}

#[test]
fn a_proven_need_is_never_reached_by_a_plan() {
    // The check against brute force: when the subgradient steps prove every plan's gain below
    // `need`, the best plan's gain is below `need`; a call it proves has no improving plan.
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(50);
    let (mut proven, mut improving) = (0, 0);
    for case in 0..150 {
        let f = random_fleet(&mut rng);
        let w = weights(&mut rng);
        let hosts: Vec<HostId> = (0..f.hosts.len()).collect();
        let rel = Relaxation::new(&f, &hosts, &w).unwrap();
        let best = best_plan(&f, &hosts, &w);
        for need in [0.5, 1.0 - 1e-6, 3.0, 10.0, 25.0] {
            if rel.bound_below(need) {
                assert!(
                    best < need,
                    "case {case}: proven below {need}, a plan gains {best}"
                );
            }
        }
        if no_improving_plan(&f, &hosts, &w) {
            assert!(best <= 1e-9, "case {case}: proven unchanged, a plan gains {best}");
            proven += 1;
        }
        if best > 1e-9 {
            improving += 1;
        }
    }
    assert!(proven >= 10, "only {proven} of 150 proven");
    assert!(improving >= 10, "only {improving} of 150 with an improving plan");
}
