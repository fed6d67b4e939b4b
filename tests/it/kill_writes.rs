//! Kill-safe writes: `solve --apply-to` is killed (SIGKILL) at random moments of its run, over
//! and over. The target must always be either the old file or the complete new one, and the
//! temporary files of killed runs must not pile up (each write removes those of dead processes).

use migplan::fsutil;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scenario of `hosts` hosts with two A100s each, every GPU holding one 7g tenant: its saved
/// form is a few hundred kilobytes.
fn big_scenario(hosts: usize) -> String {
    let mut s = format!(
        "name = \"big\"\nstart = \"2026-01-05T00:00:00Z\"\n\n[[host_group]]\nprefix = \"h-\"\n\
         count = {hosts}\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\", \"a100-40gb\"]\n\n"
    );
    for i in 0..2 * hosts {
        s.push_str(&format!(
            "[[vm]]\nid = {}\nmodel = \"a100-40gb\"\nprofiles = [\"7g.40gb\"]\ncores = 4\nram_gb = 16\n\
             kind = \"tenant\"\nhost = \"h-{}\"\nat = [\"{}@0\"]\n\n",
            i + 1,
            i / 2,
            i % 2
        ));
    }
    s
}

fn solve_cmd(scenario: &Path, target: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("migplan"));
    c.arg("solve")
        .arg(scenario)
        .arg("--apply-to")
        .arg(target)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn kill_runs() -> usize {
    std::env::var("MIGPLAN_KILL_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

#[test]
fn apply_to_killed_at_random_moments_leaves_old_or_new_and_no_pile_of_temps() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("big.toml");
    std::fs::write(&scenario, big_scenario(400)).unwrap();
    let target = dir.path().join("out.toml");

    // The complete new file, and how long a whole run takes.
    let t0 = Instant::now();
    let ok = solve_cmd(&scenario, &target).status().unwrap();
    let full = t0.elapsed();
    assert!(ok.success());
    let new = std::fs::read(&target).unwrap();
    assert!(new.len() > 100_000, "{} bytes", new.len());
    let old = b"# the old file\n".to_vec();

    let mut rng = rand::rngs::StdRng::seed_from_u64(24);
    let (mut saw_old, mut saw_new) = (0, 0);
    let runs = kill_runs();
    for run in 0..runs {
        if run % 2 == 0 {
            std::fs::write(&target, &old).unwrap();
        }
        let before = std::fs::read(&target).unwrap();
        // Half the kills anywhere in the run, half around its end (the run times vary), where the write happens.
        let span = full.as_secs_f64();
        let at = if run % 2 == 0 {
            rng.gen_range(0.0..span)
        } else {
            rng.gen_range(span * 0.6..span * 1.6)
        };
        let mut child = solve_cmd(&scenario, &target).spawn().unwrap();
        std::thread::sleep(Duration::from_secs_f64(at));
        let _ = child.kill();
        let _ = child.wait();
        let after = std::fs::read(&target).unwrap();
        assert!(
            after == before || after == new,
            "run {run}: killed after {at:.3} s, the target is neither the old nor the new file ({} bytes)",
            after.len()
        );
        if after == new {
            saw_new += 1;
        } else {
            saw_old += 1;
        }
        // At most the temp of the run just killed: the earlier ones were removed by later writes.
        let temps = fsutil::temp_files(dir.path(), "out.toml");
        assert!(
            temps.len() <= 1,
            "run {run}: {} temporary files left",
            temps.len()
        );
    }
    // One complete write removes the temp of the last killed run.
    assert!(solve_cmd(&scenario, &target).status().unwrap().success());
    assert_eq!(std::fs::read(&target).unwrap(), new);
    assert!(fsutil::temp_files(dir.path(), "out.toml").is_empty());
    eprintln!("{runs} kills: target old {saw_old} times, new {saw_new} times");
}
