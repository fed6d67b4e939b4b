//! The OrigaMIG default and the paper preset (`[policy] preset = "paper"`), and
//! `experiment paired` against separate `simulate` runs.

use crate::common;
use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use migplan::scenario::{self, PolicySettings, Preset, Reenable};
use serde_json::Value;

fn paper_32() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml")).unwrap()
}

/// paper-32 with `lines` added to its `[policy]` table (the file's last table).
fn paper_32_with(lines: &str) -> String {
    let src = paper_32();
    assert!(src.trim_end().ends_with("arrival = \"ff\""));
    format!("{}\n{lines}\n", src.trim_end())
}

#[test]
fn the_default_keeps_removed_sources_with_delta_15_and_the_paper_preset_reads_algorithm_1_as_written() {
    let d = PolicySettings::default();
    assert!(d.origamig.keep_removed_sources);
    assert_eq!(d.origamig.delta, 15.0);
    assert_eq!(d.preset, Preset::Default);
    assert_eq!(d.origamig.merge_hosts, 4);
    assert_eq!(d.origamig.delta_job_extra, 15.0);
    assert!(d.origamig.ff_active_first);
    let p = PolicySettings::paper();
    assert_eq!(p.origamig.delta_job_extra, 0.0);
    assert!(!p.origamig.ff_active_first);
    assert!(!p.origamig.keep_removed_sources);
    assert_eq!(p.origamig.delta, 10.0);
    assert_eq!(p.preset, Preset::Paper);
    assert_eq!(d.origamig.reenable, Reenable::Room);
    assert_eq!(p.origamig.reenable, Reenable::Departure);
    assert_eq!(
        (d.origamig.reenable_gap_rise, p.origamig.reenable_gap_rise),
        (3, 1)
    );
    assert!(d.origamig.partition_interleaved && !p.origamig.partition_interleaved);
    assert!(d.origamig.consolidation_patterns && !p.origamig.consolidation_patterns);
    assert_eq!((d.origamig.m_max, p.origamig.m_max), (6, 16));
    // Everything else is the default.
    assert_eq!(
        PolicySettings {
            preset: Preset::Default,
            origamig: migplan::policy_settings::OrigamigSettings {
                keep_removed_sources: true,
                delta: 15.0,
                merge_hosts: 4,
                reenable: Reenable::Room,
                reenable_gap_rise: 3,
                m_max: 6,
                delta_job_extra: 15.0,
                ff_active_first: true,
                host_weight_from_power: true,
                host_scaled_limits: true,
                host_scaled_budget: true,
                arrival_gpu_best_fit: true,
                arrival_host_best_fit: true,
                gpu_compaction: true,
                partition_interleaved: true,
                arrival_best_fit_small: true,
                host_emptying_vms: 2,
                consolidation_patterns: true,
                ..p.origamig.clone()
            },
            ..p.clone()
        },
        d
    );
    // `--preset default` on a scenario written with the paper preset resets each of its keys.
    let mut back = p.clone();
    back.origamig.reset_preset_keys();
    assert_eq!(
        PolicySettings {
            preset: Preset::Default,
            ..back
        },
        d
    );
    // The keys a save writes beside a preset are the keys the preset fixes.
    let mut fixed: Vec<&str> = Preset::Paper.keys().iter().map(|(k, _)| *k).collect();
    let mut saved: Vec<&str> = d.origamig.preset_key_values().iter().map(|(k, _)| *k).collect();
    fixed.sort();
    saved.sort();
    assert_eq!(fixed, saved);
    let s = scenario::parse(&paper_32_with("preset = \"paper\""), "p.toml").unwrap();
    assert_eq!(s.policy, PolicySettings::paper());
    let s = scenario::parse(&paper_32(), "p.toml").unwrap();
    assert_eq!(s.policy, PolicySettings::default());
}

