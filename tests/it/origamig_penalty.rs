//! `[policy] delta_per_gb` (§7): a running VM's migration penalty grows with what its move copies,
//! δ_i = δ + round(X × GB_i), GB_i its RAM plus its GIs' memory. Checked against Eq. (5) worked out
//! by hand on a two-host fleet, in both formulations of the BILP, in `objective::evaluate`, in the
//! executor's parking penalty, and in scenario files (bad values: `scenario_errors.rs`).

use crate::common::fleet::{self as common, at, fleet_of};
use migplan::executor;
use migplan::fleet::{Fleet, Placement, VmId};
use migplan::plan::Plan;
use migplan::policy::origamig::bilp::{self, Formulation, SolveControl, SolveStatus};
use migplan::policy::origamig::objective::{evaluate, Weights};
use migplan::policy_settings::OrigamigSettings;
use migplan::scenario;
use std::collections::BTreeMap;

/// Two hosts of one A30-24GB (slices 0-3), 80 cores and 512 GB each. Host 0 runs the large VM 1
/// (2g.12gb at slice 0, 480 GB of RAM: GB_1 = 480 + 12 = 492); host 1 runs the small VMs 2 and 3
/// (1g.6gb at slices 0 and 1, 4 GB of RAM each: GB = 4 + 6 = 10).
fn two_hosts() -> Fleet {
    let mut f = fleet_of(&[("h0", 80, 512, &["a30-24gb"]), ("h1", 80, 512, &["a30-24gb"])]);
    common::put(
        &mut f,
        common::job(1, "a30-24gb", &["2g.12gb"], 8, 480),
        at(0, &[(0, 0)]),
    );
    common::put(
        &mut f,
        common::job(2, "a30-24gb", &["1g.6gb"], 4, 4),
        at(1, &[(0, 0)]),
    );
    common::put(
        &mut f,
        common::job(3, "a30-24gb", &["1g.6gb"], 4, 4),
        at(1, &[(0, 1)]),
    );
    f
}

/// δ = 15 and `delta_per_gb`, alike for jobs and tenants (the default's job surcharge off: every
/// VM of `two_hosts` is a job).
fn settings(delta_per_gb: f64) -> OrigamigSettings {
    OrigamigSettings {
        delta: 15.0,
        delta_per_gb,
        delta_job_extra: 0.0,
        time_limit_s: 60.0,
        // Both formulations are compared (`solve_both`): host contents when asked for.
        consolidation_patterns: false,
        ..Default::default()
    }
}

/// The hosts the VMs end on, per VM.
fn hosts_of(targets: &BTreeMap<VmId, Placement>) -> Vec<(VmId, usize)> {
    targets.iter().map(|(&id, p)| (id, p.host)).collect()
}

/// The optimum of both formulations: the same Eq. (5) value, proven; the host-content model is
/// the one built (it applies to A30 hosts).
fn solve_both(f: &Fleet, s: &OrigamigSettings) -> (f64, Vec<(VmId, usize)>) {
    let mut out = Vec::new();
    for form in [Formulation::Pattern, Formulation::Host] {
        let c = SolveControl {
            formulation: form,
            ..Default::default()
        };
        let o = bilp::solve_with(f, &[0, 1], &[], s, &c).unwrap();
        assert_eq!(o.status, SolveStatus::Optimal, "{form:?}");
        assert_eq!(o.formulation, form);
        out.push((o.objective, hosts_of(&o.targets)));
    }
    assert_eq!(out[0], out[1], "pattern and host contents reach the same optimum");
    out.swap_remove(0)
}

// Eq. (5) with a = 100, b = 50, e = 20, w_p = 1 (three VMs, 300, in every placement below):
// - as they are: two hosts, two GPUs, free starts 3 + 3 (a GPU with slices 0-1 taken has 1g.6gb at
//   2 and 3 and 2g.12gb at 2): 300 - 100 - 40 + 6 = 166; no placement of the three VMs on two
//   GPUs earns more free starts;
// - VM 1 to host 1 at slice 2 (m_1 = omega_1 = 1): one host, one full GPU: 300 - 50 - 20 - 2 δ_1
//   = 230 - 2 δ_1;
// - VMs 2 and 3 to host 0 at slices 2 and 3: 230 - 2 δ_2 - 2 δ_3.
// Every other placement moves a VM and gains nothing over one of these.

#[test]
fn one_delta_for_all_moves_the_large_vm() {
    // δ_i = 15 for every VM: 230 - 30 = 200 against 230 - 60 = 170 and 166.
    let (value, hosts) = solve_both(&two_hosts(), &settings(0.0));
    assert_eq!(value, 200.0);
    assert_eq!(hosts, vec![(1, 1), (2, 1), (3, 1)]);
}

