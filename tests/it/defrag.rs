//! The defragmentation pass across GPU modes (`ops::defrag`, docs/operations.md): soft shares
//! repacked best fit by bytes (hand-computed cases), isolated shares left alone, the fewest MIG
//! tenants restarted at their next deploy to free a GPU (against a brute force over every set of
//! tenants and every re-placement on small fleets), the `restart_at_deploy` step kind of the
//! executor (replayed step by step with the fleet invariants checked after each step), the
//! `set_mode` steps that switch emptied GPUs to whole so a pending gang starts in the same plan
//! (and the executor's refusal to switch a GPU that holds anything), the CLI (text, JSON,
//! `--apply -o` round trip, bad input) and `:defrag` through the session reducer.

use crate::common::cli::{assert_one_line_error, migplan, stdout_of};
use crate::common::fleet::{at, job, put};
use migplan::catalog::embedded;
use migplan::executor::{self, PlanError, Schedule, StepKind};
use migplan::fleet::{Fleet, FleetError, GiSlot, GpuMode, Host, Placement, Shape, Vm, VmId};
use migplan::ops::defrag::{defrag, Defrag, Goal};
use migplan::plan::Plan;
use migplan::session::{parse_command, update, Action, Session};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

const FIXTURE: &str = "tests/it/fixtures/defrag.toml";

fn fixture_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)
}

/// Replays the pass's schedule on a copy of the fleet one step at a time: each restart runs
/// where the fleet takes the VM with its own old resources free, each share move where it takes
/// it now, each mode switch on a GPU that holds nothing, each start (a pending gang or isolated
/// share) where the fleet takes it now; the invariants hold after every step and the end state is
/// the pass's.
fn replay(fleet: &Fleet, d: &Defrag) -> Fleet {
    let mut f = fleet.clone();
    for st in &d.schedule.steps {
        let one = Schedule {
            steps: vec![st.clone()],
            ..Schedule::default()
        };
        if let StepKind::SetMode(mode) = st.kind {
            let (h, k) = executor::step_gpu(st).unwrap();
            assert!(!f.hosts[h].gpus[k].is_used(), "{st:?}");
            assert_eq!(d.plan.modes.get(&(h, k)), Some(&mode));
            executor::execute(&mut f, &one).unwrap();
            assert_eq!(f.hosts[h].gpus[k].mode, mode);
            f.check_invariants().unwrap();
            continue;
        }
        let vm = f.vm(st.vm).unwrap().clone();
        assert_eq!(vm.placement, st.from, "{st:?}");
        match st.kind {
            StepKind::RestartAtDeploy => {
                assert!(vm.is_mig(), "{st:?}");
                assert!(d.plan.restarts.contains(&st.vm));
            }
            StepKind::Move => assert!(matches!(vm.shape, Shape::Share { isolation: false, .. })),
            StepKind::Start => assert!(matches!(
                vm.shape,
                Shape::Gang { .. } | Shape::Share { isolation: true, .. }
            )),
            other => panic!("the pass plans no {other:?} step"),
        }
        f.validate_placement(&vm, &st.to, st.kind != StepKind::Start)
            .unwrap();
        executor::execute(&mut f, &one).unwrap();
        f.check_invariants().unwrap();
    }
    for (id, to) in &d.plan.targets {
        assert_eq!(f.vm(*id).unwrap().placement.as_ref(), Some(to), "VM {id}");
    }
    assert_eq!(f, d.after_fleet);
    f
}

fn h100_host(name: &str, modes: &[GpuMode]) -> Host {
    let c = embedded();
    let m = c.model_id("h100-80gb").unwrap();
    let mut h = Host::new(name, 256, 2048, vec![m; modes.len()], 0);
    for (g, &mode) in h.gpus.iter_mut().zip(modes) {
        g.mode = mode;
    }
    h
}

fn share(f: &mut Fleet, id: VmId, gb: u32, isolation: bool, host: usize, gpu: usize) {
    let m = f.catalog.model_id("h100-80gb").unwrap();
    put(
        f,
        Vm::share(id, m, gb, 0.25, isolation, 2, 8),
        Placement {
            host,
            gis: vec![GiSlot { gpu, start: 0 }],
        },
    );
}

// --- soft shares --------------------------------------------------------------------------

/// Three shared H100 80GB GPUs at 30, 40 (25 + 15) and 20 GB. By hand: the least loaded GPU (2,
/// 20 GB) empties first; its share goes to the GPU with the least free memory that holds it:
/// GPU 1 (40 GB free) before GPU 0 (50 GB free), so GPU 1 holds 60 GB. GPU 0 (30 GB) cannot
/// empty: GPU 1 has 20 GB free and GPU 2 is emptied. One move, one GPU freed, two shared GPUs
/// used: the fewest for 90 GB on 80 GB GPUs.
#[test]
fn shares_at_30_40_20_gb_free_one_gpu_best_fit_by_bytes() {
    let c = embedded();
    let mut f = Fleet::new(c, vec![h100_host("s", &[GpuMode::Shared; 3])]);
    share(&mut f, 1, 30, false, 0, 0);
    share(&mut f, 2, 25, false, 0, 1);
    share(&mut f, 3, 15, false, 0, 1);
    share(&mut f, 4, 20, false, 0, 2);
    let d = defrag(&f, Goal::Auto).unwrap();
    type Gpu = (usize, usize);
    let moves: Vec<(VmId, Gpu, Gpu)> = d.share_moves.iter().map(|m| (m.vm, m.from, m.to)).collect();
    assert_eq!(moves, vec![(4, (0, 2), (0, 1))]);
    assert!(d.restarts.is_empty() && d.plan.restarts.is_empty());
    assert_eq!(d.freed_gpus, vec![(0, 2)]);
    assert_eq!((d.shared_used, d.shared_bound), (2, 2));
    assert_eq!((d.before.used_shared, d.after.used_shared), (3, 2));
    let after = replay(&f, &d);
    assert_eq!(after.hosts[0].gpus[1].shared_gb(), 60);
    assert_eq!(after.hosts[0].gpus[0].shared_gb(), 30);
    // A live migration of a share: a move, not a restart; nothing crosses hosts, so nothing is
    // copied.
    assert_eq!((d.schedule.migrations(), d.schedule.restarts()), (1, 0));
    assert_eq!(d.schedule.copied_gb(&f), 0.0);
}

