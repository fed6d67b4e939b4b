//! Unit tests of `metrics`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{GiRequest, GiSlot, Host, Placement, Vm, VmId};

#[test]
fn quantiles_by_nearest_rank() {
    let xs = [5.0, 1.0, 4.0, 2.0, 3.0];
    assert_eq!(quantile(&xs, 0.5), 3.0);
    assert_eq!(quantile(&xs, 0.95), 5.0);
    assert_eq!(quantile(&xs, 0.0), 1.0);
    let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(quantile(&hundred, 0.95), 95.0);
    assert_eq!(quantile(&[], 0.5), 0.0);
}

fn one_gpu_fleet() -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    Fleet::new(c, vec![Host::new("h0", 80, 512, vec![a100], 0)])
}

fn vm(profile: &str) -> Vm {
    Vm::job(
        0,
        GiRequest::named(embedded(), "a100-40gb", &[profile]).unwrap(),
        4,
        16,
    )
}

fn row<'a>(s: &'a [Stranded], p: &str) -> &'a Stranded {
    s.iter().find(|x| x.profile == p).unwrap()
}

#[test]
fn stranded_on_fig2_configuration_a() {
    // 1g.5gb at slices 4 and 6 (Fig. 2 A): free slices 0-3, 5, 7. A 3g.20gb fits at 0 only,
    // so slices 5 and 7 are stranded for it; a 4g.20gb also fits at 0; a 7g.40gb nowhere.
    let mut f = one_gpu_fleet();
    for z in [4, 6] {
        f.add_placed(
            vm("1g.5gb"),
            Placement {
                host: 0,
                gis: vec![GiSlot { gpu: 0, start: z }],
            },
        )
        .unwrap();
    }
    let s = stranded(&f);
    assert_eq!(row(&s, "3g.20gb").count, 2);
    assert_eq!(row(&s, "3g.20gb").free_slices, 6);
    assert_eq!(row(&s, "7g.40gb").count, 6);
    assert!((row(&s, "7g.40gb").share - 1.0).abs() < 1e-12);
    // 1g.5gb never uses slice 7.
    assert_eq!(row(&s, "1g.5gb").count, 1);
    assert_eq!(row(&s, "1g.5gb").fits, 5);
    // 1g.10gb: starts 0, 2 free -> 4 slices usable of 6.
    assert_eq!(row(&s, "1g.10gb").count, 2);
    assert!(s.iter().all(|x| x.model == "a100-40gb"));
    assert!(!s.iter().any(|x| x.profile.contains("+me")));
}

/// The running sums behind the stranded samples and the minute samples that look only at the
/// hosts refreshed since the last one give what a pass over the whole fleet gives, through
/// placements and removals on a fleet of two GPU models (an untouched model included).
#[test]
fn running_stranded_sums_and_minute_samples_match_a_full_pass() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let a30 = c.model_id("a30-24gb").unwrap();
    let h100 = c.model_id("h100-80gb").unwrap();
    let hosts = (0..6)
        .map(|i| {
            let gpus = match i % 3 {
                0 => vec![a100, a100],
                1 => vec![a100, a30],
                _ => vec![h100],
            };
            Host::new(format!("h{i}"), 80, 512, gpus, 0)
        })
        .collect();
    let mut f = Fleet::new(c, hosts);
    let mut r = Recorder::new(&f, (0.0, 1e9), 0.0);
    assert_eq!(r.strand.stranded(&f), stranded(&f));
    let mut prev: Vec<bool> = f.hosts.iter().map(|h| h.is_active()).collect();
    let mut t = 0.0;
    let mut expected_ons = 0;
    let mut check = |f: &Fleet, r: &mut Recorder, prev: &mut Vec<bool>| {
        assert_eq!(r.strand.stranded(f), stranded(f));
        assert_eq!(r.least_gpus, least_gpus(f));
        t += 60.0;
        for (h, host) in f.hosts.iter().enumerate() {
            if host.is_active() && !prev[h] {
                expected_ons += 1;
            }
            prev[h] = host.is_active();
        }
        r.sample_minute(t, f);
        assert_eq!(r.switch_ons, expected_ons);
    };
    let mut placed = Vec::new();
    for (host, start, profile) in [
        (0, 4, "1g.5gb"),
        (0, 0, "3g.20gb"),
        (1, 6, "1g.10gb"),
        (3, 0, "7g.40gb"),
        (4, 2, "2g.10gb"),
        (3, 5, "1g.5gb"),
    ] {
        let gpu = if host == 3 { 1 } else { 0 };
        let id = f.add_placed(
            vm(profile),
            Placement {
                host,
                gis: vec![GiSlot { gpu, start }],
            },
        );
        if let Ok(id) = id {
            placed.push((id, host));
            r.refresh_host(&f, host);
        }
        check(&f, &mut r, &mut prev);
    }
    assert!(placed.len() >= 4, "placements: {placed:?}");
    for (id, host) in placed {
        f.remove(id).unwrap();
        r.refresh_host(&f, host);
        check(&f, &mut r, &mut prev);
    }
    r.refresh_all(&f);
    check(&f, &mut r, &mut prev);
}

