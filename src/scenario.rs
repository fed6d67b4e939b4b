//! Scenario files (TOML): a fleet, VMs with optional placements, pending requests, workload
//! settings (§6.2) and policy settings (§6.1). Unknown fields are errors, and every error names
//! the file, line, column and field. [`save`] writes atomically (temporary file, then rename) and
//! what it writes loads back to the same state.

use crate::catalog::{embedded, Catalog};
use crate::fleet::{Fleet, GiRequest, GiSlot, GpuMode, Host, Placement, Shape, Vm, VmKind};
use crate::policy_kind::PolicyKind;
pub use crate::policy_settings::{
    OrigamigSettings, PackingSettings, Preset, PresetValue, Reenable, TcSettings, DEFAULT_DELTA_JOB_EXTRA,
    DEFAULT_LP_ITERATION_LIMIT, DEFAULT_MERGE_HOSTS, DEFAULT_NODE_LIMIT, DEFAULT_SIM_TIME_LIMIT_S,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

mod regime;
mod settings;
pub use regime::{PluginChoice, RegimeKind, RegimeSettings};

/// The demo scenario embedded in the binary (opened by `migplan` with no arguments).
pub const DEMO: &str = include_str!("../scenarios/demo.toml");

/// A scenario file as written on disk.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Simulated time zero as an RFC 3339 date (default 2026-01-01T00:00:00Z).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Simulated time of the saved state, in seconds after `start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now_s: Option<f64>,
    #[serde(default, rename = "host_group", skip_serializing_if = "Vec::is_empty")]
    pub host_groups: Vec<HostGroupSpec>,
    #[serde(default, rename = "host", skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostSpec>,
    #[serde(default, rename = "vm", skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<VmSpec>,
    #[serde(default)]
    pub workload: WorkloadSettings,
    #[serde(default)]
    pub policy: PolicySettings,
    /// Per-tenant quotas: tenant -> profile -> most GIs at once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quotas: BTreeMap<String, BTreeMap<String, u32>>,
    /// How instances come to exist: the paper's regime, static layouts or dynamic MIG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<RegimeSettings>,
}

/// `count` identical hosts named `{prefix}{index}`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostGroupSpec {
    pub prefix: Spanned<String>,
    pub count: u32,
    pub cores: u32,
    pub ram_gb: u32,
    pub gpus: Vec<Spanned<String>>,
    /// GPU modes in GPU order (`mig`, `whole`, `shared`); absent: MIG (whole for models without
    /// MIG).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Spanned<String>>,
}

/// One host.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostSpec {
    pub name: Spanned<String>,
    pub cores: u32,
    pub ram_gb: u32,
    #[serde(default)]
    pub gpus: Vec<Spanned<String>>,
    /// GPU modes in GPU order (`mig`, `whole`, `shared`); absent: MIG (whole for models without
    /// MIG).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Spanned<String>>,
    /// A teaching note shown beside the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Teaching notes per GPU, in GPU order ("" for none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_notes: Vec<String>,
    /// The node's `nvidia.com/mig.config` label when the fleet was imported from Kubernetes (a
    /// layout of the menu): `export k8s` keeps it while the instances in use fit that layout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_config: Option<String>,
}

/// One VM: placed when `host` is given (with one `at` entry `GPU@START` per GI, or `GPU` per GPU
/// of a share or gang), pending otherwise. Its shape: `profiles` (MIG), `share_gb` with `weight`
/// and `isolation` (a soft share), `gpus` (a gang of whole GPUs), or `memory_gb` alone (the
/// smallest MIG profile of `model` with that much memory).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct VmSpec {
    pub id: u64,
    /// GPU model (class) of the GIs, share or gang; required when the VM asks for GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Spanned<String>>,
    /// A soft share: its memory limit in GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_gb: Option<Spanned<u32>>,
    /// A soft share's compute weight (default 1 / the shares a GPU of its size holds: gb / GPU GB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<Spanned<f64>>,
    /// A soft share that needs isolation: it never goes on a shared GPU but takes a whole one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<bool>,
    /// A gang: this many whole GPUs on one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<Spanned<u32>>,
    /// A memory need with no shape: the smallest MIG profile of `model` that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb: Option<Spanned<f64>>,
    pub cores: u32,
    pub ram_gb: u32,
    #[serde(default = "default_kind")]
    pub kind: VmKind,
    /// Lifetime in hours from admission; absent means open-ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_h: Option<f64>,
    /// Arrival, hours of simulated time (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_h: Option<f64>,
    /// Admission, hours of simulated time (placed VMs; default the arrival).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admitted_h: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<Spanned<String>>,
}

fn default_kind() -> VmKind {
    VmKind::Job
}

/// Lifetime distribution of the synthetic workload (§6.2, Table 9).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LifetimeDist {
    Exponential,
    Lognormal,
}

/// Workload settings (§6.2 and the variants of Table 9).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadSettings {
    /// Arrivals from the workload at all (the TUI can switch them off).
    pub enabled: bool,
    /// Offered load rho.
    pub load: f64,
    pub seed: u64,
    pub job_share: f64,
    pub job_mean_h: f64,
    pub tenant_mean_h: f64,
    pub lifetime: LifetimeDist,
    pub lognormal_sigma: f64,
    /// Probability that a VM asks for two GIs instead of one.
    pub two_gi_prob: f64,
    pub cores_per_compute_slice: u32,
    pub ram_gb_per_compute_slice: u32,
    pub warmup_h: f64,
    pub measure_h: f64,
    /// Include +me profiles in the profile draw.
    pub media_ext: bool,
    /// Profile weights per model (model -> profile -> weight); uniform when absent.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub profile_mix: BTreeMap<String, BTreeMap<String, f64>>,
    /// Weight multiplier of the larger profiles (at least half a GPU's memory slices) in the
    /// profile draw: Table 9's "larger profiles half or twice as likely" is 0.5 or 2 (default 1).
    pub large_profile_weight: f64,
    /// A pod-list CSV (Alibaba GPU 2023 format) replacing the synthetic generator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Trace replay: keep the pods created in the trace's last this many days (§6.5: 34).
    pub trace_window_days: f64,
    /// Trace replay: GPU model the pods are mapped to (§6.5: the A100-40GB).
    pub trace_model: String,
    /// The shapes of the synthetic requests (`[workload.mix]`): all MIG when absent.
    #[serde(skip_serializing_if = "ShapeMix::is_unset")]
    pub mix: ShapeMix,
}

/// `[workload.mix]`: which share of the synthetic arrivals are soft shares and gangs
/// (docs/simulation.md). A share asks for the memory and compute of the GIs it drew (weight:
/// their compute slices over the GPU's); a gang for `gang_gpus` whole GPUs.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ShapeMix {
    /// Probability that an arrival is a soft share.
    pub share: f64,
    /// Probability that a share asks for isolation (it then takes a whole GPU).
    pub isolated: f64,
    /// Probability that an arrival is a gang.
    pub gang: f64,
    /// GPUs of a gang.
    pub gang_gpus: u32,
}