/// 30, 40 and 10 GB: the 10 GB share goes to GPU 1 (40 free, the least that holds it: 50 GB),
/// then GPU 0's 30 GB fits GPU 1's last 30 GB: one GPU holds all 80 GB, two GPUs free.
#[test]
fn shares_at_30_40_10_gb_fill_one_gpu() {
    let c = embedded();
    let mut f = Fleet::new(c, vec![h100_host("s", &[GpuMode::Shared; 3])]);
    share(&mut f, 1, 30, false, 0, 0);
    share(&mut f, 2, 40, false, 0, 1);
    share(&mut f, 3, 10, false, 0, 2);
    let d = defrag(&f, Goal::Auto).unwrap();
    let moves: Vec<(VmId, (usize, usize))> = d.share_moves.iter().map(|m| (m.vm, m.to)).collect();
    assert_eq!(moves, vec![(1, (0, 1)), (3, (0, 1))]);
    assert_eq!(d.freed_gpus, vec![(0, 0), (0, 2)]);
    assert_eq!((d.shared_used, d.shared_bound), (1, 1));
    let after = replay(&f, &d);
    assert_eq!(after.hosts[0].gpus[1].shared_gb(), 80);
}

/// An isolated share holds a whole GPU alone: the pass never moves it, and no share lands on
/// its GPU even though the GPU has 50 GB nobody uses.
#[test]
fn isolated_shares_stay_off_shared_gpus() {
    let c = embedded();
    let mut f = Fleet::new(
        c,
        vec![
            h100_host("a", &[GpuMode::Whole, GpuMode::Shared]),
            h100_host("b", &[GpuMode::Shared, GpuMode::Whole]),
        ],
    );
    share(&mut f, 1, 30, true, 0, 0);
    share(&mut f, 2, 60, false, 0, 1);
    share(&mut f, 3, 50, false, 1, 0);
    share(&mut f, 4, 10, true, 1, 1);
    let d = defrag(&f, Goal::Auto).unwrap();
    // 60 + 50 do not fit one 80 GB GPU: nothing moves, and the isolated shares stay.
    assert!(d.plan.targets.is_empty(), "{:?}", d.plan);
    // With a third, small share the small one moves; still nothing touches the whole GPUs.
    share(&mut f, 5, 15, false, 1, 0);
    let d = defrag(&f, Goal::Auto).unwrap();
    for id in d.plan.targets.keys() {
        assert!(![1, 4].contains(id), "isolated share {id} moved");
    }
    let after = replay(&f, &d);
    for h in &after.hosts {
        for g in &h.gpus {
            if g.mode == GpuMode::Shared {
                for s in &g.shares {
                    let v = after.vm(s.vm).unwrap();
                    assert!(matches!(v.shape, Shape::Share { isolation: false, .. }));
                }
            }
        }
    }
    assert_eq!(after.vm(1).unwrap().placement, f.vm(1).unwrap().placement);
    assert_eq!(after.vm(4).unwrap().placement, f.vm(4).unwrap().placement);
}

// --- restarts at deploy: the executor ------------------------------------------------------

fn a100_fleet(hosts: usize, gpus: usize) -> Fleet {
    let c = embedded();
    let m = c.model_id("a100-40gb").unwrap();
    Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("h{i}"), 1000, 8000, vec![m; gpus], 0))
            .collect(),
    )
}

fn a100(id: VmId, profiles: &[&str]) -> Vm {
    Vm {
        kind: migplan::fleet::VmKind::Tenant,
        ..job(id, "a100-40gb", profiles, 4, 16)
    }
}

/// A VM of two 1g.5gb at slices 0 and 1 goes to slices 1 and 2. As a live migration its own old
/// GIs stay until it completes, so the move waits and the executor parks it first; as a restart
/// at its next deploy it is stopped first, so one step does it, copying nothing.
#[test]
fn a_restart_frees_its_own_slices_first_and_copies_nothing() {
    let mut f = a100_fleet(1, 2);
    put(&mut f, a100(1, &["1g.5gb", "1g.5gb"]), at(0, &[(0, 0), (0, 1)]));
    let mut plan = Plan {
        origin: "test".into(),
        ..Default::default()
    };
    plan.targets.insert(1, at(0, &[(0, 1), (0, 2)]));
    let moved = executor::schedule_with(&f, &plan, 10.0).unwrap();
    let kinds: Vec<StepKind> = moved.steps.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, vec![StepKind::Park, StepKind::Move]);
    plan.restarts.insert(1);
    let s = executor::schedule_with(&f, &plan, 10.0).unwrap();
    assert_eq!(s.steps.len(), 1);
    assert_eq!(s.steps[0].kind, StepKind::RestartAtDeploy);
    assert_eq!((s.restarts(), s.migrations(), s.parking_penalty), (1, 0, 0.0));
    assert_eq!(s.duration_s(&f, 12.5), 0.0);
    assert_eq!(s.copied_gb(&f), 0.0);
    executor::execute(&mut f, &s).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.vm(1).unwrap().placement, Some(at(0, &[(0, 1), (0, 2)])));
    assert_eq!(
        serde_json::to_string(&StepKind::RestartAtDeploy).unwrap(),
        "\"restart_at_deploy\""
    );
}

