//! FF, MFI and TC on hand-built fleets (§6.3), and FF on a paper-like setup against reference
//! figures that reproduce the paper's Table 8 FF rows.

use migplan::fleet::{GiRequest, Placement, Vm};
use migplan::policy::{self, Policy};
use migplan::scenario::{self, Scenario};
use migplan::sim::{EventKind, Simulator};

/// Two-host scenarios with two A100s each and no arrivals; `vms` are `[[vm]]` tables.
fn fleet(vms: &str) -> Scenario {
    let src = format!(
        r#"
[[host_group]]
prefix = "h"
count = 2
cores = 80
ram_gb = 512
gpus = ["a100-40gb", "a100-40gb"]

[workload]
enabled = false
warmup_h = 0
measure_h = 1
{vms}
"#
    );
    scenario::parse(&src, "hand.toml").unwrap()
}

fn vm_toml(id: u64, profile: &str, host: &str, at: &str) -> String {
    let compute: u32 = profile[..1].parse().unwrap();
    format!(
        "[[vm]]\nid = {id}\nmodel = \"a100-40gb\"\nprofiles = [\"{profile}\"]\ncores = {}\nram_gb = {}\nhost = \"{host}\"\nat = [\"{at}\"]\n",
        4 * compute,
        16 * compute
    )
}

fn request(profiles: &[&str]) -> Vm {
    let compute: u32 = profiles.iter().map(|p| p[..1].parse::<u32>().unwrap()).sum();
    let gis = GiRequest::named(migplan::catalog::embedded(), "a100-40gb", profiles).unwrap();
    Vm {
        id: 100,
        lifetime: Some(3600.0),
        ..Vm::job(0, gis, 4 * compute, 16 * compute)
    }
}

fn place(name: &str, sc: &Scenario, vm: &Vm) -> Option<Placement> {
    let mut p = policy::by_name(name, &sc.policy).unwrap();
    p.on_arrival(&sc.fleet, vm, 0.0)
}

#[test]
fn mfi_and_tc_pick_the_fuller_host_where_ff_takes_the_first() {
    // h1 GPU 0 holds a 4g.20gb at slices 0-3. A 3g.20gb: FF takes empty h0. MFI: on h1 GPU 0 at
    // 4 the score falls from 20 (slices 0-3 taken: 1x4 + 2x2 + 2x2 + 4x1 + 4x1) to 0 (full);
    // on an empty GPU it rises by at least 13 (at start 4: 1x3 + 2x2 + 2x1 + 4x1). TC: joint
    // utilization (8 + 7) / 15 = 1 on h1 GPU 0.
    let sc = fleet(&vm_toml(1, "4g.20gb", "h1", "0@0"));
    let vm = request(&["3g.20gb"]);
    assert_eq!(place("ff", &sc, &vm).unwrap().host, 0);
    for name in ["mfi", "tc"] {
        let p = place(name, &sc, &vm).unwrap();
        assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (1, 0, 4), "{name}");
    }
}

#[test]
fn mfi_places_a_small_gi_where_the_score_rises_least() {
    // On an empty A100 a 1g.5gb raises the score by 13 at slices 0-3, 9 at 4-5 and 7 at 6.
    let sc = fleet("");
    let p = place("mfi", &sc, &request(&["1g.5gb"])).unwrap();
    assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (0, 0, 6));
    // With slice 6 taken, slices 4 and 5 tie at 12 (0-3 give 20): the lowest start wins.
    let sc = fleet(&vm_toml(1, "1g.5gb", "h0", "0@6"));
    let p = place("mfi", &sc, &request(&["1g.5gb"])).unwrap();
    assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (0, 0, 4));
}

#[test]
fn tc_best_fit_prefers_the_fuller_gpu_within_a_host() {
    // h0 GPU 0: a 1g.5gb; GPU 1: a 3g.20gb. A new 1g.5gb: FF takes GPU 0 (the first where it
    // fits); TC takes GPU 1, joint utilization (5 + 4) / 15 against (2 + 2) / 15.
    let vms = vm_toml(1, "1g.5gb", "h0", "0@6") + &vm_toml(2, "3g.20gb", "h0", "1@4");
    let sc = fleet(&vms);
    let vm = request(&["1g.5gb"]);
    assert_eq!(place("ff", &sc, &vm).unwrap().gis[0].gpu, 0);
    assert_eq!(place("tc", &sc, &vm).unwrap().gis[0].gpu, 1);
    // Two GIs, largest first, each by the same rule, on one host.
    let p = place("tc", &sc, &request(&["3g.20gb", "1g.5gb"])).unwrap();
    assert_eq!(p.host, 0);
    assert_eq!(p.gis[0].gpu, 1, "the 3g.20gb fills GPU 1");
    assert_eq!(p.gis[1].gpu, 0, "the 1g.5gb fits only on GPU 0 then");
}

fn compaction(sc: &Scenario) -> Simulator {
    let mut s = Simulator::new(sc, policy::by_name("tc", &sc.policy).unwrap()).unwrap();
    s.set_check_invariants(true);
    s.step_until(15.0 * 60.0).unwrap();
    s
}

