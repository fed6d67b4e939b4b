//! Unit tests of `metrics`.

use super::*;
use crate::catalog::embedded;
use crate::fleet::{GiRequest, GiSlot, Host, Placement, Vm};

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
