//! mig-parted configs: export the current layout of each host, and import such a config back to
//! layouts per device.
//!
//! The format (mig-parted's config files, read by [`crate::ops::mig_parted`]): `version: v1`,
//! then `mig-configs:` mapping a config name to a list of entries, each with `devices` (`all` or
//! a list of GPU indices), `mig-enabled` and `mig-devices` (profile -> count). The export writes
//! one config per host, named after the host, so a node is labelled
//! `nvidia.com/mig.config=<host>`. GPUs of a host with the same configuration share one entry;
//! when one entry covers every GPU of the host it says `devices: all`.
//!
//! GPU modes (docs/fleet-import.md, "mig-parted and GPU modes"): a GPU in MIG mode is exported
//! with `mig-enabled: true` and its instances; a whole or shared GPU of a MIG model with
//! `mig-enabled: false`; a GPU whose model has no MIG (L40S, L4) is left out, and a host with only
//! such GPUs gets no config (the MIG manager does not run on it). The importer reads
//! `mig-enabled` as mig-parted applies it: on a GPU without MIG, `devices: all` and
//! `mig-enabled: false` leave it alone and `mig-enabled: true` on a listed index is refused; on a
//! whole or shared GPU, `mig-enabled: false` changes nothing.
//!
//! mig-parted does not pin start slices: the driver chooses where each instance starts, so only
//! the instance counts are carried, and the export says so in a comment. The importer checks every
//! profile against the host's GPU model and every device's instances against the placement rules.

use crate::catalog::GpuModel;
use crate::fleet::{Fleet, GpuMode, HostId};
use crate::ops::layouts;
use crate::ops::mig_parted::{self, printable};
use std::collections::BTreeMap;

/// The MIG configuration of one GPU: MIG mode and instances per profile (indexed by profile id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLayout {
    pub mig_enabled: bool,
    pub counts: Vec<u32>,
}

/// The layouts of one host's GPUs, in GPU order (`None`: the config leaves that GPU alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLayouts {
    pub host: HostId,
    pub devices: Vec<Option<DeviceLayout>>,
}

/// The current configuration of every GPU of host `h`: the instances of a GPU in MIG mode, MIG
/// off for a whole or shared GPU, and `None` for a GPU whose model has no MIG.
pub fn current(fleet: &Fleet, h: HostId) -> HostLayouts {
    let host = &fleet.hosts[h];
    HostLayouts {
        host: h,
        devices: host
            .gpus
            .iter()
            .map(|g| {
                let model = fleet.catalog.model(g.model);
                if !model.mig {
                    return None;
                }
                let on = g.mode == GpuMode::Mig;
                Some(DeviceLayout {
                    mig_enabled: on,
                    counts: (0..model.profiles.len())
                        .map(|p| if on { g.occ.counts[p] as u32 } else { 0 })
                        .collect(),
                })
            })
            .collect(),
    }
}

/// Renders hosts' layouts as one mig-parted config document. Hosts without GPUs are left out.
pub fn render(fleet: &Fleet, scenario: &str, hosts: &[HostLayouts]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# mig-parted config exported by migplan from scenario `{scenario}`: one config per host,\n"
    ));
    out.push_str("# named after the host (label the node nvidia.com/mig.config=<host>).\n");
    out.push_str("# mig-parted does not pin start slices: the driver chooses where each instance starts,\n");
    out.push_str("# so only the instance counts below are applied, not migplan's start slices.\n");
    out.push_str("version: v1\n");
    let mut body = String::new();
    for hl in hosts {
        let host = &fleet.hosts[hl.host];
        // Group GPUs with equal layouts, in order of their first GPU.
        let mut groups: Vec<(&DeviceLayout, Vec<usize>)> = Vec::new();
        for (k, d) in hl.devices.iter().enumerate() {
            let Some(d) = d else { continue };
            match groups.iter_mut().find(|(g, _)| *g == d) {
                Some((_, ks)) => ks.push(k),
                None => groups.push((d, vec![k])),
            }
        }
        if groups.is_empty() {
            // No GPU with MIG (or none configured): nothing for the MIG manager to do.
            continue;
        }
        body.push_str(&format!("  {}:\n", yaml_key(&host.name)));
        for (d, ks) in &groups {
            let devices = if groups.len() == 1 && ks.len() == host.gpus.len() {
                "all".to_string()
            } else {
                format!(
                    "[{}]",
                    ks.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", ")
                )
            };
            let model = fleet.catalog.model(host.gpus[ks[0]].model);
            body.push_str(&format!("    - devices: {devices}\n"));
            body.push_str(&format!("      mig-enabled: {}\n", d.mig_enabled));
            if !d.mig_enabled {
                continue;
            }
            let held: Vec<(usize, u32)> = d
                .counts
                .iter()
                .copied()
                .enumerate()
                .filter(|&(_, n)| n > 0)
                .collect();
            if held.is_empty() {
                body.push_str("      mig-devices: {}\n");
            } else {
                body.push_str("      mig-devices:\n");
                for (p, n) in held {
                    body.push_str(&format!("        \"{}\": {n}\n", model.profiles[p].name));
                }
            }
        }
    }
    if body.is_empty() {
        out.push_str("mig-configs: {}\n");
    } else {
        out.push_str("mig-configs:\n");
        out.push_str(&body);
    }
    out
}

