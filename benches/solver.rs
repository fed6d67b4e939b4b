//! Call-time distribution of the restricted BILP on neighborhoods drawn reproducibly from the
//! paper's workload (§6.2) at load 0.85.
//!
//! A fleet of H hosts with two A100-40GB GPUs each (80 cores, 512 GB) runs the synthetic workload
//! of DESIGN §4 under FF placement: Poisson arrivals, 70 % jobs (mean 2 h) and 30 % tenants (mean
//! 24 h), exponential lifetimes, one or two GIs with profiles uniform over the paper's A100
//! profiles, 4 cores and 16 GB per compute slice, and lambda = rho |K| / (E[L] E[f]). After a 48 h
//! warm-up, snapshots are taken: a consolidation instance (the whole fleet, no pending VM) every
//! 2 h, and an admission instance (the fleet plus the next request FF cannot place) after each.
//! Each instance is one call over all H hosts: H = 16 is the paper's Mmax.
//!
//! Usage: `cargo bench --bench solver -- [--hosts 16] [--instances 40] [--seed 1]
//! [--load 0.85] [--limit 10] [--formulation config|tight|plain] [--compare] [--verbose]`

use migplan::catalog::{embedded, ModelId};
use migplan::fleet::{Fleet, GiRequest, Host, HostId, Vm, VmId, VmKind};
use migplan::policy::origamig::bilp::{self, Formulation, SolveControl, SolveStatus};
use migplan::scenario::PolicySettings;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use std::collections::BTreeSet;

