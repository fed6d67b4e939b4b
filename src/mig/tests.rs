//! Unit tests of `mig`.

use super::*;
use crate::catalog::embedded;

fn a100() -> &'static GpuModel {
    let c = embedded();
    c.model(c.model_id("a100-40gb").unwrap())
}

#[test]
fn cf_of_empty_gpus_matches_paper() {
    let c = embedded();
    assert_eq!(cf(a100(), &Occupancy::empty()), 18);
    let a30 = c.model(c.model_id("a30-24gb").unwrap());
    assert_eq!(cf(a30, &Occupancy::empty()), 7);
}

#[test]
fn fig1b_configuration_has_cf_9() {
    // G = {0:1, 3:1} (two 1g.5gb at slices 0 and 3), paper §3: CF = 9.
    let m = a100();
    let p = m.profile("1g.5gb").unwrap();
    let occ = Occupancy::from_gis(m, &[(p, 0), (p, 3)]).unwrap();
    assert_eq!(cf(m, &occ), 9);
}

#[test]
fn default_policy_places_second_small_gi_suboptimally() {
    // Paper §3: two 1g.5gb arrive one after another on an empty A100; the default policy puts
    // them at slices 4 and 6 rather than 4 and 5.
    let m = a100();
    let p = m.profile("1g.5gb").unwrap();
    let mut occ = Occupancy::empty();
    let z1 = default_start(m, &occ, p).unwrap();
    occ.add(m, p, z1);
    let z2 = default_start(m, &occ, p).unwrap();
    let mut starts = [z1, z2];
    starts.sort();
    assert_eq!(starts, [4, 6]);
}

#[test]
fn fig2_capacities_match_table3() {
    let m = a100();
    let small = m.profile("1g.5gb").unwrap();
    let names = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"];
    // Configuration A: 1g.5gb at 4 and 6; B: 1g.5gb at 2 and 3 (CF 11 both, Table 3).
    let a = Occupancy::from_gis(m, &[(small, 4), (small, 6)]).unwrap();
    let b = Occupancy::from_gis(m, &[(small, 2), (small, 3)]).unwrap();
    let caps = |o: &Occupancy| {
        names
            .iter()
            .map(|n| capacity(m, o, m.profile(n).unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(cf(m, &a), 11);
    assert_eq!(cf(m, &b), 11);
    assert_eq!(caps(&a), vec![5, 2, 2, 1, 1, 0]);
    assert_eq!(caps(&b), vec![5, 3, 2, 1, 0, 0]);
}

#[test]
fn media_extension_limit_is_one() {
    let m = a100();
    let me = m.profile("1g.5gb+me").unwrap();
    let occ = Occupancy::from_gis(m, &[(me, 0)]).unwrap();
    assert_eq!(free_starts(m, &occ, me).count(), 0);
    assert_eq!(capacity(m, &occ, me), 0);
}

#[test]
fn expected_fragmentation_by_hand() {
    // A100-40GB, six profiles (1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb).
    let m = a100();
    // An idle GPU: 1g.5gb never starts at slice 7 (1), 2g.10gb never at 6 (2), 4g.20gb only
    // at 0 (4): 7 / 6.
    assert!(
        (expected_fragmentation(m, 0) - 7.0 / 6.0).abs() < 1e-12,
        "an idle GPU"
    );
    assert_eq!(expected_fragmentation(m, 0xff), 0.0, "a full GPU");
    // A 4g.20gb at 0: slices 4-7 free. 1g.5gb cannot use 7 (1), 1g.10gb and 3g.20gb use all
    // (0), 2g.10gb only 4-5 (2), 4g.20gb and 7g.40gb none (4 + 4): 11 / 6.
    assert!((expected_fragmentation(m, 0x0f) - 11.0 / 6.0).abs() < 1e-12);
    // A 1g.5gb at 6: 1 + 1 + 1 (slice 7 for the three small profiles) + 3 + 3 (3g.20gb and
    // 4g.20gb only at 0) + 7 (7g.40gb): 16 / 6.
    assert!((expected_fragmentation(m, 1 << 6) - 16.0 / 6.0).abs() < 1e-12);
    // Slices 6 and 7 free: 1g.5gb leaves 7 (1), 1g.10gb none (0), the others both (2 x 4): 9 / 6.
    assert!((expected_fragmentation(m, 0x3f) - 9.0 / 6.0).abs() < 1e-12);
    // Slices 0-2 taken: 1 (slice 7) + 1 (slice 3) + 3 (3, 6, 7) + 1 (slice 3) + 5 + 5: 16 / 6.
    assert!((expected_fragmentation(m, 0x07) - 16.0 / 6.0).abs() < 1e-12);
}
