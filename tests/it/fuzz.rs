//! Mutation fuzzing of the three inputs users hand to migplan: scenario files (the shipped
//! `scenarios/*.toml`), trace rows (the pod-list CSV) and mig-parted configs (as `export
//! mig-parted` writes them). Each is mutated with byte flips, line deletions and duplications,
//! numbers replaced by extremes (0, -1, 1e308, nan, huge integers) and renamed keys, and read
//! through the library's entry points under `catch_unwind`. Properties:
//! - nothing panics;
//! - a refusal is one line that names the file and a line (`FILE:N:` or `line N`; a mig-parted
//!   config may name the config path instead);
//! - an accepted scenario runs half an hour of `simulate` within a bound on simulated events.
//!
//! The suite runs a few dozen cases per target (`PROPTEST_CASES` sets more); the `#[ignore]`d
//! `fuzz_long_*` tests run thousands: `cargo test --test it -- --ignored fuzz`.

use migplan::catalog::embedded;
use migplan::policy;
use migplan::policy_kind::PolicyKind;
use migplan::scenario::{self, Scenario};
use migplan::sim::Simulator;
use migplan::workload::parse_trace;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::panic::{catch_unwind, AssertUnwindSafe};

const SCENARIOS: [&str; 5] = ["demo", "fig1", "h100-four-tenants", "paper-32", "paper-128"];

const EXTREMES: [&str; 12] = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "1e-9",
    "18446744073709551615",
    "4294967296",
    "2147483647",
    "99999999999999999999999",
    "0.5",
];

/// Simulated events an accepted scenario may take for half an hour of `simulate`.
const EVENT_BOUND: u64 = 200_000;

/// Cases per target in the suite: `PROPTEST_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    DeleteLine(usize),
    DuplicateLine(usize),
    Number(usize, usize),
    RenameKey(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(p, m)| Mutation::FlipByte(p, m)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(n, v)| Mutation::Number(n, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(n, k)| Mutation::RenameKey(n, k)),
    ]
}

