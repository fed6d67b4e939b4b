//! `migplan check-config FILE`: every config of a mig-parted file on every catalog model it
//! applies to: placeable by the slice rules or which profile fails and why, and the compute and
//! memory each leaves unused (docs/operations.md, "Menus from mig-parted files").

use crate::ops::menu_file::{self, Verdict};
use anyhow::Context;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A mig-parted config (`version: v1`, `mig-configs`) or the GPU operator's ConfigMap.
    pub file: PathBuf,
    /// Check only this GPU model (an entry without `device-filter` then applies to it whatever
    /// its profiles).
    #[arg(long = "gpu", value_name = "MODEL")]
    pub gpu: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn gb(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// A row's verdict as both outputs give it, from one match: its JSON fields (`result` and what
/// goes with it) and its table cells (instances, unused compute, unused memory).
fn report(v: &Verdict) -> (Vec<(&'static str, serde_json::Value)>, [String; 3]) {
    match v {
        Verdict::Placeable {
            layout,
            unused_compute,
            unused_memory_slices,
            unused_memory_gb,
            stranded,
        } => {
            let mark = |n: u32| if *stranded && n > 0 { " stranded" } else { "" };
            (
                vec![
                    ("result", json!("placeable")),
                    ("layout", json!(layout)),
                    ("unused_compute_slices", json!(unused_compute)),
                    ("unused_memory_slices", json!(unused_memory_slices)),
                    ("unused_memory_gb", json!(unused_memory_gb)),
                    ("stranded", json!(stranded)),
                ],
                [
                    layout.clone(),
                    format!("{unused_compute}{}", mark(*unused_compute)),
                    format!(
                        "{unused_memory_slices} ({} GB){}",
                        gb(*unused_memory_gb),
                        mark(*unused_memory_slices)
                    ),
                ],
            )
        }
        Verdict::Disabled => (
            vec![("result", json!("mig-disabled"))],
            ["MIG disabled".into(), "-".into(), "-".into()],
        ),
        Verdict::Unplaceable(u) => (
            vec![
                ("result", json!("unplaceable")),
                ("profile", json!(u.profile)),
                ("why", json!(u.why)),
            ],
            [format!("cannot be placed: {}", u.profile), "-".into(), "-".into()],
        ),
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let catalog = crate::catalog::embedded();
    let only = match &a.gpu {
        None => None,
        Some(g) => Some(catalog.model_id(g).with_context(|| {
            format!(
                "--gpu: unknown GPU model `{g}` (known: {})",
                catalog.model_names()
            )
        })?),
    };
    let mf = menu_file::load(&a.file)?;
    let c = menu_file::check(&mf, catalog, only);
    let bad = c.failures().count();
    if a.json {
        let rows: Vec<serde_json::Value> = c
            .rows
            .iter()
            .map(|r| {
                let mut v = json!({
                    "config": r.config, "entry": r.entry, "line": r.line,
                    "model": r.model, "devices": r.devices,
                });
                for (k, x) in report(&r.verdict).0 {
                    v[k] = x;
                }
                v
            })
            .collect();
        let out = json!({
            "file": c.file, "configs": c.configs, "rows": rows,
            "unplaceable": bad, "notes": c.notes,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let placeable = c
            .rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Placeable { .. }))
            .count();
        let disabled = c.rows.iter().filter(|r| r.verdict == Verdict::Disabled).count();
        println!(
            "mig-parted file {}: {} configs; {} checks (config entry x model): {placeable} placeable, {disabled} MIG disabled, {bad} cannot be placed; {} entries skipped",
            c.file,
            c.configs,
            c.rows.len(),
            c.notes.len()
        );
        let mut rows = vec![vec![
            "line".to_string(),
            "config".into(),
            "model".into(),
            "devices".into(),
            "instances".into(),
            "unused compute".into(),
            "unused memory".into(),
        ]];
        for r in &c.rows {
            let [inst, uc, um] = report(&r.verdict).1;
            rows.push(vec![
                r.line.to_string(),
                r.config.clone(),
                r.model.clone(),
                r.devices.clone(),
                inst,
                uc,
                um,
            ]);
        }
        super::print_table(&rows);
        for r in c.failures() {
            if let Verdict::Unplaceable(u) = &r.verdict {
                println!(
                    "{}:{}: config `{}` on {}: {} does not fit: {}",
                    c.file, r.line, r.config, r.model, u.profile, u.why
                );
            }
        }
        for n in &c.notes {
            println!("note: {n}");
        }
    }
    if bad > 0 {
        anyhow::bail!(
            "{}: {bad} config entr{} cannot be placed (listed above)",
            c.file,
            if bad == 1 { "y" } else { "ies" }
        );
    }
    Ok(())
}
