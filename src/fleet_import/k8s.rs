//! A scenario from a Kubernetes cluster: `kubectl get nodes -o json` and `kubectl get pods -A -o
//! json`, optionally with the nvidia-smi captures of the same nodes and a mig-parted config.
//!
//! - Nodes with a `nvidia.com/gpu.product` label become hosts: allocatable cpu (rounded down to
//!   whole cores) and memory (rounded down to whole GiB), `nvidia.com/gpu.count` GPUs of the
//!   product's model (`-MIG-<profile>` under the single strategy; a `nvidia.com/mig.strategy`
//!   label that disagrees with the suffix is a finding). Other nodes are left out.
//! - Each GPU's instances: from the node's capture when one is given (exact start slices), else
//!   from the `nvidia.com/mig.config` label: a layout of the layouts menu for the model, or a
//!   config of that name in the mig-parted config given (`--mig-config`, a plain config or the
//!   GPU operator's ConfigMap), placed by the layout's own arrangement. A GPU with MIG disabled
//!   holds one whole-GPU place that only a pod asking for `nvidia.com/gpu` takes.
//! - Pods asking for `nvidia.com/mig-<profile>` (requests, else limits; summed over containers)
//!   or `nvidia.com/gpu` become VMs: the namespace is the tenant, cpu requests rounded up to whole
//!   cores, memory requests rounded up to whole GiB. Finished pods (Succeeded, Failed) are left
//!   out.
//! - Assignment (the stated deterministic order): pods by creation time, then namespace and name;
//!   a pod's GIs largest first; each takes the first free instance of its profile on its node, by
//!   GPU index, then start slice. Pods without `spec.nodeName` are pending requests in the same
//!   order. Neither nvidia-smi nor the node objects say which pod holds which of several equal
//!   instances, so this pairing is always inferred; without captures the start slices are too.
//! - What real clusters get wrong comes out as findings, not errors: a `-MIG-INVALID` product, a
//!   layout that cannot hold its node's pods (those pods become pending), a profile the model
//!   lacks, a pod count above the captured instances, a label naming an unknown layout.
//!
//! Malformed input (not JSON, a missing name, an unknown product, an unknown quantity suffix) is
//! an error naming the file and the JSON path of the field.

use super::kube::{field, items, parse_json, K8sError};
use super::nvidia_smi::Capture;
use super::resourceslices::Slices;
use super::{empty_scenario, profiles, quantity, HostDef};
use crate::catalog::{embedded, GpuModel, ModelId, ProfileId};
use crate::fleet::{GiRequest, GiSlot, Placement, Vm, VmKind};
use crate::ops::layouts;
use crate::scenario::Scenario;
use serde_json::Value;
use std::collections::BTreeMap;

/// Most GPUs one node may have (`nvidia.com/gpu.count`).
const MAX_GPUS: usize = 64;
/// Most MIG devices or GPUs one resource request of a pod may ask for.
const MAX_DEVICES: u32 = 512;

/// The import's counts and findings (`migplan import k8s --json`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Report {
    pub hosts: usize,
    pub gpus: usize,
    /// MIG instances on the imported GPUs (captured or from the layouts).
    pub instances: usize,
    /// Pods asking for MIG instances or GPUs (running and pending).
    pub pods: usize,
    /// VMs left pending: pods without a node, and pods their node could not hold.
    pub pending: usize,
    /// Whether any start slice came from a layout rather than a capture.
    pub inferred_placements: bool,
    /// Nodes whose instances come from their layout label (no capture).
    pub inferred_nodes: Vec<String>,
    pub findings: Vec<String>,
    /// Nodes left out (no `nvidia.com/gpu.product` label).
    pub skipped_nodes: Vec<String>,
    /// Nodes whose devices come from DRA ResourceSlices (`--resourceslices`).
    pub slice_nodes: Vec<String>,
}

/// One config of a mig-parted file: per entry, its devices (`None`: all), MIG mode and
/// instances per profile name.
pub(crate) type MigConfig = Vec<(Option<Vec<usize>>, bool, Vec<(String, u32)>)>;

/// Reads a mig-parted config (`version: v1`, `mig-configs`), or the GPU operator's ConfigMap
/// holding one under `data."config.yaml"`, into its configs by name (through the one reader,
/// [`crate::ops::mig_parted`]).
pub(crate) fn parse_mig_parted(text: &str, file: &str) -> Result<BTreeMap<String, MigConfig>, K8sError> {
    let configs = crate::ops::mig_parted::parse(text, file)?;
    Ok(configs
        .into_iter()
        .map(|(name, entries)| {
            let cfg = entries
                .into_iter()
                .map(|e| (e.devices, e.mig_enabled, e.mig_devices))
                .collect();
            (name, cfg)
        })
        .collect())
}

