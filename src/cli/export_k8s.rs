//! `migplan export k8s SCENARIO --out DIR`: the node labels (`labels.sh`), the MIG manager's
//! ConfigMap (`mig-parted-config.yaml`) and per-tenant quotas (`resourcequotas.yaml`) of a
//! scenario (see `ops::k8s_export`). Every YAML document is parsed back before anything is
//! written, the ConfigMap is read back as `migplan import k8s --mig-config` reads it, and each
//! file is written atomically.

use crate::ops::import::k8s;
use crate::ops::k8s_export;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct K8sArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Folder to write the three files into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

pub fn run(a: K8sArgs) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.scenario)?;
    let plan = k8s_export::plan(&s.fleet, &[]);
    let labels = k8s_export::labels_sh(&s.name, &plan);
    let cm = k8s_export::configmap(&s.name, &plan);
    let quotas = k8s_export::resource_quotas(&s);
    let out = |f: &str| a.out.join(f);
    let cm_file = out("mig-parted-config.yaml").display().to_string();
    let q_file = out("resourcequotas.yaml").display().to_string();
    k8s_export::check_yaml(&cm, &cm_file).map_err(anyhow::Error::msg)?;
    k8s_export::check_yaml(&quotas, &q_file).map_err(anyhow::Error::msg)?;
    let back = k8s::parse_mig_parted(&cm, &cm_file).map_err(anyhow::Error::msg)?;
    if let Some((h, l)) = plan.labels.iter().find(|(_, l)| !back.contains_key(l)) {
        anyhow::bail!("{cm_file}: no config `{l}` for node {h} (a bug)");
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", a.out.display()))?;
    crate::scenario::write_atomic(&out("labels.sh"), labels.as_bytes())?;
    crate::scenario::write_atomic(&out("mig-parted-config.yaml"), cm.as_bytes())?;
    crate::scenario::write_atomic(&out("resourcequotas.yaml"), quotas.as_bytes())?;
    println!(
        "Wrote {}: labels.sh ({} node(s)), mig-parted-config.yaml ({} config(s)), resourcequotas.yaml ({} tenant(s))",
        a.out.display(),
        plan.labels.len(),
        plan.configs.len(),
        s.quotas.len()
    );
    Ok(())
}
