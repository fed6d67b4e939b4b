//! The Kubernetes regimes over simulated time (`migplan::regime`): the multi-tenant worked
//! example planned by the scheduled layout planner, thrash counted by hand at hysteresis 1 and
//! 3, an exact menu with nothing pending, a missing profile fixed after H periods, the drain of
//! a busy node with its evictions, and dynamic MIG.

use migplan::catalog::embedded;
use migplan::ops::layouts;
use migplan::regime::{GpuSpec, NodeSpec, Pod, Run, Setup};
use migplan::scenario::{PluginChoice, RegimeKind, RegimeSettings};
use std::collections::BTreeMap;

const H: f64 = 3600.0;

fn h100() -> usize {
    embedded().model_id("h100-80gb").unwrap()
}

fn layout(name: &str) -> GpuSpec {
    let l = layouts::embedded().get(h100(), name).unwrap();
    GpuSpec {
        model: h100(),
        mig_enabled: l.mig_enabled,
        counts: l.counts.clone(),
    }
}

fn node(name: &str, gpus: &[&str]) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        cores: 128,
        ram_gb: 1024,
        curve: embedded().default_curve(),
        gpus: gpus.iter().map(|g| layout(g)).collect(),
    }
}

/// Pods of `profiles` (name, count) from id `first`, arriving at `t`.
fn pods(first: u64, t: f64, lifetime: Option<f64>, profiles: &[(&str, u32)]) -> Vec<Pod> {
    let m = embedded().model(h100());
    let mut out = Vec::new();
    for &(p, n) in profiles {
        for _ in 0..n {
            out.push(Pod {
                id: first + out.len() as u64,
                gis: vec![(h100(), m.profile(p).unwrap())],
                cores: 4,
                ram_gb: 16,
                arrival: t,
                lifetime,
            });
        }
    }
    out
}

fn settings(h: u32) -> RegimeSettings {
    RegimeSettings {
        kind: RegimeKind::StaticLayouts,
        hysteresis: Some(h),
        forecast_h: 0.0,
        ..RegimeSettings::default()
    }
}

fn setup(nodes: Vec<NodeSpec>, s: RegimeSettings, arrivals: Vec<Pod>, horizon: f64) -> Setup {
    let menu: Vec<_> = layouts::embedded()
        .planner_menu(h100())
        .into_iter()
        .cloned()
        .collect();
    Setup {
        catalog: embedded(),
        nodes,
        menus: BTreeMap::from([(h100(), menu)]),
        hysteresis: s.hysteresis.unwrap_or(3),
        settings: s,
        running: Vec::new(),
        arrivals,
        warmup_s: 0.0,
        horizon_s: horizon,
    }
}

const TENANTS: [(&str, u32); 4] = [("1g.10gb", 4), ("2g.20gb", 2), ("3g.40gb", 2), ("7g.80gb", 1)];

fn layouts_of(run: &Run) -> Vec<String> {
    run.view().concat().into_iter().map(|g| g.layout).collect()
}

#[test]
fn the_worked_example_two_all_balanced_one_whole_gpu_3_free() {
    let empty = ["all-enabled"; 4];
    for h in [1u32, 3] {
        let s = setup(
            vec![node("gpu-node-07", &empty)],
            settings(h),
            pods(1, 0.0, None, &TENANTS),
            6.0 * H,
        );
        let mut run = Run::new(s);
        // Before the H-th run of the planner nothing changes and the nine pods wait.
        run.run_until(h as f64 * H - 1.0);
        assert_eq!(layouts_of(&run), empty, "H = {h}");
        assert_eq!(run.pending_by_profile().values().sum::<usize>(), 9);
        if h > 1 {
            let v = &run.view()[0];
            assert_eq!(v[2].next.as_deref(), Some("whole"));
            assert_eq!(v[2].streak, h - 1);
        }
        run.run_until(h as f64 * H);
        assert_eq!(
            layouts_of(&run),
            ["all-balanced", "all-balanced", "whole", "all-enabled"]
        );
        assert_eq!(run.drains().len(), 1);
        // The node serves nothing for the re-layout time (600 s), then every pod starts.
        run.run_until(h as f64 * H + 599.0);
        assert_eq!(run.pending_by_profile().values().sum::<usize>(), 9);
        let r = run.finish();
        assert_eq!(r.pods_started, 9);
        assert_eq!(r.drains, 1);
        assert_eq!(r.evicted_pods, 0);
        // 9 pods waited H hours and 600 s each.
        let want = 9.0 * (h as f64 + 600.0 / H);
        assert!((r.pending_pod_hours_total - want).abs() < 1e-9, "{r:?}");
        assert!((r.wait_p50_min - (h as f64 * 60.0 + 10.0)).abs() < 1e-9);
        // The H100 needs no GPU reset to enable MIG.
        assert_eq!(r.gpu_resets, 0);
    }
}