fn label<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
    node.get("metadata")?.get("labels")?.get(key)?.as_str()
}

/// A place an instance of a node's GPU offers a pod.
#[derive(Debug, Clone)]
struct Slot {
    gpu: usize,
    profile: ProfileId,
    start: u8,
    taken: bool,
}

/// One node being imported.
struct Node {
    def: HostDef,
    slots: Vec<Slot>,
    /// Single-strategy profile from the product suffix.
    single: Option<String>,
    /// Start slices from a capture or ResourceSlices.
    exact: bool,
    /// Where its instances come from: `its capture`, `its ResourceSlices`, or its layout label.
    source: String,
    /// Its instances were seen (a capture or ResourceSlices), not taken from its layout label.
    seen: bool,
}

/// One pod asking for GPUs.
struct Pod {
    ns: String,
    name: String,
    node: Option<String>,
    created: String,
    cores: u32,
    ram_gb: u32,
    /// (resource suffix after `nvidia.com/`, count).
    asks: Vec<(String, u32)>,
}

/// Whether a pod has finished (`status.phase` Succeeded or Failed): it holds no instance.
fn finished(pod: &Value) -> bool {
    let phase = pod
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str);
    matches!(phase, Some("Succeeded") | Some("Failed"))
}

/// A pod's `spec.containers` (empty when missing).
fn containers(pod: &Value) -> &[Value] {
    pod.get("spec")
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The GPU pods (`namespace/name`) that run on node `node`: pods asking for `nvidia.com/gpu` or
/// `nvidia.com/mig-*` with `spec.nodeName` = `node`, not finished, sorted.
pub(crate) fn gpu_pods_on(text: &str, file: &str, node: &str) -> Result<Vec<String>, K8sError> {
    let v = parse_json(text, file)?;
    let mut out = Vec::new();
    for p in items(&v, file)? {
        if p.get("spec")
            .and_then(|s| s.get("nodeName"))
            .and_then(Value::as_str)
            != Some(node)
        {
            continue;
        }
        if finished(p) {
            continue;
        }
        let gpu = containers(p).iter().any(|c| {
            ["requests", "limits"].iter().any(|kind| {
                c.get("resources")
                    .and_then(|r| r.get(*kind))
                    .and_then(Value::as_object)
                    .is_some_and(|m| {
                        m.keys()
                            .any(|k| k == "nvidia.com/gpu" || k.starts_with("nvidia.com/mig-"))
                    })
            })
        });
        if !gpu {
            continue;
        }
        let meta = p.get("metadata");
        let ns = meta
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("default");
        let name = meta
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        out.push(format!("{ns}/{name}"));
    }
    out.sort();
    Ok(out)
}

/// Whether a capture's hostname names a node: equal, or equal up to the first dot (`hostname`
/// prints the short name where the node is named by its FQDN, or the other way round).
fn same_host(captured: &str, node: &str) -> bool {
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_ascii_lowercase();
    captured == node || short(captured) == short(node)
}

/// The model's whole-GPU profile (its largest, without media extensions).
fn whole_profile(model: &GpuModel) -> Option<ProfileId> {
    (0..model.profiles.len())
        .find(|&p| model.profiles[p].size == model.memory_slices && !model.profiles[p].media_ext)
}

/// Imports a cluster; `captures` are nvidia-smi captures of some of its nodes (by node name),
/// `mig_config` the configs a custom `nvidia.com/mig.config` label may name.
pub fn import(
    nodes_json: (&str, &str),
    pods_json: (&str, &str),
    captures: &[Capture],
    mig_config: &BTreeMap<String, MigConfig>,
    name: &str,
) -> Result<(Scenario, Report), K8sError> {
    import_with(
        nodes_json,
        pods_json,
        captures,
        &Slices::default(),
        mig_config,
        name,
    )
}

/// [`import`] with the devices of DRA ResourceSlices too: a node's capture wins over its slices,
/// its slices over its layout label.
pub(crate) fn import_with(
    nodes_json: (&str, &str),
    pods_json: (&str, &str),
    captures: &[Capture],
    slices: &Slices,
    mig_config: &BTreeMap<String, MigConfig>,
    name: &str,
) -> Result<(Scenario, Report), K8sError> {
    let (ntext, nfile) = nodes_json;
    let (ptext, pfile) = pods_json;
    let nodes_v = parse_json(ntext, nfile)?;
    let pods_v = parse_json(ptext, pfile)?;
    let mut rep = Report {
        findings: slices.findings.clone(),
        ..Report::default()
    };
    // Every source of exact devices: captures first, then ResourceSlices (exact or not).
    let sources: Vec<Source> = captures
        .iter()
        .map(|c| (c, true, "its capture"))
        .chain(
            slices
                .nodes
                .iter()
                .map(|d| (&d.capture, d.exact, "its ResourceSlices")),
        )
        .collect();
    let mut nodes: Vec<Node> = Vec::new();
    for (i, n) in items(&nodes_v, nfile)?.iter().enumerate() {
        if let Some(node) = read_node(n, i, nfile, &sources, mig_config, &mut rep)? {
            nodes.push(node);
        }
    }
    for (c, _, from) in &sources {
        if !nodes.iter().any(|n| same_host(&c.host, &n.def.name)) {
            let what = if *from == "its capture" {
                "capture"
            } else {
                "ResourceSlice file"
            };
            rep.findings.push(format!(
                "{what} {} is of host `{}`, which is not a GPU node of {nfile}: left out",
                c.file, c.host
            ));
        }
    }
    rep.hosts = nodes.len();
    let mut pods: Vec<Pod> = Vec::new();
    for (j, p) in items(&pods_v, pfile)?.iter().enumerate() {
        if let Some(pod) = read_pod(p, j, pfile)? {
            pods.push(pod);
        }
    }
    pods.sort_by(|a, b| (&a.created, &a.ns, &a.name).cmp(&(&b.created, &b.ns, &b.name)));
    rep.pods = pods.len();

    let hosts: Vec<HostDef> = nodes.iter().map(|n| n.def.clone()).collect();
    let mut s = empty_scenario(
        name,
        "Imported from Kubernetes: one host per GPU node, one VM per pod asking for MIG instances (tenant = namespace).",
        &hosts,
    )
    .map_err(|e| K8sError::Scenario(crate::catalog::one_line(&e.to_string())))?;
    let (pending, asked) = place_pods(&mut s, &mut nodes, &pods, &mut rep);
    count_findings(&nodes, &asked, &mut rep);
    for vm in pending {
        s.fleet.add_pending(vm).map_err(|e| K8sError::Fleet {
            file: pfile.to_string(),
            problem: e.to_string(),
        })?;
    }
    rep.pending = s.fleet.pending().len();
    Ok((s, rep))
}

/// A source of a node's exact devices: the capture (or the devices of its ResourceSlices read as
/// one), whether its start slices are exact, and how findings name it.
type Source<'a> = (&'a Capture, bool, &'a str);

/// Instances asked per (node, model, profile), to compare with what a node shows.
type Asked = BTreeMap<(usize, ModelId, ProfileId), u32>;

/// What a GPU node's labels and allocatable resources say, before its instances are known.
struct NodeHead {
    def: HostDef,
    model: ModelId,
    single: Option<String>,
    config: Option<String>,
}

/// A node of `kubectl get nodes` (item `i`) with its instances: from its capture or
/// ResourceSlices when there are some, else from its layout label. `None` for a node without
/// GPUs.
fn read_node(
    n: &Value,
    i: usize,
    nfile: &str,
    sources: &[Source],
    mig_config: &BTreeMap<String, MigConfig>,
    rep: &mut Report,
) -> Result<Option<Node>, K8sError> {
    let Some(head) = node_head(n, i, nfile, rep)? else {
        return Ok(None);
    };
    let NodeHead {
        mut def,
        model,
        single,
        config,
    } = head;
    let nname = def.name.clone();
    let found = sources.iter().find(|(c, _, _)| same_host(&c.host, &nname));
    let (slots, exact, source) = match found {
        Some(&(c, sure, from)) => {
            if from == "its ResourceSlices" {
                rep.slice_nodes.push(nname.clone());
            }
            if !sure {
                rep.inferred_nodes.push(nname.clone());
            }
            let slots = slots_from_capture(c, from, &mut def, model, rep);
            (slots, sure, from.to_string())
        }
        None => {
            rep.inferred_nodes.push(nname.clone());
            let source = format!("layout `{}`", config.as_deref().unwrap_or("-"));
            let slots = slots_from_label(config.as_deref(), mig_config, &mut def, model, rep);
            (slots, false, source)
        }
    };
    // MIG instances only: a MIG-disabled GPU's whole-GPU place is not one.
    rep.instances += slots
        .iter()
        .filter(|sl| !def.gpu_notes[sl.gpu].starts_with("MIG disabled"))
        .count();
    rep.gpus += def.gpus.len();
    Ok(Some(Node {
        def,
        slots,
        single,
        exact,
        seen: !source.starts_with("layout"),
        source,
    }))
}

/// A node's name, GPU model and count, single-strategy profile, cores, memory and layout label.
/// `None` (and the node listed as skipped) without a `nvidia.com/gpu.product` label.
fn node_head(n: &Value, i: usize, nfile: &str, rep: &mut Report) -> Result<Option<NodeHead>, K8sError> {
    let catalog = embedded();
    let path = format!("items[{i}]");
    let Some(nname) = n
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
    else {
        return Err(field(
            nfile,
            format!("{path}.metadata.name"),
            "missing or not a string",
        ));
    };
    let Some(product) = label(n, "nvidia.com/gpu.product") else {
        rep.skipped_nodes.push(nname.to_string());
        return Ok(None);
    };
    let ppath = format!("{path}.metadata.labels[\"nvidia.com/gpu.product\"]");
    let (base, single) = match product.split_once("-MIG-") {
        Some((b, s)) => (b, Some(s.to_string())),
        None => (product, None),
    };
    let Some(model) = profiles::model_of_product(catalog, base) else {
        return Err(field(
            nfile,
            ppath,
            format!(
                "unknown GPU product `{product}` (known: {})",
                profiles::known_products()
            ),
        ));
    };
    let single = match single {
        Some(s) if s == "INVALID" => {
            rep.findings.push(format!(
                "node {nname}: nvidia.com/gpu.product is `{product}`: its GPUs hold mixed profiles under the single strategy"
            ));
            None
        }
        other => other,
    };
    strategy_findings(n, nname, product, single.is_some(), rep);
    let count = gpu_count(n, &path, nfile)?;
    let alloc = |f: &str| -> Result<&str, K8sError> {
        n.get("status")
            .and_then(|s| s.get("allocatable"))
            .and_then(|a| a.get(f))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                field(
                    nfile,
                    format!("{path}.status.allocatable.{f}"),
                    "missing or not a string",
                )
            })
    };
    let q = |k: &str, f: fn(&str) -> Result<u32, quantity::QuantityError>| -> Result<u32, K8sError> {
        f(alloc(k)?).map_err(|e| field(nfile, format!("{path}.status.allocatable.{k}"), e.to_string()))
    };
    let cores = q("cpu", quantity::cores_floor)?;
    let ram_gb = q("memory", quantity::gib_floor)?;
    let config = label(n, "nvidia.com/mig.config").map(str::to_string);
    let def = HostDef {
        name: nname.to_string(),
        cores,
        ram_gb,
        gpus: vec![model; count],
        gpu_notes: vec![String::new(); count],
        note: config.as_ref().map(|c| format!("nvidia.com/mig.config={c}")),
        // A menu layout is kept so that an export relabels the node only when its use changed.
        mig_config: config
            .clone()
            .filter(|c| layouts::embedded().get(model, c).is_some()),
    };
    Ok(Some(NodeHead {
        def,
        model,
        single,
        config,
    }))
}

