//! Kubernetes artefacts from a scenario: what an operator applies to carry a plan out.
//!
//! - `labels.sh`: one `kubectl label node <host> nvidia.com/mig.config=<layout> --overwrite` per
//!   host with GPUs. A host whose GPUs all hold one layout of the layouts menu is labelled with
//!   its name (`all-balanced`); when that name is used on hosts of two GPU models it becomes
//!   `<layout>-<model>`, since one mig-parted config name holds one set of devices. Any other host
//!   gets its own config, named after the host, with one entry per group of equal GPUs. A node
//!   imported from Kubernetes keeps its `nvidia.com/mig.config` label while every instance in
//!   use is one of that layout's: its unused instances are not in migplan's fleet, and relabelling
//!   the node would make the MIG manager reconfigure it and restart its GPU pods.
//! - `mig-parted-config.yaml`: a ConfigMap for the GPU operator's MIG manager holding every config
//!   the labels name (a custom ConfigMap replaces the operator's default one, so the menu layouts
//!   in use are in it too).
//! - `resourcequotas.yaml`: one `ResourceQuota` per tenant of `[quotas]`, with
//!   `requests.nvidia.com/mig-<profile>` limits.
//!
//! GPU modes, as mig-parted applies a config (docs/fleet-import.md, "mig-parted and GPU
//! modes"): a GPU in MIG mode gets `mig-enabled: true` and its instances; a whole or shared GPU
//! of a MIG model gets `mig-enabled: false`, and so does a GPU whose GPU note says that MIG is
//! disabled (as `migplan import` writes it) holding nothing or one whole-GPU instance (a pod
//! asking for `nvidia.com/gpu`). A GPU whose model has no MIG (L40S, L4) is left out of every
//! config, and a host with no GPU with MIG gets no label and no config: the MIG manager does not
//! run on such a node.
//! mig-parted does not pin start slices: only instance counts are applied.

use crate::catalog::{GpuModel, ModelId};
use crate::fleet::{Fleet, GpuMode, Host, HostId};
use crate::ops::layouts;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One GPU's configuration: MIG mode and instances per profile name (catalog order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GpuConfig {
    pub mig_enabled: bool,
    pub devices: Vec<(String, u32)>,
}

/// The configuration of every GPU of host `h` now; `None` for a GPU whose model has no MIG
/// (mig-parted leaves it alone).
pub(crate) fn host_configs(fleet: &Fleet, h: HostId) -> Vec<Option<GpuConfig>> {
    let host = &fleet.hosts[h];
    host.gpus
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let model = fleet.catalog.model(g.model);
            if !model.mig {
                return None;
            }
            // MIG off: a whole or shared GPU, or a GPU imported with MIG disabled that holds
            // nothing but a whole-GPU workload.
            let off = g.mode != GpuMode::Mig
                || (g
                    .gis
                    .iter()
                    .all(|gi| model.profiles[gi.profile].size == model.memory_slices)
                    && host
                        .gpu_notes
                        .get(&k)
                        .is_some_and(|n| n.starts_with("MIG disabled")));
            let counts: Vec<u32> = if g.mode == GpuMode::Mig {
                g.occ.counts.iter().map(|&n| n as u32).collect()
            } else {
                vec![0; model.profiles.len()]
            };
            Some(match configured(host, g.model, &counts, off) {
                Some(l) => GpuConfig::of_counts(model, l.mig_enabled, &l.counts),
                None => GpuConfig::of_counts(model, !off, &counts),
            })
        })
        .collect()
}

/// The menu layout the node is labelled with (`Host::mig_config`, kept from a Kubernetes
/// import) when a GPU of `model` holding `counts` instances per profile still fits in it: every
/// instance in use is one of the layout's (MIG off: only a whole-GPU workload). Then the GPU
/// keeps that configuration, with its unused instances, and the node keeps its label.
fn configured(
    host: &Host,
    model: ModelId,
    counts: &[u32],
    mig_off: bool,
) -> Option<&'static layouts::Layout> {
    let l = layouts::embedded().get(model, host.mig_config.as_deref()?)?;
    let fits = if l.mig_enabled {
        !mig_off && counts.iter().zip(&l.counts).all(|(n, cap)| n <= cap)
    } else {
        mig_off
    };
    fits.then_some(l)
}

