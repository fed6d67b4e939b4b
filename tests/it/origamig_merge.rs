//! OrigaMIG's merge neighborhood (`[policy] merge_hosts`), its host gap trigger and VM-bounded
//! neighborhoods (`[policy] neighborhood_vms`, §7) on hand-built fleets, their settings' range
//! errors, and the paper preset, which leaves both off.

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::fleet::{a100s, mig_vm};
use migplan::fleet::{Fleet, Vm, VmId};
use migplan::policy::origamig::hostset::HostSet;
use migplan::policy::origamig::neighborhood;
use migplan::policy::origamig::triggers::{gap, host_gap, CallKind, Class, Triggers};
use migplan::policy_settings::OrigamigSettings;
use migplan::scenario;

/// A tenant (δ_i = δ = 15 with the default weights; a job would pay 15 more).
fn vm(id: VmId, profiles: &[&str]) -> Vm {
    Vm {
        kind: migplan::fleet::VmKind::Tenant,
        ..mig_vm(id, "a100-40gb", profiles)
    }
}

fn put(f: &mut Fleet, id: VmId, profile: &str, host: usize, gpu: usize, start: u8) {
    crate::common::fleet::put(
        f,
        vm(id, &[profile]),
        crate::common::fleet::at(host, &[(gpu, start)]),
    );
    f.check_invariants().unwrap();
}

fn a100() -> Class {
    Class::Gpu("a100-40gb".into())
}

/// Two-A100 hosts, the first four with three VMs each, so that none of them passes line 18 at
/// δ = 15 (two active GPUs at most: 50 + 2 × 20 = 90 is not above 3 × 2δ = 90 plus any CF):
/// h0 and h1: three 1g.5gb on GPU 0 (3 memory slices, 12 cores); h2: three 2g.10gb on GPU 0
/// (6 slices, 24 cores); h3: 3g.20gb at 0 and 4 on GPU 0 and one at 0 on GPU 1 (12 slices).
fn three_per_host_on(hosts: usize) -> Fleet {
    let mut f = a100s(hosts);
    let mut id = 1;
    for h in 0..2 {
        for z in 0..3 {
            put(&mut f, id, "1g.5gb", h, 0, z);
            id += 1;
        }
    }
    for z in [0, 2, 4] {
        put(&mut f, id, "2g.10gb", 2, 0, z);
        id += 1;
    }
    for (g, z) in [(0, 0), (0, 4), (1, 0)] {
        put(&mut f, id, "3g.20gb", 3, g, z);
        id += 1;
    }
    f
}

fn three_per_host() -> Fleet {
    three_per_host_on(4)
}

fn merging(k: usize) -> OrigamigSettings {
    OrigamigSettings {
        merge_hosts: k,
        ..OrigamigSettings::default()
    }
}

/// Two hosts each with one 7g.40gb on GPU 0.
fn two_half_hosts() -> Fleet {
    let mut f = a100s(2);
    put(&mut f, 1, "7g.40gb", 0, 0, 0);
    put(&mut f, 2, "7g.40gb", 1, 0, 0);
    f
}

#[test]
fn without_a_source_the_merge_neighborhood_takes_the_least_loaded_hosts() {
    let f = three_per_host();
    // Algorithm 1 finds no source: no call.
    let n = neighborhood::consolidation(&f, &a100(), &merging(0));
    assert!(n.is_empty() && n.hosts.is_empty() && n.sources.is_empty());
    // k = 2: h0 and h1 (3 slices each; ties by cores in use, VMs, then id), both sources.
    let n = neighborhood::consolidation(&f, &a100(), &merging(2));
    assert_eq!(n.hosts, vec![0, 1]);
    assert_eq!(n.sources, vec![0, 1]);
    assert_eq!(n.n_vms, 6);
    assert_eq!(n.kind, CallKind::Consolidation(a100()));
    // k = 3 adds h2 (6 slices) before h3 (12).
    let n = neighborhood::consolidation(&f, &a100(), &merging(3));
    assert_eq!(n.hosts, vec![0, 1, 2]);
    assert_eq!(n.sources, vec![0, 1, 2]);
    assert_eq!(n.n_vms, 9);
    // k above the hosts of the class takes them all, least loaded first.
    let n = neighborhood::consolidation(&f, &a100(), &merging(32));
    assert_eq!(n.hosts, vec![0, 1, 2, 3]);
    // An idle host is not active and joins no merge.
    let f = three_per_host_on(6);
    assert_eq!(
        neighborhood::consolidation(&f, &a100(), &merging(32)).hosts,
        vec![0, 1, 2, 3]
    );
}