/// Mix A (7 x 1g.10gb) at even hours, mix B (2 x 3g.40gb) at odd hours, each running 45
/// minutes; pods give up after 30 minutes; the menu holds both all-1g.10gb and all-3g.40gb.
fn thrash(h: u32) -> migplan::regime::Report {
    let mut arrivals = Vec::new();
    for k in 0..8u32 {
        let mix: &[(&str, u32)] = if k % 2 == 0 {
            &[("1g.10gb", 7)]
        } else {
            &[("3g.40gb", 2)]
        };
        arrivals.extend(pods(100 * k as u64, k as f64 * H, Some(0.75 * H), mix));
    }
    let mut s = setup(
        vec![node("n0", &["all-1g.10gb"])],
        RegimeSettings {
            pending_timeout_min: Some(30.0),
            ..settings(h)
        },
        arrivals,
        8.0 * H,
    );
    let menu = ["all-1g.10gb", "all-3g.40gb"].map(|n| layouts::embedded().get(h100(), n).unwrap().clone());
    s.menus.insert(h100(), menu.to_vec());
    Run::new(s).finish()
}

#[test]
fn thrash_drains_every_period_at_h1_and_never_at_h3() {
    // H = 1, by hand: at each hour 1..7 the new mix finds the other layout, the planner (run on
    // the hour, after the arrivals) drains the empty node, and the mix starts 10 minutes later:
    // 7 drains, nobody evicted, nobody gives up. At 8 h nothing waits: no change.
    let r = thrash(1);
    assert_eq!(r.drains, 7);
    assert_eq!(r.evicted_pods, 0);
    assert_eq!(r.pods_timed_out, 0);
    // Pending: B (2 pods) at hours 1, 3, 5, 7 and A (7 pods) at 2, 4, 6, 10 minutes each.
    let want = (4.0 * 2.0 + 3.0 * 7.0) / 6.0;
    assert!((r.pending_pod_hours_total - want).abs() < 1e-9, "{r:?}");
    // H = 3: B's plan at an odd hour is followed by A's own layout at the next hour (A is
    // served, so the plan is the layout it has): the streak never passes 1. No drain; every
    // B pod gives up after 30 minutes (4 x 2 pods, 4 x 2 x 0.5 pod-hours).
    let r = thrash(3);
    assert_eq!(r.drains, 0);
    assert_eq!(r.pods_timed_out, 8);
    assert!((r.pending_pod_hours_total - 4.0).abs() < 1e-9, "{r:?}");
    assert!((r.pending_pod_hours["3g.40gb"] - 4.0).abs() < 1e-9);
}

#[test]
fn a_menu_that_holds_the_demand_leaves_nothing_pending() {
    let s = setup(
        vec![node(
            "gpu-node-07",
            &["all-balanced", "all-balanced", "whole", "all-enabled"],
        )],
        settings(1),
        pods(1, 600.0, None, &TENANTS),
        24.0 * H,
    );
    let r = Run::new(s).finish();
    assert_eq!(r.pods_started, 9);
    assert_eq!(r.pending_pod_hours_total, 0.0);
    assert_eq!(r.drains, 0);
    assert_eq!(r.wait_p95_min, 0.0);
    // Idle: the nine instances before the pods arrive at 600 s; GPU 3 holds no instances.
    assert!((r.idle_instance_hours - 9.0 * 600.0 / H).abs() < 1e-9, "{r:?}");
    assert!((r.mean_active_gpus - 3.0 * (24.0 * H - 600.0) / (24.0 * H)).abs() < 1e-9);
    // Stranded: GPU 3's seven compute slices (no instance covers them), all day.
    assert!((r.stranded_compute_slice_hours - 7.0 * 24.0).abs() < 1e-9);
}

