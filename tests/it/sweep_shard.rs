//! Sweeps split into parts (`--shard K/N`) and merged (`--aggregate`): the merge is byte-identical
//! to a one-machine run, bad parts are one-line errors, and the Kubernetes and Slurm examples of
//! `docs/cluster.md` are command lines migplan accepts, whose parts cover the grid once.

use crate::common::cli::{assert_one_line_error, migplan};
use clap::Parser;
use migplan::cli::sweep::{Args as SweepArgs, Shard};
use migplan::cli::{Cli, Command};
use std::collections::BTreeMap;
use std::path::Path;

const GRID: &[&str] = &[
    "sweep",
    "scenarios/paper-32.toml",
    "--policies",
    "ff,tc",
    "--loads",
    "0.6,0.9",
    "--seeds",
    "1..2",
    "--warmup",
    "1",
    "--hours",
    "2",
    "--jobs",
    "1",
];

/// Runs the tiny grid with `extra` arguments; returns its standard output.
fn sweep(extra: &[&str], dirs: &[&Path]) -> Vec<u8> {
    let out = migplan().args(GRID).args(extra).args(dirs).output().unwrap();
    assert!(
        out.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A runs.csv without its timing columns (they measure the machine, see docs/cluster.md).
fn without_timing(csv: &str) -> String {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let timing: Vec<usize> = ["wall_s", "call_s_median", "call_s_p95"]
        .iter()
        .map(|c| header.iter().position(|h| h == c).unwrap())
        .collect();
    std::iter::once(header.join(","))
        .chain(lines.map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            cells
                .iter()
                .enumerate()
                .filter(|(i, _)| !timing.contains(i))
                .map(|(_, c)| *c)
                .collect::<Vec<_>>()
                .join(",")
        }))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn three_parts_merged_are_byte_identical_to_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole_out = sweep(&["--out"], &[&d.join("whole")]);
    for k in 1..=3 {
        let part = sweep(
            &["--shard", &format!("{k}/3"), "--out"],
            &[&d.join(format!("p{k}"))],
        );
        assert!(part.is_empty(), "a part writes only its rows");
        assert!(!d.join(format!("p{k}/summary.csv")).exists());
    }
    let read = |p: &str| std::fs::read_to_string(d.join(p)).unwrap();
    // The parts are disjoint and together hold the grid: 8 runs as 3 + 3 + 2, run i in part
    // i mod 3 + 1.
    let whole = read("whole/runs.csv");
    let whole_rows: Vec<&str> = whole.lines().skip(1).collect();
    assert_eq!(whole_rows.len(), 8);
    for k in 1..=3usize {
        let part = read(&format!("p{k}/runs.csv"));
        assert_eq!(part.lines().next(), whole.lines().next());
        let keys: Vec<String> = part.lines().skip(1).map(key).collect();
        let want: Vec<String> = (0..8)
            .filter(|i| i % 3 == k - 1)
            .map(|i| key(whole_rows[i]))
            .collect();
        assert_eq!(keys, want, "part {k}");
    }
    // Files in any order: the merge follows the grid.
    let merged_out = sweep(
        &["--aggregate"],
        &[
            &d.join("p3/runs.csv"),
            &d.join("p1/runs.csv"),
            &d.join("p2/runs.csv"),
        ],
    );
    let merged_out2 = {
        let out = migplan()
            .args(GRID)
            .arg("--aggregate")
            .args([
                d.join("p2/runs.csv"),
                d.join("p3/runs.csv"),
                d.join("p1/runs.csv"),
            ])
            .arg("--out")
            .arg(d.join("merged"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    assert_eq!(merged_out, merged_out2);
    assert_eq!(whole_out, merged_out, "the printed summary table");
    assert!(String::from_utf8(whole_out).unwrap().contains("tc"));
    for f in ["summary.csv", "fig4.svg"] {
        assert_eq!(
            std::fs::read(d.join("whole").join(f)).unwrap(),
            std::fs::read(d.join("merged").join(f)).unwrap(),
            "{f}"
        );
    }
    let merged = read("merged/runs.csv");
    assert_eq!(without_timing(&whole), without_timing(&merged));
    // The merge copies the parts' rows as written, timing included.
    for k in 1..=3 {
        for row in read(&format!("p{k}/runs.csv")).lines().skip(1) {
            assert!(merged.lines().any(|l| l == row), "{row}");
        }
    }
}

/// A row's (policy, seed, load) cells.
fn key(row: &str) -> String {
    row.split(',').skip(1).take(3).collect::<Vec<_>>().join(",")
}

#[test]
fn an_empty_part_writes_the_header_and_the_merge_still_matches() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 8 runs in 9 parts: part 9 has none.
    sweep(&["--shard", "9/9", "--out"], &[&d.join("p9")]);
    let empty = std::fs::read_to_string(d.join("p9/runs.csv")).unwrap();
    assert_eq!(empty.lines().count(), 1, "{empty}");
    assert!(empty.starts_with("scenario,policy,seed,load,"));
    // All of the grid in one part, plus the empty one, merge into the one-machine summary.
    let whole_out = sweep(&["--out"], &[&d.join("whole")]);
    sweep(&["--shard", "1/1", "--out"], &[&d.join("p1")]);
    let merged_out = sweep(
        &["--out", d.join("merged").to_str().unwrap(), "--aggregate"],
        &[&d.join("p9/runs.csv"), &d.join("p1/runs.csv")],
    );
    assert_eq!(whole_out, merged_out);
    assert_eq!(
        std::fs::read(d.join("whole/summary.csv")).unwrap(),
        std::fs::read(d.join("merged/summary.csv")).unwrap()
    );
}

#[test]
fn bad_parts_and_bad_merges_are_one_line_errors() {
    for (shard, want) in [
        ("0/3", "K must be in 1..=3"),
        ("4/3", "K must be in 1..=3"),
        ("1/0", "N must be at least 1"),
        ("x", "expected K/N"),
        ("1/x", "expected K/N"),
        ("2/-3", "expected K/N"),
    ] {
        let args: Vec<&str> = GRID.iter().copied().chain(["--shard", shard]).collect();
        let out = migplan().args(&args).output().unwrap();
        assert_one_line_error(&out, &args, &["--shard", shard, want]);
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    sweep(&["--shard", "1/2", "--out"], &[&d.join("p1")]);
    sweep(&["--shard", "2/2", "--out"], &[&d.join("p2")]);
    let p1 = d.join("p1/runs.csv").display().to_string();
    let p2 = d.join("p2/runs.csv").display().to_string();
    let run = |extra: &[&str], want: &[&str]| {
        let args: Vec<&str> = GRID.iter().copied().chain(extra.iter().copied()).collect();
        let out = migplan().args(&args).output().unwrap();
        assert_one_line_error(&out, &args, want);
    };
    // A part missing: the first missing run of the grid is named (run 1 is in part 2).
    run(&["--aggregate", &p1], &["run ff load 0.6 seed 2 is missing"]);
    // A part given twice: the file and line of both copies.
    run(
        &["--aggregate", &p1, &p2, &p1],
        &[&format!("{p1}:2: run ff load 0.6 seed 1 is also at {p1}:2")],
    );
    // A grid smaller than the parts' runs: the row that is not in it, by file and line.
    let small: Vec<&str> = GRID
        .iter()
        .map(|a| if *a == "1..2" { "1" } else { a })
        .chain(["--aggregate", &p1, &p2])
        .collect();
    let out = migplan().args(&small).output().unwrap();
    assert_one_line_error(
        &out,
        &small,
        &[&format!(
            "{p2}:2: run ff load 0.6 seed 2 is not in this sweep's grid"
        )],
    );
    // The parts of another scenario.
    let other: Vec<&str> = GRID
        .iter()
        .map(|a| {
            if a.ends_with("paper-32.toml") {
                "scenarios/demo.toml"
            } else {
                a
            }
        })
        .chain(["--aggregate", &p1, &p2])
        .collect();
    let out = migplan().args(&other).output().unwrap();
    assert_one_line_error(&out, &other, &[&format!("{p1}:2: a run of scenario")]);
    // --shard goes with neither --aggregate nor the summary's outputs.
    run(
        &["--shard", "1/2", "--aggregate", &p1],
        &["--shard", "--aggregate"],
    );
    let svg = d.join("f.svg").display().to_string();
    run(
        &["--shard", "1/2", "--svg", &svg],
        &["--shard writes run rows only"],
    );
    // A grid naming a seed twice would count its runs twice.
    let twice: Vec<&str> = GRID
        .iter()
        .map(|a| if *a == "1..2" { "1,2,1" } else { a })
        .collect();
    let out = migplan().args(&twice).output().unwrap();
    assert_one_line_error(&out, &twice, &["--seeds: seed 1 is given twice"]);
}

#[test]
fn shard_values_parse_and_parts_are_disjoint_and_cover_the_grid() {
    for n in 1..=7usize {
        for i in 0..20usize {
            let owners: Vec<usize> = (1..=n)
                .filter(|&k| Shard::parse(&format!("{k}/{n}")).unwrap().owns(i))
                .collect();
            assert_eq!(owners, vec![i % n + 1], "run {i} of {n} parts");
        }
    }
    assert_eq!(Shard::parse(" 2/5").unwrap(), Shard { k: 2, n: 5 });
    for bad in ["", "/", "3", "0/0", "2/1", "1/2/3", "a/b", "1.5/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}

/// The fenced code blocks of a Markdown text with the given language tag.
fn blocks(md: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match &mut current {
            None if line.trim_start() == format!("```{lang}") => current = Some(String::new()),
            Some(text) if line.trim_start() == "```" => {
                out.push(std::mem::take(text));
                current = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    out
}

/// Expands `$((NAME + c))`, `${NAME}` and `$NAME` from `env`; an unknown name is a test failure.
fn expand(text: &str, env: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let ident_end = |s: &str| {
            s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len())
        };
        if let Some(inner) = rest.strip_prefix("((") {
            let end = inner.find("))").expect("closed $((...))");
            let (name, add) = inner[..end].split_once('+').expect("$((NAME + c))");
            let value: i64 = env[name.trim()].parse().unwrap();
            out.push_str(&(value + add.trim().parse::<i64>().unwrap()).to_string());
            rest = &inner[end + 2..];
        } else if let Some(inner) = rest.strip_prefix('{') {
            let end = inner.find('}').unwrap();
            out.push_str(
                env.get(&inner[..end])
                    .unwrap_or_else(|| panic!("${{{}}}", &inner[..end])),
            );
            rest = &inner[end + 1..];
        } else {
            let end = ident_end(rest);
            let name = &rest[..end];
            out.push_str(
                env.get(name)
                    .unwrap_or_else(|| panic!("unknown ${name} in {text}")),
            );
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// The `migplan` command lines of a shell script (continuation lines joined), expanded with `env`
/// and parsed by migplan's own parser.
fn migplan_lines(script: &str, env: &BTreeMap<&str, String>) -> Vec<SweepArgs> {
    let joined = script.replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("migplan "))
        .map(|l| {
            let line = expand(l, env);
            assert!(!line.contains(['"', '\'', '$']), "unexpanded: {line}");
            let words: Vec<&str> = line.split_whitespace().collect();
            match Cli::try_parse_from(&words) {
                Ok(Cli {
                    command: Some(Command::Sweep(a)),
                }) => a,
                Ok(other) => panic!("{line}: not a sweep: {other:?}"),
                Err(e) => panic!("{line}: {e}"),
            }
        })
        .collect()
}

/// The grid options of a sweep, for comparing the parts with the merge.
fn grid_of(a: &SweepArgs) -> String {
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        a.scenario, a.policies, a.loads, a.seeds, a.run.hours, a.run.warmup, a.run.trace
    )
}

/// Whether `path` matches `pattern`, whose only wildcard is one `*` within a path component.
fn glob_match(pattern: &str, path: &str) -> bool {
    match pattern.split_once('*') {
        Some((pre, post)) => {
            path.len() >= pre.len() + post.len()
                && path.starts_with(pre)
                && path.ends_with(post)
                && !path[pre.len()..path.len() - post.len()].contains('/')
        }
        None => pattern == path,
    }
}

/// Checks parts against their merge: parts 1..=n each exactly once, each writing its own folder,
/// the merge reading every part's runs.csv, and the same grid on every line.
fn check_parts_and_merge(what: &str, parts: &[SweepArgs], merges: &[SweepArgs], n: usize) {
    assert_eq!(parts.len(), n, "{what}: one part per index");
    let mut ks: Vec<usize> = parts
        .iter()
        .map(|a| {
            let s = Shard::parse(a.shard.as_deref().expect("--shard")).unwrap();
            assert_eq!(s.n, n, "{what}: N is the number of parts");
            assert!(a.aggregate.is_empty());
            s.k
        })
        .collect();
    ks.sort_unstable();
    assert_eq!(ks, (1..=n).collect::<Vec<_>>(), "{what}: every part once");
    let outs: Vec<String> = parts
        .iter()
        .map(|a| {
            a.out
                .as_ref()
                .expect("--out")
                .join("runs.csv")
                .display()
                .to_string()
        })
        .collect();
    let mut distinct = outs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), n, "{what}: each part writes its own folder");
    assert_eq!(merges.len(), 1, "{what}: one merge");
    let m = &merges[0];
    assert!(m.shard.is_none() && m.out.is_some());
    for o in &outs {
        assert!(
            m.aggregate
                .iter()
                .any(|p| glob_match(&p.display().to_string(), o)),
            "{what}: the merge does not read {o}"
        );
    }
    for a in parts {
        assert_eq!(
            grid_of(a),
            grid_of(m),
            "{what}: the parts and the merge share the grid"
        );
    }
    let scenario = m.scenario.as_ref().expect("the merge names the scenario");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(root.join(scenario).exists(), "{what}: {}", scenario.display());
}

fn cluster_md() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cluster.md")).unwrap()
}

/// The `sh -c` script of a Job's first container.
fn job_script(job: &serde_yaml_ng::Value) -> String {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    let cmd: Vec<&str> = c["command"]
        .as_sequence()
        .expect("a command list")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(&cmd[..2], ["sh", "-c"], "{cmd:?}");
    assert_eq!(cmd.len(), 3);
    assert!(c["args"].is_null());
    cmd[2].to_string()
}

#[test]
fn the_kubernetes_indexed_job_runs_every_part_once_and_the_merge_reads_them() {
    let md = cluster_md();
    let docs: Vec<serde_yaml_ng::Value> = blocks(&md, "yaml")
        .iter()
        .map(|b| serde_yaml_ng::from_str(b).unwrap_or_else(|e| panic!("{e}\n{b}")))
        .collect();
    assert_eq!(docs.len(), 2);
    let (sweep, merge) = (&docs[0], &docs[1]);
    for d in &docs {
        assert_eq!(d["apiVersion"].as_str(), Some("batch/v1"));
        assert_eq!(d["kind"].as_str(), Some("Job"));
        assert_eq!(
            d["spec"]["template"]["spec"]["restartPolicy"].as_str(),
            Some("Never")
        );
    }
    assert_eq!(sweep["spec"]["completionMode"].as_str(), Some("Indexed"));
    let n = sweep["spec"]["completions"].as_u64().unwrap() as usize;
    assert!(n > 1);
    let script = job_script(sweep);
    let parts: Vec<SweepArgs> = (0..n)
        .flat_map(|i| {
            let env = BTreeMap::from([("JOB_COMPLETION_INDEX", i.to_string())]);
            migplan_lines(&script, &env)
        })
        .collect();
    let merges = migplan_lines(&job_script(merge), &BTreeMap::new());
    check_parts_and_merge("kubernetes", &parts, &merges, n);
    // The parts and the merge share the results volume at the same place.
    let mount = |d: &serde_yaml_ng::Value| {
        let spec = &d["spec"]["template"]["spec"];
        (
            spec["containers"][0]["volumeMounts"][0]["mountPath"].clone(),
            spec["volumes"][0]["persistentVolumeClaim"]["claimName"].clone(),
        )
    };
    assert_eq!(mount(sweep), mount(merge));
}

#[test]
fn the_slurm_array_runs_every_part_once_and_the_merge_reads_them() {
    let md = cluster_md();
    let scripts = blocks(&md, "sh");
    assert_eq!(scripts.len(), 2);
    let sbatch = |script: &str, opt: &str| -> Option<String> {
        script
            .lines()
            .filter_map(|l| l.strip_prefix("#SBATCH "))
            .find_map(|l| l.strip_prefix(&format!("--{opt}=")).map(str::to_string))
    };
    let array = sbatch(&scripts[0], "array").expect("an array job");
    let (lo, hi) = array.split_once('-').unwrap();
    let (lo, hi): (usize, usize) = (lo.parse().unwrap(), hi.parse().unwrap());
    let cpus = sbatch(&scripts[0], "cpus-per-task").unwrap();
    let parts: Vec<SweepArgs> = (lo..=hi)
        .flat_map(|k| {
            let env = BTreeMap::from([
                ("SLURM_ARRAY_TASK_ID", k.to_string()),
                ("SLURM_CPUS_PER_TASK", cpus.clone()),
            ]);
            migplan_lines(&scripts[0], &env)
        })
        .collect();
    assert_eq!(lo, 1, "parts count from 1");
    for p in &parts {
        assert_eq!(p.jobs.map(|j| j.to_string()), Some(cpus.clone()));
    }
    let merges = migplan_lines(&scripts[1], &BTreeMap::new());
    assert!(sbatch(&scripts[1], "array").is_none());
    check_parts_and_merge("slurm", &parts, &merges, hi);
    // Kubernetes and Slurm run the same sweep.
    let md_yaml = blocks(&md, "yaml");
    let k8s_merge: serde_yaml_ng::Value = serde_yaml_ng::from_str(&md_yaml[1]).unwrap();
    let k8s = migplan_lines(&job_script(&k8s_merge), &BTreeMap::new());
    assert_eq!(grid_of(&k8s[0]), grid_of(&merges[0]));
}

#[test]
fn the_documented_glob_matches_only_part_folders() {
    assert!(glob_match("/r/part-*/runs.csv", "/r/part-10/runs.csv"));
    assert!(!glob_match("/r/part-*/runs.csv", "/r/part-1/x/runs.csv"));
    assert!(!glob_match("/r/part-*/runs.csv", "/r/all/runs.csv"));
}

/// `--policy-set` gives every run of a sweep the same `[policy]` as a scenario file that holds
/// the setting: the rows agree but for the timing columns, and differ from the default's rows.
/// A bad setting is a one-line error naming `--policy-set` before any run starts.
#[test]
fn policy_set_runs_as_the_same_setting_in_the_scenario_file() {
    let grid = |scenario: &str, extra: &[&str]| -> String {
        let mut args = vec![
            "sweep",
            scenario,
            "--policies",
            "origamig",
            "--loads",
            "1.0",
            "--seeds",
            "1",
            "--warmup",
            "2",
            "--hours",
            "4",
            "--jobs",
            "1",
        ];
        args.extend_from_slice(extra);
        let out = migplan().args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        without_timing(&String::from_utf8(out.stdout).unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string("scenarios/paper-32.toml").unwrap();
    assert!(src.contains("[policy]\n"), "paper-32.toml has a [policy] table");
    let file = dir.path().join("paper-32.toml");
    std::fs::write(&file, src.replace("[policy]\n", "[policy]\ndelta = 5.0\n")).unwrap();
    let set = grid("scenarios/paper-32.toml", &["--policy-set", "delta=5"]);
    assert_eq!(set, grid(&file.display().to_string(), &[]));
    assert_ne!(
        set,
        grid("scenarios/paper-32.toml", &[]),
        "δ = 5 changes the runs"
    );
    for (bad, want) in [
        ("delta=-1", "--policy-set"),
        ("delta", "is not KEY=VALUE"),
        ("no_such_setting=1", "--policy-set"),
    ] {
        let args = [
            "sweep",
            "scenarios/paper-32.toml",
            "--policies",
            "origamig",
            "--seeds",
            "1",
            "--policy-set",
            bad,
        ];
        let out = migplan().args(args).output().unwrap();
        assert_one_line_error(&out, &args, &[want]);
    }
}

/// A sweep killed part-way keeps its finished runs in `runs.partial.csv`; `--resume` runs only
/// the others and gives the runs of a sweep that was never killed (but for the timing columns).
/// Without `--resume`, or with other settings, the folder's runs are a one-line error.
#[test]
fn a_killed_sweep_resumes_from_its_finished_runs() {
    let grid: Vec<&str> = vec![
        "sweep",
        "scenarios/paper-32.toml",
        "--policies",
        "ff,tc,origamig",
        "--loads",
        "0.75,1.0",
        "--seeds",
        "1..2",
        "--warmup",
        "2",
        "--jobs",
        "1",
    ];
    let dir = tempfile::tempdir().unwrap();
    let (whole, part) = (dir.path().join("whole"), dir.path().join("part"));
    let (whole_s, part_s) = (whole.display().to_string(), part.display().to_string());
    let with = |extra: &[&str]| -> Vec<String> { grid.iter().chain(extra).map(|s| s.to_string()).collect() };
    let out = migplan()
        .args(with(&["--hours", "4", "--out", &whole_s]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The same sweep, killed once FF's and TC's eight runs are in the journal (OrigaMIG's runs,
    // last in the grid, take far longer than the polling).
    let journal = part.join("runs.partial.csv");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("migplan"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(with(&["--hours", "4", "--out", &part_s]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let rows = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|t| t.lines().count() - 1)
            .unwrap_or(0)
    };
    let start = std::time::Instant::now();
    while rows(&journal) < 8 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it was killed"
        );
        assert!(start.elapsed().as_secs() < 120, "no journal rows after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !part.join("runs.csv").exists(),
        "the sweep finished before it was killed"
    );
    let kept = rows(&journal);
    assert!((8..12).contains(&kept), "{kept} runs in the journal");
    // Mark the finished runs, to see that they are kept rather than run again.
    let text = std::fs::read_to_string(&journal).unwrap();
    let marked: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| match (i, l.rsplit_once(',')) {
            (0, _) | (_, None) => format!("{l}\n"),
            (_, Some((head, _))) => format!("{head},9999.000\n"),
        })
        .collect();
    std::fs::write(&journal, marked).unwrap();
    let err = |args: Vec<String>, want: &[&str]| {
        let out = migplan().args(&args).output().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_one_line_error(&out, &args, want);
    };
    let journal_s = journal.display().to_string();
    err(
        with(&["--hours", "4", "--out", &part_s]),
        &[&journal_s, &format!("{kept} finished runs"), "--resume"],
    );
    err(
        with(&["--hours", "3", "--out", &part_s, "--resume"]),
        &["runs.partial.settings", "other settings"],
    );
    err(with(&["--hours", "4", "--resume"]), &["--resume", "--out"]);
    // A binary that writes a key at its default (as one whose default was another value did)
    // ran with the same settings: the journal resumes. One whose values differ does not, even
    // where its scenario text reads back the same (a default that changed).
    let settings = part.join("runs.partial.settings");
    let text = std::fs::read_to_string(&settings).unwrap();
    let scenario_text = &text[..text.find("\n# --warmup").expect("warm-up line")];
    assert!(
        scenario_text.contains("\n[policy]\n") && !scenario_text.contains("ff_active_first"),
        "{text}"
    );
    let effective = text
        .lines()
        .find(|l| l.starts_with("# effective: "))
        .expect("effective line");
    assert!(effective.contains("ff_active_first: true"), "{effective}");
    let changed = text.replace(
        effective,
        &effective.replace("ff_active_first: true", "ff_active_first: false"),
    );
    std::fs::write(&settings, changed).unwrap();
    err(
        with(&["--hours", "4", "--out", &part_s, "--resume"]),
        &["runs.partial.settings", "other settings"],
    );
    std::fs::write(
        &settings,
        text.replace("\n[policy]\n", "\n[policy]\nff_active_first = true\n"),
    )
    .unwrap();
    let out = migplan()
        .args(with(&["--hours", "4", "--out", &part_s, "--resume"]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got = std::fs::read_to_string(part.join("runs.csv")).unwrap();
    let want = std::fs::read_to_string(whole.join("runs.csv")).unwrap();
    assert_eq!(without_timing(&got), without_timing(&want));
    assert_eq!(
        got.matches(",9999.000\n").count(),
        kept,
        "the journal's runs are kept"
    );
    assert!(!journal.exists() && !part.join("runs.partial.settings").exists());
    for f in ["summary.csv", "fig4.svg"] {
        assert!(part.join(f).exists(), "{f}");
    }
}

/// A scenario name with a comma and a quote is written quoted in the run rows; the parts of its
/// sweep merge (every row read back with its name whole), and a part of another name does not.
#[test]
fn a_quoted_scenario_name_merges_and_other_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = std::fs::read_to_string("scenarios/paper-32.toml").unwrap();
    let named = |name: &str, file: &str| {
        let p = d.join(file);
        std::fs::write(&p, text.replace("name = \"paper-32\"", &format!("name = {name}"))).unwrap();
        p.display().to_string()
    };
    let quoted = named(r#"'rack "A", row 2'"#, "quoted.toml");
    let near = named(r#"'rack "A", row 3'"#, "near.toml");
    let grid = |file: &str, extra: &[&str]| {
        let mut args: Vec<String> = GRID.iter().map(|a| a.to_string()).collect();
        args[1] = file.to_string();
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    let ok = |args: &[String]| {
        let out = migplan().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let p = |s: &str| d.join(s).display().to_string();
    ok(&grid(&quoted, &["--shard", "1/2", "--out", &p("q1")]));
    ok(&grid(&quoted, &["--shard", "2/2", "--out", &p("q2")]));
    ok(&grid(&near, &["--shard", "2/2", "--out", &p("n2")]));
    let rows = std::fs::read_to_string(d.join("q1/runs.csv")).unwrap();
    assert!(
        rows.lines()
            .nth(1)
            .unwrap()
            .starts_with(r#""rack ""A"", row 2",ff,"#),
        "{rows}"
    );
    let merge = grid(
        &quoted,
        &[
            "--aggregate",
            &p("q1/runs.csv"),
            &p("q2/runs.csv"),
            "--out",
            &p("m"),
        ],
    );
    ok(&merge);
    let merged = std::fs::read_to_string(d.join("m/runs.csv")).unwrap();
    assert_eq!(merged.lines().count(), 9, "{merged}");
    for part in ["q1", "q2"] {
        for row in std::fs::read_to_string(d.join(part).join("runs.csv"))
            .unwrap()
            .lines()
        {
            assert!(merged.lines().any(|l| l == row), "{row}");
        }
    }
    let other = grid(&quoted, &["--aggregate", &p("q1/runs.csv"), &p("n2/runs.csv")]);
    let out = migplan().args(&other).output().unwrap();
    let n2 = p("n2/runs.csv");
    let other: Vec<&str> = other.iter().map(String::as_str).collect();
    assert_one_line_error(
        &out,
        &other,
        &[&format!(
            r#"{n2}:2: a run of scenario `rack "A", row 3`, not `rack "A", row 2`"#
        )],
    );
}