#[test]
fn the_merge_neighborhood_keeps_nmax_and_needs_a_host_it_can_empty() {
    let f = three_per_host();
    // Nmax 5: h0 (3 VMs) joins, every other host would make 6: one host, no call.
    let s = OrigamigSettings {
        n_max: 5,
        ..merging(4)
    };
    assert!(neighborhood::consolidation(&f, &a100(), &s).hosts.is_empty());
    // Nmax 8 takes h1 beside h0 and skips h2 and h3.
    let s = OrigamigSettings {
        n_max: 8,
        ..merging(4)
    };
    assert_eq!(neighborhood::consolidation(&f, &a100(), &s).hosts, vec![0, 1]);
    // Two hosts each holding a 7g.40gb on both GPUs: neither can take the other's VMs.
    let mut f = a100s(2);
    let mut id = 1;
    for h in 0..2 {
        for g in 0..2 {
            put(&mut f, id, "7g.40gb", h, g, 0);
            id += 1;
        }
    }
    assert!(neighborhood::consolidation(&f, &a100(), &merging(2))
        .hosts
        .is_empty());
}

#[test]
fn with_a_source_algorithm_1_decides_the_neighborhood() {
    // h4 holds one 1g.5gb: line 18 keeps it (50 + 20 = 70 > CF + 2 × 15 with CF at most 18).
    let mut f = three_per_host_on(5);
    put(&mut f, 100, "1g.5gb", 4, 0, 0);
    let plain = neighborhood::consolidation(&f, &a100(), &merging(0));
    assert_eq!(plain.sources, vec![4]);
    // R by free memory slices: h0 and h1 (13), h2 (10), h3 (4).
    assert_eq!(plain.hosts, vec![4, 0, 1, 2, 3]);
    assert_eq!(neighborhood::consolidation(&f, &a100(), &merging(2)), plain);
}

#[test]
fn a_vm_bounded_neighborhood_takes_hosts_until_its_vms_reach_the_bound() {
    let mut f = three_per_host_on(5);
    put(&mut f, 100, "1g.5gb", 4, 0, 0);
    let hosts = |s: &OrigamigSettings| neighborhood::consolidation(&f, &a100(), s);
    // Mmax 2 bounds M̂ to h4 and the first receiver.
    let by_hosts = OrigamigSettings {
        m_max: 2,
        ..OrigamigSettings::default()
    };
    assert_eq!(hosts(&by_hosts).hosts, vec![4, 0]);
    // 7 VMs instead: h4 (1) + h0 (3) + h1 (3); h2 and h3 would make 10. Sources stay within
    // ½Mmax = 1.
    let by_vms = OrigamigSettings {
        neighborhood_vms: 7,
        ..by_hosts.clone()
    };
    let n = hosts(&by_vms);
    assert_eq!(n.hosts, vec![4, 0, 1]);
    assert_eq!(n.sources, vec![4]);
    assert_eq!(n.n_vms, 7);
    // The bound replaces Nmax too: 13 VMs take every host although Nmax is 4.
    let n = hosts(&OrigamigSettings {
        neighborhood_vms: 13,
        n_max: 4,
        ..by_hosts
    });
    assert_eq!(n.hosts, vec![4, 0, 1, 2, 3]);
}

#[test]
fn a_vm_bounded_admission_call_takes_more_hosts_than_mmax() {
    // A pending VM with two 7g.40gb fits no active host (each has a GPU in use): line 8 takes
    // the active hosts that would fit it empty, by free memory slices: h0, h1 (13), h2 (10),
    // h3 (4); line 14 the idle h4, with a slot of M̂ kept for it.
    let mut f = three_per_host_on(5);
    f.add_pending(vm(100, &["7g.40gb", "7g.40gb"])).unwrap();
    let s = OrigamigSettings {
        m_max: 3,
        ..OrigamigSettings::default()
    };
    let n = neighborhood::admission(&f, &s);
    assert_eq!(n.hosts, vec![0, 1, 4]);
    assert_eq!(n.n_vms, 7);
    // 10 VMs: the pending one and h0, h1, h2 (3 each); h3 would make 13.
    let n = neighborhood::admission(
        &f,
        &OrigamigSettings {
            neighborhood_vms: 10,
            ..s
        },
    );
    assert_eq!(n.hosts, vec![0, 1, 2, 4]);
    assert_eq!(n.n_vms, 10);
    assert_eq!(n.pending, vec![100]);
}

#[test]
fn the_host_gap_counts_hosts_that_their_slices_do_not_need() {
    let f = three_per_host();
    // Eq. 17: 5 active GPUs - ceil(24 / 8) = 2; hosts: 4 - ceil(3 / 2) = 2.
    assert_eq!(gap(&f, &a100()), 2);
    assert_eq!(host_gap(&f, &a100(), &HostSet::range(0..4)), 2);
    // Two hosts with one full GPU each: Γh = 2 - 2 = 0, but one host could carry both.
    let f = two_half_hosts();
    assert_eq!(gap(&f, &a100()), 0);
    assert_eq!(host_gap(&f, &a100(), &HostSet::range(0..2)), 1);
    assert_eq!(host_gap(&f, &Class::NoGpu, &HostSet::range(0..2)), 0);
}

