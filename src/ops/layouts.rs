//! The menu of verified MIG layouts: the geometries a whole GPU may be given.
//!
//! Layouts are data (`assets/layouts.toml`, embedded at build time): the GPU operator's named
//! layouts per model (`all-disabled`, `all-enabled`, `all-<profile>`, `all-balanced`) and the
//! project's own (`tenant-inference-a`, `tenant-heavy`, `whole`): a short menu of layouts verified
//! on real hardware. Here the verification is the placement rules of §3: every
//! layout is placed on an empty GPU of its model when the file is loaded, first with the default GI
//! placement (Eq. 3, largest GI first) and, when that fails, with an exhaustive search over start
//! slices. A layout that cannot be placed is an error naming it.
//!
//! [`maximal_layouts`] enumerates every placeable multiset of profiles of a model that cannot take
//! one more instance: the exact layout planner may use any of them beyond the fixed menu.

use crate::catalog::{Catalog, GpuModel, ModelId, ProfileId};
use crate::explore;
use crate::mig::{self, Occupancy};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use toml::Spanned;

/// Where a layout comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// One of the NVIDIA GPU operator's named layouts (mig-parted's default config).
    GpuOperator,
    /// One of the project's own layouts, verified against the placement rules (`verified` in the
    /// layouts file; files written before the name changed say `seed-003`, still read).
    #[serde(rename = "verified", alias = "seed-003")]
    Verified,
    /// Found by the exact planner among all placeable layouts; not on the menu.
    Generated,
    /// Read from a mig-parted config.
    Imported,
}

/// A whole-GPU layout: whether MIG mode is on and how many instances of each profile it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub name: String,
    pub model: ModelId,
    pub origin: Origin,
    /// MIG mode on. A layout with MIG off (`all-disabled`) holds no instances and leaves the GPU
    /// whole for non-MIG work.
    pub mig_enabled: bool,
    /// Instances per profile, indexed by the model's profile ids.
    pub counts: Vec<u32>,
    /// One arrangement on an empty GPU: (profile, start slice) per instance, largest first.
    pub arrangement: Vec<(ProfileId, u8)>,
}

impl Layout {
    /// Builds and verifies a layout: `None` when its instances cannot all be placed on one GPU.
    pub fn new(
        name: impl Into<String>,
        model_id: ModelId,
        model: &GpuModel,
        origin: Origin,
        mig_enabled: bool,
        counts: Vec<u32>,
    ) -> Option<Layout> {
        let arrangement = arrange(model, &counts)?;
        Some(Layout {
            name: name.into(),
            model: model_id,
            origin,
            mig_enabled,
            counts,
            arrangement,
        })
    }

    /// Instances in the layout.
    pub fn instances(&self) -> u32 {
        self.counts.iter().sum()
    }

    /// Compute slices the layout's instances use.
    pub fn compute(&self, model: &GpuModel) -> u32 {
        compute_of(model, &self.counts)
    }

    /// `2x1g.10gb + 1x2g.20gb + 1x3g.40gb`, `MIG disabled` or `MIG enabled, no instances`.
    pub fn describe(&self, model: &GpuModel) -> String {
        if !self.mig_enabled {
            return "MIG disabled".into();
        }
        describe_counts(model, &self.counts)
    }
}

/// The non-zero per-profile counts as (profile name, count), by profile.
pub(crate) fn named_counts<'a>(
    model: &'a GpuModel,
    counts: &'a [u32],
) -> impl Iterator<Item = (&'a str, u32)> + 'a {
    counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(p, &n)| (model.profiles[p].name.as_str(), n))
}

/// `2x1g.10gb + 1x3g.40gb` for per-profile counts (`no instances` when all are zero).
pub fn describe_counts(model: &GpuModel, counts: &[u32]) -> String {
    let parts: Vec<String> = named_counts(model, counts)
        .map(|(name, n)| format!("{n}x{name}"))
        .collect();
    if parts.is_empty() {
        "no instances".into()
    } else {
        parts.join(" + ")
    }
}

/// Compute slices of per-profile counts.
pub(crate) fn compute_of(model: &GpuModel, counts: &[u32]) -> u32 {
    counts
        .iter()
        .enumerate()
        .map(|(p, &n)| n * model.profiles[p].compute as u32)
        .sum()
}

