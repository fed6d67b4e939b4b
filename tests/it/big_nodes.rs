//! OrigaMIG on eight-GPU nodes: b_j from the host's power, limits counted in GPUs, the
//! deterministic budget of big neighborhoods, best fit on a big host's GPUs at arrival, and the
//! paper preset, which turns all four off (docs/policies.md, "Eight-GPU hosts").

use crate::common::fleet::{at, mig_vm, put};
use migplan::catalog::embedded;
use migplan::fleet::{Fleet, Host, Vm, VmId};
use migplan::policy::origamig::bilp::{CallLimit, SolveControl, SolveStatus};
use migplan::policy::origamig::call::{propose_with, CallMode};
use migplan::policy::origamig::hostset::HostSet;
use migplan::policy::origamig::neighborhood::{self, scaled_limits};
use migplan::policy::origamig::objective::Weights;
use migplan::policy::origamig::triggers::Class;
use migplan::policy_settings::OrigamigSettings;
use migplan::scenario;

/// `n` DGX A100 hosts: 8 A100-40GB, 256 cores, 2 TB, the `dgx-a100` curve.
fn dgx_a100s(n: usize) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let curve = c.curve_id("dgx-a100").expect("the dgx-a100 curve");
    let hs = (0..n)
        .map(|i| Host::new(format!("dgx{i}"), 256, 2048, vec![a100; 8], curve))
        .collect();
    Fleet::new(c, hs)
}

fn tenant(id: VmId, profile: &str) -> Vm {
    Vm {
        kind: migplan::fleet::VmKind::Tenant,
        ..mig_vm(id, "a100-40gb", &[profile])
    }
}

fn a100() -> Class {
    Class::Gpu("a100-40gb".into())
}

/// §6.1's b = 50 and e = 20 are one rate per idle watt of the paper's server (127 W without
/// GPUs) and of an A100 (50 W): derived from the power curves, the paper's host keeps b = 50
/// exactly, e comes out within 2 % of 20, and a DGX chassis costs its own idle power.
#[test]
fn weights_from_power_give_the_papers_constants_on_its_host_and_more_on_a_dgx() {
    let c = embedded();
    let w = Weights::default();
    assert!(w.host_from_power);
    let rate = w.per_idle_watt(c);
    let a100 = c.model(c.model_id("a100-40gb").unwrap());
    let e = rate * a100.idle_w;
    assert!((e - 20.0).abs() / 20.0 < 0.02, "e from power: {e}");
    let paper = crate::common::fleet::a100s(1);
    assert_eq!(w.host_of(&paper.hosts[0], c), 50.0);
    let dgx = dgx_a100s(1);
    // 50 × 677 / 127 = 266.5, rounded: integer weights keep Eq. (5) integral.
    assert_eq!(w.host_of(&dgx.hosts[0], c), 267.0);
    let h100 = c.curve_id("dgx-h100").unwrap();
    let host = Host::new("h", 224, 2048, vec![c.model_id("h100-80gb").unwrap(); 8], h100);
    assert_eq!(w.host_of(&host, c), 372.0);
    // Off, and under the paper preset: every host costs weight_host.
    let off = Weights::from_settings(&OrigamigSettings::paper());
    assert!(!off.host_from_power);
    assert_eq!(off.host_of(&dgx.hosts[0], c), 50.0);
}

#[test]
fn limits_count_gpus_on_big_hosts_and_stay_as_written_on_two_gpu_hosts() {
    let d = OrigamigSettings::default();
    assert_eq!(scaled_limits(&d, 2), (6, 64));
    assert_eq!(scaled_limits(&d, 1), (6, 64));
    // m_max_gpus = 24: ceil(24 / 4) = 6 four-GPU hosts, 3 eight-GPU nodes.
    assert_eq!(scaled_limits(&d, 4), (6, 128));
    assert_eq!(scaled_limits(&d, 8), (3, 256));
    let one = OrigamigSettings {
        m_max_gpus: 1,
        ..d.clone()
    };
    assert_eq!(scaled_limits(&one, 8).0, 2);
    // m_max counts hosts of two GPUs, m_max_gpus the GPUs of bigger hosts.
    let small = OrigamigSettings {
        m_max: 6,
        m_max_gpus: 40,
        ..d.clone()
    };
    assert_eq!(scaled_limits(&small, 2), (6, 64));
    assert_eq!(scaled_limits(&small, 8), (5, 256));
    assert_eq!(scaled_limits(&small, 4), (10, 128));
    assert_eq!(neighborhood::most_gpus(&dgx_a100s(2), &HostSet::range(0..2)), 8);
    assert_eq!(neighborhood::scaled_merge(4, 2), 4);
    assert_eq!(neighborhood::scaled_merge(4, 8), 2);
    assert_eq!(neighborhood::scaled_merge(8, 4), 4);
    assert_eq!(neighborhood::scaled_merge(0, 8), 0);
}

#[test]
fn the_paper_preset_turns_the_big_host_settings_off_and_a_written_one_wins() {
    let d = OrigamigSettings::default();
    assert!(
        d.host_weight_from_power && d.host_scaled_limits && d.host_scaled_budget && d.arrival_gpu_best_fit
    );
    let p = OrigamigSettings::paper();
    assert!(
        !p.host_weight_from_power
            && !p.host_scaled_limits
            && !p.host_scaled_budget
            && !p.arrival_gpu_best_fit
    );
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/hgx-a100.toml")).unwrap();
    let s = scenario::parse(&src, "hgx.toml").unwrap();
    assert_eq!(s.policy, scenario::PolicySettings::default());
    assert_eq!(s.fleet.hosts.len(), 16);
    assert!(s.fleet.hosts.iter().all(|h| h.gpus.len() == 8));
    let with = format!(
        "{}\npreset = \"paper\"\nhost_weight_from_power = true\n",
        src.trim_end()
    );
    let s = scenario::parse(&with, "hgx.toml").unwrap();
    assert!(s.policy.origamig.host_weight_from_power && !s.policy.origamig.host_scaled_limits);
    // A save leaves the defaults out and reads back the same.
    let back = scenario::parse(&s.to_toml().unwrap(), "back.toml").unwrap();
    assert_eq!(back.policy, s.policy);
}

/// Three DGX A100 hosts: dgx0 and dgx2 with a 3g.20gb tenant at slice 0 of each GPU (half
/// full), dgx1 with six 1g.5gb tenants on two GPUs. Emptying dgx1 moves 6 tenants across hosts
/// (6 × 2δ = 180) and switches off a host worth b + 2e: 90 with the paper's constants (the call
/// keeps it on), 267 + 40 = 307 with b from the DGX's power (the call empties it).
fn small_host_beside_two_big_ones() -> Fleet {
    let mut f = dgx_a100s(3);
    let mut id = 1;
    for h in [0, 2] {
        for g in 0..8 {
            put(&mut f, tenant(id, "3g.20gb"), at(h, &[(g, 0)]));
            id += 1;
        }
    }
    for g in 0..2 {
        for z in 0..3 {
            put(&mut f, tenant(id, "1g.5gb"), at(1, &[(g, z)]));
            id += 1;
        }
    }
    f.check_invariants().unwrap();
    f
}

fn consolidate(f: &Fleet, s: &OrigamigSettings) -> migplan::policy::origamig::call::Proposal {
    let control = SolveControl {
        limit: CallLimit::Budget,
        ..SolveControl::default()
    };
    propose_with(f, CallMode::Consolidation, Some(&a100()), s, &control).unwrap()
}

