//! OrigaMIG's triggers (§5.1) and neighborhood selection (Algorithm 1, §5.2) on hand-built
//! fleets, under the paper preset (Algorithm 1 as written, δ = 10), which the hand-computed
//! neighborhoods follow.

use crate::common::fleet::mig_vm as vm;
use migplan::catalog::embedded;
use migplan::fleet::{Fleet, GiSlot, Host, Placement, Vm, VmId};
use migplan::mig;
use migplan::policy::origamig::neighborhood::{self, can_empty};
use migplan::policy::origamig::triggers::{gap, CallKind, Class, Triggers};
use migplan::policy_settings::OrigamigSettings;

fn hosts(models: &[&[&str]]) -> Fleet {
    let c = embedded();
    let hs = models
        .iter()
        .enumerate()
        .map(|(i, gpus)| {
            Host::new(
                format!("h{i}"),
                80,
                512,
                gpus.iter().map(|m| c.model_id(m).unwrap()).collect(),
                0,
            )
        })
        .collect();
    Fleet::new(c, hs)
}

fn a100s(n: usize) -> Fleet {
    hosts(&vec![&["a100-40gb", "a100-40gb"][..]; n])
}

fn put(f: &mut Fleet, id: VmId, profiles: &[&str], host: usize, gis: &[(usize, u8)]) {
    crate::common::fleet::put(
        f,
        vm(id, "a100-40gb", profiles),
        crate::common::fleet::at(host, gis),
    );
    f.check_invariants().unwrap();
}

fn a100() -> Class {
    Class::Gpu("a100-40gb".into())
}

#[test]
fn gap_of_eq17_follows_every_change() {
    let mut f = hosts(&[&["a100-40gb", "a100-40gb"], &["a100-40gb", "a30-24gb"]]);
    let a30 = Class::Gpu("a30-24gb".into());
    assert_eq!(gap(&f, &a100()), 0);
    // Three A100 GPUs active with 1 + 1 + 4 = 6 slices: 3 - ceil(6/8) = 2.
    put(&mut f, 1, &["1g.5gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["1g.5gb"], 0, &[(1, 0)]);
    put(&mut f, 3, &["3g.20gb"], 1, &[(0, 4)]);
    assert_eq!(gap(&f, &a100()), 2);
    assert_eq!(gap(&f, &a30), 0);
    // A30 (|U| = 4): one GPU with 1 slice: 1 - 1 = 0.
    f.add_placed(
        vm(4, "a30-24gb", &["1g.6gb"]),
        Placement {
            host: 1,
            gis: vec![GiSlot { gpu: 1, start: 3 }],
        },
    )
    .unwrap();
    assert_eq!(gap(&f, &a30), 0);
    // A move that empties a GPU lowers the gap; a removal of the last GI of a GPU too.
    f.move_vm(
        2,
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 0, start: 1 }],
        },
    )
    .unwrap();
    assert_eq!(gap(&f, &a100()), 1);
    f.remove(3).unwrap();
    assert_eq!(gap(&f, &a100()), 0);
    f.unplace(1).unwrap();
    assert_eq!(gap(&f, &a100()), 0);
    f.check_invariants().unwrap();
    assert_eq!(f.gap_counters().placed_slices.iter().sum::<u32>(), 2);
}

#[test]
fn gap_of_eq18_for_hosts_without_gpus() {
    let mut f = hosts(&[&[], &[], &[], &["a100-40gb"]]);
    assert_eq!(Class::all(&f), vec![a100(), Class::NoGpu]);
    let cpu = |id, cores, ram| Vm {
        cores,
        ram_gb: ram,
        gis: vec![],
        ..vm(id, "a100-40gb", &[])
    };
    let at = |host| Placement { host, gis: vec![] };
    f.add_placed(cpu(1, 10, 100), at(0)).unwrap();
    f.add_placed(cpu(2, 10, 100), at(1)).unwrap();
    f.add_placed(cpu(3, 10, 100), at(2)).unwrap();
    // 3 active, max(ceil(30/80), ceil(300/512)) = 1.
    assert_eq!(gap(&f, &Class::NoGpu), 2);
    f.move_vm(3, at(0)).unwrap();
    assert_eq!(gap(&f, &Class::NoGpu), 1);
    // RAM binds: 600 GB on 512 GB hosts needs two.
    f.add_placed(cpu(4, 10, 300), at(1)).unwrap();
    assert_eq!(gap(&f, &Class::NoGpu), 0);
    f.check_invariants().unwrap();
}