impl GpuConfig {
    /// The configuration of a GPU of `model` holding `counts` instances per profile id.
    pub(crate) fn of_counts(model: &GpuModel, mig_enabled: bool, counts: &[u32]) -> GpuConfig {
        GpuConfig {
            mig_enabled,
            devices: if mig_enabled {
                model
                    .profiles
                    .iter()
                    .zip(counts)
                    .filter(|&(_, &n)| n > 0)
                    .map(|(pr, &n)| (pr.name.clone(), n))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// The layout name of the menu for one GPU configuration of model `m`, if it has one.
fn config_name(fleet: &Fleet, m: ModelId, c: &GpuConfig) -> Option<String> {
    let menu = layouts::embedded();
    if !c.mig_enabled {
        return menu.for_model(m).find(|l| !l.mig_enabled).map(|l| l.name.clone());
    }
    let model = fleet.catalog.model(m);
    let mut counts = vec![0u32; model.profiles.len()];
    for (name, n) in &c.devices {
        counts[model.profile(name)?] += n;
    }
    menu.name_of(m, &counts).map(str::to_string)
}

/// The node label of host `h` once GPU `gpu` has `layout`, and the mig-parted config text the
/// label needs when it is not a menu layout (a config named after the host).
pub(crate) fn label_after(
    fleet: &Fleet,
    h: HostId,
    gpu: usize,
    layout: &layouts::Layout,
) -> (String, Option<String>) {
    let mut cfgs = host_configs(fleet, h);
    cfgs[gpu] = Some(GpuConfig::of_counts(
        fleet.catalog.model(layout.model),
        layout.mig_enabled,
        &layout.counts,
    ));
    let p = plan_of(fleet, vec![(h, cfgs)]);
    let (_, label) = &p.labels[0];
    let custom = p.custom.contains(label);
    (label.clone(), custom.then(|| mig_parted(&p, 0)))
}

/// One mig-parted config: entries of devices (`None` = all) and their configuration.
pub type Config = Vec<(Option<Vec<usize>>, GpuConfig)>;

/// The label and the mig-parted config of every host with GPUs.
pub struct Plan {
    /// (host, label value).
    pub labels: Vec<(String, String)>,
    /// Config name -> entries (devices: `None` = all, configuration).
    pub configs: BTreeMap<String, Config>,
    /// The config names that are not menu layouts (one per host, named after it).
    pub custom: Vec<String>,
}

/// The labels and configs of the hosts `hosts` (every host with GPUs when empty), as they are.
pub fn plan(fleet: &Fleet, hosts: &[HostId]) -> Plan {
    let all: Vec<HostId> = if hosts.is_empty() {
        (0..fleet.hosts.len()).collect()
    } else {
        hosts.to_vec()
    };
    plan_of(
        fleet,
        all.into_iter().map(|h| (h, host_configs(fleet, h))).collect(),
    )
}

/// The labels and configs of hosts whose GPUs get the configurations given (one per GPU; `None`
/// for a GPU without MIG, left out).
///
/// A host whose GPUs are all of one model and hold one menu layout is labelled with its name;
/// when that name is used on hosts of two models it becomes `<layout>-<model>`. Any other host
/// gets its own config, named after the host, with one entry per group of equal GPUs. A host
/// with no GPU to configure gets neither label nor config.
pub fn plan_of(fleet: &Fleet, hosts: Vec<(HostId, Vec<Option<GpuConfig>>)>) -> Plan {
    // First pass: hosts whose GPUs share one menu layout.
    let mut named: Vec<(HostId, Vec<Option<GpuConfig>>, Option<String>)> = Vec::new();
    let mut models_of: BTreeMap<String, Vec<ModelId>> = BTreeMap::new();
    for (h, cfgs) in hosts {
        let host = &fleet.hosts[h];
        if host.gpus.is_empty() || cfgs.iter().all(Option::is_none) {
            continue;
        }
        let model0 = host.gpus[0].model;
        let names: Vec<Option<String>> = cfgs
            .iter()
            .zip(&host.gpus)
            .map(|(c, g)| c.as_ref().and_then(|c| config_name(fleet, g.model, c)))
            .collect();
        let one = host.gpus.iter().all(|g| g.model == model0)
            && names.iter().all(|n| n.is_some() && *n == names[0]);
        let name = if one { names[0].clone() } else { None };
        if let Some(n) = &name {
            let v = models_of.entry(n.clone()).or_default();
            if !v.contains(&model0) {
                v.push(model0);
            }
        }
        named.push((h, cfgs, name));
    }
    let mut p = Plan {
        labels: Vec::new(),
        configs: BTreeMap::new(),
        custom: Vec::new(),
    };
    for (h, cfgs, name) in named {
        let host = &fleet.hosts[h];
        match name {
            Some(n) => {
                let label = if models_of.get(&n).is_some_and(|v| v.len() > 1) {
                    format!("{n}-{}", fleet.catalog.model(host.gpus[0].model).name)
                } else {
                    n
                };
                let first = cfgs.iter().flatten().next().cloned();
                if let Some(c) = first {
                    p.configs.entry(label.clone()).or_insert_with(|| vec![(None, c)]);
                }
                p.labels.push((host.name.clone(), label));
            }
            None => {
                let mut groups: Vec<(GpuConfig, Vec<usize>)> = Vec::new();
                for (k, c) in cfgs.into_iter().enumerate() {
                    let Some(c) = c else { continue };
                    match groups.iter_mut().find(|(g, _)| *g == c) {
                        Some((_, ks)) => ks.push(k),
                        None => groups.push((c, vec![k])),
                    }
                }
                let entries = groups.into_iter().map(|(c, ks)| (Some(ks), c)).collect();
                p.configs.insert(host.name.clone(), entries);
                p.labels.push((host.name.clone(), host.name.clone()));
                p.custom.push(host.name.clone());
            }
        }
    }
    p
}

/// Appends lines to a text.
fn lines(o: &mut String, ls: &[&str]) {
    for l in ls {
        o.push_str(l);
        o.push('\n');
    }
}

/// Single-quotes a word for the shell when it needs it.
fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `labels.sh`.
pub(crate) fn labels_sh(scenario: &str, p: &Plan) -> String {
    let mut o = format!(
        "#!/bin/sh\n# MIG layout labels of scenario `{scenario}`, written by migplan. Apply the ConfigMap of\n"
    );
    lines(
        &mut o,
        &[
            "# mig-parted-config.yaml first; the MIG manager re-partitions a node when its label changes",
            "# (it drains the node's GPU pods: see `migplan relayout --k8s`).",
            "set -eu",
        ],
    );
    for (host, label) in &p.labels {
        let _ = writeln!(
            o,
            "kubectl label node {} nvidia.com/mig.config={} --overwrite",
            sh(host),
            sh(label)
        );
    }
    o
}

fn yaml_str(s: &str) -> String {
    format!("{s:?}")
}

/// The mig-parted config (`version: v1`) of a plan, indented by `indent` spaces.
pub fn mig_parted(p: &Plan, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut o = String::new();
    let _ = writeln!(o, "{pad}version: v1");
    if p.configs.is_empty() {
        let _ = writeln!(o, "{pad}mig-configs: {{}}");
        return o;
    }
    let _ = writeln!(o, "{pad}mig-configs:");
    for (name, entries) in &p.configs {
        let _ = writeln!(o, "{pad}  {}:", yaml_str(name));
        for (devs, c) in entries {
            let d = match devs {
                None => "all".to_string(),
                Some(ks) => format!(
                    "[{}]",
                    ks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
                ),
            };
            let _ = writeln!(o, "{pad}    - devices: {d}");
            let _ = writeln!(o, "{pad}      mig-enabled: {}", c.mig_enabled);
            if !c.mig_enabled {
                continue;
            }
            if c.devices.is_empty() {
                let _ = writeln!(o, "{pad}      mig-devices: {{}}");
            } else {
                let _ = writeln!(o, "{pad}      mig-devices:");
                for (prof, n) in &c.devices {
                    let _ = writeln!(o, "{pad}        {}: {n}", yaml_str(prof));
                }
            }
        }
    }
    o
}

/// Name of the ConfigMap `mig-parted-config.yaml` defines.
pub(crate) const CONFIGMAP: &str = "custom-mig-config";

/// `mig-parted-config.yaml`: the GPU operator's ConfigMap holding the plan's configs.
pub fn configmap(scenario: &str, p: &Plan) -> String {
    let mut o = format!(
        "# mig-parted configs of scenario `{scenario}`, written by migplan: every config the node labels\n\
         # of labels.sh name. Point the GPU operator's MIG manager at it (migManager.config.name={CONFIGMAP}).\n"
    );
    lines(
        &mut o,
        &[
            "# mig-parted does not pin start slices: the driver chooses where each instance starts.",
            "apiVersion: v1",
            "kind: ConfigMap",
            "metadata:",
            &format!("  name: {CONFIGMAP}"),
            "  namespace: gpu-operator",
            "data:",
            "  config.yaml: |",
        ],
    );
    o.push_str(&mig_parted(p, 4));
    o
}

/// `resourcequotas.yaml`: one ResourceQuota per tenant of `[quotas]` (a comment when none).
pub(crate) fn resource_quotas(s: &Scenario) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Per-tenant MIG quotas of scenario `{}`, written by migplan from its [quotas] (tenant = namespace).",
        s.name
    );
    if s.quotas.is_empty() {
        let _ = writeln!(o, "# The scenario has no [quotas]: no ResourceQuota.");
        return o;
    }
    for (tenant, limits) in &s.quotas {
        lines(
            &mut o,
            &[
                "---",
                "apiVersion: v1",
                "kind: ResourceQuota",
                "metadata:",
                "  name: mig-quota",
                &format!("  namespace: {}", yaml_str(tenant)),
                "spec:",
                "  hard:",
            ],
        );
        for (profile, n) in limits {
            let key = profile.strip_prefix("requests.").unwrap_or(profile);
            let key = key.strip_prefix("nvidia.com/mig-").unwrap_or(key);
            let _ = writeln!(
                o,
                "    {}: {}",
                yaml_str(&format!("requests.nvidia.com/mig-{key}")),
                yaml_str(&n.to_string())
            );
        }
    }
    o
}

/// Why an export cannot be written: a YAML document that does not parse back, or a layout plan
/// that does not fit the fleet. Each is one line naming the file (and the JSON path).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExportError {
    #[error("{file}: written YAML does not parse: {problem}")]
    Yaml { file: String, problem: String },
    #[error("{file}: no config `{label}` for node {node} (a bug)")]
    MissingConfig {
        file: String,
        label: String,
        node: String,
    },
    #[error("{file}: {path}: {problem}")]
    Plan {
        file: String,
        path: String,
        problem: String,
    },
}

/// Checks that every YAML document of `text` parses; returns how many there are.
pub(crate) fn check_yaml(text: &str, file: &str) -> Result<usize, ExportError> {
    use serde::Deserialize;
    let mut n = 0;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        serde_yaml_ng::Value::deserialize(doc).map_err(|e| ExportError::Yaml {
            file: file.to_string(),
            problem: crate::catalog::one_line(&e.to_string()),
        })?;
        n += 1;
    }
    Ok(n)
}

