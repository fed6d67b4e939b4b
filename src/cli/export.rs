//! `migplan export mig-parted SCENARIO [--host ID]`: the current layout of each host as a
//! mig-parted config (see `ops::export`).

use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum Format {
    /// A mig-parted config (`version: v1`, `mig-configs`), one config per host.
    MigParted(MigPartedArgs),
    /// Kubernetes artefacts: node labels, the MIG manager's ConfigMap, ResourceQuotas.
    K8s(super::export_k8s::K8sArgs),
}

#[derive(clap::Args, Debug)]
pub struct MigPartedArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Only this host (its name or its index in the scenario).
    #[arg(long, value_name = "ID")]
    pub host: Option<String>,
}

pub fn run(format: Format) -> anyhow::Result<()> {
    match format {
        Format::MigParted(m) => mig_parted(m),
        Format::K8s(k) => super::export_k8s::run(k),
    }
}

fn mig_parted(a: MigPartedArgs) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.scenario)?;
    let fleet = &s.fleet;
    let hosts: Vec<usize> = match &a.host {
        None => Vec::new(),
        Some(id) => {
            let h = resolve_host(fleet, id, &a.scenario.display().to_string())?;
            if fleet.hosts[h].gpus.is_empty() {
                anyhow::bail!(
                    "--host: host `{}` has no GPUs, so no MIG config",
                    fleet.hosts[h].name
                );
            }
            vec![h]
        }
    };
    print!("{}", crate::ops::export::export(fleet, &s.name, &hosts));
    Ok(())
}

/// The host `id` names in `fleet`: a host name, else an index; the error lists a few names.
pub(super) fn resolve_host(fleet: &crate::fleet::Fleet, id: &str, file: &str) -> anyhow::Result<usize> {
    let h = fleet
        .hosts
        .iter()
        .position(|h| h.name == id)
        .or_else(|| id.parse::<usize>().ok().filter(|&i| i < fleet.hosts.len()));
    let Some(h) = h else {
        let names: Vec<&str> = fleet.hosts.iter().take(8).map(|h| h.name.as_str()).collect();
        let more = if fleet.hosts.len() > 8 { ", ..." } else { "" };
        anyhow::bail!(
            "--host: no host `{id}` in {file} (hosts: {}{more})",
            names.join(", ")
        );
    };
    Ok(h)
}
