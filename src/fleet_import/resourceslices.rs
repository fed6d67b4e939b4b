//! The GPUs and MIG devices the NVIDIA DRA driver publishes (`kubectl get resourceslices -o
//! json`), read into one capture per node so that `import k8s --resourceslices` treats them as
//! it treats nvidia-smi captures.
//!
//! - Slices of driver `gpu.nvidia.com` with a `spec.nodeName` are read; slices of other drivers
//!   are left out. API versions `resource.k8s.io/v1beta1` (device fields under `basic`) and
//!   `v1beta2` and `v1` (device fields on the device) are read.
//! - A device's `type` attribute says what it is: `gpu` (a whole GPU: `productName`, `uuid`),
//!   `mig` (a MIG device: `profile`, `productName`, `parentUUID`, `uuid`) or `vfio` (a GPU passed
//!   to a virtual machine: left out). Attribute names may carry the driver's domain
//!   (`gpu.nvidia.com/profile`).
//! - A MIG device's placement: its `memorySlice<i>` capacities (one per memory slice it covers),
//!   else its name when it has the driver's form `gpu-<minor>-mig-<profile ID>-<start>-<size>`.
//!   Placements are checked against the catalog (profile of the model, size, permitted start, no
//!   overlap, at most the profile's instances). A node where some MIG device has no placement gets
//!   its instances arranged by the layout rules, and the import says its placements are inferred.
//! - GPUs are ordered by the minor number of their names (`gpu-<minor>`); a GPU that publishes
//!   MIG devices has MIG enabled, one that publishes none is a whole GPU with MIG disabled.
//! - Slices that publish partitionable devices (`sharedCounters`, `consumesCounters`: MIG devices
//!   the driver may create, not ones that exist) are left out with a finding.
//!
//! Bad input (not JSON, a missing field, an unknown product, profile or attribute value, a
//! placement the catalog forbids) is an error naming the file, the JSON path and the field.

use super::kube::{field, items, parse_json, K8sError};
use super::nvidia_smi::{Capture, CapturedGi, CapturedGpu};
use super::profiles;
use crate::catalog::{Catalog, ModelId, ProfileId};
use crate::mig::Occupancy;
use crate::ops::layouts;
use serde_json::Value;
use std::collections::BTreeMap;

/// The DRA driver of NVIDIA GPUs.
pub(crate) const DRIVER: &str = "gpu.nvidia.com";

/// One node's devices as a capture, and whether every MIG device gave its placement.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeDevices {
    pub capture: Capture,
    /// Every start slice comes from the slices (else some were arranged by the layout rules).
    pub exact: bool,
}

/// What a read of ResourceSlices found: one entry per node, and findings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slices {
    pub nodes: Vec<NodeDevices>,
    pub findings: Vec<String>,
}

/// A MIG device before it is checked against its GPU.
struct MigDev {
    path: String,
    profile: String,
    product: String,
    parent: String,
    minor: Option<u32>,
    /// (start, size, JSON path of the field that gave it).
    placement: Option<(u8, u8, String)>,
}

/// A GPU of a node: minor, uuid, product, model, MIG devices.
struct Gpu {
    minor: Option<u32>,
    uuid: String,
    product: String,
    model: ModelId,
    migs: Vec<MigDev>,
    /// Order of first appearance (for GPUs whose minor is unknown).
    seen: usize,
}

/// `gpu-<minor>` or `gpu-<minor>-mig-<profile ID>-<start>-<size>`: the minor and, for the
/// second, (profile ID, start, size).
fn parse_name(name: &str) -> (Option<u32>, Option<(u32, u8, u8)>) {
    let Some(rest) = name.strip_prefix("gpu-") else {
        return (None, None);
    };
    let mut parts = rest.split('-');
    let minor = parts.next().and_then(|m| m.parse().ok());
    if parts.next() != Some("mig") {
        return (minor, None);
    }
    let nums: Vec<Option<u32>> = parts.map(|p| p.parse().ok()).collect();
    let placed = match nums.as_slice() {
        [Some(id), Some(z), Some(n)] => u8::try_from(*z)
            .ok()
            .zip(u8::try_from(*n).ok())
            .map(|(z, n)| (*id, z, n)),
        _ => None,
    };
    (minor, placed)
}

/// A device's attributes or capacity map: on the device (v1, v1beta2) or under `basic`
/// (v1beta1).
fn device_map<'a>(dev: &'a Value, basic: bool, key: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let d = if basic { dev.get("basic")? } else { dev };
    d.get(key)?.as_object()
}

