//! The executor of §5.4 (`plan::schedule_with`, `plan::execute`): ready steps, deterministic
//! order, parking, discarded plans. Every schedule is replayed step by step on the fleet, checking
//! before each step that it is a valid live migration (target slices free with the VM's own old
//! GIs counted as taken; cores and RAM free on another host) and after each step the fleet's
//! invariants (no two GIs share a memory slice, every GI starts at a permitted start of its
//! profile, cores and RAM within each host's capacity).

use crate::common::fleet::{self as common, at};
use migplan::catalog::embedded;
use migplan::executor::{self as plan, PlanError, Schedule, Step, StepKind};
use migplan::fleet::{Fleet, GiSlot, Host, Placement, Vm, VmId};
use migplan::plan::Plan;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const DELTA: f64 = 10.0;

fn a100_hosts(spec: &[(u32, usize)]) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let hosts = spec
        .iter()
        .enumerate()
        .map(|(i, &(cores, gpus))| Host::new(format!("h{i}"), cores, cores * 8, vec![a100; gpus], 0))
        .collect();
    Fleet::new(c, hosts)
}

fn vm(id: VmId, profiles: &[&str], cores: u32) -> Vm {
    common::job(id, "a100-40gb", profiles, cores, cores * 4)
}

fn put(f: &mut Fleet, id: VmId, profiles: &[&str], cores: u32, p: Placement) {
    common::put(f, vm(id, profiles, cores), p);
}

/// Replays a schedule one step at a time with the checks of the module comment, then checks that
/// every VM of the plan sits at its target.
fn replay(fleet: &mut Fleet, plan: &Plan, s: &Schedule) {
    for step in &s.steps {
        assert!(
            plan::is_ready(fleet, step.vm, &step.to),
            "step {step:?} is not a valid live migration now"
        );
        assert_eq!(fleet.vm(step.vm).unwrap().placement, step.from, "{step:?}");
        let one = Schedule {
            steps: vec![step.clone()],
            ..Schedule::default()
        };
        plan::execute(fleet, &one).unwrap();
        fleet.check_invariants().unwrap();
    }
    for (id, to) in &plan.targets {
        assert_eq!(fleet.vm(*id).unwrap().placement.as_ref(), Some(to), "VM {id}");
    }
}

fn kinds(s: &Schedule) -> Vec<(VmId, StepKind)> {
    s.steps.iter().map(|st| (st.vm, st.kind)).collect()
}

fn plan_of(targets: &[(VmId, Placement)]) -> Plan {
    Plan {
        targets: targets.iter().cloned().collect(),
        origin: "test".into(),
        ..Default::default()
    }
}

/// Fig. 1(c) on GPU 0 of `host`: a 3g.20gb at 0 and three 1g.5gb at 4, 5, 6 (slice 7 is no start
/// of 1g.5gb, so it is lost); the compacted target puts the 1g.5gb at 0, 1, 2, a new 1g.5gb
/// (pending VM 5) at 3 and the 3g.20gb at 4.
fn fig1c(f: &mut Fleet, host: usize) -> Plan {
    put(f, 1, &["3g.20gb"], 12, at(host, &[(0, 0)]));
    put(f, 2, &["1g.5gb"], 4, at(host, &[(0, 4)]));
    put(f, 3, &["1g.5gb"], 4, at(host, &[(0, 5)]));
    put(f, 4, &["1g.5gb"], 4, at(host, &[(0, 6)]));
    f.add_pending(vm(5, &["1g.5gb"], 4)).unwrap();
    plan_of(&[
        (1, at(host, &[(0, 4)])),
        (2, at(host, &[(0, 0)])),
        (3, at(host, &[(0, 1)])),
        (4, at(host, &[(0, 2)])),
        (5, at(host, &[(0, 3)])),
    ])
}

#[test]
fn fig1c_cycle_parks_the_3g_on_the_other_gpu() {
    let mut f = a100_hosts(&[(80, 2)]);
    let plan = fig1c(&mut f, 0);
    // Every step is blocked: the 1g.5gb targets lie under the 3g.20gb and vice versa.
    for (id, to) in &plan.targets {
        assert!(!plan::is_ready(&f, *id, to), "VM {id} should be blocked");
    }
    let before = f.clone();
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(f, before, "schedule works on a copy");
    assert_eq!(
        kinds(&s),
        vec![
            (1, StepKind::Park),
            (2, StepKind::Move),
            (3, StepKind::Move),
            (4, StepKind::Move),
            (1, StepKind::Move),
            (5, StepKind::Start),
        ]
    );
    // Parked within the host, on the other GPU: one delta.
    assert_eq!(s.steps[0].to.host, 0);
    assert_eq!(s.steps[0].to.gis[0].gpu, 1);
    assert_eq!((s.parks_within(), s.parks_across()), (1, 0));
    assert_eq!(s.parking_penalty, DELTA);
    replay(&mut f, &plan, &s);
    assert_eq!(f.hosts[0].gpus[0].occ.mask, 0xFF);
    assert!(f.hosts[0].gpus[1].occ.is_empty());
    assert!(f.pending().is_empty());
}

