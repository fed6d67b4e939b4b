//! `migplan layout`: plan which verified layout each GPU of one model gets for a demand of
//! instances per profile (docs/operations.md), with the greedy planner and, on request, the exact one.

use crate::ops::layout_planner::{self, ExactSettings, LayoutPlan, PlanError};
use crate::ops::layouts::{self, Layout};
use anyhow::Context;
use serde_json::json;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// GPU model (e.g. h100-80gb).
    #[arg(long = "gpu", value_name = "MODEL")]
    pub gpu: String,
    /// Instances wanted per profile: PROFILE=N[,PROFILE=N...].
    #[arg(long, value_name = "PROFILE=N,...")]
    pub demand: String,
    /// GPUs available.
    #[arg(long, value_name = "N")]
    pub gpus: u32,
    /// Also run the exact planner (fewest GPUs, any placeable layout) and show both side by side.
    #[arg(long)]
    pub exact: bool,
    /// Layouts the greedy planner may use: `all` (every layout of the model on file), a
    /// comma-separated list of names, or a mig-parted config file (`.yaml`/`.yml`: every config
    /// that applies to the model and can be placed); default: the model's menu in
    /// assets/layouts.toml.
    #[arg(long, value_name = "NAMES")]
    pub menu: Option<String>,
    /// Time limit of the exact planner in seconds.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub time_limit: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Instances per profile name (profiles with none left out).
fn instances_by_name(
    model: &crate::catalog::GpuModel,
    counts: &[u32],
) -> std::collections::BTreeMap<String, u32> {
    crate::ops::k8s_export::GpuConfig::of_counts(model, true, counts)
        .devices
        .into_iter()
        .collect()
}