/// One arrangement of the instances `counts` on an empty GPU of `model`, or `None` when there is
/// none. Tries the default GI placement (Eq. 3) with the largest instances first; when that fails
/// (it can: the default start does not look ahead), searches every start slice exhaustively.
pub fn arrange(model: &GpuModel, counts: &[u32]) -> Option<Vec<(ProfileId, u8)>> {
    if counts.len() != model.profiles.len() {
        return None;
    }
    // Largest memory size first, then most compute, then profile order.
    let mut gis: Vec<ProfileId> = Vec::new();
    for (p, &n) in counts.iter().enumerate() {
        if n > model.profiles[p].max_instances as u32 {
            return None;
        }
        gis.extend(std::iter::repeat_n(p, n as usize));
    }
    gis.sort_by_key(|&p| {
        let pr = &model.profiles[p];
        (std::cmp::Reverse(pr.size), std::cmp::Reverse(pr.compute), p)
    });
    let mut occ = Occupancy::empty();
    let mut placed = Vec::with_capacity(gis.len());
    let mut default_ok = true;
    for &p in &gis {
        match mig::default_start(model, &occ, p) {
            Some(z) => {
                occ.add(model, p, z);
                placed.push((p, z));
            }
            None => {
                default_ok = false;
                break;
            }
        }
    }
    if default_ok {
        return Some(placed);
    }
    let mut out = Vec::with_capacity(gis.len());
    if search(model, &gis, Occupancy::empty(), 0, &mut out) {
        Some(out)
    } else {
        None
    }
}

/// Depth-first search over start slices; instances of one profile take ascending starts (they are
/// interchangeable, so other orders only repeat work).
fn search(
    model: &GpuModel,
    gis: &[ProfileId],
    occ: Occupancy,
    min_start: u8,
    out: &mut Vec<(ProfileId, u8)>,
) -> bool {
    let Some((&p, rest)) = gis.split_first() else {
        return true;
    };
    let starts: Vec<u8> = mig::free_starts(model, &occ, p)
        .filter(|&z| z >= min_start)
        .collect();
    for z in starts {
        let mut next = occ;
        next.add(model, p, z);
        out.push((p, z));
        let next_min = if rest.first() == Some(&p) { z + 1 } else { 0 };
        if search(model, rest, next, next_min, out) {
            return true;
        }
        out.pop();
    }
    false
}

/// Every placeable multiset of the profiles `profiles` on one GPU of `model` (as per-profile count
/// vectors), found by enumerating every configuration reachable from an empty GPU (§3): a multiset
/// is placeable when some arrangement of it exists.
pub(crate) fn placeable_layouts(model: &GpuModel, profiles: &[ProfileId]) -> BTreeSet<Vec<u32>> {
    explore::configurations(model, profiles)
        .iter()
        .map(|(_, occ)| {
            occ.counts[..model.profiles.len()]
                .iter()
                .map(|&c| c as u32)
                .collect()
        })
        .collect()
}

/// The placeable multisets of `profiles` (see [`placeable_layouts`]) that cannot take one more
/// instance of any of those profiles, in ascending order of their count vectors.
pub fn maximal_layouts(model: &GpuModel, profiles: &[ProfileId]) -> Vec<Vec<u32>> {
    let placeable = placeable_layouts(model, profiles);
    placeable
        .iter()
        .filter(|c| {
            profiles.iter().all(|&p| {
                let mut more = (*c).clone();
                more[p] += 1;
                !placeable.contains(&more)
            })
        })
        .cloned()
        .collect()
}

