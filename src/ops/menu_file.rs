//! Layout menus from real mig-parted files: the check of every config against the slice rules of
//! each catalog model it applies to (`migplan check-config`), and the layouts of one model that a
//! file offers (`layout --menu FILE.yaml`, the `[regime] menu` of a scenario).
//!
//! Which models an entry applies to: with a `device-filter`, the catalog models whose PCI device
//! IDs (`pci_ids` in `assets/gpus.toml`) it lists; IDs no catalog model has are skipped with a
//! note naming them (NVIDIA's default config lists boards migplan has no geometry for). Without a
//! filter mig-parted applies the entry to every GPU of the node, so it is checked on every MIG
//! model that offers all of its profiles: a model that lacks one of them is not one the entry was
//! written for (mig-parted would refuse it there), and an entry whose profiles no model offers is
//! skipped with a note.

use super::layouts::{self, describe_counts, Layout, Origin};
use super::mig_parted::{self, Config, Entry, MigPartedError};
use crate::catalog::{Catalog, GpuModel, ModelId};
use crate::mig::{self, Occupancy};
use std::collections::BTreeMap;

/// A mig-parted file read for menus: its configs by name and the line of each config and entry.
#[derive(Debug, Clone)]
pub struct MenuFile {
    pub file: String,
    pub configs: BTreeMap<String, Config>,
    /// Per config: the line of its name and of each of its entries (0 where not found).
    lines: BTreeMap<String, (usize, Vec<usize>)>,
}

/// Reads a mig-parted file (plain or in a ConfigMap) for menus.
pub fn read(text: &str, file: &str) -> Result<MenuFile, MigPartedError> {
    let configs = mig_parted::parse(text, file)?;
    let lines = config_lines(text, &configs);
    Ok(MenuFile {
        file: file.to_string(),
        configs,
        lines,
    })
}

/// Reads a mig-parted file from disk.
pub fn load(path: &std::path::Path) -> anyhow::Result<MenuFile> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{file}: cannot read: {e}"))?;
    Ok(read(&text, &file)?)
}

