//! Unit tests of `policy::cache`.

use super::*;
use crate::catalog::embedded;

#[test]
fn tables_agree_with_the_rules() {
    let c = embedded();
    let t = Tables::build(c);
    for (m, model) in c.models.iter().enumerate() {
        if model.memory_slices > 8 {
            continue;
        }
        for mask in 0..(1u32 << model.memory_slices) {
            let occ = Occupancy {
                mask,
                counts: [0; crate::catalog::MAX_PROFILES],
            };
            for p in model.cf_profiles() {
                assert_eq!(
                    t.default_start(m, &occ, mask, p),
                    mig::default_start(model, &occ, p),
                    "{} mask {mask:b} profile {}",
                    model.name,
                    model.profiles[p].name
                );
            }
            assert_eq!(
                t.fragmentation(m, mask),
                mig::expected_fragmentation(model, mask),
                "{} mask {mask:b}",
                model.name
            );
        }
    }
}

#[test]
fn mfi_score_of_simple_masks() {
    let c = embedded();
    let m = c.model(c.model_id("a100-40gb").unwrap());
    assert_eq!(mfi_score(m, 0), 0);
    // Full GPU: no profile fits in the free slices.
    assert_eq!(mfi_score(m, 0xFF), 0);
    // Slice 0 taken (7 free): 1g.5gb blocked at 0 (1), 1g.10gb at 0 (2), 2g.10gb at 0 (2),
    // 3g.20gb at 0 (4), 4g.20gb at 0 (4); 7g.40gb needs 8 > 7 free slices.
    assert_eq!(mfi_score(m, 0b1), 1 + 2 + 2 + 4 + 4);
}
