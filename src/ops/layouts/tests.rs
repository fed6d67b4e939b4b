//! Unit tests of `ops::layouts`.

use super::*;
use crate::catalog::embedded as catalog;

#[test]
fn embedded_menu_loads_and_places_every_layout() {
    let menu = embedded();
    let c = catalog();
    for l in menu.all() {
        let model = c.model(l.model);
        let occ = Occupancy::from_gis(model, &l.arrangement);
        assert!(occ.is_some(), "{} on {}", l.name, model.name);
        let mut counts = vec![0u32; model.profiles.len()];
        for &(p, _) in &l.arrangement {
            counts[p] += 1;
        }
        assert_eq!(counts, l.counts, "{}", l.name);
    }
    // Every model of the catalog with MIG has the operator's layouts and a planner menu; a
    // model without MIG (the L40S, the L4) has no layout at all.
    for (mid, m) in c.models.iter().enumerate() {
        if !m.mig {
            assert_eq!(menu.for_model(mid).count(), 0, "{}", m.name);
            continue;
        }
        assert!(menu.get(mid, "all-balanced").is_some(), "{}", m.name);
        assert!(menu.get(mid, "all-disabled").is_some(), "{}", m.name);
        assert!(!menu.planner_menu(mid).is_empty(), "{}", m.name);
    }
}

#[test]
fn all_balanced_fills_an_h100() {
    let c = catalog();
    let h = c.model(c.model_id("h100-80gb").unwrap());
    let l = embedded()
        .get(c.model_id("h100-80gb").unwrap(), "all-balanced")
        .unwrap();
    assert_eq!(l.describe(h), "2x1g.10gb + 1x2g.20gb + 1x3g.40gb");
    let occ = Occupancy::from_gis(h, &l.arrangement).unwrap();
    assert_eq!(occ.used_slices(), 8);
}

#[test]
fn arrange_agrees_with_brute_force_on_every_model() {
    // Every count vector within the instance limits (+me profiles included): `arrange` finds
    // an arrangement exactly when the enumeration of reachable configurations holds that
    // multiset, and the arrangement it returns is valid and holds exactly those instances.
    let c = catalog();
    for m in &c.models {
        let ps: Vec<ProfileId> = (0..m.profiles.len()).collect();
        let placeable = placeable_layouts(m, &ps);
        let mut vectors = vec![vec![0u32; m.profiles.len()]];
        for &p in &ps {
            let mut next = Vec::new();
            for v in &vectors {
                for n in 0..=m.profiles[p].max_instances as u32 {
                    let mut w = v.clone();
                    w[p] = n;
                    next.push(w);
                }
            }
            vectors = next;
        }
        let mut found = 0;
        for v in &vectors {
            let got = arrange(m, v);
            assert_eq!(got.is_some(), placeable.contains(v), "{} {v:?}", m.name);
            if let Some(a) = got {
                found += 1;
                Occupancy::from_gis(m, &a).expect("valid arrangement");
                let mut counts = vec![0u32; m.profiles.len()];
                for &(p, _) in &a {
                    counts[p] += 1;
                }
                assert_eq!(&counts, v);
            }
        }
        assert_eq!(found, placeable.len(), "{}", m.name);
    }
}

#[test]
fn maximal_layouts_of_a30_by_hand() {
    // A30 without +me: 4x1g; 2x1g + 2g (2g at 0 or 2); 2x2g; 4g. Nothing else is maximal.
    let c = catalog();
    let a30 = c.model(c.model_id("a30-24gb").unwrap());
    let ps: Vec<ProfileId> = a30.cf_profiles().collect();
    let got = maximal_layouts(a30, &ps);
    let v = |a: u32, b: u32, d: u32| vec![a, 0, b, 0, d];
    let want: BTreeSet<Vec<u32>> = [v(4, 0, 0), v(2, 1, 0), v(0, 2, 0), v(0, 0, 1)]
        .into_iter()
        .collect();
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
}