fn plan_json(model: &crate::catalog::GpuModel, plan: &Result<LayoutPlan, PlanError>) -> serde_json::Value {
    match plan {
        Ok(p) => {
            let mut v = json!({
                "planner": p.planner,
                "layouts": p.names(),
                "gpu_layouts": p.gpus.iter().map(|g| json!({
                    "layout": g.name,
                    "instances": instances_by_name(model, &g.counts),
                })).collect::<Vec<_>>(),
                "gpus_used": p.gpus_used(),
                "idle": p.idle_by_name(model),
                "idle_compute_slices": p.idle_compute(model),
            });
            if p.planner == layout_planner::Planner::Exact {
                v["optimal"] = json!(p.proven_optimal);
            }
            v
        }
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// Whether a `--menu` value names a mig-parted file rather than layouts.
pub(crate) fn is_menu_file(m: &str) -> bool {
    m.ends_with(".yaml") || m.ends_with(".yml") || m.contains('/')
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let catalog = crate::catalog::embedded();
    let menu = layouts::embedded();
    let mid = catalog.model_id(&a.gpu).with_context(|| {
        format!(
            "--gpu: unknown GPU model `{}` (known: {})",
            a.gpu,
            catalog.model_names()
        )
    })?;
    let model = catalog.model(mid);
    let demand = layout_planner::parse_demand(model, &a.demand).context("--demand")?;
    if !(a.time_limit > 0.0 && a.time_limit.is_finite()) {
        anyhow::bail!(
            "--time-limit: `{}` is not a positive number of seconds",
            a.time_limit
        );
    }
    // A menu file: the layouts a mig-parted config offers for the model.
    let from_file: Vec<Layout> = match a.menu.as_deref() {
        Some(m) if is_menu_file(m) => {
            let mf = crate::ops::menu_file::load(std::path::Path::new(m)).context("--menu")?;
            let ls = mf.layouts_for(catalog, mid);
            if ls.is_empty() {
                anyhow::bail!(
                    "--menu: {m}: no config of the file applies to {} and can be placed (see `migplan check-config {m}`)",
                    model.name
                );
            }
            ls
        }
        _ => Vec::new(),
    };
    let choices: Vec<&Layout> = match a.menu.as_deref() {
        _ if !from_file.is_empty() => from_file.iter().collect(),
        None => menu.planner_menu(mid),
        Some("all") => menu.for_model(mid).collect(),
        Some(list) => list
            .split(',')
            .map(|n| {
                let n = n.trim();
                menu.get(mid, n).ok_or_else(|| {
                    let known: Vec<&str> = menu.for_model(mid).map(|l| l.name.as_str()).collect();
                    anyhow::anyhow!(
                        "--menu: no layout `{n}` for {} (known: {})",
                        model.name,
                        known.join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?,
    };
    let greedy = layout_planner::greedy(mid, model, &choices, &demand, a.gpus);
    let exact = a.exact.then(|| {
        layout_planner::exact(
            menu,
            mid,
            model,
            &demand,
            a.gpus,
            ExactSettings {
                time_limit_s: a.time_limit,
                threads: 1,
            },
        )
    });
    // Without --exact a greedy failure is the command's failure; with it, the failure is shown
    // beside the exact plan, and the command fails only when both fail.
    match (&greedy, &exact) {
        (Err(e), None) => anyhow::bail!("{e}"),
        (Err(e), Some(Err(x))) => anyhow::bail!("greedy: {e}; exact: {x}"),
        _ => {}
    }
    let demand_text = layouts::describe_counts(model, &demand);
    if a.json {
        let mut obj = serde_json::Map::new();
        obj.insert("gpu".into(), json!(model.name));
        obj.insert("gpus".into(), json!(a.gpus));
        obj.insert("demand".into(), json!(instances_by_name(model, &demand)));
        if let serde_json::Value::Object(g) = plan_json(model, &greedy) {
            obj.extend(g);
        }
        if let Some(x) = &exact {
            obj.insert("exact".into(), plan_json(model, x));
        }
        println!("{}", serde_json::to_string_pretty(&obj)?);
        return Ok(());
    }
    println!(
        "Layout plan for {} x {}: demand {} ({} compute slices)",
        a.gpus,
        model.name,
        demand_text,
        layouts::compute_of(model, &demand)
    );
    print_plans(model, a.gpus, &greedy, &exact);
    Ok(())
}

/// The greedy plan, and the exact one with --exact, side by side: each GPU's layout, the GPUs
/// used, the instances left idle and the solver's status.
fn print_plans(
    model: &crate::catalog::GpuModel,
    gpus: u32,
    greedy: &Result<LayoutPlan, PlanError>,
    exact: &Option<Result<LayoutPlan, PlanError>>,
) {
    let mut columns: Vec<(&str, &Result<LayoutPlan, PlanError>)> = vec![("greedy (menu)", greedy)];
    if let Some(x) = exact {
        columns.push(("exact (any placeable layout)", x));
    }
    let cell = |plan: &Result<LayoutPlan, PlanError>, gpu: usize| -> String {
        match plan {
            Ok(p) => match p.gpus.get(gpu) {
                Some(g) => format!("{} ({})", g.name, layouts::describe_counts(model, &g.counts)),
                None => "(free)".into(),
            },
            Err(_) if gpu == 0 => "(no plan)".into(),
            Err(_) => String::new(),
        }
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    rows.push(
        std::iter::once("GPU".to_string())
            .chain(columns.iter().map(|(t, _)| t.to_string()))
            .collect(),
    );
    for k in 0..gpus as usize {
        rows.push(
            std::iter::once(k.to_string())
                .chain(columns.iter().map(|(_, p)| cell(p, k)))
                .collect(),
        );
    }
    rows.push(
        std::iter::once("GPUs used".to_string())
            .chain(columns.iter().map(|(_, p)| match p {
                Ok(p) => format!("{} of {}", p.gpus_used(), gpus),
                Err(e) => e.to_string(),
            }))
            .collect(),
    );
    rows.push(
        std::iter::once("idle".to_string())
            .chain(columns.iter().map(|(_, p)| match p {
                Ok(p) if p.idle.iter().all(|&n| n == 0) => "none".into(),
                Ok(p) => {
                    let c = p.idle_compute(model);
                    let s = if c == 1 { "" } else { "s" };
                    format!(
                        "{} ({c} compute slice{s})",
                        layouts::describe_counts(model, &p.idle)
                    )
                }
                Err(_) => String::new(),
            }))
            .collect(),
    );
    if let Some(Ok(x)) = exact {
        let status = if x.proven_optimal {
            "HiGHS: optimal"
        } else {
            "HiGHS: time limit, not proven optimal"
        };
        rows.push(vec!["solver".into(), String::new(), status.into()]);
    }
    super::print_table(&rows);
}
