//! Real fleets in: a scenario built from what the machines report.
//!
//! - [`nvidia_smi`]: one capture per host (`nvidia-smi --query-gpu ... --format=csv` or
//!   `nvidia-smi -q -x`, then `nvidia-smi mig -lgi`): hosts, GPU models, MIG modes and every GPU
//!   instance at exactly its reported start slice.
//! - [`k8s`]: `kubectl get nodes/pods -o json`: hosts from nodes, VMs from pods with MIG requests,
//!   placements from captures when given, else inferred from each node's layout label.
//!
//! migplan's GPUs are always in MIG mode; a GPU with MIG disabled comes in as a GPU of its model
//! that holds no instance, with a GPU note saying that MIG is off. Instances come in as VMs (one
//! per instance from nvidia-smi, whose owner is unknown: tenant `observed`; one per pod from
//! Kubernetes, tenant = namespace). A scenario is written only after it has been built and
//! loaded back in full, through a temporary file and a rename: on any error nothing is written.

pub mod k8s;
pub mod kube;
pub mod nvidia_smi;
pub mod profiles;
pub mod quantity;
pub mod resourceslices;

use crate::catalog::{embedded, ModelId};
use crate::fleet::{GiRequest, GiSlot, Placement, Vm, VmKind};
use crate::scenario::{self, HostSpec, Scenario, ScenarioFile};
use nvidia_smi::Capture;
use std::path::{Path, PathBuf};

/// The tenant of an instance whose owner the source does not say (nvidia-smi).
pub(crate) const OBSERVED: &str = "observed";

/// A host of a scenario being built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostDef {
    pub name: String,
    pub cores: u32,
    pub ram_gb: u32,
    pub gpus: Vec<ModelId>,
    /// Per GPU ("" for none).
    pub gpu_notes: Vec<String>,
    pub note: Option<String>,
    /// The node's `nvidia.com/mig.config` label (Kubernetes imports).
    pub mig_config: Option<String>,
}

fn spanned<T>(v: T) -> toml::Spanned<T> {
    toml::Spanned::new(0..0, v)
}

/// A scenario with these hosts, no VMs, and synthetic arrivals switched off (an imported fleet
/// stays as it was imported until the user turns them on).
pub(crate) fn empty_scenario(name: &str, description: &str, hosts: &[HostDef]) -> anyhow::Result<Scenario> {
    let catalog = embedded();
    let mut file = ScenarioFile {
        name: Some(name.to_string()),
        description: Some(description.to_string()),
        start: None,
        now_s: None,
        host_groups: Vec::new(),
        hosts: hosts
            .iter()
            .map(|h| HostSpec {
                name: spanned(h.name.clone()),
                cores: h.cores,
                ram_gb: h.ram_gb,
                gpus: h
                    .gpus
                    .iter()
                    .map(|&m| spanned(catalog.model(m).name.clone()))
                    .collect(),
                modes: Vec::new(),
                curve: None,
                note: h.note.clone(),
                gpu_notes: if h.gpu_notes.iter().all(String::is_empty) {
                    Vec::new()
                } else {
                    h.gpu_notes.clone()
                },
                mig_config: h.mig_config.clone(),
            })
            .collect(),
        vms: Vec::new(),
        workload: Default::default(),
        policy: Default::default(),
        quotas: Default::default(),
        regime: None,
    };
    file.workload.enabled = false;
    let text = toml::to_string_pretty(&file)?;
    scenario::parse(&text, name)
}

/// Writes a scenario atomically after checking that its text loads back to the same fleet.
pub(crate) fn save_checked(s: &Scenario, out: &Path) -> anyhow::Result<()> {
    let text = s.to_toml()?;
    let back = scenario::parse(&text, &out.display().to_string())?;
    if back.fleet.hosts.len() != s.fleet.hosts.len() || back.fleet.vms().count() != s.fleet.vms().count() {
        anyhow::bail!(
            "{}: the scenario does not load back to the imported fleet",
            out.display()
        );
    }
    scenario::write_atomic(out, text.as_bytes())
}

/// The files named: a directory stands for its non-hidden files, by name.
pub(crate) fn files_of(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd =
                std::fs::read_dir(p).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?;
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file())
                .filter(|f| {
                    f.file_name()
                        .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
                })
                .collect();
            v.sort();
            if v.is_empty() {
                anyhow::bail!("{}: no capture files in this folder", p.display());
            }
            out.extend(v);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Reads and checks the captures of `paths` (files or folders); host names must be unique.