/// Quotes a YAML mapping key when it is not a plain word.
fn yaml_key(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        s.to_string()
    } else {
        format!("{:?}", s)
    }
}

/// The mig-parted config of the current layout of the hosts `hosts` (every host when empty).
pub fn export(fleet: &Fleet, scenario: &str, hosts: &[HostId]) -> String {
    let all: Vec<HostId> = if hosts.is_empty() {
        (0..fleet.hosts.len()).collect()
    } else {
        hosts.to_vec()
    };
    let layouts: Vec<HostLayouts> = all.iter().map(|&h| current(fleet, h)).collect();
    render(fleet, scenario, &layouts)
}

/// Why a mig-parted config cannot be imported: where (the file and the YAML path of the config,
/// entry and field, or a line) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct ImportError {
    pub at: String,
    pub problem: String,
}

impl ImportError {
    fn new(at: impl Into<String>, problem: impl Into<String>) -> ImportError {
        ImportError {
            at: at.into(),
            problem: problem.into(),
        }
    }
}

impl From<mig_parted::MigPartedError> for ImportError {
    fn from(e: mig_parted::MigPartedError) -> ImportError {
        match e {
            mig_parted::MigPartedError::At {
                file,
                line,
                column,
                problem,
            } => ImportError::new(format!("{file}:{line}:{column}"), problem),
            mig_parted::MigPartedError::File { file, problem } => ImportError::new(file, problem),
            mig_parted::MigPartedError::Field { file, path, problem } => {
                ImportError::new(format!("{file}: {path}"), problem)
            }
        }
    }
}

/// The node labels of a `labels.sh` as `migplan export k8s` writes it: node -> (config, line).
pub type NodeLabels = BTreeMap<String, (String, usize)>;

/// Reads the `nvidia.com/mig.config` labels of a shell script of `kubectl label node NODE
/// nvidia.com/mig.config=VALUE` lines (words plain or single-quoted); other lines are skipped.
pub(crate) fn parse_labels(text: &str, file: &str) -> Result<NodeLabels, ImportError> {
    let mut out = NodeLabels::new();
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{file}:{}", i + 1);
        let l = line.trim();
        if !l.starts_with("kubectl ") || !l.contains("nvidia.com/mig.config=") {
            continue;
        }
        let words = shell_words(l).ok_or_else(|| ImportError::new(at(), "unterminated quote"))?;
        let node = words
            .windows(3)
            .find(|w| w[0] == "label" && w[1] == "node")
            .map(|w| w[2].clone())
            .ok_or_else(|| {
                ImportError::new(
                    at(),
                    "expected `kubectl label node NODE nvidia.com/mig.config=CONFIG`",
                )
            })?;
        let Some(value) = words
            .iter()
            .find_map(|w| w.strip_prefix("nvidia.com/mig.config="))
        else {
            return Err(ImportError::new(at(), "no `nvidia.com/mig.config=CONFIG` word"));
        };
        if let Some((_, first)) = out.insert(node.clone(), (value.to_string(), i + 1)) {
            return Err(ImportError::new(
                at(),
                format!(
                    "node `{}` is labelled twice (first on line {first})",
                    printable(&node)
                ),
            ));
        }
    }
    Ok(out)
}