/// A layout plan of `migplan layout --json` put on a fleet: which GPUs it configures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlanOnFleet {
    /// Every host with GPUs and the configuration of each GPU after the plan.
    pub hosts: Vec<(HostId, Vec<Option<GpuConfig>>)>,
    /// The plan's GPU model.
    pub model: ModelId,
    /// GPUs of that model the plan configures (the first ones, by host and GPU index).
    pub planned: usize,
    /// GPUs of that model in the fleet.
    pub of_model: usize,
}

/// Puts the layouts of a plan written by `migplan layout --json` (the greedy plan, or with
/// `exact` the exact one) on the GPUs of its model in `fleet`, in host order and GPU index;
/// GPUs past the plan and GPUs of other models keep their configuration. Every layout must be a
/// menu layout of the model holding the instances the plan lists, or instances one GPU holds.
pub(crate) fn plan_on_fleet(
    fleet: &Fleet,
    plan: &serde_json::Value,
    file: &str,
    exact: bool,
) -> Result<PlanOnFleet, ExportError> {
    let err = |path: &str, problem: String| ExportError::Plan {
        file: file.to_string(),
        path: path.to_string(),
        problem,
    };
    let model_name = plan
        .get("gpu")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| {
            err(
                "gpu",
                "missing: not a layout plan of `migplan layout --json`".into(),
            )
        })?;
    let mid = fleet
        .catalog
        .model_id(model_name)
        .ok_or_else(|| err("gpu", format!("unknown GPU model `{model_name}`")))?;
    let model = fleet.catalog.model(mid);
    let (root, prefix) = if exact {
        let x = plan
            .get("exact")
            .ok_or_else(|| err("exact", "missing: the plan was written without --exact".into()))?;
        (x, "exact.")
    } else {
        (plan, "")
    };
    if let Some(e) = root.get("error").and_then(serde_json::Value::as_str) {
        return Err(err(
            &format!("{prefix}error"),
            format!("the planner found no plan: {e}"),
        ));
    }
    let list_path = format!("{prefix}gpu_layouts");
    let list = root
        .get("gpu_layouts")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| err(&list_path, "missing or not an array".into()))?;
    let menu = layouts::embedded();
    let mut planned = Vec::with_capacity(list.len());
    for (i, g) in list.iter().enumerate() {
        let path = format!("{list_path}[{i}]");
        let name = g
            .get("layout")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| err(&format!("{path}.layout"), "missing or not a string".into()))?;
        let inst = g
            .get("instances")
            .and_then(serde_json::Value::as_object)
            .ok_or_else(|| err(&format!("{path}.instances"), "missing or not an object".into()))?;
        let mut counts = vec![0u32; model.profiles.len()];
        for (p, n) in inst {
            let ip = format!("{path}.instances[\"{p}\"]");
            let pid = model
                .profile(p)
                .ok_or_else(|| err(&ip, format!("a {} has no profile `{p}`", model.name)))?;
            let n = n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| err(&ip, "not a count".into()))?;
            counts[pid] = counts[pid].saturating_add(n);
        }
        let mig_enabled = match menu.get(mid, name) {
            Some(l) if l.counts != counts => {
                return Err(err(
                    &format!("{path}.instances"),
                    format!(
                        "layout `{name}` of {} holds {}, the plan lists {}",
                        model.name,
                        layouts::describe_counts(model, &l.counts),
                        layouts::describe_counts(model, &counts)
                    ),
                ))
            }
            Some(l) => l.mig_enabled,
            None if layouts::arrange(model, &counts).is_none() => {
                return Err(err(
                    &format!("{path}.instances"),
                    format!(
                        "{} cannot be placed on one {}",
                        layouts::describe_counts(model, &counts),
                        model.name
                    ),
                ))
            }
            None => true,
        };
        planned.push(GpuConfig::of_counts(model, mig_enabled, &counts));
    }
    // Only GPUs in MIG mode take a plan's layouts: a whole or shared GPU keeps its mode.
    let of_model = fleet
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .filter(|g| g.model == mid && g.mode == GpuMode::Mig)
        .count();
    if planned.len() > of_model {
        return Err(err(
            &list_path,
            format!(
                "the plan configures {} GPU(s) of {}, the fleet has {of_model} in MIG mode",
                planned.len(),
                model.name
            ),
        ));
    }
    let mut next = planned.clone().into_iter();
    let hosts = (0..fleet.hosts.len())
        .filter(|&h| !fleet.hosts[h].gpus.is_empty())
        .map(|h| {
            let mut cfgs = host_configs(fleet, h);
            for (c, g) in cfgs.iter_mut().zip(&fleet.hosts[h].gpus) {
                if g.model == mid && g.mode == GpuMode::Mig {
                    if let Some(p) = next.next() {
                        *c = Some(p);
                    }
                }
            }
            (h, cfgs)
        })
        .collect();
    Ok(PlanOnFleet {
        hosts,
        model: mid,
        planned: planned.len(),
        of_model,
    })
}