fn place(f: &mut Fleet, profile: &str, gpu: usize, start: u8) -> VmId {
    f.add_placed(
        vm(profile),
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu, start }],
        },
    )
    .unwrap()
}

/// The bound by hand on one host of eight A100-40GB (8 memory and 7 compute slices a GPU),
/// the GPUs in use beside it, and a GPU held whole counted as it is.
#[test]
fn least_gpus_packs_each_class_full_by_memory_and_by_compute_slices() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(c, vec![Host::new("h0", 256, 2048, vec![a100; 8], 0)]);
    assert_eq!(least_gpus(&f), 0);
    // Three 1g.5gb on GPUs 0-2 and a 3g.20gb on GPU 3: 3 + 4 = 7 memory slices and 3 + 3 = 6
    // compute slices fit one GPU; four are in use.
    for k in 0..3 {
        place(&mut f, "1g.5gb", k, 0);
    }
    let big = place(&mut f, "3g.20gb", 3, 0);
    assert_eq!(least_gpus(&f), 1);
    assert_eq!(f.hosts[0].gpus.iter().filter(|g| g.is_used()).count(), 4);
    // A 4g.20gb on GPU 4: 11 memory slices and 10 compute slices, two GPUs.
    place(&mut f, "4g.20gb", 4, 0);
    assert_eq!(least_gpus(&f), 2);
    // Without the 3g.20gb: 7 memory slices (one GPU) but 3 + 4 = 7 compute slices, still one.
    f.remove(big).unwrap();
    assert_eq!(least_gpus(&f), 1);
    // A second 4g.20gb: 4 + 4 + 3 = 11 memory slices (two GPUs) and 4 + 4 + 3 = 11 compute
    // slices (two): two 4g.20gb never share a GPU (8 compute slices of 7).
    place(&mut f, "4g.20gb", 5, 0);
    assert_eq!(least_gpus(&f), 2);
    // A GPU held whole by a gang member counts as it is.
    f.hosts[0].gpus[6].mode = GpuMode::Whole;
    f.add_placed(
        Vm::gang(0, a100, 1, 4, 16),
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 6, start: 0 }],
        },
    )
    .unwrap();
    assert_eq!(least_gpus(&f), 3);
}