/// Two restarts that swap places wait on each other, and a restart is never parked (parking is
/// a live migration): the plan has no order. The same swap as moves parks one VM.
#[test]
fn restarts_are_never_parked() {
    let mut f = a100_fleet(1, 2);
    put(&mut f, a100(1, &["3g.20gb"]), at(0, &[(0, 0)]));
    put(&mut f, a100(2, &["3g.20gb"]), at(0, &[(0, 4)]));
    let mut plan = Plan::default();
    plan.targets.insert(1, at(0, &[(0, 4)]));
    plan.targets.insert(2, at(0, &[(0, 0)]));
    let moves = executor::schedule_with(&f, &plan, 10.0).unwrap();
    assert!(moves.steps.iter().any(|s| s.kind == StepKind::Park));
    plan.restarts = BTreeSet::from([1, 2]);
    assert_eq!(
        executor::schedule_with(&f, &plan, 10.0),
        Err(PlanError::Stuck {
            remaining: vec![1, 2]
        })
    );
}

// --- restarts at deploy: the fewest, against a brute force ---------------------------------

/// Every placement of VM `id` (pending in `tmp`) the fleet takes: every host, every GPU and
/// permitted start per GI.
fn all_placements(tmp: &Fleet, id: VmId) -> Vec<Placement> {
    let vm = tmp.vm(id).unwrap();
    let c = tmp.catalog;
    let mut out = Vec::new();
    for h in 0..tmp.hosts.len() {
        let mut partial: Vec<Vec<GiSlot>> = vec![Vec::new()];
        for g in &vm.gis {
            let starts = &c.model(g.model).profiles[g.profile].starts;
            let mut next = Vec::new();
            for p in &partial {
                for k in 0..tmp.hosts[h].gpus.len() {
                    for &z in starts {
                        let mut q = p.clone();
                        q.push(GiSlot { gpu: k, start: z });
                        next.push(q);
                    }
                }
            }
            partial = next;
        }
        for gis in partial {
            let p = Placement { host: h, gis };
            if tmp.validate_placement(vm, &p, false).is_ok() {
                out.push(p);
            }
        }
    }
    out
}

fn assign(
    orig: &Fleet,
    tmp: &mut Fleet,
    set: &[VmId],
    i: usize,
    targets: &mut BTreeMap<VmId, Placement>,
    target: Option<(usize, usize)>,
) -> bool {
    if i == set.len() {
        let freed = match target {
            Some((h, k)) => !tmp.hosts[h].gpus[k].is_used(),
            None => free_gpus(tmp) > free_gpus(orig),
        };
        if !freed {
            return false;
        }
        let plan = Plan {
            targets: targets.clone(),
            origin: "brute force".into(),
            restarts: set.iter().copied().collect(),
            ..Default::default()
        };
        return executor::schedule_with(orig, &plan, 0.0).is_ok();
    }
    let id = set[i];
    for p in all_placements(tmp, id) {
        tmp.place(id, p.clone()).unwrap();
        targets.insert(id, p);
        if assign(orig, tmp, set, i + 1, targets, target) {
            return true;
        }
        targets.remove(&id);
        tmp.unplace(id).unwrap();
    }
    false
}

fn free_gpus(f: &Fleet) -> usize {
    f.hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| !g.is_used())
        .count()
}

/// The fewest MIG VMs whose restart (each anywhere the fleet takes it, in an order the executor
/// finds) frees GPU `target`, or without a target leaves one more GPU holding nothing, trying
/// every set of up to `max` VMs; `None` when no set of that size does.
fn brute_min(f: &Fleet, max: usize, target: Option<(usize, usize)>) -> Option<usize> {
    let ids: Vec<VmId> = f.vms().filter(|v| v.placement.is_some()).map(|v| v.id).collect();
    for size in 1..=max.min(ids.len()) {
        let mut found = false;
        subsets(&ids, size, &mut |set| {
            // Only a set holding every VM of some GPU can empty it.
            let covers = f.hosts.iter().enumerate().any(|(h, host)| {
                host.gpus.iter().enumerate().any(|(k, g)| {
                    target.is_none_or(|t| t == (h, k))
                        && g.is_used()
                        && g.gis.iter().all(|r| set.contains(&r.vm))
                })
            });
            if !covers {
                return false;
            }
            let mut tmp = f.clone();
            for &id in set {
                tmp.unplace(id).unwrap();
            }
            found = assign(f, &mut tmp, set, 0, &mut BTreeMap::new(), target);
            found
        });
        if found {
            return Some(size);
        }
    }
    None
}