fn moves(s: &Simulator) -> Vec<(u64, usize, usize)> {
    s.events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Migration { vm, from, to, .. } => Some((vm, from, to)),
            _ => None,
        })
        .collect()
}

#[test]
fn tc_compaction_vacates_the_least_utilized_gpu_with_free_resources_only() {
    // A = h0/0: 2g.10gb (util 4/15). B = h0/1: 3g.20gb at 0 (7/15). C = h1/0: 4g.20gb at 0 and
    // 2g.10gb at 4 (12/15), free slices 6-7. h1/1 idle.
    // A's VM fits on B at 4 (free before): A is vacated and B becomes a receiver. C's VMs
    // cannot go to A (its slices were not free before), nor to B (4g.20gb starts at 0 only).
    // The idle h1/1 could take C's two VMs, but that vacates one GPU, not two: discarded.
    let vms = vm_toml(1, "2g.10gb", "h0", "0@0")
        + &vm_toml(2, "3g.20gb", "h0", "1@0")
        + &vm_toml(3, "4g.20gb", "h1", "0@0")
        + &vm_toml(4, "2g.10gb", "h1", "0@4");
    let sc = fleet(&vms);
    let mut s = compaction(&sc);
    assert_eq!(moves(&s), vec![(1, 0, 0)]);
    let p = s.fleet().vm(1).unwrap().placement.clone().unwrap();
    assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (0, 1, 4));
    assert_eq!(s.fleet().active_gpus(), 2);
    // Nothing more to do at the next compaction: no GPU can be vacated now.
    s.step_until(30.0 * 60.0).unwrap();
    assert_eq!(moves(&s).len(), 1);
}

/// A = h0/0: 3g.20gb at 0 (7/15). B = h0/1: 4g.20gb at 0 and 1g.5gb at 4 (10/15).
/// D = h1/0: 2g.10gb at 0 and 3g.20gb at 4 (11/15), free 2-3. h1/1 idle, on an active host.
fn two_gpus_to_vacate() -> String {
    vm_toml(1, "3g.20gb", "h0", "0@0")
        + &vm_toml(2, "4g.20gb", "h0", "1@0")
        + &vm_toml(3, "1g.5gb", "h0", "1@4")
        + &vm_toml(4, "2g.10gb", "h1", "0@0")
        + &vm_toml(5, "3g.20gb", "h1", "0@4")
}

#[test]
fn tc_adds_an_idle_gpu_only_when_it_vacates_two() {
    // A, B and D of `two_gpus_to_vacate`.
    // Without an idle GPU nothing can be vacated. With h1/1: A's 3g.20gb goes there (default
    // start 4), B's 4g.20gb to h1/1 at 0 and B's 1g.5gb to D's free slices 2-3: A and B are
    // vacated, so the moves are kept and host h0 switches off.
    let vms = two_gpus_to_vacate();
    let sc = fleet(&vms);
    let s = compaction(&sc);
    let mut m = moves(&s);
    m.sort();
    assert_eq!(m, vec![(1, 0, 1), (2, 0, 1), (3, 0, 1)]);
    let at = |id| {
        let p = s.fleet().vm(id).unwrap().placement.clone().unwrap();
        (p.gis[0].gpu, p.gis[0].start)
    };
    assert_eq!(at(1), (1, 4));
    assert_eq!(at(2), (1, 0));
    assert_eq!(at(3).0, 0);
    assert!([2, 3].contains(&at(3).1));
    assert!(!s.fleet().hosts[0].is_active());
    assert_eq!(s.metrics().migrations_per_h, 3.0 / 0.25);
    // VM RAM plus GI memory, across hosts: (48 + 20) + (64 + 20) + (16 + 5) GB.
    assert!((s.metrics().gb_per_h - (68.0 + 84.0 + 21.0) / 0.25).abs() < 1e-9);

    // Without room for B's 1g.5gb (D full), only A would be vacated: everything is discarded.
    let full = vms + &vm_toml(6, "1g.10gb", "h1", "0@2");
    let s = compaction(&fleet(&full));
    assert!(moves(&s).is_empty());
}