/// The strategy label and the product's suffix should agree; the suffix decides.
fn strategy_findings(n: &Value, nname: &str, product: &str, suffixed: bool, rep: &mut Report) {
    match label(n, "nvidia.com/mig.strategy") {
        None | Some("none") | Some("single") => {}
        Some("mixed") if suffixed => rep.findings.push(format!(
            "node {nname}: nvidia.com/mig.strategy is `mixed`, but nvidia.com/gpu.product `{product}` has the single strategy's -MIG- suffix: the suffix is used"
        )),
        Some("mixed") => {}
        Some(other) => rep.findings.push(format!(
            "node {nname}: nvidia.com/mig.strategy is `{other}`, not none, single or mixed: read from nvidia.com/gpu.product instead"
        )),
    }
}

/// The node's `nvidia.com/gpu.count` label (`path` is the node's JSON path).
fn gpu_count(n: &Value, path: &str, nfile: &str) -> Result<usize, K8sError> {
    let cpath = format!("{path}.metadata.labels[\"nvidia.com/gpu.count\"]");
    match label(n, "nvidia.com/gpu.count").map(str::parse) {
        Some(Ok(c)) if c <= MAX_GPUS => Ok(c),
        Some(Ok(c)) => Err(field(
            nfile,
            cpath,
            format!("{c} GPUs on one node (at most {MAX_GPUS})"),
        )),
        Some(Err(_)) => Err(field(nfile, cpath, "not a whole number")),
        None => Err(field(nfile, cpath, "missing (GPU feature discovery sets it)")),
    }
}