fn subsets(items: &[VmId], k: usize, f: &mut dyn FnMut(&[VmId]) -> bool) {
    fn go(
        items: &[VmId],
        k: usize,
        from: usize,
        cur: &mut Vec<VmId>,
        f: &mut dyn FnMut(&[VmId]) -> bool,
    ) -> bool {
        if cur.len() == k {
            return f(cur);
        }
        for i in from..items.len() {
            cur.push(items[i]);
            if go(items, k, i + 1, cur, f) {
                return true;
            }
            cur.pop();
        }
        false
    }
    go(items, k, 0, &mut Vec::new(), f);
}

/// A random fleet of `hosts` x `gpus` A100-40GB: tenants of random profiles (a few of two GIs)
/// at random free starts until `fill` attempts are spent.
fn random_fleet(rng: &mut StdRng, hosts: usize, gpus: usize, fill: usize) -> Fleet {
    let mut f = a100_fleet(hosts, gpus);
    let singles = ["1g.5gb", "1g.5gb", "2g.10gb", "2g.10gb", "3g.20gb", "4g.20gb"];
    let mut id = 1;
    for _ in 0..fill {
        let profiles: Vec<&str> = if rng.gen_bool(0.15) {
            vec!["1g.5gb", "1g.5gb"]
        } else {
            vec![singles[rng.gen_range(0..singles.len())]]
        };
        let vm = a100(id, &profiles);
        let mut probe = f.clone();
        probe.add_pending(vm.clone()).unwrap();
        let options = all_placements(&probe, id);
        if options.is_empty() {
            continue;
        }
        let p = options[rng.gen_range(0..options.len())].clone();
        put(&mut f, vm, p);
        id += 1;
    }
    f
}

/// On 2 hosts x 2 GPUs (and 1 x 3), the pass's restarts to free one more GPU equal the brute
/// force's minimum over every set of tenants and every re-placement, and its plan replays step
/// by step with the invariants after each step.
#[test]
fn restarts_are_the_fewest_that_free_a_gpu_brute_force() {
    let mut rng = StdRng::seed_from_u64(20);
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for case in 0..120 {
        let (hosts, gpus) = if case % 4 == 3 { (1, 3) } else { (2, 2) };
        let f = random_fleet(&mut rng, hosts, gpus, 7);
        let free_now = free_gpus(&f);
        let d = defrag(&f, Goal::FreeGpus(free_now + 1)).unwrap();
        assert!(d.exact, "case {case}: the search budget ran out on a small fleet");
        // The brute force checks every set up to the pass's size (at most three; for four it
        // checks that no set of three does: finding the four takes it a minute); where the pass
        // finds none, every set of up to three tenants.
        match &d.short {
            None => {
                let r = d.restarts.len();
                assert_eq!(d.freed_gpus.len(), 1, "case {case}");
                if r <= 3 {
                    assert_eq!(
                        brute_min(&f, r, None),
                        Some(r),
                        "case {case}: pass {:?}",
                        d.restarts
                    );
                } else {
                    assert_eq!(brute_min(&f, 3, None), None, "case {case}: pass {:?}", d.restarts);
                }
                *tally.entry(format!("min {r}")).or_default() += 1;
            }
            Some(why) => {
                if let Some(b) = brute_min(&f, 3, None) {
                    for v in f.vms() {
                        eprintln!("{} {:?} {:?}", v.id, v.gis, v.placement);
                    }
                    panic!("case {case}: brute force frees a GPU with {b} restarts; the pass: {why}");
                }
                *tally.entry("no set frees a GPU".into()).or_default() += 1;
            }
        }
        assert_eq!(d.plan.restarts.len(), d.restarts.len());
        replay(&f, &d);
    }
    eprintln!("defrag brute force over 120 fleets: {tally:?}");
    // The cases cover single restarts, sets that need room made, and fleets with no way out.
    assert!(tally.len() >= 3, "{tally:?}");
}

/// Freeing a given GPU whose tenant needs an empty GPU (a 4g.20gb starts only at slice 0) takes
/// a second restart that makes room: the pass finds that pair.
#[test]
fn freeing_a_given_gpu_restarts_a_tenant_that_makes_room() {
    let mut f = a100_fleet(1, 2);
    put(&mut f, a100(1, &["4g.20gb"]), at(0, &[(0, 0)]));
    put(&mut f, a100(2, &["2g.10gb"]), at(0, &[(1, 0)]));
    let d = defrag(&f, Goal::Gpu(0, 0)).unwrap();
    // By hand: VM 1 fits only at slice 0 of GPU 1, where VM 2 sits; VM 2 fits GPU 0 at 4 or 6
    // once VM 1 left, or GPU 1 at 4 or 6. Two restarts; the brute force agrees.
    assert_eq!(d.restarts.len(), 2, "{:?}", d.restarts);
    assert_eq!(brute_min(&f, 2, Some((0, 0))), Some(2));
    // Any GPU: GPU 1 frees with VM 2 alone (to GPU 0 at slice 4 or 6).
    assert_eq!(brute_min(&f, 2, None), Some(1));
    assert_eq!(defrag(&f, Goal::FreeGpus(1)).unwrap().restarts.len(), 1);
    assert_eq!(d.freed_gpus, vec![(0, 0)]);
    replay(&f, &d);
    assert!(defrag(&f, Goal::Gpu(0, 5)).is_err());
}

// --- the fixture: a pending gang --------------------------------------------------------

