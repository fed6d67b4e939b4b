//! Simulation throughput: FF, MFI and TC on `scenarios/paper-128.toml` (128 hosts, 48 h warm-up
//! plus 72 h measured, load 0.85, seed 1), one whole run per iteration. The target is FF under
//! 1 s in release, MFI and TC within a few seconds.
//!
//! Usage: `cargo bench --bench sim` (criterion; a few samples per policy, since a run takes
//! about a second).

use criterion::{criterion_group, criterion_main, Criterion};
use migplan::scenario;
use migplan::sim::Simulator;
use std::time::Duration;

fn paper128() -> scenario::Scenario {
    scenario::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/paper-128.toml"
    )))
    .expect("scenarios/paper-128.toml loads")
}

fn runs(c: &mut Criterion) {
    let sc = paper128();
    let mut group = c.benchmark_group("paper-128 48h+72h load 0.85");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.warm_up_time(Duration::from_secs(1));
    for name in ["ff", "mfi", "tc"] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let policy = migplan::policy::by_name(name, &sc.policy).expect("known policy");
                let mut sim = Simulator::new(&sc, policy).expect("valid scenario");
                sim.run();
                sim.metrics().acceptance_pct
            })
        });
    }
    group.finish();
}

criterion_group!(benches, runs);
criterion_main!(benches);