struct Args {
    hosts: usize,
    instances: usize,
    seed: u64,
    load: f64,
    limit: f64,
    formulation: Formulation,
    compare: bool,
    verbose: bool,
    presolve: bool,
    only: Option<usize>,
    lp: bool,
    opts: Vec<(String, String)>,
    rehint: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        hosts: 16,
        instances: 40,
        seed: 1,
        load: 0.85,
        limit: 10.0,
        formulation: Formulation::default(),
        compare: false,
        verbose: false,
        presolve: false,
        only: None,
        lp: false,
        opts: Vec::new(),
        rehint: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let val = |i: usize| argv.get(i + 1).cloned().unwrap_or_default();
    while i < argv.len() {
        match argv[i].as_str() {
            "--hosts" => a.hosts = val(i).parse().expect("--hosts N"),
            "--instances" => a.instances = val(i).parse().expect("--instances N"),
            "--seed" => a.seed = val(i).parse().expect("--seed N"),
            "--load" => a.load = val(i).parse().expect("--load X"),
            "--only" => a.only = Some(val(i).parse().expect("--only N")),
            "--limit" => a.limit = val(i).parse().expect("--limit S"),
            "--formulation" => {
                a.formulation = match val(i).as_str() {
                    "plain" => Formulation::Plain,
                    "tight" => Formulation::Tight,
                    "config" => Formulation::Config,
                    "pattern" => Formulation::Pattern,
                    other => panic!("unknown formulation {other}"),
                }
            }
            "--compare" => {
                a.compare = true;
                i += 1;
                continue;
            }
            "--verbose" => {
                a.verbose = true;
                i += 1;
                continue;
            }
            "--opt" => {
                let kv = val(i);
                let (k, v) = kv.split_once('=').expect("--opt key=value");
                a.opts.push((k.to_string(), v.to_string()));
            }
            "--rehint" => {
                a.rehint = true;
                i += 1;
                continue;
            }
            "--lp" => {
                a.lp = true;
                i += 1;
                continue;
            }
            "--presolve" => {
                a.presolve = true;
                i += 1;
                continue;
            }
            _ => {
                // `cargo bench` passes `--bench`; ignore unknown flags.
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

/// One generated call: a fleet state and the pending VMs of the call.
struct Instance {
    fleet: Fleet,
    pending: Vec<VmId>,
    at_h: f64,
}

/// The synthetic workload of §6.2 on `hosts` A100 hosts under FF, snapshotted as described above.
fn generate(hosts: usize, count: usize, seed: u64, load: f64) -> Vec<Instance> {
    let c = embedded();
    let a100: ModelId = c.model_id("a100-40gb").expect("catalog has the A100");
    let m = c.model(a100);
    let profiles: Vec<usize> = m.cf_profiles().collect();
    let mean_size = profiles.iter().map(|&p| m.profiles[p].size as f64).sum::<f64>() / profiles.len() as f64;
    let e_f = 1.5 * mean_size / m.memory_slices as f64;
    let e_l = 0.7 * 2.0 + 0.3 * 24.0;
    let lambda = load * (2 * hosts) as f64 / (e_l * e_f); // per hour
    let mut rng = StdRng::seed_from_u64(seed);
    let inter = Exp::new(lambda).expect("positive rate");
    let mut fleet = Fleet::new(
        c,
        (0..hosts)
            .map(|i| Host::new(format!("pm{i}"), 80, 512, vec![a100, a100], 0))
            .collect(),
    );
    let mut departures: Vec<(f64, VmId)> = Vec::new();
    let mut t = 0.0f64;
    let mut out = Vec::new();
    let mut next_snapshot = 48.0;
    let mut want_admission = false;
    let draw = |rng: &mut StdRng, t: f64| -> (Vm, f64) {
        let n = if rng.gen_bool(0.5) { 2 } else { 1 };
        let gis: Vec<GiRequest> = (0..n)
            .map(|_| GiRequest {
                model: a100,
                profile: profiles[rng.gen_range(0..profiles.len())],
            })
            .collect();
        let compute: u32 = gis.iter().map(|g| m.profiles[g.profile].compute as u32).sum();
        let job = rng.gen_bool(0.7);
        let mean = if job { 2.0 } else { 24.0 };
        let life = Exp::new(1.0 / mean).expect("positive").sample(rng);
        (
            Vm {
                id: 0,
                gis,
                cores: 4 * compute,
                ram_gb: 16 * compute,
                kind: if job { VmKind::Job } else { VmKind::Tenant },
                arrival: t,
                lifetime: Some(life * 3600.0),
                admitted_at: None,
                tenant: None,
                placement: None,
            },
            life,
        )
    };
    while out.len() < count {
        t += inter.sample(&mut rng);
        // Departures up to t.
        departures.sort_by(|a, b| b.0.total_cmp(&a.0));
        while departures.last().is_some_and(|d| d.0 <= t) {
            let (_, id) = departures.pop().expect("non-empty");
            fleet.remove(id).expect("departing VM exists");
        }
        if t >= next_snapshot && !want_admission {
            out.push(Instance {
                fleet: fleet.clone(),
                pending: Vec::new(),
                at_h: t,
            });
            next_snapshot += 2.0;
            want_admission = true;
        }
        let (vm, life) = draw(&mut rng, t);
        match fleet.ff_placement(&vm) {
            Some(p) => {
                let id = fleet.add_placed(vm, p).expect("FF placement is valid");
                departures.push((t + life, id));
            }
            None => {
                // FF cannot place it: OrigaMIG would queue it and start an admission call.
                if want_admission && out.len() < count {
                    let mut f = fleet.clone();
                    let id = f.add_pending(vm).expect("valid request");
                    out.push(Instance {
                        fleet: f,
                        pending: vec![id],
                        at_h: t,
                    });
                    want_admission = false;
                }
            }
        }
    }
    out
}

/// Prints each host's VMs and GPU slices.
fn print_state(f: &Fleet) {
    for (h, host) in f.hosts.iter().enumerate() {
        let mut line = format!("pm{h}: cores {}/{}", host.used_cores, host.cores);
        for (k, gpu) in host.gpus.iter().enumerate() {
            let m = f.catalog.model(gpu.model);
            line += &format!(" | gpu{k}:");
            for g in &gpu.gis {
                line += &format!(
                    " vm{}.{}:{}@{}",
                    g.vm, g.index, m.profiles[g.profile].name, g.start
                );
            }
        }
        println!("{line}");
    }
    for &id in f.pending() {
        let vm = f.vm(id).expect("pending VM exists");
        let names: Vec<String> = vm
            .gis
            .iter()
            .map(|g| f.catalog.model(g.model).profiles[g.profile].name.clone())
            .collect();
        println!("pending vm{id}: {names:?}");
    }
}

/// CPU seconds (user + system) of this process so far, from /proc (0 where unavailable). The
/// machine is shared, so CPU time is reported beside wall time.
fn cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesized command name: utime and stime are fields 14 and 15.
    let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i]
}

fn main() {
    let args = parse_args();
    let settings = PolicySettings {
        time_limit_s: args.limit,
        threads: 1,
        ..Default::default()
    };
    let insts = generate(args.hosts, args.instances, args.seed, args.load);
    let forms: Vec<Formulation> = if args.compare {
        vec![Formulation::Tight, Formulation::Config, Formulation::Pattern]
    } else {
        vec![args.formulation]
    };
    println!(
        "{} hosts (2 x A100-40GB), load {}, seed {}, {} instances, limit {} s, threads 1",
        args.hosts,
        args.load,
        args.seed,
        insts.len(),
        args.limit
    );
    for form in forms {
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        let mut optimal = 0;
        let mut vms = Vec::new();
        let mut gains = 0usize;
        let ctl = SolveControl {
            formulation: form,
            verbose: args.verbose,
            presolve: args.presolve,
            highs_options: args.opts.clone(),
            ..Default::default()
        };
        for (n, inst) in insts.iter().enumerate() {
            if args.only.is_some_and(|o| o != n) {
                continue;
            }
            let hosts: Vec<HostId> = (0..inst.fleet.hosts.len()).collect();
            let nvm = inst.fleet.vms().count();
            if args.lp {
                print_state(&inst.fleet);
                let (v, cols) = bilp::lp_relaxation(&inst.fleet, &hosts, &inst.pending, &settings, form, &[])
                    .expect("LP relaxation");
                println!("LP relaxation {v}");
                for (n, x) in cols {
                    println!("  {n} = {x:.4}");
                }
            }
            let c0 = cpu_s();
            let out = bilp::solve_with(&inst.fleet, &hosts, &inst.pending, &settings, &ctl)
                .unwrap_or_else(|e| panic!("instance {n}: {e}"));
            let cpu = cpu_s() - c0;
            if args.rehint {
                // Diagnostics: solve again from the solution found, to time the proof alone.
                let on: BTreeSet<HostId> = out.targets.values().map(|p| p.host).collect();
                let ctl2 = SolveControl {
                    hint: Some(out.targets.clone()),
                    fix_hosts: hosts.iter().map(|&h| (h, on.contains(&h))).collect(),
                    ..ctl.clone()
                };
                let c1 = cpu_s();
                let again = bilp::solve_with(&inst.fleet, &hosts, &inst.pending, &settings, &ctl2)
                    .expect("second solve");
                println!(
                    "  re-solve from the solution: {} {:.3}s cpu {:.2}s obj {}",
                    again.status,
                    again.solve_s,
                    cpu_s() - c1,
                    again.objective
                );
            }
            if args.lp {
                let on: BTreeSet<HostId> = out.targets.values().map(|p| p.host).collect();
                let fix: Vec<(usize, bool)> = hosts.iter().map(|&h| (h, on.contains(&h))).collect();
                let (v, cols) =
                    bilp::lp_relaxation(&inst.fleet, &hosts, &inst.pending, &settings, form, &fix)
                        .expect("LP relaxation");
                for (n, x) in cols.iter().filter(|c| (c.1 - c.1.round()).abs() > 1e-6) {
                    println!("  fixed-phi LP: {n} = {x:.4}");
                }
                println!(
                    "LP with phi fixed to the solution's {:?}: {v}",
                    fix.iter().filter(|f| !f.1).collect::<Vec<_>>()
                );
            }
            assert!(out.objective >= out.start_objective);
            if out.status == SolveStatus::Optimal {
                optimal += 1;
            }
            if out.objective > out.start_objective {
                gains += 1;
            }
            println!(
                "  #{n:<3} t={:>6.1}h vms={:<3} pending={} active={:<2} {:>9} {:>7.3}s cpu {:>6.2}s obj {:>7} -> {:>7} bound {:>9.1} gap {:.4} rows {} cols {}",
                inst.at_h,
                nvm,
                inst.pending.len(),
                inst.fleet.active_hosts(),
                out.status.to_string(),
                out.solve_s,
                cpu,
                out.start_objective,
                out.objective,
                out.bound,
                out.gap,
                out.rows,
                out.cols
            );
            times.push(out.solve_s);
            cpus.push(cpu);
            vms.push(nvm);
        }
        times.sort_by(f64::total_cmp);
        cpus.sort_by(f64::total_cmp);
        let max_vms = vms.iter().max().copied().unwrap_or(0);
        let mean_vms = vms.iter().sum::<usize>() as f64 / vms.len().max(1) as f64;
        println!(
            "{form:?}: wall median {:.3} s, p95 {:.3} s, max {:.3} s; cpu median {:.2} s, p95 {:.2} s, max {:.2} s; proven optimal {}/{} ({:.0} %), improved {} ; VMs mean {:.1} max {}",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            times.last().copied().unwrap_or(f64::NAN),
            percentile(&cpus, 0.5),
            percentile(&cpus, 0.95),
            cpus.last().copied().unwrap_or(f64::NAN),
            optimal,
            times.len(),
            100.0 * optimal as f64 / times.len().max(1) as f64,
            gains,
            mean_vms,
            max_vms
        );
    }
}