#[test]
fn fig1c_on_a_lone_gpu_is_discarded_and_nothing_changes() {
    // One GPU, and a second host whose cores are all taken: no parking place anywhere.
    let mut f = a100_hosts(&[(80, 1), (8, 1)]);
    let plan = fig1c(&mut f, 0);
    put(&mut f, 9, &["1g.5gb"], 8, at(1, &[(0, 0)]));
    let before = f.clone();
    let e = plan::schedule_with(&f, &plan, DELTA).unwrap_err();
    assert_eq!(
        e,
        PlanError::Stuck {
            remaining: vec![1, 2, 3, 4, 5]
        }
    );
    assert_eq!(f, before);
    // The plan's target state itself is valid: only the order is impossible.
    assert!(e.to_string().contains("no parking place"), "{e}");
}

#[test]
fn parking_on_another_host_costs_two_delta() {
    // Same cycle on a one-GPU host; host 1 has a free GPU and cores: the 3g.20gb parks there.
    let mut f = a100_hosts(&[(80, 1), (80, 1)]);
    let plan = fig1c(&mut f, 0);
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(s.steps[0].kind, StepKind::Park);
    assert_eq!(s.steps[0].vm, 1);
    assert_eq!(s.steps[0].to.host, 1);
    assert_eq!((s.parks_within(), s.parks_across()), (0, 1));
    assert_eq!(s.parking_penalty, 2.0 * DELTA);
    replay(&mut f, &plan, &s);
    assert!(!f.hosts[1].is_active(), "the parking host is left empty again");
}

#[test]
fn parking_avoids_slices_cores_and_ram_that_remaining_steps_need() {
    // Host 1 has a free GPU, but a pending 7g.40gb (VM 6) targets it: the 3g.20gb may not park
    // there. Host 2 has a free GPU, but VM 7 (pending, 60 of its 64 cores) is bound for it and
    // would leave too few cores. Host 3 is the only parking place.
    let mut f = a100_hosts(&[(80, 1), (80, 1), (64, 2), (80, 1)]);
    let mut plan = fig1c(&mut f, 0);
    f.add_pending(vm(6, &["7g.40gb"], 28)).unwrap();
    f.add_pending(vm(7, &["1g.5gb"], 60)).unwrap();
    plan.targets.insert(6, at(1, &[(0, 0)]));
    plan.targets.insert(7, at(2, &[(0, 0)]));
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    let park: Vec<&Step> = s.steps.iter().filter(|st| st.kind == StepKind::Park).collect();
    assert_eq!(park.len(), 1);
    assert_eq!((park[0].vm, park[0].to.host), (1, 3));
    replay(&mut f, &plan, &s);
}

#[test]
fn swap_of_two_whole_gpus_parks_one_vm() {
    // Two 7g.40gb VMs swap GPUs within host 0; host 1 has a free GPU.
    let mut f = a100_hosts(&[(80, 2), (80, 1)]);
    put(&mut f, 1, &["7g.40gb"], 28, at(0, &[(0, 0)]));
    put(&mut f, 2, &["7g.40gb"], 28, at(0, &[(1, 0)]));
    let plan = plan_of(&[(1, at(0, &[(1, 0)])), (2, at(0, &[(0, 0)]))]);
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(
        kinds(&s),
        vec![(1, StepKind::Park), (2, StepKind::Move), (1, StepKind::Move)]
    );
    assert_eq!(s.steps[0].to.host, 1);
    assert_eq!(s.parking_penalty, 2.0 * DELTA);
    replay(&mut f, &plan, &s);
}

#[test]
fn swap_across_hosts_blocked_by_cores_parks_on_a_third_host() {
    // Hosts 0 and 1 have 16 cores each, all used; their VMs swap. Slices are free on both
    // targets (the other GPU), but neither host has cores for the incoming VM.
    let mut f = a100_hosts(&[(16, 2), (16, 2), (80, 1)]);
    put(&mut f, 1, &["4g.20gb"], 16, at(0, &[(0, 0)]));
    put(&mut f, 2, &["4g.20gb"], 16, at(1, &[(0, 0)]));
    let plan = plan_of(&[(1, at(1, &[(1, 0)])), (2, at(0, &[(1, 0)]))]);
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(
        kinds(&s),
        vec![(1, StepKind::Park), (2, StepKind::Move), (1, StepKind::Move)]
    );
    assert_eq!(s.steps[0].to.host, 2);
    replay(&mut f, &plan, &s);
    // Without the third host the swap cannot run.
    let mut g = a100_hosts(&[(16, 2), (16, 2)]);
    put(&mut g, 1, &["4g.20gb"], 16, at(0, &[(0, 0)]));
    put(&mut g, 2, &["4g.20gb"], 16, at(1, &[(0, 0)]));
    assert!(matches!(
        plan::schedule_with(&g, &plan, DELTA),
        Err(PlanError::Stuck { .. })
    ));
}

