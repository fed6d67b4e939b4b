//! Unit tests of `workload`.

use super::*;
use crate::catalog::embedded;

/// The paper's fleet of §6.1 (96 hosts with two A100-40GB, 32 with two A30-24GB), as
/// `scenarios/paper-128.toml` ships it.
fn paper_fleet() -> Fleet {
    let src = include_str!("../../scenarios/paper-128.toml");
    crate::scenario::parse(src, "paper-128.toml").unwrap().fleet
}

#[test]
fn rates_match_design_reference() {
    // lambda_A100 = 34.0 rho and lambda_A30 = 8.5 rho per hour.
    let s = WorkloadSettings {
        load: 1.0,
        ..Default::default()
    };
    let g = Synthetic::new(&s, &paper_fleet(), 0.0).unwrap();
    assert_eq!(g.rates.len(), 2);
    assert!((g.rates[0].per_hour - 34.02).abs() < 0.01, "{:?}", g.rates);
    assert!((g.rates[1].per_hour - 8.50).abs() < 0.01, "{:?}", g.rates);
}

#[test]
fn share_mapping_follows_section_6_5() {
    let c = embedded();
    let m = c.model_id("a100-40gb").unwrap();
    let name = |milli| {
        c.model(m).profiles[profile_for_share(c, m, milli).unwrap()]
            .name
            .clone()
    };
    assert_eq!(name(100), "1g.5gb"); // ceil(0.7)=1, ceil(0.8)=1
    assert_eq!(name(130), "1g.10gb"); // 1 compute, ceil(1.04)=2 memory
    assert_eq!(name(150), "2g.10gb"); // ceil(1.05)=2 compute, 2 memory
    assert_eq!(name(460), "4g.20gb"); // ceil(3.22)=4, ceil(3.68)=4
    assert_eq!(name(500), "4g.20gb");
    assert_eq!(name(600), "7g.40gb"); // ceil(4.2)=5 compute
    assert_eq!(name(1000), "7g.40gb");
}