/// The byte ranges of the numbers in `text`: runs of digits, `.`, `e` and signs that start with
/// a digit or a sign followed by a digit.
fn numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let starts = text[i].is_ascii_digit()
            || (text[i] == b'-' && text.get(i + 1).is_some_and(|c| c.is_ascii_digit()));
        let glued = i > 0 && (text[i - 1].is_ascii_alphanumeric() || text[i - 1] == b'_');
        if starts && !glued {
            let mut j = i + 1;
            while j < text.len() && (text[j].is_ascii_digit() || b".eE+-_".contains(&text[j])) {
                j += 1;
            }
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The byte ranges of the keys (`key =` at the start of a line, or a YAML `key:`).
fn keys(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split(|&b| b == b'\n') {
        let indent = line.iter().take_while(|b| **b == b' ' || **b == b'-').count();
        let len = line[indent..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-' || **b == b'.')
            .count();
        let after = line[indent + len..].iter().find(|b| **b != b' ');
        if len > 0 && matches!(after, Some(b'=') | Some(b':')) {
            out.push((start + indent, start + indent + len));
        }
        start += line.len() + 1;
    }
    out
}

fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    let mut t = text.to_vec();
    let lines = |t: &[u8]| t.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect::<Vec<_>>();
    match *m {
        Mutation::FlipByte(p, mask) if !t.is_empty() => {
            let n = t.len();
            t[p % n] ^= mask;
        }
        Mutation::DeleteLine(l) => {
            let mut ls = lines(&t);
            let n = ls.len();
            ls.remove(l % n);
            t = ls.join(&b'\n');
        }
        Mutation::DuplicateLine(l) => {
            let mut ls = lines(&t);
            let n = ls.len();
            let line = ls[l % n].clone();
            ls.insert(l % n, line);
            t = ls.join(&b'\n');
        }
        Mutation::Number(n, v) => {
            let ns = numbers(&t);
            if !ns.is_empty() {
                let (a, b) = ns[n % ns.len()];
                t.splice(a..b, EXTREMES[v].bytes());
            }
        }
        Mutation::RenameKey(n, k) => {
            let ks = keys(&t);
            if !ks.is_empty() {
                let (a, b) = ks[n % ks.len()];
                // Either another key of the same file (a duplicate or a misplaced key) or a typo.
                let (c, d) = ks[k % ks.len()];
                let new = if k % 3 == 0 {
                    [&t[a..b], b"x"].concat()
                } else {
                    t[c..d].to_vec()
                };
                t.splice(a..b, new);
            }
        }
        Mutation::FlipByte(..) => {}
    }
    t
}

/// Whether `err` is one line naming `file` and a line of it.
fn names_a_line(err: &str, file: &str) -> bool {
    let one_line = !err.trim_end().contains('\n') && !err.trim().is_empty();
    let after_file = err.split_once(&format!("{file}:")).map(|(_, rest)| rest);
    let colon_line = after_file.is_some_and(|r| r.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let word_line = err
        .split("line ")
        .skip(1)
        .any(|r| r.chars().next().is_some_and(|c| c.is_ascii_digit()));
    one_line && err.contains(file) && (colon_line || word_line)
}

/// A scenario `load` accepted whose run the known findings below make hang or panic: those are
/// fixed with the bounds of the settings, and the cases wait for them rather than hang the suite.
fn known_finding(s: &Scenario) -> Option<&'static str> {
    let w = &s.workload;
    let weights = w.profile_mix.values().flat_map(|m| m.values()).copied();
    if w.large_profile_weight > 1e100 || weights.clone().any(|x| x > 1e100) {
        return Some("profile weights of 1e308 overflow the sampler");
    }
    if s.now_s.abs() > 1e11 {
        return Some("now_s beyond the calendar overflows the date");
    }
    if w.load > 1e3 {
        return Some("a load of 1e308 runs forever");
    }
    if w.job_mean_h < 1e-3 || w.tenant_mean_h < 1e-3 {
        return Some("tiny lifetimes loop");
    }
    let odd_vm = |v: &migplan::fleet::Vm| {
        v.lifetime.is_some_and(|l| l.is_nan() || l < 3.6) || !v.arrival.is_finite() || v.arrival.abs() > 1e11
    };
    if s.fleet.vms().any(odd_vm) {
        return Some("negative, NaN or tiny VM lifetimes and NaN arrivals are accepted");
    }
    if s.policy.origamig.threads > 64 {
        return Some("[policy] threads has no bound");
    }
    None
}

/// Runs the mutated scenario `bytes`: load it, and when accepted, simulate half an hour.
fn check_scenario(name: &str, bytes: &[u8]) -> Result<&'static str, TestCaseError> {
    // A group of billions of hosts makes `load` itself grow without bound (a finding fixed by
    // the bound on host counts): such a text is not loaded.
    let text = String::from_utf8_lossy(bytes);
    let huge_count = text.lines().any(|l| {
        l.trim_start()
            .strip_prefix("count")
            .and_then(|r| r.trim_start().strip_prefix('='))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .is_some_and(|v| v > 1e5)
    });
    if huge_count {
        return Ok("skipped: huge host count");
    }
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let path = dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let file = path.display().to_string();
    let loaded = catch_unwind(AssertUnwindSafe(|| scenario::load(&path)))
        .map_err(|_| TestCaseError::fail(format!("load panicked on:\n{text}")))?;
    let mut s = match loaded {
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(names_a_line(&msg, &file), "no line in `{msg}`");
            return Ok("refused");
        }
        Ok(s) => s,
    };
    if let Some(why) = known_finding(&s) {
        let _ = why;
        return Ok("skipped: known finding");
    }
    s.workload.warmup_h = 0.0;
    s.workload.measure_h = 0.5;
    // OrigaMIG and OPT solve on their steps; the fuzz runs their arrival side through FF.
    let kind = match s.policy.arrival {
        PolicyKind::Origamig | PolicyKind::Opt => PolicyKind::Ff,
        k => k,
    };
    let run = catch_unwind(AssertUnwindSafe(|| -> anyhow::Result<(bool, u64)> {
        let p = policy::build(kind, &s.policy)?;
        let mut sim = Simulator::new(&s, p)?;
        let end = sim.time() + 1800.0;
        let done = sim.step_until_while(end, &mut |sim| sim.events_total() <= EVENT_BOUND)?;
        Ok((done, sim.events_total()))
    }))
    .map_err(|_| TestCaseError::fail(format!("simulate panicked on:\n{text}")))?;
    match run {
        Ok((done, events)) => {
            prop_assert!(done && events <= EVENT_BOUND, "{events} events in half an hour");
            Ok("simulated")
        }
        // A setting `load` accepts but the simulator refuses: one line, no panic.
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.contains('\n') && !msg.is_empty(), "`{msg}`");
            Ok("refused by simulate")
        }
    }
}