#[test]
fn a_simulated_call_empties_a_nearly_empty_dgx_host_only_with_weights_from_power() {
    let f = small_host_beside_two_big_ones();
    let d = OrigamigSettings::default();
    let p = consolidate(&f, &d);
    assert!(p.improves, "the call must switch dgx1 off: {:?}", p.discarded);
    assert_eq!(
        p.neighborhood.sources.first(),
        Some(&1),
        "dgx1 first: {:?}",
        p.neighborhood.sources
    );
    assert!(
        p.neighborhood.hosts.len() <= 4,
        "Mmax counts GPUs: {:?}",
        p.neighborhood.hosts
    );
    assert_eq!(p.footprint_before.active_hosts, 3);
    assert_eq!(p.footprint_after.active_hosts, 2);
    let mut g = f.clone();
    p.apply(&mut g).unwrap();
    g.check_invariants().unwrap();
    assert!(!g.hosts[1].is_active());
    assert_eq!(g.vms().count(), f.vms().count());
    // With the paper's constants the same call keeps dgx1 on.
    let constants = OrigamigSettings {
        host_weight_from_power: false,
        ..d
    };
    let p = consolidate(&f, &constants);
    let mut g = f.clone();
    if p.improves {
        p.apply(&mut g).unwrap();
    }
    g.check_invariants().unwrap();
    assert!(g.hosts[1].is_active());
}

/// The budget of a simulated call on big hosts decides without the clock: the same call twice
/// gives the same plan, and no clock ends it.
#[test]
fn a_simulated_call_on_big_hosts_is_deterministic_and_stops_at_the_root() {
    let f = small_host_beside_two_big_ones();
    let d = OrigamigSettings::default();
    let a = consolidate(&f, &d);
    let b = consolidate(&f, &d);
    assert_eq!(a.plan, b.plan);
    assert_eq!(a.value_after, b.value_after);
    assert_ne!(a.status, Some(SolveStatus::TimeLimit));
    assert!(a.improves);
}

/// The arrival rule on a big host: FF's host, GIs by best fit over its GPUs (the fullest GPU
/// where the GI fits), where FF alone takes the first GPU with room.
#[test]
fn arrivals_fill_a_partly_used_gpu_of_a_big_host() {
    let mut f = dgx_a100s(1);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(3, 0)]));
    let vm = tenant(2, "3g.20gb");
    let mut o = migplan::policy::origamig::Origamig::new(&OrigamigSettings::default());
    let p = migplan::policy::Policy::on_arrival(&mut o, &f, &vm, 0.0).unwrap();
    assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (0, 3, 4));
    let mut o = migplan::policy::origamig::Origamig::new(&OrigamigSettings::paper());
    let p = migplan::policy::Policy::on_arrival(&mut o, &f, &vm, 0.0).unwrap();
    assert_eq!((p.host, p.gis[0].gpu), (0, 0));
}

/// `experiment big-nodes` on a tiny grid: the journal gets one line a run, the Markdown the
/// goal's table per part, and a second run with the same journal runs nothing and writes the
/// same tables; a journal without the repack bound (written before it) is still read.
#[test]
fn experiment_big_nodes_resumes_from_its_journal() {
    use crate::common::cli::migplan;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("runs.jsonl");
    let md = dir.path().join("big.md");
    let args = [
        "experiment",
        "big-nodes",
        "--scenarios",
        "scenarios/hgx-a100.toml",
        "--loads",
        "1.0",
        "--seeds",
        "1",
        "--holdout-loads",
        "1.0",
        "--holdout-seeds",
        "2",
        "--warmup",
        "0.5",
        "--hours",
        "0.5",
        "--journal",
        journal.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
    ];
    let run = || {
        let out = migplan().args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (first, err) = run();
    assert_eq!(err.lines().filter(|l| l.contains("CPU s")).count(), 8, "{err}");
    let lines = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(lines.lines().count(), 8);
    for p in ["\"ff\"", "\"tc\"", "\"packing\"", "\"origamig\""] {
        assert_eq!(lines.matches(p).count(), 2, "{p}");
    }
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| tuned | hgx-a100 | 1 | 1 |"), "{text}");
    assert!(text.contains("| held out | 1 |"), "{text}");
    let (second, err) = run();
    assert!(!err.contains("CPU s"), "nothing runs again: {err}");
    assert_eq!(first, second);
    // `--json`: the goal per part, as counted here from the journal's lines (seed 1 is the
    // tuned part, seed 2 the held-out one; one paired run each).
    let out = migplan().args(args).arg("--json").output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["runs_done"].as_u64(), v["runs_total"].as_u64()),
        (Some(8), Some(8))
    );
    let runs: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |seed: u64, policy: &str| -> &serde_json::Value {
        runs.iter()
            .find(|r| r["seed"] == seed && r["policy"] == policy)
            .unwrap()
    };
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    for (i, (part, seed)) in [("tuned", 1), ("held out", 2)].into_iter().enumerate() {
        let g = &v["goal"][i];
        let o = of(seed, "origamig");
        let fewer = |p: &str| u64::from(f(o, "active_hosts") < f(of(seed, p), "active_hosts"));
        let admits = u64::from(f(o, "acceptance_pct") >= f(of(seed, "tc"), "acceptance_pct"));
        let moves = u64::from(f(o, "migrations_per_h") < f(of(seed, "tc"), "migrations_per_h"));
        let all = fewer("ff") * fewer("tc") * fewer("packing") * admits * moves;
        assert_eq!(g["part"], part);
        assert_eq!(g["runs"], 1);
        assert_eq!(g["fewer_hosts_than_ff"].as_u64(), Some(fewer("ff")), "{part}");
        assert_eq!(g["fewer_hosts_than_tc"].as_u64(), Some(fewer("tc")), "{part}");
        assert_eq!(
            g["fewer_hosts_than_packing"].as_u64(),
            Some(fewer("packing")),
            "{part}"
        );
        assert_eq!(g["admits_at_least_tc"].as_u64(), Some(admits), "{part}");
        assert_eq!(g["fewer_moves_than_tc"].as_u64(), Some(moves), "{part}");
        assert_eq!(g["all_five"].as_u64(), Some(all), "{part}");
        assert_eq!(f(g, "free_gpus_origamig"), f(o, "free_gpus"));
        assert_eq!(f(g, "free_gpus_tc"), f(of(seed, "tc"), "free_gpus"));
        assert_eq!(f(g, "bound_tc"), f(of(seed, "tc"), "free_gpus_bound"));
        let met = all == 1 && f(o, "free_gpus") >= f(of(seed, "tc"), "free_gpus");
        assert_eq!(g["goal_met"].as_bool(), Some(met), "{part}");
    }
    // No run leaves more whole GPUs free than a repack could.
    for l in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let free = v["free_gpus"].as_f64().unwrap();
        let bound = v["free_gpus_bound"].as_f64().unwrap();
        assert!(bound >= free - 1e-9 && bound <= 128.0, "{l}");
    }
    assert!(!text.contains(" - / - "), "{text}");
    // A journal written before the bound was measured is read as it is: nothing runs again and
    // the bound shows "-".
    let old: String = lines
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("free_gpus_bound");
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(&journal, old).unwrap();
    let (_, err) = run();
    assert!(!err.contains("CPU s"), "nothing runs again: {err}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains(" | - / - | "), "{text}");
    // Lines written before keys held the scenario's fingerprint may have been made under other
    // defaults: every run is made again, and the table is the fresh runs'.
    let unmarked: String = lines
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let c = v["config"].as_str().unwrap();
            let (kept, print) = c.split_once("; fingerprint ").unwrap();
            assert_eq!(print.len(), 16, "{c}");
            v["config"] = kept.into();
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(&journal, unmarked).unwrap();
    let (again, err) = run();
    assert_eq!(err.lines().filter(|l| l.contains("CPU s")).count(), 8, "{err}");
    assert_eq!(std::fs::read_to_string(&journal).unwrap().lines().count(), 16);
    assert_eq!(again, first);
}

