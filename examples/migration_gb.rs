//! What a live migration of each VM of a scenario's synthetic workload copies (GB_i: RAM plus
//! the memory of its GIs, `Vm::migration_gb`), as a distribution over the requests of the warm-up
//! and measured window, and the δ_i that `policy.origamig.delta_per_gb` values give them (§7).
//!
//! `cargo run --release --example migration_gb -- SCENARIO [SEED] [X,X,...]`

use std::collections::BTreeMap;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    anyhow::ensure!(a.len() >= 2, "usage: migration_gb SCENARIO [SEED] [X,X,...]");
    let mut sc = migplan::scenario::load(std::path::Path::new(&a[1]))?;
    if let Some(s) = a.get(2) {
        sc.workload.seed = s.parse()?;
    }
    let xs: Vec<f64> = match a.get(3) {
        Some(s) => s.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![0.05, 0.1, 0.2],
    };
    let end_s = (sc.workload.warmup_h + sc.workload.measure_h) * 3600.0;
    let mut w = migplan::workload::Workload::new(&sc.workload, &sc.fleet, 0.0)?;
    let mut by_gb: BTreeMap<u64, u64> = BTreeMap::new();
    let mut n = 0u64;
    while let Some(t) = w.peek_time() {
        if t > end_s {
            break;
        }
        let Some(r) = w.pop() else { break };
        let gb = r.to_vm(0).migration_gb(sc.fleet.catalog);
        *by_gb.entry(gb.round() as u64).or_default() += 1;
        n += 1;
    }
    println!(
        "{}: seed {}, {n} requests in {} h",
        sc.name,
        sc.workload.seed,
        end_s / 3600.0
    );
    print!("| GB_i | requests | share % |");
    for x in &xs {
        print!(" δ_i at {x} |");
    }
    println!();
    for (gb, k) in &by_gb {
        print!("| {gb} | {k} | {:.1} |", 100.0 * *k as f64 / n as f64);
        for x in &xs {
            print!(" {} |", sc.policy.origamig.delta + (x * *gb as f64).round());
        }
        println!();
    }
    Ok(())
}
