//! Property tests of the fleet state: long random sequences of operations on a small mixed
//! A100/A30 fleet. After every operation the invariants hold, and a refused operation leaves the
//! fleet exactly as it was.

use crate::common::fleet::{at, fleet_of};
use migplan::catalog::{embedded, ModelId};
use migplan::fleet::{Fleet, GiRequest, Vm};
use proptest::prelude::*;

/// Four hosts: two A100s, an A30 beside an A100, two A30s, and one without GPUs.
fn fleet() -> Fleet {
    fleet_of(&[
        ("h0", 40, 256, &["a100-40gb", "a100-40gb"]),
        ("h1", 24, 96, &["a30-24gb", "a100-40gb"]),
        ("h2", 16, 64, &["a30-24gb", "a30-24gb"]),
        ("h3", 8, 32, &[]),
    ])
}

#[derive(Debug, Clone)]
enum Op {
    /// A new pending VM: model (0 = A100, 1 = A30), profile picks (taken modulo the model's
    /// profile count), cores, RAM, and an id hint (0 = fresh, else maybe a duplicate).
    AddPending {
        a30: bool,
        picks: Vec<usize>,
        cores: u32,
        ram: u32,
        dup: u8,
    },
    /// Place the pick-th pending VM by FF.
    PlaceFf {
        pick: usize,
    },
    /// Place the pick-th pending VM at a random explicit placement (often invalid).
    PlaceExplicit {
        pick: usize,
        host: usize,
        slots: Vec<(usize, u8)>,
        extra: bool,
    },
    /// Add a VM placed at once at a random placement.
    AddPlaced {
        a30: bool,
        picks: Vec<usize>,
        cores: u32,
        host: usize,
        slots: Vec<(usize, u8)>,
    },
    /// Move the pick-th placed VM to a random placement.
    Move {
        pick: usize,
        host: usize,
        slots: Vec<(usize, u8)>,
    },
    /// Move the pick-th placed VM by the default GI placement onto a host.
    MoveDefault {
        pick: usize,
        host: usize,
    },
    Remove {
        pick: usize,
        ghost: bool,
    },
    Unplace {
        pick: usize,
        ghost: bool,
    },
    Reject {
        pick: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let slots = prop::collection::vec((0usize..3, 0u8..9), 0..3);
    prop_oneof![
        4 => (any::<bool>(), prop::collection::vec(0usize..8, 0..3), 1u32..20, 1u32..80, 0u8..8)
            .prop_map(|(a30, picks, cores, ram, dup)| Op::AddPending { a30, picks, cores, ram, dup }),
        4 => (0usize..64).prop_map(|pick| Op::PlaceFf { pick }),
        3 => (0usize..64, 0usize..5, slots.clone(), any::<bool>())
            .prop_map(|(pick, host, slots, extra)| Op::PlaceExplicit { pick, host, slots, extra }),
        2 => (any::<bool>(), prop::collection::vec(0usize..8, 0..3), 1u32..20, 0usize..4, slots.clone())
            .prop_map(|(a30, picks, cores, host, slots)| Op::AddPlaced { a30, picks, cores, host, slots }),
        3 => (0usize..64, 0usize..4, slots).prop_map(|(pick, host, slots)| Op::Move { pick, host, slots }),
        2 => (0usize..64, 0usize..4).prop_map(|(pick, host)| Op::MoveDefault { pick, host }),
        2 => (0usize..64, prop::bool::weighted(0.1)).prop_map(|(pick, ghost)| Op::Remove { pick, ghost }),
        2 => (0usize..64, prop::bool::weighted(0.1)).prop_map(|(pick, ghost)| Op::Unplace { pick, ghost }),
        1 => (0usize..64).prop_map(|pick| Op::Reject { pick }),
    ]
}

fn make_vm(model: ModelId, picks: &[usize], cores: u32, ram: u32) -> Vm {
    let m = embedded().model(model);
    let gis = picks
        .iter()
        .map(|&i| GiRequest {
            model,
            profile: i % m.profiles.len(),
        })
        .collect();
    Vm::job(0, gis, cores, ram)
}

fn model(a30: bool) -> ModelId {
    embedded()
        .model_id(if a30 { "a30-24gb" } else { "a100-40gb" })
        .unwrap()
}

fn placed(f: &Fleet) -> Vec<u64> {
    f.vms().filter(|v| v.placement.is_some()).map(|v| v.id).collect()
}

/// Applies one operation; returns whether the fleet accepted it.
fn apply(f: &mut Fleet, op: &Op) -> bool {
    match op {
        Op::AddPending {
            a30,
            picks,
            cores,
            ram,
            dup,
        } => {
            let mut vm = make_vm(model(*a30), picks, *cores, *ram);
            if *dup > 5 {
                // Reuse an existing id: must be refused as a duplicate.
                if let Some(v) = f.vms().next() {
                    vm.id = v.id;
                }
            }
            f.add_pending(vm).is_ok()
        }
        Op::PlaceFf { pick } => {
            let Some(&id) = f.pending().get(pick % f.pending().len().max(1)) else {
                return false;
            };
            let vm = f.vm(id).unwrap().clone();
            match f.ff_placement(&vm) {
                Some(p) => {
                    f.place(id, p).expect("FF's placement is valid");
                    true
                }
                None => false,
            }
        }
        Op::PlaceExplicit {
            pick,
            host,
            slots,
            extra,
        } => {
            let Some(&id) = f.pending().get(pick % f.pending().len().max(1)) else {
                return false;
            };
            let mut slots = slots.clone();
            let want = f.vm(id).unwrap().gis.len();
            if !extra {
                slots.resize(want, (0, 0));
            }
            f.place(id, at(*host, &slots)).is_ok()
        }
        Op::AddPlaced {
            a30,
            picks,
            cores,
            host,
            slots,
        } => {
            let mut slots = slots.clone();
            slots.resize(picks.len(), (1, 4));
            let vm = make_vm(model(*a30), picks, *cores, 8);
            f.add_placed(vm, at(*host, &slots)).is_ok()
        }
        Op::Move { pick, host, slots } => {
            let ids = placed(f);
            let Some(&id) = ids.get(pick % ids.len().max(1)) else {
                return false;
            };
            let mut slots = slots.clone();
            slots.resize(f.vm(id).unwrap().gis.len(), (0, 0));
            f.move_vm(id, at(*host, &slots)).is_ok()
        }
        Op::MoveDefault { pick, host } => {
            let ids = placed(f);
            let Some(&id) = ids.get(pick % ids.len().max(1)) else {
                return false;
            };
            let vm = f.vm(id).unwrap().clone();
            if vm.placement.as_ref().unwrap().host == *host {
                return false;
            }
            match f.host_placement_default(&vm, *host) {
                Some(p) => {
                    f.move_vm(id, p)
                        .expect("a default placement on another host is valid");
                    true
                }
                None => false,
            }
        }
        Op::Remove { pick, ghost } => {
            let ids: Vec<u64> = f.vms().map(|v| v.id).collect();
            let id = if *ghost {
                1_000_000
            } else {
                ids.get(pick % ids.len().max(1)).copied().unwrap_or(1_000_000)
            };
            let ok = f.remove(id).is_ok();
            if ok {
                assert!(f.vm(id).is_none() && !f.pending().contains(&id));
            }
            ok
        }
        Op::Unplace { pick, ghost } => {
            let ids: Vec<u64> = f.vms().map(|v| v.id).collect();
            let id = if *ghost {
                1_000_000
            } else {
                ids.get(pick % ids.len().max(1)).copied().unwrap_or(1_000_000)
            };
            let ok = f.unplace(id).is_ok();
            if ok {
                assert!(f.vm(id).unwrap().placement.is_none() && f.pending().contains(&id));
            }
            ok
        }
        Op::Reject { pick } => {
            let ids: Vec<u64> = f.vms().map(|v| v.id).collect();
            let Some(&id) = ids.get(pick % ids.len().max(1)) else {
                return false;
            };
            f.reject_pending(id).is_ok()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_and_refusals_change_nothing(ops in prop::collection::vec(op(), 1..250)) {
        let mut f = fleet();
        let (mut accepted, mut refused) = (0, 0);
        for op in &ops {
            let before = f.clone();
            let ok = apply(&mut f, op);
            if let Err(e) = f.check_invariants() {
                panic!("after {op:?}: {e}");
            }
            if ok {
                accepted += 1;
            } else {
                refused += 1;
                prop_assert_eq!(&f, &before, "refused {:?} changed the fleet", op);
            }
        }
        prop_assert_eq!(accepted + refused, ops.len());
    }
}

#[test]
fn a_long_fixed_sequence_places_removes_and_moves() {
    // A deterministic smoke run that makes sure the generators reach every kind of success.
    let mut f = fleet();
    let a100 = model(false);
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(f.add_pending(make_vm(a100, &[i % 7, (i * 3) % 7], 2, 8)).unwrap());
    }
    let mut placed_n = 0;
    for &id in &ids {
        let vm = f.vm(id).unwrap().clone();
        if let Some(p) = f.ff_placement(&vm) {
            f.place(id, p).unwrap();
            placed_n += 1;
        }
        f.check_invariants().unwrap();
    }
    assert!(placed_n >= 4, "{placed_n}");
    let first = placed(&f)[0];
    f.unplace(first).unwrap();
    f.check_invariants().unwrap();
    f.remove(first).unwrap();
    f.check_invariants().unwrap();
    assert!(f.vm(first).is_none());
}
