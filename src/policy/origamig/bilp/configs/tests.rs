//! Unit tests of `policy::origamig::bilp::configs`.

use super::*;
use crate::catalog::embedded;
use crate::mig::Occupancy;

#[test]
fn a100_has_723_configurations_of_the_paper_profiles() {
    let c = embedded();
    let m = c.model(c.model_id("a100-40gb").unwrap());
    let paper: Vec<ProfileId> = m.cf_profiles().collect();
    let list = enumerate(m, &paper);
    assert_eq!(list.len(), 723);
    assert_eq!(list.iter().filter(|c| c.gis.is_empty()).count(), 1);
    assert_eq!(list.iter().find(|c| c.gis.is_empty()).unwrap().cf, 18);
    // Every configuration is distinct and valid.
    let mut seen = std::collections::BTreeSet::new();
    for c in &list {
        assert!(Occupancy::from_gis(m, &c.gis).is_some());
        assert!(seen.insert(c.gis.clone()));
    }
    // With +me profiles there are more, each with at most one +me GI per profile.
    assert!(of_model(m).len() > 723);
}
