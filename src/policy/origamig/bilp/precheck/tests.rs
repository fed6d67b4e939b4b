//! Unit tests of `policy::origamig::bilp::precheck`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{Fleet, GiRequest, Host, Vm};

fn vm(profiles: &[&str]) -> Vm {
    let gis = GiRequest::named(embedded(), "a100-40gb", profiles).unwrap();
    Vm::job(0, gis, 8, 32)
}

fn fleet(hosts: usize, vms: &[&[&str]]) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    );
    for p in vms {
        let v = vm(p);
        let pl = f.ff_placement(&v).unwrap();
        f.add_placed(v, pl).unwrap();
    }
    f
}

#[test]
fn the_occupancies_are_every_valid_layout_once() {
    let c = embedded();
    let model = c.model(c.model_id("a100-40gb").unwrap());
    let first: Vec<Option<usize>> = {
        let mut n = 0;
        model
            .profiles
            .iter()
            .map(|p| {
                let f = Some(n);
                n += p.starts.len();
                f
            })
            .collect()
    };
    let profile: Vec<usize> = (0..model.profiles.len())
        .flat_map(|p| std::iter::repeat_n(p, model.profiles[p].starts.len()))
        .collect();
    let pairs = Pairs { first, profile };
    let occ = enumerate(model, &pairs, &Weights::default()).unwrap();
    let mut seen = std::collections::HashSet::new();
    assert!(
        occ.bits.iter().all(|b| seen.insert(*b)),
        "an occupancy listed twice"
    );
    assert_eq!(occ.bits[0], 0);
    assert_eq!(occ.base[0], 0.0);
    // Every single GI is a layout of its own, and a full 7g GPU is one.
    let singles: usize = model.profiles.iter().map(|p| p.starts.len()).sum();
    assert_eq!(occ.bits.iter().filter(|b| b.count_ones() == 1).count(), singles);
    assert!(occ.bits.len() > singles + 1);
}

#[test]
fn a_host_that_can_be_emptied_into_free_room_is_not_proven() {
    // Two hosts, one small VM each: moving one VM next to the other switches a host and a GPU
    // off (b = 50, e = 20, minus the 14 free starts of its GPU) for 2 delta = 30 (no job
    // surcharge): a better plan exists. With the job surcharge (delta = 30) it does not pay.
    let mut f = fleet(2, &[&["1g.5gb"]]);
    let pl = crate::fleet::Placement {
        host: 1,
        gis: vec![crate::fleet::GiSlot { gpu: 0, start: 6 }],
    };
    f.add_placed(vm(&["1g.5gb"]), pl).unwrap();
    let w = Weights {
        delta_job_extra: 0.0,
        ..Weights::default()
    };
    assert!(!no_improving_plan(&f, &[0, 1], &w));
    assert_eq!(
        Weights::default().delta_of(f.vm(f.hosts[1].vms[0]).unwrap(), f.catalog),
        30.0
    );
    assert!(no_improving_plan(&f, &[0, 1], &Weights::default()));
}

#[test]
fn a_full_packing_is_proven() {
    // Every GPU holds a 7g GI: no move can switch anything off or free a start.
    let f = fleet(2, &[&["7g.40gb"], &["7g.40gb"], &["7g.40gb"], &["7g.40gb"]]);
    assert!(no_improving_plan(&f, &[0, 1], &Weights::default()));
}
