//! The synthetic workload of §6.2 over many draws: arrival rates per class, the job/tenant mix,
//! lifetime means (exponential and lognormal), the GI count mix, profile shares, sizing, and the
//! Table 9 variants as settings.

use migplan::catalog::embedded;
use migplan::fleet::{Fleet, VmKind};
use migplan::scenario::{LifetimeDist, WorkloadSettings};
use migplan::workload::{mean_lifetime_h, Request, Workload};

/// The paper's fleet of §6.1, as `scenarios/paper-128.toml` ships it.
fn paper_fleet() -> Fleet {
    crate::common::fleet::paper_128().fleet
}

/// Requests arriving within `hours`.
fn draw(s: &WorkloadSettings, hours: f64) -> Vec<Request> {
    let fleet = paper_fleet();
    let mut w = Workload::new(s, &fleet, 0.0).unwrap();
    let mut out = Vec::new();
    while w.peek_time().unwrap() <= hours * 3600.0 {
        out.push(w.pop().unwrap());
    }
    out
}

fn model_name(r: &Request) -> &'static str {
    let c = embedded();
    c.model(r.gis[0].model).name.as_str()
}

fn within(x: f64, want: f64, rel: f64) -> bool {
    (x - want).abs() <= rel * want
}

#[test]
fn arrival_rates_carry_the_offered_load_on_both_classes() {
    // Both classes carry load rho (§6.1): lambda per model = rho |K_model| / (E[L] E[f_model]), so
    // lambda_A100 = 34.0 rho, lambda_A30 = 8.5 rho per hour on the paper's fleet.
    let s = WorkloadSettings {
        load: 0.85,
        ..Default::default()
    };
    let hours = 3000.0;
    let reqs = draw(&s, hours);
    let a100 = reqs.iter().filter(|r| model_name(r) == "a100-40gb").count() as f64 / hours;
    let a30 = reqs.iter().filter(|r| model_name(r) == "a30-24gb").count() as f64 / hours;
    assert!(within(a100, 34.02 * 0.85, 0.02), "{a100}");
    assert!(within(a30, 8.50 * 0.85, 0.03), "{a30}");
    // Arrivals are in time order and the gaps look exponential: their coefficient of
    // variation is 1.
    assert!(reqs.windows(2).all(|w| w[0].arrival <= w[1].arrival));
    let gaps: Vec<f64> = reqs.windows(2).map(|w| w[1].arrival - w[0].arrival).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!(within(sd / mean, 1.0, 0.03), "cv {}", sd / mean);
    // The offered load measured on the requests: sum of lifetime x share over |K| x time.
    for (model, gpus, slices) in [("a100-40gb", 192.0, 8.0), ("a30-24gb", 64.0, 4.0)] {
        let c = embedded();
        let work: f64 = reqs
            .iter()
            .filter(|r| model_name(r) == model)
            .map(|r| r.lifetime * r.memory_slices(c) as f64 / slices)
            .sum();
        let rho = work / (gpus * hours * 3600.0);
        assert!(within(rho, 0.85, 0.05), "{model}: rho {rho}");
    }
}

#[test]
fn jobs_and_tenants_mix_and_lifetime_means() {
    let s = WorkloadSettings::default();
    let reqs = draw(&s, 3000.0);
    let n = reqs.len() as f64;
    let jobs: Vec<&Request> = reqs.iter().filter(|r| r.kind == VmKind::Job).collect();
    let tenants: Vec<&Request> = reqs.iter().filter(|r| r.kind == VmKind::Tenant).collect();
    assert!(
        within(jobs.len() as f64 / n, 0.7, 0.015),
        "{}",
        jobs.len() as f64 / n
    );
    let mean = |v: &[&Request]| v.iter().map(|r| r.lifetime).sum::<f64>() / v.len() as f64 / 3600.0;
    assert!(within(mean(&jobs), 2.0, 0.03), "{}", mean(&jobs));
    assert!(within(mean(&tenants), 24.0, 0.03), "{}", mean(&tenants));
    assert!((mean_lifetime_h(&s) - 8.6).abs() < 1e-12);
}

