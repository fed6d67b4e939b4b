//! The energy integral on hand-computed cases (§6.3): host power from the SPECpower curve at the
//! core load, GPU power linear in the compute slices in use, idle for an empty GPU of an active
//! host, nothing for an off host.

use migplan::scenario;
use migplan::sim::Simulator;

/// Two A100 hosts; no arrivals; VM 1 (3g.20gb, 12 cores) runs 1.5 h from t = 0 on host a0; VM 2
/// (7g.40gb, 28 cores) runs 2 h from t = 0 on host a1, sharing a1 with nothing else.
const SCENARIO: &str = r#"
name = "energy"
start = "2026-01-01T00:00:00Z"

[[host_group]]
prefix = "a"
count = 3
cores = 80
ram_gb = 512
gpus = ["a100-40gb", "a100-40gb"]

[workload]
enabled = false
warmup_h = 0.5
measure_h = 3

[[vm]]
id = 1
model = "a100-40gb"
profiles = ["3g.20gb"]
cores = 12
ram_gb = 48
lifetime_h = 1.5
host = "a0"
at = ["0@0"]

[[vm]]
id = 2
model = "a100-40gb"
profiles = ["7g.40gb"]
cores = 28
ram_gb = 112
lifetime_h = 2
host = "a1"
at = ["1@0"]
"#;

#[test]
fn energy_integral_matches_hand_computation() {
    let sc = scenario::parse(SCENARIO, "energy.toml").unwrap();
    let policy = migplan::policy::by_name("ff", &sc.policy).unwrap();
    let mut sim = Simulator::new(&sc, policy).unwrap();
    sim.set_check_invariants(true);
    sim.run();
    assert_eq!(sim.time(), 3.5 * 3600.0);
    let m = sim.metrics();
    // Host a0: load 12/80 = 0.15 -> 198 + (226 - 198) / 2 = 212 W; GPU 0 at 3/7 of its compute:
    // 50 + 200 x 3/7; GPU 1 idle 50 W. Measured from 0.5 h to its departure at 1.5 h: 1 h.
    let a0 = 212.0 + 50.0 + 200.0 * 3.0 / 7.0 + 50.0;
    // Host a1: load 28/80 = 0.35 -> 253 + (281 - 253) / 2 = 267 W; GPU 1 full 250 W; GPU 0 idle
    // 50 W. Measured from 0.5 h to 2 h: 1.5 h.
    let a1 = 267.0 + 250.0 + 50.0;
    let wh = a0 * 1.0 + a1 * 1.5;
    assert!(
        (m.energy_mwh - wh / 1e6).abs() < 1e-12,
        "{} vs {}",
        m.energy_mwh,
        wh / 1e6
    );
    // GPU-hours: 3/7 x 1 h + 1 x 1.5 h.
    let gpu_h = 3.0 / 7.0 + 1.5;
    assert!((m.kwh_per_gpu_hour - wh / 1000.0 / gpu_h).abs() < 1e-12);
    // Active hosts over the 3 h window: 2 for 1 h, 1 for 0.5 h, 0 for 1.5 h.
    assert!(
        (m.active_hosts - (2.0 + 0.5) / 3.0).abs() < 1e-12,
        "{}",
        m.active_hosts
    );
    // Active GPUs: 2 of 6 for 1 h, 1 for 0.5 h.
    assert!((m.active_gpus_pct - 100.0 * (2.0 + 0.5) / 3.0 / 6.0).abs() < 1e-9);
    // Packing: 4 + 8 slices on 16 for 1 h, 8 on 8 for 0.5 h.
    assert!((m.packing_pct - 100.0 * (12.0 + 4.0) / (16.0 + 4.0)).abs() < 1e-9);
    assert!((m.mean_power_kw - wh / 3.0 / 1000.0).abs() < 1e-12);
}

#[test]
fn an_off_fleet_draws_nothing() {
    let sc = scenario::parse(
        &SCENARIO
            .replace("lifetime_h = 1.5", "lifetime_h = 0.25")
            .replace("lifetime_h = 2", "lifetime_h = 0.5"),
        "energy.toml",
    )
    .unwrap();
    let mut sim = Simulator::new(&sc, migplan::policy::by_name("ff", &sc.policy).unwrap()).unwrap();
    sim.run();
    let m = sim.metrics();
    // Both VMs left by 0.5 h, when the window opens.
    assert_eq!(m.energy_mwh, 0.0);
    assert_eq!(m.active_hosts, 0.0);
    assert_eq!(sim.power_w(), 0.0);
}
