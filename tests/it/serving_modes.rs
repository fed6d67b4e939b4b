//! Placement across GPU modes: the scheduling note's serving case (`scenarios/serving-200.toml`)
//! against the exact layout planner, the packing score's gang protection, a property test that
//! an isolated request never lands on a shared GPU, and a simulation of a mixed fleet.

use migplan::catalog::embedded;
use migplan::fleet::{Fleet, GiSlot, GpuMode, Host, Placement, Shape, Vm};
use migplan::ops::layout_planner::{self, ExactSettings};
use migplan::ops::layouts;
use migplan::ops::serving::{free_gang_hosts, plan_pending, used_gpus_by_mode};
use migplan::policy::packing::Packing;
use migplan::scenario;
use proptest::prelude::*;
use std::path::Path;

const SERVING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/serving-200.toml");

fn h100() -> usize {
    embedded().model_id("h100-80gb").unwrap()
}

#[test]
fn serving_200_keeps_two_gang_hosts_and_uses_no_more_gpus_than_the_exact_optimum() {
    let s = scenario::load(Path::new(SERVING)).unwrap();
    let f = &s.fleet;
    let model = embedded().model(h100());
    // The serving demand, read from the queue: 120 x 1g.10gb, 60 x 2g.20gb, 20 x 3g.40gb.
    let mut demand = vec![0u32; model.profiles.len()];
    let mut gangs = 0;
    for v in f.pending().iter().filter_map(|&id| f.vm(id)) {
        match v.shape {
            Shape::Mig => demand[v.gis[0].profile] += 1,
            Shape::Gang { gpus: 8, .. } => gangs += 1,
            other => panic!("unexpected shape {other:?}"),
        }
    }
    let named = |p: &str| demand[model.profile(p).unwrap()];
    assert_eq!(
        (named("1g.10gb"), named("2g.20gb"), named("3g.40gb"), gangs),
        (120, 60, 20, 2)
    );
    let mig_gpus = f
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| g.mode == GpuMode::Mig)
        .count();
    assert_eq!((f.total_gpus(), mig_gpus), (64, 48));
    // The exact layout planner's optimum for that demand, on the 48 MIG GPUs.
    let optimum = layout_planner::exact(
        layouts::embedded(),
        h100(),
        model,
        &demand,
        48,
        ExactSettings::default(),
    )
    .unwrap();
    assert!(optimum.proven_optimal);
    // Below the note's own plan of one profile per GPU: 18 + 20 + 10 = 48 GPUs.
    assert!(optimum.gpus_used() <= 48, "{}", optimum.gpus_used());

    // Serving alone first: both whole hosts stay free for gangs.
    let mut serving_only = f.clone();
    for id in f
        .pending()
        .iter()
        .copied()
        .filter(|&id| !f.vm(id).unwrap().is_mig())
    {
        serving_only.remove(id).unwrap();
    }
    let plan = plan_pending(&serving_only, &s.policy.packing, ExactSettings::default()).unwrap();
    plan.fleet.check_invariants().unwrap();
    assert!(plan.fleet.pending().is_empty());
    assert_eq!(free_gang_hosts(&plan.fleet), 2);
    let (mig_used, whole_used, shared_used) = used_gpus_by_mode(&plan.fleet);
    assert!(
        mig_used as u32 <= optimum.gpus_used(),
        "{mig_used} > {}",
        optimum.gpus_used()
    );
    assert_eq!((whole_used, shared_used), (0, 0));
    // The packing score alone, one request at a time in queue order: the optimum is a lower
    // bound for it.
    let packing = Packing::new(&s.policy.packing, &s.policy.origamig);
    let mut online = serving_only.clone();
    for id in serving_only.pending().to_vec() {
        let vm = online.vm(id).unwrap().clone();
        let c = packing.choose(&online, &vm).unwrap();
        online.place(id, c.placement).unwrap();
    }
    let (online_mig, _, _) = used_gpus_by_mode(&online);
    assert!(online_mig as u32 >= optimum.gpus_used());
    println!(
        "serving-200: exact optimum {} GPUs, batch plan {mig_used} MIG GPUs, packing one by one {online_mig}, free gang hosts {}",
        optimum.gpus_used(),
        free_gang_hosts(&plan.fleet)
    );

    // The whole queue: the serving layout, then each 8-GPU gang on a whole host of its own.
    let plan = plan_pending(f, &s.policy.packing, ExactSettings::default()).unwrap();
    plan.fleet.check_invariants().unwrap();
    assert!(plan.fleet.pending().is_empty());
    let (mig_used, whole_used, _) = used_gpus_by_mode(&plan.fleet);
    assert!(mig_used as u32 <= optimum.gpus_used());
    assert_eq!(whole_used, 16);
    for host in plan.fleet.hosts.iter().filter(|h| h.name.starts_with("train-")) {
        let holders: Vec<_> = host.gpus.iter().map(|g| g.holder).collect();
        assert!(
            holders.iter().all(|h| h.is_some() && *h == holders[0]),
            "{holders:?}"
        );
    }
    // Every serving model holds an instance of its own profile on a MIG GPU.
    for v in plan.fleet.vms().filter(|v| v.is_mig()) {
        let p = v.placement.as_ref().unwrap();
        assert_eq!(plan.fleet.hosts[p.host].gpus[p.gis[0].gpu].mode, GpuMode::Mig);
    }
}

