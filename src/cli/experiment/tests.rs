//! Unit tests of `cli::experiment`.

use super::*;
#[test]
fn the_eq5_gap_sums_the_snapshots_and_the_worst_snapshot_is_kept_apart() {
    let snap = |o: f64, p: f64| Snapshot {
        hosts: 8,
        seed: 3,
        t_h: 48.0,
        vms: 10,
        origamig_active: 4,
        opt_active: 3,
        origamig_eq5: o,
        opt_eq5: p,
        opt_status: SolveStatus::Optimal,
        opt_gap: 0.0,
        opt_s: 0.1,
    };
    // Three snapshots of seed 3 at 8 hosts: 30 and 25 below OPT at two of them.
    let (agg, worst) = eq5_gaps(&[snap(1092.0, 1092.0), snap(781.0, 811.0), snap(781.0, 806.0)]);
    assert!((agg - 55.0 / 2709.0).abs() < 1e-12, "{agg}");
    assert!((worst - 30.0 / 811.0).abs() < 1e-12, "{worst}");
    assert_eq!(eq5_gaps(&[]), (0.0, 0.0));
}

fn provenance() -> markdown::Provenance {
    markdown::Provenance {
        command: "migplan experiment table8 --seeds 1,2".to_string(),
        commit: "abc1234".to_string(),
        date: "2026-12-02 00:30 UTC".to_string(),
    }
}

fn runs_args(markdown: Option<PathBuf>) -> RunsArgs {
    RunsArgs {
        scenario: PathBuf::from("scenarios/demo.toml"),
        seeds: vec![1],
        warmup: Some(0.0),
        hours: Some(1.0),
        json: false,
        markdown,
    }
}

fn table8_row(policy: &str, active_hosts: f64, migrations_per_h: f64) -> Table8Row {
    Table8Row {
        load: 0.75,
        policy: policy.to_string(),
        seeds: 1,
        acceptance_pct: 99.0,
        active_hosts,
        active_hosts_pct: 0.0,
        active_gpus_pct: 68.2,
        packing_pct: 83.7,
        energy_mwh: 0.5,
        switch_ons_per_h: 1.6,
        migrations_per_h,
        gb_per_h: 0.0,
        wait_s: 0.0,
        calls_per_h: 0.0,
        call_s_median: 0.0,
        call_s_p95: 0.0,
        wall_s: 1.0,
    }
}

#[test]
fn the_table8_markdown_puts_the_scaled_paper_values_beside_ours_with_the_provenance() {
    let base = scenario::load(std::path::Path::new("scenarios/paper-32.toml")).unwrap();
    let a = Table8Args {
        runs: RunsArgs {
            scenario: PathBuf::from("scenarios/paper-32.toml"),
            hours: Some(72.0),
            ..runs_args(None)
        },
        loads: vec![0.75],
        policies: vec!["ff".into(), "tc".into(), "origamig".into()],
    };
    let rows = [
        table8_row("ff", 20.0, 0.0),
        table8_row("tc", 19.0, 4.0),
        table8_row("origamig", 18.0, 2.0),
    ];
    let md = markdown::table8(&a, &base, &rows, &provenance());
    assert!(
        md.starts_with("# Table 8 (§6.4) on paper-32 (32 hosts)\n"),
        "{md}"
    );
    assert!(
        md.contains("- command: `migplan experiment table8 --seeds 1,2`\n"),
        "{md}"
    );
    assert!(
        md.contains("- commit: abc1234\n- date: 2026-12-02 00:30 UTC\n"),
        "{md}"
    );
    // The paper's 109.5 active PMs of 128 scale to 27.38 of 32; its 5.57 MWh over 72 h on 128
    // hosts to 1.39 on 32 hosts over 72 h; its 17.3 TC moves per hour to 4.33.
    assert!(
        md.contains("| 0.75 | FF | 99.0 (98.5) | 20.00 (27.38) | 68.2 (83.1) | 83.7 (84.0) | 0.50 (1.39) |"),
        "{md}"
    );
    assert!(md.contains("| 4.00 (4.33) |"), "{md}");
    assert!(
        md.contains("OrigaMIG keeps 10.0 % fewer hosts active than FF"),
        "{md}"
    );
    assert!(md.contains("makes 50.0 % fewer moves than TC"), "{md}");
}