impl Default for ShapeMix {
    fn default() -> Self {
        ShapeMix {
            share: 0.0,
            isolated: 0.0,
            gang: 0.0,
            gang_gpus: 8,
        }
    }
}

impl ShapeMix {
    /// Some arrivals are shares or gangs.
    pub fn is_set(&self) -> bool {
        self.share > 0.0 || self.gang > 0.0
    }

    fn is_unset(&self) -> bool {
        *self == ShapeMix::default()
    }

    /// Probabilities within 0..1 (share + gang at most 1), a gang of 1..=64 GPUs.
    pub fn check(&self) -> anyhow::Result<()> {
        for (name, x) in [
            ("share", self.share),
            ("isolated", self.isolated),
            ("gang", self.gang),
        ] {
            if !(0.0..=1.0).contains(&x) {
                anyhow::bail!("workload.mix.{name} must be within 0..1, not {x}");
            }
        }
        if self.share + self.gang > 1.0 {
            anyhow::bail!(
                "workload.mix.share + workload.mix.gang must be at most 1, not {}",
                self.share + self.gang
            );
        }
        if !(1..=64).contains(&self.gang_gpus) {
            anyhow::bail!(
                "workload.mix.gang_gpus must be within 1..=64, not {}",
                self.gang_gpus
            );
        }
        Ok(())
    }
}

impl Default for WorkloadSettings {
    fn default() -> Self {
        WorkloadSettings {
            enabled: true,
            load: 0.85,
            seed: 1,
            job_share: 0.7,
            job_mean_h: 2.0,
            tenant_mean_h: 24.0,
            lifetime: LifetimeDist::Exponential,
            lognormal_sigma: 1.5,
            two_gi_prob: 0.5,
            cores_per_compute_slice: 4,
            ram_gb_per_compute_slice: 16,
            warmup_h: 48.0,
            measure_h: 72.0,
            media_ext: false,
            profile_mix: BTreeMap::new(),
            large_profile_weight: 1.0,
            trace: None,
            trace_window_days: 34.0,
            trace_model: "a100-40gb".into(),
            mix: ShapeMix::default(),
        }
    }
}

/// Policy settings (§6.1 defaults): the arrival policy, the preset and what every policy shares
/// in `[policy]`, and each policy's own settings in its sub-table (`[policy.origamig]`,
/// `[policy.tc]`, `[policy.packing]`). Files that earlier versions saved wrote every setting flat
/// in `[policy]`; those keys are still read ([`LEGACY_POLICY_KEYS`]) and `check` says where each
/// one moved. Saves write the new form.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(from = "PolicyFile")]
pub struct PolicySettings {
    /// Arrival policy: ff, mfi, tc, origamig, opt, packing (any case).
    pub arrival: PolicyKind,
    /// A named set of OrigaMIG settings: `default` (no preset) or `paper`, the literal reading of
    /// Algorithm 1 with the paper's δ = 10 (`keep_removed_sources = false`, `delta = 10`), kept to
    /// reproduce the paper's tables. Settings written beside the preset win over it. Saves leave
    /// out the default.
    #[serde(skip_serializing_if = "Preset::is_default")]
    pub preset: Preset,
    /// Live-migration bandwidth in Gbit/s (GB copied and migration time), for every policy that
    /// migrates (TC, OrigaMIG, OPT, packing).
    pub migration_gbps: f64,
    /// The multi-tenant admission rule (docs/operations.md): refuse a multi-GPU VM (two or more
    /// GIs) unless every GI is a whole GPU (7g); off by default, since the paper's workload puts
    /// two-GI VMs on slices.
    pub multi_gpu_whole_only: bool,
    /// Read from files that earlier versions saved (they wrote every setting): the layout
    /// planner's hysteresis of the static-layouts regime when `[regime] hysteresis` is absent
    /// (`RegimeSettings::hysteresis_or`); saves leave it out.
    #[serde(skip_serializing)]
    pub legacy_layout_hysteresis: Option<u32>,
    /// `[policy.origamig]`: OrigaMIG's settings, also OPT's and packing's calls'.
    pub origamig: OrigamigSettings,
    /// `[policy.tc]`: TC's settings.
    pub tc: TcSettings,
    /// `[policy.packing]`: the packing policy's settings.
    pub packing: PackingSettings,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            arrival: PolicyKind::Ff,
            preset: Preset::Default,
            migration_gbps: crate::policy_settings::DEFAULT_MIGRATION_GBPS,
            multi_gpu_whole_only: false,
            legacy_layout_hysteresis: None,
            origamig: OrigamigSettings::default(),
            tc: TcSettings::default(),
            packing: PackingSettings::default(),
        }
    }
}

impl PolicySettings {
    /// The literal reading of Algorithm 1 with the paper's δ (`preset = "paper"`), the other
    /// settings at their defaults.
    pub fn paper() -> Self {
        let mut s = PolicySettings::default();
        s.apply_preset(Preset::Paper, &|_| false);
        s
    }

    /// Sets `preset` and the values of `[policy.origamig]` it fixes, leaving out the keys for
    /// which `written` is true (settings written beside the preset win).
    pub(crate) fn apply_preset(&mut self, preset: Preset, written: &dyn Fn(&str) -> bool) {
        self.preset = preset;
        self.origamig.apply_preset(preset, written);
    }
}

/// Declares [`PolicyFile`], `[policy]` as a file may write it: the new form and, as options, the
/// flat keys of earlier versions, each with the sub-table and key it moved to
/// ([`LEGACY_POLICY_KEYS`]).
macro_rules! policy_file {
    ($( $old:ident => $section:ident . $new:ident : $ty:ty ),* $(,)?) => {
        /// `[policy]` as read from a file: [`PolicySettings`]' fields, and the flat keys of
        /// earlier versions, which win over the sub-table's default (a file writing both is
        /// refused when it is loaded).
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        struct PolicyFile {
            arrival: PolicyKind,
            preset: Preset,
            migration_gbps: f64,
            multi_gpu_whole_only: bool,
            layout_hysteresis: Option<u32>,
            origamig: OrigamigSettings,
            tc: TcSettings,
            packing: PackingSettings,
            $( $old: Option<$ty>, )*
        }

        impl Default for PolicyFile {
            fn default() -> Self {
                let d = PolicySettings::default();
                PolicyFile {
                    arrival: d.arrival,
                    preset: d.preset,
                    migration_gbps: d.migration_gbps,
                    multi_gpu_whole_only: d.multi_gpu_whole_only,
                    layout_hysteresis: None,
                    origamig: d.origamig,
                    tc: d.tc,
                    packing: d.packing,
                    $( $old: None, )*
                }
            }
        }

        impl From<PolicyFile> for PolicySettings {
            fn from(f: PolicyFile) -> Self {
                let mut s = PolicySettings {
                    arrival: f.arrival,
                    preset: f.preset,
                    migration_gbps: f.migration_gbps,
                    multi_gpu_whole_only: f.multi_gpu_whole_only,
                    legacy_layout_hysteresis: f.layout_hysteresis,
                    origamig: f.origamig,
                    tc: f.tc,
                    packing: f.packing,
                };
                $( if let Some(v) = f.$old { s.$section.$new = v; } )*
                s
            }
        }

        /// The flat `[policy]` keys of earlier versions: (old key, sub-table, new key).
        pub(crate) const LEGACY_POLICY_KEYS: &[(&str, &str, &str)] = &[
            $( (stringify!($old), stringify!($section), stringify!($new)), )*
        ];
    };
}