#[test]
fn a_vm_blocked_by_its_own_gis_is_a_one_step_cycle() {
    // VM 1 holds a 2g.10gb at 0 and a 1g.5gb at 2; the target swaps them (1g.5gb at 0, 2g.10gb
    // at 2): the new 2g.10gb lies on the VM's own old 1g.5gb, which stays until the migration
    // completes. The VM parks on GPU 1 and comes back.
    let mut f = a100_hosts(&[(80, 2)]);
    put(&mut f, 1, &["2g.10gb", "1g.5gb"], 12, at(0, &[(0, 0), (0, 2)]));
    let plan = plan_of(&[(1, at(0, &[(0, 2), (0, 0)]))]);
    assert!(!plan::is_ready(&f, 1, &plan.targets[&1]));
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(kinds(&s), vec![(1, StepKind::Park), (1, StepKind::Move)]);
    assert_eq!(s.parking_penalty, DELTA);
    replay(&mut f, &plan, &s);
}

#[test]
fn a_chain_runs_back_to_front_without_parking() {
    // VM 1 goes where VM 2 is, VM 2 where VM 3 is, VM 3 to a free GPU of host 1.
    let mut f = a100_hosts(&[(80, 2), (80, 1)]);
    put(&mut f, 1, &["3g.20gb"], 12, at(0, &[(0, 0)]));
    put(&mut f, 2, &["3g.20gb"], 12, at(0, &[(1, 0)]));
    put(&mut f, 3, &["3g.20gb"], 12, at(0, &[(1, 4)]));
    let plan = plan_of(&[
        (1, at(0, &[(1, 0)])),
        (2, at(0, &[(1, 4)])),
        (3, at(1, &[(0, 0)])),
    ]);
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    assert_eq!(
        kinds(&s),
        vec![(3, StepKind::Move), (2, StepKind::Move), (1, StepKind::Move)]
    );
    assert_eq!(s.parking_penalty, 0.0);
    replay(&mut f, &plan, &s);
}

#[test]
fn ready_steps_run_lowest_vm_first_and_schedules_repeat() {
    // VMs 2, 5, 9 can move at once; VM 1 waits for VM 3's slices.
    let mut f = a100_hosts(&[(80, 2), (80, 2)]);
    put(&mut f, 1, &["1g.5gb"], 4, at(0, &[(0, 0)]));
    put(&mut f, 3, &["1g.10gb"], 4, at(0, &[(0, 2)]));
    put(&mut f, 9, &["1g.5gb"], 4, at(0, &[(1, 0)]));
    put(&mut f, 5, &["1g.5gb"], 4, at(0, &[(1, 1)]));
    put(&mut f, 2, &["1g.5gb"], 4, at(0, &[(1, 2)]));
    let plan = plan_of(&[
        (9, at(1, &[(0, 0)])),
        (1, at(0, &[(0, 2)])),
        (5, at(1, &[(0, 1)])),
        (3, at(1, &[(1, 0)])),
        (2, at(1, &[(0, 2)])),
    ]);
    let s = plan::schedule_with(&f, &plan, DELTA).unwrap();
    let order: Vec<VmId> = s.steps.iter().map(|st| st.vm).collect();
    assert_eq!(order, vec![2, 3, 1, 5, 9]);
    for _ in 0..3 {
        assert_eq!(plan::schedule_with(&f, &plan, DELTA).unwrap(), s);
    }
    replay(&mut f, &plan, &s);
}

#[test]
fn invalid_target_states_are_refused() {
    let mut f = a100_hosts(&[(80, 1)]);
    put(&mut f, 1, &["3g.20gb"], 12, at(0, &[(0, 0)]));
    put(&mut f, 2, &["3g.20gb"], 12, at(0, &[(0, 4)]));
    // VM 1 onto VM 2, which stays.
    let plan = plan_of(&[(1, at(0, &[(0, 4)]))]);
    assert!(matches!(
        plan::schedule_with(&f, &plan, DELTA),
        Err(PlanError::Invalid(1, _))
    ));
    // A start slice 3g.20gb does not permit.
    let plan = plan_of(&[(1, at(0, &[(0, 2)]))]);
    assert!(matches!(
        plan::schedule_with(&f, &plan, DELTA),
        Err(PlanError::Invalid(1, _))
    ));
    // An unknown VM.
    let plan = plan_of(&[(42, at(0, &[(0, 0)]))]);
    assert!(matches!(
        plan::schedule_with(&f, &plan, DELTA),
        Err(PlanError::Invalid(42, _))
    ));
    // A target equal to the placement is no step at all.
    let plan = plan_of(&[(1, at(0, &[(0, 0)]))]);
    assert!(plan::schedule_with(&f, &plan, DELTA).unwrap().steps.is_empty());
}