/// A grid of four runs a policy: dgx-h100, the tuned part load 1.0 seed 1, the held-out part load
/// 1.1 seed 2, half an hour of warm-up and an hour measured.
const TINY_H100_GRID: [&str; 14] = [
    "--scenarios",
    "scenarios/dgx-h100.toml",
    "--loads",
    "1.0",
    "--seeds",
    "1",
    "--holdout-loads",
    "1.1",
    "--holdout-seeds",
    "2",
    "--warmup",
    "0.5",
    "--hours",
    "1",
];

/// `experiment big-nodes-frontier` on a tiny grid: its default points are the runs of
/// `experiment big-nodes` (OrigaMIG at 0.41 moves a departure, TC every 15 min: the same
/// figures in both journals), the table reads OrigaMIG beside TC's curve, and a second run
/// with the same journal runs nothing.
#[test]
fn frontier_points_at_the_defaults_are_the_big_nodes_runs() {
    use crate::common::cli::migplan;
    let dir = tempfile::tempdir().unwrap();
    let grid = TINY_H100_GRID;
    let journal = dir.path().join("frontier.jsonl");
    let md = dir.path().join("frontier.md");
    let svg = dir.path().join("frontier.svg");
    let frontier = || {
        let out = migplan()
            .args([
                "experiment",
                "big-nodes-frontier",
                "--rates",
                "0.41",
                "--tc-periods",
                "15,30",
            ])
            .args(grid)
            .args([
                "--journal",
                journal.to_str().unwrap(),
                "--markdown",
                md.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (first, err) = frontier();
    assert_eq!(err.lines().filter(|l| l.contains("CPU s")).count(), 6, "{err}");
    let big = dir.path().join("big.jsonl");
    let out = migplan()
        .args(["experiment", "big-nodes", "--others", "tc"])
        .args(grid)
        .args(["--journal", big.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs = |p: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (f, b) = (runs(&journal), runs(&big));
    assert_eq!(b.len(), 4);
    for r in &b {
        let same: Vec<_> = f
            .iter()
            .filter(|x| {
                x["policy"] == r["policy"]
                    && x["seed"] == r["seed"]
                    && x["migrations_per_h"] == r["migrations_per_h"]
                    && x["free_gpus"] == r["free_gpus"]
                    && x["active_hosts"] == r["active_hosts"]
            })
            .collect();
        // TC every 15 min is TC's default; every 30 min is another run (it may match by chance
        // on figures, never on its key).
        assert!(!same.is_empty(), "{r} not in the frontier's journal");
    }
    let tc30 = f
        .iter()
        .filter(|x| x["config"].as_str().unwrap().contains("compaction_min = 30"));
    assert_eq!(tc30.count(), 2);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("| OrigaMIG | 0.41 a departure (default) | 2 |"),
        "{text}"
    );
    assert!(text.contains("| TC | every 15 min (default) | 2 |"), "{text}");
    assert!(text.contains("| TC | every 30 min | 2 |"), "{text}");
    assert!(text.contains("| 0.41 a departure (default) | "), "{text}");
    assert!(
        text.contains("![Whole GPUs free against moves per hour](frontier.svg)"),
        "{text}"
    );
    // One dot and one label a point, and the legend.
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(drawing.matches("<circle").count(), 3, "{drawing}");
    for label in [
        "0.41/dep. (default)",
        "15 min (default)",
        "30 min",
        "\nOrigaMIG\n",
        "\nTC\n",
    ] {
        assert!(drawing.contains(label), "{label}");
    }
    let (second, err) = frontier();
    assert!(!err.contains("CPU s"), "nothing runs again: {err}");
    assert_eq!(first, second);
}

/// `big-nodes-frontier --policy-set`: a variant's points are the runs `big-nodes` makes with the
/// same settings (OrigaMIG does not run again on its journal; TC's points have keys of their
/// own), none of them is labelled the default, and without the settings OrigaMIG's points are
/// other runs.
#[test]
fn a_variants_frontier_points_are_its_big_nodes_runs() {
    use crate::common::cli::migplan;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("runs.jsonl");
    let md = dir.path().join("frontier.md");
    let grid = TINY_H100_GRID
        .into_iter()
        .chain(["--journal", journal.to_str().unwrap()]);
    let variant = ["--policy-set", "gpu_compaction_idle_gpu=false"];
    // Runs in the journal after `args`, OrigaMIG's and TC's.
    let ran = |args: &[&str]| -> (usize, usize) {
        let out = migplan().args(args).args(grid.clone()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let lines = std::fs::read_to_string(&journal).unwrap();
        let n = |p: &str| lines.matches(&format!("\"policy\":\"{p}\"")).count();
        (n("origamig"), n("tc"))
    };
    let big = ["experiment", "big-nodes", "--others", "tc"];
    assert_eq!(ran(&[&big[..], &variant[..]].concat()), (2, 2));
    let frontier = [
        "experiment",
        "big-nodes-frontier",
        "--rates",
        "0.41",
        "--tc-periods",
        "15",
        "--markdown",
        md.to_str().unwrap(),
    ];
    assert_eq!(ran(&[&frontier[..], &variant[..]].concat()), (2, 4));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| OrigaMIG | 0.41 a departure | 2 |"), "{text}");
    assert!(
        text.contains("OrigaMIG's points are the default with gpu_compaction_idle_gpu=false"),
        "{text}"
    );
    // The default's points: OrigaMIG runs again, TC does not.
    assert_eq!(ran(&frontier), (4, 4));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("| OrigaMIG | 0.41 a departure (default) | 2 |"),
        "{text}"
    );
}

/// The arrival rule on a fleet of big hosts chooses the host by TC's best fit among the active
/// ones: a 3g.20gb goes beside a 4g.20gb (its GPU full after it) rather than beside a 1g.5gb on
/// the first active host, where FF (the paper preset) puts it.
#[test]
fn arrivals_go_to_the_active_host_they_fill_best() {
    let mut f = dgx_a100s(3);
    put(&mut f, tenant(1, "1g.5gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "4g.20gb"), at(1, &[(0, 0)]));
    let vm = tenant(3, "3g.20gb");
    let mut o = migplan::policy::origamig::Origamig::new(&OrigamigSettings::default());
    let p = migplan::policy::Policy::on_arrival(&mut o, &f, &vm, 0.0).unwrap();
    assert_eq!((p.host, p.gis[0].gpu, p.gis[0].start), (1, 0, 4));
    let mut o = migplan::policy::origamig::Origamig::new(&OrigamigSettings::paper());
    let p = migplan::policy::Policy::on_arrival(&mut o, &f, &vm, 0.0).unwrap();
    assert_eq!(p.host, 0);
}

/// The compaction's mechanics as they were before the seventh round's defaults (TC's order, no
/// rate of moves, across hosts to any host, every 5 min, one VM across hosts a compaction, no
/// idle GPU, destinations by best fit alone), so
/// that each test below isolates the setting it names;
/// [`the_default_compaction_spends_what_departures_earn_fewest_vms_first`] tests the defaults.
fn plain_compaction() -> OrigamigSettings {
    OrigamigSettings {
        gpu_compaction_min: 5.0,
        gpu_compaction_across_budget: 1,
        gpu_compaction_toward_fuller: false,
        gpu_compaction_fewest_vms_first: false,
        gpu_compaction_moves_per_departure: 0.0,
        gpu_compaction_idle_gpu: false,
        gpu_compaction_fragmentation: 0.0,
        ..OrigamigSettings::default()
    }
}

/// The defaults (docs/results/big-nodes-variants.md, seventh, twelfth, fourteenth and fifteenth
/// rounds):
/// every minute, the GPUs holding the fewest VMs first, at most the moves earned by departures
/// (0.41 a departure from a big host), across hosts toward fuller hosts (or as an exact fill), at
/// most two VMs across a compaction, an idle GPU lent when it vacates two more, destinations by
/// expected fragmentation as well as best fit.
#[test]
fn the_default_compaction_spends_what_departures_earn_fewest_vms_first() {
    use migplan::policy::Policy;
    let d = OrigamigSettings::default();
    assert_eq!(d.gpu_compaction_min, 1.0);
    assert_eq!(d.gpu_compaction_moves_per_departure, 0.41);
    assert!(!d.gpu_compaction_hold_hosts);
    assert!(d.gpu_compaction_idle_gpu);
    assert_eq!(d.gpu_compaction_fragmentation, 1.0);
    assert!(d.gpu_compaction_toward_fuller && d.gpu_compaction_fewest_vms_first);
    assert_eq!((d.gpu_compaction_across, d.gpu_compaction_across_budget), (2, 2));
    let s = OrigamigSettings { theta: 1_000, ..d };
    let f = three_sparse_gpus();
    let period = s.gpu_compaction_min * 60.0;
    let gone = mig_vm(99, "a100-40gb", &["1g.5gb"]);
    let mut o = migplan::policy::origamig::Origamig::new(&s);
    assert!(o.on_step(&f, 1.0).is_none());
    // Nothing earned yet: the default compaction makes no move.
    assert!(o.on_step(&f, 1.0 + period).is_none());
    // Two departures earn 0.82 of a move: still none.
    o.on_departure_from(&f, &gone, Some(0), 1.0 + period);
    o.on_departure_from(&f, &gone, Some(0), 1.0 + period);
    assert!(o.on_step(&f, 1.0 + 2.0 * period).is_none());
    // A third earns the whole move: the GPU of one VM (the 3g.20gb on GPU 1) is vacated, onto
    // GPU 2 beside the 4g.20gb (full after it, so no fragmentation left either). The idle GPU
    // would vacate GPU 0 only by opening one: one net GPU, not two, so it is not lent.
    o.on_departure_from(&f, &gone, Some(0), 1.0 + 2.0 * period);
    let plan = o.on_step(&f, 1.0 + 3.0 * period).expect("one move");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![3]);
    assert_eq!(
        (
            plan.targets[&3].host,
            plan.targets[&3].gis[0].gpu,
            plan.targets[&3].gis[0].start
        ),
        (0, 2, 4)
    );
}

/// `gpu_compaction`: on a big host, a GPU whose tenant fits on another active GPU of the same
/// host is vacated at the next compaction (`gpu_compaction_min`), the tenant keeping its host; on
/// two-GPU hosts (unless `gpu_compaction_small`) and under the paper preset nothing moves. A GPU
/// holding at most `gpu_compaction_across` VMs (2 by default) may send them to another active
/// big host (the budget of one VM across hosts per compaction holds here). (θ is out of reach, so
/// that no consolidation call runs.)
#[test]
fn gpu_compaction_vacates_a_sparse_gpu_of_a_big_host() {
    use migplan::policy::Policy;
    let step = |f: &Fleet, s: &OrigamigSettings| {
        let s = OrigamigSettings {
            theta: 1_000,
            ..s.clone()
        };
        let mut o = migplan::policy::origamig::Origamig::new(&s);
        // The first step sets the compaction's clock; the second is a period later.
        assert!(o.on_step(f, 1.0).is_none());
        o.on_step(f, 1.0 + s.gpu_compaction_min * 60.0)
    };
    let mut f = dgx_a100s(1);
    put(&mut f, tenant(1, "1g.5gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "2g.10gb"), at(0, &[(1, 0)]));
    f.check_invariants().unwrap();
    let d = plain_compaction();
    assert!(d.gpu_compaction && d.gpu_compaction_across == 2 && !d.gpu_compaction_small);
    assert_eq!(d.gpu_compaction_min, 5.0);
    let plan = step(&f, &d).expect("a compaction plan");
    assert_eq!(plan.targets.len(), 1);
    let to = &plan.targets[&1];
    assert_eq!((to.host, to.gis[0].gpu), (0, 1));
    assert!(step(&f, &OrigamigSettings::paper()).is_none());
    // Two-GPU hosts: the same two tenants move only with `gpu_compaction_small`.
    let mut small = crate::common::fleet::a100s(1);
    put(&mut small, tenant(1, "1g.5gb"), at(0, &[(0, 0)]));
    put(&mut small, tenant(2, "2g.10gb"), at(0, &[(1, 0)]));
    assert!(step(&small, &d).is_none());
    // (Their own period, `gpu_compaction_small_min`, set to the step's 5 min.)
    let small_too = OrigamigSettings {
        gpu_compaction_small: true,
        gpu_compaction_small_min: d.gpu_compaction_min,
        ..d.clone()
    };
    let plan = step(&small, &small_too).expect("a compaction plan");
    assert_eq!(plan.targets[&1].gis[0].gpu, 1);
    // Across hosts: dgx1's first GPU is full, so its lone 1g.5gb can leave its GPU only for
    // dgx0's GPU beside the 2g.10gb: by default, not with `gpu_compaction_across = 0`.
    let mut two = dgx_a100s(2);
    put(&mut two, tenant(2, "2g.10gb"), at(0, &[(1, 0)]));
    put(&mut two, tenant(3, "4g.20gb"), at(1, &[(0, 0)]));
    put(&mut two, tenant(4, "3g.20gb"), at(1, &[(0, 4)]));
    put(&mut two, tenant(5, "1g.5gb"), at(1, &[(1, 0)]));
    two.check_invariants().unwrap();
    let within = OrigamigSettings {
        gpu_compaction_across: 0,
        ..d.clone()
    };
    assert!(step(&two, &within).is_none());
    let plan = step(&two, &d).expect("a compaction plan");
    let to = &plan.targets[&5];
    assert_eq!((plan.targets.len(), to.host, to.gis[0].gpu), (1, 0, 1));
}

/// θ counted per GPU (`host_scaled_limits`): ceil(θ × g / 2) on hosts of g > 2 GPUs, θ as
/// written on two-GPU hosts.
#[test]
fn theta_counts_gpus_on_big_hosts() {
    assert_eq!(neighborhood::scaled_theta(1, 2), 1);
    assert_eq!(neighborhood::scaled_theta(3, 1), 3);
    assert_eq!(neighborhood::scaled_theta(1, 8), 4);
    assert_eq!(neighborhood::scaled_theta(2, 8), 8);
    assert_eq!(neighborhood::scaled_theta(1, 3), 2);
    assert_eq!(neighborhood::scaled_theta(0, 8), 4);
}

/// One GPU compaction of `f` under `s` (θ out of reach, so no call runs): the first step sets
/// the clocks, the second comes `after_min` minutes later.
fn compaction_after(f: &Fleet, s: &OrigamigSettings, after_min: f64) -> Option<migplan::plan::Plan> {
    use migplan::policy::Policy;
    let s = OrigamigSettings {
        theta: 1_000,
        ..s.clone()
    };
    let mut o = migplan::policy::origamig::Origamig::new(&s);
    assert!(o.on_step(f, 1.0).is_none());
    o.on_step(f, 1.0 + after_min * 60.0)
}

/// The compaction's moves across hosts: a GPU of two VMs may send them to another host
/// (`gpu_compaction_across = 2`, the default), at most `gpu_compaction_across_budget` VMs (1
/// here, 2 by default) per compaction; `gpu_compaction_across_tenant` lets a GPU cross with more VMs when
/// one is a tenant.
#[test]
fn gpu_compaction_across_hosts_keeps_to_its_budget() {
    let d = plain_compaction();
    assert_eq!((d.gpu_compaction_across, d.gpu_compaction_across_budget), (2, 1));
    assert_eq!(d.gpu_compaction_across_tenant, 0);
    assert_eq!(OrigamigSettings::default().gpu_compaction_across_budget, 2);
    // dgx0's first GPU holds a 4g.20gb (room for three 1g.5gb); dgx1's first GPU holds two
    // 1g.5gb, its only VMs, with no other active GPU on dgx1 to take them.
    let two_on_one = |jobs: bool| {
        let mut f = dgx_a100s(2);
        put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
        let vm = |id| {
            if jobs {
                mig_vm(id, "a100-40gb", &["1g.5gb"])
            } else {
                tenant(id, "1g.5gb")
            }
        };
        put(&mut f, vm(2), at(1, &[(0, 0)]));
        put(&mut f, vm(3), at(1, &[(0, 1)]));
        f.check_invariants().unwrap();
        f
    };
    let f = two_on_one(false);
    // Vacating dgx1's GPU sends two VMs across: over the budget of 1, so nothing moves.
    assert!(compaction_after(&f, &d, 5.0).is_none());
    // Without a budget both go beside the 4g.20gb.
    let unlimited = OrigamigSettings {
        gpu_compaction_across_budget: 0,
        ..d.clone()
    };
    let plan = compaction_after(&f, &unlimited, 5.0).expect("a compaction plan");
    assert_eq!(plan.targets.len(), 2);
    for id in [2, 3] {
        assert_eq!((plan.targets[&id].host, plan.targets[&id].gis[0].gpu), (0, 0));
    }
    // A GPU of one VM only: the two stay; as tenants, `_tenant = 2` lets them go, as jobs not.
    let one = OrigamigSettings {
        gpu_compaction_across: 1,
        ..unlimited.clone()
    };
    assert!(compaction_after(&f, &one, 5.0).is_none());
    let tenants = OrigamigSettings {
        gpu_compaction_across_tenant: 2,
        ..one.clone()
    };
    assert_eq!(
        compaction_after(&f, &tenants, 5.0).map(|p| p.targets.len()),
        Some(2)
    );
    assert!(matches!(
        two_on_one(true).vm(2).map(|v| v.kind),
        Some(migplan::fleet::VmKind::Job)
    ));
    assert!(compaction_after(&two_on_one(true), &tenants, 5.0).is_none());
    assert_eq!(
        compaction_after(&two_on_one(true), &unlimited, 5.0).map(|p| p.targets.len()),
        Some(2)
    );
    // Two GPUs of one 1g.5gb each on dgx1: the first goes beside the 4g.20gb (the fullest GPU
    // it fits); the second would be a second VM across hosts, and its only other place on dgx1
    // is the GPU just vacated, so it stays.
    let mut f = dgx_a100s(2);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "1g.5gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(3, "1g.5gb"), at(1, &[(1, 0)]));
    f.check_invariants().unwrap();
    let plan = compaction_after(&f, &d, 5.0).expect("a compaction plan");
    assert_eq!(plan.targets.len(), 1);
    assert_eq!((plan.targets[&2].host, plan.targets[&2].gis[0].gpu), (0, 0));
    let plan = compaction_after(&f, &unlimited, 5.0).expect("a compaction plan");
    assert_eq!(plan.targets.len(), 2);
    assert!(plan.targets.values().all(|p| p.host == 0 && p.gis[0].gpu == 0));
}

/// Two-GPU hosts (`gpu_compaction_small`) keep their own period, `gpu_compaction_small_min`;
/// with `gpu_compaction_small_empty_host` a GPU is vacated only when that empties its host.
#[test]
fn gpu_compaction_of_two_gpu_hosts_has_its_period_and_may_only_empty_hosts() {
    let small = OrigamigSettings {
        gpu_compaction_small: true,
        gpu_compaction_small_min: 30.0,
        ..plain_compaction()
    };
    // h0 holds a 4g.20gb; h1 a lone 1g.5gb.
    let mut f = crate::common::fleet::a100s(2);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "1g.5gb"), at(1, &[(0, 0)]));
    f.check_invariants().unwrap();
    assert!(
        compaction_after(&f, &small, 5.0).is_none(),
        "not due before 30 min"
    );
    let plan = compaction_after(&f, &small, 30.0).expect("a compaction plan");
    assert_eq!((plan.targets.len(), plan.targets[&2].host), (1, 0));
    let emptying = OrigamigSettings {
        gpu_compaction_small_empty_host: true,
        ..small.clone()
    };
    let plan = compaction_after(&f, &emptying, 30.0).expect("h1 switched off");
    assert_eq!((plan.targets.len(), plan.targets[&2].host), (1, 0));
    // A second 1g.5gb on h1's other GPU: vacating either GPU leaves h1 on.
    put(&mut f, tenant(3, "1g.5gb"), at(1, &[(1, 0)]));
    f.check_invariants().unwrap();
    assert_eq!(
        compaction_after(&f, &small, 30.0).map(|p| p.targets.len()),
        Some(1)
    );
    assert!(compaction_after(&f, &emptying, 30.0).is_none());
}

/// Host emptying on two-GPU hosts (`host_emptying_vms`): every `host_emptying_min` (10), an
/// active host of at most that many VMs is emptied onto GPUs in use elsewhere, least used host
/// first, within `host_emptying_budget`; a host that received a VM is not emptied after it.
#[test]
fn host_emptying_switches_small_hosts_off_within_its_limits() {
    let emptying = |vms: usize, budget: usize| OrigamigSettings {
        host_emptying_vms: vms,
        host_emptying_budget: budget,
        ..OrigamigSettings::default()
    };
    // h0: a 4g.20gb on GPU 0 (slices 0-3 taken). h1: one 1g.5gb on each GPU. h2: one 1g.5gb.
    let mut f = crate::common::fleet::a100s(3);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "1g.5gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(3, "1g.5gb"), at(1, &[(1, 0)]));
    put(&mut f, tenant(4, "1g.5gb"), at(2, &[(0, 0)]));
    f.check_invariants().unwrap();
    assert_eq!(OrigamigSettings::default().host_emptying_vms, 2);
    assert!(compaction_after(&f, &emptying(0, 0), 10.0).is_none(), "0 is off");
    assert!(
        compaction_after(&f, &emptying(2, 0), 5.0).is_none(),
        "not due before 10 min"
    );
    // h2's VM (1 slice, the least used host) and then both of h1's go beside the 4g.20gb, the
    // fullest GPU (three of its four free slices): hosts 1 and 2 switch off. h0, a receiver,
    // is left alone.
    let plan = compaction_after(&f, &emptying(2, 0), 10.0).expect("a host emptying");
    assert_eq!(plan.targets.len(), 3);
    assert!(plan.targets.values().all(|p| p.host == 0 && p.gis[0].gpu == 0));
    let mut g = f.clone();
    for (&id, to) in &plan.targets {
        g.move_vm(id, to.clone()).unwrap();
        g.check_invariants().unwrap();
    }
    assert_eq!(g.hosts.iter().filter(|h| !h.vms.is_empty()).count(), 1);
    // A budget of two VMs: h2 is emptied, h1 would make three.
    let plan = compaction_after(&f, &emptying(2, 2), 10.0).expect("a host emptying");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![4]);
    // With a budget of three, both hosts.
    let plan = compaction_after(&f, &emptying(2, 3), 10.0).expect("a host emptying");
    assert_eq!(plan.targets.len(), 3);
    // Hosts of one VM only: h1 stays, h2's 1g.5gb goes to h0.
    let plan = compaction_after(&f, &emptying(1, 0), 10.0).expect("a host emptying");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![4]);
    assert_eq!(plan.targets[&4].host, 0);
    // With no room on a GPU in use elsewhere nothing moves: h0's GPU 0 full (a 3g.20gb beside
    // the 4g.20gb), h1 alone with its two 1g.5gb.
    let mut f = crate::common::fleet::a100s(2);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(5, "3g.20gb"), at(0, &[(0, 4)]));
    put(&mut f, tenant(2, "1g.5gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(3, "1g.5gb"), at(1, &[(1, 0)]));
    f.check_invariants().unwrap();
    assert!(compaction_after(&f, &emptying(2, 0), 10.0).is_none());
}

/// `host_emptying_big_vms`: when the GPU compaction of big hosts moves nothing, a big host of
/// at most that many VMs is emptied onto GPUs in use on the others.
#[test]
fn host_emptying_on_big_hosts_follows_a_compaction_that_moves_nothing() {
    // dgx0's GPU 0 holds a 4g.20gb; dgx1's GPU 0 two 1g.5gb, its only VMs: vacating that GPU
    // sends two VMs across hosts, over the compaction's budget of one.
    let mut f = dgx_a100s(2);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "1g.5gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(3, "1g.5gb"), at(1, &[(0, 1)]));
    f.check_invariants().unwrap();
    let d = OrigamigSettings::default();
    assert_eq!(d.host_emptying_big_vms, 0);
    assert!(compaction_after(&f, &d, 5.0).is_none());
    let one = OrigamigSettings {
        host_emptying_big_vms: 1,
        ..d.clone()
    };
    assert!(compaction_after(&f, &one, 5.0).is_none(), "dgx1 runs two VMs");
    let two = OrigamigSettings {
        host_emptying_big_vms: 2,
        ..d.clone()
    };
    let plan = compaction_after(&f, &two, 5.0).expect("dgx1 emptied");
    assert_eq!(plan.targets.len(), 2);
    assert!(plan.targets.values().all(|p| p.host == 0 && p.gis[0].gpu == 0));
}

/// `arrival_kind_affinity`: a job goes to the GPU that holds only jobs, a tenant to the one that
/// holds only tenants, best fit within each; a GPU in use that holds the other kind still comes
/// before an idle GPU. Off (the default), best fit alone puts the job beside the 4g.20gb.
#[test]
fn kind_affinity_puts_an_arrival_beside_its_own_kind() {
    let job = |id| mig_vm(id, "a100-40gb", &["1g.5gb"]);
    let mut f = dgx_a100s(1);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, job(2), at(0, &[(1, 0)]));
    f.check_invariants().unwrap();
    let gpu = |s: &OrigamigSettings, f: &Fleet, vm: &Vm| {
        let mut o = migplan::policy::origamig::Origamig::new(s);
        let p = migplan::policy::Policy::on_arrival(&mut o, f, vm, 0.0).unwrap();
        assert_eq!(p.host, 0);
        p.gis[0].gpu
    };
    let d = OrigamigSettings::default();
    assert!(!d.arrival_kind_affinity);
    let aff = OrigamigSettings {
        arrival_kind_affinity: true,
        ..d.clone()
    };
    assert_eq!(gpu(&d, &f, &job(3)), 0);
    assert_eq!(gpu(&aff, &f, &job(3)), 1);
    assert_eq!(gpu(&aff, &f, &tenant(3, "1g.5gb")), 0);
    // Without the job's GPU: the tenant's GPU, in use, before the six idle ones.
    let mut f = dgx_a100s(1);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    assert_eq!(gpu(&aff, &f, &job(3)), 0);
}

/// dgx0: GPU 0 holds two 1g.5gb (joint utilization 4/15), GPU 1 a 3g.20gb (7/15), GPU 2 a
/// 4g.20gb (8/15), all tenants.
fn three_sparse_gpus() -> Fleet {
    let mut f = dgx_a100s(1);
    fill_three_sparse(&mut f);
    f
}

fn fill_three_sparse(f: &mut Fleet) {
    put(f, tenant(1, "1g.5gb"), at(0, &[(0, 0)]));
    put(f, tenant(2, "1g.5gb"), at(0, &[(0, 1)]));
    put(f, tenant(3, "3g.20gb"), at(0, &[(1, 0)]));
    put(f, tenant(4, "4g.20gb"), at(0, &[(2, 0)]));
    f.check_invariants().unwrap();
}

/// `gpu_compaction_fewest_vms_first`: TC's order vacates GPU 0 first, its two 1g.5gb going
/// beside the 4g.20gb (two moves, and then the 3g.20gb no longer fits there); fewest VMs first
/// vacates GPU 1 with one move, the 3g.20gb filling GPU 2, and GPU 0 then has nowhere to go.
#[test]
fn fewest_vms_first_vacates_the_gpu_one_move_frees() {
    let f = three_sparse_gpus();
    let d = plain_compaction();
    assert!(!d.gpu_compaction_fewest_vms_first);
    assert!(OrigamigSettings::default().gpu_compaction_fewest_vms_first);
    let plan = compaction_after(&f, &d, 5.0).expect("a compaction plan");
    let moved: Vec<_> = plan.targets.keys().copied().collect();
    assert_eq!(moved, vec![1, 2]);
    assert!(plan.targets.values().all(|p| p.host == 0 && p.gis[0].gpu == 2));
    let fewest = OrigamigSettings {
        gpu_compaction_fewest_vms_first: true,
        ..d.clone()
    };
    let plan = compaction_after(&f, &fewest, 5.0).expect("a compaction plan");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![3]);
    assert_eq!(
        (plan.targets[&3].gis[0].gpu, plan.targets[&3].gis[0].start),
        (2, 4)
    );
}

/// `gpu_compaction_moves_per_departure`: the compaction of big hosts makes at most the whole
/// moves earned by departures and not yet spent, up to `gpu_compaction_moves_cap`.
#[test]
fn gpu_compaction_moves_within_what_departures_earned() {
    use migplan::policy::Policy;
    let f = three_sparse_gpus();
    let s = OrigamigSettings {
        theta: 1_000,
        gpu_compaction_moves_per_departure: 0.5,
        ..plain_compaction()
    };
    assert_eq!(s.gpu_compaction_moves_cap, 4.0);
    let period = s.gpu_compaction_min * 60.0;
    let gone = mig_vm(99, "a100-40gb", &["1g.5gb"]);
    let mut o = migplan::policy::origamig::Origamig::new(&s);
    assert!(o.on_step(&f, 1.0).is_none());
    // Nothing earned: no move.
    assert!(o.on_step(&f, 1.0 + period).is_none());
    // Two departures earn one move: GPU 0 would take two, so only GPU 1's 3g.20gb moves.
    o.on_departure_from(&f, &gone, Some(0), 2.0 * period);
    o.on_departure_from(&f, &gone, Some(0), 2.0 * period);
    let plan = o.on_step(&f, 1.0 + 2.0 * period).expect("one move");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![3]);
    // That move is spent.
    assert!(o.on_step(&f, 1.0 + 3.0 * period).is_none());
    // Ten departures earn five moves, held to the cap of four: TC's order again, two moves.
    for _ in 0..10 {
        o.on_departure_from(&f, &gone, Some(0), 4.0 * period);
    }
    let plan = o.on_step(&f, 1.0 + 4.0 * period).expect("two moves");
    assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
    // Departures from a two-GPU host earn nothing for the big hosts' compaction.
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let curve = c.curve_id("dgx-a100").unwrap();
    let hosts = vec![
        Host::new("dgx0", 256, 2048, vec![a100; 8], curve),
        Host::new("small", 64, 512, vec![a100; 2], curve),
    ];
    let mut mixed = Fleet::new(c, hosts);
    fill_three_sparse(&mut mixed);
    let mut o = migplan::policy::origamig::Origamig::new(&s);
    assert!(o.on_step(&mixed, 1.0).is_none());
    for _ in 0..4 {
        o.on_departure_from(&mixed, &gone, Some(1), 1.0);
    }
    assert!(o.on_step(&mixed, 1.0 + period).is_none());
    o.on_departure_from(&mixed, &gone, Some(0), 1.0 + period);
    o.on_departure_from(&mixed, &gone, Some(0), 1.0 + period);
    assert!(o.on_step(&mixed, 1.0 + 2.0 * period).is_some());
    // The cap: three departures at one move each, held to one.
    let capped = OrigamigSettings {
        gpu_compaction_moves_cap: 1.0,
        gpu_compaction_moves_per_departure: 1.0,
        ..s.clone()
    };
    let mut o = migplan::policy::origamig::Origamig::new(&capped);
    assert!(o.on_step(&f, 1.0).is_none());
    for _ in 0..3 {
        o.on_departure_from(&f, &gone, Some(0), 1.0);
    }
    let plan = o.on_step(&f, 1.0 + period).expect("one move");
    assert_eq!(plan.targets.len(), 1);
}

/// `gpu_compaction_idle_gpu`: no GPU of this host can be vacated into the others, but lending
/// idle GPU 3 vacates two: GPU 2's 3g.20gb goes to GPU 3 (slices 4-7) and its 1g.5gb to slice 3
/// of GPU 0; GPU 4's two 2g.10gb go to GPU 3 (slices 0-1 and 2-3) and its 1g.5gb to slice 1 of
/// GPU 1. Two GPUs vacated for the one lent: kept. Off (the default), nothing moves.
#[test]
fn an_idle_gpu_lent_to_the_compaction_vacates_two() {
    let mut f = dgx_a100s(1);
    let gis: [(VmId, &str, usize, u8); 13] = [
        (1, "2g.10gb", 0, 0),
        (2, "3g.20gb", 0, 4),
        (3, "1g.5gb", 0, 2),
        (4, "1g.5gb", 1, 0),
        (5, "3g.20gb", 1, 4),
        (6, "2g.10gb", 1, 2),
        (7, "3g.20gb", 2, 0),
        (8, "1g.5gb", 2, 4),
        (9, "2g.10gb", 4, 0),
        (10, "2g.10gb", 4, 2),
        (11, "1g.5gb", 4, 4),
        (12, "4g.20gb", 5, 0),
        (13, "2g.10gb", 5, 4),
    ];
    for (id, p, g, z) in gis {
        put(&mut f, mig_vm(id, "a100-40gb", &[p]), at(0, &[(g, z)]));
    }
    f.check_invariants().unwrap();
    let d = plain_compaction();
    assert!(!d.gpu_compaction_idle_gpu);
    assert!(compaction_after(&f, &d, 5.0).is_none());
    let idle = OrigamigSettings {
        gpu_compaction_idle_gpu: true,
        ..d.clone()
    };
    let plan = compaction_after(&f, &idle, 5.0).expect("a compaction plan");
    let got: Vec<(VmId, usize, u8)> = plan
        .targets
        .iter()
        .map(|(&id, p)| (id, p.gis[0].gpu, p.gis[0].start))
        .collect();
    assert_eq!(got, vec![(7, 3, 4), (8, 0, 3), (9, 3, 0), (10, 3, 2), (11, 1, 1)]);
    assert!(plan.targets.values().all(|p| p.host == 0));
}

/// `arrival_fragmentation`: dgx0's GPU 0 holds a 4g.20gb and a 2g.10gb (slices 6-7 free), GPU 1
/// three 1g.5gb (slices 3-7 free). A 1g.5gb fills GPU 0 best (joint utilization 14/15 against
/// 8/15 on GPU 1), but there it leaves slice 7, which no profile can use (expected
/// fragmentation 9/6 to 6/6), where on GPU 1 at slice 3 (Eq. 3's start) it leaves slices 4-7,
/// which a 3g.20gb or two 1g.10gb fill (16/6 to 11/6). Weighed by w, GPU 1 wins when
/// 8/15 + 5w/6 > 14/15 + w/2, that is above w = 1.2: best fit (0) and the default (0.3) keep
/// GPU 0, 2 takes GPU 1.
#[test]
fn arrival_fragmentation_weighs_the_room_a_gi_leaves_against_best_fit() {
    let f = full_but_two_and_three_small();
    let slot = |w: f64| {
        let s = OrigamigSettings {
            arrival_fragmentation: w,
            ..OrigamigSettings::default()
        };
        let mut o = migplan::policy::origamig::Origamig::new(&s);
        let p = migplan::policy::Policy::on_arrival(&mut o, &f, &tenant(9, "1g.5gb"), 0.0).unwrap();
        assert_eq!(p.host, 0);
        (p.gis[0].gpu, p.gis[0].start)
    };
    assert_eq!(OrigamigSettings::default().arrival_fragmentation, 0.3);
    assert_eq!(slot(0.3), (0, 6));
    gpu_1_wins_above_1_2(&slot);
}

/// dgx0's GPU 0 with a 4g.20gb and a 2g.10gb (slices 6-7 free), GPU 1 with three 1g.5gb
/// (slices 3-7 free).
fn full_but_two_and_three_small() -> Fleet {
    let mut f = dgx_a100s(1);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "2g.10gb"), at(0, &[(0, 4)]));
    for (i, z) in [0u8, 1, 2].into_iter().enumerate() {
        put(&mut f, tenant(3 + i as VmId, "1g.5gb"), at(0, &[(1, z)]));
    }
    f.check_invariants().unwrap();
    f
}

