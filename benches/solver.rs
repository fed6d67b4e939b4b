//! Call-time distribution of OrigaMIG calls on neighborhoods drawn reproducibly from the paper's
//! workload (§6.2) at load 0.85.
//!
//! The scenario (default `scenarios/paper-128.toml`: the §6.1 data center, 96 hosts with two
//! A100-40GB and 32 with two A30-24GB) is simulated under FF with the workload's load and seed
//! overridden. From 48 h on, every 2 h, the fleet is snapshotted and the calls OrigaMIG would
//! make on it are built with Algorithm 1 (§5.2, `neighborhood::select`, Mmax = 16, Nmax = 64):
//! a consolidation call for each class whose gap Γh (Eq. 17) reaches θ, and an admission call for
//! the next request of a second stream of the same workload that FF cannot place. Each call's
//! restricted BILP is solved with threads = 1 and the paper's 10 s limit.
//!
//! Usage: `cargo bench --bench solver -- [--scenario PATH] [--instances 40] [--seed 1]
//! [--load 0.85] [--limit 10] [--threads 1] [--formulation host|pattern|config|tight|plain] [--presolve]
//! [--opt highs_option=value] [--no-cliques] [--probe] [--only N] [--verbose]`
//!
//! `--probe` prints, per call, the optimum with every active host kept on (phase 1 of a
//! two-phase call), the root LP bound and the LP bound with each active host forced off.

use migplan::fleet::{Fleet, HostId, VmId};
use migplan::policy::origamig::bilp::{self, CallLimit, Formulation, SolveControl, SolveStatus};
use migplan::policy::origamig::neighborhood;
use migplan::policy::origamig::triggers::{self, CallKind, Class};
use migplan::policy_settings::OrigamigSettings;
use migplan::scenario;
use migplan::sim::Simulator;
use migplan::workload::Workload;
use std::path::PathBuf;

