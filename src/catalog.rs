//! The hardware catalog: GPU models, their MIG profiles and host power curves.
//!
//! Hardware facts are data (`assets/gpus.toml`, `assets/hosts.toml`, embedded at build time), so a
//! new GPU model is a data change only. Loading validates every entry and names the file and the
//! entry that is wrong.

use serde::Deserialize;
use std::sync::OnceLock;

/// Largest placement grid supported (memory slices per GPU); slice sets are `u32` bit masks.
pub(crate) const MAX_SLICES: usize = 32;
/// Largest number of profiles per GPU model (per-profile counters are fixed arrays).
pub(crate) const MAX_PROFILES: usize = 12;

/// Index of a GPU model in the catalog.
pub type ModelId = usize;
/// Index of a profile within its model.
pub type ProfileId = usize;

/// A GPU-instance profile of one GPU model (paper Tables 1, 5, 6, and NVIDIA's MIG user guide).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    /// Compute slices.
    pub compute: u8,
    /// Size g in memory slices.
    pub size: u8,
    pub memory_gb: f64,
    /// Permitted start slices, ascending; each a multiple of `size`.
    pub starts: Vec<u8>,
    /// Most instances of this profile on one GPU.
    pub max_instances: u8,
    /// A +me (media extensions) profile: left out of CF and of the synthetic workload by default.
    pub media_ext: bool,
}

/// A MIG-capable GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuModel {
    pub name: String,
    /// Compatibility class: GIs run only on GPUs of their class. Models of one class share one
    /// profile table (checked at load time), so a profile index means the same on all of them.
    pub class: String,
    /// |U|: memory slices of the placement grid.
    pub memory_slices: u8,
    pub compute_slices: u8,
    pub memory_gb: f64,
    pub idle_w: f64,
    pub max_w: f64,
    /// The model has MIG (`mig = false` in `assets/gpus.toml` for models such as the L40S): a
    /// GPU without it is only ever whole or shared, and its profile list is empty.
    pub mig: bool,
    /// Switching MIG on needs a GPU reset (`mig_enable_reset = true` for the A100 and A30); on the
    /// H100 and later models it does not (docs/model.md, "GPU modes").
    pub mig_enable_reset: bool,
    /// PCI device IDs of the model's boards, normalised to `0xDDDDVVVV` upper case (what
    /// mig-parted's `device-filter` matches).
    pub pci_ids: Vec<String>,
    pub profiles: Vec<Profile>,
}

impl GpuModel {
    /// The profile with this name.
    pub fn profile(&self, name: &str) -> Option<ProfileId> {
        self.profiles.iter().position(|p| p.name == name)
    }

    /// Profiles counted by CF and offered by the synthetic workload (the paper's set: no +me).
    pub fn cf_profiles(&self) -> impl Iterator<Item = ProfileId> + '_ {
        self.profiles
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.media_ext)
            .map(|(i, _)| i)
    }

    /// Bit mask of every memory slice of the grid.
    pub(crate) fn full_mask(&self) -> u32 {
        if self.memory_slices as usize >= 32 {
            u32::MAX
        } else {
            (1u32 << self.memory_slices) - 1
        }
    }

    /// The smallest profile (+me left out) with at least `gb` of memory: the least memory, then
    /// the fewest slices, then the least compute; the rule for a request with no shape but a
    /// memory need.
    pub(crate) fn smallest_profile_for(&self, gb: f64) -> Option<ProfileId> {
        self.cf_profiles()
            .filter(|&p| self.profiles[p].memory_gb >= gb)
            .min_by(|&a, &b| {
                let (pa, pb) = (&self.profiles[a], &self.profiles[b]);
                pa.memory_gb
                    .total_cmp(&pb.memory_gb)
                    .then(pa.size.cmp(&pb.size))
                    .then(pa.compute.cmp(&pb.compute))
            })
    }

    /// Names of all profiles, for error messages.
    pub(crate) fn profile_names(&self) -> String {
        self.profiles
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Profile {
    /// Bit mask of the slices a GI of this profile covers when it starts at `start`.
    pub(crate) fn mask_at(&self, start: u8) -> u32 {
        (((1u64 << self.size) - 1) << start) as u32
    }
}

/// Host power as a function of the core load, as (load in 0..=1, watts) points.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerCurve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl PowerCurve {
    /// Watts at core load `load` (clamped to 0..=1), interpolated linearly between points.
    pub fn watts(&self, load: f64) -> f64 {
        let load = load.clamp(0.0, 1.0);
        let pts = &self.points;
        if load <= pts[0].0 {
            return pts[0].1;
        }
        for w in pts.windows(2) {
            let ((l0, w0), (l1, w1)) = (w[0], w[1]);
            if load <= l1 {
                return w0 + (w1 - w0) * (load - l0) / (l1 - l0);
            }
        }
        pts[pts.len() - 1].1
    }

    pub fn idle_w(&self) -> f64 {
        self.watts(0.0)
    }
}