/// The fixture (`fixtures/defrag.toml`) by hand: shared-0 repacks as in the 30/40/20 case (VM 4
/// to GPU 1). The 2-GPU gang needs two free GPUs on one host: mig-0 takes three restarts (VM 10
/// to mig-1 GPU 0 at slice 4 beside the 4g.40gb, VMs 11 and 12 beside the 2g.20gb on mig-1 GPU
/// 1); mig-1 also takes three (its 4g.40gb needs an empty GPU, so VM 10 restarts too); shared-0
/// cannot empty GPUs 0 and 1 (no other shared GPU has room). The tie goes to the first host.
#[test]
fn a_pending_gang_gets_a_host_with_the_fewest_restarts() {
    let sc = migplan::scenario::load(&fixture_path()).unwrap();
    let f = &sc.fleet;
    let d = defrag(f, Goal::Auto).unwrap();
    let restarted: Vec<VmId> = d.restarts.iter().map(|r| r.vm).collect();
    assert_eq!(restarted, vec![10, 11, 12]);
    let mig0 = f.hosts.iter().position(|h| h.name == "mig-0").unwrap();
    // mig-0 empties and takes the gang in the same plan: no host ends up idle.
    assert!(d.freed_hosts.is_empty());
    assert_eq!(d.whole_requests.len(), 1);
    let w = &d.whole_requests[0];
    assert_eq!(
        (w.vm, w.gpus, w.fits_before, w.started, w.host),
        (20, 2, false, true, Some(mig0))
    );
    assert_eq!(w.switch, vec![0, 1]);
    let after = replay(f, &d);
    assert_gang_admitted(f, &after, mig0);
    // Each switch runs after the restarts that empty its GPU and before the gang's start.
    let order: Vec<(VmId, StepKind)> = d.schedule.steps.iter().map(|s| (s.vm, s.kind)).collect();
    let whole = StepKind::SetMode(GpuMode::Whole);
    assert_eq!(
        order,
        vec![
            (4, StepKind::Move),
            (10, StepKind::RestartAtDeploy),
            (20, whole),
            (11, StepKind::RestartAtDeploy),
            (12, StepKind::RestartAtDeploy),
            (20, whole),
            (20, StepKind::Start),
        ]
    );
    let switched: Vec<(usize, usize)> = d
        .schedule
        .steps
        .iter()
        .filter(|s| s.kind.is_mode_switch())
        .map(|s| executor::step_gpu(s).unwrap())
        .collect();
    assert_eq!(switched, vec![(mig0, 0), (mig0, 1)]);
    assert_eq!(d.schedule.mode_switches(), 2);
    // Two free GPUs asked for: the shares free one; the cheapest MIG GPU is mig-0 GPU 0 (VM 10
    // alone, to GPU 1 at slice 4 of its own host).
    let d = defrag(f, Goal::FreeGpus(2)).unwrap();
    assert_eq!(d.restarts.iter().map(|r| r.vm).collect::<Vec<_>>(), vec![10]);
    assert_eq!(d.after.free_gpus, 2);
    replay(f, &d);
}

/// VM 20 (pending in `before`) runs on two whole GPUs of host `host` in `after`, and every VM
/// that ran before still runs (nothing was evicted).
fn assert_gang_admitted(before: &Fleet, after: &Fleet, host: usize) {
    let p = after.vm(20).unwrap().placement.clone().expect("VM 20 runs");
    assert_eq!(p.host, host);
    let mut gpus: Vec<usize> = p.gis.iter().map(|g| g.gpu).collect();
    gpus.sort_unstable();
    gpus.dedup();
    assert_eq!(gpus.len(), 2, "{p:?}");
    for &k in &gpus {
        let g = &after.hosts[host].gpus[k];
        assert_eq!((g.mode, g.holder), (GpuMode::Whole, Some(20)));
    }
    assert!(after.pending().is_empty());
    for v in before.vms().filter(|v| v.placement.is_some()) {
        assert!(after.vm(v.id).unwrap().placement.is_some(), "VM {} evicted", v.id);
    }
    after.check_invariants().unwrap();
}

/// The executor switches only a GPU that holds nothing: a plan that switches a GPU whose VM
/// stays is refused as a whole, and a `set_mode` step run on a GPU that still holds a VM is
/// refused by the fleet with nothing changed.
#[test]
fn a_switch_of_a_gpu_that_holds_a_vm_is_refused() {
    let mut f = a100_fleet(1, 2);
    put(&mut f, a100(1, &["3g.20gb"]), at(0, &[(0, 0)]));
    let mut plan = Plan::default();
    plan.modes.insert((0, 0), GpuMode::Whole);
    match executor::schedule_with(&f, &plan, 0.0) {
        Err(PlanError::Mode { gpu, mode, error }) => {
            assert_eq!((gpu.as_str(), mode), ("h0/0", GpuMode::Whole));
            assert!(
                matches!(
                    error,
                    FleetError::GpuBusy {
                        gpu: 0,
                        residents: 1,
                        ..
                    }
                ),
                "{error:?}"
            );
        }
        other => panic!("expected a refused switch, got {other:?}"),
    }
    // The GPU switches once the plan moves its VM away, after the move.
    plan.targets.insert(1, at(0, &[(1, 0)]));
    let s = executor::schedule_with(&f, &plan, 0.0).unwrap();
    let kinds: Vec<StepKind> = s.steps.iter().map(|st| st.kind).collect();
    assert_eq!(kinds, vec![StepKind::Move, StepKind::SetMode(GpuMode::Whole)]);
    // The switch step alone, run before the move: the fleet refuses it and changes nothing.
    let before = f.clone();
    let switch_only = Schedule {
        steps: vec![s.steps[1].clone()],
        ..Schedule::default()
    };
    let e = executor::execute(&mut f, &switch_only).unwrap_err();
    assert!(matches!(e, FleetError::GpuBusy { gpu: 0, .. }), "{e:?}");
    assert_eq!(f, before);
    // In order, both run; MIG off on an A100 needs a GPU reset and the step says so.
    let text = executor::set_mode_text(&f, &s.steps[1]).unwrap();
    assert_eq!(
        text,
        "switch GPU h0/0 mig -> whole (holds nothing; a100-40gb: needs a GPU reset)"
    );
    executor::execute(&mut f, &s).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.hosts[0].gpus[0].mode, GpuMode::Whole);
    assert_eq!(serde_json::to_string(&s.steps[1].kind).unwrap(), "\"set_mode\"");
}

