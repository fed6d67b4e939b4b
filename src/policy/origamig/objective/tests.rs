//! Unit tests of `policy::origamig::objective`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{GiRequest, GiSlot, Host, Placement, Vm};

fn vm(profiles: &[&str]) -> Vm {
    let gis = GiRequest::named(embedded(), "a100-40gb", profiles).unwrap();
    Vm::job(0, gis, 4, 16)
}

fn fleet(hosts: usize) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    )
}

fn at(host: usize, slots: &[(usize, u8)]) -> Placement {
    Placement {
        host,
        gis: slots.iter().map(|&(gpu, start)| GiSlot { gpu, start }).collect(),
    }
}

#[test]
fn empty_hosts_are_worth_nothing() {
    let f = fleet(2);
    let t = evaluate(&f, &f, &[0, 1], &Weights::default());
    assert_eq!(t, Terms::default());
}

#[test]
fn hand_computed_single_host() {
    // Host 0: GPU 0 holds 3g.20gb at 0 (slices 0-3) and 1g.5gb at 4 (VM 2 has two GIs: the
    // 1g.5gb on GPU 0 and a 7g.40gb on GPU 1).
    // Free starts on GPU 0 (slices 5, 6, 7 free): 1g.5gb at 5, 6 -> 2; 1g.10gb at 6 -> 1;
    // 2g.10gb: 4 taken, none -> 0; 3g/4g/7g none -> 0. CF = 3. GPU 1 full: CF 0.
    // Eq. 5 = 2 * 100 - 50 - 2 * 20 - 0 + 3 = 113.
    let mut f = fleet(1);
    f.add_placed(vm(&["3g.20gb"]), at(0, &[(0, 0)])).unwrap();
    f.add_placed(vm(&["1g.5gb", "7g.40gb"]), at(0, &[(0, 4), (1, 0)]))
        .unwrap();
    let t = evaluate(&f, &f, &[0], &Weights::default());
    assert_eq!(t.n_vms, 2);
    assert_eq!(t.n_hosts, 1);
    assert_eq!(t.n_gpus, 2);
    assert_eq!(t.n_free_starts, 3);
    assert_eq!(t.migrations, 0.0);
    assert_eq!(t.total, 113.0);
}

#[test]
fn migrations_within_and_across_hosts() {
    // Three running VMs on host 0; after: VM a keeps its GI, VM b moves its GI to another start
    // on the same GPU (omega only: 10), VM c moves to host 1 (m and omega: 20); a new VM d is
    // admitted on host 1 (delta 0).
    let mut before = fleet(2);
    let a = before.add_placed(vm(&["2g.10gb"]), at(0, &[(0, 0)])).unwrap();
    let b = before.add_placed(vm(&["1g.5gb"]), at(0, &[(0, 3)])).unwrap();
    let c = before.add_placed(vm(&["4g.20gb"]), at(0, &[(1, 0)])).unwrap();
    let d = before.add_pending(vm(&["1g.10gb"])).unwrap();
    let mut after = before.clone();
    after.move_vm(b, at(0, &[(0, 2)])).unwrap();
    after.move_vm(c, at(1, &[(0, 0)])).unwrap();
    after.place(d, at(1, &[(0, 4)])).unwrap();
    // The paper's delta (10 for every VM), on which the figures below are worked out; the
    // default is 15, and 30 for a job.
    let w = Weights {
        delta_running: 10.0,
        delta_job_extra: 0.0,
        ..Weights::default()
    };
    let t = evaluate(&before, &after, &[0, 1], &w);
    assert_eq!(t.n_vms, 4);
    assert_eq!(t.n_host_moves, 1);
    assert_eq!(t.n_gi_moves, 2);
    assert_eq!(t.migrations, 30.0);
    assert_eq!(t.n_hosts, 2);
    assert_eq!(t.n_gpus, 2);
    // Host 0 GPU 0: slices 0-2 taken (2g.10gb at 0, 1g.5gb at 2). Free 3..7:
    // 1g.5gb 3,4,5,6 -> 4; 1g.10gb 4,6 -> 2; 2g.10gb 4 -> 1; 3g.20gb 4 -> 1; 4g, 7g -> 0: 8.
    // Host 1 GPU 0: 4g.20gb at 0-3, 1g.10gb at 4-5. Free 6, 7: 1g.5gb 6 -> 1; 1g.10gb 6 -> 1: 2.
    assert_eq!(t.n_free_starts, 10);
    assert_eq!(t.total, 400.0 - 100.0 - 40.0 - 30.0 + 10.0);
    // Only host 1: VM c (moved in) and d.
    let t1 = evaluate(&before, &after, &[1], &w);
    assert_eq!(t1.n_vms, 2);
    assert_eq!(t1.migrations, 20.0);
    assert_eq!(t1.total, 200.0 - 50.0 - 20.0 - 20.0 + 2.0);
    let _ = a;
}

#[test]
fn weights_follow_settings() {
    let s = OrigamigSettings {
        weight_admit: 7.0,
        delta: 3.5,
        ..Default::default()
    };
    let w = Weights::from_settings(&s);
    assert_eq!(w.admit, 7.0);
    assert_eq!(w.delta_running, 3.5);
    assert_eq!(w.delta_new, 0.0);
    assert!(!w.integral());
    assert!(Weights::default().integral());
    assert_eq!(Weights::default().host, 50.0);
}

#[test]
fn delta_grows_with_what_a_move_copies() {
    let s = OrigamigSettings {
        delta: 15.0,
        delta_per_gb: 0.1,
        delta_job_extra: 0.0,
        ..Default::default()
    };
    let w = Weights::from_settings(&s);
    assert_eq!(w.delta_per_gb, 0.1);
    // round(0.1 × GB): 2.1 -> 2, 2.5 -> 3 (half away from zero), 30.4 -> 30.
    assert_eq!(w.surcharge(21.0), 2.0);
    assert_eq!(w.surcharge(25.0), 3.0);
    assert_eq!(w.surcharge(304.0), 30.0);
    // A 2g.10gb with 16 GB of RAM copies 16 + 10 = 26 GB: δ_i = 15 + round(2.6) = 18.
    let c = embedded();
    assert_eq!(vm(&["2g.10gb"]).migration_gb(c), 26.0);
    assert_eq!(w.delta_of(&vm(&["2g.10gb"]), c), 18.0);
    // Two GIs: 16 + 20 + 5 = 41 GB: 15 + round(4.1) = 19.
    assert_eq!(w.delta_of(&vm(&["3g.20gb", "1g.5gb"]), c), 19.0);
    // A non-integral rate keeps the weights integral: the surcharges are rounded.
    assert!(w.integral());
    // Off: every running VM pays δ; by default a job pays δ + 15 = 30 and a tenant δ = 15.
    let off = Weights {
        delta_job_extra: 0.0,
        ..Weights::default()
    };
    assert_eq!(off.delta_of(&vm(&["7g.40gb"]), c), 15.0);
    assert_eq!(Weights::default().delta_of(&vm(&["7g.40gb"]), c), 30.0);
    let mut tenant = vm(&["7g.40gb"]);
    tenant.kind = crate::fleet::VmKind::Tenant;
    assert_eq!(Weights::default().delta_of(&tenant, c), 15.0);
}