/// The line of each config name (the first `NAME:` after `mig-configs:`) and of each of its
/// entries (the list items at the first item's indentation before the next config).
fn config_lines(text: &str, configs: &BTreeMap<String, Config>) -> BTreeMap<String, (usize, Vec<usize>)> {
    let all: Vec<&str> = text.lines().collect();
    let start = all
        .iter()
        .position(|l| l.trim_start().starts_with("mig-configs:"))
        .unwrap_or(0);
    let key_of = |l: &str| -> Option<String> {
        let t = l.trim_start();
        if t.starts_with('-') || t.starts_with('#') {
            return None;
        }
        let (k, _) = t.split_once(':')?;
        Some(k.trim().trim_matches('"').trim_matches('\'').to_string())
    };
    // Config names sit at the indentation of the first key under `mig-configs:`.
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let name_indent = all
        .iter()
        .skip(start + 1)
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| indent_of(l));
    let mut heads: Vec<(usize, String)> = Vec::new();
    for (i, l) in all.iter().enumerate().skip(start + 1) {
        if Some(indent_of(l)) == name_indent {
            if let Some(k) = key_of(l) {
                if configs.contains_key(&k) && !heads.iter().any(|(_, n)| n == &k) {
                    heads.push((i, k));
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for (h, (i, name)) in heads.iter().enumerate() {
        let end = heads.get(h + 1).map_or(all.len(), |(j, _)| *j);
        let mut item_indent = None;
        let mut entries = Vec::new();
        for (j, l) in all.iter().enumerate().take(end).skip(i + 1) {
            let t = l.trim_start();
            if t.starts_with("- ") || t == "-" {
                let ind = indent_of(l);
                if item_indent.is_none() {
                    item_indent = Some(ind);
                }
                if item_indent == Some(ind) {
                    entries.push(j + 1);
                }
            }
        }
        out.insert(name.clone(), (i + 1, entries));
    }
    out
}

impl MenuFile {
    /// The line of a config's name (0 when not found).
    pub fn line_of(&self, config: &str) -> usize {
        self.lines.get(config).map_or(0, |(l, _)| *l)
    }

    /// The line of a config's entry (the config's line when not found).
    pub(crate) fn entry_line(&self, config: &str, entry: usize) -> usize {
        self.lines
            .get(config)
            .and_then(|(_, es)| es.get(entry).copied())
            .unwrap_or_else(|| self.line_of(config))
    }

    /// The layouts this file offers for `model`: one per config entry that applies to the model
    /// and can be placed, named after the config (`NAME[0,1]` for an entry limited to GPU
    /// indices). Entries that cannot be placed are left out; `check` says why.
    pub(crate) fn layouts_for(&self, catalog: &Catalog, mid: ModelId) -> Vec<Layout> {
        let model = catalog.model(mid);
        let mut out = Vec::new();
        for (name, cfg) in &self.configs {
            for e in cfg {
                if !applies_to(catalog, e).models.contains(&mid) {
                    continue;
                }
                let Ok(counts) = counts_of(model, e) else {
                    continue;
                };
                let lname = match &e.devices {
                    None => name.clone(),
                    Some(ds) => {
                        let ks: Vec<String> = ds.iter().map(usize::to_string).collect();
                        format!("{name}[{}]", ks.join(","))
                    }
                };
                if out.iter().any(|l: &Layout| l.name == lname) {
                    continue;
                }
                if let Some(l) = Layout::new(lname, mid, model, Origin::Imported, e.mig_enabled, counts) {
                    out.push(l);
                }
            }
        }
        out
    }
}

/// The catalog models an entry applies to, and the filter IDs that name none.
#[derive(Debug, Clone, Default)]
pub struct Applies {
    pub models: Vec<ModelId>,
    pub unknown_ids: Vec<String>,
}

/// Which catalog models an entry applies to (see the module documentation).
pub(crate) fn applies_to(catalog: &Catalog, e: &Entry) -> Applies {
    let mut out = Applies::default();
    if e.device_filter.is_empty() {
        for (mid, m) in catalog.models.iter().enumerate() {
            if m.mig && e.mig_devices.iter().all(|(p, _)| m.profile(p).is_some()) {
                out.models.push(mid);
            }
        }
        return out;
    }
    for f in &e.device_filter {
        let id = crate::catalog::normal_pci_id(f).unwrap_or_else(|| f.clone());
        match catalog.models.iter().position(|m| m.pci_ids.contains(&id)) {
            Some(mid) if !out.models.contains(&mid) => out.models.push(mid),
            Some(_) => {}
            None => out.unknown_ids.push(id),
        }
    }
    out
}

/// Why an entry's instances cannot be placed on one GPU of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaceable {
    /// The profile that does not fit.
    pub profile: String,
    pub why: String,
}

/// Instances per profile of an entry on `model`, or the profile that the model lacks.
fn counts_of(model: &GpuModel, e: &Entry) -> Result<Vec<u32>, Unplaceable> {
    let mut counts = vec![0u32; model.profiles.len()];
    for (p, c) in &e.mig_devices {
        let Some(i) = model.profile(p) else {
            return Err(Unplaceable {
                profile: p.clone(),
                why: format!(
                    "{} has no profile `{}` (known: {})",
                    model.name,
                    p,
                    model.profile_names()
                ),
            });
        };
        counts[i] = counts[i].saturating_add(*c);
    }
    Ok(counts)
}

/// Which profile of `counts` fails on one empty GPU of `model`, and why: over its instance limit,
/// more memory or compute slices than the GPU has, or no free start left after the larger
/// instances (placed largest first, each count the most that fits with those before it).
pub(crate) fn why_unplaceable(model: &GpuModel, counts: &[u32]) -> Option<Unplaceable> {
    if layouts::arrange(model, counts).is_some() {
        return None;
    }
    for (p, &n) in counts.iter().enumerate() {
        let pr = &model.profiles[p];
        if n > pr.max_instances as u32 {
            return Some(Unplaceable {
                profile: pr.name.clone(),
                why: format!(
                    "{n} x {} asked; a {} holds at most {}",
                    pr.name, model.name, pr.max_instances
                ),
            });
        }
    }
    let memory: u32 = counts
        .iter()
        .enumerate()
        .map(|(p, &n)| n * model.profiles[p].size as u32)
        .sum();
    let compute = layouts::compute_of(model, counts);
    let mut order: Vec<usize> = (0..counts.len()).filter(|&p| counts[p] > 0).collect();
    order.sort_by_key(|&p| {
        let pr = &model.profiles[p];
        (std::cmp::Reverse(pr.size), std::cmp::Reverse(pr.compute), p)
    });
    let last = order.last().copied().unwrap_or(0);
    let blame = |p: usize, why: String| Unplaceable {
        profile: model.profiles[p].name.clone(),
        why,
    };
    for (need, has, what) in [
        (memory, model.memory_slices as u32, "memory"),
        (compute, model.compute_slices as u32, "compute"),
    ] {
        if need > has {
            return Some(blame(
                last,
                format!(
                    "the instances need {need} {what} slices; a {} has {has}",
                    model.name
                ),
            ));
        }
    }
    let mut so_far = vec![0u32; counts.len()];
    for &p in &order {
        for k in 1..=counts[p] {
            so_far[p] = k;
            if layouts::arrange(model, &so_far).is_none() {
                so_far[p] = k - 1;
                let before = if so_far.iter().all(|&n| n == 0) {
                    "an empty GPU".to_string()
                } else {
                    describe_counts(model, &so_far)
                };
                let starts: Vec<String> = model.profiles[p].starts.iter().map(u8::to_string).collect();
                return Some(blame(
                    p,
                    format!(
                        "instance {k} of {} finds no free start (permitted starts {}) beside {before}",
                        counts[p],
                        starts.join(", ")
                    ),
                ));
            }
        }
    }
    Some(blame(last, "no arrangement of start slices fits".into()))
}

/// What one entry gives one model.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Placeable: the instances, and what they leave unused on the GPU.
    Placeable {
        layout: String,
        /// Compute slices and memory slices (GB) no instance of the config uses.
        unused_compute: u32,
        unused_memory_slices: u32,
        unused_memory_gb: f64,
        /// True when no further instance of any profile fits beside the config's: the unused
        /// compute and memory are stranded.
        stranded: bool,
    },
    /// MIG off: the GPU stays whole.
    Disabled,
    Unplaceable(Unplaceable),
}

/// One row of a check: a config's entry on one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub config: String,
    pub entry: usize,
    pub line: usize,
    pub model: String,
    /// `all` or the GPU indices.
    pub devices: String,
    pub verdict: Verdict,
}