/// A pending 2-GPU gang on two A100 hosts whose MIG GPUs each hold one tenant: the plan restarts
/// one host's tenants onto the other host's GPUs, switches both freed GPUs to whole (each step
/// saying that MIG off needs a reset on the A100) and starts the gang there.
#[test]
fn a_gang_on_a100s_is_admitted_with_resets_named() {
    let mut f = a100_fleet(2, 2);
    put(&mut f, a100(1, &["1g.5gb"]), at(0, &[(0, 0)]));
    put(&mut f, a100(2, &["1g.5gb"]), at(0, &[(1, 0)]));
    put(&mut f, a100(3, &["3g.20gb"]), at(1, &[(0, 0)]));
    put(&mut f, a100(4, &["3g.20gb"]), at(1, &[(1, 0)]));
    let m = f.catalog.model_id("a100-40gb").unwrap();
    let gang = f.add_pending(Vm::gang(20, m, 2, 8, 32)).unwrap();
    assert_eq!(gang, 20);
    let d = defrag(&f, Goal::Auto).unwrap();
    assert_eq!(d.restarts.len(), 2, "{:?}", d.restarts);
    let after = replay(&f, &d);
    let host = after.vm(20).unwrap().placement.as_ref().unwrap().host;
    assert_gang_admitted(&f, &after, host);
    let texts: Vec<String> = d
        .schedule
        .steps
        .iter()
        .filter_map(|s| executor::set_mode_text(&f, s))
        .collect();
    assert_eq!(texts.len(), 2);
    for t in &texts {
        assert!(
            t.ends_with("mig -> whole (holds nothing; a100-40gb: needs a GPU reset)"),
            "{t}"
        );
    }
}

/// GPUs that hold nothing but are in the wrong mode need no restart: an isolated share on a host
/// of an empty MIG GPU and a shared GPU with a share takes the MIG GPU after one `set_mode`
/// step (MIG off on an H100: no reset), the share stays where it is.
#[test]
fn an_isolated_share_takes_an_empty_mig_gpu_after_one_switch() {
    let mut f = Fleet::new(embedded(), vec![h100_host("a", &[GpuMode::Mig, GpuMode::Shared])]);
    share(&mut f, 1, 20, false, 0, 1);
    let m = f.catalog.model_id("h100-80gb").unwrap();
    f.add_pending(Vm::share(7, m, 30, 1.0, true, 2, 8)).unwrap();
    let d = defrag(&f, Goal::Auto).unwrap();
    let order: Vec<(VmId, StepKind)> = d.schedule.steps.iter().map(|s| (s.vm, s.kind)).collect();
    assert_eq!(
        order,
        vec![(7, StepKind::SetMode(GpuMode::Whole)), (7, StepKind::Start)]
    );
    assert!(d.restarts.is_empty() && d.share_moves.is_empty());
    assert_eq!(
        executor::set_mode_text(&f, &d.schedule.steps[0]).unwrap(),
        "switch GPU a/0 mig -> whole (holds nothing; h100-80gb: no GPU reset)"
    );
    let after = replay(&f, &d);
    let g = &after.hosts[0].gpus[0];
    assert_eq!((g.mode, g.holder), (GpuMode::Whole, Some(7)));
    assert_eq!(after.vm(1).unwrap().placement, f.vm(1).unwrap().placement);
    assert!(d.whole_requests[0].started);
}

// --- the command line -------------------------------------------------------------------

