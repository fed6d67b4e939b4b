//! Unit tests of `fleet`.

use super::*;
use crate::catalog::embedded;

fn fleet() -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let a30 = c.model_id("a30-24gb").unwrap();
    Fleet::new(
        c,
        vec![
            Host::new("h0", 80, 512, vec![a100, a100], 0),
            Host::new("h1", 80, 512, vec![a30, a30], 0),
        ],
    )
}

fn vm(model: &str, profiles: &[&str]) -> Vm {
    Vm::job(0, GiRequest::named(embedded(), model, profiles).unwrap(), 4, 16)
}

#[test]
fn ff_places_and_remove_restores() {
    let mut f = fleet();
    let before = f.clone();
    let v = vm("a100-40gb", &["3g.20gb", "1g.5gb"]);
    let p = f.ff_placement(&v).unwrap();
    assert_eq!(p.host, 0);
    let id = f.add_placed(v, p).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.active_hosts(), 1);
    f.remove(id).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.hosts, before.hosts);
}

#[test]
fn removing_an_unknown_vm_is_refused_and_changes_nothing() {
    let mut f = fleet();
    let pending = f.add_pending(vm("a100-40gb", &["1g.5gb"])).unwrap();
    let placed = f
        .add_placed(
            vm("a100-40gb", &["3g.20gb"]),
            Placement {
                host: 0,
                gis: vec![GiSlot { gpu: 0, start: 4 }],
            },
        )
        .unwrap();
    let before = f.clone();
    let ghost = placed + pending + 100;
    assert_eq!(f.remove(ghost), Err(FleetError::UnknownVm(ghost)));
    assert_eq!(f, before);
    assert_eq!(f.remove(pending).unwrap().id, pending);
    assert_eq!(f.remove(placed).unwrap().id, placed);
    assert!(f.pending().is_empty() && f.vms().next().is_none());
    f.check_invariants().unwrap();
}

#[test]
fn refused_operations_change_nothing() {
    let mut f = fleet();
    let a = f
        .add_placed(
            vm("a100-40gb", &["4g.20gb"]),
            Placement {
                host: 0,
                gis: vec![GiSlot { gpu: 0, start: 0 }],
            },
        )
        .unwrap();
    let snapshot = f.clone();
    // Overlap.
    let e = f.add_placed(
        vm("a100-40gb", &["2g.10gb"]),
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 0, start: 2 }],
        },
    );
    assert!(
        matches!(e, Err(FleetError::SliceTaken { by: Some(x), .. }) if x == a),
        "{e:?}"
    );
    // Start not permitted.
    let e = f.add_placed(
        vm("a100-40gb", &["2g.10gb"]),
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 1, start: 6 }],
        },
    );
    assert!(matches!(e, Err(FleetError::StartNotPermitted { .. })), "{e:?}");
    // Class mismatch.
    let e = f.add_placed(
        vm("a100-40gb", &["1g.5gb"]),
        Placement {
            host: 1,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    assert!(matches!(e, Err(FleetError::ClassMismatch { .. })), "{e:?}");
    // Cores.
    let mut big = vm("a30-24gb", &["1g.6gb"]);
    big.cores = 81;
    let e = f.add_placed(
        big,
        Placement {
            host: 1,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    assert!(matches!(e, Err(FleetError::Cores { .. })), "{e:?}");
    assert_eq!(f, snapshot);
}

#[test]
fn move_within_gpu_may_reuse_own_slices() {
    let mut f = fleet();
    let id = f
        .add_placed(
            vm("a100-40gb", &["3g.20gb"]),
            Placement {
                host: 0,
                gis: vec![GiSlot { gpu: 0, start: 0 }],
            },
        )
        .unwrap();
    f.move_vm(
        id,
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 0, start: 4 }],
        },
    )
    .unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.hosts[0].gpus[0].occ.mask, 0xF0);
    f.move_vm(
        id,
        Placement {
            host: 1,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    )
    .unwrap_err();
    f.check_invariants().unwrap();
}

#[test]
fn power_of_hand_computed_host() {
    let mut f = fleet();
    assert_eq!(f.power_w(), 0.0);
    // One 3g.20gb VM with 12 cores on h0: load 12/80 = 0.15 -> 198 + 0.5 * 28 = 212 W;
    // GPU 0: 50 + 200 * 3/7; GPU 1 idle 50 W.
    let mut v = vm("a100-40gb", &["3g.20gb"]);
    v.cores = 12;
    f.add_placed(
        v,
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    )
    .unwrap();
    let want = 212.0 + 50.0 + 200.0 * 3.0 / 7.0 + 50.0;
    assert!((f.power_w() - want).abs() < 1e-9, "{}", f.power_w());
}

#[test]
fn placements_that_swap_two_vms_are_applied() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(c, vec![Host::new("h0".to_string(), 80, 512, vec![a100], 0)]);
    let at = |start| Placement {
        host: 0,
        gis: vec![GiSlot { gpu: 0, start }],
    };
    let vm = || Vm::job(0, GiRequest::named(c, "a100-40gb", &["3g.20gb"]).unwrap(), 4, 16);
    let a = f.add_placed(vm(), at(0)).unwrap();
    let b = f.add_placed(vm(), at(4)).unwrap();
    let targets: BTreeMap<VmId, Placement> = [(a, at(4)), (b, at(0))].into_iter().collect();
    let after = f.with_placements(&targets).unwrap();
    after.check_invariants().unwrap();
    assert_eq!(after.vm(a).unwrap().placement, Some(at(4)));
    assert_eq!(after.vm(b).unwrap().placement, Some(at(0)));
    // The original is untouched, and a target the fleet refuses names its VM.
    assert_eq!(f.vm(a).unwrap().placement, Some(at(0)));
    let clash: BTreeMap<VmId, Placement> = [(a, at(4))].into_iter().collect();
    assert_eq!(f.with_placements(&clash).unwrap_err().0, a);
}