fn run_scenarios(n: u32) {
    let texts: Vec<(&str, Vec<u8>)> = SCENARIOS
        .iter()
        .map(|s| {
            let p = format!("{}/scenarios/{s}.toml", env!("CARGO_MANIFEST_DIR"));
            (*s, std::fs::read(p).unwrap())
        })
        .collect();
    let mut runner = TestRunner::new(Config::with_cases(n));
    let strategy = (0..texts.len(), prop::collection::vec(mutation(), 1..4));
    let tally = std::cell::RefCell::new(std::collections::BTreeMap::<&str, u32>::new());
    runner
        .run(&strategy, |(i, ms)| {
            let (name, text) = &texts[i];
            let bytes = ms.iter().fold(text.clone(), |t, m| apply(&t, m));
            let outcome = check_scenario(name, &bytes)?;
            *tally.borrow_mut().entry(outcome).or_default() += 1;
            Ok(())
        })
        .unwrap();
    eprintln!("scenario fuzz, {n} cases: {:?}", tally.borrow());
}

const TRACE_HEADER: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";

const TRACE_ROWS: &str = "p0,1000,1024,1,500,,LS,Running,0,3600,0
p1,8000,16384,1,1000,A100-SXM4-80GB,LS,Succeeded,120,7320,130
p2,500,512,0,0,,BE,Running,300,900,310
p3,16000,65536,2,1000,,Guaranteed,Running,600,,610
p4,2000,4096,1,250,V100M16,LS,Failed,900,4500,905
";

/// A mutated trace: parsed under `catch_unwind`; a refusal names the file and a line.
fn check_trace(bytes: &[u8]) -> Result<&'static str, TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    let model = embedded().model_id("a100-40gb").unwrap();
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        parse_trace(&text, "pods.csv", embedded(), model, 34.0)
    }))
    .map_err(|_| TestCaseError::fail(format!("parse_trace panicked on:\n{text}")))?;
    match parsed {
        Err(e) => {
            let msg = e.to_string();
            // The one refusal about the whole file rather than a line of it.
            let whole_file = msg.starts_with("pods.csv: no pod with one or two GPUs") && !msg.contains('\n');
            prop_assert!(whole_file || names_a_line(&msg, "pods.csv"), "no line in `{msg}`");
            Ok("refused")
        }
        Ok(_) => Ok("accepted"),
    }
}