#[test]
fn cli_prints_the_plan_and_json_names_the_restart_kind() {
    let text = String::from_utf8(stdout_of(&["defrag", FIXTURE])).unwrap();
    for want in [
        "plan: 7 step(s): 1 share move(s)",
        "3 restart(s) at the next deploy (nothing copied), 2 mode switch(es), 1 start(s)",
        "  1. VM 4: move share 20 GB shared-0 GPU 2 -> shared-0 GPU 1",
        "  2. VM 10: restart at deploy 3g.40gb mig-0 GPU 0 @0 -> 3g.40gb mig-1 GPU 0 @4",
        "  3. set_mode: switch GPU mig-0/0 mig -> whole (holds nothing; h100-80gb: no GPU reset)",
        "  6. set_mode: switch GPU mig-0/1 mig -> whole (holds nothing; h100-80gb: no GPU reset)",
        "  7. VM 20: start queue -> mig-0 GPU 0,1",
        "GPUs freed: shared-0/2",
        "hosts freed: none",
        "before: 3 active hosts, 8 used GPUs (MIG 4, whole 1, shared 3), 0 free GPUs",
        "after:  3 active hosts, 7 used GPUs (MIG 2, whole 3, shared 2), 1 free GPUs",
        "pending VM 20 (2 whole GPU(s)): starts on mig-0 in this plan, after GPU(s) 0,1 switch to whole",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
    let json: serde_json::Value = serde_json::from_slice(&stdout_of(&["defrag", FIXTURE, "--json"])).unwrap();
    let steps = json["steps"].as_array().unwrap();
    let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "move",
            "restart_at_deploy",
            "set_mode",
            "restart_at_deploy",
            "restart_at_deploy",
            "set_mode",
            "start"
        ]
    );
    for (i, k) in [(2, 0), (5, 1)] {
        assert_eq!(steps[i]["gpu"]["host"], "mig-0");
        assert_eq!(steps[i]["gpu"]["gpu"], k);
        assert_eq!(steps[i]["mode_before"], "mig");
        assert_eq!(steps[i]["mode"], "whole");
        assert_eq!(steps[i]["needs_reset"], false);
    }
    assert_eq!(steps[6]["vm"], 20);
    assert_eq!(json["mode_switches"], 2);
    assert_eq!(json["pending_whole"][0]["started"], true);
    assert_eq!(json["pending_whole"][0]["host"], "mig-0");
    let json: serde_json::Value =
        serde_json::from_slice(&stdout_of(&["defrag", FIXTURE, "--json", "--gpu", "mig-1/0"])).unwrap();
    let kinds: Vec<&str> = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["move", "restart_at_deploy", "restart_at_deploy"]);
    assert_eq!(json["restarts_at_deploy"], 2);
    assert_eq!(json["migrations"], 1);
    assert_eq!(json["gb_copied"], 0.0);
    assert_eq!(json["freed_gpus"][0]["host"], "mig-1");
    assert_eq!(json["exact"], true);
    assert_eq!(json["pending_whole"][0]["fits_after"], false);
    // The serving case: nothing placed yet, nothing to do; each 8-GPU gang fits on a host whose
    // GPUs are whole already rather than on a MIG host that would have to switch.
    let json: serde_json::Value =
        serde_json::from_slice(&stdout_of(&["defrag", "scenarios/serving-200.toml", "--json"])).unwrap();
    assert_eq!(json["steps"].as_array().unwrap().len(), 0);
    assert_eq!(json["before"]["free_gpus"], 64);
    for w in json["pending_whole"].as_array().unwrap() {
        assert_eq!(w["gpus"], 8);
        assert_eq!(w["fits_before"], true);
        assert_eq!(w["host"], "train-0");
        assert_eq!(w["switch_to_whole"].as_array().unwrap().len(), 0);
    }
}

#[test]
fn cli_apply_writes_the_fleet_after_and_a_second_pass_has_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("after.toml");
    let o = out.to_str().unwrap();
    stdout_of(&["defrag", FIXTURE, "--apply", "-o", o]);
    let sc = migplan::scenario::load(&out).unwrap();
    let orig = migplan::scenario::load(&fixture_path()).unwrap();
    let d = defrag(&orig.fleet, Goal::Auto).unwrap();
    sc.fleet.check_invariants().unwrap();
    for v in d.after_fleet.vms() {
        assert_eq!(sc.fleet.vm(v.id).unwrap().placement, v.placement, "VM {}", v.id);
    }
    let mig0 = orig.fleet.hosts.iter().position(|h| h.name == "mig-0").unwrap();
    assert_gang_admitted(&orig.fleet, &sc.fleet, mig0);
    assert_eq!(sc.fleet.hosts, d.after_fleet.hosts);
    let again: serde_json::Value = serde_json::from_slice(&stdout_of(&["defrag", o, "--json"])).unwrap();
    assert_eq!(again["steps"].as_array().unwrap().len(), 0);
    assert_eq!(again["pending_whole"].as_array().unwrap().len(), 0);
}

#[test]
fn cli_bad_input_is_one_line() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["defrag", FIXTURE, "--gpu", "nope/0"], &["--gpu", "nope/0"]),
        (
            &["defrag", FIXTURE, "--gpu", "shared-0/1"],
            &["--gpu", "shared mode"],
        ),
        (
            &["defrag", FIXTURE, "--free-gpus", "99"],
            &["--free-gpus", "99", "8 GPUs"],
        ),
        (&["defrag", "no-such-file.toml"], &["no-such-file.toml"]),
    ];
    for (args, want) in cases {
        let out = migplan().args(*args).output().unwrap();
        assert_one_line_error(&out, args, want);
    }
}

// --- the session ------------------------------------------------------------------------