/// The check of a whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub file: String,
    pub configs: usize,
    pub rows: Vec<Row>,
    /// Entries skipped, each with its config, line and why (unknown device IDs, profiles of no
    /// catalog model).
    pub notes: Vec<String>,
}

impl Check {
    pub(crate) fn failures(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Unplaceable(_)))
    }
}

/// The verdict of one entry on one model.
pub fn verdict(model: &GpuModel, e: &Entry) -> Verdict {
    if !e.mig_enabled {
        return Verdict::Disabled;
    }
    let counts = match counts_of(model, e) {
        Ok(c) => c,
        Err(u) => return Verdict::Unplaceable(u),
    };
    let Some(arr) = layouts::arrange(model, &counts) else {
        return Verdict::Unplaceable(why_unplaceable(model, &counts).unwrap_or(Unplaceable {
            profile: String::new(),
            why: "no arrangement of start slices fits".into(),
        }));
    };
    let mut occ = Occupancy::empty();
    for &(p, z) in &arr {
        occ.add(model, p, z);
    }
    let used_mem = occ.mask.count_ones();
    let unused_memory_slices = (model.memory_slices as u32).saturating_sub(used_mem);
    let unused_compute = (model.compute_slices as u32).saturating_sub(layouts::compute_of(model, &counts));
    let room = (0..model.profiles.len()).any(|p| mig::capacity(model, &occ, p) > 0);
    let per_slice = model.memory_gb / model.memory_slices.max(1) as f64;
    Verdict::Placeable {
        layout: describe_counts(model, &counts),
        unused_compute,
        unused_memory_slices,
        unused_memory_gb: unused_memory_slices as f64 * per_slice,
        stranded: !room && (unused_compute > 0 || unused_memory_slices > 0),
    }
}