/// A string attribute (`{"string": "..."}`), with or without the driver's domain.
fn string_attr(
    attrs: Option<&serde_json::Map<String, Value>>,
    name: &str,
    file: &str,
    path: &str,
) -> Result<Option<String>, K8sError> {
    let Some(attrs) = attrs else {
        return Ok(None);
    };
    let qualified = format!("{DRIVER}/{name}");
    let (key, v) = match attrs.get(name) {
        Some(v) => (name, v),
        None => match attrs.get(&qualified) {
            Some(v) => (qualified.as_str(), v),
            None => return Ok(None),
        },
    };
    match v.get("string").and_then(Value::as_str) {
        Some(s) => Ok(Some(s.to_string())),
        None => Err(field(
            file,
            format!("{path}.{key}"),
            "expected a string attribute ({\"string\": ...})",
        )),
    }
}

/// MIG devices by node, before they join their parent GPU.
type Orphans = Vec<(String, MigDev)>;

/// A slice of the NVIDIA driver: its node, whether device fields sit under `basic`, its devices.
type SliceHead<'a> = (&'a str, bool, &'a Vec<Value>);

/// Reads `kubectl get resourceslices -o json`.
pub fn parse(text: &str, file: &str, catalog: &Catalog) -> Result<Slices, K8sError> {
    let v = parse_json(text, file)?;
    let mut out = Slices::default();
    // Per node: its GPUs by uuid, in order of appearance.
    let mut nodes: BTreeMap<String, Vec<Gpu>> = BTreeMap::new();
    let mut node_order: Vec<String> = Vec::new();
    let mut orphans: Orphans = Vec::new();
    for (i, s) in items(&v, file)?.iter().enumerate() {
        let path = format!("items[{i}]");
        let Some((node, basic, devices)) = slice_head(s, &path, file, &mut out)? else {
            continue;
        };
        if !nodes.contains_key(node) {
            node_order.push(node.to_string());
        }
        let gpus = nodes.entry(node.to_string()).or_default();
        for (j, d) in devices.iter().enumerate() {
            let dpath = format!("{path}.spec.devices[{j}]");
            read_device(d, &dpath, basic, node, file, catalog, gpus, &mut orphans)?;
        }
    }
    // MIG devices join their parent GPU (one made from the MIG device when the driver does not
    // publish the parent).
    for (node, dev) in orphans {
        let gpus = nodes.entry(node).or_default();
        let g = match gpus.iter().position(|g| g.uuid == dev.parent) {
            Some(k) => k,
            None => {
                let model = model_of(catalog, &dev.product, file, &format!("{}.productName", dev.path))?;
                let seen = gpus.len();
                gpus.push(Gpu {
                    minor: dev.minor,
                    uuid: dev.parent.clone(),
                    product: dev.product.clone(),
                    model,
                    migs: Vec::new(),
                    seen,
                });
                seen
            }
        };
        gpus[g].migs.push(dev);
    }
    for node in node_order {
        let Some(mut gpus) = nodes.remove(&node) else {
            continue;
        };
        gpus.sort_by_key(|g| (g.minor.is_none(), g.minor, g.seen));
        let (gpus, exact) = check_gpus(catalog, gpus, file)?;
        out.nodes.push(NodeDevices {
            capture: Capture {
                file: file.to_string(),
                host: node,
                cores: None,
                ram_gb: None,
                gpus,
            },
            exact,
        });
    }
    Ok(out)
}

/// A slice's API version (whether device fields sit under `basic`), kind, driver, node and
/// devices. `None` for another driver's slice, or one of partitionable devices (a finding).
fn slice_head<'a>(
    s: &'a Value,
    path: &str,
    file: &str,
    out: &mut Slices,
) -> Result<Option<SliceHead<'a>>, K8sError> {
    let api = s.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let basic = match api {
        "resource.k8s.io/v1beta1" => true,
        "resource.k8s.io/v1beta2" | "resource.k8s.io/v1" => false,
        _ => {
            return Err(field(
                file,
                format!("{path}.apiVersion"),
                format!(
                "`{api}` is not a ResourceSlice API version read here (resource.k8s.io/v1beta1, v1beta2, v1)"
            ),
            ))
        }
    };
    if s.get("kind").and_then(Value::as_str) != Some("ResourceSlice") {
        return Err(field(file, format!("{path}.kind"), "expected `ResourceSlice`"));
    }
    let spec = s.get("spec");
    let driver = spec.and_then(|x| x.get("driver")).and_then(Value::as_str);
    let Some(driver) = driver else {
        return Err(field(
            file,
            format!("{path}.spec.driver"),
            "missing or not a string",
        ));
    };
    if driver != DRIVER {
        return Ok(None);
    }
    let Some(node) = spec.and_then(|x| x.get("nodeName")).and_then(Value::as_str) else {
        return Err(field(
            file,
            format!("{path}.spec.nodeName"),
            "missing or not a string (a slice of GPUs belongs to one node)",
        ));
    };
    let devices = spec
        .and_then(|x| x.get("devices"))
        .and_then(Value::as_array)
        .ok_or_else(|| field(file, format!("{path}.spec.devices"), "missing or not an array"))?;
    let counters = spec.and_then(|x| x.get("sharedCounters")).is_some()
        || devices.iter().any(|d| {
            d.get("consumesCounters").is_some()
                || d.get("basic").and_then(|b| b.get("consumesCounters")).is_some()
        });
    if counters {
        out.findings.push(format!(
            "{file}: {path}: node {node}: the slice publishes partitionable devices (MIG devices the driver may create, not ones that exist): left out"
        ));
        return Ok(None);
    }
    Ok(Some((node, basic, devices)))
}