policy_file! {
    weight_admit => origamig.weight_admit: f64,
    weight_host => origamig.weight_host: f64,
    weight_gpu => origamig.weight_gpu: f64,
    weight_free_start => origamig.weight_free_start: f64,
    delta => origamig.delta: f64,
    delta_per_gb => origamig.delta_per_gb: f64,
    delta_job_extra => origamig.delta_job_extra: f64,
    m_max => origamig.m_max: usize,
    m_max_gpus => origamig.m_max_gpus: usize,
    n_max => origamig.n_max: usize,
    time_limit_s => origamig.time_limit_s: f64,
    node_limit => origamig.node_limit: u64,
    sim_time_limit_s => origamig.sim_time_limit_s: f64,
    lp_iteration_limit => origamig.lp_iteration_limit: u64,
    threads => origamig.threads: u32,
    theta => origamig.theta: i64,
    check_every_s => origamig.check_every_s: f64,
    keep_removed_sources => origamig.keep_removed_sources: bool,
    partitions => origamig.partitions: usize,
    partition_hosts => origamig.partition_hosts: usize,
    partition_interleaved => origamig.partition_interleaved: bool,
    host_columns_budget => origamig.host_columns_budget: u32,
    consolidation_patterns => origamig.consolidation_patterns: bool,
    merge_hosts => origamig.merge_hosts: usize,
    neighborhood_vms => origamig.neighborhood_vms: usize,
    reenable => origamig.reenable: Reenable,
    reenable_room_share => origamig.reenable_room_share: f64,
    reenable_gap_rise => origamig.reenable_gap_rise: usize,
    reenable_gap_rise_min_gpus => origamig.reenable_gap_rise_min_gpus: usize,
    consolidation_hold_s => origamig.consolidation_hold_s: f64,
    ff_active_first => origamig.ff_active_first: bool,
    host_weight_from_power => origamig.host_weight_from_power: bool,
    host_scaled_limits => origamig.host_scaled_limits: bool,
    host_scaled_budget => origamig.host_scaled_budget: bool,
    arrival_gpu_best_fit => origamig.arrival_gpu_best_fit: bool,
    arrival_host_best_fit => origamig.arrival_host_best_fit: bool,
    arrival_best_fit_small => origamig.arrival_best_fit_small: bool,
    arrival_kind_affinity => origamig.arrival_kind_affinity: bool,
    arrival_fragmentation => origamig.arrival_fragmentation: f64,
    host_emptying_vms => origamig.host_emptying_vms: usize,
    host_emptying_budget => origamig.host_emptying_budget: usize,
    host_emptying_min => origamig.host_emptying_min: f64,
    host_emptying_big_vms => origamig.host_emptying_big_vms: usize,
    gpu_compaction => origamig.gpu_compaction: bool,
    gpu_compaction_across => origamig.gpu_compaction_across: usize,
    gpu_compaction_small => origamig.gpu_compaction_small: bool,
    gpu_compaction_min => origamig.gpu_compaction_min: f64,
    gpu_compaction_across_tenant => origamig.gpu_compaction_across_tenant: usize,
    gpu_compaction_toward_fuller => origamig.gpu_compaction_toward_fuller: bool,
    gpu_compaction_exact_fill => origamig.gpu_compaction_exact_fill: bool,
    gpu_compaction_exact_fill_spare => origamig.gpu_compaction_exact_fill_spare: usize,
    gpu_compaction_fragmentation => origamig.gpu_compaction_fragmentation: f64,
    gpu_compaction_across_budget => origamig.gpu_compaction_across_budget: usize,
    gpu_compaction_small_min => origamig.gpu_compaction_small_min: f64,
    gpu_compaction_small_empty_host => origamig.gpu_compaction_small_empty_host: bool,
    gpu_compaction_fewest_vms_first => origamig.gpu_compaction_fewest_vms_first: bool,
    gpu_compaction_idle_gpu => origamig.gpu_compaction_idle_gpu: bool,
    gpu_compaction_hold_hosts => origamig.gpu_compaction_hold_hosts: bool,
    gpu_compaction_moves_per_departure => origamig.gpu_compaction_moves_per_departure: f64,
    gpu_compaction_moves_cap => origamig.gpu_compaction_moves_cap: f64,
    compaction_min => tc.compaction_min: f64,
    packing_finish_gpu => packing.finish_gpu: f64,
    packing_finish_host => packing.finish_host: f64,
    packing_protect_host => packing.protect_host: f64,
    defrag_stranded_share => packing.defrag_stranded_share: f64,
}

/// Where a `[policy]` key lives now: (`""` for `[policy]` itself or the sub-table, the key), for
/// a key of `[policy]`, a flat key of earlier versions or `SUBTABLE.KEY`; `None` when no setting
/// has that name.
pub fn policy_key_path(key: &str) -> Option<(&'static str, &'static str)> {
    const TOP: [&str; 5] = [
        "arrival",
        "preset",
        "migration_gbps",
        "multi_gpu_whole_only",
        "layout_hysteresis",
    ];
    if let Some(k) = TOP.iter().find(|k| **k == key) {
        return Some(("", k));
    }
    if let Some(&(_, section, new)) = LEGACY_POLICY_KEYS.iter().find(|(old, _, _)| *old == key) {
        return Some((section, new));
    }
    let (section, k) = key.split_once('.')?;
    LEGACY_POLICY_KEYS
        .iter()
        .find(|(_, s, n)| *s == section && *n == k)
        .map(|&(_, s, n)| (s, n))
}

/// A loaded scenario: the fleet state plus its settings.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub start: chrono::DateTime<chrono::Utc>,
    pub now_s: f64,
    pub fleet: Fleet,
    pub workload: WorkloadSettings,
    pub policy: PolicySettings,
    pub quotas: BTreeMap<String, BTreeMap<String, u32>>,
    /// `[regime]` as written (docs/operations.md, "Regimes"); absent: the paper's regime.
    pub regime: Option<RegimeSettings>,
    /// The host groups as written, so a save keeps them grouped.
    groups: Vec<(String, u32)>,
    /// One line per flat `[policy]` key of earlier versions that the file wrote, naming where it
    /// lives now (`migplan check` prints them).
    pub moved_keys: Vec<String>,
}