/// Checks every config of a file on every catalog model it applies to; with `only`, on that
/// model alone (an entry without a filter then applies to it whatever its profiles).
pub fn check(mf: &MenuFile, catalog: &Catalog, only: Option<ModelId>) -> Check {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (name, cfg) in &mf.configs {
        for (i, e) in cfg.iter().enumerate() {
            let line = mf.entry_line(name, i);
            let ap = applies_to(catalog, e);
            let models: Vec<ModelId> = match only {
                Some(m) if e.device_filter.is_empty() => vec![m],
                Some(m) => ap.models.iter().copied().filter(|&x| x == m).collect(),
                None => ap.models.clone(),
            };
            if !ap.unknown_ids.is_empty() && only.is_none() {
                notes.push(format!(
                    "{}:{line}: config `{name}` entry {i}: device ID(s) {} name no model in the catalog: skipped",
                    mf.file,
                    ap.unknown_ids.join(", ")
                ));
            }
            if e.device_filter.is_empty() && models.is_empty() {
                let profiles: Vec<&str> = e.mig_devices.iter().map(|(p, _)| p.as_str()).collect();
                notes.push(format!(
                    "{}:{line}: config `{name}` entry {i}: no catalog model offers {}: skipped",
                    mf.file,
                    profiles.join(" and ")
                ));
            }
            let devices = match &e.devices {
                None => "all".to_string(),
                Some(ds) => ds.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
            };
            for mid in models {
                let model = catalog.model(mid);
                rows.push(Row {
                    config: name.clone(),
                    entry: i,
                    line,
                    model: model.name.clone(),
                    devices: devices.clone(),
                    verdict: verdict(model, e),
                });
            }
        }
    }
    Check {
        file: mf.file.clone(),
        configs: mf.configs.len(),
        rows,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "version: v1
mig-configs:
  all-balanced:
    - device-filter: [\"0x233010DE\"]
      devices: all
      mig-enabled: true
      mig-devices:
        \"1g.10gb\": 2
        \"2g.20gb\": 1
        \"3g.40gb\": 1
    - device-filter: [\"0xFFFF10DE\"]
      devices: all
      mig-enabled: true
      mig-devices:
        \"1g.99gb\": 1

  too-many:
    - devices: all
      mig-enabled: true
      mig-devices:
        \"4g.40gb\": 1
        \"3g.40gb\": 2
";

    #[test]
    fn lines_blame_and_notes() {
        let cat = crate::catalog::embedded();
        let mf = read(TEXT, "f.yaml").unwrap();
        assert_eq!(mf.line_of("all-balanced"), 3);
        assert_eq!(mf.entry_line("all-balanced", 1), 11);
        assert_eq!(mf.line_of("too-many"), 17);
        let c = check(&mf, cat, None);
        assert_eq!(c.configs, 2);
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
        assert!(c.notes[0].starts_with("f.yaml:11: config `all-balanced` entry 1: device ID(s) 0xFFFF10DE"));
        let bad: Vec<&Row> = c.failures().collect();
        // too-many applies to both models with 4g.40gb and 3g.40gb (A100-80GB and H100-80GB).
        assert_eq!(bad.len(), 2);
        for r in bad {
            let Verdict::Unplaceable(u) = &r.verdict else {
                unreachable!()
            };
            assert_eq!(r.line, 18);
            assert_eq!(u.profile, "3g.40gb", "{u:?}");
            assert!(u.why.contains("memory slices"), "{u:?}");
        }
    }
}