/// Random fleets and random target states: every schedule the executor returns replays with
/// valid steps and invariants after each one, every VM parks at most once, at most 2 steps per
/// VM, and the penalty matches the parking moves; stuck plans are reported, never half-run.
#[test]
fn random_rearrangements_replay_cleanly() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let profiles = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"];
    let mut rng = StdRng::seed_from_u64(4);
    let (mut ok, mut parked, mut stuck) = (0, 0, 0);
    for _ in 0..300 {
        let hosts = rng.gen_range(1..=3);
        let mut f = a100_hosts(&vec![(48, 2); hosts]);
        // Fill with random VMs by FF.
        for id in 1..=rng.gen_range(2..=10u64) {
            let n = if rng.gen_bool(0.3) { 2 } else { 1 };
            let ps: Vec<&str> = (0..n).map(|_| *profiles.choose(&mut rng).unwrap()).collect();
            let v = vm(id, &ps, 4 * rng.gen_range(1..=4));
            if let Some(p) = f.ff_placement(&v) {
                f.add_placed(v, p).unwrap();
            } else if rng.gen_bool(0.5) {
                f.add_pending(v).unwrap();
            }
        }
        // A random target state: unplace everything and re-place in random order on random
        // hosts at random free starts.
        let mut target = f.clone();
        let ids: Vec<VmId> = f.vms().map(|v| v.id).collect();
        for &id in &ids {
            if target.vm(id).unwrap().placement.is_some() {
                target.unplace(id).unwrap();
            }
        }
        let mut order = ids.clone();
        order.shuffle(&mut rng);
        let mut plan = Plan::default();
        for id in order {
            let v = target.vm(id).unwrap().clone();
            let mut hs: Vec<usize> = (0..hosts).collect();
            hs.shuffle(&mut rng);
            let mut done = false;
            'h: for h in hs {
                for _ in 0..20 {
                    let gis = v
                        .gis
                        .iter()
                        .map(|g| {
                            let prof = &c.model(a100).profiles[g.profile];
                            GiSlot {
                                gpu: rng.gen_range(0..2),
                                start: *prof.starts.choose(&mut rng).unwrap(),
                            }
                        })
                        .collect();
                    let p = Placement { host: h, gis };
                    if target.place(id, p.clone()).is_ok() {
                        plan.targets.insert(id, p);
                        done = true;
                        break 'h;
                    }
                }
            }
            // A running VM that found no random spot goes back where it was (never evicted).
            if !done {
                if let Some(p) = v_placement(&f, id) {
                    if target.place(id, p.clone()).is_ok() {
                        plan.targets.insert(id, p);
                    }
                }
            }
        }
        // Keep only plans whose target state is complete for running VMs.
        if f.vms()
            .any(|v| v.placement.is_some() && !plan.targets.contains_key(&v.id))
        {
            continue;
        }
        let before = f.clone();
        match plan::schedule_with(&f, &plan, DELTA) {
            Ok(s) => {
                ok += 1;
                let parks: Vec<VmId> = s
                    .steps
                    .iter()
                    .filter(|st| st.kind == StepKind::Park)
                    .map(|st| st.vm)
                    .collect();
                let mut uniq = parks.clone();
                uniq.sort_unstable();
                uniq.dedup();
                assert_eq!(uniq.len(), parks.len(), "a VM parked twice");
                if !parks.is_empty() {
                    parked += 1;
                }
                assert!(s.steps.len() <= 2 * plan.targets.len());
                let want = (s.parks_within() as f64 + 2.0 * s.parks_across() as f64) * DELTA;
                assert_eq!(s.parking_penalty, want);
                assert_eq!(s.parks_within() + s.parks_across(), parks.len());
                replay(&mut f, &plan, &s);
            }
            Err(PlanError::Stuck { .. }) => {
                stuck += 1;
                assert_eq!(f, before);
            }
            Err(e) => panic!("a valid target state was refused: {e}"),
        }
    }
    assert!(ok > 100, "ok {ok}");
    assert!(parked > 5, "parked {parked}");
    eprintln!("random plans: {ok} executable ({parked} with parking), {stuck} stuck");
}

fn v_placement(f: &Fleet, id: VmId) -> Option<Placement> {
    f.vm(id).and_then(|v| v.placement.clone())
}