#[test]
fn the_gap_to_opt_markdown_has_the_papers_table12_row_beside_each_size() {
    let a = GapArgs {
        sizes: vec![8, 12],
        seeds: vec![1, 2, 3],
        from_h: 48.0,
        to_h: 96.0,
        every_h: 4.0,
        load: 0.74,
        opt_time_limit: 30.0,
        policy_set: vec![],
        json: false,
        markdown: None,
    };
    let row = |hosts| GapRow {
        hosts,
        seeds: 3,
        snapshots: 13,
        mean_vms: 14.2,
        extra_active_pct: 12.0,
        eq5_gap_pct: 1.83,
        eq5_gap_max_pct: 4.14,
        origamig_call_median_s: 0.04,
        origamig_call_p95_s: 0.31,
        opt_median_s: 0.1,
        opt_proven: 13,
        opt_max_mip_gap: 0.0,
    };
    let md = markdown::gap_to_opt(&a, &[row(8), row(12)], &provenance());
    assert!(
        md.contains("| 8 | 3 × 13 | 14.2 | 12.0 (3.9) | 1.83 (0.54) (4.14) | 0.04 / 0.31 (0.3) | 13 of 13 | 0.1 (0.3) |"),
        "{md}"
    );
    // The paper has no 12-host row.
    assert!(
        md.contains("| 12 | 3 × 13 | 14.2 | 12.0 (-) | 1.83 (-) (4.14) | 0.04 / 0.31 (-) |"),
        "{md}"
    );
}

#[test]
fn a_tiny_table8_run_writes_its_markdown_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t8.md");
    let a = Table8Args {
        runs: runs_args(Some(path.clone())),
        loads: vec![0.75],
        policies: vec!["ff".into()],
    };
    table8(&a).unwrap();
    let md = std::fs::read_to_string(&path).unwrap();
    assert!(md.starts_with("# Table 8 (§6.4) on demo (6 hosts)\n"), "{md}");
    assert!(md.contains("- command: `migplan"), "{md}");
    assert!(
        md.contains("- seeds: 1; loads: 0.75; 0 h warm-up, 1 h measured"),
        "{md}"
    );
    assert!(md.contains("| 0.75 | FF | "), "{md}");
    assert!(md.contains("(98.5)"), "{md}");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("t8.md")],
        "no temporary file left"
    );
}

#[test]
fn a_markdown_file_in_a_missing_folder_is_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-folder").join("t8.md");
    let a = Table8Args {
        runs: runs_args(Some(path)),
        loads: vec![0.75],
        policies: vec!["ff".into()],
    };
    let e = table8(&a).unwrap_err().to_string();
    assert!(e.contains("--markdown") && e.contains("does not exist"), "{e}");
}