#[test]
fn settings_written_beside_the_preset_win_and_a_save_reads_back_the_same() {
    let s = scenario::parse(&paper_32_with("preset = \"paper\"\ndelta = 5"), "p.toml").unwrap();
    assert_eq!(s.policy.origamig.delta, 5.0);
    assert!(!s.policy.origamig.keep_removed_sources);
    let s = scenario::parse(
        &paper_32_with("keep_removed_sources = true\npreset = \"paper\""),
        "p.toml",
    )
    .unwrap();
    assert!(s.policy.origamig.keep_removed_sources);
    assert_eq!(s.policy.origamig.delta, 10.0);
    let text = s.to_toml().unwrap();
    assert!(text.contains("preset = \"paper\""), "{text}");
    let again = scenario::parse(&text, "saved.toml").unwrap();
    assert_eq!(again.policy, s.policy);
    // The default preset is left out of saves, and so are the defaults it changed from the paper.
    let d = scenario::parse(&paper_32(), "p.toml").unwrap();
    let text = d.to_toml().unwrap();
    for key in ["preset", "delta_job_extra", "ff_active_first"] {
        assert!(!text.contains(key), "{key}: {text}");
    }
    // A default written beside the paper preset wins over it and survives a save.
    let s = scenario::parse(
        &paper_32_with("preset = \"paper\"\nff_active_first = true\ndelta_job_extra = 15"),
        "p.toml",
    )
    .unwrap();
    assert!(s.policy.origamig.ff_active_first);
    assert_eq!(s.policy.origamig.delta_job_extra, 15.0);
    assert_eq!(s.policy.origamig.delta, 10.0);
    let again = scenario::parse(&s.to_toml().unwrap(), "saved.toml").unwrap();
    assert_eq!(again.policy, s.policy);
    // So does a default merge neighborhood written beside the paper preset (its 0).
    let s = scenario::parse(&paper_32_with("preset = \"paper\"\nmerge_hosts = 4"), "p.toml").unwrap();
    assert_eq!(s.policy.origamig.merge_hosts, 4);
    let again = scenario::parse(&s.to_toml().unwrap(), "saved.toml").unwrap();
    assert_eq!(again.policy, s.policy);
}

#[test]
fn an_unknown_preset_is_a_one_line_error_naming_the_field() {
    let (_dir, path) = temp_file("p.toml", &paper_32_with("preset = \"fast\""));
    let args = ["check", path.to_str().unwrap()];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["p.toml:", "preset", "fast", "paper"]);
}

/// The run of the golden figures (tests/it/figures.rs) of origamig on `scenario`.
fn golden_run(scenario: &str) -> Value {
    common::golden_run(scenario, "origamig", None)
}

#[test]
fn the_paper_preset_gives_the_figures_of_the_earlier_default() {
    // tests/golden/origamig-paper.json is tests/golden/origamig.json as it was before the
    // default changed (Algorithm 1 as written, δ = 10).
    let (_dir, path) = temp_file("paper-32.toml", &paper_32_with("preset = \"paper\""));
    let run = golden_run(path.to_str().unwrap());
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/golden/origamig-paper.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(run, golden);
    // And the default differs from it (the change is real).
    let default = golden_run("scenarios/paper-32.toml");
    assert_ne!(default, golden);
}