#[test]
fn tc_places_no_request_on_a_compactions_hosts_until_its_moves_end() {
    // The compaction of `tc_adds_an_idle_gpu_only_when_it_vacates_two` at 15 min moves three
    // VMs from h0 to h1: (48 + 20) + (64 + 20) + (16 + 5) = 173 GB at 12.5 Gbit/s, one move
    // after another, so its moves end 173 x 8 / 12.5 = 110.72 s later (§6.3, §6.1).
    let vms = two_gpus_to_vacate();
    let sc = fleet(&vms);
    let mut tc = migplan::policy::tc::Tc::new(&sc.policy.tc, sc.policy.migration_gbps);
    assert!(
        tc.on_step(&sc.fleet, 0.0).is_none(),
        "the first compaction is at 15 min"
    );
    let plan = tc.on_step(&sc.fleet, 900.0).expect("a compaction");
    let secs = migplan::policy::tc::moves_duration_s(&sc.fleet, &plan, sc.policy.migration_gbps);
    assert!((secs - 110.72).abs() < 1e-9, "{secs}");
    assert!(tc.is_busy(0, 900.0) && tc.is_busy(1, 1010.0));
    assert!(!tc.is_busy(0, 1011.0) && !tc.is_busy(1, 1011.0));

    // Through the simulator: a 1g.5gb that best fit puts on h1 (the only active host after
    // the compaction) finds both hosts of the compaction closed while its moves run.
    let s = compaction(&sc);
    assert_eq!(moves(&s).len(), 3);
    let vm = request(&["1g.5gb"]);
    let mut p = s.policy().clone_box();
    assert_eq!(p.on_arrival(s.fleet(), &vm, 960.0), None, "h0 and h1 are busy");
    let after = p
        .on_arrival(s.fleet(), &vm, 1011.0)
        .expect("placed once the moves end");
    assert_eq!(after.host, 1);
    // FF has no compaction and places it at once.
    assert!(place("ff", &sc, &vm).is_some());
}

#[test]
fn optimizer_calls_are_counted_per_hour_with_their_time_percentiles() {
    // A 7g.40gb waits while h0 and h1 each hold a small VM on GPU 0 and 1: an admission call
    // must move one of them; the calls of the measured hour are counted with their times.
    let vms = vm_toml(1, "1g.5gb", "h0", "0@6")
        + &vm_toml(2, "1g.5gb", "h0", "1@6")
        + &vm_toml(3, "1g.5gb", "h1", "0@6")
        + &vm_toml(4, "1g.5gb", "h1", "1@6")
        + "[[vm]]\nid = 5\nmodel = \"a100-40gb\"\nprofiles = [\"7g.40gb\"]\ncores = 28\nram_gb = 112\n";
    let sc = fleet(&vms);
    let mut s = Simulator::new(&sc, policy::by_name("origamig", &sc.policy).unwrap()).unwrap();
    s.set_check_invariants(true);
    s.run();
    let m = s.metrics();
    let times = s.policy().call_log().times_s;
    assert!(!times.is_empty(), "the pending VM triggers an admission call");
    assert!(
        s.fleet().vm(5).unwrap().placement.is_some(),
        "and the call admits it"
    );
    assert!((m.calls_per_h - times.len() as f64 / m.measured_h).abs() < 1e-9);
    let (lo, hi) = times
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    assert!(lo <= m.call_s_median && m.call_s_median <= m.call_s_p95 && m.call_s_p95 <= hi);
    // |N̂| per call: the admission call holds both hosts' four VMs and the pending one.
    let sizes = s.policy().call_log().vms;
    assert_eq!(sizes.len(), times.len());
    assert_eq!(sizes[0], 5);
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
    assert!(
        (m.call_vms_mean - mean).abs() < 1e-9,
        "{} vs {mean}",
        m.call_vms_mean
    );
    // FF makes no calls.
    let mut ff = Simulator::new(&sc, policy::by_name("ff", &sc.policy).unwrap()).unwrap();
    ff.run();
    assert_eq!(ff.metrics().calls_per_h, 0.0);
}

#[test]
fn ff_on_the_paper_fleet_lands_near_the_reference_figures() {
    // An independent re-run of FF (mean of 40 seeds), within seed noise of Table 8: load 0.75: acceptance 98.9 %, 111.3 active hosts, 84.4 %
    // active GPUs, 84.0 % packing; load 1.0: 83.7 %, 125.5, 95.9 %, 86.5 %. One seed varies by
    // several points, so this short test averages three seeds and allows that spread.
    for (load, acc, hosts, gpus, packing) in [(0.75, 98.9, 111.3, 84.4, 84.0), (1.0, 83.7, 125.5, 95.9, 86.5)]
    {
        let mut m = [0.0; 4];
        for seed in 1..=3 {
            let mut sc = crate::common::fleet::paper_128();
            sc.workload.load = load;
            sc.workload.seed = seed;
            let mut s = Simulator::new(&sc, policy::by_name("ff", &sc.policy).unwrap()).unwrap();
            s.run();
            let r = s.metrics();
            for (a, b) in
                m.iter_mut()
                    .zip([r.acceptance_pct, r.active_hosts, r.active_gpus_pct, r.packing_pct])
            {
                *a += b / 3.0;
            }
        }
        // At load 1.0 this model admits about 1.7 points more than the reference (85.4 % over
        // seeds 1-6 against 83.7 %); see docs/results/table8.md.
        assert!((m[0] - acc).abs() < 3.5, "load {load}: acceptance {}", m[0]);
        assert!((m[1] - hosts).abs() < 5.0, "load {load}: active hosts {}", m[1]);
        assert!((m[2] - gpus).abs() < 5.0, "load {load}: active GPUs {}", m[2]);
        assert!((m[3] - packing).abs() < 3.0, "load {load}: packing {}", m[3]);
    }
}