/// The instances of a node that has a capture or ResourceSlices (`from` names which): the
/// source's GPUs replace the labels' (a finding when they disagree); a MIG-disabled GPU holds
/// one whole-GPU place.
fn slots_from_capture(
    c: &Capture,
    from: &str,
    def: &mut HostDef,
    model: ModelId,
    rep: &mut Report,
) -> Vec<Slot> {
    let catalog = embedded();
    let nname = &def.name;
    let count = def.gpus.len();
    let models: Vec<ModelId> = c.gpus.iter().map(|g| g.model).collect();
    if models.len() != count || models.iter().any(|&x| x != model) {
        let shown: Vec<&str> = models.iter().map(|&x| catalog.model(x).name.as_str()).collect();
        let what = if from == "its capture" {
            "the capture"
        } else {
            "the ResourceSlice file"
        };
        rep.findings.push(format!(
            "node {nname}: labels say {count} x {}, {what} {} shows {}: {what} is used",
            catalog.model(model).name,
            c.file,
            shown.join(", ")
        ));
    }
    def.gpus = models;
    def.gpu_notes = vec![String::new(); c.gpus.len()];
    let mut slots = Vec::new();
    for (k, g) in c.gpus.iter().enumerate() {
        if !g.mig_enabled {
            def.gpu_notes[k] = format!("MIG disabled on this {} (whole GPU)", g.product);
            if let Some(w) = whole_profile(catalog.model(g.model)) {
                slots.push(Slot {
                    gpu: k,
                    profile: w,
                    start: 0,
                    taken: false,
                });
            }
        }
        for gi in &g.gis {
            slots.push(Slot {
                gpu: k,
                profile: gi.profile,
                start: gi.start,
                taken: false,
            });
        }
    }
    slots.sort_by_key(|s| (s.gpu, s.start));
    slots
}