#[test]
fn the_sweep_markdown_gives_means_with_intervals_and_the_papers_size_free_values() {
    use crate::cli::runstats::{summarize, RunValues};
    let run = |policy: &str, load: f64, seed: u64, accept: f64| RunValues {
        policy: policy.to_string(),
        load,
        seed,
        values: [
            ("acceptance_pct".to_string(), accept),
            ("active_hosts_pct".to_string(), 80.0),
            ("energy_mwh".to_string(), 1.234),
        ]
        .into_iter()
        .collect(),
    };
    let summary = summarize(&[
        run("ff", 0.75, 1, 98.0),
        run("ff", 0.75, 2, 100.0),
        run("tc", 0.5, 1, 99.0),
    ]);
    let md = markdown::sweep(&summary, &provenance());
    assert!(md.contains("- commit: abc1234\n"), "{md}");
    assert!(
        md.contains("| policy | load | runs | Accept. (%) | Active PMs | Active PMs (%) |"),
        "{md}"
    );
    // Two runs, 98 and 100: mean 99, half-width t(1) = 12.706 x 1 = 12.7. The paper's FF at 0.75:
    // 98.5 % accepted, 109.5 of 128 hosts active (85.5 %).
    assert!(
        md.contains("| FF | 0.75 | 2 | 99.0 ± 12.7 (98.5) | - | 80.0 ± 0.0 (85.5) | - | - | 1.23 ± 0.00 |"),
        "{md}"
    );
    // The paper has no load 0.5: no values in parentheses.
    assert!(
        md.contains("| TC | 0.5 | 1 | 99.0 ± 0.0 | - | 80.0 ± 0.0 | - | - | 1.23 ± 0.00 |"),
        "{md}"
    );
}

/// `--policy-set` of `experiment paired`: keys set on the scenario's `[policy]` as a file would
/// (a key given twice is refused), the rest kept (a written value beside `preset = "paper"` included), and a
/// bad value refused with one line naming the key.
#[test]
fn policy_set_sets_keys_as_a_scenario_file_would() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml");
    let base = scenario::load(std::path::Path::new(path)).unwrap();
    let mut s = base.clone();
    set_policy(&mut s, &["reenable=\"departure\"".into(), "theta=2".into()]).unwrap();
    assert_eq!(s.policy.origamig.reenable, scenario::Reenable::Departure);
    assert_eq!(s.policy.origamig.theta, 2);
    let mut want = base.policy.clone();
    want.origamig.reenable = scenario::Reenable::Departure;
    want.origamig.theta = 2;
    assert_eq!(s.policy, want);
    assert_eq!(s.fleet.hosts.len(), base.fleet.hosts.len());
    // The paper preset with merge_hosts written back to the default 4: the 4 stays.
    let mut p = base.clone();
    p.policy.apply_preset(scenario::Preset::Paper, &|_| false);
    p.policy.origamig.merge_hosts = 4;
    set_policy(&mut p, &["delta=12".into()]).unwrap();
    assert_eq!(
        (p.policy.origamig.merge_hosts, p.policy.origamig.delta),
        (4, 12.0)
    );
    assert_eq!(p.policy.preset, scenario::Preset::Paper);
    let twice = set_policy(&mut base.clone(), &["theta=2".into(), "theta=3".into()]);
    assert!(format!("{:#}", twice.unwrap_err()).contains("theta"));
    for bad in ["reenable=\"never\"", "theta=-1", "nonsense=1", "theta"] {
        let e = set_policy(&mut base.clone(), &[bad.to_string()]).unwrap_err();
        let msg = format!("{e:#}");
        assert!(!msg.contains('\n'), "{bad}: {msg}");
        let key = bad.split('=').next().unwrap();
        assert!(msg.contains(key), "{bad}: {msg}");
    }
}

/// `--policy-set` of `experiment table9`: the settings reach every variant's scenario (after the
/// preset), and a bad one is refused with a line naming its key.
#[test]
fn table9_policy_set_reaches_every_variant() {
    let args = |set: Vec<String>| table9::Table9Args {
        hosts: 8,
        variants: vec![],
        seeds: vec![1],
        load: 0.85,
        warmup: 1.0,
        hours: 1.0,
        preset: "paper".into(),
        policy_set: set,
        threads: None,
        json: false,
        markdown: None,
    };
    let a = args(vec!["delta_per_gb=0.05".into(), "merge_hosts=2".into()]);
    for v in ["default", "larger-profiles", "two-gis", "a30-only"] {
        let s = table9::scenario(v, &a).unwrap();
        assert_eq!(s.policy.origamig.delta_per_gb, 0.05, "{v}");
        assert_eq!(s.policy.origamig.merge_hosts, 2, "{v}");
        // The paper preset's own settings stay.
        assert_eq!(s.policy.origamig.delta, 10.0, "{v}");
        assert_eq!(s.policy.origamig.reenable, scenario::Reenable::Departure, "{v}");
    }
    let plain = table9::scenario("two-gis", &args(vec![])).unwrap();
    assert_eq!(plain.policy.origamig.delta_per_gb, 0.0);
    let e = table9::scenario("two-gis", &args(vec!["delta_per_gb=-1".into()])).unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("delta_per_gb") && !msg.contains('\n'), "{msg}");
}