struct Args {
    scenario: PathBuf,
    instances: usize,
    seed: u64,
    load: f64,
    limit: f64,
    formulation: Formulation,
    verbose: bool,
    only: Option<usize>,
    probe: bool,
    opts: Vec<(String, String)>,
    presolve: bool,
    rehint: bool,
    threads: u32,
    no_cliques: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        scenario: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-128.toml")),
        instances: 40,
        seed: 1,
        load: 0.85,
        limit: 10.0,
        formulation: Formulation::default(),
        verbose: false,
        only: None,
        probe: false,
        opts: Vec::new(),
        presolve: false,
        rehint: false,
        threads: 1,
        no_cliques: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --all-targets` runs this binary without `--bench` (which `cargo bench`
    // passes): then it is a smoke test of two calls, not the timed distribution.
    if !argv.iter().any(|x| x == "--bench") {
        a.instances = 2;
    }
    let mut i = 0;
    let val = |i: usize| argv.get(i + 1).cloned().unwrap_or_default();
    while i < argv.len() {
        match argv[i].as_str() {
            "--scenario" => a.scenario = PathBuf::from(val(i)),
            "--instances" => a.instances = val(i).parse().expect("--instances N"),
            "--seed" => a.seed = val(i).parse().expect("--seed N"),
            "--load" => a.load = val(i).parse().expect("--load X"),
            "--only" => a.only = Some(val(i).parse().expect("--only N")),
            "--limit" => a.limit = val(i).parse().expect("--limit S"),
            "--formulation" => {
                let name = val(i);
                a.formulation =
                    Formulation::from_name(&name).unwrap_or_else(|| panic!("unknown formulation {name}"));
            }
            "--opt" => {
                let kv = val(i);
                let (k, v) = kv.split_once('=').expect("--opt key=value");
                a.opts.push((k.to_string(), v.to_string()));
            }
            "--threads" => a.threads = val(i).parse().expect("--threads N"),
            "--no-cliques" => {
                a.no_cliques = true;
                i += 1;
                continue;
            }
            "--presolve" => {
                a.presolve = true;
                i += 1;
                continue;
            }
            "--rehint" => {
                a.rehint = true;
                i += 1;
                continue;
            }
            "--probe" => {
                a.probe = true;
                i += 1;
                continue;
            }
            "--verbose" => {
                a.verbose = true;
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

/// One generated call: a fleet state and its Algorithm 1 neighborhood.
struct Instance {
    fleet: Fleet,
    hosts: Vec<HostId>,
    pending: Vec<VmId>,
    at_h: f64,
    kind: String,
}

/// Simulates the scenario under FF and builds the calls described in the module notes.
fn generate(args: &Args, settings: &OrigamigSettings) -> Vec<Instance> {
    let mut sc = scenario::load(&args.scenario).unwrap_or_else(|e| panic!("{e:#}"));
    sc.workload.load = args.load;
    sc.workload.seed = args.seed;
    sc.workload.warmup_h = 48.0;
    sc.workload.measure_h = 4.0 * args.instances as f64;
    let ff = migplan::policy::by_name("ff", &sc.policy).expect("ff policy");
    let mut sim = Simulator::new(&sc, ff).unwrap_or_else(|e| panic!("{e:#}"));
    let t0 = sim.time();
    let mut out = Vec::new();
    let mut k = 0u64;
    while out.len() < args.instances {
        let t = t0 + 3600.0 * (48.0 + 2.0 * k as f64);
        sim.step_until(t).expect("the clock moves forward");
        let fleet = sim.fleet().clone();
        for class in Class::all(&fleet) {
            if triggers::gap(&fleet, &class) < settings.theta.max(1) {
                continue;
            }
            let kind = CallKind::Consolidation(class);
            let nb = neighborhood::select(&fleet, &kind, settings);
            if !nb.is_empty() {
                out.push(Instance {
                    fleet: fleet.clone(),
                    hosts: nb.hosts,
                    pending: Vec::new(),
                    at_h: (t - t0) / 3600.0,
                    kind: kind.to_string(),
                });
            }
        }
        // An admission call: the next request of a second stream that FF cannot place.
        let mut ws = sc.workload.clone();
        ws.seed = args.seed.wrapping_mul(1_000_003).wrapping_add(k + 1);
        let mut stream = Workload::new(&ws, &fleet, t).expect("workload");
        for _ in 0..500 {
            let Some(req) = stream.pop() else { break };
            let vm = req.to_vm(0);
            if fleet.ff_placement(&vm).is_none() {
                let mut f = fleet.clone();
                f.add_pending(vm).expect("a valid request");
                let nb = neighborhood::select(&f, &CallKind::Admission, settings);
                if !nb.is_empty() {
                    out.push(Instance {
                        fleet: f,
                        hosts: nb.hosts,
                        pending: nb.pending,
                        at_h: (t - t0) / 3600.0,
                        kind: "admission".into(),
                    });
                }
                break;
            }
        }
        k += 1;
    }
    out.truncate(args.instances);
    out
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

/// Diagnostics: phase-1 optimum (active hosts kept on), root LP, and the LP with each active
/// host forced off.
fn probe(inst: &Instance, settings: &OrigamigSettings) {
    let active: Vec<HostId> = inst
        .hosts
        .iter()
        .copied()
        .filter(|&h| inst.fleet.hosts[h].is_active())
        .collect();
    let ctl1 = SolveControl {
        limit: CallLimit::Clock,
        fix_hosts: active.iter().map(|&h| (h, true)).collect(),
        ..Default::default()
    };
    let c0 = cpu_s();
    let p1 = bilp::solve_with(&inst.fleet, &inst.hosts, &inst.pending, settings, &ctl1).expect("phase 1");
    println!(
        "  phase1 {} {:.3}s obj {} (start {})",
        p1.status,
        cpu_s() - c0,
        p1.objective,
        p1.start_objective
    );
    let c0 = cpu_s();
    let (root, _) = bilp::lp_relaxation(
        &inst.fleet,
        &inst.hosts,
        &inst.pending,
        settings,
        Formulation::Pattern,
        &[],
    )
    .expect("lp");
    println!("  root LP {root:.2} ({:.3}s)", cpu_s() - c0);
    let mut line = String::from("  LP(off):");
    for &h in &active {
        let pos = inst.hosts.iter().position(|&x| x == h).unwrap();
        let (v, _) = bilp::lp_relaxation(
            &inst.fleet,
            &inst.hosts,
            &inst.pending,
            settings,
            Formulation::Pattern,
            &[(pos, false)],
        )
        .expect("lp");
        line += &format!(" h{h}[{}]:{:.1}", inst.fleet.hosts[h].vms.len(), v);
    }
    println!("{line}");
}

fn main() {
    let args = parse_args();
    let settings = OrigamigSettings {
        time_limit_s: args.limit,
        threads: args.threads,
        ..Default::default()
    };
    let insts = generate(&args, &settings);
    println!(
        "{}: load {}, seed {}, {} calls (Algorithm 1, Mmax {}, Nmax {}), limit {} s, threads {}, {:?}, presolve {}",
        args.scenario.display(),
        args.load,
        args.seed,
        insts.len(),
        settings.m_max,
        settings.n_max,
        args.limit,
        args.threads,
        args.formulation,
        args.presolve
    );
    let ctl = SolveControl {
        limit: CallLimit::Clock,
        formulation: args.formulation,
        verbose: args.verbose,
        presolve: args.presolve,
        highs_options: args.opts.clone(),
        conflict_cliques: !args.no_cliques,
        ..Default::default()
    };
    let (mut times, mut cpus, mut vms) = (Vec::new(), Vec::new(), Vec::new());
    let (mut optimal, mut gains, mut retried) = (0usize, 0usize, 0usize);
    for (n, inst) in insts.iter().enumerate() {
        if args.only.is_some_and(|o| o != n) {
            continue;
        }
        let nvm = inst
            .hosts
            .iter()
            .map(|&h| inst.fleet.hosts[h].vms.len())
            .sum::<usize>()
            + inst.pending.len();
        if args.probe {
            probe(inst, &settings);
        }
        let c0 = cpu_s();
        let out = bilp::solve_with(&inst.fleet, &inst.hosts, &inst.pending, &settings, &ctl)
            .unwrap_or_else(|e| panic!("instance {n}: {e}"));
        let cpu = cpu_s() - c0;
        assert!(out.objective >= out.start_objective);
        if out.status == SolveStatus::Optimal {
            optimal += 1;
        }
        if out.objective > out.start_objective {
            gains += 1;
        }
        if out.presolve_retried {
            retried += 1;
        }
        println!(
            "  #{n:<3} t={:>5.1}h {:<28} hosts={:<2} vms={:<3} {:>10} {:>7.3}s cpu {:>6.2}s obj {:>7} -> {:>7} gap {:.4} rows {} cols {} {}",
            inst.at_h,
            inst.kind,
            inst.hosts.len(),
            nvm,
            out.status.to_string(),
            out.solve_s,
            cpu,
            out.start_objective,
            out.objective,
            out.gap,
            out.rows,
            out.cols,
            out.formulation.name()
        );
        if args.rehint {
            let w = migplan::policy::origamig::objective::Weights::from_settings(&settings);
            let g = migplan::policy::origamig::greedy::start(&inst.fleet, &inst.hosts, &inst.pending, &w);
            println!("       greedy start: {:?}", g.map(|g| g.value));
            // The same call started from the optimum it found: the time left is the proof.
            let c1 = cpu_s();
            let ctl2 = SolveControl {
                hint: Some(out.targets.clone()),
                ..ctl.clone()
            };
            let again = bilp::solve_with(&inst.fleet, &inst.hosts, &inst.pending, &settings, &ctl2)
                .unwrap_or_else(|e| panic!("instance {n}: {e}"));
            println!(
                "       from its optimum: {} in {:.2} s cpu, obj {}",
                again.status,
                cpu_s() - c1,
                again.objective
            );
        }
        times.push(out.solve_s);
        cpus.push(cpu);
        vms.push(nvm);
    }
    times.sort_by(f64::total_cmp);
    cpus.sort_by(f64::total_cmp);
    println!(
        "wall median {:.3} s, p95 {:.3} s, max {:.3} s; cpu median {:.2} s, p95 {:.2} s, max {:.2} s; proven optimal {}/{} ({:.0} %), improved {}, repeated without presolve {}; VMs mean {:.1} max {}",
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
        retried,
        vms.iter().sum::<usize>() as f64 / vms.len().max(1) as f64,
        vms.iter().max().copied().unwrap_or(0)
    );
}