/// A 1g.5gb placed on [`full_but_two_and_three_small`] with the fragmentation weight w: slice 6
/// of GPU 0 by best fit (w = 0) and up to w = 1.2, slice 3 of GPU 1 above.
fn gpu_1_wins_above_1_2(slot: &dyn Fn(f64) -> (usize, u8)) {
    assert_eq!(slot(0.0), (0, 6));
    assert_eq!(slot(1.1), (0, 6));
    assert_eq!(slot(1.3), (1, 3));
    assert_eq!(slot(2.0), (1, 3));
}

/// `gpu_compaction_fragmentation`: the arrival test's GPUs 0 and 1 on dgx0 (a 4g.20gb and a
/// 2g.10gb, slices 6-7 free; three 1g.5gb, slices 3-7 free), and a lone 1g.5gb on GPU 2, the
/// least utilized, which TC's order vacates first. Its move is the arrival's choice again: best
/// fit sends it to slice 6 of GPU 0 (joint utilization 14/15 against 8/15), where it leaves
/// slice 7 that no profile uses; weighed by w, slice 3 of GPU 1 wins above w = 1.2 (when
/// 8/15 + 5w/6 is more than 14/15 + w/2). Nothing else moves: the 4g.20gb starts only at slice
/// 0, and the three 1g.5gb find no start once GPU 2 is vacated.
#[test]
fn gpu_compaction_fragmentation_weighs_the_room_a_move_leaves_against_best_fit() {
    let mut f = full_but_two_and_three_small();
    put(&mut f, tenant(6, "1g.5gb"), at(0, &[(2, 0)]));
    f.check_invariants().unwrap();
    let slot = |w: f64| {
        let s = OrigamigSettings {
            gpu_compaction_fragmentation: w,
            ..plain_compaction()
        };
        let plan = compaction_after(&f, &s, 5.0).expect("a compaction plan");
        assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![6]);
        let to = &plan.targets[&6];
        assert_eq!(to.host, 0);
        (to.gis[0].gpu, to.gis[0].start)
    };
    assert_eq!(OrigamigSettings::default().gpu_compaction_fragmentation, 1.0);
    assert_eq!(slot(1.0), (0, 6));
    gpu_1_wins_above_1_2(&slot);
}