/// The node runbook of a re-layout of GPU `gpu` of host `h` to `layout`: cordon, drain the tenant
/// pods only, label, wait for `nvidia.com/mig.config.state=success` (10 minutes; `failed` or a
/// timeout stops the runbook), uncordon. `pods` are the node's GPU pods as `namespace/name` when
/// known (from `--pods`), else the VMs are named. `label` is the node's new label and `config`
/// the mig-parted entry it needs when it is not a menu layout.
pub(crate) fn relayout_runbook(
    fleet: &Fleet,
    h: HostId,
    preview: &crate::ops::relayout::DrainPreview,
    label: &str,
    config: Option<&str>,
    pods: Option<&[String]>,
) -> String {
    let host = &fleet.hosts[h];
    let node = sh(&host.name);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Runbook: node {} GPU {}: {} -> {} ({})",
        host.name, preview.gpu, preview.from, preview.layout, preview.to
    );
    let _ = writeln!(
        o,
        "# The MIG manager restarts every GPU pod of the node, not only those of GPU {}.",
        preview.gpu
    );
    match pods {
        Some(p) if !p.is_empty() => {
            let _ = writeln!(
                o,
                "# Pods that lose their instance ({}): {}",
                p.len(),
                p.join(", ")
            );
        }
        Some(_) => {
            let _ = writeln!(o, "# No GPU pod runs on the node: nothing loses its instance.");
        }
        None => {
            let vms: Vec<String> = preview
                .displaced
                .iter()
                .map(|d| format!("VM {} ({})", d.vm, d.tenant.as_deref().unwrap_or("no tenant")))
                .collect();
            if vms.is_empty() {
                let _ = writeln!(o, "# No VM runs on the node: nothing loses its instance.");
            } else {
                let _ = writeln!(
                    o,
                    "# Workloads that lose their instance ({}): {} (give --pods to name the pods)",
                    vms.len(),
                    vms.join(", ")
                );
            }
        }
    }
    if let Some(c) = config {
        let _ = writeln!(
            o,
            "# The label names a custom config: add it to the MIG manager's ConfigMap first:"
        );
        for l in c.lines() {
            let _ = writeln!(o, "#   {l}");
        }
    }
    let _ = writeln!(o, "set -eu");
    let _ = writeln!(o, "# 1. Cordon: no new pod lands on the node.");
    let _ = writeln!(o, "kubectl cordon {node}");
    let _ = writeln!(
        o,
        "# 2. Drain the tenant pods only (DaemonSets and the GPU operator stay)."
    );
    match pods {
        Some(p) => {
            for pod in p {
                let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
                let _ = writeln!(o, "kubectl delete pod -n {} {} --wait=true", sh(ns), sh(name));
            }
        }
        None => {
            let mut tenants: Vec<&str> = preview
                .displaced
                .iter()
                .filter_map(|d| d.tenant.as_deref())
                .collect();
            tenants.sort_unstable();
            tenants.dedup();
            for t in tenants {
                let _ = writeln!(
                    o,
                    "kubectl delete pod -n {} --field-selector spec.nodeName={} --wait=true",
                    sh(t),
                    node
                );
            }
        }
    }
    let _ = writeln!(o, "# 3. Set the new layout.");
    let _ = writeln!(
        o,
        "kubectl label node {node} nvidia.com/mig.config={} --overwrite",
        sh(label)
    );
    let _ = writeln!(
        o,
        "# 4. Wait for the MIG manager: success within 10 minutes, else stop here and alert (state failed, or pending too long)."
    );
    let _ = writeln!(
        o,
        "kubectl wait node/{node} --for=jsonpath='{{.metadata.labels.nvidia\\.com/mig\\.config\\.state}}'=success --timeout=10m"
    );
    let _ = writeln!(o, "# 5. Uncordon.");
    let _ = writeln!(o, "kubectl uncordon {node}");
    o
}
