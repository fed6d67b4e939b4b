//! OrigaMIG partitions (`partitions = K`): the setting is checked when a scenario loads, one
//! partition gives the figures of one instance, the figures do not depend on the thread count,
//! and no call reaches beyond its partition.

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::fleet::{assert_checked_repeats, paper_32_with_policy};
use crate::common::{golden_run, without_timing};
use migplan::policy::origamig::neighborhood::{self, Scope};
use migplan::policy::origamig::partitioned::{host_sets, Partitioned};
use migplan::policy::origamig::triggers::{CallKind, Class};
use migplan::sim::{EventKind, Simulator};
use serde_json::Value;

/// `scenarios/paper-32.toml` with `partitions = k` written in its `[policy]` table.
fn paper32_with(k: &str) -> String {
    paper_32_with_policy(&format!("partitions = {k}"))
}

/// [`paper32_with`] with contiguous partitions (racks; the default interleaves them): in the
/// golden run's short window, its first partitions fill first and make calls and repeats, which
/// the tests below need; interleaved partitions of 8 hosts make none there.
fn paper32_racks_with(k: &str) -> String {
    format!(
        "{}\n[policy.origamig]\npartition_interleaved = false\n",
        paper32_with(k)
    )
}

/// `migplan check` of `text` saved as `bad.toml` is a one-line error naming the file and holding
/// each of `want`.
fn check_fails(text: &str, want: &[&str]) {
    let (_dir, path) = temp_file("bad.toml", text);
    let args = ["check", path.to_str().unwrap()];
    let out = migplan().args(args).output().unwrap();
    let mut want = want.to_vec();
    want.push("bad.toml:");
    assert_one_line_error(&out, &args, &want);
}

/// The golden run of origamig on `path`, with `RAYON_NUM_THREADS` set when given.
fn simulate(path: &std::path::Path, threads: Option<&str>) -> Value {
    golden_run(path.to_str().unwrap(), "origamig", threads)
}

#[test]
fn bad_partitions_are_one_line_errors() {
    for (value, want) in [
        (
            "0",
            vec!["field `policy.partitions`", "must be at least 1, not 0"],
        ),
        ("-2", vec!["partitions"]),
        ("\"four\"", vec!["partitions"]),
    ] {
        check_fails(&paper32_with(value), &want);
    }
    let (_dir, path) = temp_file("good.toml", &paper32_with("3"));
    migplan()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .success();
}

#[test]
fn one_partition_gives_the_golden_figures_of_one_instance() {
    let (_dir, path) = temp_file("k1.toml", &paper32_with("1"));
    let run = simulate(&path, None);
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/origamig.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run, without_timing(golden));
}

#[test]
fn partitioned_figures_do_not_depend_on_the_thread_count() {
    let (_dir, path) = temp_file("k4.toml", &paper32_racks_with("4"));
    let one = simulate(&path, Some("1"));
    let two = simulate(&path, Some("2"));
    assert_eq!(one, two);
    assert!(
        one["calls_per_h"].as_f64().unwrap() > 0.0,
        "the partitions made calls: {one}"
    );
    // Four partitions of 8 hosts are not one instance of 32 (under the paper preset, whose calls
    // in this short window differ; the default's calls change nothing here either way).
    let paper = |k: &str| paper_32_with_policy(&format!("preset = \"paper\"\npartitions = {k}"));
    let (_dir4, path4) = temp_file("p4.toml", &paper("4"));
    let (_dir1, path1) = temp_file("p1.toml", &paper("1"));
    assert_ne!(simulate(&path4, Some("2")), simulate(&path1, Some("2")));
}

#[test]
fn bad_partition_hosts_are_one_line_errors() {
    for (line, want) in [
        ("partition_hosts = -1", vec!["partition_hosts"]),
        ("partition_hosts = \"big\"", vec!["partition_hosts"]),
        (
            "partition_hosts = 2000000",
            vec!["field `policy.partition_hosts`", "1000000"],
        ),
        (
            "partitions = 4\npartition_hosts = 8",
            vec![
                "field `policy.partition_hosts`",
                "set either partitions (4) or partition_hosts (8), not both",
            ],
        ),
    ] {
        check_fails(&paper_32_with_policy(line), &want);
    }
}

/// `partition_hosts = 8` on 32 hosts is four partitions of 8 hosts: the figures of
/// `partitions = 4`, whatever the thread count. Under the paper preset, whose calls in this
/// short window differ between partitions of 8 and of 16 hosts (the default's do not).
#[test]
fn partition_hosts_gives_the_figures_of_the_same_partition_count() {
    let paper = |line: &str| paper_32_with_policy(&format!("preset = \"paper\"\n{line}"));
    let (_dir, by_size) = temp_file("n8.toml", &paper("partition_hosts = 8"));
    let (_dir4, by_count) = temp_file("k4.toml", &paper("partitions = 4"));
    let size_one_thread = simulate(&by_size, Some("1"));
    assert!(
        size_one_thread["calls_per_h"].as_f64().unwrap() > 0.0,
        "the partitions made calls: {size_one_thread}"
    );
    assert_eq!(size_one_thread, simulate(&by_count, Some("2")));
    assert_eq!(size_one_thread, simulate(&by_size, Some("2")));
    // Partitions of 16 hosts are two partitions, not four.
    let (_dir16, by_16) = temp_file("n16.toml", &paper("partition_hosts = 16"));
    assert_ne!(size_one_thread, simulate(&by_16, Some("1")));
}

