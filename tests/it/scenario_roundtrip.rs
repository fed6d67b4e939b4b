//! Saving a scenario writes a file that loads back to the same state, atomically.

use migplan::scenario;
use std::path::Path;

fn shipped() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_scenario_loads_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let files = shipped();
    assert!(files.iter().any(|p| p.ends_with("demo.toml")));
    for path in files {
        let s = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        s.fleet.check_invariants().unwrap();
        let out = dir.path().join(path.file_name().unwrap());
        scenario::save(&s, &out).unwrap();
        let back = scenario::load(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        assert_eq!(back.fleet, s.fleet, "{}", path.display());
        assert_eq!(back.workload, s.workload);
        assert_eq!(back.policy, s.policy);
        assert_eq!(back.quotas, s.quotas);
        assert_eq!(back.start, s.start);
        assert_eq!(back.now_s, s.now_s);
        // Saving the reloaded state gives the same text (a fixed point).
        assert_eq!(back.to_toml().unwrap(), s.to_toml().unwrap());
        // Nothing but the saved file is left behind.
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn a_moved_vm_and_the_queue_order_survive_a_save() {
    let mut s = scenario::parse(scenario::DEMO, "demo.toml").unwrap();
    let first = s.fleet.vms().find(|v| v.placement.is_some()).unwrap().clone();
    let target = (0..s.fleet.hosts.len())
        .rev()
        .find_map(|h| s.fleet.host_placement_default(&first, h))
        .unwrap();
    s.fleet.move_vm(first.id, target.clone()).unwrap();
    let mut extra = first.clone();
    extra.id = 0;
    extra.placement = None;
    extra.admitted_at = None;
    let a = s.fleet.add_pending(extra.clone()).unwrap();
    let b = s.fleet.add_pending(extra).unwrap();
    let text = s.to_toml().unwrap();
    let back = scenario::parse(&text, "saved.toml").unwrap();
    assert_eq!(back.fleet.vm(first.id).unwrap().placement.as_ref(), Some(&target));
    let q = back.fleet.pending();
    assert_eq!(&q[q.len() - 2..], &[a, b]);
    assert_eq!(back.fleet, s.fleet);
}

#[test]
fn saving_replaces_the_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario::parse(scenario::DEMO, "demo.toml").unwrap();
    // Saving into a folder that does not exist fails and leaves nothing behind.
    let bad = dir.path().join("missing").join("x.toml");
    assert!(scenario::save(&s, &bad).is_err());
    let target = dir.path().join("x.toml");
    std::fs::write(&target, "old contents").unwrap();
    scenario::save(&s, &target).unwrap();
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains("a100-40gb") && !text.contains("old contents"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_file_saved_by_an_earlier_version_still_loads() {
    // Earlier saves wrote every policy setting, including `layout_hysteresis`, which only the
    // static-layouts regime reads; such files must load, and a new save leaves the key out of
    // `[policy]` (with a `[regime]` table it moves there: tests/it/regimes.rs).
    let text = format!(
        "{}\n[policy]\nlayout_hysteresis = 3\n",
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fig1.toml")).unwrap()
    );
    let s = scenario::parse(&text, "old.toml").unwrap_or_else(|e| panic!("{e}"));
    let saved = s.to_toml().unwrap();
    assert!(!saved.contains("layout_hysteresis"), "{saved}");
    scenario::parse(&saved, "new.toml").unwrap();
}

#[test]
fn the_reading_of_algorithm_1_is_a_policy_setting() {
    // On by default; `keep_removed_sources = false` (the reading as written) is read, saved and
    // read back.
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fig1.toml")).unwrap();
    assert!(
        scenario::parse(&base, "a.toml")
            .unwrap()
            .policy
            .origamig
            .keep_removed_sources
    );
    let s = scenario::parse(
        &format!("{base}\n[policy]\nkeep_removed_sources = false\n"),
        "b.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!s.policy.origamig.keep_removed_sources);
    let again = scenario::parse(&s.to_toml().unwrap(), "c.toml").unwrap();
    assert!(!again.policy.origamig.keep_removed_sources);
}