/// The frontier's reading between TC's points, by hand: (1, 10) and (3, 14) give 12 at 2 and
/// 13 at 2.5; the ends are inside, beyond them nothing; the order of the points does not
/// matter; one point is no curve.
#[test]
fn frontier_interpolates_between_the_two_nearest_points_only() {
    use frontier::interpolate;
    let pts = [(3.0, 14.0), (1.0, 10.0), (6.0, 17.0)];
    assert_eq!(interpolate(&pts, 2.0), Some(12.0));
    assert_eq!(interpolate(&pts, 2.5), Some(13.0));
    assert_eq!(interpolate(&pts, 1.0), Some(10.0));
    assert_eq!(interpolate(&pts, 6.0), Some(17.0));
    assert_eq!(interpolate(&pts, 4.5), Some(15.5));
    assert_eq!(interpolate(&pts, 0.5), None);
    assert_eq!(interpolate(&pts, 6.5), None);
    assert_eq!(interpolate(&pts[..1], 3.0), None);
    assert_eq!(interpolate(&[(1.0, f64::NAN), (2.0, 3.0)], 1.5), None);
}

/// The frontier's table, by hand: OrigaMIG at 2 moves/h and 12.5 whole GPUs free beside TC's
/// (1, 10) and (3, 14): TC leaves 12.00 at 2 moves/h (O +0.50), needs 2.25 moves/h for 12.5
/// (O moves 2 / 2.25 = 0.89 of TC's); hosts 9 against TC's 10.5 between 10 and 11 (−1.50). A
/// point outside TC's range reads "-".
#[test]
fn frontier_table_reads_origamig_beside_tcs_curve() {
    use frontier::{render, Point};
    let pt = |moves: f64, free: f64, hosts: f64| {
        Some(Point {
            runs: 4,
            moves_per_h: moves,
            free_gpus: free,
            free_tuned: free,
            free_held_out: free,
            hosts,
            acceptance_pct: 100.0,
        })
    };
    let points = vec![
        ("a".to_string(), "origamig", pt(2.0, 12.5, 9.0)),
        ("far".to_string(), "origamig", pt(5.0, 20.0, 9.0)),
        ("slow".to_string(), "tc", pt(1.0, 10.0, 10.0)),
        ("fast".to_string(), "tc", pt(3.0, 14.0, 11.0)),
        ("none".to_string(), "tc", None),
    ];
    let t = render(&points, 0, 16);
    assert!(
        t.contains("| a | 2.00 | 12.50 | 12.00 | +0.50 | 9.00 | 10.50 | -1.50 | 2.25 | 0.89 |"),
        "{t}"
    );
    assert!(
        t.contains("| far | 5.00 | 20.00 | - | - | 9.00 | - | - | - | - |"),
        "{t}"
    );
    assert!(t.contains("| TC | none | 0 | - |"), "{t}");
    assert!(!t.contains("Partial"), "{t}");
    assert!(render(&points, 3, 16).contains("**Partial: 13 of 16 runs done, 3 to run.**"));
}

/// The frontier's drawing needs a finished point; with one it has its dot and label.
#[test]
fn frontier_svg_needs_a_point() {
    use frontier::{svg, Point};
    let e = svg(&[("a".into(), "tc", None)]).unwrap_err();
    assert!(format!("{e}").contains("no finished point"), "{e}");
    let p = Point {
        runs: 1,
        moves_per_h: 5.0,
        free_gpus: 39.0,
        free_tuned: 39.0,
        free_held_out: 39.0,
        hosts: 10.0,
        acceptance_pct: 100.0,
    };
    let s = svg(&[("every 15 min (default)".into(), "tc", Some(p))]).unwrap();
    assert_eq!(s.matches("<circle").count(), 1);
    assert!(s.contains("15 min (default)"));
}