/// Where a scenario error is: 1-based line and column.
fn line_col(src: &str, span: Range<usize>) -> (usize, usize) {
    let upto = &src[..span.start.min(src.len())];
    let line = upto.matches('\n').count() + 1;
    let col = upto.len() - upto.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

struct Ctx<'a> {
    file: &'a str,
    src: &'a str,
}

impl Ctx<'_> {
    fn err<T>(&self, span: Range<usize>, field: &str, msg: impl std::fmt::Display) -> anyhow::Result<T> {
        let (l, c) = line_col(self.src, span);
        Err(anyhow::anyhow!("{}:{l}:{c}: field `{field}`: {msg}", self.file))
    }
}

/// Loads a scenario from a file.
pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    let src = crate::fsutil::read_text(path)?;
    parse(&src, &path.display().to_string())
}

/// Parses scenario text; `file` names it in errors.
pub fn parse(src: &str, file: &str) -> anyhow::Result<Scenario> {
    parse_with(src, file, embedded())
}

/// How the error of a [`PolicyKind`] that does not parse begins.
const UNKNOWN_POLICY: &str = "unknown policy `";

/// Parses scenario text against a catalog.
pub fn parse_with(src: &str, file: &str, catalog: &'static Catalog) -> anyhow::Result<Scenario> {
    let spec: ScenarioFile = toml::from_str(src).map_err(|e| {
        let mut msg = crate::catalog::one_line(e.message());
        if msg.trim().is_empty() {
            // The parser gives no words for some errors: say what is at the spot.
            let at = e.span().map_or(0, |s| s.start);
            msg = match src.get(at..).and_then(|r| r.chars().next()) {
                Some(c) if c.is_control() && c != '\n' => {
                    format!("control character U+{:04X} is not allowed in TOML", u32::from(c))
                }
                _ => "not valid TOML here (a value is missing or malformed)".to_string(),
            };
        }
        if msg.starts_with(UNKNOWN_POLICY) {
            // A [`PolicyKind`] that does not parse: name the key, as the checks of the settings do.
            let (l, c) = line_col(src, settings::key_span(src, "policy", "arrival"));
            return anyhow::anyhow!("{file}:{l}:{c}: field `policy.arrival`: {msg}");
        }
        let span = e.span().unwrap_or(0..0);
        let (l, c) = line_col(src, span.clone());
        // Name the field whose value is wrong: the key of the line the error points at.
        let line = src.lines().nth(l.saturating_sub(1)).unwrap_or("");
        match line.split_once('=').map(|(k, _)| k.trim()) {
            Some(k) if !msg.contains("unknown field") && !k.is_empty() && !k.contains(['[', '"']) => {
                let k = crate::catalog::one_line(k);
                anyhow::anyhow!("{file}:{l}:{c}: field `{k}`: {msg}")
            }
            _ => anyhow::anyhow!("{file}:{l}:{c}: {msg}"),
        }
    })?;
    build(spec, src, file, catalog)
}

fn model_of(cx: &Ctx, catalog: &Catalog, s: &Spanned<String>, field: &str) -> anyhow::Result<usize> {
    match catalog.model_id(s.get_ref()) {
        Some(m) => Ok(m),
        None => cx.err(
            s.span(),
            field,
            format!(
                "unknown GPU model `{}` (known: {})",
                s.get_ref(),
                catalog.model_names()
            ),
        ),
    }
}

fn curve_of(cx: &Ctx, catalog: &Catalog, s: &Option<Spanned<String>>) -> anyhow::Result<usize> {
    match s {
        None => Ok(catalog.default_curve()),
        Some(s) => match catalog.curve_id(s.get_ref()) {
            Some(c) => Ok(c),
            None => cx.err(
                s.span(),
                "curve",
                format!("unknown power curve `{}`", s.get_ref()),
            ),
        },
    }
}