/// `simulate --json` of one run, as a JSON value.
fn simulate(policy: &str, seed: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "simulate",
        "scenarios/paper-32.toml",
        "--policy",
        policy,
        "--seed",
        seed,
        "--load",
        "0.85",
        "--warmup",
        "1",
        "--hours",
        "2",
        "--json",
    ];
    args.extend(extra);
    let out = migplan().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn experiment_paired_pairs_the_runs_of_simulate_by_seed() {
    let (dir, md) = temp_file("paired.md", "");
    let args = [
        "experiment",
        "paired",
        "--scenario",
        "scenarios/paper-32.toml",
        "--seeds",
        "1,2",
        "--loads",
        "0.85",
        "--warmup",
        "1",
        "--hours",
        "2",
        "--others",
        "ff",
        "--threads",
        "2",
        "--json",
        "--markdown",
        md.to_str().unwrap(),
    ];
    let out = migplan().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pairs = t["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    let mut fewer = 0;
    let mut cuts = Vec::new();
    for (p, seed) in pairs.iter().zip(["1", "2"]) {
        assert_eq!(p["seed"].to_string(), seed);
        let o = simulate("origamig", seed, &[]);
        let tc = simulate("tc", seed, &[]);
        let ff = simulate("ff", seed, &[]);
        for k in [
            "active_hosts",
            "migrations_per_h",
            "kwh_per_gpu_hour",
            "acceptance_pct",
        ] {
            assert_eq!(p["origamig"][k], o[k], "{k}");
            assert_eq!(p["tc"][k], tc[k], "{k}");
        }
        assert_eq!(p["others_kwh"]["ff"], ff["kwh_per_gpu_hour"]);
        let (om, tm) = (
            o["migrations_per_h"].as_f64().unwrap(),
            tc["migrations_per_h"].as_f64().unwrap(),
        );
        let cut = if tm > 0.0 { 100.0 * (tm - om) / tm } else { 0.0 };
        assert!((p["migr_reduction_pct"].as_f64().unwrap() - cut).abs() < 1e-9);
        cuts.push(cut);
        if o["active_hosts"].as_f64() < tc["active_hosts"].as_f64() {
            fewer += 1;
        }
    }
    let l = &t["loads"][0];
    assert_eq!(l["fewer_hosts"], fewer);
    let mean = (cuts[0] + cuts[1]) / 2.0;
    // Two seeds: t(0.975, 1) = 12.706, half-width 12.706 * |a - b| / 2.
    let half = 12.706 * (cuts[0] - cuts[1]).abs() / 2.0;
    assert!((l["migr_reduction_pct"][0].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((l["migr_reduction_pct"][1].as_f64().unwrap() - half).abs() < 1e-9);
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("- command: `migplan experiment paired"), "{text}");
    assert!(text.contains("| 0.85 | 1 |"), "{text}");
    drop(dir);
}

#[test]
fn experiment_paired_reads_sweep_rows_and_refuses_a_run_without_its_tc_pair() {
    let header = "scenario,policy,seed,load,active_hosts,migrations_per_h,kwh_per_gpu_hour,acceptance_pct";
    let rows = [
        "s,origamig,1,0.5,9,2,0.40,99",
        "s,tc,1,0.5,10,4,0.41,98",
        "s,origamig,2,0.5,11,3,0.42,97",
        "s,tc,2,0.5,10,4,0.43,97",
        "s,ff,1,0.5,12,0,0.50,95",
        "s,ff,2,0.5,12,0,0.30,95",
    ];
    let (_d, csv) = temp_file("runs.csv", &format!("{header}\n{}\n", rows.join("\n")));
    let args = [
        "experiment",
        "paired",
        "--from-runs",
        csv.to_str().unwrap(),
        "--json",
    ];
    let out = migplan().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    let l = &t["loads"][0];
    // Seed 1: 9 < 10 hosts, migrations 4 -> 2 (50 %); seed 2: 11 > 10, 4 -> 3 (25 %).
    assert_eq!(l["fewer_hosts"], 1);
    assert_eq!(l["migr_reduction_pct"][0].as_f64().unwrap(), 37.5);
    assert!((l["migr_reduction_pct"][1].as_f64().unwrap() - 12.706 * 12.5).abs() < 1e-9);
    // Energy: OrigaMIG 0.41, TC 0.42, FF 0.40: FF is lower, so not the least.
    assert!((l["kwh"]["origamig"].as_f64().unwrap() - 0.41).abs() < 1e-12);
    assert!((l["kwh"]["ff"].as_f64().unwrap() - 0.40).abs() < 1e-12);
    assert_eq!(l["least_energy"], false);
    assert_eq!(l["accept_diff"][0].as_f64().unwrap(), 0.5);
    // Without seed 2's TC row the pair is missing: a one-line error.
    let (_d2, csv2) = temp_file(
        "runs.csv",
        &format!("{header}\n{}\n", [rows[0], rows[1], rows[2]].join("\n")),
    );
    let args = ["experiment", "paired", "--from-runs", csv2.to_str().unwrap()];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["load 0.5 seed 2", "TC"]);
}

#[test]
fn experiment_table9_runs_the_variants_beside_the_paper_and_refuses_an_unknown_one() {
    let args = [
        "experiment",
        "table9",
        "--hosts",
        "8",
        "--seeds",
        "1",
        "--warmup",
        "1",
        "--hours",
        "1",
        "--variants",
        "a30-only,two-gis",
        "--threads",
        "2",
        "--json",
    ];
    let out = migplan().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for (r, (v, p, paper)) in rows.iter().zip([
        ("a30-only", "ff", None),
        ("a30-only", "tc", Some(6.0)),
        ("a30-only", "origamig", Some(3.4)),
        ("two-gis", "ff", None),
        ("two-gis", "tc", Some(7.8)),
        ("two-gis", "origamig", Some(4.7)),
    ]) {
        assert_eq!(r["variant"], v);
        assert_eq!(r["policy"], p);
        assert_eq!(r["paper_fewer_than_ff_pct"].as_f64(), paper);
        let ff = rows
            .iter()
            .find(|q| q["variant"] == v && q["policy"] == "ff")
            .unwrap();
        let (h, f) = (
            r["active_hosts"].as_f64().unwrap(),
            ff["active_hosts"].as_f64().unwrap(),
        );
        assert!((r["fewer_than_ff_pct"].as_f64().unwrap() - 100.0 * (f - h) / f).abs() < 1e-9);
    }
    // The A30-only fleet: FF's run is `simulate` on eight hosts with two A30 each.
    let (_d, sc) = temp_file(
        "a30.toml",
        "name = \"a30\"\nstart = \"2026-01-05T00:00:00Z\"\n[[host_group]]\nprefix = \"a30-\"\ncount = 8\ncores = 80\nram_gb = 512\ngpus = [\"a30-24gb\", \"a30-24gb\"]\n[workload]\nload = 0.85\nwarmup_h = 1\nmeasure_h = 1\n",
    );
    let out = migplan()
        .args([
            "simulate",
            sc.to_str().unwrap(),
            "--policy",
            "ff",
            "--seed",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ff: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["active_hosts"], ff["active_hosts"]);
    let args = ["experiment", "table9", "--variants", "bigger"];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["unknown variant `bigger`", "a30-only"]);
}
