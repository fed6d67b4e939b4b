//! The slice rules against the OrigaMIG paper's own figures (§3, Fig. 1, Fig. 2, Table 3) and
//! against brute force over every configuration of every catalog model.

use migplan::catalog::{embedded, GpuModel, ProfileId};
use migplan::explore::{self, Space, StartStatus, Verdict};
use migplan::mig::{self, Occupancy};

fn model(name: &str) -> &'static GpuModel {
    let c = embedded();
    c.model(c.model_id(name).expect("model in catalog"))
}

fn pid(m: &GpuModel, name: &str) -> ProfileId {
    m.profile(name).expect("profile of the model")
}

#[test]
fn a100_configuration_space_matches_paper_section_3() {
    // §3: 723 configurations, 78 terminal, 482 (67 %) suboptimal; the default policy reaches 179
    // when GIs are only added, 59 of them suboptimal.
    let s = Space::enumerate_cf(model("a100-40gb")).stats();
    assert_eq!(s.cf_empty, 18);
    assert_eq!(s.configurations, 723);
    assert_eq!(s.terminal, 78);
    assert_eq!(s.suboptimal, 482);
    assert_eq!(s.default_reached, 179);
    assert_eq!(s.default_suboptimal, 59);
}

#[test]
fn a30_configuration_space_by_hand() {
    // A30: two independent halves {0,1} and {2,3}, each empty, one 1g.6gb (2 ways), two 1g.6gb
    // or one 2g.12gb (5 states), plus the 4g.24gb alone: 5 * 5 + 1 = 26 configurations. Terminal:
    // both halves full (2 * 2) or the 4g: 5. CF(empty) = 4 + 2 + 1 = 7 (paper, Table 6).
    // Suboptimal: two 1g.6gb split over the halves (CF 2) instead of sharing one (CF 3): 2 * 2 = 4.
    // Everything else of the same GIs has equal CF.
    let s = Space::enumerate_cf(model("a30-24gb")).stats();
    assert_eq!(s.cf_empty, 7);
    assert_eq!(s.configurations, 26);
    assert_eq!(s.terminal, 5);
    assert_eq!(s.suboptimal, 4);
    // The default policy never splits two 1g.6gb (Eq. 3 keeps the other half whole).
    assert_eq!(s.default_suboptimal, 0);
}

#[test]
fn every_eight_slot_model_shares_the_a100_space() {
    // The 8-slot models have the A100's placement table under other profile names.
    for m in &embedded().models {
        let s = Space::enumerate_cf(m).stats();
        if m.memory_slices == 8 {
            assert_eq!(
                (s.cf_empty, s.configurations, s.terminal, s.suboptimal),
                (18, 723, 78, 482),
                "{}",
                m.name
            );
            assert_eq!((s.default_reached, s.default_suboptimal), (179, 59), "{}", m.name);
        }
    }
}

#[test]
fn paper_two_small_gi_example() {
    // §3: two 1g.5gb on an empty A100 should take slices 4 and 5; the default policy puts them at
    // 4 and 6, a suboptimal configuration the default policy reaches.
    let m = model("a100-40gb");
    let s = Space::enumerate_cf(m);
    let small = pid(m, "1g.5gb");
    let c46 = s.get(&[(small, 4), (small, 6)]).unwrap();
    let c45 = s.get(&[(small, 4), (small, 5)]).unwrap();
    assert!(c46.default_reached && c46.suboptimal);
    assert!(!c45.suboptimal);
    assert!(c45.cf > c46.cf);
    assert_eq!(s.best_cf(&c46.occ), Some(c45.cf));
}

#[test]
fn paper_capacity_figure_428() {
    // §3: 428 configurations of the A100 support some profile better (higher capacity) than
    // another arrangement of the same GIs.
    let s = Space::enumerate_cf(model("a100-40gb"));
    assert_eq!(s.profile_advantaged(), 428);
}