/// The layouts of every model and each model's planner menu.
#[derive(Debug, Clone)]
pub struct Menu {
    layouts: Vec<Layout>,
    /// Per model: indices into `layouts` of the greedy planner's default menu, in file order.
    planner: BTreeMap<ModelId, Vec<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutsFile {
    model: Vec<ModelSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSpec {
    name: Spanned<String>,
    #[serde(default)]
    menu: Vec<Spanned<String>>,
    layouts: Vec<LayoutSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutSpec {
    name: Spanned<String>,
    origin: Origin,
    #[serde(default = "yes")]
    mig_enabled: bool,
    #[serde(default)]
    devices: BTreeMap<String, u32>,
}

fn yes() -> bool {
    true
}

const LAYOUTS_TOML: &str = include_str!("../../assets/layouts.toml");

/// The menu embedded at build time from `assets/layouts.toml` (validated by a test).
pub fn embedded() -> &'static Menu {
    static MENU: OnceLock<Menu> = OnceLock::new();
    MENU.get_or_init(|| {
        Menu::parse(LAYOUTS_TOML, "assets/layouts.toml", crate::catalog::embedded())
            .expect("embedded layouts are valid")
    })
}

fn line_of(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].matches('\n').count() + 1
}

/// The largest number of instances of `p` one empty GPU holds.
pub(crate) fn max_count(model: &GpuModel, p: ProfileId) -> u32 {
    mig::capacity(model, &Occupancy::empty(), p)
}

impl Menu {
    /// Parses and verifies a layouts file; errors name the file, line, model and layout.
    pub fn parse(src: &str, file: &str, catalog: &Catalog) -> anyhow::Result<Menu> {
        let spec: LayoutsFile = toml::from_str(src).map_err(|e| {
            let l = e.span().map(|s| line_of(src, s.start)).unwrap_or(1);
            anyhow::anyhow!("{file}:{l}: {}", crate::catalog::one_line(e.message()))
        })?;
        let mut layouts: Vec<Layout> = Vec::new();
        let mut planner = BTreeMap::new();
        for m in spec.model {
            let mline = line_of(src, m.name.span().start);
            let Some(mid) = catalog.model_id(m.name.get_ref()) else {
                anyhow::bail!(
                    "{file}:{mline}: unknown GPU model `{}` (known: {})",
                    m.name.get_ref(),
                    catalog.model_names()
                );
            };
            if planner.contains_key(&mid) {
                anyhow::bail!("{file}:{mline}: model `{}` is listed twice", m.name.get_ref());
            }
            let model = catalog.model(mid);
            let first = layouts.len();
            for l in m.layouts {
                let name = l.name.get_ref().clone();
                let line = line_of(src, l.name.span().start);
                let ctx = format!("{file}:{line}: model `{}`, layout `{name}`", model.name);
                if layouts[first..].iter().any(|o| o.name == name) {
                    anyhow::bail!("{ctx}: duplicate layout name");
                }
                if !matches!(l.origin, Origin::GpuOperator | Origin::Verified) {
                    anyhow::bail!("{ctx}: origin must be `gpu-operator` or `verified`");
                }
                if !l.mig_enabled && !l.devices.is_empty() {
                    anyhow::bail!("{ctx}: a layout with mig_enabled = false holds no devices");
                }
                let mut counts = vec![0u32; model.profiles.len()];
                for (prof, &n) in &l.devices {
                    let Some(p) = model.profile(prof) else {
                        anyhow::bail!(
                            "{ctx}: unknown profile `{prof}` (known: {})",
                            model.profile_names()
                        );
                    };
                    if n == 0 {
                        anyhow::bail!("{ctx}: `{prof}` = 0; leave the profile out instead");
                    }
                    counts[p] = n;
                }
                let Some(layout) = Layout::new(name.clone(), mid, model, l.origin, l.mig_enabled, counts)
                else {
                    anyhow::bail!(
                        "{ctx}: {} cannot be placed on one {} GPU (no arrangement of start slices fits)",
                        describe_counts(model, &vec_from(&l.devices, model)),
                        model.name
                    );
                };
                // The operator's `all-<profile>` layouts hold the largest count that fits.
                if let (Origin::GpuOperator, Some(pname)) = (l.origin, name.strip_prefix("all-")) {
                    let pname = pname.strip_suffix(".me").map(|b| format!("{b}+me"));
                    let pname = pname.as_deref().unwrap_or(&name["all-".len()..]);
                    if let Some(p) = model.profile(pname) {
                        let max = max_count(model, p);
                        if layout.counts[p] != max || layout.instances() != max {
                            anyhow::bail!(
                                "{ctx}: an `all-{pname}` layout holds exactly {max} x {pname} on a {}",
                                model.name
                            );
                        }
                    }
                }
                layouts.push(layout);
            }
            let mut menu = Vec::new();
            for n in &m.menu {
                let Some(i) = layouts[first..].iter().position(|l| &l.name == n.get_ref()) else {
                    anyhow::bail!(
                        "{file}:{}: model `{}`: menu names unknown layout `{}`",
                        line_of(src, n.span().start),
                        model.name,
                        n.get_ref()
                    );
                };
                menu.push(first + i);
            }
            planner.insert(mid, menu);
        }
        Ok(Menu { layouts, planner })
    }

    /// Every layout of every model, in file order.
    pub fn all(&self) -> &[Layout] {
        &self.layouts
    }

    /// The layouts of one model, in file order.
    pub fn for_model(&self, model: ModelId) -> impl Iterator<Item = &Layout> {
        self.layouts.iter().filter(move |l| l.model == model)
    }

    /// The layout of `model` called `name`.
    pub fn get(&self, model: ModelId, name: &str) -> Option<&Layout> {
        self.for_model(model).find(|l| l.name == name)
    }

    /// The greedy planner's default menu for `model` (empty when the file gives none).
    pub fn planner_menu(&self, model: ModelId) -> Vec<&Layout> {
        self.planner
            .get(&model)
            .map(|ix| ix.iter().map(|&i| &self.layouts[i]).collect())
            .unwrap_or_default()
    }

    /// The name a set of instances is known by: the planner menu's name first, then any other
    /// layout of the model with MIG on (file order); `None` for a geometry not on file.
    pub fn name_of(&self, model: ModelId, counts: &[u32]) -> Option<&str> {
        self.planner_menu(model)
            .into_iter()
            .chain(self.for_model(model))
            .find(|l| l.mig_enabled && l.counts == counts)
            .map(|l| l.name.as_str())
    }
}

fn vec_from(devices: &BTreeMap<String, u32>, model: &GpuModel) -> Vec<u32> {
    let mut v = vec![0; model.profiles.len()];
    for (n, &c) in devices {
        if let Some(p) = model.profile(n) {
            v[p] = c;
        }
    }
    v
}

#[cfg(test)]
mod tests;