/// `experiment fig7` leaves one-instance OrigaMIG out above `--one-instance-max-hosts` and says
/// so in its table, and refuses a partition size that splits a rack.
#[test]
fn fig7_says_which_runs_it_left_out() {
    let out = migplan()
        .args([
            "experiment",
            "fig7",
            "--sizes",
            "32,64",
            "--warmup",
            "0",
            "--hours",
            "0.05",
            "--runs",
            "ff,origamig",
            "--one-instance-max-hosts",
            "32",
            "--threads",
            "2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |hosts: &str, policy: &str| {
        text.lines()
            .find(|l| {
                let f: Vec<&str> = l.split('|').map(str::trim).collect();
                f.get(1) == Some(&hosts) && f.get(2) == Some(&policy)
            })
            .unwrap_or_else(|| panic!("no row {hosts} {policy} in:\n{text}"))
            .to_string()
    };
    assert!(!row("32", "origamig").contains("not run"), "{text}");
    assert!(
        row("64", "origamig").contains("not run (over 32 hosts)"),
        "{text}"
    );
    assert!(!row("64", "ff").contains("not run"), "{text}");
    assert!(text.contains("2 threads"), "{text}");
    let args = ["experiment", "fig7", "--sizes", "64", "--partition-hosts", "48"];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["--partition-hosts", "48", "multiple of 32"]);
    let args = ["experiment", "fig7", "--sizes", "64", "--preset", "fast"];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["--preset", "`fast`", "default, paper"]);
}

#[test]
fn calls_never_cross_partitions() {
    calls_stay_in_their_partitions(false);
}

#[test]
fn calls_never_cross_interleaved_partitions() {
    calls_stay_in_their_partitions(true);
}

fn calls_stay_in_their_partitions(interleaved: bool) {
    // With classes enabled again by any departure (the paper's reading), this short window has
    // plans that move VMs in both partitions; the default makes none in it.
    let text = paper_32_with_policy("partitions = 2\nreenable = \"departure\"");
    let (_dir, path) = temp_file("k2.toml", &text);
    let mut s = migplan::scenario::load(&path).unwrap();
    s.policy.origamig.partition_interleaved = interleaved;
    s.workload.warmup_h = 2.0;
    s.workload.measure_h = if interleaved { 6.0 } else { 2.0 };
    let parts = host_sets(s.fleet.hosts.len(), 2, interleaved);
    let listed: Vec<Vec<usize>> = parts.iter().map(|p| p.iter().collect()).collect();
    if interleaved {
        let evens: Vec<usize> = (0..32).step_by(2).collect();
        let odds: Vec<usize> = (1..32).step_by(2).collect();
        assert_eq!(listed, vec![evens, odds]);
    } else {
        assert_eq!(listed, vec![(0..16).collect::<Vec<_>>(), (16..32).collect()]);
    }
    let policy = Partitioned::new(&s.policy.origamig);
    let mut sim = Simulator::new(&s, Box::new(policy)).unwrap();
    let mut checked_moves = 0;
    let mut checked_calls = 0;
    let mut moves: Vec<(usize, usize)> = Vec::new();
    let part = |h: usize| parts.iter().position(|r| r.contains(h)).unwrap();
    while sim.time() < sim.horizon() {
        let seen = sim.events_total();
        sim.step();
        let new = (sim.events_total() - seen) as usize;
        let events = sim.events();
        for e in &events[events.len() - new.min(events.len())..] {
            match &e.kind {
                EventKind::Migration { from, to, .. } => moves.push((*from, *to)),
                EventKind::Plan { .. } => {
                    // Every move of one plan stays in one partition.
                    let ps: std::collections::BTreeSet<usize> =
                        moves.iter().flat_map(|&(f, t)| [part(f), part(t)]).collect();
                    assert!(ps.len() <= 1, "a plan moved VMs across partitions: {moves:?}");
                    checked_moves += moves.len();
                    moves.clear();
                }
                _ => {}
            }
        }
        // Every neighborhood a partition could select now lies within it.
        {
            let fleet = sim.fleet();
            for r in &parts {
                let pending = fleet.pending().to_vec();
                let scope = Scope {
                    hosts: r,
                    pending: &pending,
                };
                let mut kinds = vec![CallKind::Admission];
                kinds.extend(Class::all_in(fleet, r).into_iter().map(CallKind::Consolidation));
                for kind in kinds {
                    let nb = neighborhood::select_in(fleet, &kind, &s.policy.origamig, scope);
                    assert!(
                        nb.hosts.iter().all(|&h| r.contains(h)),
                        "{kind}: {:?} outside {r}",
                        nb.hosts
                    );
                    checked_calls += usize::from(!nb.hosts.is_empty());
                }
            }
        }
    }
    assert!(checked_moves > 0, "no plan moved a VM: the test checked nothing");
    assert!(
        checked_calls > 0,
        "no neighborhood was selected: the test checked nothing"
    );
}

/// Each partition skips a consolidation call on a neighborhood one of its solves proved
/// unchanged. The policy's test switch solves every skipped repeat anyway and panics if it would
/// propose a move: the skip is exact. The run has repeats, so the check is exercised.
#[test]
fn a_partition_skips_only_repeats_that_would_change_nothing() {
    let (_dir, path) = temp_file("k2.toml", &paper32_racks_with("2"));
    let mut s = migplan::scenario::load(&path).unwrap();
    // FF at arrival on these two-GPU hosts: the short run then skips repeats (with the
    // default's best fit it skips none); whether a skipped repeat would change nothing does not
    // depend on it.
    s.policy.origamig.arrival_best_fit_small = false;
    // And the re-enable rule before `reenable = "room"`, under which it calls too seldom.
    s.policy.origamig.reenable = migplan::policy_settings::Reenable::Neighborhood;
    s.policy.origamig.reenable_gap_rise = 1;
    let mut policy = Partitioned::new(&s.policy.origamig);
    policy.set_check_repeats(true);
    assert_checked_repeats(s, Box::new(policy));
}