/// Splits a shell line into words: blanks separate, single quotes and `'\''` as [`crate::ops::k8s_export`]
/// writes them, a `#` word starts a comment. `None` on an unterminated quote.
fn shell_words(l: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = l.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// Reads a mig-parted config against the scenario's hosts: a config applies to the host it is
/// named after, else to the node labels of the scenario (`nvidia.com/mig.config` kept from a
/// Kubernetes import). Errors name the config, entry and field.
pub fn import(fleet: &Fleet, text: &str, file: &str) -> Result<Vec<HostLayouts>, ImportError> {
    import_with_labels(fleet, text, file, None)
}

/// [`import`] with node labels (a `labels.sh` read by [`parse_labels`], and its file name), which
/// take precedence over the scenario's own labels: the configs of `migplan export k8s` are
/// named after layouts that several nodes share.
pub fn import_with_labels(
    fleet: &Fleet,
    text: &str,
    file: &str,
    labels: Option<(&NodeLabels, &str)>,
) -> Result<Vec<HostLayouts>, ImportError> {
    let configs = mig_parted::parse(text, file)?;
    if let Some((labels, lfile)) = labels {
        for (node, (config, line)) in labels {
            if !fleet.hosts.iter().any(|h| &h.name == node) {
                return Err(ImportError::new(
                    format!("{lfile}:{line}"),
                    format!("node `{}` is not a host of the scenario", printable(node)),
                ));
            }
            if !configs.contains_key(config) {
                return Err(ImportError::new(
                    format!("{lfile}:{line}"),
                    format!(
                        "node `{}` is labelled `{}`, a config {file} does not define",
                        printable(node),
                        printable(config)
                    ),
                ));
            }
        }
    }
    let mut out = Vec::new();
    for (h, host) in fleet.hosts.iter().enumerate() {
        let by_label = labels
            .and_then(|(l, _)| l.get(&host.name))
            .map(|(c, _)| c.as_str())
            .or(host.mig_config.as_deref().filter(|c| configs.contains_key(*c)));
        let name = if configs.contains_key(&host.name) {
            host.name.as_str()
        } else if let Some(c) = by_label {
            c
        } else {
            continue;
        };
        let ctx = format!("{file}: mig-configs.{}", printable(name));
        let devices = host_devices(fleet, h, &configs[name], &ctx)?;
        out.push(HostLayouts { host: h, devices });
    }
    if out.is_empty() {
        let names: Vec<&str> = configs.keys().map(String::as_str).take(3).collect();
        return Err(ImportError::new(
            file,
            if names.is_empty() {
                "`mig-configs` is empty: no host to import".to_string()
            } else {
                format!(
                    "no config applies to a host of the scenario (configs: {}{}): name configs after hosts, \
                     or give the node labels (--labels labels.sh, as `migplan export k8s` writes it)",
                    names
                        .iter()
                        .map(|n| format!("`{}`", printable(n)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if configs.len() > 3 { ", ..." } else { "" }
                )
            },
        ));
    }
    Ok(out)
}

/// The configuration one config gives each GPU of host `h`, as mig-parted applies it.
fn host_devices(
    fleet: &Fleet,
    h: usize,
    entries: &mig_parted::Config,
    ctx: &str,
) -> Result<Vec<Option<DeviceLayout>>, ImportError> {
    let host = &fleet.hosts[h];
    let name = &host.name;
    let n = host.gpus.len();
    let mut devices: Vec<Option<DeviceLayout>> = vec![None; n];
    for (i, e) in entries.iter().enumerate() {
        let ectx = format!("{ctx}[{i}]");
        let all = e.devices.is_none();
        let ks: Vec<usize> = match &e.devices {
            None => (0..n).collect(),
            Some(list) => {
                if let Some(&k) = list.iter().find(|&&k| k >= n) {
                    return Err(ImportError::new(
                        format!("{ectx}.devices"),
                        format!("`{k}` is not a GPU index of host `{name}` (0..{n})"),
                    ));
                }
                list.clone()
            }
        };
        for k in ks {
            let model = fleet.catalog.model(host.gpus[k].model);
            if !matches_filter(&e.device_filter, &model.pci_ids) {
                // mig-parted applies an entry with a `device-filter` only to the GPUs it names.
                continue;
            }
            if !model.mig {
                // mig-parted skips a GPU without MIG under `devices: all` or MIG off, and refuses
                // to enable MIG on one it is given by index.
                if all || !e.mig_enabled {
                    continue;
                }
                return Err(ImportError::new(
                    &ectx,
                    format!(
                        "GPU {k} of host `{name}` is a {}, which has no MIG: `mig-enabled: true` cannot apply to it",
                        model.name
                    ),
                ));
            }
            if devices[k].is_some() {
                return Err(ImportError::new(
                    &ectx,
                    format!("GPU {k} of host `{name}` is configured twice"),
                ));
            }
            let counts = counts_for(model, &e.mig_devices)
                .map_err(|p| ImportError::new(&ectx, format!("GPU {k}: {p}")))?;
            if layouts::arrange(model, &counts).is_none() {
                return Err(ImportError::new(
                    &ectx,
                    format!(
                        "GPU {k}: {} cannot be placed on one {}",
                        layouts::describe_counts(model, &counts),
                        model.name
                    ),
                ));
            }
            devices[k] = Some(DeviceLayout {
                mig_enabled: e.mig_enabled,
                counts,
            });
        }
    }
    Ok(devices)
}

/// Whether a GPU with device IDs `ids` passes an entry's `device-filter` (empty: every GPU).
fn matches_filter(filter: &[String], ids: &[String]) -> bool {
    filter.is_empty()
        || filter
            .iter()
            .filter_map(|f| crate::catalog::normal_pci_id(f))
            .any(|f| ids.contains(&f))
}

fn counts_for(model: &GpuModel, wanted: &[(String, u32)]) -> Result<Vec<u32>, String> {
    let mut counts = vec![0u32; model.profiles.len()];
    for (p, c) in wanted {
        let Some(i) = model.profile(p) else {
            return Err(format!(
                "unknown profile `{}` for {} (known: {})",
                printable(p),
                model.name,
                model.profile_names()
            ));
        };
        counts[i] = counts[i].saturating_add(*c);
    }
    Ok(counts)
}