/// `gpu_compaction_exact_fill`: dgx2 (the fullest, 20 memory slices) has a 3g.20gb alone on GPU 0
/// and two 7g.40gb; dgx1 (12) a 4g.20gb and a 7g.40gb; dgx0 (4, the emptiest) a 4g.20gb. No GPU
/// can be vacated toward a fuller host; the 3g.20gb fills slices 4-7 beside either 4g.20gb
/// exactly. Without exact fills nothing moves; with them it goes to dgx1, dgx0 being spared
/// as the next host to switch off (`gpu_compaction_exact_fill_spare = 1`), or to dgx0 (the
/// lower host on a tie) when none is spared.
#[test]
fn an_exact_fill_may_go_to_an_emptier_host_but_not_the_emptiest() {
    let mut f = dgx_a100s(3);
    put(&mut f, tenant(1, "4g.20gb"), at(0, &[(0, 0)]));
    put(&mut f, tenant(2, "4g.20gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(3, "7g.40gb"), at(1, &[(1, 0)]));
    put(&mut f, tenant(4, "3g.20gb"), at(2, &[(0, 0)]));
    put(&mut f, tenant(5, "7g.40gb"), at(2, &[(1, 0)]));
    put(&mut f, tenant(6, "7g.40gb"), at(2, &[(2, 0)]));
    f.check_invariants().unwrap();
    let d = OrigamigSettings::default();
    assert!(d.gpu_compaction_exact_fill);
    assert_eq!(d.gpu_compaction_exact_fill_spare, 1);
    let s = OrigamigSettings {
        gpu_compaction_toward_fuller: true,
        gpu_compaction_fewest_vms_first: true,
        ..plain_compaction()
    };
    let off = OrigamigSettings {
        gpu_compaction_exact_fill: false,
        ..s.clone()
    };
    assert!(compaction_after(&f, &off, 5.0).is_none());
    let target = |s: &OrigamigSettings| {
        let plan = compaction_after(&f, s, 5.0).expect("a compaction plan");
        assert_eq!(plan.targets.keys().copied().collect::<Vec<_>>(), vec![4]);
        let p = &plan.targets[&4];
        (p.host, p.gis[0].gpu, p.gis[0].start)
    };
    assert_eq!(target(&s), (1, 0, 4));
    let none_spared = OrigamigSettings {
        gpu_compaction_exact_fill_spare: 0,
        ..s.clone()
    };
    assert_eq!(target(&none_spared), (0, 0, 4));
    // Two spared: dgx1 too, so nothing moves.
    let two_spared = OrigamigSettings {
        gpu_compaction_exact_fill_spare: 2,
        ..s.clone()
    };
    assert!(compaction_after(&f, &two_spared, 5.0).is_none());
}

/// `gpu_compaction_hold_hosts`: until a compaction's moves end, the GPUs they leave take no
/// arrival (their VMs run there until their copy ends, though the fleet already shows the room
/// free); by default the rest of their hosts take arrivals meanwhile, and with `true` the whole
/// hosts are held, as §5.4 holds a call's M̂. Here dgx1's lone 1g.5gb leaves its GPU 1 for GPU 1
/// of dgx0, a copy across hosts (a move within a host copies nothing and ends at once). dgx0 has
/// 40 GB of RAM left, so a 4g.20gb (64 GB) that arrives then has dgx1's GPUs 1 and 7 or an idle
/// host: during the move it takes GPU 7 by default and dgx2 with the hosts held; after the move,
/// GPU 1, the first empty GPU.
#[test]
fn a_compaction_holds_the_gpus_its_moves_leave_until_they_end() {
    use migplan::policy::Policy;
    let mut f = dgx_a100s(3);
    let ram_hog = Vm {
        ram_gb: 2048 - 40,
        ..tenant(2, "2g.10gb")
    };
    put(&mut f, ram_hog, at(0, &[(1, 0)]));
    put(&mut f, tenant(3, "4g.20gb"), at(1, &[(0, 0)]));
    put(&mut f, tenant(4, "3g.20gb"), at(1, &[(0, 4)]));
    put(&mut f, tenant(5, "1g.5gb"), at(1, &[(1, 0)]));
    for k in 2..7 {
        put(&mut f, tenant(10 + k as u64, "7g.40gb"), at(1, &[(k, 0)]));
    }
    let arrival = tenant(6, "4g.20gb");
    assert_eq!(arrival.ram_gb, 64);
    assert!(!OrigamigSettings::default().gpu_compaction_hold_hosts);
    let run = |hold_hosts: bool| {
        let s = OrigamigSettings {
            theta: 1_000,
            gpu_compaction_hold_hosts: hold_hosts,
            ..plain_compaction()
        };
        let mut o = migplan::policy::origamig::Origamig::new(&s);
        assert!(o.on_step(&f, 1.0).is_none());
        let now = 1.0 + s.gpu_compaction_min * 60.0;
        let plan = o.on_step(&f, now).expect("a compaction plan");
        let to = plan.targets[&5].clone();
        assert_eq!((plan.targets.len(), to.host, to.gis[0].gpu), (1, 0, 1));
        // The moves' clock at the default 12.5 Gbit/s.
        let end = now + migplan::policy::tc::moves_duration_s(&f, &plan, 12.5);
        assert!(end > now + 1.0, "the move takes {} s", end - now);
        let mut g = f.clone();
        g.move_vm(5, to).unwrap();
        g.check_invariants().unwrap();
        let slot = |t: f64, o: &mut migplan::policy::origamig::Origamig| {
            let p = o.on_arrival(&g, &arrival, t).expect("a placement");
            (p.host, p.gis[0].gpu)
        };
        (
            slot(now + 1.0, &mut o),
            slot(end - 0.01, &mut o),
            slot(end + 0.01, &mut o),
        )
    };
    assert_eq!(run(false), ((1, 7), (1, 7), (1, 1)));
    assert_eq!(run(true), ((2, 0), (2, 0), (1, 1)));
}