/// The GPU models and host power curves known to the program.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub models: Vec<GpuModel>,
    pub curves: Vec<PowerCurve>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpusFile {
    model: Vec<ModelEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    name: String,
    class: Option<String>,
    memory_slices: u8,
    compute_slices: u8,
    memory_gb: f64,
    idle_w: f64,
    max_w: f64,
    #[serde(default = "yes")]
    mig: bool,
    #[serde(default)]
    mig_enable_reset: bool,
    #[serde(default)]
    pci_ids: Vec<String>,
    #[serde(default)]
    profiles: Vec<ProfileEntry>,
}

/// The PCI device IDs of a model entry, checked (`0x` and eight hex digits) and upper-cased.
fn pci_ids(ids: &[String], ctx: &str) -> anyhow::Result<Vec<String>> {
    ids.iter()
        .map(|id| {
            normal_pci_id(id).ok_or_else(|| {
                anyhow::anyhow!("{ctx}: pci_ids: `{id}` is not a PCI device ID such as 0x20B010DE")
            })
        })
        .collect()
}

/// A PCI device ID as `0x` and eight upper-case hex digits, if `id` is one (any case).
pub(crate) fn normal_pci_id(id: &str) -> Option<String> {
    let hex = id.strip_prefix("0x").or_else(|| id.strip_prefix("0X"))?;
    (hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| format!("0x{}", hex.to_ascii_uppercase()))
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileEntry {
    name: String,
    compute: u8,
    size: u8,
    memory_gb: f64,
    starts: Vec<u8>,
    max: Option<u8>,
    #[serde(default)]
    media_ext: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    curve: Vec<CurveEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CurveEntry {
    name: String,
    points: Vec<(f64, f64)>,
}

const GPUS_TOML: &str = include_str!("../assets/gpus.toml");
const HOSTS_TOML: &str = include_str!("../assets/hosts.toml");

/// The catalog embedded at build time from `assets/`.
pub fn embedded() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Catalog::parse(GPUS_TOML, "assets/gpus.toml", HOSTS_TOML, "assets/hosts.toml").expect(
            "assets/gpus.toml and assets/hosts.toml are fixed at build time and parsed by the \
             catalog's unit tests",
        )
    })
}