/// Two hosts of four whole or shared H100s; host 0 already runs a VM on GPU 0.
fn two_hosts(mode: GpuMode) -> Fleet {
    let hosts = (0..2)
        .map(|i| {
            let mut h = Host::new(format!("n{i}"), 64, 512, vec![h100(); 4], 0);
            for g in &mut h.gpus {
                g.mode = mode;
            }
            h
        })
        .collect();
    let mut f = Fleet::new(embedded(), hosts);
    let first = match mode {
        GpuMode::Shared => Vm::share(0, h100(), 40, 0.5, false, 4, 16),
        _ => Vm::share(0, h100(), 40, 0.5, true, 4, 16),
    };
    f.add_placed(
        first,
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    )
    .unwrap();
    f
}

#[test]
fn fractional_work_keeps_off_a_gang_capable_host_while_another_has_room() {
    let packing = Packing::new(&Default::default(), &Default::default());
    // Soft shares: best fit by bytes on host 0 (GPU 0 has 40 GB left), never host 1.
    let f = two_hosts(GpuMode::Shared);
    let c = packing
        .choose(&f, &Vm::share(0, h100(), 30, 0.2, false, 4, 16))
        .unwrap();
    assert_eq!((c.placement.host, c.placement.gis[0].gpu), (0, 0));
    let c = packing
        .choose(&f, &Vm::share(0, h100(), 40, 0.2, false, 4, 16))
        .unwrap();
    assert_eq!(
        (c.placement.host, c.placement.gis[0].gpu, c.finished_gpus),
        (0, 0, 1)
    );
    // 50 GB do not fit beside the 40 GB share: the next shared GPU of host 0, not host 1.
    let c = packing
        .choose(&f, &Vm::share(0, h100(), 50, 0.2, false, 4, 16))
        .unwrap();
    assert_eq!((c.placement.host, c.placement.gis[0].gpu), (0, 1));
    // Isolated shares on whole GPUs: host 0's free GPU 1, not the free host.
    let f = two_hosts(GpuMode::Whole);
    let c = packing
        .choose(&f, &Vm::share(0, h100(), 10, 0.2, true, 4, 16))
        .unwrap();
    assert_eq!((c.placement.host, c.placement.gis[0].gpu), (0, 1));
    // A gang goes only on a host whose GPUs are all whole and free: host 1.
    let c = packing.choose(&f, &Vm::gang(0, h100(), 2, 8, 64)).unwrap();
    assert_eq!(c.placement.host, 1);
    assert_eq!(c.placement.gis.iter().map(|s| s.gpu).collect::<Vec<_>>(), [0, 1]);
    // When host 1 is taken too, an isolated share may go there (no other room is left)...
    let mut g = f.clone();
    for k in 1..4 {
        g.add_placed(
            Vm::share(0, h100(), 10, 0.1, true, 1, 1),
            Placement {
                host: 0,
                gis: vec![GiSlot { gpu: k, start: 0 }],
            },
        )
        .unwrap();
    }
    let c = packing
        .choose(&g, &Vm::share(0, h100(), 10, 0.2, true, 4, 16))
        .unwrap();
    assert_eq!(c.placement.host, 1);
    // ... and a 5-GPU gang fits nowhere.
    assert_eq!(packing.choose(&g, &Vm::gang(0, h100(), 5, 8, 64)), None);
}

#[derive(Debug, Clone)]
enum Op {
    /// A share: GB, weight in tenths, isolation, and the GPU tried by hand (host, GPU).
    Share(u32, u32, bool, usize, usize),
    /// A gang of this many GPUs, placed by the packing score.
    Gang(u32),
    /// A share placed by the packing score.
    Packed(u32, bool),
    /// Remove the n-th VM (modulo the VM count).
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u32..=90, 1u32..=12, any::<bool>(), 0usize..3, 0usize..4)
            .prop_map(|(g, w, i, h, k)| Op::Share(g, w, i, h, k)),
        (1u32..=5).prop_map(Op::Gang),
        (1u32..=80, any::<bool>()).prop_map(|(g, i)| Op::Packed(g, i)),
        (0usize..64).prop_map(Op::Remove),
    ]
}