fn missing_profile(h: u32, menu: &[&str]) -> (Run, u64) {
    let mut s = setup(
        vec![
            node("busy", &["all-balanced", "all-balanced"]),
            node("spare", &["all-enabled", "all-enabled"]),
        ],
        settings(h),
        pods(50, 0.0, None, &[("7g.80gb", 1)]),
        10.0 * H,
    );
    s.running = pods(1, 0.0, None, &TENANTS[..3])
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let gpu = usize::from(k % 2 == 1);
            (p, 0, vec![gpu])
        })
        .collect();
    s.menus.insert(
        h100(),
        menu.iter()
            .map(|n| layouts::embedded().get(h100(), n).unwrap().clone())
            .collect(),
    );
    (Run::new(s), 50)
}

#[test]
fn a_profile_missing_from_the_layouts_is_fixed_after_h_periods() {
    for h in [1u32, 2, 4] {
        let (run, id) = missing_profile(h, &["all-balanced", "whole"]);
        let mut run = run;
        run.run_until(10.0 * H);
        // The 7g pod waits H periods, then the re-layout of the spare node (600 s).
        assert_eq!(run.first_start(id), Some(h as f64 * H + 600.0), "H = {h}");
        assert_eq!(run.drains().len(), 1);
        assert_eq!(run.drains()[0].node, "spare");
        assert_eq!(run.drains()[0].evicted, 0);
        let r = run.finish();
        assert_eq!(r.pods_started, 9);
    }
    // Without a layout holding 7g.80gb on the menu it waits to the end.
    let (mut run, id) = missing_profile(1, &["all-balanced", "all-1g.10gb"]);
    run.run_until(10.0 * H);
    assert_eq!(run.first_start(id), None);
    assert!(run.drains().is_empty());
    let r = run.finish();
    assert!((r.pending_pod_hours["7g.80gb"] - 10.0).abs() < 1e-9);
}

#[test]
fn a_drain_evicts_every_pod_of_the_node_and_the_guard_refuses_one_without_room() {
    // One node: the change of GPU 2 to whole drains it, evicting the eight pods of GPUs 0 and
    // 1, which restart on their own GPUs' instances after the re-layout.
    let mut s = setup(
        vec![node(
            "n",
            &["all-balanced", "all-balanced", "all-enabled", "all-enabled"],
        )],
        settings(1),
        pods(50, 0.0, None, &[("7g.80gb", 1)]),
        3.0 * H,
    );
    s.running = pods(1, 0.0, None, &TENANTS[..3])
        .into_iter()
        .enumerate()
        .map(|(k, p)| (p, 0, vec![usize::from(k % 2 == 1)]))
        .collect();
    let r = Run::new(s.clone()).finish();
    assert_eq!((r.drains, r.evicted_pods), (1, 8));
    assert_eq!(r.pods_waiting_at_end, 0);
    // Eight evicted pods and the 7g pod wait through the re-layout.
    assert!(
        (r.pending_pod_hours_total - (8.0 / 6.0 + 1.0 + 1.0 / 6.0)).abs() < 1e-9,
        "{r:?}"
    );

    // One GPU, all-1g.10gb, running a 1g pod until 2.5 h; two 3g pods wait. The demand (1g = 1
    // in use, 3g = 2 waiting) is planned as all-3g.40gb on the one GPU (6 useful compute
    // slices against 1), which leaves the 1g pod nowhere to restart: no drain while it runs.
    let mut s = setup(
        vec![node("n", &["all-1g.10gb"])],
        settings(1),
        pods(50, 0.0, None, &[("3g.40gb", 2)]),
        3.0 * H,
    );
    s.menus.insert(
        h100(),
        ["all-1g.10gb", "all-3g.40gb"]
            .map(|n| layouts::embedded().get(h100(), n).unwrap().clone())
            .to_vec(),
    );
    s.running = pods(1, 0.0, Some(2.5 * H), &[("1g.10gb", 1)])
        .into_iter()
        .map(|p| (p, 0, vec![0]))
        .collect();
    let mut run = Run::new(s.clone());
    run.run_until(2.9 * H);
    assert_eq!(run.first_start(50), None);
    assert!(run.drains().is_empty(), "{:?}", run.drains());
    // Once it has left, the run at 3 h drains the empty node.
    run.run_until(3.0 * H);
    assert_eq!(run.drains().len(), 1, "{:?} {}", run.view(), run.now());
    assert_eq!(run.drains()[0].evicted, 0);
    // Allowed, the drain goes ahead at the first period and evicts the 1g pod.
    s.settings.allow_drain_without_room = true;
    let r = Run::new(s).finish();
    assert_eq!((r.drains, r.evicted_pods), (1, 1));
    assert_eq!(r.pods_waiting_at_end, 1);
}

