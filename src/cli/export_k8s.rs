//! `migplan export k8s SCENARIO --out DIR` and `migplan export k8s PLAN.json --fleet SCENARIO
//! --out DIR`: the node labels (`labels.sh`), the MIG manager's ConfigMap
//! (`mig-parted-config.yaml`) and per-tenant quotas (`resourcequotas.yaml`) of a scenario as it
//! is, or of a scenario once a layout plan of `migplan layout --json` is put on its GPUs (see
//! `ops::k8s_export`). A file whose text starts with `{` is a layout plan. Every YAML document is
//! parsed back before anything is written, the ConfigMap is read back as `migplan import k8s
//! --mig-config` reads it, and each file is written atomically.

use crate::ops::k8s_export::{self, ExportError};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct K8sArgs {
    /// Scenario file (TOML), or a layout plan written by `migplan layout --json`.
    pub input: PathBuf,
    /// With a layout plan: the scenario whose GPUs of the plan's model take its layouts, in host
    /// order and GPU index (the others keep theirs).
    #[arg(long, value_name = "FILE")]
    pub fleet: Option<PathBuf>,
    /// With a layout plan written with `--exact`: take the exact planner's layouts.
    #[arg(long)]
    pub exact: bool,
    /// Folder to write the three files into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(a: K8sArgs) -> anyhow::Result<()> {
    let input = a.input.display().to_string();
    let text = crate::fsutil::read_text(&a.input)?;
    if text.trim().is_empty() {
        anyhow::bail!(
            "{input}: the file is empty: expected a scenario (TOML) or a layout plan (JSON of `migplan layout --json`)"
        );
    }
    let is_plan = text.trim_start().starts_with('{');
    let (s, plan, note) = if is_plan {
        let Some(fleet) = &a.fleet else {
            anyhow::bail!(
                "--fleet: {input} is a layout plan: name the scenario whose GPUs take it (--fleet FILE)"
            );
        };
        let s = crate::scenario::load(fleet)?;
        let v = crate::fleet_import::kube::parse_json(&text, &input)?;
        let on = k8s_export::plan_on_fleet(&s.fleet, &v, &input, a.exact)?;
        let note = format!(
            "; layout plan {input}: {} of {} {} GPU(s) of {} configured",
            on.planned,
            on.of_model,
            s.fleet.catalog.model(on.model).name,
            fleet.display()
        );
        let plan = k8s_export::plan_of(&s.fleet, on.hosts);
        (s, plan, note)
    } else {
        if a.fleet.is_some() || a.exact {
            anyhow::bail!("--fleet/--exact: {input} is a scenario, not a layout plan (JSON)");
        }
        let s = crate::scenario::load(&a.input)?;
        let plan = k8s_export::plan(&s.fleet, &[]);
        (s, plan, String::new())
    };
    let labels = k8s_export::labels_sh(&s.name, &plan);
    let cm = k8s_export::configmap(&s.name, &plan);
    let quotas = k8s_export::resource_quotas(&s);
    let out = |f: &str| a.out.join(f);
    let cm_file = out("mig-parted-config.yaml").display().to_string();
    let q_file = out("resourcequotas.yaml").display().to_string();
    k8s_export::check_yaml(&cm, &cm_file)?;
    k8s_export::check_yaml(&quotas, &q_file)?;
    let back = crate::ops::mig_parted::parse(&cm, &cm_file)?;
    if let Some((h, l)) = plan.labels.iter().find(|(_, l)| !back.contains_key(l)) {
        return Err(ExportError::MissingConfig {
            file: cm_file,
            label: l.clone(),
            node: h.clone(),
        }
        .into());
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", a.out.display()))?;
    crate::scenario::write_atomic(&out("labels.sh"), labels.as_bytes())?;
    crate::scenario::write_atomic(&out("mig-parted-config.yaml"), cm.as_bytes())?;
    crate::scenario::write_atomic(&out("resourcequotas.yaml"), quotas.as_bytes())?;
    println!(
        "Wrote {}: labels.sh ({} node(s)), mig-parted-config.yaml ({} config(s)), resourcequotas.yaml ({} tenant(s)){note}",
        a.out.display(),
        plan.labels.len(),
        plan.configs.len(),
        s.quotas.len()
    );
    Ok(())
}
