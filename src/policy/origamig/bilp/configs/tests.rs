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

/// `undominated` compares candidates within groups of equal counts; the result is that of the
/// pairwise definition over the whole list (every pair compared), on the A100's and A30's
/// configurations with random current GIs and with the counts coarsened so that groups are
/// large.
#[test]
fn undominated_keeps_what_comparing_every_pair_keeps() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let c = embedded();
    let mut rng = StdRng::seed_from_u64(7);
    for name in ["a100-40gb", "a30-24gb"] {
        let m = c.model(c.model_id(name).unwrap());
        let all = of_model(m);
        for round in 0..20 {
            // Current GIs: a few GIs of random configurations.
            let now: Vec<(ProfileId, u8)> = (0..rng.gen_range(0..4))
                .flat_map(|_| all[rng.gen_range(0..all.len())].gis.clone())
                .collect();
            let cands: Vec<Candidate<Vec<u8>>> = all
                .iter()
                .filter(|_| rng.gen_bool(0.7))
                .map(|cfg| {
                    let mut n = vec![0u8; m.profiles.len()];
                    for g in &cfg.gis {
                        n[g.0] += 1;
                    }
                    // Every other round, only the number of GIs: larger groups.
                    let key = if round % 2 == 0 {
                        n
                    } else {
                        vec![cfg.gis.len() as u8]
                    };
                    let kept = cfg.gis.iter().copied().filter(|g| now.contains(g)).collect();
                    (cfg, key, kept)
                })
                .collect();
            let dominates = |a: &Candidate<Vec<u8>>, b: &Candidate<Vec<u8>>| {
                a.1 == b.1 && a.0.cf >= b.0.cf && b.2.iter().all(|g| a.2.contains(g))
            };
            let expect: Vec<&Config> = (0..cands.len())
                .filter(|&i| {
                    !(0..cands.len()).any(|j| {
                        j != i
                            && dominates(&cands[j], &cands[i])
                            && (j < i || !dominates(&cands[i], &cands[j]))
                    })
                })
                .map(|i| cands[i].0)
                .collect();
            let got: Vec<&Config> = undominated(cands.clone()).into_iter().map(|e| e.0).collect();
            assert_eq!(got.len(), expect.len(), "{name} round {round}");
            assert!(got.iter().zip(&expect).all(|(a, b)| std::ptr::eq(*a, *b)));
            assert!(got.len() < cands.len(), "some candidate is dominated");
        }
    }
}