/// The instances of a node without a capture, from its layout label: a menu layout, or a config
/// of the mig-parted file given, placed by the layout's own arrangement.
fn slots_from_label(
    config: Option<&str>,
    mig_config: &BTreeMap<String, MigConfig>,
    def: &mut HostDef,
    model: ModelId,
    rep: &mut Report,
) -> Vec<Slot> {
    let m = embedded().model(model);
    let nname = def.name.clone();
    let per_gpu = label_layouts(config, mig_config, &nname, def.gpus.len(), model, rep);
    let mut slots = Vec::new();
    for (k, (enabled, counts)) in per_gpu.unwrap_or_default().into_iter().enumerate() {
        if !enabled {
            def.gpu_notes[k] = format!("MIG disabled on this {} (whole GPU)", m.name);
            if let Some(w) = whole_profile(m) {
                slots.push(Slot {
                    gpu: k,
                    profile: w,
                    start: 0,
                    taken: false,
                });
            }
            continue;
        }
        match layouts::arrange(m, &counts) {
            Some(mut arr) => {
                arr.sort_by_key(|&(_, z)| z);
                slots.extend(arr.into_iter().map(|(p, z)| Slot {
                    gpu: k,
                    profile: p,
                    start: z,
                    taken: false,
                }));
            }
            None => rep.findings.push(format!(
                "node {nname}: GPU {k}: {} cannot be placed on one {}",
                layouts::describe_counts(m, &counts),
                m.name
            )),
        }
    }
    slots.sort_by_key(|s| (s.gpu, s.start));
    slots
}

