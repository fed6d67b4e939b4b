//! Configuration-space enumeration (§3) and one explanation with compaction (Fig. 1c).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use migplan::catalog::embedded;
use migplan::explore::{self, Space};

fn bench(c: &mut Criterion) {
    let cat = embedded();
    let a100 = cat.model(cat.model_id("a100-40gb").unwrap());
    c.bench_function("explore_a100_stats", |b| {
        b.iter(|| black_box(Space::enumerate_cf(black_box(a100)).stats()))
    });
    c.bench_function("explore_all_models_stats", |b| {
        b.iter(|| {
            for m in &cat.models {
                black_box(Space::enumerate_cf(m).stats());
            }
        })
    });
    let s = a100.profile("1g.5gb").unwrap();
    let big = a100.profile("3g.20gb").unwrap();
    let gis = [(big, 0), (s, 4), (s, 5), (s, 6)];
    c.bench_function("explain_fig1c", |b| {
        b.iter(|| black_box(explore::explain_gis(a100, black_box(&gis), None, s).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
