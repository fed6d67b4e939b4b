//! `migplan experiment` through the binary, on tiny settings (the real runs take minutes).

use assert_cmd::Command;

fn migplan() -> Command {
    let mut c = Command::cargo_bin("migplan").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn gap_to_opt_compares_each_snapshot_with_an_opt_that_is_never_worse() {
    let out = migplan()
        .args([
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
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
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
    assert!(row["eq5_gap_pct"].as_f64().unwrap() >= 0.0);
}

#[test]
fn table8_prints_each_policy_beside_the_paper() {
    let out = migplan()
        .args([
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
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
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