/// Per GPU of a node of `count` GPUs of `model`: MIG mode and instances per profile, from its
/// `nvidia.com/mig.config` label. `None` (with a finding) when the label is missing or names
/// neither a menu layout nor a config of the mig-parted file.
fn label_layouts(
    config: Option<&str>,
    mig_config: &BTreeMap<String, MigConfig>,
    nname: &str,
    count: usize,
    model: ModelId,
    rep: &mut Report,
) -> Option<Vec<(bool, Vec<u32>)>> {
    let m = embedded().model(model);
    let Some(c) = config else {
        rep.findings.push(format!(
            "node {nname}: no nvidia.com/mig.config label: its layout is unknown, its GPUs are left without instances"
        ));
        return None;
    };
    if let Some(l) = layouts::embedded().get(model, c) {
        return Some(vec![(l.mig_enabled, l.counts.clone()); count]);
    }
    let Some(cfg) = mig_config.get(c) else {
        rep.findings.push(format!(
            "node {nname}: layout `{c}` is neither a layout of {} nor a config of --mig-config: its GPUs are left without instances",
            m.name
        ));
        return None;
    };
    let mut v = vec![(true, vec![0u32; m.profiles.len()]); count];
    let mut covered = vec![false; count];
    for (devs, enabled, counts) in cfg {
        let ks: Vec<usize> = devs.clone().unwrap_or_else(|| (0..count).collect());
        let mut cts = vec![0u32; m.profiles.len()];
        for (p, n) in counts {
            match profiles::resolve(m, p) {
                Some(p) => cts[p] += n,
                None => rep.findings.push(format!(
                    "node {nname}: mig-parted config `{c}` names profile `{p}`, which a {} lacks",
                    m.name
                )),
            }
        }
        for k in ks.into_iter().filter(|&k| k < count) {
            v[k] = (*enabled, cts.clone());
            covered[k] = true;
        }
    }
    if let Some(k) = covered.iter().position(|c| !c) {
        rep.findings.push(format!(
            "node {nname}: mig-parted config `{c}` does not cover GPU {k}: left without instances"
        ));
    }
    Some(v)
}

/// Pod `j` of `kubectl get pods`: `None` when it has finished or asks for no GPU.
fn read_pod(p: &Value, j: usize, pfile: &str) -> Result<Option<Pod>, K8sError> {
    let path = format!("items[{j}]");
    let meta = p.get("metadata");
    let Some(pname) = meta.and_then(|m| m.get("name")).and_then(Value::as_str) else {
        return Err(field(
            pfile,
            format!("{path}.metadata.name"),
            "missing or not a string",
        ));
    };
    let ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    if finished(p) {
        return Ok(None);
    }
    let mut asks: BTreeMap<String, u32> = BTreeMap::new();
    let (mut cpu, mut mem) = (0.0f64, 0.0f64);
    for (c, ct) in containers(p).iter().enumerate() {
        for (key, kind, x) in container_quantities(ct, &format!("{path}.spec.containers[{c}]"), pfile)? {
            if let Some(r) = key.strip_prefix("nvidia.com/") {
                if r == "gpu" || r.starts_with("mig-") {
                    *asks.entry(r.to_string()).or_default() += x as u32;
                }
            } else if key == "cpu" && kind == "requests" {
                cpu += x;
            } else if key == "memory" && kind == "requests" {
                mem += x;
            }
        }
    }
    asks.retain(|_, n| *n > 0);
    if asks.is_empty() {
        return Ok(None);
    }
    let created = meta
        .and_then(|m| m.get("creationTimestamp"))
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.to_utc().to_rfc3339())
        .unwrap_or_default();
    Ok(Some(Pod {
        ns: ns.to_string(),
        name: pname.to_string(),
        node: p
            .get("spec")
            .and_then(|s| s.get("nodeName"))
            .and_then(Value::as_str)
            .map(str::to_string),
        created,
        cores: (cpu - 1e-9).ceil().max(0.0) as u32,
        ram_gb: (mem / (1024.0 * 1024.0 * 1024.0) - 1e-9).ceil().max(0.0) as u32,
        asks: asks.into_iter().collect(),
    }))
}

/// A container's resource quantities as (key, `requests` or `limits`, value): its requests, and
/// its limits for keys it does not request. Device counts must be whole numbers up to
/// [`MAX_DEVICES`]. `path` is the container's JSON path.
fn container_quantities(
    ct: &Value,
    path: &str,
    pfile: &str,
) -> Result<Vec<(String, &'static str, f64)>, K8sError> {
    let res = ct.get("resources");
    let requests = res.and_then(|r| r.get("requests")).and_then(Value::as_object);
    let limits = res.and_then(|r| r.get("limits")).and_then(Value::as_object);
    let qpath = |kind: &str, key: &str| format!("{path}.resources.{kind}[\"{key}\"]");
    let mut keys: Vec<(&'static str, &String, &Value)> = Vec::new();
    if let Some(r) = requests {
        keys.extend(r.iter().map(|(k, v)| ("requests", k, v)));
    }
    if let Some(l) = limits {
        for (k, v) in l {
            if !requests.is_some_and(|r| r.contains_key(k)) {
                keys.push(("limits", k, v));
            }
        }
    }
    let mut out = Vec::with_capacity(keys.len());
    for (kind, k, v) in keys {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(field(pfile, qpath(kind, k), "not a quantity")),
        };
        let x = quantity::parse(&s).map_err(|e| field(pfile, qpath(kind, k), e.to_string()))?;
        let device = k
            .strip_prefix("nvidia.com/")
            .is_some_and(|r| r == "gpu" || r.starts_with("mig-"));
        if device && (x.fract() != 0.0 || x > MAX_DEVICES as f64) {
            return Err(field(
                pfile,
                qpath(kind, k),
                format!("`{x}` is not a whole number of devices up to {MAX_DEVICES}"),
            ));
        }
        out.push((k.clone(), kind, x));
    }
    Ok(out)
}