pub(crate) fn read_captures(paths: &[PathBuf]) -> anyhow::Result<Vec<Capture>> {
    let mut caps: Vec<Capture> = Vec::new();
    for f in files_of(paths)? {
        let file = f.display().to_string();
        let text = crate::fsutil::read_text(&f)?;
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let c = nvidia_smi::parse(&text, &file, &stem, embedded())?;
        if let Some(o) = caps.iter().find(|o| o.host == c.host) {
            anyhow::bail!("{file}: host `{}` is also captured in {}", c.host, o.file);
        }
        caps.push(c);
    }
    Ok(caps)
}

/// The host of a capture; cores and RAM from the capture, else from `cores`/`ram_gb`.
pub(crate) fn host_of_capture(
    c: &Capture,
    cores: Option<u32>,
    ram_gb: Option<u32>,
) -> anyhow::Result<HostDef> {
    let Some(cores) = c.cores.or(cores) else {
        anyhow::bail!(
            "{}: cores: no `nproc` line in the capture and no --cores given",
            c.file
        );
    };
    let Some(ram_gb) = c.ram_gb.or(ram_gb) else {
        anyhow::bail!(
            "{}: RAM: no `free -g` line in the capture and no --ram-gb given",
            c.file
        );
    };
    Ok(HostDef {
        name: c.host.clone(),
        cores,
        ram_gb,
        gpus: c.gpus.iter().map(|g| g.model).collect(),
        gpu_notes: c
            .gpus
            .iter()
            .map(|g| {
                if g.mig_enabled {
                    String::new()
                } else {
                    format!("MIG disabled on this {} (whole GPU)", g.product)
                }
            })
            .collect(),
        note: None,
        mig_config: None,
    })
}

/// Cores and RAM an instance of `compute` compute slices is charged on a host: its share of the
/// host's GPU compute slices (nvidia-smi does not say what its owner uses), rounded down.
pub(crate) fn share_of_host(h: &HostDef, compute: u32) -> (u32, u32) {
    let catalog = embedded();
    let total: u32 = h
        .gpus
        .iter()
        .map(|&m| catalog.model(m).compute_slices as u32)
        .sum();
    if total == 0 {
        return (0, 0);
    }
    (
        (h.cores as u64 * compute as u64 / total as u64) as u32,
        (h.ram_gb as u64 * compute as u64 / total as u64) as u32,
    )
}

/// What an import produced (hosts, GPUs, GPUs without MIG, instances), for its summary line
/// and `--json`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct ImportCounts {
    pub hosts: usize,
    pub gpus: usize,
    pub mig_disabled: usize,
    pub instances: usize,
}

/// The scenario of a set of nvidia-smi captures: one host per capture, one VM of tenant
/// [`OBSERVED`] per instance at exactly its start slice (VM ids by host, GPU and start).
pub(crate) fn from_nvidia_smi(
    paths: &[PathBuf],
    cores: Option<u32>,
    ram_gb: Option<u32>,
    name: &str,
) -> anyhow::Result<(Scenario, ImportCounts)> {
    let caps = read_captures(paths)?;
    if caps.is_empty() {
        anyhow::bail!("no capture given");
    }
    let hosts = caps
        .iter()
        .map(|c| host_of_capture(c, cores, ram_gb))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut s = empty_scenario(
        name,
        "Imported from nvidia-smi captures: one VM (tenant `observed`) per GPU instance, at its reported start slice.",
        &hosts,
    )?;
    let catalog = embedded();
    let mut sum = ImportCounts {
        hosts: caps.len(),
        ..ImportCounts::default()
    };
    for (h, c) in caps.iter().enumerate() {
        for (k, g) in c.gpus.iter().enumerate() {
            sum.gpus += 1;
            sum.mig_disabled += usize::from(!g.mig_enabled);
            for gi in &g.gis {
                let compute = catalog.model(g.model).profiles[gi.profile].compute as u32;
                let (vc, vr) = share_of_host(&hosts[h], compute);
                let vm = Vm {
                    kind: VmKind::Tenant,
                    tenant: Some(OBSERVED.to_string()),
                    admitted_at: Some(0.0),
                    ..Vm::job(
                        0,
                        vec![GiRequest {
                            model: g.model,
                            profile: gi.profile,
                        }],
                        vc,
                        vr,
                    )
                };
                let placement = Placement {
                    host: h,
                    gis: vec![GiSlot {
                        gpu: k,
                        start: gi.start,
                    }],
                };
                s.fleet
                    .add_placed(vm, placement)
                    .map_err(|e| anyhow::anyhow!("{}:{}: instance {}: {e}", c.file, gi.line, gi.gi_id))?;
                sum.instances += 1;
            }
        }
    }
    Ok((s, sum))
}