impl Catalog {
    /// Parses and validates the two catalog files; errors name the file and the entry.
    pub fn parse(gpus: &str, gpus_file: &str, hosts: &str, hosts_file: &str) -> anyhow::Result<Catalog> {
        let g: GpusFile =
            toml::from_str(gpus).map_err(|e| anyhow::anyhow!("{gpus_file}: {}", one_line(&e.to_string())))?;
        let h: HostsFile = toml::from_str(hosts)
            .map_err(|e| anyhow::anyhow!("{hosts_file}: {}", one_line(&e.to_string())))?;
        let mut models: Vec<GpuModel> = Vec::new();
        for m in g.model {
            let ctx = format!("{gpus_file}: model `{}`", m.name);
            if models.iter().any(|o| o.name == m.name) {
                anyhow::bail!("{ctx}: duplicate model name");
            }
            if m.memory_slices == 0 || m.memory_slices as usize > MAX_SLICES {
                anyhow::bail!("{ctx}: memory_slices must be 1..={MAX_SLICES}");
            }
            if m.mig && (m.profiles.is_empty() || m.profiles.len() > MAX_PROFILES) {
                anyhow::bail!("{ctx}: needs 1..={MAX_PROFILES} profiles");
            }
            if !m.mig && !m.profiles.is_empty() {
                anyhow::bail!("{ctx}: a model with `mig = false` lists no profiles");
            }
            if !(m.memory_gb.is_finite() && m.memory_gb >= 1.0) {
                anyhow::bail!("{ctx}: memory_gb must be at least 1");
            }
            if !(m.idle_w >= 0.0 && m.max_w >= m.idle_w) {
                anyhow::bail!("{ctx}: needs 0 <= idle_w <= max_w");
            }
            let mut profiles: Vec<Profile> = Vec::new();
            for p in m.profiles {
                let pctx = format!("{ctx}, profile `{}`", p.name);
                if profiles.iter().any(|o| o.name == p.name) {
                    anyhow::bail!("{pctx}: duplicate profile name");
                }
                if p.size == 0 || p.size > m.memory_slices {
                    anyhow::bail!("{pctx}: size {} outside 1..={}", p.size, m.memory_slices);
                }
                if p.compute == 0 || p.compute > m.compute_slices {
                    anyhow::bail!("{pctx}: compute {} outside 1..={}", p.compute, m.compute_slices);
                }
                if p.starts.is_empty() {
                    anyhow::bail!("{pctx}: no permitted start");
                }
                for (i, &z) in p.starts.iter().enumerate() {
                    if z % p.size != 0 {
                        anyhow::bail!("{pctx}: start {z} is not a multiple of size {}", p.size);
                    }
                    if z as u32 + p.size as u32 > m.memory_slices as u32 {
                        anyhow::bail!(
                            "{pctx}: start {z} + size {} runs past the {} slices of the grid",
                            p.size,
                            m.memory_slices
                        );
                    }
                    if i > 0 && p.starts[i - 1] >= z {
                        anyhow::bail!("{pctx}: starts must be strictly ascending");
                    }
                }
                let max = p.max.unwrap_or(p.starts.len() as u8);
                if max == 0 {
                    anyhow::bail!("{pctx}: max must be at least 1");
                }
                profiles.push(Profile {
                    name: p.name,
                    compute: p.compute,
                    size: p.size,
                    memory_gb: p.memory_gb,
                    starts: p.starts,
                    max_instances: max,
                    media_ext: p.media_ext,
                });
            }
            let class = m.class.unwrap_or_else(|| m.name.clone());
            if let Some(o) = models.iter().find(|o| o.class == class) {
                if o.profiles != profiles || o.memory_slices != m.memory_slices {
                    anyhow::bail!(
                        "{ctx}: class `{class}` is shared with `{}` but the profile tables differ",
                        o.name
                    );
                }
            }
            let pci_ids = pci_ids(&m.pci_ids, &ctx)?;
            if let Some(o) = models
                .iter()
                .find(|o| o.pci_ids.iter().any(|x| pci_ids.contains(x)))
            {
                anyhow::bail!("{ctx}: pci_ids: an ID is also listed for `{}`", o.name);
            }
            models.push(GpuModel {
                name: m.name,
                class,
                memory_slices: m.memory_slices,
                compute_slices: m.compute_slices,
                memory_gb: m.memory_gb,
                idle_w: m.idle_w,
                max_w: m.max_w,
                mig: m.mig,
                mig_enable_reset: m.mig_enable_reset,
                pci_ids,
                profiles,
            });
        }
        let mut curves: Vec<PowerCurve> = Vec::new();
        for c in h.curve {
            let ctx = format!("{hosts_file}: curve `{}`", c.name);
            if curves.iter().any(|o| o.name == c.name) {
                anyhow::bail!("{ctx}: duplicate curve name");
            }
            if c.points.len() < 2 {
                anyhow::bail!("{ctx}: needs at least two (load, watts) points");
            }
            if c.points[0].0 != 0.0 || c.points[c.points.len() - 1].0 != 1.0 {
                anyhow::bail!("{ctx}: loads must run from 0.0 to 1.0");
            }
            if c.points.windows(2).any(|w| w[0].0 >= w[1].0) {
                anyhow::bail!("{ctx}: loads must be strictly ascending");
            }
            curves.push(PowerCurve {
                name: c.name,
                points: c.points,
            });
        }
        if curves.is_empty() {
            anyhow::bail!("{hosts_file}: no power curve");
        }
        Ok(Catalog { models, curves })
    }

    /// [`GpuModel::smallest_profile_for`] of model `m`.
    pub(crate) fn smallest_profile_for(&self, m: ModelId, gb: f64) -> Option<ProfileId> {
        self.model(m).smallest_profile_for(gb)
    }

    /// The model with this name (case-insensitive).
    pub fn model_id(&self, name: &str) -> Option<ModelId> {
        self.models.iter().position(|m| m.name.eq_ignore_ascii_case(name))
    }

    pub fn model(&self, id: ModelId) -> &GpuModel {
        &self.models[id]
    }

    /// Names of all models, for error messages.
    pub(crate) fn model_names(&self) -> String {
        self.models
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn curve_id(&self, name: &str) -> Option<usize> {
        self.curves.iter().position(|c| c.name == name)
    }

    /// The default host curve (the first one: the paper's SPECpower host).
    pub fn default_curve(&self) -> usize {
        0
    }

    /// Whether GIs requested for model `a` may run on a GPU of model `b`.
    pub fn same_class(&self, a: ModelId, b: ModelId) -> bool {
        a == b || self.models[a].class == self.models[b].class
    }
}

/// Collapses a multi-line parser message into one line.
pub fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '|' || c == '^' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| match c {
            '\t' => " ".to_string(),
            // Raw control bytes (CR, ESC, BEL, ...) from a file never reach the terminal.
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