/// Against brute force: for every set of one to five GIs of A100-40GB profiles (with
/// repetition, 461 sets), the fewest GPUs that hold them all at permitted starts (every
/// assignment of every GI to every free start tried) is never below the bound; it equals the
/// bound on 441 of the sets and is at most two above it.
#[test]
fn least_gpus_is_never_above_the_fewest_gpus_found_by_brute_force() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let model = c.model(a100);
    let profiles: Vec<ProfileId> = model.cf_profiles().collect();
    // The fewest GPUs holding `gis`: each GI in turn goes to every free start of every GPU in
    // use, or of a new GPU.
    fn fewest(model: &GpuModel, gis: &[ProfileId], gpus: &mut Vec<mig::Occupancy>, best: &mut usize) {
        if gpus.len() >= *best {
            return;
        }
        let Some((&p, rest)) = gis.split_first() else {
            *best = gpus.len();
            return;
        };
        for k in 0..gpus.len() {
            let occ = gpus[k];
            for z in mig::free_starts(model, &occ, p).collect::<Vec<_>>() {
                gpus[k].add(model, p, z);
                fewest(model, rest, gpus, best);
                gpus[k] = occ;
            }
        }
        let empty = mig::Occupancy::empty();
        for z in mig::free_starts(model, &empty, p).collect::<Vec<_>>() {
            let mut new = empty;
            new.add(model, p, z);
            gpus.push(new);
            fewest(model, rest, gpus, best);
            gpus.pop();
        }
    }
    let (mut sets, mut tight, mut widest) = (0, 0, 0);
    let mut set: Vec<usize> = Vec::new();
    // Multisets of profile indices, non-decreasing, of sizes 1 to 5.
    fn next(set: &mut Vec<usize>, n: usize, max_len: usize) -> bool {
        if set.len() < max_len {
            set.push(*set.last().unwrap_or(&0));
            return true;
        }
        while let Some(x) = set.pop() {
            if x + 1 < n {
                set.push(x + 1);
                return true;
            }
        }
        false
    }
    while next(&mut set, profiles.len(), 5) {
        let gis: Vec<ProfileId> = set.iter().map(|&i| profiles[i]).collect();
        let mut f = Fleet::new(c, vec![Host::new("h0", 256, 2048, vec![a100; 5], 0)]);
        for (k, &p) in gis.iter().enumerate() {
            let z = mig::free_starts(model, &mig::Occupancy::empty(), p)
                .next()
                .unwrap();
            place(&mut f, &model.profiles[p].name, k, z);
        }
        let bound = least_gpus(&f) as usize;
        let mut best = usize::MAX;
        fewest(model, &gis, &mut Vec::new(), &mut best);
        let names: Vec<&str> = gis.iter().map(|&p| model.profiles[p].name.as_str()).collect();
        assert!(bound <= best, "{names:?}: bound {bound}, brute force {best}");
        sets += 1;
        tight += usize::from(bound == best);
        widest = widest.max(best - bound);
    }
    assert_eq!(sets, 461, "multisets of 1 to 5 of 6 profiles");
    assert_eq!(tight, 441, "sets on which the bound is the brute force's count");
    // Five 4g.20gb: 20 memory and 20 compute slices (three GPUs), but one 4g.20gb a GPU.
    assert_eq!(widest, 2);
}

/// The time average: one 4g.20gb for the first hour of a two-hour window (one GPU of the
/// bound), two for the second (two GPUs), on a host of eight GPUs: 1.5 of 8 GPUs on average.
#[test]
fn least_gpus_pct_is_the_time_average_of_the_bound() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let mut f = Fleet::new(c, vec![Host::new("h0", 256, 2048, vec![a100; 8], 0)]);
    let mut r = Recorder::new(&f, (0.0, 7200.0), 0.0);
    place(&mut f, "4g.20gb", 0, 0);
    r.refresh_host(&f, 0);
    r.advance(3600.0);
    place(&mut f, "4g.20gb", 1, 0);
    r.refresh_host(&f, 0);
    r.advance(7200.0);
    let s = r.summary(7200.0);
    assert!(
        (s.least_gpus_pct - 100.0 * 1.5 / 8.0).abs() < 1e-9,
        "{}",
        s.least_gpus_pct
    );
    assert!((s.active_gpus_pct - s.least_gpus_pct).abs() < 1e-9);
}
