//! `policy.origamig.host_columns_budget`: the multiplier of the host-content enumeration's limits. It is
//! read from `[policy]` and bounded (docs/limits.md); a neighborhood that falls back to the
//! pattern formulation at the default budget stays in host contents with a larger one, and both
//! formulations reach the same Eq. (5) value.

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::fleet::paper_32_with_policy;
use migplan::catalog::embedded;
use migplan::fleet::{Fleet, GiRequest, Host, HostId, Vm};
use migplan::limits::MAX_HOST_COLUMNS_BUDGET;
use migplan::policy::origamig::bilp::{self, Formulation, SolveControl, SolveStatus};
use migplan::policy::origamig::objective::{evaluate, Weights};
use migplan::policy_settings::OrigamigSettings;
use migplan::scenario;

/// `scenarios/paper-32.toml` with `host_columns_budget = v` written in its `[policy]` table.
fn paper32_with(v: &str) -> String {
    paper_32_with_policy(&format!("host_columns_budget = {v}"))
}

#[test]
fn the_budget_is_read_and_bounded() {
    // The line of the key in the written file: the one after `[policy]`.
    let line = paper32_with("1")
        .lines()
        .position(|l| l.starts_with("host_columns_budget"))
        .unwrap()
        + 1;
    let at = format!("bad.toml:{line}:");
    for (value, want) in [
        (
            "0",
            vec!["field `policy.host_columns_budget`", "must be at least 1, not 0"],
        ),
        (
            "33",
            vec![
                "field `policy.host_columns_budget`",
                "must be at most 32 (docs/limits.md), not 33",
            ],
        ),
        ("-1", vec!["host_columns_budget"]),
        ("2.5", vec!["host_columns_budget"]),
    ] {
        let (_dir, path) = temp_file("bad.toml", &paper32_with(value));
        let p = path.to_str().unwrap();
        let args = ["check", p];
        let out = migplan().args(args).output().unwrap();
        let mut want = want.clone();
        want.push(&at);
        assert_one_line_error(&out, &args, &want);
    }
    let (_dir, path) = temp_file("good.toml", &paper32_with("32"));
    migplan()
        .args(["check", path.to_str().unwrap()])
        .assert()
        .success();
    let s = scenario::load(&path).unwrap();
    assert_eq!(s.policy.origamig.host_columns_budget, 32);
    let (_dir, path) = temp_file(
        "default.toml",
        &paper32_with("1").replace("host_columns_budget = 1\n", ""),
    );
    assert_eq!(
        scenario::load(&path).unwrap().policy.origamig.host_columns_budget,
        1
    );
}

/// Two hosts of two A100-40GB GPUs with `vms` VMs of 1g.5gb GIs, one-GI and two-GI in turn, placed
/// by first fit. With 7 VMs (10 GIs) the ways to cut an arrangement's GIs into VMs run past the
/// default budget but not past the largest one; with 8 or more they run past both.
fn two_a100_hosts(vms: usize) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let g1 = c.model(a100).profile("1g.5gb").unwrap();
    let mut f = Fleet::new(
        c,
        (0..2)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    );
    for n in 0..vms {
        let gis: Vec<GiRequest> = (0..1 + n % 2)
            .map(|_| GiRequest {
                model: a100,
                profile: g1,
            })
            .collect();
        let n = gis.len() as u32;
        let v = Vm::job(0, gis, 4 * n, 16 * n);
        let at = f.ff_placement(&v).unwrap();
        f.add_placed(v, at).unwrap();
    }
    f
}

#[test]
fn a_larger_budget_keeps_a_fallen_back_call_in_host_contents_with_the_same_value() {
    let f = two_a100_hosts(7);
    let hosts: Vec<HostId> = (0..2).collect();
    let control = SolveControl {
        formulation: Formulation::Host,
        ..Default::default()
    };
    // Host contents for a call without pending VMs, as the budget is about.
    let at = |budget: u32| OrigamigSettings {
        time_limit_s: 60.0,
        host_columns_budget: budget,
        consolidation_patterns: false,
        ..Default::default()
    };
    let small = bilp::solve_with(&f, &hosts, &[], &at(1), &control).unwrap();
    assert_eq!(
        small.formulation,
        Formulation::Pattern,
        "the default budget falls back"
    );
    // The smallest budget among 2, 4, ..., the largest allowed that holds the enumeration.
    let large = [2, 4, 8, 16, MAX_HOST_COLUMNS_BUDGET]
        .into_iter()
        .map(|b| bilp::solve_with(&f, &hosts, &[], &at(b), &control).unwrap())
        .find(|out| out.formulation == Formulation::Host)
        .expect("a larger budget stays in host contents");
    for out in [&small, &large] {
        assert_eq!(out.status, SolveStatus::Optimal);
        // The returned placement, applied, is valid and worth the reported Eq. (5).
        let mut after = f.clone();
        for (&id, p) in &out.targets {
            after.unplace(id).unwrap();
            after.place(id, p.clone()).unwrap();
        }
        after.check_invariants().unwrap();
        let w = Weights::from_settings(&at(1));
        assert_eq!(evaluate(&f, &after, &hosts, &w).total, out.objective);
    }
    assert_eq!(small.objective, large.objective);
}

/// With `host_contents_by_gpu` (solver-lab), a neighborhood past every budget of the cut search
/// (two hosts of two A100s, 12 VMs of one and two 1g.5gb GIs) stays in host contents, enumerated
/// GPU by GPU, and reaches the value of the pattern model it falls back to by default.
#[cfg(feature = "solver-lab")]
#[test]
fn host_contents_by_gpu_keep_a_fallen_back_call_with_the_same_value() {
    let f = two_a100_hosts(12);
    let hosts: Vec<HostId> = (0..2).collect();
    let settings = OrigamigSettings {
        time_limit_s: 60.0,
        ..Default::default()
    };
    let control = |by_gpu: bool| SolveControl {
        formulation: Formulation::Host,
        host_contents_by_gpu: by_gpu,
        ..Default::default()
    };
    let pattern = bilp::solve_with(&f, &hosts, &[], &settings, &control(false)).unwrap();
    assert_eq!(pattern.formulation, Formulation::Pattern);
    let by_gpu = bilp::solve_with(&f, &hosts, &[], &settings, &control(true)).unwrap();
    assert_eq!(by_gpu.formulation, Formulation::Host);
    for out in [&pattern, &by_gpu] {
        assert_eq!(out.status, SolveStatus::Optimal);
        let mut after = f.clone();
        for (&id, p) in &out.targets {
            after.unplace(id).unwrap();
            after.place(id, p.clone()).unwrap();
        }
        after.check_invariants().unwrap();
        let w = Weights::from_settings(&settings);
        assert_eq!(evaluate(&f, &after, &hosts, &w).total, out.objective);
    }
    assert_eq!(pattern.objective, by_gpu.objective);
}