/// The GIs a pod asks for, as (model, profile) on its node's models (`node_ix`) or on any
/// imported model when it is pending; `None` (with a finding) when one cannot be named.
fn pod_gis(pod: &Pod, node_ix: Option<usize>, nodes: &[Node], rep: &mut Report) -> Option<Vec<GiRequest>> {
    let catalog = embedded();
    let who = format!("pod {}/{}", pod.ns, pod.name);
    let candidates: Vec<ModelId> = match node_ix {
        Some(h) => nodes[h].def.gpus.clone(),
        None => nodes.iter().flat_map(|n| n.def.gpus.iter().copied()).collect(),
    };
    let mut gis: Vec<GiRequest> = Vec::new();
    for (res, n) in &pod.asks {
        let want = if res == "gpu" {
            match node_ix.map(|h| &nodes[h].single) {
                Some(Some(p)) => Some(p.clone()),
                Some(None) => None,
                None => {
                    rep.findings.push(format!(
                        "{who} is pending with nvidia.com/gpu: its profile is unknown until it is scheduled; left out"
                    ));
                    return None;
                }
            }
        } else {
            Some(res.trim_start_matches("mig-").to_string())
        };
        let found = candidates.iter().find_map(|&m| {
            let model = catalog.model(m);
            let p = match &want {
                Some(w) => profiles::resolve(model, w),
                None => whole_profile(model),
            }?;
            Some(GiRequest { model: m, profile: p })
        });
        let Some(g) = found else {
            let on = match node_ix {
                Some(h) => format!("node {}'s GPU model", nodes[h].def.name),
                None => "any imported GPU model".into(),
            };
            rep.findings.push(format!(
                "{who} asks for nvidia.com/{res}, a profile {on} lacks; left out"
            ));
            return None;
        };
        gis.extend(std::iter::repeat_n(g, *n as usize));
    }
    if gis.is_empty() {
        return None;
    }
    if gis.iter().any(|g| !catalog.same_class(g.model, gis[0].model)) {
        rep.findings
            .push(format!("{who} asks for instances of two GPU models; left out"));
        return None;
    }
    Some(gis)
}

/// Places each pod (oldest first) on its node's free instances: a pod's GIs largest first, each
/// on the first free instance of its profile by GPU index, then start slice. Returns the VMs
/// left pending and the instances asked per node, model and profile.
fn place_pods(s: &mut Scenario, nodes: &mut [Node], pods: &[Pod], rep: &mut Report) -> (Vec<Vm>, Asked) {
    let mut pending: Vec<Vm> = Vec::new();
    let mut asked = Asked::new();
    for pod in pods {
        let who = format!("pod {}/{}", pod.ns, pod.name);
        let node_ix = pod
            .node
            .as_ref()
            .and_then(|n| nodes.iter().position(|x| &x.def.name == n));
        if let (Some(n), None) = (&pod.node, node_ix) {
            rep.findings.push(format!(
                "{who} runs on node {n}, which is not an imported GPU node: left out"
            ));
            continue;
        }
        let Some(gis) = pod_gis(pod, node_ix, nodes, rep) else {
            continue;
        };
        let vm = Vm {
            kind: VmKind::Tenant,
            tenant: Some(pod.ns.clone()),
            ..Vm::job(0, gis.clone(), pod.cores, pod.ram_gb)
        };
        let Some(h) = node_ix else {
            pending.push(vm);
            continue;
        };
        let Some(placement) = take_instances(&mut nodes[h], h, &gis, &mut asked) else {
            let node = &nodes[h];
            let names: Vec<String> = gis
                .iter()
                .map(|g| embedded().model(g.model).profiles[g.profile].name.clone())
                .collect();
            rep.findings.push(format!(
                "node {} ({}) cannot hold its pods: {who} ({}) finds no free instance; it is pending",
                node.def.name,
                node.source,
                names.join(" + ")
            ));
            pending.push(vm);
            continue;
        };
        if !nodes[h].exact {
            rep.inferred_placements = true;
        }
        let vm = Vm {
            admitted_at: Some(0.0),
            ..vm
        };
        if let Err(e) = s.fleet.add_placed(vm.clone(), placement) {
            rep.findings.push(format!(
                "node {}: {who} does not fit ({e}); it is pending",
                nodes[h].def.name
            ));
            pending.push(vm);
        }
    }
    (pending, asked)
}