#[test]
fn a_penalty_per_gb_moves_the_small_vms_instead() {
    // X = 0.04: δ_1 = 15 + round(19.68) = 35, δ_2 = δ_3 = 15 + round(0.4) = 15:
    // 230 - 70 = 160 against 230 - 60 = 170 and 166.
    let (value, hosts) = solve_both(&two_hosts(), &settings(0.04));
    assert_eq!(value, 170.0);
    assert_eq!(hosts, vec![(1, 0), (2, 0), (3, 0)]);
}

#[test]
fn a_larger_penalty_per_gb_moves_nothing() {
    // X = 0.2: δ_1 = 15 + round(98.4) = 113, δ_2 = δ_3 = 15 + round(2.0) = 17:
    // 230 - 226 = 4 and 230 - 68 = 162 against 166 as they are.
    let (value, hosts) = solve_both(&two_hosts(), &settings(0.2));
    assert_eq!(value, 166.0);
    assert_eq!(hosts, vec![(1, 0), (2, 1), (3, 1)]);
}

#[test]
fn evaluate_charges_each_vm_its_own_delta() {
    let before = two_hosts();
    let w = Weights::from_settings(&settings(0.04));
    assert_eq!(w.delta_of(before.vm(1).unwrap(), before.catalog), 35.0);
    assert_eq!(w.delta_of(before.vm(2).unwrap(), before.catalog), 15.0);
    assert!(w.integral(), "rounded surcharges keep Eq. (5) integer-valued");
    // VM 1 moves to host 1 at slice 2 (m_1 = omega_1 = 1: 2 × 35) and VMs 2 and 3 swap slices 0
    // and 1 within host 1 (omega only: 15 each).
    let mut after = before.clone();
    after.unplace(2).unwrap();
    after.move_vm(3, at(1, &[(0, 0)])).unwrap();
    after.place(2, at(1, &[(0, 1)])).unwrap();
    after.move_vm(1, at(1, &[(0, 2)])).unwrap();
    let t = evaluate(&before, &after, &[0, 1], &w);
    assert_eq!((t.n_host_moves, t.n_gi_moves), (1, 3));
    assert_eq!(t.migrations, 70.0 + 15.0 + 15.0);
    // One host, one full GPU: 300 - 50 - 20 - 100 + 0.
    assert_eq!(t.total, 130.0);
    // With one δ for all (X = 0): 2 × 15 + 15 + 15 = 60.
    let t0 = evaluate(&before, &after, &[0, 1], &Weights::from_settings(&settings(0.0)));
    assert_eq!(t0.migrations, 60.0);
}

#[test]
fn parking_moves_cost_the_parked_vms_own_delta() {
    // One host of two A100-40GB: a 3g.20gb (VM 1, 48 GB of RAM: GB_1 = 48 + 20 = 68) at slice 0
    // of GPU 0 and 1g.5gb VMs at 4, 5 and 6; the plan swaps them (Fig. 1c): the 3g.20gb must park
    // on GPU 1 first, one park within the host, priced δ_1 = 10 + round(0.5 × 68) = 44.
    let mut f = fleet_of(&[("h0", 80, 640, &["a100-40gb", "a100-40gb"])]);
    common::put(
        &mut f,
        common::job(1, "a100-40gb", &["3g.20gb"], 12, 48),
        at(0, &[(0, 0)]),
    );
    for (id, z) in [(2, 4), (3, 5), (4, 6)] {
        common::put(
            &mut f,
            common::job(id, "a100-40gb", &["1g.5gb"], 4, 16),
            at(0, &[(0, z)]),
        );
    }
    let plan = Plan {
        targets: [
            (1, at(0, &[(0, 4)])),
            (2, at(0, &[(0, 0)])),
            (3, at(0, &[(0, 1)])),
            (4, at(0, &[(0, 2)])),
        ]
        .into_iter()
        .collect(),
        ..Default::default()
    };
    let w = Weights {
        delta_running: 10.0,
        delta_per_gb: 0.5,
        delta_job_extra: 0.0,
        ..Weights::default()
    };
    let s = executor::schedule_priced(&f, &plan, &|vm| w.delta_of(vm, f.catalog)).unwrap();
    assert_eq!((s.parks_within(), s.parks_across()), (1, 0));
    assert_eq!(s.steps[0].vm, 1);
    assert_eq!(s.parking_penalty, 44.0);
    // One δ for all prices the same park at δ.
    assert_eq!(
        executor::schedule_with(&f, &plan, 10.0).unwrap().parking_penalty,
        10.0
    );
}

#[test]
fn scenario_reads_and_checks_delta_per_gb() {
    let base = "[[host]]\nname = \"h0\"\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\"]\n[policy]\n";
    let s = scenario::parse(&format!("{base}delta_per_gb = 0.1\n"), "t.toml").unwrap();
    assert_eq!(s.policy.origamig.delta_per_gb, 0.1);
    assert_eq!(
        scenario::parse(base, "t.toml")
            .unwrap()
            .policy
            .origamig
            .delta_per_gb,
        0.0
    );
    // Saves leave out the default and keep a set value.
    let saved = s.to_toml().unwrap();
    assert!(saved.contains("delta_per_gb = 0.1"), "{saved}");
    let default = scenario::parse(base, "t.toml").unwrap().to_toml().unwrap();
    assert!(!default.contains("delta_per_gb"), "{default}");
    // Bad values: tests/it/scenario_errors.rs.
}