#[test]
fn the_device_plugin_takes_the_first_gpu_or_the_fullest() {
    // GPU 0 runs one 1g pod, GPU 1 two; a new 1g pod goes to GPU 0 by index, to GPU 1 packed.
    // Dynamic MIG creates its instance then; static layouts take a free one of all-1g.10gb.
    for kind in [RegimeKind::Dynamic, RegimeKind::StaticLayouts] {
        for (choice, want) in [
            (PluginChoice::FirstIndex, [2usize, 2]),
            (PluginChoice::Packed, [1, 3]),
        ] {
            let mut s = setup(
                vec![node("n", &["all-1g.10gb", "all-1g.10gb"])],
                RegimeSettings {
                    kind,
                    plugin_choice: choice,
                    ..settings(1)
                },
                pods(50, 10.0, Some(H), &[("1g.10gb", 1)]),
                2.0 * H,
            );
            s.running = pods(1, 0.0, None, &[("1g.10gb", 3)])
                .into_iter()
                .enumerate()
                .map(|(k, p)| (p, 0, vec![usize::from(k > 0)]))
                .collect();
            let mut run = Run::new(s);
            run.run_until(20.0);
            let used: Vec<usize> = run.view()[0].iter().map(|g| g.in_use).collect();
            assert_eq!(used, want, "{kind:?} {choice:?}");
            let r = run.finish();
            assert_eq!((r.pods_started, r.drains, r.pending_pod_hours_total), (4, 0, 0.0));
            if kind == RegimeKind::Dynamic {
                // Instances exist only while a pod holds them.
                assert_eq!(r.idle_instance_hours, 0.0);
            } else {
                assert!(r.idle_instance_hours > 0.0);
            }
        }
    }
}

