//! `migplan explore --gpu MODEL [--json]`: the configuration-space statistics of §3 for one GPU
//! model (or `all`).

use crate::catalog::{embedded, GpuModel};
use crate::explore::{Space, SpaceStats};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// GPU model (e.g. a100-40gb), or `all` for every model of the catalog.
    #[arg(long, default_value = "a100-40gb")]
    pub gpu: String,
    /// Include the +me (media extension) profiles in the space and in CF (the paper leaves them out).
    #[arg(long)]
    pub media_ext: bool,
    /// Print JSON (an object for one model, an array for `all`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let catalog = embedded();
    // The configuration space is that of MIG: `all` means every model with MIG.
    let models: Vec<&GpuModel> = if a.gpu.eq_ignore_ascii_case("all") {
        catalog.models.iter().filter(|m| m.mig).collect()
    } else {
        let id = catalog.model_id(&a.gpu).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown GPU model `{}`; known models: {}, all",
                a.gpu,
                catalog.model_names()
            )
        })?;
        let m = catalog.model(id);
        if !m.mig {
            anyhow::bail!(
                "--gpu: {} has no MIG, so no configuration space (its GPUs are whole or shared)",
                m.name
            );
        }
        vec![m]
    };
    let stats: Vec<SpaceStats> = models
        .iter()
        .map(|m| {
            if a.media_ext {
                Space::enumerate_all(m).stats()
            } else {
                Space::enumerate_cf(m).stats()
            }
        })
        .collect();
    if a.json {
        let v = if stats.len() == 1 && !a.gpu.eq_ignore_ascii_case("all") {
            serde_json::to_value(&stats[0])?
        } else {
            serde_json::to_value(&stats)?
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", table(&stats));
    }
    Ok(())
}

fn pct(n: usize, of: usize) -> String {
    if of == 0 {
        format!("{n}")
    } else {
        format!("{n} ({:.0}%)", 100.0 * n as f64 / of as f64)
    }
}

/// The human table: one row per model.
pub fn table(stats: &[SpaceStats]) -> String {
    let header = [
        "model",
        "CF(empty)",
        "configurations",
        "terminal",
        "suboptimal",
        "default-reached",
        "default-suboptimal",
    ];
    let rows: Vec<[String; 7]> = stats
        .iter()
        .map(|s| {
            [
                s.model.clone(),
                s.cf_empty.to_string(),
                s.configurations.to_string(),
                s.terminal.to_string(),
                pct(s.suboptimal, s.configurations),
                pct(s.default_reached, s.configurations),
                pct(s.default_suboptimal, s.default_reached),
            ]
        })
        .collect();
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{c:<width$}", width = w[0]));
            } else {
                s.push_str(&format!("  {c:>width$}", width = w[i]));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}
