//! mig-parted configs: export the current layout of each host, and import such a config back to
//! layouts per device.
//!
//! The format (mig-parted's config files): `version: v1`, then `mig-configs:` mapping a config name to a list of
//! entries, each with `devices` (`all` or a list of GPU indices), `mig-enabled` and `mig-devices`
//! (profile -> count). One config per host, named after the host, so a node is labelled
//! `nvidia.com/mig.config=<host>`. GPUs of a host with the same instances share one entry; when
//! one entry covers every GPU of the host it says `devices: all`. A GPU without instances is
//! exported as MIG enabled with no devices (migplan's GPUs are always in MIG mode).
//!
//! mig-parted does not pin start slices: the driver chooses where each instance starts, so only
//! the instance counts are carried, and the export says so in a comment. The importer checks every
//! profile against the host's GPU model and every device's instances against the placement rules.

use crate::catalog::GpuModel;
use crate::fleet::{Fleet, HostId};
use crate::ops::layouts;
use serde_yaml::Value;

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

/// The current layout of every GPU of host `h`: the instances on it now.
pub fn current(fleet: &Fleet, h: HostId) -> HostLayouts {
    let host = &fleet.hosts[h];
    HostLayouts {
        host: h,
        devices: host
            .gpus
            .iter()
            .map(|g| {
                let model = fleet.catalog.model(g.model);
                Some(DeviceLayout {
                    mig_enabled: true,
                    counts: (0..model.profiles.len())
                        .map(|p| g.occ.counts[p] as u32)
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
    out.push_str("version: v1\nmig-configs:\n");
    for hl in hosts {
        let host = &fleet.hosts[hl.host];
        if host.gpus.is_empty() {
            continue;
        }
        out.push_str(&format!("  {}:\n", yaml_key(&host.name)));
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
            out.push_str("    []\n");
            continue;
        }
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
            out.push_str(&format!("    - devices: {devices}\n"));
            out.push_str(&format!("      mig-enabled: {}\n", d.mig_enabled));
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
                out.push_str("      mig-devices: {}\n");
            } else {
                out.push_str("      mig-devices:\n");
                for (p, n) in held {
                    out.push_str(&format!("        \"{}\": {n}\n", model.profiles[p].name));
                }
            }
        }
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
/// entry and field) and what is wrong.
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

/// Reads a mig-parted config whose config names are the fleet's host names (as [`export`] writes
/// them) into layouts per device. Errors name the config, entry and field.
pub fn import(fleet: &Fleet, text: &str, file: &str) -> Result<Vec<HostLayouts>, ImportError> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| {
        ImportError::new(
            file,
            format!("not YAML: {}", crate::catalog::one_line(&e.to_string())),
        )
    })?;
    let Value::Mapping(top) = doc else {
        return Err(ImportError::new(
            file,
            "expected a mapping with `version` and `mig-configs`",
        ));
    };
    for k in top.keys() {
        match k.as_str() {
            Some("version") | Some("mig-configs") => {}
            _ => {
                return Err(ImportError::new(
                    file,
                    format!("unknown top-level key {}", show(k)),
                ))
            }
        }
    }
    match top.get("version").and_then(Value::as_str) {
        Some("v1") => {}
        Some(v) => {
            return Err(ImportError::new(
                file,
                format!("version `{v}` is not supported (expected v1)"),
            ))
        }
        None => return Err(ImportError::new(file, "missing `version: v1`")),
    }
    let Some(Value::Mapping(configs)) = top.get("mig-configs") else {
        return Err(ImportError::new(
            file,
            "`mig-configs` must be a mapping of config names",
        ));
    };
    let mut out = Vec::new();
    for (name, entries) in configs {
        let Some(name) = name.as_str() else {
            return Err(ImportError::new(
                file,
                format!("config name {} is not a string", show(name)),
            ));
        };
        let ctx = format!("{file}: mig-configs.{}", printable(name));
        let Some(h) = fleet.hosts.iter().position(|x| x.name == name) else {
            return Err(ImportError::new(
                &ctx,
                format!("no host named `{}` in the scenario", printable(name)),
            ));
        };
        if out.iter().any(|o: &HostLayouts| o.host == h) {
            return Err(ImportError::new(&ctx, format!("host `{name}` has two configs")));
        }
        let host = &fleet.hosts[h];
        let n = host.gpus.len();
        let mut devices: Vec<Option<DeviceLayout>> = vec![None; n];
        let Value::Sequence(entries) = entries else {
            return Err(ImportError::new(&ctx, "expected a list of entries"));
        };
        for (i, e) in entries.iter().enumerate() {
            let ectx = format!("{ctx}[{i}]");
            let Value::Mapping(e) = e else {
                return Err(ImportError::new(&ectx, "expected a mapping"));
            };
            for k in e.keys() {
                match k.as_str() {
                    Some("devices") | Some("mig-enabled") | Some("mig-devices") => {}
                    _ => {
                        return Err(ImportError::new(
                            &ectx,
                            format!(
                                "unknown key {} (supported: devices, mig-enabled, mig-devices)",
                                show(k)
                            ),
                        ))
                    }
                }
            }
            let ks: Vec<usize> = match e.get("devices") {
                Some(Value::String(s)) if s == "all" => (0..n).collect(),
                Some(Value::Sequence(list)) => {
                    let mut ks = Vec::new();
                    for d in list {
                        match d.as_u64() {
                            Some(k) if (k as usize) < n => ks.push(k as usize),
                            _ => {
                                return Err(ImportError::new(
                                    format!("{ectx}.devices"),
                                    format!("{} is not a GPU index of host `{name}` (0..{n})", show(d)),
                                ))
                            }
                        }
                    }
                    ks
                }
                Some(other) => {
                    return Err(ImportError::new(
                        format!("{ectx}.devices"),
                        format!("{} is neither `all` nor a list of indices", show(other)),
                    ))
                }
                None => return Err(ImportError::new(&ectx, "missing `devices`")),
            };
            let mig_enabled = match e.get("mig-enabled") {
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(ImportError::new(
                        format!("{ectx}.mig-enabled"),
                        format!("{} is not true or false", show(other)),
                    ))
                }
                None => return Err(ImportError::new(&ectx, "missing `mig-enabled`")),
            };
            let wanted: Vec<(String, u32)> = match e.get("mig-devices") {
                None => Vec::new(),
                Some(Value::Mapping(m)) => {
                    let mut v = Vec::new();
                    for (p, c) in m {
                        let Some(p) = p.as_str() else {
                            return Err(ImportError::new(
                                format!("{ectx}.mig-devices"),
                                format!("profile {} is not a string", show(p)),
                            ));
                        };
                        let Some(c) = c.as_u64().and_then(|c| u32::try_from(c).ok()) else {
                            return Err(ImportError::new(
                                format!("{ectx}.mig-devices.{p}"),
                                format!("{} is not a count", show(c)),
                            ));
                        };
                        v.push((p.to_string(), c));
                    }
                    v
                }
                Some(other) => {
                    return Err(ImportError::new(
                        format!("{ectx}.mig-devices"),
                        format!("{} is not a mapping", show(other)),
                    ))
                }
            };
            if !mig_enabled && wanted.iter().any(|&(_, c)| c > 0) {
                return Err(ImportError::new(
                    &ectx,
                    "mig-devices given with mig-enabled: false",
                ));
            }
            for k in ks {
                if devices[k].is_some() {
                    return Err(ImportError::new(
                        &ectx,
                        format!("GPU {k} of host `{name}` is configured twice"),
                    ));
                }
                let model = fleet.catalog.model(host.gpus[k].model);
                let counts = counts_for(model, &wanted)
                    .map_err(|e| ImportError::new(&ectx, format!("GPU {k}: {e}")))?;
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
                devices[k] = Some(DeviceLayout { mig_enabled, counts });
            }
        }
        out.push(HostLayouts { host: h, devices });
    }
    Ok(out)
}

fn counts_for(model: &GpuModel, wanted: &[(String, u32)]) -> Result<Vec<u32>, String> {
    let mut counts = vec![0u32; model.profiles.len()];
    for (p, c) in wanted {
        let Some(i) = model.profile(p) else {
            return Err(format!(
                "unknown profile `{p}` for {} (known: {})",
                model.name,
                model.profile_names()
            ));
        };
        counts[i] += c;
    }
    Ok(counts)
}

fn show(v: &Value) -> String {
    serde_yaml::to_string(v)
        .map(|s| format!("`{}`", printable(s.trim())))
        .unwrap_or_else(|_| "(value)".into())
}

/// `s` fit for a one-line message: control characters (newlines, escapes) escaped, at most 60
/// characters kept.
fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(60)
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect();
    if s.chars().count() > 60 {
        out.push_str("...");
    }
    out
}