/// Takes a free instance of node `h` for each GI, largest first (each counted in `asked`); on
/// failure nothing stays taken.
fn take_instances(node: &mut Node, h: usize, gis: &[GiRequest], asked: &mut Asked) -> Option<Placement> {
    let size = |g: &GiRequest| embedded().model(g.model).profiles[g.profile].size;
    let mut order: Vec<usize> = (0..gis.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(size(&gis[i])), i));
    let mut chosen: Vec<Option<usize>> = vec![None; gis.len()];
    for &i in &order {
        *asked.entry((h, gis[i].model, gis[i].profile)).or_default() += 1;
        let g = gis[i];
        chosen[i] = node
            .slots
            .iter()
            .position(|sl| !sl.taken && node.def.gpus[sl.gpu] == g.model && sl.profile == g.profile);
        if let Some(x) = chosen[i] {
            node.slots[x].taken = true;
        }
    }
    if chosen.iter().any(Option::is_none) {
        for x in chosen.iter().flatten() {
            node.slots[*x].taken = false;
        }
        return None;
    }
    Some(Placement {
        host: h,
        gis: chosen
            .iter()
            .flatten()
            .map(|&x| GiSlot {
                gpu: node.slots[x].gpu,
                start: node.slots[x].start,
            })
            .collect(),
    })
}

/// Findings for pods asking for more instances of a profile than a node's capture or
/// ResourceSlices show.
fn count_findings(nodes: &[Node], asked: &Asked, rep: &mut Report) {
    for (h, n) in nodes.iter().enumerate() {
        if !n.seen {
            continue;
        }
        for (&(hh, m, p), &k) in asked {
            if hh != h {
                continue;
            }
            let have = n
                .slots
                .iter()
                .filter(|s| s.profile == p && n.def.gpus[s.gpu] == m)
                .count() as u32;
            if k > have {
                let model = embedded().model(m);
                rep.findings.push(format!(
                    "node {}: pods ask for {k} instance(s) of {}, {} shows {have}",
                    n.def.name,
                    model.profiles.get(p).map(|x| x.name.as_str()).unwrap_or("?"),
                    if n.source == "its capture" {
                        "the capture"
                    } else {
                        "the ResourceSlice file"
                    }
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_match_nodes_by_name_or_short_name() {
        assert!(same_host("gpu-a100-1", "gpu-a100-1"));
        assert!(same_host("gpu-a100-1", "gpu-a100-1.dc1.example.com"));
        assert!(same_host("GPU-A100-1.dc1", "gpu-a100-1"));
        assert!(!same_host("gpu-a100-1", "gpu-a100-10"));
    }

    #[test]
    fn mig_parted_configs_read_plain_and_from_a_configmap() {
        let plain = "version: v1\nmig-configs:\n  x:\n    - devices: [0, 2]\n      mig-enabled: true\n      mig-devices:\n        \"1g.5gb\": 7\n    - devices: all\n      mig-enabled: false\n";
        let c = parse_mig_parted(plain, "c.yaml").unwrap();
        assert_eq!(
            c["x"],
            vec![
                (Some(vec![0, 2]), true, vec![("1g.5gb".to_string(), 7)]),
                (None, false, vec![])
            ]
        );
        let indented: String = plain.lines().map(|l| format!("    {l}\n")).collect();
        let cm = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\ndata:\n  config.yaml: |\n{indented}"
        );
        assert_eq!(parse_mig_parted(&cm, "cm.yaml").unwrap(), c);
        let e =
            parse_mig_parted("version: v1\nmig-configs:\n  x:\n    - devices: some\n", "c.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.yaml: mig-configs.x[0].devices: `some` is neither `all` nor a list of GPU indices"
        );
        assert!(parse_mig_parted("version: v2\n", "c.yaml")
            .unwrap_err()
            .to_string()
            .contains("version"));
    }
}