/// Three hosts of four H100s: one of each mode plus a shared one, all whole, all shared.
fn mixed() -> Fleet {
    let modes = [
        [GpuMode::Mig, GpuMode::Whole, GpuMode::Shared, GpuMode::Shared],
        [GpuMode::Whole; 4],
        [GpuMode::Shared; 4],
    ];
    let hosts = modes
        .iter()
        .enumerate()
        .map(|(i, ms)| {
            let mut h = Host::new(format!("n{i}"), 96, 1024, vec![h100(); 4], 0);
            for (g, &m) in h.gpus.iter_mut().zip(ms) {
                g.mode = m;
            }
            h
        })
        .collect();
    Fleet::new(embedded(), hosts)
}

fn no_isolated_share_on_a_shared_gpu(f: &Fleet) -> Result<(), String> {
    for v in f.vms() {
        if let (Shape::Share { isolation: true, .. }, Some(p)) = (v.shape, &v.placement) {
            for s in &p.gis {
                if f.hosts[p.host].gpus[s.gpu].mode == GpuMode::Shared {
                    return Err(format!("VM {} with isolation on a shared GPU", v.id));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 1000, ..ProptestConfig::default() })]

    #[test]
    fn an_isolated_request_never_lands_on_a_shared_gpu(ops in prop::collection::vec(op(), 1..120)) {
        let mut f = mixed();
        let packing = Packing::new(&Default::default(), &Default::default());
        for op in ops {
            let before = f.clone();
            let result = match op {
                Op::Share(gb, w, iso, h, k) => {
                    let vm = Vm::share(0, h100(), gb, f64::from(w) / 10.0, iso, 1, 8);
                    f.add_placed(vm, Placement { host: h, gis: vec![GiSlot { gpu: k, start: 0 }] }).map(|_| ())
                }
                Op::Gang(n) => {
                    let vm = Vm::gang(0, h100(), n, 1, 8);
                    match packing.choose(&f, &vm) {
                        Some(c) => f.add_placed(vm, c.placement).map(|_| ()),
                        None => Ok(()),
                    }
                }
                Op::Packed(gb, iso) => {
                    let vm = Vm::share(0, h100(), gb, 0.25, iso, 1, 8);
                    match packing.choose(&f, &vm) {
                        Some(c) => f.add_placed(vm, c.placement).map(|_| ()),
                        None => Ok(()),
                    }
                }
                Op::Remove(n) => {
                    let ids: Vec<u64> = f.vms().map(|v| v.id).collect();
                    match ids.get(n % ids.len().max(1)) {
                        Some(&id) => f.remove(id).map(|_| ()),
                        None => Ok(()),
                    }
                }
            };
            if result.is_err() {
                prop_assert_eq!(&f, &before, "a refused operation changes nothing");
            }
            prop_assert_eq!(f.check_invariants(), Ok(()));
            prop_assert_eq!(no_isolated_share_on_a_shared_gpu(&f), Ok(()));
        }
    }
}

#[test]
fn every_policy_simulates_a_fleet_of_three_modes_under_a_mixed_workload() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mixed-modes.toml");
    let mut s = scenario::load(Path::new(path)).unwrap();
    assert!(s.workload.mix.is_set());
    s.workload.warmup_h = 1.0;
    s.workload.measure_h = 6.0;
    for p in ["ff", "mfi", "tc", "origamig", "packing"] {
        let policy = migplan::policy::by_name(p, &s.policy).unwrap();
        let mut sim = migplan::sim::Simulator::new(&s, policy).unwrap();
        // The fleet invariants (GIs on MIG GPUs only, shares within memory, one holder per
        // whole GPU) after every change of the run.
        sim.set_check_invariants(true);
        sim.run();
        let f = sim.fleet();
        f.check_invariants().unwrap();
        no_isolated_share_on_a_shared_gpu(f).unwrap();
        let m = sim.metrics();
        assert!(
            m.admitted > 0 && m.admitted <= m.requests,
            "{p}: {} of {}",
            m.admitted,
            m.requests
        );
        // Shares and gangs are running at the end: the mix reached the fleet.
        let shares = f
            .vms()
            .filter(|v| matches!(v.shape, Shape::Share { .. }) && v.placement.is_some())
            .count();
        let mig = f.vms().filter(|v| v.is_mig() && v.placement.is_some()).count();
        assert!(shares > 0 && mig > 0, "{p}: {shares} shares, {mig} MIG VMs");
        // Only MIG requests wait.
        assert!(f.pending().iter().all(|&id| f.vm(id).unwrap().is_mig()), "{p}");
    }
}
