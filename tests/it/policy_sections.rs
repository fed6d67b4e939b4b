//! `[policy]` by policy: each policy's settings in its own sub-table (`[policy.origamig]`,
//! `[policy.tc]`, `[policy.packing]`), the flat keys of earlier versions still read, `check`
//! naming where each moved, saves writing the new form.

use crate::common::cli::{migplan, ok};
use migplan::scenario::{self, PolicySettings, Preset, Reenable, Scenario};
use std::path::Path;

/// A scenario `migplan mode --apply` of commit ef2685d saved: every setting flat in `[policy]`.
fn earlier_save() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/saved-flat-policy.toml"),
    )
    .unwrap()
}

/// The fleet of the earlier save with `policy` as its policy tables.
fn with_policy(policy: &str) -> String {
    let text = earlier_save();
    let at = text.find("\n[policy]\n").unwrap();
    format!("{}\n{policy}", &text[..at])
}

/// `s` saved and read back as `file`: the saved text and the scenario it reads as.
fn save_and_reload(s: &Scenario, file: &str) -> (String, Scenario) {
    let text = s.to_toml().unwrap();
    let back = scenario::parse(&text, file).unwrap();
    (text, back)
}

const NEW_FORM: &str = "[policy]
arrival = \"origamig\"
preset = \"paper\"

[policy.origamig]
delta = 12.0
theta = 2
merge_hosts = 4

[policy.tc]
compaction_min = 20.0

[policy.packing]
finish_gpu = 2.0
defrag_stranded_share = 0.25
";

#[test]
fn a_flat_save_of_an_earlier_version_reads_as_the_new_form() {
    let old = scenario::parse(&earlier_save(), "old.toml").unwrap();
    let new = scenario::parse(&with_policy(NEW_FORM), "new.toml").unwrap();
    assert_eq!(old.policy, new.policy);
    let p = &old.policy;
    assert_eq!(
        (p.arrival.to_string(), p.preset),
        ("origamig".to_string(), Preset::Paper)
    );
    assert_eq!(
        (p.origamig.delta, p.origamig.theta, p.origamig.merge_hosts),
        (12.0, 2, 4)
    );
    // Written beside the preset, the flat keys win over it; the rest take the paper's values.
    assert_eq!(p.origamig.reenable, Reenable::Departure);
    assert!(!p.origamig.keep_removed_sources);
    assert_eq!(p.tc.compaction_min, 20.0);
    assert_eq!((p.packing.finish_gpu, p.packing.finish_host), (2.0, 1.0));
    assert_eq!(p.packing.defrag_stranded_share, 0.25);
    assert!(new.moved_keys.is_empty(), "{:?}", new.moved_keys);
}

#[test]
fn check_says_once_where_each_flat_key_moved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.toml");
    std::fs::write(&path, earlier_save()).unwrap();
    let out = ok(migplan().arg("check").arg(&path));
    let lines: Vec<&str> = out.lines().collect();
    // The save wrote 31 keys; all but arrival, preset, migration_gbps and multi_gpu_whole_only
    // moved: 27 lines, one per key, then the summary.
    assert_eq!(lines.len(), 28, "{out}");
    let delta_line = earlier_save()
        .lines()
        .position(|l| l.starts_with("delta = "))
        .unwrap()
        + 1;
    let want = format!(
        "old.toml:{delta_line}:1: `policy.delta` is now `policy.origamig.delta` (read as before; a save writes the new form)"
    );
    assert!(lines.iter().any(|l| l.ends_with(&want)), "{out}");
    for (old, new) in [
        ("compaction_min", "policy.tc.compaction_min"),
        ("packing_finish_gpu", "policy.packing.finish_gpu"),
        ("defrag_stranded_share", "policy.packing.defrag_stranded_share"),
    ] {
        let hits = lines
            .iter()
            .filter(|l| l.contains(&format!("`policy.{old}` is now `{new}`")))
            .count();
        assert_eq!(hits, 1, "{old}: {out}");
    }
    assert!(!out.contains("`policy.arrival` is now"), "{out}");
    // The new form has nothing to say.
    std::fs::write(&path, with_policy(NEW_FORM)).unwrap();
    let out = ok(migplan().arg("check").arg(&path));
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn saves_write_the_new_form_and_read_back_the_same() {
    let old = scenario::parse(&earlier_save(), "old.toml").unwrap();
    let (text, back) = save_and_reload(&old, "saved.toml");
    let policy = &text[text.find("\n[policy]\n").unwrap()..];
    for table in ["[policy.origamig]", "[policy.tc]", "[policy.packing]"] {
        assert!(policy.contains(table), "{policy}");
    }
    let flat = policy.split("\n[policy.").next().unwrap();
    for key in [
        "delta =",
        "compaction_min",
        "packing_finish_gpu",
        "merge_hosts",
        "theta =",
    ] {
        assert!(!flat.contains(key), "{key} still flat: {flat}");
    }
    assert_eq!(back.policy, old.policy);
    assert!(back.moved_keys.is_empty());
    // The paper preset's keys are written, so that reading back cannot change them.
    let paper = PolicySettings::paper();
    let mut s = scenario::parse(&with_policy("[policy]\npreset = \"paper\"\n"), "p.toml").unwrap();
    assert_eq!(s.policy, paper);
    s.policy.origamig.delta = 15.0;
    let (_, back) = save_and_reload(&s, "p2.toml");
    assert_eq!(back.policy.origamig.delta, 15.0);
    assert_eq!(back.policy.preset, Preset::Paper);
}