/// One device of a slice of `node` (`dpath` its JSON path): a GPU joins `gpus` (once per
/// uuid), a MIG device waits in `orphans` for its parent, a vfio device is skipped.
#[allow(clippy::too_many_arguments)]
fn read_device(
    d: &Value,
    dpath: &str,
    basic: bool,
    node: &str,
    file: &str,
    catalog: &Catalog,
    gpus: &mut Vec<Gpu>,
    orphans: &mut Orphans,
) -> Result<(), K8sError> {
    let Some(name) = d.get("name").and_then(Value::as_str) else {
        return Err(field(file, format!("{dpath}.name"), "missing or not a string"));
    };
    let apath = if basic {
        format!("{dpath}.basic.attributes")
    } else {
        format!("{dpath}.attributes")
    };
    let attrs = device_map(d, basic, "attributes");
    let attr = |n: &str| string_attr(attrs, n, file, &apath);
    let need = |n: &str| -> Result<String, K8sError> {
        attr(n)?.ok_or_else(|| field(file, format!("{apath}.{n}"), "missing"))
    };
    let kind = need("type")?;
    let (minor, named) = parse_name(name);
    match kind.as_str() {
        "vfio" => {}
        "gpu" => {
            let product = need("productName")?;
            let model = model_of(catalog, &product, file, &format!("{apath}.productName"))?;
            let uuid = need("uuid")?;
            if let Some(g) = gpus.iter_mut().find(|g| g.uuid == uuid) {
                g.minor = g.minor.or(minor);
                return Ok(());
            }
            let seen = gpus.len();
            gpus.push(Gpu {
                minor,
                uuid,
                product,
                model,
                migs: Vec::new(),
                seen,
            });
        }
        "mig" => {
            let placement = mig_placement(d, basic, dpath, name, named, file)?;
            let dev = MigDev {
                path: apath.clone(),
                profile: need("profile")?,
                product: need("productName")?,
                parent: need("parentUUID")?,
                minor,
                placement,
            };
            orphans.push((node.to_string(), dev));
        }
        other => {
            return Err(field(
                file,
                format!("{apath}.type"),
                format!("unknown device type `{other}` (known: gpu, mig, vfio)"),
            ))
        }
    }
    Ok(())
}