/// A journal gives back the very figures it was written with: a table written from a resumed
/// journal is the table of the fresh runs. Without exact float parsing about one double in
/// eleven came back one unit in the last place off, so "admits at least as much as TC" flipped
/// on a tie (OrigaMIG's 96.98924731182795 % fresh against TC's from the journal).
#[test]
fn journal_lines_give_back_their_floats_exactly() {
    use rand::{Rng, SeedableRng};
    let run = big_nodes::Run {
        scenario: "dgx-h100".into(),
        policy: "tc".into(),
        load: 1.2,
        seed: 4,
        config: String::new(),
        active_hosts: 9.73,
        acceptance_pct: 96.98924731182795,
        migrations_per_h: 8.08,
        free_gpus: 32.1,
        free_gpus_bound: Some(34.2),
        calls: 0,
        call_s_median: 0.0,
        call_s_p95: 0.0,
        cpu_s: 0.01,
    };
    let back: big_nodes::Run = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
    assert_eq!(back, run);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for _ in 0..20_000 {
        let x: f64 = rng.gen::<f64>() * 100.0;
        let y: f64 = serde_json::from_str(&serde_json::to_string(&x).unwrap()).unwrap();
        assert_eq!(x.to_bits(), y.to_bits(), "{x}");
    }
}

/// A journal key holds a fingerprint of everything the run was simulated with: settings a file
/// leaves out (a default, a value saves never write) change it, the same settings reached by
/// another route (a `--policy-set` of the default's value) do not.
#[test]
fn a_journal_key_changes_with_any_setting_a_file_leaves_out() {
    use big_nodes::{config_of, fingerprint};
    let base = crate::scenario::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/hgx-a100.toml"
    )))
    .unwrap();
    let key = |s: &Scenario| config_of(s, "origamig", 12.0, 12.0).unwrap();
    let readable = |s: &Scenario| key(s).split("; fingerprint").next().unwrap().to_string();
    assert!(key(&base).ends_with(&format!("; fingerprint {}", fingerprint(&base).unwrap())));
    assert_eq!(fingerprint(&base).unwrap().len(), 16);
    // Saves never write the legacy hysteresis, so the readable part cannot tell these apart.
    let mut legacy = base.clone();
    legacy.policy.legacy_layout_hysteresis = Some(3);
    assert_eq!(readable(&legacy), readable(&base));
    assert_ne!(key(&legacy), key(&base));
    // A setting at its default is left out of a file; the key still holds its value, so a
    // journal written before a default changed does not give its runs back afterwards.
    let rate = crate::policy_settings::DEFAULT_GPU_COMPACTION_MOVES_PER_DEPARTURE;
    let mut other = base.clone();
    other.policy.origamig.gpu_compaction_moves_per_departure = rate + 0.1;
    assert_ne!(key(&other), key(&base));
    let mut workload = base.clone();
    workload.workload.two_gi_prob += 0.1;
    assert_ne!(key(&workload), key(&base));
    // The default's value written out is the default: the same key (the frontier's default
    // point is the big-nodes run).
    let mut explicit = base.clone();
    set_policy(
        &mut explicit,
        &[format!("gpu_compaction_moves_per_departure={rate}")],
    )
    .unwrap();
    assert_eq!(key(&explicit), key(&base));
    // TC's key holds no OrigaMIG table but the same fingerprint.
    let tc = config_of(&base, "tc", 12.0, 12.0).unwrap();
    assert_eq!(
        tc,
        format!(
            "warmup 12 h, measured 12 h; fingerprint {}",
            fingerprint(&base).unwrap()
        )
    );
}