/// Hosts 0 and 1, one A30-24GB each, each running one 1g.6gb VM at slice 0 with 4 cores and 4 GB
/// (GB = 10): VM 4 a tenant on host 0, VM 5 a job on host 1. Alike but for their kind.
fn tenant_and_job() -> Fleet {
    alike(migplan::fleet::VmKind::Tenant)
}

/// [`tenant_and_job`] with VM 4 of kind `kind`.
fn alike(kind: migplan::fleet::VmKind) -> Fleet {
    let mut f = fleet_of(&[("h0", 80, 512, &["a30-24gb"]), ("h1", 80, 512, &["a30-24gb"])]);
    let tenant = migplan::fleet::Vm {
        kind,
        ..common::job(4, "a30-24gb", &["1g.6gb"], 4, 4)
    };
    common::put(&mut f, tenant, at(0, &[(0, 0)]));
    common::put(
        &mut f,
        common::job(5, "a30-24gb", &["1g.6gb"], 4, 4),
        at(1, &[(0, 0)]),
    );
    f
}

// Eq. (5) on `tenant_and_job` (two VMs: 200): as they are, two hosts, two GPUs and 4 + 4 free
// starts (slice 0 taken: 1g.6gb at 1, 2, 3 and 2g.12gb at 2): 200 - 100 - 40 + 8 = 68. One VM
// moved beside the other (slices 0-1 taken: 3 free starts): 200 - 50 - 20 + 3 - 2 δ_i = 133 - 2 δ_i.

#[test]
fn a_surcharge_on_jobs_moves_the_tenant() {
    // δ_job = 15 + 10 = 25: the tenant's move 133 - 30 = 103 against the job's 133 - 50 = 83.
    let s = OrigamigSettings {
        delta_job_extra: 10.0,
        ..settings(0.0)
    };
    let (value, hosts) = solve_both(&tenant_and_job(), &s);
    assert_eq!(value, 103.0);
    assert_eq!(hosts, vec![(4, 1), (5, 1)]);
    let w = Weights::from_settings(&s);
    let f = tenant_and_job();
    assert_eq!(w.delta_of(f.vm(4).unwrap(), f.catalog), 15.0);
    assert_eq!(w.delta_of(f.vm(5).unwrap(), f.catalog), 25.0);
    assert!(!w.uniform_delta() && w.integral());
}

#[test]
fn a_surcharge_on_jobs_leaves_a_job_alone_where_it_does_not_pay() {
    // Two jobs alike (VM 4 made a job): δ_job = 15 + 20 = 35, a move 133 - 70 = 63 < 68.
    let f = alike(migplan::fleet::VmKind::Job);
    let s = OrigamigSettings {
        delta_job_extra: 20.0,
        ..settings(0.0)
    };
    let (value, hosts) = solve_both(&f, &s);
    assert_eq!(value, 68.0);
    assert_eq!(hosts, vec![(4, 0), (5, 1)]);
    // Without it, one moves: 133 - 30 = 103.
    assert_eq!(solve_both(&f, &settings(0.0)).0, 103.0);
    // The default surcharge, 15 (δ_job = 30): a move 133 - 60 = 73 > 68, so one still moves.
    let d = OrigamigSettings {
        time_limit_s: 60.0,
        consolidation_patterns: false,
        ..Default::default()
    };
    assert_eq!(d.delta_job_extra, 15.0);
    assert_eq!(solve_both(&f, &d).0, 73.0);
}

#[test]
fn scenario_reads_and_checks_delta_job_extra() {
    let base = "[[host]]\nname = \"h0\"\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\"]\n[policy]\n";
    let s = scenario::parse(&format!("{base}delta_job_extra = 10\n"), "t.toml").unwrap();
    assert_eq!(s.policy.origamig.delta_job_extra, 10.0);
    assert!(s.to_toml().unwrap().contains("delta_job_extra = 10"));
    let d = scenario::parse(base, "t.toml").unwrap();
    assert_eq!(d.policy.origamig.delta_job_extra, 15.0);
    assert!(!d.to_toml().unwrap().contains("delta_job_extra"));
    let off = scenario::parse(&format!("{base}delta_job_extra = 0\n"), "t.toml").unwrap();
    assert_eq!(off.policy.origamig.delta_job_extra, 0.0);
    assert!(off.to_toml().unwrap().contains("delta_job_extra = 0"));
    let err = scenario::parse(&format!("{base}delta_job_extra = -1\n"), "t.toml").unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        !msg.contains('\n') && msg.contains("t.toml") && msg.contains("delta_job_extra"),
        "{msg}"
    );
}
