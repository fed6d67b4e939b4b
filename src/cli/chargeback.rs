//! `migplan chargeback SCENARIO`: GPU-hours per tenant by the chargeback rule (docs/operations.md)
//! (weight = max(compute share, memory share), normalized per GPU; see `ops::chargeback`).

use crate::ops::chargeback::{self, Bill};
use serde_json::json;
use std::path::PathBuf;

/// The billing period of the chargeback rule (docs/operations.md): a 730-hour month.
const MONTH_H: f64 = 730.0;
/// Longest period `--hours` simulates.
const MAX_HOURS: f64 = 8760.0;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Bill the next H hours of a simulation from the current state (the scenario's workload
    /// and arrival policy; VMs leave at the end of their lifetimes); without it, the current
    /// state is billed for a 730-hour month.
    #[arg(long, value_name = "H", allow_negative_numbers = true)]
    pub hours: Option<f64>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.scenario)?;
    crate::sim::admission::validate(&s.quotas, s.fleet.catalog)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.scenario.display()))?;
    if let Some(h) = a.hours {
        if !(h > 0.0 && h.is_finite()) {
            anyhow::bail!("--hours: `{h}` is not a positive number of hours");
        }
        // The simulation advances in 10 s steps: a year is 3.2 million of them.
        if h > MAX_HOURS {
            anyhow::bail!("--hours: `{h}` is more than a year ({MAX_HOURS} hours)");
        }
    }
    let (bill, source) = match a.hours {
        None => {
            let mut b = Bill::default();
            b.accrue(&s.fleet, MONTH_H);
            (b, "current state held for a 730-hour month")
        }
        Some(h) => {
            let policy = crate::policy::build(s.policy.arrival, &s.policy)?;
            let mut sim = crate::sim::Simulator::new(&s, policy)?;
            let bill = chargeback::bill_simulation(&mut sim, h)?;
            let source = if s.workload.enabled {
                "simulated from the current state with the scenario's workload and policy"
            } else {
                "simulated from the current state; VMs leave at the end of their lifetimes, no arrivals"
            };
            (bill, source)
        }
    };
    let charges = chargeback::instance_charges(&s.fleet);
    if a.json {
        let out = json!({
            "scenario": s.name,
            "hours": bill.hours,
            "source": source,
            "tenants": bill.tenants,
            "idle_gpu_hours": bill.idle_gpu_hours,
            "total_gpu_hours": bill.total_gpu_hours,
            "instances": charges.iter().map(|c| json!({
                "vm": c.vm,
                "tenant": c.tenant,
                "host": s.fleet.hosts[c.host].name,
                "gpu": c.gpu,
                "profile": c.profile,
                "raw": c.raw,
                "weight": c.weight,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!("Chargeback for {}: {} h, {source}", s.name, fmt_num(bill.hours));
    println!(
        "weight of an instance = max(compute share, memory share) / sum of those over its GPU's instances"
    );
    println!();
    let mut rows = vec![vec![
        "host".to_string(),
        "gpu".into(),
        "vm".into(),
        "profile".into(),
        "tenant".into(),
        "raw".into(),
        "weight".into(),
    ]];
    for c in &charges {
        rows.push(vec![
            s.fleet.hosts[c.host].name.clone(),
            c.gpu.to_string(),
            c.vm.to_string(),
            c.profile.clone(),
            c.tenant.clone(),
            format!("{:.3}", c.raw),
            format!("{:.3}", c.weight),
        ]);
    }
    super::print_table(&rows);
    println!();
    let mut rows = vec![vec!["tenant".to_string(), "GPU-hours".into(), "share".into()]];
    let total = bill.total_gpu_hours.max(f64::MIN_POSITIVE);
    for (t, gh) in &bill.tenants {
        rows.push(vec![
            t.clone(),
            format!("{gh:.1}"),
            format!("{:.1} %", 100.0 * gh / total),
        ]);
    }
    rows.push(vec![
        "(idle GPUs)".into(),
        format!("{:.1}", bill.idle_gpu_hours),
        format!("{:.1} %", 100.0 * bill.idle_gpu_hours / total),
    ]);
    rows.push(vec![
        "total".into(),
        format!("{:.1}", bill.total_gpu_hours),
        "100.0 %".into(),
    ]);
    super::print_table(&rows);
    Ok(())
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}