#[test]
fn the_legacy_layout_hysteresis_key_sets_the_planner_and_regime_errors_name_the_line() {
    let text = "name = \"x\"\n[[host]]\nname = \"n\"\ncores = 8\nram_gb = 64\ngpus = [\"h100-80gb\"]\n\
                [workload]\nenabled = false\n[policy]\nlayout_hysteresis = 5\n[regime]\nkind = \"static-layouts\"\n";
    let sc = migplan::scenario::parse(text, "x.toml").unwrap();
    let s = sc.regime.clone().unwrap();
    let (setup, _) = migplan::regime::setup::from_scenario(&sc, &s, None).unwrap();
    assert_eq!(setup.hysteresis, 5);
    // A save keeps it, under [regime].
    let saved = sc.to_toml().unwrap();
    assert!(
        saved.contains("[regime]") && saved.contains("hysteresis = 5"),
        "{saved}"
    );
    assert!(!saved.contains("layout_hysteresis"), "{saved}");
    // The [regime] table's own value wins.
    let sc = migplan::scenario::parse(&format!("{text}hysteresis = 2\n"), "x.toml").unwrap();
    let (setup, _) = migplan::regime::setup::from_scenario(&sc, sc.regime.as_ref().unwrap(), None).unwrap();
    assert_eq!(setup.hysteresis, 2);
    let e = migplan::scenario::parse(&format!("{text}hysteresis = 0\n"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:13:1: field `regime.hysteresis`: must be within 1..1000, not 0"
    );
    let e = migplan::scenario::parse(&format!("{text}plugin_choice = \"best\"\n"), "x.toml").unwrap_err();
    assert!(e.to_string().starts_with("x.toml:13:"), "{e}");
}

#[test]
fn a_fleet_imported_from_kubernetes_starts_the_simulation_as_it_stands() {
    use crate::common::import::k8s_import;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet.toml");
    k8s_import(&out, &[]);
    let sc = migplan::scenario::load(&out).unwrap();
    let s = RegimeSettings {
        kind: RegimeKind::StaticLayouts,
        ..RegimeSettings::default()
    };
    let (setup, _) = migplan::regime::setup::from_scenario(&sc, &s, None).unwrap();
    // gpu-h100-1 is labelled all-balanced: both GPUs hold all-balanced's instances.
    let n = setup.nodes.iter().find(|n| n.name == "gpu-h100-1").unwrap();
    let balanced = &layouts::embedded().get(h100(), "all-balanced").unwrap().counts;
    assert!(
        n.gpus.iter().all(|g| g.mig_enabled && &g.counts == balanced),
        "{n:?}"
    );
    // Every imported pod that holds instances runs from time 0.
    let placed = sc.fleet.vms().filter(|v| v.placement.is_some()).count();
    assert!(placed > 0);
    assert_eq!(setup.running.len(), placed);
    let pending = setup.arrivals.len();
    let run = Run::new(setup);
    // Before the first event: exactly the imported placements (the imported pending pods
    // arrive at time 0 and take what is free).
    let in_use: usize = run.view().concat().iter().map(|g| g.in_use).sum();
    let gis: usize = sc
        .fleet
        .vms()
        .filter(|v| v.placement.is_some())
        .map(|v| v.gis.len())
        .sum();
    assert_eq!(in_use, gis);
    // The command line runs it too.
    let o = crate::common::cli::migplan()
        .args(["simulate"])
        .arg(&out)
        .args([
            "--regime",
            "static-layouts",
            "--hours",
            "24",
            "--warmup",
            "0",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["regime"], "static-layouts");
    assert_eq!(v["pods_arrived"].as_u64(), Some((placed + pending) as u64));
    assert!(v["pods_started"].as_u64().unwrap() >= placed as u64);
}

#[test]
fn sweep_over_regimes_writes_the_table_and_the_svg_and_refuses_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("k8s.md");
    let svg = dir.path().join("k8s.svg");
    let o = crate::common::cli::migplan()
        .args([
            "sweep",
            "scenarios/k8s-h100.toml",
            "--regimes",
            "static-layouts,dynamic",
        ])
        .args([
            "--periods",
            "60",
            "--hysteresis",
            "1,3",
            "--hours",
            "24",
            "--warmup",
            "0",
            "--jobs",
            "1",
        ])
        .arg("--markdown")
        .arg(&md)
        .arg("--svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("- command: `migplan sweep scenarios/k8s-h100.toml"),
        "{text}"
    );
    assert!(text.contains("- commit: ") && text.contains("- date: "), "{text}");
    // One row per hysteresis value, one for dynamic.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| static-layouts")).count(),
        2,
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| dynamic")).count(),
        1,
        "{text}"
    );
    let pic = std::fs::read_to_string(&svg).unwrap();
    assert!(pic.starts_with("<svg") && pic.contains("drains per day"), "{pic}");
    for (args, want) in [
        (
            vec!["--regimes", "paper"],
            "--regimes: the paper's regime is swept by policy",
        ),
        (vec!["--regimes", "static"], ""),
        (
            vec!["--regimes", "dynamic", "--plugins", "best"],
            "--plugins: unknown device plugin choice `best`",
        ),
    ] {
        let o = crate::common::cli::migplan()
            .args([
                "sweep",
                "scenarios/k8s-h100.toml",
                "--hours",
                "1",
                "--warmup",
                "0",
            ])
            .args(&args)
            .output()
            .unwrap();
        if want.is_empty() {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        } else {
            assert_eq!(o.status.code(), Some(2));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(want) && err.lines().count() == 1, "{err}");
        }
    }
    let o = crate::common::cli::migplan()
        .args(["simulate", "scenarios/k8s-h100.toml", "--hysteresis", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[regime] hysteresis: must be within 1..1000, not 0"));
}

/// Dynamic MIG on one node of two H100s: four 3g.40gb pods fill both GPUs (two each, first by
/// index); at 1 h one pod of each GPU leaves, so each GPU holds one 3g.40gb until 10 h. With
/// `whole` a 7g.80gb pod arrives at 1.5 h and finds no empty GPU.
fn fragmented(defrag_every_h: Option<f64>, whole: bool) -> Run {
    let mut arrivals = Vec::new();
    for (k, life) in [1.0, 10.0, 1.0, 10.0].into_iter().enumerate() {
        arrivals.extend(pods(1 + k as u64, 0.0, Some(life * H), &[("3g.40gb", 1)]));
    }
    if whole {
        arrivals.extend(pods(10, 1.5 * H, None, &[("7g.80gb", 1)]));
    }
    let s = RegimeSettings {
        kind: RegimeKind::Dynamic,
        defrag_every_h,
        ..settings(1)
    };
    Run::new(setup(
        vec![node("n", &["all-1g.10gb", "all-1g.10gb"])],
        s,
        arrivals,
        12.0 * H,
    ))
}

fn in_use(run: &Run) -> Vec<usize> {
    run.view()[0].iter().map(|g| g.in_use).collect()
}

#[test]
fn a_restart_based_defragmentation_empties_a_gpu_with_one_restart() {
    // Without defragmentation both GPUs stay in use, one 3g.40gb each, until 10 h.
    let mut run = fragmented(None, false);
    run.run_until(5.0 * H);
    assert_eq!(in_use(&run), [1, 1]);
    let off = run.finish();
    assert_eq!(
        (off.restarts, off.defrag_passes, off.defrag_every_h),
        (0, 0, None)
    );
    // 2 GPUs for 10 h of 12.
    assert!(
        (off.mean_active_gpus - 20.0 / 12.0).abs() < 1e-9,
        "{}",
        off.mean_active_gpus
    );

    // A pass every 2 h: at 2 h GPU 0 (one pod, first of the least used) empties by restarting
    // its pod on GPU 1, the one GPU in use left: one restart, one GPU. Later passes find nothing
    // to empty (GPU 1 holds two pods and no other GPU is in use).
    let mut run = fragmented(Some(2.0), false);
    run.run_until(2.0 * H - 1.0);
    assert_eq!(in_use(&run), [1, 1]);
    run.run_until(2.0 * H);
    assert_eq!(in_use(&run), [0, 2]);
    let p = &run.defrag_passes()[0];
    assert_eq!(
        (p.t, p.restarts, p.emptied.clone(), p.pending_started),
        (2.0 * H, 1, vec![("n".to_string(), 0)], 0)
    );
    let on = run.finish();
    // Passes at 2, 4, 6, 8, 10 and 12 h; one restart; its 60 s of downtime move its departure
    // from 10 h to 10 h 1 min.
    assert_eq!((on.defrag_passes, on.restarts, on.defrag_emptied_gpus), (6, 1, 1));
    assert!((on.restart_downtime_pod_hours - 60.0 / H).abs() < 1e-9);
    // 2 GPUs for 2 h, then 1 until 10 h 1 min.
    let want = (2.0 * 2.0 + (8.0 * H + 60.0) / H) / 12.0;
    assert!(
        (on.mean_active_gpus - want).abs() < 1e-9,
        "{} {want}",
        on.mean_active_gpus
    );
    assert_eq!(on.pods_started, 4);
}

#[test]
fn the_gpu_a_defragmentation_empties_serves_the_waiting_whole_gpu_pod() {
    // Without defragmentation the 7g.80gb pod waits from 1.5 h until GPU 0 empties at 10 h.
    let mut off = fragmented(None, true);
    off.run_until(12.0 * H);
    assert_eq!(off.first_start(10), Some(10.0 * H));
    let r = off.finish();
    assert!(
        (r.pending_pod_hours_total - 8.5).abs() < 1e-9,
        "{}",
        r.pending_pod_hours_total
    );
    // With a pass every 2 h it starts at 2 h on the GPU the pass emptied.
    let mut on = fragmented(Some(2.0), true);
    on.run_until(12.0 * H);
    assert_eq!(on.first_start(10), Some(2.0 * H));
    assert_eq!(on.defrag_passes()[0].pending_started, 1);
    let r = on.finish();
    assert_eq!((r.restarts, r.defrag_pending_started), (1, 1));
    assert!(
        (r.pending_pod_hours_total - 0.5).abs() < 1e-9,
        "{}",
        r.pending_pod_hours_total
    );
}

#[test]
fn defragmentation_settings_are_checked_and_named_with_their_line() {
    let text = "[[host]]\nname = \"n\"\ncores = 8\nram_gb = 64\ngpus = [\"h100-80gb\"]\n\
                [workload]\nenabled = false\n[regime]\nkind = \"dynamic\"\n";
    let sc = migplan::scenario::parse(&format!("{text}defrag_every_h = 6\n"), "x.toml").unwrap();
    assert_eq!(sc.regime.unwrap().defrag_every_h, Some(6.0));
    for (line, want) in [
        (
            "defrag_every_h = 0",
            "x.toml:10:1: field `regime.defrag_every_h`: must be a number > 0 and at most 8760, not 0",
        ),
        (
            "defrag_max_restarts = 0",
            "x.toml:10:1: field `regime.defrag_max_restarts`: must be within 1..100000, not 0",
        ),
        (
            "restart_s = -1",
            "x.toml:10:1: field `regime.restart_s`: must be a number >= 0 and at most 86400, not -1",
        ),
    ] {
        let e = migplan::scenario::parse(&format!("{text}{line}\n"), "x.toml").unwrap_err();
        assert_eq!(e.to_string(), want);
    }
    // Under static layouts nothing reads them: refused, not ignored.
    let static_text = text.replace("\"dynamic\"", "\"static-layouts\"");
    let e = migplan::scenario::parse(&format!("{static_text}defrag_every_h = 6\n"), "x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.toml:10:1: field `regime.defrag_every_h`: restart-based defragmentation is dynamic MIG's \
         (kind = \"dynamic\"), not static-layouts's: remove it"
    );
}

#[test]
fn simulate_and_sweep_report_the_restart_based_defragmentation() {
    let run = |extra: &[&str]| {
        crate::common::cli::migplan()
            .args([
                "simulate",
                "scenarios/k8s-h100.toml",
                "--regime",
                "dynamic",
                "--hours",
                "48",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&["--defrag-every", "2", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 48 h measured after the 24 h warm-up: the window's passes run at 24, 26, ..., 72 h (both
    // ends count).
    assert_eq!(v["defrag_passes"], 25);
    assert_eq!(v["defrag_every_h"], 2.0);
    let restarts = v["restarts"].as_u64().unwrap();
    assert!(restarts > 0, "{v}");
    assert!(
        (v["restart_downtime_pod_hours"].as_f64().unwrap() - restarts as f64 * 60.0 / 3600.0).abs() < 1e-9
    );
    let text = String::from_utf8_lossy(&run(&["--defrag-every", "2"]).stdout).to_string();
    assert!(
        text.contains(&format!(
            "defragmentation by restart: every 2 h, 25 passes, {restarts} pods restarted"
        )),
        "{text}"
    );
    // Without passes: no such line, no restart.
    let off = run(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    assert_eq!(
        (v["restarts"].as_u64(), v["defrag_passes"].as_u64()),
        (Some(0), Some(0))
    );
    // The flags are dynamic MIG's.
    let o = crate::common::cli::migplan()
        .args(["simulate", "scenarios/k8s-h100.toml", "--defrag-every", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is dynamic MIG's (--regime dynamic), not static-layouts's") && err.lines().count() == 1,
        "{err}"
    );
    // The sweep runs dynamic once per --defrag-every value.
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("k8s.md");
    let o = crate::common::cli::migplan()
        .args([
            "sweep",
            "scenarios/k8s-h100.toml",
            "--regimes",
            "dynamic",
            "--defrag-every",
            "0,6",
        ])
        .args(["--hours", "24", "--warmup", "0", "--jobs", "1", "--markdown"])
        .arg(&md)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| dynamic")).collect();
    assert_eq!(rows.len(), 2, "{text}");
    fn cols(r: &str) -> Vec<&str> {
        r.split('|').map(str::trim).collect()
    }
    let head = cols(text.lines().find(|l| l.starts_with("| regime")).unwrap());
    let k = head.iter().position(|c| *c == "defrag every h").unwrap();
    assert_eq!((cols(rows[0])[k], cols(rows[1])[k]), ("-", "6"));
}
