//! Where a policy's migrations come from: the moves of the measurement window, by the origin of
//! the plan that made them (TC compaction, OrigaMIG admission or consolidation call), between
//! hosts or within one, and how many VMs a plan moved twice; how many moves leave their host empty
//! (the host is off once the plan has run) and how many come from hosts that stay on; how many
//! VMs more than one plan moved. With `SHOW=1` in the environment it prints every plan that moves
//! a VM off a host that stays on (VM, profiles, from -> final host).
//!
//! `cargo run --release --example migration_breakdown -- SCENARIO POLICY LOAD WARMUP_H HOURS [SEED]`

use migplan::policy;
use migplan::sim::{EventKind, Simulator};
use std::collections::BTreeMap;

fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        a.len() >= 6,
        "usage: migration_breakdown SCENARIO POLICY LOAD WARMUP_H HOURS [SEED]"
    );
    let path = std::path::PathBuf::from(&a[1]);
    let pol = &a[2];
    let load: f64 = a[3].parse()?;
    let warm: f64 = a[4].parse()?;
    let hours: f64 = a[5].parse()?;
    let seed: u64 = match a.get(6) {
        Some(s) => s.parse()?,
        None => 1,
    };
    let mut sc = migplan::scenario::load(&path)?;
    sc.workload.load = load;
    sc.workload.warmup_h = warm;
    sc.workload.measure_h = hours;
    sc.workload.seed = seed;
    let p = policy::by_name(pol, &sc.policy)?;
    let mut sim = Simulator::new(&sc, p)?;
    let (ws, we) = sim.window();
    let mut seen = sim.events_total();
    let mut pending: Vec<(bool, u32, usize)> = Vec::new();
    // moves whose source host the plan left empty, and the others
    let (mut emptying, mut other) = (0u64, 0u64);
    // plans that moved each VM (measured window)
    let mut plans_per_vm: BTreeMap<u32, u32> = BTreeMap::new();
    // origin -> (plans, across, within, vms moved more than once)
    let mut by: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    let mut t = 0.0;
    while t < we {
        t = (t + 10.0).min(we);
        sim.step_until(t).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let total = sim.events_total();
        let ev = sim.events();
        let new = (total - seen) as usize;
        anyhow::ensure!(new <= ev.len(), "the event log dropped events: step more often");
        for e in &ev[ev.len() - new..] {
            match &e.kind {
                EventKind::Migration { vm, from, to, .. } => {
                    pending.push((from != to, *vm as u32, *from));
                }
                EventKind::Plan { origin, .. } => {
                    if e.t >= ws {
                        let o = origin.split(" of ").next().unwrap_or("").to_string();
                        let ent = by.entry(o).or_default();
                        ent.0 += 1;
                        let mut ids: Vec<u32> = pending.iter().map(|p| p.1).collect();
                        ids.sort();
                        let n = ids.len();
                        ids.dedup();
                        ent.3 += (n - ids.len()) as u64;
                        for id in &ids {
                            *plans_per_vm.entry(*id).or_default() += 1;
                        }
                        let mut line = String::new();
                        let mut has_other = false;
                        for &(_, vm, from) in &pending {
                            let f = sim.fleet();
                            let stays = !f.hosts[from].vms.is_empty();
                            if stays {
                                other += 1;
                                has_other = true;
                            } else {
                                emptying += 1
                            }
                            let v = f.vm(vm as u64);
                            let gis: Vec<String> = v
                                .map(|v| {
                                    v.gis
                                        .iter()
                                        .map(|g| f.catalog.model(g.model).profiles[g.profile].name.clone())
                                        .collect()
                                })
                                .unwrap_or_default();
                            let to = v
                                .and_then(|v| v.placement.as_ref())
                                .map(|p| p.host)
                                .unwrap_or(usize::MAX);
                            line += &format!(
                                " vm{vm}[{}] {from}->{to}{};",
                                gis.join("+"),
                                if stays { "(stays)" } else { "" }
                            );
                        }
                        if has_other && std::env::var("SHOW").is_ok() {
                            println!("t={:.0} {origin}:{line}", e.t);
                        }
                        for (across, _, _) in &pending {
                            if *across {
                                ent.1 += 1
                            } else {
                                ent.2 += 1
                            }
                        }
                    }
                    pending.clear();
                }
                _ => {}
            }
        }
        seen = total;
    }
    let m = sim.metrics();
    println!(
        "{pol} load {load}: migrations/h {:.2} calls/h {:.2} active hosts {:.2}",
        m.migrations_per_h, m.calls_per_h, m.active_hosts
    );
    let again = plans_per_vm.values().filter(|&&n| n > 1).count();
    println!(
        "  VMs moved {}, {again} of them by more than one plan ({} moves by plans after their first)",
        plans_per_vm.len(),
        plans_per_vm.values().map(|&n| n.saturating_sub(1)).sum::<u32>()
    );
    println!("  moves from a host the plan left empty {emptying}, from hosts that stay on {other}");
    for (o, (plans, ac, wi, rep)) in &by {
        println!(
            "  {o:<16} plans {plans:>5}  across {ac:>5}  within {wi:>5}  repeat-moves {rep}  per-h {:.2}",
            (ac + wi) as f64 / hours
        );
    }
    Ok(())
}