#[test]
fn with_merge_hosts_the_host_gap_triggers_a_consolidation_call() {
    let f = two_half_hosts();
    let mut t = Triggers::new();
    assert_eq!(t.next_call(&f, &merging(0)), None);
    let mut t = Triggers::new();
    assert_eq!(
        t.next_call(&f, &merging(2)),
        Some(CallKind::Consolidation(a100()))
    );
    // Algorithm 1 then finds the source h0, whose 7g.40gb can move to h1's free GPU (h1 stays
    // in M̂ as a receiver: both cannot be emptied).
    let n = neighborhood::consolidation(&f, &a100(), &merging(2));
    assert_eq!((n.hosts, n.sources), (vec![0, 1], vec![0]));
    // A call that changed nothing disables the class at that gap.
    t.after_call(&f, &CallKind::Consolidation(a100()), false);
    assert_eq!(t.next_call(&f, &merging(2)), None);
}

fn paper_32_with(lines: &str) -> String {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml")).unwrap();
    format!("{}\n{lines}\n", src.trim_end())
}

#[test]
fn the_settings_are_read_and_out_of_range_values_are_one_line_errors() {
    let s = scenario::parse(&paper_32_with("merge_hosts = 4\nneighborhood_vms = 96"), "p.toml").unwrap();
    assert_eq!(
        (s.policy.origamig.merge_hosts, s.policy.origamig.neighborhood_vms),
        (4, 96)
    );
    let d = scenario::parse(&paper_32_with(""), "p.toml").unwrap();
    assert_eq!(
        (d.policy.origamig.merge_hosts, d.policy.origamig.neighborhood_vms),
        (4, 0)
    );
    // Saves leave out the defaults and read back the rest.
    assert!(!d.to_toml().unwrap().contains("merge_hosts"));
    let off = scenario::parse(&paper_32_with("merge_hosts = 0"), "p.toml").unwrap();
    assert_eq!(off.policy.origamig.merge_hosts, 0);
    assert_eq!(
        scenario::parse(&off.to_toml().unwrap(), "saved.toml")
            .unwrap()
            .policy,
        off.policy
    );
    let again = scenario::parse(&s.to_toml().unwrap(), "saved.toml").unwrap();
    assert_eq!(again.policy, s.policy);
    for (line, want) in [
        ("merge_hosts = 1", "2..=32"),
        ("merge_hosts = 33", "2..=32"),
        ("neighborhood_vms = 129", "1..=128"),
    ] {
        let src = paper_32_with(line);
        let at = src.lines().count();
        let (_dir, path) = temp_file("p.toml", &src);
        let args = ["check", path.to_str().unwrap()];
        let out = migplan().args(args).output().unwrap();
        let field = format!("policy.{}", line.split(' ').next().unwrap());
        assert_one_line_error(&out, &args, &[&format!("p.toml:{at}"), &field, want]);
    }
}

#[test]
fn the_paper_preset_leaves_both_off() {
    let p = OrigamigSettings::paper();
    assert_eq!((p.merge_hosts, p.neighborhood_vms), (0, 0));
    let s = scenario::parse(&paper_32_with("preset = \"paper\""), "p.toml").unwrap();
    assert_eq!(s.policy, scenario::PolicySettings::paper());
    // Its triggers count GPUs only: no call where the host gap alone would make one.
    let mut t = Triggers::new();
    assert_eq!(t.next_call(&two_half_hosts(), &p), None);
}

#[test]
fn the_experiments_take_the_settings_and_refuse_bad_values_in_one_line() {
    for (args, want) in [
        (
            &[
                "experiment",
                "gap-to-opt",
                "--sizes",
                "8",
                "--policy-set",
                "merge_hosts=1",
            ][..],
            &["gap-to-opt 8 hosts", "policy.origamig.merge_hosts", "2..=32"][..],
        ),
        (
            &[
                "experiment",
                "gap-to-opt",
                "--sizes",
                "8",
                "--policy-set",
                "merge_hosts",
            ][..],
            &["--policy-set", "KEY=VALUE"][..],
        ),
        (
            &[
                "experiment",
                "gap-to-opt",
                "--sizes",
                "8",
                "--policy-set",
                "[x]=1",
            ][..],
            &["--policy-set", "setting name"][..],
        ),
        (
            &["experiment", "paired", "--seeds", "1", "--merge-hosts", "40"][..],
            &["--merge-hosts", "2..=32", "40"][..],
        ),
        (
            &[
                "experiment",
                "paired",
                "--seeds",
                "1",
                "--neighborhood-vms",
                "200",
            ][..],
            &["--neighborhood-vms", "1..=128", "200"][..],
        ),
    ] {
        let out = migplan().args(args).output().unwrap();
        assert_one_line_error(&out, args, want);
    }
}
