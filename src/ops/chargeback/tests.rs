//! Unit tests of `ops::chargeback`.

use super::*;
use crate::catalog::embedded;

#[test]
fn all_balanced_weights_are_2_4_7_fifteenths() {
    let c = embedded();
    let m = c.model(c.model_id("h100-80gb").unwrap());
    let mut counts = vec![0u32; m.profiles.len()];
    counts[m.profile("1g.10gb").unwrap()] = 2;
    counts[m.profile("2g.20gb").unwrap()] = 1;
    counts[m.profile("3g.40gb").unwrap()] = 1;
    let w = layout_weights(m, &counts);
    assert!((w[m.profile("1g.10gb").unwrap()] - 2.0 / 15.0).abs() < 1e-12);
    assert!((w[m.profile("2g.20gb").unwrap()] - 4.0 / 15.0).abs() < 1e-12);
    assert!((w[m.profile("3g.40gb").unwrap()] - 7.0 / 15.0).abs() < 1e-12);
    let total: f64 = counts.iter().zip(&w).map(|(&n, w)| n as f64 * w).sum();
    assert!((total - 1.0).abs() < 1e-12);
    // Raw weights 0.143, 0.286 and 0.5, summing to 1.071.
    assert!((raw_weight(m, m.profile("3g.40gb").unwrap()) - 0.5).abs() < 1e-12);
    assert!((raw_weight(m, m.profile("2g.20gb").unwrap()) - 2.0 / 7.0).abs() < 1e-12);
}