#[test]
fn triggers_admission_first_then_the_largest_gap() {
    let s = OrigamigSettings::paper();
    let mut f = a100s(3);
    put(&mut f, 1, &["1g.5gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["1g.5gb"], 1, &[(0, 0)]);
    let mut t = Triggers::new();
    // Γ = 2 - 1 = 1 >= θ = 1.
    assert_eq!(t.next_call(&f, &s), Some(CallKind::Consolidation(a100())));
    f.add_pending(vm(3, "a100-40gb", &["7g.40gb"])).unwrap();
    assert_eq!(t.next_call(&f, &s), Some(CallKind::Admission));
    f.reject_pending(3).unwrap();
    // θ = 2 is not reached.
    let s2 = OrigamigSettings {
        theta: 2,
        ..s.clone()
    };
    assert_eq!(t.next_call(&f, &s2), None);
}

#[test]
fn a_call_that_changes_nothing_disables_the_class_until_the_gap_grows_or_a_vm_leaves() {
    let s = OrigamigSettings::paper();
    let mut f = a100s(3);
    put(&mut f, 1, &["1g.5gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["1g.5gb"], 1, &[(0, 0)]);
    let mut t = Triggers::new();
    let kind = t.next_call(&f, &s).unwrap();
    t.after_call(&f, &kind, false);
    assert!(t.is_disabled(&a100()));
    assert_eq!(t.next_call(&f, &s), None);
    // An arrival that fills a new GPU keeps Γ at 1: still disabled.
    put(&mut f, 3, &["7g.40gb"], 0, &[(1, 0)]);
    assert_eq!(gap(&f, &a100()), 1, "3 GPUs, 10 slices: 3 - 2");
    assert_eq!(t.next_call(&f, &s), None, "Γ did not grow");
    put(&mut f, 4, &["1g.5gb"], 2, &[(0, 0)]);
    assert_eq!(gap(&f, &a100()), 2);
    assert_eq!(t.next_call(&f, &s), Some(CallKind::Consolidation(a100())));
    // Disabled again; a departure from a host of the class enables it.
    t.after_call(&f, &CallKind::Consolidation(a100()), false);
    assert_eq!(t.next_call(&f, &s), None);
    let gone = f.remove(4).unwrap();
    t.on_departure(&f, &gone, Some(2));
    assert!(!t.is_disabled(&a100()));
    assert_eq!(t.next_call(&f, &s), Some(CallKind::Consolidation(a100())));
    // A call that changed something keeps the class enabled.
    t.after_call(&f, &CallKind::Consolidation(a100()), true);
    assert!(!t.is_disabled(&a100()));
}

#[test]
fn triggers_are_checked_every_ten_seconds() {
    let s = OrigamigSettings::paper();
    let mut t = Triggers::new();
    assert!(t.due(0.0, &s));
    assert!(!t.due(5.0, &s));
    assert!(t.due(10.0, &s));
    assert!(!t.due(19.99, &s));
    assert!(t.due(20.0, &s));
}

/// The admission fleet: h0 has a 1g.5gb on each GPU; h1 a 3g.20gb and an empty GPU; h2 has
/// three small VMs; h3 and h4 are off. Pending: VM 10 (7g.40gb, oldest), VM 11 (two 3g.20gb).
fn admission_fleet() -> Fleet {
    let mut f = a100s(5);
    put(&mut f, 1, &["1g.5gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["1g.5gb"], 0, &[(1, 0)]);
    put(&mut f, 3, &["3g.20gb"], 1, &[(0, 0)]);
    put(&mut f, 4, &["1g.5gb"], 2, &[(0, 0)]);
    put(&mut f, 5, &["1g.5gb"], 2, &[(0, 1)]);
    put(&mut f, 6, &["2g.10gb"], 2, &[(1, 0)]);
    f.add_pending(vm(10, "a100-40gb", &["7g.40gb"])).unwrap();
    f.add_pending(vm(11, "a100-40gb", &["3g.20gb", "3g.20gb"]))
        .unwrap();
    f
}

#[test]
fn admission_call_adds_fitting_hosts_fewest_vms_first_and_an_off_host() {
    let f = admission_fleet();
    let n = neighborhood::admission(&f, &OrigamigSettings::paper());
    // VM 10 fits only h1 (its empty GPU); VM 11 fits h1 (1 VM), h0 (2 VMs), h2 (3 VMs); its first
    // host h1 is already in; h3 is the first off host that fits VM 10.
    assert_eq!(n.hosts, vec![1, 0, 2, 3]);
    assert_eq!(n.pending, vec![10, 11]);
    assert_eq!(n.n_vms, 6 + 2);
    assert!(n.rejected.is_empty());
}

#[test]
fn admission_call_respects_mmax_with_a_slot_for_the_off_host() {
    let f = admission_fleet();
    let s = OrigamigSettings {
        m_max: 2,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::admission(&f, &s);
    assert_eq!(n.hosts, vec![1, 3]);
    assert_eq!(n.pending, vec![10, 11]);
}

#[test]
fn nmax_skips_hosts_except_the_first_of_the_oldest_pending_vm() {
    let f = admission_fleet();
    // |N̂| of h1 with VM 10 is 2 > 1, yet h1 joins; VM 11 and every other host would exceed it.
    let s = OrigamigSettings {
        n_max: 1,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::admission(&f, &s);
    assert_eq!(n.hosts, vec![1, 3]);
    assert_eq!(n.pending, vec![10]);
    assert_eq!(n.n_vms, 2);
    // With room for 4: h1 (2 with VM 10), VM 11 joins (3); h0 would add 2 -> skipped; h2 adds
    // 3 -> skipped; the fill finds nothing smaller.
    let s = OrigamigSettings {
        n_max: 4,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::admission(&f, &s);
    assert_eq!(n.hosts, vec![1, 3]);
    assert_eq!(n.pending, vec![10, 11]);
}

#[test]
fn admission_rejects_what_no_host_can_ever_take_and_sorts_by_free_slices() {
    let mut f = admission_fleet();
    // Fill h1's free GPU with a 4g.20gb: now no active host's free resources fit the 7g.40gb.
    put(&mut f, 7, &["4g.20gb"], 1, &[(1, 0)]);
    let mut huge = vm(12, "a100-40gb", &["1g.5gb"]);
    huge.cores = 200;
    f.add_pending(huge).unwrap();
    let n = neighborhood::admission(&f, &OrigamigSettings::paper());
    assert_eq!(n.rejected, vec![12]);
    // VM 10 (line 8): active hosts that would fit it empty, by free memory slices: h0 has 14
    // free, h2 12, h1 8. VM 11 then fits h0 (its first host, already in M̂), h1 and h2; the off
    // host h3 comes last.
    assert_eq!(n.hosts, vec![0, 2, 1, 3]);
    assert_eq!(n.pending, vec![10, 11]);
}

#[test]
fn admission_with_an_empty_queue_selects_nothing() {
    let mut f = admission_fleet();
    f.reject_pending(10).unwrap();
    f.reject_pending(11).unwrap();
    let n = neighborhood::admission(&f, &OrigamigSettings::paper());
    assert!(n.is_empty() && n.hosts.is_empty());
}

/// h0: one 1g.5gb; h1: four 1g.5gb on GPU 0; h2: two 7g.40gb; h3: two 4g.20gb.
fn consolidation_fleet() -> Fleet {
    let mut f = a100s(5);
    put(&mut f, 1, &["1g.5gb"], 0, &[(0, 0)]);
    for (i, z) in (2..6).zip(0..4) {
        put(&mut f, i, &["1g.5gb"], 1, &[(0, z)]);
    }
    put(&mut f, 6, &["7g.40gb"], 2, &[(0, 0)]);
    put(&mut f, 7, &["7g.40gb"], 2, &[(1, 0)]);
    put(&mut f, 8, &["4g.20gb"], 3, &[(0, 0)]);
    put(&mut f, 9, &["4g.20gb"], 3, &[(1, 0)]);
    f
}

#[test]
fn consolidation_keeps_sources_worth_emptying_and_checks_they_can_be_emptied() {
    let f = consolidation_fleet();
    let c = embedded();
    let m = c.model(c.model_id("a100-40gb").unwrap());
    // Line 18 by hand: h0: 50 + 20 = 70 > CF 12 + 2*10 = 32 (kept); h1: 70 > 7 + 80 (dropped);
    // h2: 90 > 0 + 40 (kept); h3: 90 > 7 + 7 + 40 (kept).
    assert_eq!(mig::cf(m, &f.hosts[0].gpus[0].occ), 12);
    assert_eq!(mig::cf(m, &f.hosts[1].gpus[0].occ), 7);
    assert_eq!(mig::cf(m, &f.hosts[3].gpus[0].occ), 7);
    let n = neighborhood::consolidation(&f, &a100(), &OrigamigSettings::paper());
    // S = h0, h2, h3 (fewest VMs first); R = h1. M̂ = S then R. Emptying into h1: h0's 1g.5gb
    // and one of h2's 7g.40gb fit, the second does not: h3, then h2 leave S and M̂.
    assert_eq!(n.hosts, vec![0, 1]);
    assert_eq!(n.sources, vec![0]);
    assert_eq!(n.n_vms, 5);
    assert!(can_empty(&f, &[0], &[1]));
    assert!(!can_empty(&f, &[0, 2], &[1]));
}

#[test]
fn consolidation_takes_at_most_half_of_mmax_as_sources() {
    let f = consolidation_fleet();
    let s = OrigamigSettings {
        m_max: 2,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::consolidation(&f, &a100(), &s);
    assert_eq!(n.hosts, vec![0, 1]);
    assert_eq!(n.sources, vec![0]);
    // Nmax 3: h0 (1 VM) and h2 (2 more) join, h3 would make 5 and h1 (the only receiver) 7:
    // skipped. With no receiver in M̂, h2 then h0 leave S: the call is not made.
    let s = OrigamigSettings {
        n_max: 3,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::consolidation(&f, &a100(), &s);
    assert!(n.is_empty() && n.hosts.is_empty());
    // Nmax 9 takes all four hosts (1 + 2 + 2 + 4 VMs); h3 and h2 then leave S and M̂.
    let s = OrigamigSettings {
        n_max: 9,
        ..OrigamigSettings::paper()
    };
    let n = neighborhood::consolidation(&f, &a100(), &s);
    assert_eq!(n.hosts, vec![0, 1]);
}

#[test]
fn a_source_removed_from_s_leaves_the_neighborhood() {
    // The consolidation fleet plus h4, a receiver with four 1g.5gb on GPU 0 and one on GPU 1
    // (line 18 drops it), and Mmax = 4: S = h0, h2 (h3, beyond ½Mmax, is neither a source nor a
    // receiver), R = h1, h4 (12 and 11 free slices). M̂ = h0, h2, h1, h4: h2's second 7g.40gb
    // finds no free GPU (h1's GPU 1 takes the first), so h2 leaves S and M̂ (lines 21-22), and
    // M̂ is not filled again.
    let mut f = consolidation_fleet();
    for (i, z) in (10..14).zip(0..4) {
        put(&mut f, i, &["1g.5gb"], 4, &[(0, z)]);
    }
    put(&mut f, 14, &["1g.5gb"], 4, &[(1, 0)]);
    let s = OrigamigSettings {
        m_max: 4,
        ..OrigamigSettings::paper()
    };
    assert!(!can_empty(&f, &[0, 2], &[1, 4]));
    let n = neighborhood::consolidation(&f, &a100(), &s);
    assert_eq!(n.sources, vec![0]);
    assert_eq!(n.hosts, vec![0, 1, 4]);
    assert_eq!(n.n_vms, 1 + 4 + 5);
    // With `keep_removed_sources` (the earlier reading) h2 stays in M̂ as a receiver.
    let keep = OrigamigSettings {
        keep_removed_sources: true,
        ..s
    };
    let n = neighborhood::consolidation(&f, &a100(), &keep);
    assert_eq!(n.sources, vec![0]);
    assert_eq!(n.hosts, vec![0, 2, 1, 4]);
    assert_eq!(n.n_vms, 1 + 2 + 4 + 5);
}

#[test]
fn consolidation_without_an_emptiable_source_selects_nothing() {
    // Two hosts, each with one 7g.40gb on each GPU: both are sources, neither can be emptied.
    let mut f = a100s(2);
    put(&mut f, 1, &["7g.40gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["7g.40gb"], 0, &[(1, 0)]);
    put(&mut f, 3, &["7g.40gb"], 1, &[(0, 0)]);
    put(&mut f, 4, &["7g.40gb"], 1, &[(1, 0)]);
    let n = neighborhood::consolidation(&f, &a100(), &OrigamigSettings::paper());
    assert!(n.is_empty() && n.hosts.is_empty() && n.sources.is_empty());
}

#[test]
fn sources_dropped_from_s_receive_the_vms_of_the_others() {
    // Every active host is a source (one small VM each) and R is empty: the last source leaves
    // S but stays in M̂ to receive the first one's VM (the module notes' one exception).
    let mut f = a100s(3);
    put(&mut f, 1, &["2g.10gb"], 0, &[(0, 0)]);
    put(&mut f, 2, &["1g.5gb"], 1, &[(0, 0)]);
    let n = neighborhood::consolidation(&f, &a100(), &OrigamigSettings::paper());
    assert_eq!(n.hosts, vec![0, 1]);
    assert_eq!(n.sources, vec![0]);
    assert_eq!(n.n_vms, 2);
}

// ---- §5.5 guarantees, with the solver -------------------------------------------------------

use migplan::executor as plan;
use migplan::policy::origamig::objective::{evaluate, Weights};
use migplan::policy::origamig::{propose, CallMode, Origamig};
use migplan::policy::Policy;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// A short time limit: the guarantees tested here hold whatever the limit (§5.5), and a test
/// must finish in seconds.
fn small_settings() -> OrigamigSettings {
    OrigamigSettings {
        time_limit_s: 1.0,
        sim_time_limit_s: 1.0,
        ..OrigamigSettings::paper()
    }
}

/// A random fragmented fleet: `hosts` hosts with two A100s, VMs placed by FF, some removed
/// again (fragmentation), and a few pending VMs that FF could not place.
fn random_fleet(seed: u64, hosts: usize, vms: u64) -> Fleet {
    let mut rng = StdRng::seed_from_u64(seed);
    let profiles = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"];
    let mut f = a100s(hosts);
    for id in 1..=vms {
        let n = if rng.gen_bool(0.5) { 2 } else { 1 };
        let ps: Vec<&str> = (0..n).map(|_| *profiles.choose(&mut rng).unwrap()).collect();
        let v = vm(id, "a100-40gb", &ps);
        match f.ff_placement(&v) {
            Some(p) => {
                f.add_placed(v, p).unwrap();
            }
            None => {
                f.add_pending(v).unwrap();
            }
        }
    }
    let placed: Vec<VmId> = f.vms().filter(|v| v.placement.is_some()).map(|v| v.id).collect();
    for id in placed {
        if rng.gen_bool(0.35) {
            f.remove(id).unwrap();
        }
    }
    f.check_invariants().unwrap();
    f
}

/// Eq. (5) over the whole fleet without its migration terms.
fn static_value(f: &Fleet, w: &Weights) -> f64 {
    let all: Vec<usize> = (0..f.hosts.len()).collect();
    let t = evaluate(f, f, &all, w);
    t.total + t.migrations
}

#[test]
fn a_call_never_lowers_eq5_and_applies_only_strict_improvements() {
    let s = small_settings();
    let w = Weights::from_settings(&s);
    let mut applied = 0;
    for seed in 0..8 {
        let f = random_fleet(seed, 3, 9);
        let all: Vec<usize> = (0..f.hosts.len()).collect();
        for mode in [
            CallMode::Auto,
            CallMode::Admission,
            CallMode::Consolidation,
            CallMode::Opt,
        ] {
            let p = propose(&f, mode, None, &s).unwrap();
            // §5.3: the reported values are Eq. (5) recomputed from the placements.
            let nb = &p.neighborhood.hosts;
            assert_eq!(p.before, evaluate(&f, &f, nb, &w));
            assert_eq!(p.value_after, p.after.total - p.parking_penalty);
            let mut g = f.clone();
            p.apply(&mut g).unwrap();
            g.check_invariants().unwrap();
            let value_before = evaluate(&f, &f, &all, &w).total;
            let value_after =
                evaluate(&f, &g, &all, &w).total - if p.improves { p.parking_penalty } else { 0.0 };
            if p.improves {
                applied += 1;
                assert!(
                    value_after > value_before,
                    "seed {seed} {mode}: {value_before} -> {value_after}"
                );
                // The neighborhood accounts for the whole change: hosts outside M̂ are untouched.
                for h in 0..f.hosts.len() {
                    if !nb.contains(&h) {
                        assert_eq!(f.hosts[h].vms, g.hosts[h].vms);
                    }
                }
            } else {
                assert_eq!(value_after, value_before, "seed {seed} {mode}");
                for h in 0..f.hosts.len() {
                    assert_eq!(f.hosts[h].vms, g.hosts[h].vms);
                }
            }
            // Pending VMs of the call are admitted or rejected, never left waiting.
            for id in &p.neighborhood.pending {
                assert!(
                    !g.pending().contains(id),
                    "seed {seed} {mode}: VM {id} still waits"
                );
            }
        }
    }
    assert!(applied >= 8, "only {applied} calls improved anything");
}

/// Runs the policy's steps without arrivals or departures, applying its plans like the
/// simulator does. Returns the number of calls that changed the fleet.
fn settle(f: &mut Fleet, policy: &mut dyn Policy, w: &Weights, steps: usize) -> usize {
    let mut changes = 0;
    let mut last_change = 0;
    let mut value = static_value(f, w);
    for k in 0..steps {
        let plan = policy.on_step(f, 10.0 * k as f64);
        if let Some(plan) = plan {
            let sched = plan::schedule_with(f, &plan, OrigamigSettings::paper().delta).unwrap();
            for st in &sched.steps {
                plan::execute(
                    f,
                    &plan::Schedule {
                        steps: vec![st.clone()],
                        parking_penalty: 0.0,
                    },
                )
                .unwrap();
                f.check_invariants().unwrap();
            }
            changes += 1;
            last_change = k;
            // §5.5: the migration terms are never positive, so the other terms strictly rise.
            let v = static_value(f, w);
            assert!(
                v > value,
                "an applied plan must raise the static terms: {value} -> {v}"
            );
            value = v;
        }
        for id in policy.take_rejected() {
            f.reject_pending(id).unwrap();
        }
        f.check_invariants().unwrap();
    }
    assert!(
        last_change + 20 < steps,
        "the calls still changed the fleet at step {last_change} of {steps}"
    );
    changes
}

#[test]
fn without_arrivals_and_departures_the_calls_stop_changing_the_fleet() {
    let s = small_settings();
    let w = Weights::from_settings(&s);
    let mut total = 0;
    for seed in 0..4 {
        let mut f = random_fleet(100 + seed, 4, 12);
        let mut p = Origamig::new(&s);
        total += settle(&mut f, &mut p, &w, 60);
        assert!(f.pending().is_empty(), "the queue is decided");
        // Quiet: the triggers stay silent or their calls change nothing.
        let snapshot = f.clone();
        for k in 0..10 {
            assert!(p.on_step(&f, 10_000.0 + 10.0 * k as f64).is_none());
            for id in p.take_rejected() {
                f.reject_pending(id).unwrap();
            }
        }
        assert_eq!(f, snapshot);
    }
    assert!(
        total > 0,
        "no call changed anything: the test would prove nothing"
    );
}

#[test]
fn the_opt_policy_settles_too() {
    let s = small_settings();
    let w = Weights::from_settings(&s);
    let mut f = random_fleet(7, 3, 9);
    let mut p = Origamig::opt(&s);
    assert_eq!(p.name(), "opt");
    settle(&mut f, &mut p, &w, 40);
    assert!(!p.call_log().times_s.is_empty());
}

/// The consolidation defect seen on `scenarios/paper-32.toml` at load 0.75: a source that can
/// never be emptied (one VM with a whole-GPU 7g.40gb GI beside a 1g.5gb, and no receiver has a
/// free GPU) sorts first (fewest VMs) and, with "remove the last PM from S" read literally,
/// took every other source with it, so no consolidation call ever changed the fleet.
/// h0: VM 1 = 7g.40gb on GPU 0 + 1g.5gb on GPU 1; h1: VM 2 = 1g.5gb on each GPU; h2: VM 3 =
/// 7g.40gb on GPU 0, VM 4 = 3g.20gb on GPU 1.
fn unemptiable_head_fleet() -> Fleet {
    let mut f = a100s(3);
    put(&mut f, 1, &["7g.40gb", "1g.5gb"], 0, &[(0, 0), (1, 0)]);
    put(&mut f, 2, &["1g.5gb", "1g.5gb"], 1, &[(0, 0), (1, 0)]);
    put(&mut f, 3, &["7g.40gb"], 2, &[(0, 0)]);
    put(&mut f, 4, &["3g.20gb"], 2, &[(1, 0)]);
    f
}

#[test]
fn consolidation_skips_a_source_that_can_never_be_emptied_and_empties_the_next() {
    let f = unemptiable_head_fleet();
    // h0 and h2 need a free GPU that no other host has; h1's two 1g.5gb fit on h0's GPU 1.
    assert!(!can_empty(&f, &[0], &[1, 2]));
    assert!(!can_empty(&f, &[2], &[0, 1]));
    assert!(can_empty(&f, &[1], &[0, 2]));
    let n = neighborhood::consolidation(&f, &a100(), &OrigamigSettings::paper());
    assert_eq!(n.sources, vec![1]);
    // M̂: the source, then the receivers by free memory slices (h0: 7, h2: 4).
    assert_eq!(n.hosts, vec![1, 0, 2]);
    assert_eq!(n.n_vms, 4);
}

#[test]
fn a_consolidation_call_empties_the_host_behind_an_unemptiable_one() {
    let mut f = unemptiable_head_fleet();
    let p = propose(&f, CallMode::Consolidation, Some(&a100()), &small_settings()).unwrap();
    assert!(p.improves, "the call must switch h1 off: {:?}", p.discarded);
    assert_eq!(p.footprint_before.active_hosts, 3);
    assert_eq!(p.footprint_after.active_hosts, 2);
    p.apply(&mut f).unwrap();
    f.check_invariants().unwrap();
    assert!(!f.hosts[1].is_active());
    assert_eq!(f.active_hosts(), 2);
    // The fleet is now packed: the next call changes nothing (§5.5).
    let again = propose(&f, CallMode::Consolidation, Some(&a100()), &small_settings()).unwrap();
    assert!(!again.changes_placements());
}

#[test]
fn a_call_holds_its_neighborhood_until_its_moves_end() {
    // The fleet of `a_consolidation_call_empties_the_host_behind_an_unemptiable_one` with a
    // fourth host, off. The call moves VM 2 (two 1g.5gb: 2 x 16 GB of RAM and 2 x 5 GB of GI
    // memory) from h1 to h0: 42 GB at 12.5 Gbit/s, 42 x 8 / 12.5 = 26.88 s (§6.6). Until then
    // the call runs (§5.4): no other call starts, and the arrival rule places nothing on M̂ =
    // {h1, h0, h2}.
    let mut f = a100s(4);
    put(&mut f, 1, &["7g.40gb", "1g.5gb"], 0, &[(0, 0), (1, 0)]);
    put(&mut f, 2, &["1g.5gb", "1g.5gb"], 1, &[(0, 0), (1, 0)]);
    put(&mut f, 3, &["7g.40gb"], 2, &[(0, 0)]);
    put(&mut f, 4, &["3g.20gb"], 2, &[(1, 0)]);
    let mut p = Origamig::new(&small_settings());
    let plan = p.on_step(&f, 0.0).expect("a consolidation that empties h1");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![2]);
    let schedule = plan::schedule_with(&f, &plan, OrigamigSettings::paper().delta).unwrap();
    assert!((schedule.duration_s(&f, 12.5) - 26.88).abs() < 1e-9);
    plan::execute(&mut f, &schedule).unwrap();
    assert!(p.is_running(26.87) && !p.is_running(26.89));
    assert!(p.is_held(0, 10.0) && p.is_held(1, 10.0) && p.is_held(2, 10.0));
    assert!(!p.is_held(3, 10.0) && !p.is_held(0, 26.89));

    // A 1g.5gb fits h0's GPU 1 (FF's first choice) but goes to h3 while the call runs.
    let small = Vm {
        id: 9,
        ..vm(9, "a100-40gb", &["1g.5gb"])
    };
    assert_eq!(f.ff_placement(&small).unwrap().host, 0);
    assert_eq!(p.on_arrival(&f, &small, 10.0).unwrap().host, 3);
    assert_eq!(p.on_arrival(&f, &small, 30.0).unwrap().host, 0);

    // No call starts at the 10 s and 20 s checks; the next one is at 30 s.
    let calls = p.stats().consolidation_calls + p.stats().admission_calls;
    assert!(p.on_step(&f, 10.0).is_none() && p.on_step(&f, 20.0).is_none());
    assert_eq!(p.stats().consolidation_calls + p.stats().admission_calls, calls);
    let _ = p.on_step(&f, 30.0);
    assert!(p.stats().consolidation_calls + p.stats().admission_calls > calls);
}