#[test]
fn lognormal_lifetimes_keep_the_means_with_sigma_1_5() {
    let s = WorkloadSettings {
        lifetime: LifetimeDist::Lognormal,
        ..Default::default()
    };
    let reqs = draw(&s, 4000.0);
    for (kind, want) in [(VmKind::Job, 2.0), (VmKind::Tenant, 24.0)] {
        let l: Vec<f64> = reqs
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.lifetime / 3600.0)
            .collect();
        let mean = l.iter().sum::<f64>() / l.len() as f64;
        // Heavy tail (sd = 2.9 x mean): a wider tolerance, about 4 standard errors.
        assert!(within(mean, want, 0.08), "{kind:?}: {mean}");
        // sigma of ln L is 1.5 and its mean ln(m) - sigma^2 / 2.
        let logs: Vec<f64> = l.iter().map(|x| x.ln()).collect();
        let lm = logs.iter().sum::<f64>() / logs.len() as f64;
        let ls = (logs.iter().map(|x| (x - lm).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        assert!((ls - 1.5).abs() < 0.03, "{kind:?}: sigma {ls}");
        assert!((lm - (want.ln() - 1.125)).abs() < 0.03, "{kind:?}: mu {lm}");
    }
}

#[test]
fn gi_counts_profiles_and_sizing() {
    let c = embedded();
    let reqs = draw(&WorkloadSettings::default(), 2000.0);
    let n = reqs.len() as f64;
    let two = reqs.iter().filter(|r| r.gis.len() == 2).count() as f64;
    assert!(reqs.iter().all(|r| r.gis.len() == 1 || r.gis.len() == 2));
    assert!(within(two / n, 0.5, 0.03), "{}", two / n);
    for r in &reqs {
        // All GIs of one model; 4 cores and 16 GB per compute slice.
        assert!(r.gis.iter().all(|g| g.model == r.gis[0].model));
        let compute: u32 = r
            .gis
            .iter()
            .map(|g| c.model(g.model).profiles[g.profile].compute as u32)
            .sum();
        assert_eq!(r.cores, 4 * compute);
        assert_eq!(r.ram_gb, 16 * compute);
        assert!(r
            .gis
            .iter()
            .all(|g| !c.model(g.model).profiles[g.profile].media_ext));
    }
    // Profiles uniform over the six A100 profiles without +me (drawn independently per GI).
    let a100 = c.model_id("a100-40gb").unwrap();
    let gis: Vec<usize> = reqs
        .iter()
        .flat_map(|r| &r.gis)
        .filter(|g| g.model == a100)
        .map(|g| g.profile)
        .collect();
    let profiles: Vec<usize> = c.model(a100).cf_profiles().collect();
    assert_eq!(profiles.len(), 6);
    for p in profiles {
        let share = gis.iter().filter(|&&q| q == p).count() as f64 / gis.len() as f64;
        assert!(
            within(share, 1.0 / 6.0, 0.05),
            "{}: {share}",
            c.model(a100).profiles[p].name
        );
    }
}

#[test]
fn table_9_variants_are_settings() {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    // VMs with two GIs: 0 % and 100 %.
    let one = draw(
        &WorkloadSettings {
            two_gi_prob: 0.0,
            ..Default::default()
        },
        200.0,
    );
    assert!(one.iter().all(|r| r.gis.len() == 1));
    let two = draw(
        &WorkloadSettings {
            two_gi_prob: 1.0,
            ..Default::default()
        },
        200.0,
    );
    assert!(two.iter().all(|r| r.gis.len() == 2));
    // Tenants 10 %.
    let t10 = draw(
        &WorkloadSettings {
            job_share: 0.9,
            ..Default::default()
        },
        2000.0,
    );
    let share = t10.iter().filter(|r| r.kind == VmKind::Tenant).count() as f64 / t10.len() as f64;
    assert!(within(share, 0.1, 0.06), "{share}");
    // Larger profiles twice as likely: 3g, 4g and 7g (at least half an A100) get weight 2.
    let big = draw(
        &WorkloadSettings {
            large_profile_weight: 2.0,
            ..Default::default()
        },
        2000.0,
    );
    let m = c.model(a100);
    let gis: Vec<usize> = big
        .iter()
        .flat_map(|r| &r.gis)
        .filter(|g| g.model == a100)
        .map(|g| g.profile)
        .collect();
    let large = gis.iter().filter(|&&p| m.profiles[p].size >= 4).count() as f64 / gis.len() as f64;
    assert!(within(large, 2.0 / 3.0, 0.03), "{large}");
    // A profile mix: only 7g.40gb on A100s.
    let mut s = WorkloadSettings::default();
    s.profile_mix.insert(
        "a100-40gb".into(),
        [("7g.40gb".to_string(), 1.0)].into_iter().collect(),
    );
    let only = draw(&s, 200.0);
    assert!(only
        .iter()
        .flat_map(|r| &r.gis)
        .filter(|g| g.model == a100)
        .all(|g| m.profiles[g.profile].name == "7g.40gb"));
    // The A100 rate drops so that the load stays rho: E[f] = 1.5 x 8 / 8.
    let fleet = paper_fleet();
    let w = Workload::new(&s, &fleet, 0.0).unwrap();
    let r = &w.class_rates()[0];
    assert_eq!(r.model, "a100-40gb");
    assert!(
        (r.per_hour - 0.85 * 192.0 / (8.6 * 1.5)).abs() < 1e-9,
        "{}",
        r.per_hour
    );
}

#[test]
fn one_seed_fixes_every_draw() {
    let s = WorkloadSettings::default();
    assert_eq!(draw(&s, 100.0), draw(&s, 100.0));
    let other = WorkloadSettings { seed: 2, ..s.clone() };
    assert_ne!(draw(&s, 100.0), draw(&other, 100.0));
    // A disabled workload has no arrivals.
    let off = WorkloadSettings {
        enabled: false,
        ..Default::default()
    };
    let fleet = paper_fleet();
    assert_eq!(Workload::new(&off, &fleet, 0.0).unwrap().peek_time(), None);
}