#[test]
fn fig1a_non_contiguous() {
    // Fig. 1a: 1g.5gb at 1 and 3, 3g.20gb at 4: slices 0 and 2 are free, two slices, but a
    // 1g.10gb or 2g.10gb needs two contiguous ones.
    let m = model("a100-40gb");
    let (s, big) = (pid(m, "1g.5gb"), pid(m, "3g.20gb"));
    let gis = [(s, 1), (s, 3), (big, 4)];
    for name in ["1g.10gb", "2g.10gb"] {
        let e = explore::explain_gis(m, &gis, Some(&[11, 12, 13]), pid(m, name)).unwrap();
        assert!(!e.fits(), "{name}");
        assert_eq!(
            e.verdict,
            Verdict::NotContiguous {
                free_slices: vec![0, 2],
                longest_run: 1,
                need: 2
            },
            "{name}"
        );
        // Start 0 is blocked by the 1g.5gb at 1 (VM 11) only.
        match &e.starts[0].status {
            StartStatus::Occupied { slices, by } => {
                assert_eq!(slices, &vec![1]);
                assert_eq!(by.len(), 1);
                assert_eq!(
                    (by[0].profile.as_str(), by[0].start, by[0].vm),
                    ("1g.5gb", 1, Some(11))
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(
            e.reason.contains("(0, 2)") && e.reason.contains("contiguous"),
            "{}",
            e.reason
        );
        // Moving one 1g.5gb next to the other frees a pair: one move.
        let c = e.compaction.as_ref().expect("compaction helps");
        assert_eq!(c.moved, Some(1), "{name}: {c:?}");
    }
}

#[test]
fn fig1b_contiguous_but_no_permitted_start() {
    // Fig. 1b: G = {0:1, 3:1} leaves 1, 2, 4-7 free (CF 9); slices 4-7 are free and contiguous but
    // the 4g.20gb may start only at slice 0.
    let m = model("a100-40gb");
    let s = pid(m, "1g.5gb");
    let occ = Occupancy::from_gis(m, &[(s, 0), (s, 3)]).unwrap();
    assert_eq!(mig::cf(m, &occ), 9);
    let e = explore::explain_gis(m, &[(s, 0), (s, 3)], None, pid(m, "4g.20gb")).unwrap();
    assert_eq!(
        e.verdict,
        Verdict::NoPermittedStart {
            runs: vec![(4, 4)],
            need: 4,
            permitted: vec![0]
        }
    );
    assert!(e.reason.contains("4-7"), "{}", e.reason);
    // Both small GIs leave the first half: two moves.
    assert_eq!(e.compaction.as_ref().and_then(|c| c.moved), Some(2));
    // The 3g.20gb, by contrast, fits at 4.
    let e3 = explore::explain(m, &occ, pid(m, "3g.20gb"));
    assert_eq!(
        e3.verdict,
        Verdict::Fits {
            starts: vec![4],
            default_start: 4
        }
    );
}

#[test]
fn fig1c_fits_after_compaction() {
    // Fig. 1c: 3g.20gb at 0 and 1g.5gb at 4, 5, 6: slice 7 is free but no 1g.5gb may start there.
    // Rearranged (1g.5gb at 0-3, 3g.20gb at 4) the GPU takes a fourth 1g.5gb.
    let m = model("a100-40gb");
    let (s, big) = (pid(m, "1g.5gb"), pid(m, "3g.20gb"));
    let gis = [(big, 0), (s, 4), (s, 5), (s, 6)];
    let e = explore::explain_gis(m, &gis, Some(&[1, 2, 3, 4]), s).unwrap();
    assert!(!e.fits());
    assert!(e.fits_after_compaction());
    assert!(matches!(e.verdict, Verdict::NoPermittedStart { ref runs, .. } if runs == &vec![(7, 1)]));
    let c = e.compaction.unwrap();
    let after: Vec<(ProfileId, u8)> = c.arrangement.iter().map(|g| (g.profile_id, g.start)).collect();
    assert_eq!(after, vec![(s, 0), (s, 1), (s, 2), (s, 3), (big, 4)]);
    // Every resident GI moves (no arrangement keeps any in place); the new GI lands at 3.
    assert_eq!(c.moved, Some(4));
    assert_eq!(c.start, 3);
    let gi3 = c.arrangement.iter().find(|g| g.profile_id == big).unwrap();
    assert_eq!((gi3.from, gi3.vm), (Some(0), Some(1)));
    assert!(e.reason.contains("after compaction"), "{}", e.reason);
    // Only one instance fits even after compaction: the rearranged GPU is full.
    let full = Occupancy::from_gis(m, &after).unwrap();
    assert_eq!(full.used_slices(), 8);
}

#[test]
fn not_enough_free_and_instance_limit() {
    let m = model("a100-40gb");
    let big = pid(m, "3g.20gb");
    let me = pid(m, "1g.5gb+me");
    let gis = [(big, 0), (pid(m, "2g.10gb"), 4), (me, 6)];
    let e = explore::explain_gis(m, &gis, None, big).unwrap();
    assert_eq!(e.verdict, Verdict::NotEnoughFree { free: 1, need: 4 });
    assert!(e.compaction.is_none());
    let e = explore::explain_gis(m, &gis, None, me).unwrap();
    assert_eq!(e.verdict, Verdict::InstanceLimit { max: 1 });
    // A +me GI at 0 alone: starts 1-6 are free slices, but the limit of one is reached.
    let e = explore::explain_gis(m, &[(me, 0)], None, me).unwrap();
    assert_eq!(e.verdict, Verdict::InstanceLimit { max: 1 });
    assert!(matches!(e.starts[0].status, StartStatus::Occupied { .. }));
    assert!(e.starts[1..]
        .iter()
        .all(|s| s.status == StartStatus::LimitReached));
    assert!(e.reason.contains("most allowed"), "{}", e.reason);
}

#[test]
fn no_compaction_when_no_arrangement_admits() {
    // 4g.20gb at 0 and 2g.10gb at 4: the 2g.10gb at 6 is not permitted, and no arrangement of a
    // 4g.20gb and two 2g.10gb exists (the 4g owns slices 0-3, the 2g.10gb starts stop at 4).
    let m = model("a100-40gb");
    let two = pid(m, "2g.10gb");
    let e = explore::explain_gis(m, &[(pid(m, "4g.20gb"), 0), (two, 4)], None, two).unwrap();
    assert!(
        matches!(e.verdict, Verdict::NoPermittedStart { .. }),
        "{:?}",
        e.verdict
    );
    assert!(e.compaction.is_none());
    assert!(e.reason.contains("no rearrangement"), "{}", e.reason);
}

#[test]
fn fig2_table3_capacities() {
    // Table 3: configuration A (1g.5gb at 4 and 6) and B (1g.5gb at 2 and 3), both CF 11.
    let m = model("a100-40gb");
    let s = pid(m, "1g.5gb");
    let names = ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"];
    for (gis, want) in [
        ([(s, 4), (s, 6)], [5, 2, 2, 1, 1, 0]),
        ([(s, 2), (s, 3)], [5, 3, 2, 1, 0, 0]),
    ] {
        let occ = Occupancy::from_gis(m, &gis).unwrap();
        assert_eq!(mig::cf(m, &occ), 11);
        let caps: Vec<u32> = names.iter().map(|n| mig::capacity(m, &occ, pid(m, n))).collect();
        assert_eq!(caps, want);
    }
}

/// CF by Eq. 1 and 2 directly over a list of free slices: starts are multiples of g up to the
/// last permitted start s_p (independent of the catalog's start lists and of bit masks).
fn cf_eq1(m: &GpuModel, free: &[bool], counts: &[u8]) -> u32 {
    let mut n = 0;
    for (p, prof) in m.profiles.iter().enumerate() {
        if prof.media_ext || counts[p] >= prof.max_instances {
            continue;
        }
        let sp = *prof.starts.last().unwrap() as usize;
        let g = prof.size as usize;
        let mut z = 0;
        while z <= sp {
            if (z..z + g).all(|u| free[u]) {
                n += 1;
            }
            z += g;
        }
    }
    n
}

/// The most GIs of `p` that can be added, by trying every start at every step.
fn max_additional(m: &GpuModel, occ: &Occupancy, p: ProfileId) -> u32 {
    let mut best = 0;
    for z in 0..m.memory_slices {
        if occ.can_place(m, p, z) {
            let mut o = *occ;
            o.add(m, p, z);
            best = best.max(1 + max_additional(m, &o, p));
        }
    }
    best
}

#[test]
fn brute_force_capacity_and_default_start_over_every_configuration() {
    // Every model with MIG (a model without MIG, as the L40S, has no slices to arrange).
    for m in embedded().models.iter().filter(|m| m.mig) {
        let space = Space::enumerate_all(m);
        assert!(space.configs.len() > 1, "{}", m.name);
        for c in &space.configs {
            // Every arrangement respects the compute slices (§3: the start tables account for them).
            assert!(
                c.occ.used_compute(m) <= m.compute_slices as u32,
                "{}: {:?}",
                m.name,
                c.gis()
            );
            let free: Vec<bool> = (0..m.memory_slices).map(|u| c.occ.mask & (1 << u) == 0).collect();
            assert_eq!(mig::cf(m, &c.occ), cf_eq1(m, &free, &c.occ.counts), "{}", m.name);
            for p in 0..m.profiles.len() {
                let cap = mig::capacity(m, &c.occ, p);
                assert_eq!(cap, max_additional(m, &c.occ, p), "{} {:?} p{p}", m.name, c.gis());
                if !m.profiles[p].media_ext {
                    // On these grids per-profile capacity equals |S(F, p)| of Eq. 2.
                    assert_eq!(cap as usize, mig::free_starts(m, &c.occ, p).count());
                }
                // Eq. 3 by exhaustion: every slice tried, CF recomputed by Eq. 1.
                let mut best: Option<(u32, u8)> = None;
                for z in 0..m.memory_slices {
                    if c.occ.can_place(m, p, z) {
                        let mut o = c.occ;
                        o.add(m, p, z);
                        let f: Vec<bool> = (0..m.memory_slices).map(|u| o.mask & (1 << u) == 0).collect();
                        let v = cf_eq1(m, &f, &o.counts);
                        if best.is_none_or(|(bv, _)| v > bv) {
                            best = Some((v, z));
                        }
                    }
                }
                assert_eq!(mig::default_start(m, &c.occ, p), best.map(|b| b.1), "{}", m.name);
            }
        }
    }
}

#[test]
fn enumeration_equals_every_valid_subset() {
    // Reachable by adding GIs = every set of non-overlapping (profile, start) pairs within the
    // instance limits: count those by trying all subsets of the candidate pairs.
    for m in &embedded().models {
        let pairs: Vec<(ProfileId, u8)> = m
            .cf_profiles()
            .flat_map(|p| m.profiles[p].starts.iter().map(move |&z| (p, z)))
            .collect();
        assert!(pairs.len() <= 20, "{}", m.name);
        let (mut valid, mut terminal) = (0usize, 0usize);
        for bits in 0u32..(1 << pairs.len()) {
            let gis: Vec<(ProfileId, u8)> = (0..pairs.len())
                .filter(|i| bits & (1 << i) != 0)
                .map(|i| pairs[i])
                .collect();
            if let Some(occ) = Occupancy::from_gis(m, &gis) {
                valid += 1;
                if pairs.iter().all(|&(p, z)| !occ.can_place(m, p, z)) {
                    terminal += 1;
                }
            }
        }
        let s = Space::enumerate_cf(m).stats();
        assert_eq!((s.configurations, s.terminal), (valid, terminal), "{}", m.name);
    }
}

#[test]
fn default_reached_is_closed_under_the_default_policy() {
    // Replaying the default policy from every reached configuration stays inside the reached
    // set, and the empty GPU is in it.
    let m = model("a100-40gb");
    let s = Space::enumerate_cf(m);
    assert!(s.configs[0].default_reached && s.configs[0].occ.is_empty());
    for c in s.configs.iter().filter(|c| c.default_reached) {
        for p in m.cf_profiles() {
            if let Some(z) = mig::default_start(m, &c.occ, p) {
                let mut gis = c.gis();
                gis.push((p, z));
                assert!(s.get(&gis).unwrap().default_reached);
            }
        }
    }
}