#[test]
fn a_key_written_in_both_forms_is_refused_at_the_flat_one() {
    let text = with_policy("[policy]\ndelta = 11\n\n[policy.origamig]\ndelta = 12\n");
    let e = scenario::parse(&text, "both.toml").unwrap_err().to_string();
    let flat_line = text.lines().position(|l| l == "delta = 11").unwrap() + 1;
    assert_eq!(
        e,
        format!(
            "both.toml:{flat_line}:1: field `policy.delta`: also written as `policy.origamig.delta` (line {}): keep one",
            flat_line + 3
        )
    );
}

#[test]
fn errors_name_the_key_as_written() {
    for (policy, field) in [
        ("[policy]\ntheta = 0\n", "policy.theta"),
        ("[policy.origamig]\ntheta = 0\n", "policy.origamig.theta"),
        ("[policy]\norigamig.theta = 0\n", "policy.origamig.theta"),
        ("[policy.tc]\ncompaction_min = -1\n", "policy.tc.compaction_min"),
        (
            "[policy.packing]\nprotect_host = 1e300\n",
            "policy.packing.protect_host",
        ),
    ] {
        let text = with_policy(policy);
        let e = scenario::parse(&text, "bad.toml").unwrap_err().to_string();
        let key = policy.lines().last().unwrap().split(" =").next().unwrap();
        let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
        assert!(
            e.starts_with(&format!("bad.toml:{line}:1: field `{field}`:")),
            "{policy}: {e}"
        );
    }
    let e = scenario::parse(&with_policy("[policy.origamig]\nnonsense = 1\n"), "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `nonsense`"), "{e}");
}

#[test]
fn a_sub_table_key_beside_the_preset_wins_in_either_form() {
    for policy in [
        "[policy]\npreset = \"paper\"\n\n[policy.origamig]\ndelta = 13\n",
        "[policy]\npreset = \"paper\"\norigamig.delta = 13\n",
        "[policy]\npreset = \"paper\"\ndelta = 13\n",
    ] {
        let s = scenario::parse(&with_policy(policy), "p.toml").unwrap();
        assert_eq!(s.policy.origamig.delta, 13.0, "{policy}");
        assert!(!s.policy.origamig.keep_removed_sources, "{policy}");
    }
}

#[test]
fn policy_set_takes_flat_and_sub_table_keys() {
    for (key, path) in [
        ("delta", Some(("origamig", "delta"))),
        ("origamig.delta", Some(("origamig", "delta"))),
        ("packing_finish_gpu", Some(("packing", "finish_gpu"))),
        ("packing.finish_gpu", Some(("packing", "finish_gpu"))),
        ("compaction_min", Some(("tc", "compaction_min"))),
        ("migration_gbps", Some(("", "migration_gbps"))),
        ("origamig.finish_gpu", None),
        ("nonsense", None),
    ] {
        assert_eq!(scenario::policy_key_path(key), path, "{key}");
    }
    // Through the binary: either spelling reaches the same setting and is checked there.
    for key in ["delta", "origamig.delta"] {
        let err = crate::common::cli::fails(migplan().args([
            "sweep",
            "scenarios/paper-32.toml",
            "--policies",
            "origamig",
            "--seeds",
            "1",
            "--hours",
            "0.1",
            "--warmup",
            "0",
            "--policy-set",
            &format!("{key}=1e20"),
        ]));
        assert!(err.contains("field `policy.origamig.delta`"), "{key}: {err}");
        assert!(err.contains("1e20"), "{key}: {err}");
    }
    let err = crate::common::cli::fails(migplan().args([
        "sweep",
        "scenarios/paper-32.toml",
        "--seeds",
        "1",
        "--policy-set",
        "nonsense=1",
    ]));
    assert!(err.contains("unknown setting `nonsense`"), "{err}");
}

#[test]
fn the_saved_layout_hysteresis_is_named_with_its_new_place() {
    let text = with_policy("[policy]\nlayout_hysteresis = 5\n");
    let s = scenario::parse(&text, "h.toml").unwrap();
    let line = text.lines().position(|l| l == "layout_hysteresis = 5").unwrap() + 1;
    assert_eq!(
        s.moved_keys,
        vec![format!(
            "h.toml:{line}:1: `policy.layout_hysteresis` is now `regime.hysteresis` (read as before; a save writes the new form)"
        )]
    );
    assert_eq!(s.policy.legacy_layout_hysteresis, Some(5));
}