fn build(spec: ScenarioFile, src: &str, file: &str, catalog: &'static Catalog) -> anyhow::Result<Scenario> {
    let cx = Ctx { file, src };
    let (hosts, groups) = build_hosts(&cx, &spec, catalog)?;
    check_quotas(&cx, catalog, &spec.quotas)?;
    let mut fleet = Fleet::new(catalog, hosts);
    for (k, v) in spec.vms.iter().enumerate() {
        add_vm(&cx, catalog, &mut fleet, k, v)?;
    }
    let start = start_of(&cx, &spec)?;
    check_profile_mix(&cx, catalog, &spec)?;
    let mut policy = spec.policy.clone();
    let preset = policy.preset;
    policy.apply_preset(preset, &|key| {
        settings::locate(src, "policy.origamig", key).0 != (0..0)
    });
    let moved = settings::legacy_keys(&cx)?;
    settings::check(&cx, catalog, spec.now_s, &spec.workload, &policy)?;
    if let Some((key, msg)) = spec.regime.as_ref().and_then(RegimeSettings::out_of_range) {
        settings::fail(&cx, "regime", key, msg)?;
    }
    if let Some((key, msg)) = spec.regime.as_ref().and_then(RegimeSettings::misplaced) {
        settings::fail(&cx, "regime", key, msg)?;
    }
    fleet
        .check_invariants()
        .map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
    Ok(Scenario {
        name: spec.name.clone().unwrap_or_else(|| {
            Path::new(file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        description: spec.description.clone(),
        start,
        now_s: spec.now_s.unwrap_or(0.0),
        fleet,
        workload: spec.workload,
        policy,
        regime: spec.regime,
        quotas: spec.quotas,
        groups,
        moved_keys: moved
            .into_iter()
            .map(|(l, c, old, new)| {
                format!("{file}:{l}:{c}: `{old}` is now `{new}` (read as before; a save writes the new form)")
            })
            .collect(),
    })
}

/// Each `[[host_group]]`'s prefix and count.
type HostGroups = Vec<(String, u32)>;

/// The hosts of the `[[host_group]]` and `[[host]]` tables, in that order, and each group's
/// prefix and count.
fn build_hosts(
    cx: &Ctx,
    spec: &ScenarioFile,
    catalog: &'static Catalog,
) -> anyhow::Result<(Vec<Host>, HostGroups)> {
    let src = cx.src;
    let mut hosts: Vec<Host> = Vec::new();
    let mut groups = Vec::new();
    let mut names: BTreeMap<String, Range<usize>> = BTreeMap::new();
    let mut total_hosts = spec.hosts.len() as u64;
    for (k, g) in spec.host_groups.iter().enumerate() {
        total_hosts += u64::from(g.count);
        if total_hosts > crate::limits::MAX_HOSTS {
            return cx.err(
                settings::array_key_span(src, "host_group", k, "count"),
                "host_group.count",
                format!(
                    "`{}` makes {} hosts in all; a scenario holds at most {} (docs/limits.md)",
                    g.count,
                    total_hosts,
                    crate::limits::MAX_HOSTS
                ),
            );
        }
    }
    for g in &spec.host_groups {
        let models = g
            .gpus
            .iter()
            .map(|m| model_of(cx, catalog, m, "gpus"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let curve = curve_of(cx, catalog, &g.curve)?;
        let modes = modes_of(cx, catalog, &models, &g.modes, g.prefix.span())?;
        for i in 0..g.count {
            let name = format!("{}{i}", g.prefix.get_ref());
            if names.insert(name.clone(), g.prefix.span()).is_some() {
                return cx.err(
                    g.prefix.span(),
                    "prefix",
                    format!("host name `{name}` is used twice"),
                );
            }
            let mut host = Host::new(name, g.cores, g.ram_gb, models.clone(), curve);
            for (gpu, &mode) in host.gpus.iter_mut().zip(&modes) {
                gpu.mode = mode;
            }
            hosts.push(host);
        }
        groups.push((g.prefix.get_ref().clone(), g.count));
    }
    for h in &spec.hosts {
        let models = h
            .gpus
            .iter()
            .map(|m| model_of(cx, catalog, m, "gpus"))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let curve = curve_of(cx, catalog, &h.curve)?;
        if names.insert(h.name.get_ref().clone(), h.name.span()).is_some() {
            return cx.err(
                h.name.span(),
                "name",
                format!("host name `{}` is used twice", h.name.get_ref()),
            );
        }
        let modes = modes_of(cx, catalog, &models, &h.modes, h.name.span())?;
        let mut host = Host::new(h.name.get_ref().clone(), h.cores, h.ram_gb, models, curve);
        for (gpu, &mode) in host.gpus.iter_mut().zip(&modes) {
            gpu.mode = mode;
        }
        host.note = h.note.clone();
        host.mig_config = h.mig_config.clone();
        for (k, n) in h.gpu_notes.iter().enumerate() {
            if !n.is_empty() {
                host.gpu_notes.insert(k, n.clone());
            }
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return cx.err(
            0..0,
            "host",
            "the fleet has no hosts: add a [[host]] or [[host_group]] table",
        );
    }
    if hosts.iter().all(|h| h.gpus.is_empty()) {
        let span = settings::array_key_span(src, "host", 0, "name");
        return cx.err(
            span,
            "gpus",
            "the fleet has no GPUs: list a host's GPU models in `gpus`",
        );
    }
    Ok((hosts, groups))
}

/// Adds VM `k` of the `[[vm]]` tables to the fleet: placed where `host` and `at` say, else
/// pending.
fn add_vm(
    cx: &Ctx,
    catalog: &'static Catalog,
    fleet: &mut Fleet,
    k: usize,
    v: &VmSpec,
) -> anyhow::Result<()> {
    let src = cx.src;
    check_vm_times(cx, k, v)?;
    if v.id == 0 {
        return cx.err(
            settings::array_key_span(src, "vm", k, "id"),
            "id",
            "VM ids start at 1",
        );
    }
    let shape = shape_of(cx, catalog, fleet, k, v)?;
    let gis = vm_gis(cx, catalog, v)?;
    let arrival = v.arrival_h.unwrap_or(0.0) * 3600.0;
    let vm = Vm {
        kind: v.kind,
        arrival,
        lifetime: v.lifetime_h.map(|h| h * 3600.0),
        tenant: v.tenant.clone(),
        shape,
        ..Vm::job(v.id, gis, v.cores, v.ram_gb)
    };
    let result = match &v.host {
        None => {
            if let Some(a) = v.at.first() {
                return cx.err(a.span(), "at", format!("VM {} has `at` but no `host`", v.id));
            }
            fleet.add_pending(vm).map(|_| ())
        }
        Some(hname) => {
            let Some(h) = fleet.hosts.iter().position(|x| &x.name == hname.get_ref()) else {
                return cx.err(
                    hname.span(),
                    "host",
                    format!("no host named `{}`", hname.get_ref()),
                );
            };
            let want = vm.shape.slots(vm.gis.len());
            if v.at.len() != want {
                let span = v.at.first().map(|a| a.span()).unwrap_or(hname.span());
                let what = if vm.is_mig() { "GIs" } else { "GPUs" };
                let each = if vm.is_mig() { "GPU@START" } else { "GPU" };
                return cx.err(
                    span,
                    "at",
                    format!(
                        "VM {} has {want} {what} but {} `at` entries ({each} each)",
                        v.id,
                        v.at.len()
                    ),
                );
            }
            let slots = vm_slots(cx, v, vm.is_mig())?;
            let mut vm = vm;
            vm.admitted_at = Some(v.admitted_h.map(|h| h * 3600.0).unwrap_or(arrival));
            let span = v.at.first().map(|a| a.span()).unwrap_or(hname.span());
            match fleet.add_placed(vm, Placement { host: h, gis: slots }) {
                Ok(_) => Ok(()),
                Err(e) => return cx.err(span, "at", format!("VM {}: {e}", v.id)),
            }
        }
    };
    if let Err(e) = result {
        let span = v.model.as_ref().map(|m| m.span()).unwrap_or(0..0);
        return cx.err(span, "vm", format!("VM {}: {e}", v.id));
    }
    Ok(())
}

/// The GIs a VM asks for: from `memory_gb` (the smallest profile holding it) and `profiles`.
fn vm_gis(cx: &Ctx, catalog: &'static Catalog, v: &VmSpec) -> anyhow::Result<Vec<GiRequest>> {
    let mut gis = Vec::new();
    if let Some(gb) = &v.memory_gb {
        // `shape_of` checked the model and that some profile holds the memory.
        let m = v.model.as_ref().and_then(|ms| catalog.model_id(ms.get_ref()));
        match m.and_then(|m| Some((m, catalog.smallest_profile_for(m, *gb.get_ref())?))) {
            Some((model, profile)) => gis.push(GiRequest { model, profile }),
            None => {
                return cx.err(
                    gb.span(),
                    "memory_gb",
                    format!("VM {}: no MIG profile holds it", v.id),
                )
            }
        }
    }
    if !v.profiles.is_empty() {
        let Some(ms) = &v.model else {
            let span = v.profiles[0].span();
            return cx.err(
                span,
                "model",
                format!("VM {} lists profiles but no `model`", v.id),
            );
        };
        let m = model_of(cx, catalog, ms, "model")?;
        let model = catalog.model(m);
        for p in &v.profiles {
            match model.profile(p.get_ref()) {
                Some(pid) => gis.push(GiRequest {
                    model: m,
                    profile: pid,
                }),
                None => {
                    return cx.err(
                        p.span(),
                        "profiles",
                        format!(
                            "unknown profile `{}` for {} (known: {})",
                            p.get_ref(),
                            model.name,
                            model.profile_names()
                        ),
                    )
                }
            }
        }
    }
    Ok(gis)
}

/// A placed VM's `at` entries: `GPU@START` per GI, or a GPU index per GPU of a share or gang.
fn vm_slots(cx: &Ctx, v: &VmSpec, is_mig: bool) -> anyhow::Result<Vec<GiSlot>> {
    let mut slots = Vec::new();
    for a in &v.at {
        let text = a.get_ref();
        let parsed = match text.split_once('@') {
            Some((g, z)) => g.trim().parse().ok().zip(z.trim().parse().ok()),
            None if !is_mig => text.trim().parse().ok().map(|g| (g, 0)),
            None => None,
        };
        match parsed {
            Some((gpu, start)) => slots.push(GiSlot { gpu, start }),
            None if is_mig => return cx.err(a.span(), "at", format!("`{text}` is not GPU@START")),
            None => return cx.err(a.span(), "at", format!("`{text}` is not a GPU index")),
        }
    }
    Ok(slots)
}

/// The scenario's `start` date (2026-01-01 when unset).
fn start_of(cx: &Ctx, spec: &ScenarioFile) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    let src = cx.src;
    Ok(match &spec.start {
        None => chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .expect("a constant RFC 3339 date")
            .to_utc(),
        Some(s) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(d) => d.to_utc(),
            Err(e) => {
                return cx.err(
                    settings::key_span(src, "", "start"),
                    "start",
                    format!("`{s}` is not an RFC 3339 date: {e}"),
                );
            }
        },
    })
}

/// `[workload.profile_mix]`: known models and profiles, weights finite, non-negative and within
/// the limit.
fn check_profile_mix(cx: &Ctx, catalog: &'static Catalog, spec: &ScenarioFile) -> anyhow::Result<()> {
    let src = cx.src;
    for (model, mix) in &spec.workload.profile_mix {
        let field_at = src.find("profile_mix").unwrap_or(0);
        let Some(m) = catalog.model_id(model) else {
            return cx.err(
                field_at..field_at,
                "workload.profile_mix",
                format!("unknown GPU model `{model}`"),
            );
        };
        for (p, weight) in mix {
            let at = settings::key_span(src, &format!("workload.profile_mix.{model}"), p);
            let field_at = if at == (0..0) { field_at..field_at } else { at };
            if !(weight.is_finite() && *weight <= crate::limits::MAX_WEIGHT) && *weight >= 0.0 {
                return cx.err(
                    field_at,
                    "workload.profile_mix",
                    format!(
                        "weight of {model} {p} must be at most {} (docs/limits.md), not {}",
                        crate::limits::show(crate::limits::MAX_WEIGHT),
                        crate::limits::show(*weight)
                    ),
                );
            }
            if catalog.model(m).profile(p).is_none() {
                return cx.err(
                    field_at,
                    "workload.profile_mix",
                    format!("unknown profile `{p}` for {model}"),
                );
            }
            if !(weight.is_finite() && *weight >= 0.0) {
                return cx.err(
                    field_at,
                    "workload.profile_mix",
                    format!("weight of {model} {p} must be a number >= 0, not {weight}"),
                );
            }
        }
    }
    Ok(())
}

/// The GPU modes of a host: one per GPU as written, or the default of each model (MIG, whole for
/// a model without MIG). MIG on a model without it is refused.
fn modes_of(
    cx: &Ctx,
    catalog: &Catalog,
    models: &[usize],
    modes: &[Spanned<String>],
    at: Range<usize>,
) -> anyhow::Result<Vec<GpuMode>> {
    let default = |m: usize| {
        if catalog.model(m).mig {
            GpuMode::Mig
        } else {
            GpuMode::Whole
        }
    };
    if modes.is_empty() {
        return Ok(models.iter().map(|&m| default(m)).collect());
    }
    if modes.len() != models.len() {
        let span = modes.first().map(|m| m.span()).unwrap_or(at);
        return cx.err(
            span,
            "modes",
            format!(
                "{} modes for {} GPUs: list one mode per GPU (mig, whole or shared)",
                modes.len(),
                models.len()
            ),
        );
    }
    let mut out = Vec::with_capacity(models.len());
    for (s, &m) in modes.iter().zip(models) {
        let Some(mode) = GpuMode::parse(s.get_ref()) else {
            return cx.err(
                s.span(),
                "modes",
                format!("unknown GPU mode `{}` (known: mig, whole, shared)", s.get_ref()),
            );
        };
        if mode == GpuMode::Mig && !catalog.model(m).mig {
            return cx.err(
                s.span(),
                "modes",
                format!(
                    "{} has no MIG: its GPUs can be whole or shared",
                    catalog.model(m).name
                ),
            );
        }
        out.push(mode);
    }
    Ok(out)
}

/// The shape of a `[[vm]]`: at most one of `profiles`, `share_gb`, `gpus`, `memory_gb`; a share
/// no larger than a GPU of its model, a gang no larger than the largest host of its class.
fn shape_of(cx: &Ctx, catalog: &Catalog, fleet: &Fleet, k: usize, v: &VmSpec) -> anyhow::Result<Shape> {
    let key = |f: &str| settings::array_key_span(cx.src, "vm", k, f);
    let given: Vec<&str> = [
        ("profiles", !v.profiles.is_empty()),
        ("share_gb", v.share_gb.is_some()),
        ("gpus", v.gpus.is_some()),
        ("memory_gb", v.memory_gb.is_some()),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(f, _)| f)
    .collect();
    if given.len() > 1 {
        return cx.err(
            key(given[1]),
            given[1],
            format!(
                "VM {} gives both `{}` and `{}`: a VM has one shape",
                v.id, given[0], given[1]
            ),
        );
    }
    if v.share_gb.is_none() {
        for (f, on) in [
            ("weight", v.weight.is_some()),
            ("isolation", v.isolation.is_some()),
        ] {
            if on {
                return cx.err(
                    key(f),
                    f,
                    format!("VM {}: `{f}` belongs to a share (`share_gb`)", v.id),
                );
            }
        }
    }
    let Some(&field) = given.first() else {
        return Ok(Shape::Mig);
    };
    let Some(ms) = &v.model else {
        return cx.err(
            key(field),
            "model",
            format!("VM {} gives `{field}` but no `model`", v.id),
        );
    };
    let model = model_of(cx, catalog, ms, "model")?;
    let gpu_gb = crate::fleet::gpu_gb(catalog, model);
    let name = &catalog.model(model).name;
    if let Some(gb) = &v.memory_gb {
        let x = *gb.get_ref();
        if !(x.is_finite() && x > 0.0) {
            return cx.err(
                gb.span(),
                "memory_gb",
                format!("VM {}: must be a number of GB > 0, not {x}", v.id),
            );
        }
        if !catalog.model(model).mig {
            return cx.err(
                gb.span(),
                "memory_gb",
                format!("VM {}: {name} has no MIG profiles", v.id),
            );
        }
        if catalog.smallest_profile_for(model, x).is_none() {
            return cx.err(
                gb.span(),
                "memory_gb",
                format!("VM {}: no MIG profile of {name} holds {x} GB", v.id),
            );
        }
        return Ok(Shape::Mig);
    }
    if let Some(gb) = &v.share_gb {
        let g = *gb.get_ref();
        if g == 0 || g > gpu_gb {
            return cx.err(
                gb.span(),
                "share_gb",
                format!(
                    "VM {}: a share of {g} GB on a {name} must be 1..={gpu_gb} GB (the GPU's memory)",
                    v.id
                ),
            );
        }
        let weight = match &v.weight {
            None => f64::from(g) / f64::from(gpu_gb),
            Some(w) => {
                let x = *w.get_ref();
                if !(x.is_finite() && x > 0.0 && x <= crate::limits::MAX_WEIGHT) {
                    return cx.err(
                        w.span(),
                        "weight",
                        format!(
                            "VM {}: a share's weight must be > 0 and at most {}, not {}",
                            v.id,
                            crate::limits::show(crate::limits::MAX_WEIGHT),
                            crate::limits::show(x)
                        ),
                    );
                }
                x
            }
        };
        return Ok(Shape::Share {
            model,
            gb: g,
            weight,
            isolation: v.isolation.unwrap_or(false),
        });
    }
    if let Some(n) = &v.gpus {
        let n = *n.get_ref();
        let largest = fleet
            .hosts
            .iter()
            .map(|h| {
                h.gpus
                    .iter()
                    .filter(|g| catalog.same_class(g.model, model))
                    .count()
            })
            .max()
            .unwrap_or(0);
        if n == 0 || n as usize > largest {
            let span = v.gpus.as_ref().map(|g| g.span()).unwrap_or(0..0);
            return cx.err(
                span,
                "gpus",
                format!(
                    "VM {}: a gang of {n} {name} GPUs must be 1..={largest} (the most one host has)",
                    v.id
                ),
            );
        }
        return Ok(Shape::Gang { model, gpus: n });
    }
    Ok(Shape::Mig)
}

/// Checks that every quota names a profile some GPU model of the catalog has
/// (`requests.nvidia.com/mig-3g.40gb`, `nvidia.com/mig-3g.40gb` and `3g.40gb` all name `3g.40gb`).
fn check_quotas(
    cx: &Ctx,
    catalog: &Catalog,
    quotas: &BTreeMap<String, BTreeMap<String, u32>>,
) -> anyhow::Result<()> {
    for (tenant, limits) in quotas {
        for key in limits.keys() {
            let k = key.strip_prefix("requests.").unwrap_or(key);
            let p = k.strip_prefix("nvidia.com/mig-").unwrap_or(k);
            if !catalog.models.iter().any(|m| m.profile(p).is_some()) {
                let mut at = settings::key_span(cx.src, &format!("quotas.{tenant}"), key);
                if at == (0..0) {
                    at = settings::key_span(cx.src, "quotas", tenant);
                }
                return cx.err(
                    at,
                    &format!("quotas.{tenant}"),
                    format!("`{key}` names no MIG profile of any known GPU model"),
                );
            }
        }
    }
    Ok(())
}

/// A VM's times must be finite and within the bounds: an arrival and admission within
/// 0..=[`crate::limits::MAX_NOW_S`], a lifetime > 0 and no longer than that.
fn check_vm_times(cx: &Ctx, index: usize, v: &VmSpec) -> anyhow::Result<()> {
    let max_h = crate::limits::MAX_NOW_S / 3600.0;
    for (key, value, positive) in [
        ("lifetime_h", v.lifetime_h, true),
        ("arrival_h", v.arrival_h, false),
        ("admitted_h", v.admitted_h, false),
    ] {
        let Some(x) = value else { continue };
        let show = crate::limits::show;
        let why = if !x.is_finite() {
            format!("must be a finite number of hours, not {}", show(x))
        } else if positive && x <= 0.0 {
            format!("must be a number of hours > 0, not {}", show(x))
        } else if x < 0.0 {
            format!("must be a number of hours >= 0, not {}", show(x))
        } else if x > max_h {
            format!(
                "must be at most {} hours (docs/limits.md), not {}",
                show(max_h),
                show(x)
            )
        } else {
            continue;
        };
        return cx.err(
            settings::array_key_span(cx.src, "vm", index, key),
            key,
            format!("VM {}: {why}", v.id),
        );
    }
    Ok(())
}

/// The `modes` of a host as written: empty when every GPU is in its model's default mode.
fn modes_to_file(catalog: &Catalog, gpus: &[crate::fleet::Gpu]) -> Vec<Spanned<String>> {
    let default = |g: &crate::fleet::Gpu| {
        if catalog.model(g.model).mig {
            GpuMode::Mig
        } else {
            GpuMode::Whole
        }
    };
    if gpus.iter().all(|g| g.mode == default(g)) {
        return Vec::new();
    }
    gpus.iter().map(|g| spanned(g.mode.name().to_string())).collect()
}

fn spanned<T>(v: T) -> Spanned<T> {
    // Spans are only meaningful on parsed values; a written value carries an empty one.
    toml::Spanned::new(0..0, v)
}

impl Scenario {
    /// The scenario file that describes this state (groups kept where the hosts still match).
    pub(crate) fn to_file(&self) -> ScenarioFile {
        let catalog = self.fleet.catalog;
        let mut host_groups = Vec::new();
        let mut hosts = Vec::new();
        let mut i = 0;
        let fleet_hosts = &self.fleet.hosts;
        let mut gi = 0;
        while i < fleet_hosts.len() {
            // A group is written back when its hosts are still named and equipped as a group.
            if let Some((prefix, count)) = self.groups.get(gi) {
                let n = *count as usize;
                let first = &fleet_hosts[i];
                let same = i + n <= fleet_hosts.len()
                    && (0..n).all(|k| {
                        let h = &fleet_hosts[i + k];
                        h.name == format!("{prefix}{k}")
                            && h.cores == first.cores
                            && h.ram_gb == first.ram_gb
                            && h.curve == first.curve
                            && h.gpus
                                .iter()
                                .map(|g| (g.model, g.mode))
                                .eq(first.gpus.iter().map(|g| (g.model, g.mode)))
                            && h.note.is_none()
                            && h.gpu_notes.is_empty()
                            && h.mig_config.is_none()
                    });
                if same && n > 0 {
                    host_groups.push(HostGroupSpec {
                        prefix: spanned(prefix.clone()),
                        count: *count,
                        cores: first.cores,
                        ram_gb: first.ram_gb,
                        gpus: first
                            .gpus
                            .iter()
                            .map(|g| spanned(catalog.model(g.model).name.clone()))
                            .collect(),
                        modes: modes_to_file(catalog, &first.gpus),
                        curve: Some(spanned(catalog.curves[first.curve].name.clone())),
                    });
                    i += n;
                    gi += 1;
                    continue;
                }
                gi += 1;
                continue;
            }
            let h = &fleet_hosts[i];
            let n_gpus = h.gpus.len();
            hosts.push(HostSpec {
                name: spanned(h.name.clone()),
                cores: h.cores,
                ram_gb: h.ram_gb,
                gpus: h
                    .gpus
                    .iter()
                    .map(|g| spanned(catalog.model(g.model).name.clone()))
                    .collect(),
                modes: modes_to_file(catalog, &h.gpus),
                curve: Some(spanned(catalog.curves[h.curve].name.clone())),
                note: h.note.clone(),
                gpu_notes: if h.gpu_notes.is_empty() {
                    Vec::new()
                } else {
                    (0..n_gpus)
                        .map(|k| h.gpu_notes.get(&k).cloned().unwrap_or_default())
                        .collect()
                },
                mig_config: h.mig_config.clone(),
            });
            i += 1;
        }
        // Placed VMs first by id, then pending VMs in queue order (the queue order is kept).
        let mut vms = Vec::new();
        let vm_spec = |v: &Vm| self.vm_spec(v);
        for v in self.fleet.vms().filter(|v| v.placement.is_some()) {
            vms.push(vm_spec(v));
        }
        for id in self.fleet.pending() {
            if let Some(v) = self.fleet.vm(*id) {
                vms.push(vm_spec(v));
            }
        }
        ScenarioFile {
            name: Some(self.name.clone()),
            description: self.description.clone(),
            start: Some(self.start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            now_s: if self.now_s != 0.0 { Some(self.now_s) } else { None },
            host_groups,
            hosts,
            vms,
            workload: self.workload.clone(),
            policy: self.policy.clone(),
            quotas: self.quotas.clone(),
            // The legacy hysteresis moves into `[regime]` when the table is there to hold it.
            regime: self.regime.clone().map(|mut r| {
                r.hysteresis = r.hysteresis.or(self.policy.legacy_layout_hysteresis);
                r
            }),
        }
    }

    /// VM `v` as a `[[vm]]` table: its shape, and where it runs when placed.
    fn vm_spec(&self, v: &Vm) -> VmSpec {
        let catalog = self.fleet.catalog;
        VmSpec {
            id: v.id,
            model: v.model().map(|m| spanned(catalog.model(m).name.clone())),
            profiles: v
                .gis
                .iter()
                .map(|g| spanned(catalog.model(g.model).profiles[g.profile].name.clone()))
                .collect(),
            share_gb: match v.shape {
                Shape::Share { gb, .. } => Some(spanned(gb)),
                _ => None,
            },
            weight: match v.shape {
                Shape::Share { weight, .. } => Some(spanned(weight)),
                _ => None,
            },
            isolation: match v.shape {
                Shape::Share { isolation: true, .. } => Some(true),
                _ => None,
            },
            gpus: match v.shape {
                Shape::Gang { gpus, .. } => Some(spanned(gpus)),
                _ => None,
            },
            memory_gb: None,
            cores: v.cores,
            ram_gb: v.ram_gb,
            kind: v.kind,
            lifetime_h: v.lifetime.map(|s| s / 3600.0),
            arrival_h: Some(v.arrival / 3600.0),
            admitted_h: v.admitted_at.map(|s| s / 3600.0),
            tenant: v.tenant.clone(),
            host: v
                .placement
                .as_ref()
                .map(|p| spanned(self.fleet.hosts[p.host].name.clone())),
            at: v
                .placement
                .as_ref()
                .map(|p| {
                    p.gis
                        .iter()
                        .map(|s| {
                            spanned(if v.is_mig() {
                                format!("{}@{}", s.gpu, s.start)
                            } else {
                                s.gpu.to_string()
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The scenario as TOML text.
    pub fn to_toml(&self) -> anyhow::Result<String> {
        let text = toml::to_string_pretty(&self.to_file())?;
        if self.policy.preset == Preset::Default {
            return Ok(text);
        }
        // Saves leave out default values, but a key left out beside a preset takes the preset's
        // value when read back: write every key the preset fixes, after the preset's line.
        let read: toml::Table = toml::from_str(&text)?;
        let written = read
            .get("policy")
            .and_then(|p| p.get("origamig"))
            .and_then(|p| p.as_table());
        let missing: String = self
            .policy
            .origamig
            .preset_key_values()
            .into_iter()
            .filter(|(k, _)| !written.is_some_and(|t| t.contains_key(*k)))
            .map(|(k, v)| format!("{k} = {v}\n"))
            .collect();
        const HEADER: &str = "\n[policy.origamig]\n";
        let Some(end) = text.find(HEADER).map(|i| i + HEADER.len()) else {
            anyhow::bail!("internal: the saved scenario has no [policy.origamig] table");
        };
        Ok(format!("{}{missing}{}", &text[..end], &text[end..]))
    }
}

/// Saves a scenario atomically: writes a temporary file beside `path`, then renames it.
pub fn save(scenario: &Scenario, path: &Path) -> anyhow::Result<()> {
    let text = scenario.to_toml()?;
    write_atomic(path, text.as_bytes())
}

/// Writes `bytes` to `path` atomically: see [`crate::fsutil::write_atomic`].
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    crate::fsutil::write_atomic(path, bytes)
}

/// One-line summary for `migplan check`.
pub fn summary(s: &Scenario) -> String {
    let x = summary_of(s);
    let gpus = x
        .gpus
        .iter()
        .map(|(m, n)| format!("{n} {m}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{}: {} hosts, GPUs: {}, VMs: {} placed, {} pending, occupied slices: {}/{}",
        x.name,
        x.hosts,
        if gpus.is_empty() { "none".into() } else { gpus },
        x.vms_placed,
        x.vms_pending,
        x.occupied_slices,
        x.memory_slices
    )
}

/// What `migplan check` says of a scenario ([`summary`] as a line, `--json` as an object).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Summary {
    pub name: String,
    pub hosts: usize,
    /// GPUs per model name.
    pub gpus: BTreeMap<String, usize>,
    pub vms_placed: usize,
    pub vms_pending: usize,
    /// Memory slices held by GIs, and all the fleet's memory slices.
    pub occupied_slices: u32,
    pub memory_slices: u32,
}

/// The scenario's [`Summary`].
pub fn summary_of(s: &Scenario) -> Summary {
    let catalog = s.fleet.catalog;
    let mut gpus: BTreeMap<String, usize> = BTreeMap::new();
    for g in s.fleet.hosts.iter().flat_map(|h| &h.gpus) {
        *gpus.entry(catalog.model(g.model).name.clone()).or_default() += 1;
    }
    let all = || s.fleet.hosts.iter().flat_map(|h| &h.gpus);
    Summary {
        name: s.name.clone(),
        hosts: s.fleet.hosts.len(),
        gpus,
        vms_placed: s.fleet.vms().filter(|v| v.placement.is_some()).count(),
        vms_pending: s.fleet.pending().len(),
        occupied_slices: all().map(|g| g.occ.used_slices()).sum(),
        memory_slices: all().map(|g| catalog.model(g.model).memory_slices as u32).sum(),
    }
}
