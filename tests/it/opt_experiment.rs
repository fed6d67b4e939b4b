//! `migplan experiment` through the binary, on tiny settings (the real runs take minutes).

use crate::common::cli::{migplan, stdout_of};

#[test]
fn gap_to_opt_compares_each_snapshot_with_an_opt_that_is_never_worse() {
    let out = stdout_of(&[
        "experiment",
        "gap-to-opt",
        "--sizes",
        "3",
        "--from-h",
        "6",
        "--to-h",
        "10",
        "--every-h",
        "2",
        "--opt-time-limit",
        "5",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let snaps = v["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 3, "snapshots at 6, 8 and 10 h");
    for s in snaps {
        // OPT starts from OrigaMIG's placement and never returns a worse one (§5.3, §6.8).
        let (o, p) = (
            s["origamig_eq5"].as_f64().unwrap(),
            s["opt_eq5"].as_f64().unwrap(),
        );
        assert!(p >= o - 1e-6, "OPT {p} below OrigaMIG {o}");
        assert!(s["opt_active"].as_u64().unwrap() <= 3);
    }
    let row = &v["sizes"][0];
    assert_eq!(row["hosts"], 3);
    assert_eq!(row["snapshots"], 3);
    // The Eq. 5 gap aggregates the snapshots as the active-host gap does: (sum OPT - sum
    // OrigaMIG) / sum OPT, recomputed here from the snapshots; the worst snapshot bounds it.
    let (so, sp) = snaps.iter().fold((0.0, 0.0), |(o, p), s| {
        (
            o + s["origamig_eq5"].as_f64().unwrap(),
            p + s["opt_eq5"].as_f64().unwrap(),
        )
    });
    let worst = snaps
        .iter()
        .map(|s| {
            let (o, p) = (
                s["origamig_eq5"].as_f64().unwrap(),
                s["opt_eq5"].as_f64().unwrap(),
            );
            100.0 * (p - o) / p
        })
        .fold(0.0f64, f64::max);
    let gap = row["eq5_gap_pct"].as_f64().unwrap();
    assert!((gap - 100.0 * (sp - so) / sp).abs() < 1e-9, "{gap}");
    assert!((row["eq5_gap_max_pct"].as_f64().unwrap() - worst).abs() < 1e-9);
    assert!(gap >= 0.0 && gap <= worst + 1e-9);
}

#[test]
fn table8_prints_each_policy_beside_the_paper() {
    let out = stdout_of(&[
        "experiment",
        "table8",
        "--loads",
        "1.0",
        "--policies",
        "ff,mfi",
        "--warmup",
        "1",
        "--hours",
        "1",
    ]);
    let text = String::from_utf8(out).unwrap();
    // The paper's acceptance at load 1.0: FF 83.7 %, MFI 87.0 %.
    let ff = text.lines().find(|l| l.contains(" ff |")).unwrap();
    assert!(ff.contains("( 83.7)"), "{text}");
    let mfi = text.lines().find(|l| l.contains(" mfi |")).unwrap();
    assert!(mfi.contains("( 87.0)"), "{text}");
}

#[test]
fn experiment_rejects_bad_arguments_with_one_line() {
    migplan()
        .args(["experiment", "gap-to-opt", "--every-h", "0"])
        .assert()
        .code(2);
    migplan()
        .args(["experiment", "table8", "--policies", "nope"])
        .assert()
        .code(2);
}

#[test]
fn fig6_varies_delta_and_the_tc_period_and_a_larger_delta_never_migrates_more() {
    // δ = 40 prices a move between hosts (m + ω: 2δ = 80) above what switching off a host with
    // one GPU in use saves (b_j + e_jk = 70), while δ = 0 moves for free (§6.6): δ = 40 cannot
    // migrate more. The TC rows carry their period.
    let out = stdout_of(&[
        "experiment",
        "fig6",
        "--deltas",
        "0,40",
        "--tc-periods",
        "15,60",
        "--load",
        "0.85",
        "--warmup",
        "2",
        "--hours",
        "2",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let rows = v.as_array().unwrap();
    let labels: Vec<(String, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["policy"].as_str().unwrap().to_string(),
                r["setting"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    assert_eq!(labels[0].0, "ff");
    assert_eq!(&labels[1..3], &[("tc".into(), 15.0), ("tc".into(), 60.0)]);
    assert_eq!(
        &labels[3..],
        &[("origamig".into(), 0.0), ("origamig".into(), 40.0)]
    );
    let m = |i: usize| rows[i]["migrations_per_h"].as_f64().unwrap();
    assert_eq!(m(0), 0.0, "FF never migrates");
    assert!(m(4) <= m(3), "δ=40 migrates {} per hour, δ=0 {}", m(4), m(3));
    let fewer = rows[0]["fewer_than_ff_pct"].as_f64().unwrap();
    assert_eq!(fewer, 0.0);
}

#[test]
fn fig6_prints_the_papers_table_10_beside_each_row() {
    let out = stdout_of(&[
        "experiment",
        "fig6",
        "--deltas",
        "10",
        "--tc-periods",
        "60",
        "--warmup",
        "1",
        "--hours",
        "1",
    ]);
    let text = String::from_utf8(out).unwrap();
    // Table 10, scaled to 32 hosts: TC hourly 10.0 migrations/h -> 2.5; OrigaMIG δ=10 12.8 -> 3.2.
    let tc = text.lines().find(|l| l.starts_with("TC every 60 min ")).unwrap();
    assert!(tc.contains("(   2.5)"), "{text}");
    let o = text.lines().find(|l| l.starts_with("OrigaMIG δ=10 ")).unwrap();
    assert!(o.contains("(   3.2)"), "{text}");
    migplan()
        .args(["experiment", "fig6", "--deltas=-5"])
        .assert()
        .code(2);
}

#[test]
fn speed_writes_its_table_with_provenance_and_refuses_a_missing_folder_first() {
    let (dir, _) = crate::common::cli::temp_file("unused", "");
    let md = dir.path().join("speed.md");
    let md_s = md.to_str().unwrap();
    // FF and TC on the demo fleet for a simulated hour, no play: both rows, the command, a
    // commit line, and no negative zero in the empty call total.
    let args = [
        "experiment",
        "speed",
        "--scenario",
        "scenarios/demo.toml",
        "--policies",
        "ff,tc",
        "--warmup",
        "0",
        "--hours",
        "1",
        "--play-days",
        "0",
        "--markdown",
        md_s,
    ];
    let out = String::from_utf8(stdout_of(&args)).unwrap();
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("# Simulation speed\n"), "{text}");
    assert!(
        text.contains("Command: `migplan experiment speed --scenario scenarios/demo.toml"),
        "{text}"
    );
    assert!(text.contains("Commit: "), "{text}");
    assert!(
        text.ends_with(&out),
        "the file holds the printed table:\n{text}\n{out}"
    );
    for p in ["ff", "tc"] {
        let row = out.lines().find(|l| l.starts_with(&format!("| {p} |"))).unwrap();
        assert!(row.contains("| 0 | 0.00 | 0 | 0.000 |"), "{row}");
    }
    assert!(!out.contains("-0.00"), "{out}");
    // A --markdown folder that does not exist is refused before any run, in one line.
    let bad = dir.path().join("no-such-folder").join("speed.md");
    let bad_args = [
        "experiment",
        "speed",
        "--scenario",
        "scenarios/demo.toml",
        "--markdown",
        bad.to_str().unwrap(),
    ];
    let o = crate::common::cli::migplan().args(bad_args).output().unwrap();
    crate::common::cli::assert_one_line_error(&o, &bad_args, &["--markdown", "does not exist"]);
}

/// `experiment speed --policy-set`: the setting reaches the runs (θ out of reach: no call where
/// the default calls once) and the header names it; a bad value is a one-line error.
#[test]
fn speed_takes_policy_settings() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "experiment",
            "speed",
            "--scenario",
            "scenarios/paper-32.toml",
            "--warmup",
            "1",
            "--hours",
            "1",
            "--play-days",
            "0",
        ];
        args.extend_from_slice(extra);
        String::from_utf8(stdout_of(&args)).unwrap()
    };
    let calls = |out: &str| -> u64 {
        let row = out.lines().find(|l| l.starts_with("| origamig |")).unwrap();
        row.split('|').nth(6).unwrap().trim().parse().unwrap()
    };
    let default = run(&[]);
    assert!(calls(&default) > 0, "{default}");
    let off = run(&["--policy-set", "theta=1000"]);
    assert_eq!(calls(&off), 0, "{off}");
    assert!(off.contains("; policy settings: theta=1000"), "{off}");
    let bad = [
        "experiment",
        "speed",
        "--scenario",
        "scenarios/paper-32.toml",
        "--policy-set",
        "reenable=\"bogus\"",
    ];
    let o = crate::common::cli::migplan().args(bad).output().unwrap();
    crate::common::cli::assert_one_line_error(&o, &bad, &["reenable", "bogus"]);
}