/// A session refuses a gang that finds no room (it does not queue), so the fixture opens without
/// VM 20; `:defrag 2` asks for two free GPUs: VM 4's share moves and VM 10 restarts (as in
/// `a_pending_gang_gets_a_host_with_the_fewest_restarts`).
#[test]
fn defrag_through_the_session_reducer_previews_applies_and_undoes() {
    let mut s = Session::open(&fixture_path()).unwrap();
    let before = s.fleet().clone();
    assert!(matches!(
        parse_command(&s, ":defrag").unwrap(),
        Action::Defrag(Goal::Auto)
    ));
    let a = parse_command(&s, ":defrag 2").unwrap();
    assert!(matches!(a, Action::Defrag(Goal::FreeGpus(2))));
    let out = update(&mut s, a).unwrap();
    assert!(
        out.message()
            .contains("1 share move(s), 1 restart(s) at deploy, GPUs freed: mig-0/0 shared-0/2"),
        "{}",
        out.message()
    );
    assert_eq!(s.fleet(), &before, "a preview changes nothing");
    let pv = s.preview().unwrap();
    let steps: Vec<(VmId, StepKind)> = pv.schedule.steps.iter().map(|st| (st.vm, st.kind)).collect();
    assert_eq!(steps, vec![(4, StepKind::Move), (10, StepKind::RestartAtDeploy)]);
    let after = pv.after.clone();
    update(&mut s, Action::ApplyPlan).unwrap();
    s.fleet().check_invariants().unwrap();
    assert_eq!(s.fleet().hosts, after.hosts);
    assert!(s.preview().is_none());
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.fleet(), &before);
    // Discard drops the preview and changes nothing.
    let a = parse_command(&s, "defrag mig-1/0").unwrap();
    update(&mut s, a).unwrap();
    assert!(s.preview().is_some());
    update(&mut s, Action::DiscardPlan).unwrap();
    assert!(s.preview().is_none());
    assert_eq!(s.fleet(), &before);
    assert!(matches!(
        parse_command(&s, "defrag 3").unwrap(),
        Action::Defrag(Goal::FreeGpus(3))
    ));
    let e = parse_command(&s, "defrag nope").unwrap_err().to_string();
    assert!(e.contains("HOST/GPU"), "{e}");
    let e = update(&mut s, Action::Defrag(Goal::Gpu(2, 0)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("shared mode"), "{e}");
}

/// The planner's plan preview shows the defragmentation plan with each step's kind; `a` applies
/// it and `u` takes it back.
#[test]
fn the_tui_preview_shows_restarts_at_deploy() {
    use crate::common::Harness;
    use migplan::tui::theme::Theme;
    let session = Session::open(&fixture_path()).unwrap();
    let before = session.fleet().clone();
    let mut h = Harness::new(session, 160, 48, Theme::mono());
    h.keys(":defrag<Space>2<Enter>");
    let screen = h.screen();
    assert!(screen.contains("Plan · defragmentation"), "{screen}");
    assert!(
        screen.contains("1 share move(s), 1 restart(s) at deploy"),
        "{screen}"
    );
    assert!(screen.contains("restart at deploy VM 10"), "{screen}");
    assert!(screen.contains("move  VM 4"), "{screen}");
    h.keys("a");
    assert!(h.app.session.preview().is_none());
    assert!(h.app.session.fleet().vm(10).unwrap().placement != before.vm(10).unwrap().placement);
    h.keys("u");
    assert_eq!(h.app.session.fleet(), &before);
}

/// A larger fleet (16 hosts x 2 A100s, tenants at random starts): the pass frees one more GPU
/// and then two more within its budget, and the plans replay with the invariants after every
/// step. Where the brute force cannot follow, the counts are checked against a lower bound: at
/// least the tenants of the least-occupied used GPU restart.
#[test]
fn a_larger_fleet_frees_gpus_within_the_budget() {
    let mut rng = StdRng::seed_from_u64(7);
    let f = random_fleet(&mut rng, 16, 2, 60);
    let free_now = free_gpus(&f);
    let fewest_tenants = f
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| g.is_used())
        .map(|g| g.gis.iter().map(|r| r.vm).collect::<BTreeSet<_>>().len())
        .min()
        .unwrap();
    for more in 1..=2 {
        let d = defrag(&f, Goal::FreeGpus(free_now + more)).unwrap();
        assert!(d.exact && d.short.is_none(), "{:?}", d.short);
        assert_eq!(d.after.free_gpus, free_now + more);
        assert!(d.restarts.len() >= fewest_tenants);
        replay(&f, &d);
        eprintln!(
            "16 x 2 A100s, {} VMs, {free_now} GPUs free: {more} more with {} restart(s)",
            f.vms().count(),
            d.restarts.len()
        );
    }
}

/// In the simulator a restart at deploy is logged and counted as a restart, not as a migration;
/// the share move of the same plan is a migration (within its host: nothing copied).
#[test]
fn the_simulator_counts_restarts_apart_from_migrations() {
    use migplan::sim::{EventKind, Simulator};
    let sc = migplan::scenario::load(&fixture_path()).unwrap();
    let ff = migplan::policy::by_name("ff", &sc.policy).unwrap();
    let mut sim = Simulator::new(&sc, ff).unwrap();
    sim.set_window(0.0, 3600.0);
    let d = defrag(sim.fleet(), Goal::FreeGpus(2)).unwrap();
    sim.apply_plan(&d.plan).unwrap();
    sim.fleet().check_invariants().unwrap();
    let restarts: Vec<VmId> = sim
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Restart { vm, .. } => Some(vm),
            _ => None,
        })
        .collect();
    let migrations: Vec<VmId> = sim
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Migration { vm, .. } => Some(vm),
            _ => None,
        })
        .collect();
    assert_eq!((restarts, migrations), (vec![10], vec![4]));
    let m = sim.metrics();
    assert_eq!((m.restarts, m.plans), (1, 1));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["restarts"], 1);
}