/// A MIG device's (start, size, JSON path of the field that gave it): from its contiguous
/// `memorySlice<i>` capacities, else from its name; the two must agree.
fn mig_placement(
    d: &Value,
    basic: bool,
    dpath: &str,
    name: &str,
    named: Option<(u32, u8, u8)>,
    file: &str,
) -> Result<Option<(u8, u8, String)>, K8sError> {
    let cpath = if basic {
        format!("{dpath}.basic.capacity")
    } else {
        format!("{dpath}.capacity")
    };
    let mut slices: Vec<u8> = device_map(d, basic, "capacity")
        .map(|c| {
            c.keys()
                .filter_map(|k| {
                    k.strip_prefix(&format!("{DRIVER}/"))
                        .unwrap_or(k)
                        .strip_prefix("memorySlice")
                        .and_then(|n| n.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    slices.sort_unstable();
    Ok(match (slices.first(), named) {
        (Some(&z), _) => {
            let n = slices.len() as u8;
            if slices
                .iter()
                .enumerate()
                .any(|(k, &x)| x as usize != z as usize + k)
            {
                return Err(field(
                    file,
                    format!("{cpath}.memorySlice{z}"),
                    format!("the memory slices {slices:?} of device `{name}` are not contiguous"),
                ));
            }
            if let Some((_, nz, nn)) = named.filter(|&(_, nz, nn)| (nz, nn) != (z, n)) {
                return Err(field(
                    file,
                    format!("{dpath}.name"),
                    format!(
                        "`{name}` says start {nz} size {nn}, its memorySlice capacities start {z} size {n}"
                    ),
                ));
            }
            Some((z, n, format!("{cpath}.memorySlice{z}")))
        }
        (None, Some((_, z, n))) => Some((z, n, format!("{dpath}.name"))),
        (None, None) => None,
    })
}

fn model_of(catalog: &Catalog, product: &str, file: &str, path: &str) -> Result<ModelId, K8sError> {
    profiles::model_of_product(catalog, product).ok_or_else(|| {
        field(
            file,
            path,
            format!(
                "unknown GPU product `{product}` (known: {})",
                profiles::known_products()
            ),
        )
    })
}

/// Checks every MIG device of a node against the catalog and places them: at their published
/// starts, or (when some device gives none) by the layout rules. Returns the GPUs and whether
/// every start was published.
fn check_gpus(catalog: &Catalog, gpus: Vec<Gpu>, file: &str) -> Result<(Vec<CapturedGpu>, bool), K8sError> {
    let mut exact = true;
    let mut out = Vec::with_capacity(gpus.len());
    for g in gpus {
        let model = catalog.model(g.model);
        let mut occ = Occupancy::empty();
        let mut placed: Vec<(ProfileId, Option<u8>)> = Vec::new();
        for d in &g.migs {
            if profiles::model_of_product(catalog, &d.product) != Some(g.model) {
                return Err(field(
                    file,
                    format!("{}.productName", d.path),
                    format!(
                        "`{}`, but its parent GPU {} is a {}",
                        d.product, g.uuid, g.product
                    ),
                ));
            }
            let ppath = format!("{}.profile", d.path);
            let p = profiles::resolve(model, &d.profile).ok_or_else(|| {
                field(
                    file,
                    &ppath,
                    format!(
                        "`{}` is not a MIG profile of {} (profiles: {})",
                        d.profile,
                        model.name,
                        model.profile_names()
                    ),
                )
            })?;
            let prof = &model.profiles[p];
            let Some((z, n, zpath)) = &d.placement else {
                exact = false;
                placed.push((p, None));
                continue;
            };
            if *n != prof.size {
                return Err(field(
                    file,
                    zpath,
                    format!(
                        "covers {n} memory slice(s), but {} covers {} on {}",
                        prof.name, prof.size, model.name
                    ),
                ));
            }
            if !prof.starts.contains(z) {
                let starts: Vec<String> = prof.starts.iter().map(u8::to_string).collect();
                return Err(field(
                    file,
                    zpath,
                    format!(
                        "start {z} is not a permitted start of {} on {} (permitted: {})",
                        prof.name,
                        model.name,
                        starts.join(", ")
                    ),
                ));
            }
            if occ.mask & prof.mask_at(*z) != 0 {
                return Err(field(
                    file,
                    zpath,
                    format!(
                        "{} at {z}:{n} overlaps another MIG device of GPU {}",
                        prof.name, g.uuid
                    ),
                ));
            }
            if !occ.can_place(model, p, *z) {
                return Err(field(
                    file,
                    ppath,
                    format!(
                        "GPU {} holds more than {} device(s) of {}",
                        g.uuid, prof.max_instances, prof.name
                    ),
                ));
            }
            occ.add(model, p, *z);
            placed.push((p, Some(*z)));
        }
        let gis: Vec<(ProfileId, u8)> = if placed.iter().all(|(_, z)| z.is_some()) {
            placed.iter().filter_map(|&(p, z)| z.map(|z| (p, z))).collect()
        } else {
            let mut counts = vec![0u32; model.profiles.len()];
            for (p, _) in &placed {
                counts[*p] += 1;
            }
            layouts::arrange(model, &counts).ok_or_else(|| {
                field(
                    file,
                    format!("{}.profile", g.migs[0].path),
                    format!(
                        "GPU {} publishes {}, which no arrangement places on one {}",
                        g.uuid,
                        layouts::describe_counts(model, &counts),
                        model.name
                    ),
                )
            })?
        };
        let mut gis: Vec<CapturedGi> = gis
            .into_iter()
            .enumerate()
            .map(|(k, (profile, start))| CapturedGi {
                profile,
                start,
                gi_id: k as u32,
                line: 0,
            })
            .collect();
        gis.sort_by_key(|x| x.start);
        out.push(CapturedGpu {
            model: g.model,
            product: g.product,
            mig_enabled: !g.migs.is_empty(),
            gis,
        });
    }
    Ok((out, exact))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_give_minor_and_placement() {
        assert_eq!(parse_name("gpu-3"), (Some(3), None));
        assert_eq!(parse_name("gpu-0-mig-9-4-4"), (Some(0), Some((9, 4, 4))));
        assert_eq!(parse_name("gpu-1-mig-0"), (Some(1), None));
        assert_eq!(parse_name("gpu-1-mig-19-7-1"), (Some(1), Some((19, 7, 1))));
        assert_eq!(parse_name("nic-0"), (None, None));
    }
}