fn run_traces(n: u32) {
    let text = format!("{TRACE_HEADER}\n{TRACE_ROWS}").into_bytes();
    let mut runner = TestRunner::new(Config::with_cases(n));
    let tally = std::cell::RefCell::new(std::collections::BTreeMap::<&str, u32>::new());
    runner
        .run(&prop::collection::vec(mutation(), 1..4), |ms| {
            let bytes = ms.iter().fold(text.clone(), |t, m| apply(&t, m));
            let outcome = check_trace(&bytes)?;
            *tally.borrow_mut().entry(outcome).or_default() += 1;
            Ok(())
        })
        .unwrap();
    eprintln!("trace fuzz, {n} cases: {:?}", tally.borrow());
}

/// A mutated mig-parted config of the demo fleet: read back under `catch_unwind`; a refusal is
/// one line naming the file (and the line, or the config path, of the problem).
fn check_mig_parted(fleet: &migplan::fleet::Fleet, bytes: &[u8]) -> Result<&'static str, TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    let read = catch_unwind(AssertUnwindSafe(|| {
        migplan::ops::export::import(fleet, &text, "parted.yaml")
    }))
    .map_err(|_| TestCaseError::fail(format!("import panicked on:\n{text}")))?;
    match read {
        Err(e) => {
            let msg = e.to_string();
            let one_line = !msg.trim_end().contains('\n');
            prop_assert!(one_line && msg.starts_with("parted.yaml"), "`{msg}`");
            Ok("refused")
        }
        Ok(_) => Ok("accepted"),
    }
}

fn run_mig_parted(n: u32) {
    let s = scenario::load(&std::path::PathBuf::from(format!(
        "{}/scenarios/demo.toml",
        env!("CARGO_MANIFEST_DIR")
    )))
    .unwrap();
    let text = migplan::ops::export::export(&s.fleet, &s.name, &[]).into_bytes();
    let mut runner = TestRunner::new(Config::with_cases(n));
    let tally = std::cell::RefCell::new(std::collections::BTreeMap::<&str, u32>::new());
    runner
        .run(&prop::collection::vec(mutation(), 1..4), |ms| {
            let bytes = ms.iter().fold(text.clone(), |t, m| apply(&t, m));
            let outcome = check_mig_parted(&s.fleet, &bytes)?;
            *tally.borrow_mut().entry(outcome).or_default() += 1;
            Ok(())
        })
        .unwrap();
    eprintln!("mig-parted fuzz, {n} cases: {:?}", tally.borrow());
}

#[test]
fn fuzz_scenarios() {
    run_scenarios(cases(300));
}

#[test]
fn fuzz_traces() {
    run_traces(cases(1000));
}

#[test]
fn fuzz_mig_parted() {
    run_mig_parted(cases(1000));
}

#[test]
#[ignore = "long: cargo test --test it -- --ignored fuzz"]
fn fuzz_long_scenarios() {
    run_scenarios(cases(20_000));
}

#[test]
#[ignore = "long: cargo test --test it -- --ignored fuzz"]
fn fuzz_long_traces() {
    run_traces(cases(50_000));
}

#[test]
#[ignore = "long: cargo test --test it -- --ignored fuzz"]
fn fuzz_long_mig_parted() {
    run_mig_parted(cases(50_000));
}

#[test]
fn mutations_change_what_they_say() {
    let text = b"a = 1\nb_c = -2.5\n[x]\nd = [3, 4]\n";
    assert_eq!(numbers(text).len(), 4);
    assert_eq!(keys(text).len(), 3);
    assert_eq!(
        apply(text, &Mutation::Number(1, 2)),
        b"a = 1\nb_c = 1e308\n[x]\nd = [3, 4]\n"
    );
    assert_eq!(
        apply(text, &Mutation::DeleteLine(0)),
        b"b_c = -2.5\n[x]\nd = [3, 4]\n"
    );
    assert_eq!(
        apply(text, &Mutation::RenameKey(0, 0)),
        b"ax = 1\nb_c = -2.5\n[x]\nd = [3, 4]\n"
    );
    assert!(names_a_line("f.toml:3:1: field `a`: bad", "f.toml"));
    assert!(!names_a_line("f.toml: bad", "f.toml"));
}
