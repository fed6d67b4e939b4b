//! `[regime]`: how GPU instances come to exist in a simulation (docs/operations.md, "Regimes").
//!
//! - `paper`: the paper's regime (§6): a VM's GIs are created on arrival and VMs migrate live.
//! - `static-layouts`: a Kubernetes fleet under the GPU operator. Each GPU holds a layout applied
//!   by MIG Manager; a pod takes a free instance of its profile that already exists, or waits.
//!   A scheduled layout planner changes layouts, each change draining its whole node.
//! - `dynamic`: instances are created on allocation by the placement rules (the DRA driver) and
//!   pods never migrate.

use serde::{Deserialize, Serialize};

/// Which regime a simulation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegimeKind {
    #[default]
    Paper,
    StaticLayouts,
    Dynamic,
}

impl RegimeKind {
    pub fn name(self) -> &'static str {
        match self {
            RegimeKind::Paper => "paper",
            RegimeKind::StaticLayouts => "static-layouts",
            RegimeKind::Dynamic => "dynamic",
        }
    }

    /// From a command-line or file name.
    pub fn parse(s: &str) -> Option<RegimeKind> {
        match s {
            "paper" => Some(RegimeKind::Paper),
            "static-layouts" | "static" => Some(RegimeKind::StaticLayouts),
            "dynamic" => Some(RegimeKind::Dynamic),
            _ => None,
        }
    }
}

/// The device plugin's choice among the free instances (static) or GPUs with room (dynamic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginChoice {
    /// The first node, then the first GPU, by index.
    #[default]
    FirstIndex,
    /// The node, then the GPU, with the most instances in use (the fullest).
    Packed,
}

impl PluginChoice {
    pub fn name(self) -> &'static str {
        match self {
            PluginChoice::FirstIndex => "first-index",
            PluginChoice::Packed => "packed",
        }
    }

    pub fn parse(s: &str) -> Option<PluginChoice> {
        match s {
            "first-index" => Some(PluginChoice::FirstIndex),
            "packed" => Some(PluginChoice::Packed),
            _ => None,
        }
    }
}

/// Default minutes between runs of the layout planner.
pub(crate) const DEFAULT_PERIOD_MIN: f64 = 60.0;
/// Default consecutive identical plans before a GPU changes.
pub(crate) const DEFAULT_HYSTERESIS: u32 = 3;
/// Default seconds a node serves nothing during a re-layout: the runbook's alert threshold for a
/// `nvidia.com/mig.config.state` still pending (10 minutes; docs/operations.md, "Regimes").
pub(crate) const DEFAULT_RELAYOUT_S: f64 = 600.0;
/// Default hours of usage the forecast looks back over.
pub(crate) const DEFAULT_FORECAST_H: f64 = 24.0;

/// The `[regime]` table. Every field is optional.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegimeSettings {
    pub kind: RegimeKind,
    /// Minutes between runs of the scheduled layout planner (static-layouts).
    pub period_min: f64,
    /// Consecutive identical plans for a GPU before its layout changes. Absent: the `[policy]
    /// layout_hysteresis` of older files when given, else 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hysteresis: Option<u32>,
    /// The planner's menu: absent for the model's menu in `assets/layouts.toml`, or a mig-parted
    /// config file (relative to the scenario file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub menu: Option<String>,
    /// Hours of past usage the forecast covers: the demand is the pending pods per profile plus
    /// the peak of instances in use over this window.
    pub forecast_h: f64,
    /// Minutes a pod waits before it gives up; absent: it waits until the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_timeout_min: Option<f64>,
    pub plugin_choice: PluginChoice,
    /// Seconds a node serves nothing while MIG Manager applies a new layout.
    pub relayout_s: f64,
    /// Drain a node even when some of its pods have no instance to restart on.
    pub allow_drain_without_room: bool,
    /// Dynamic MIG: hours between restart-based defragmentation passes; absent: none. A pass
    /// empties the least used GPUs by restarting their pods on GPUs already in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defrag_every_h: Option<f64>,
    /// Most pods one defragmentation pass restarts (default 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defrag_max_restarts: Option<u32>,
    /// Seconds a restarted pod does not run (default 60): it holds its new instance, and its
    /// work, so its departure, moves later by as much.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_s: Option<f64>,
}

/// Default most pods a defragmentation pass restarts.
pub(crate) const DEFAULT_DEFRAG_MAX_RESTARTS: u32 = 8;
/// Default seconds a restarted pod does not run.
pub(crate) const DEFAULT_RESTART_S: f64 = 60.0;

impl Default for RegimeSettings {
    fn default() -> Self {
        RegimeSettings {
            kind: RegimeKind::Paper,
            period_min: DEFAULT_PERIOD_MIN,
            hysteresis: None,
            menu: None,
            forecast_h: DEFAULT_FORECAST_H,
            pending_timeout_min: None,
            plugin_choice: PluginChoice::FirstIndex,
            relayout_s: DEFAULT_RELAYOUT_S,
            allow_drain_without_room: false,
            defrag_every_h: None,
            defrag_max_restarts: None,
            restart_s: None,
        }
    }
}

impl RegimeSettings {
    /// The hysteresis in force: the table's, else the legacy key's, else the default.
    pub(crate) fn hysteresis_or(&self, legacy: Option<u32>) -> u32 {
        self.hysteresis.or(legacy).unwrap_or(DEFAULT_HYSTERESIS)
    }

    /// The restart budget of a defragmentation pass.
    pub fn defrag_max_restarts_or_default(&self) -> u32 {
        self.defrag_max_restarts.unwrap_or(DEFAULT_DEFRAG_MAX_RESTARTS)
    }

    /// A restarted pod's downtime, seconds.
    pub fn restart_s_or_default(&self) -> f64 {
        self.restart_s.unwrap_or(DEFAULT_RESTART_S)
    }

    /// A setting the regime of `kind` does not read, written in the file: (key, why). The
    /// restart-based defragmentation's settings belong to dynamic MIG.
    pub(crate) fn misplaced(&self) -> Option<(&'static str, String)> {
        if self.kind == RegimeKind::Dynamic {
            return None;
        }
        let set = [
            ("defrag_every_h", self.defrag_every_h.is_some()),
            ("defrag_max_restarts", self.defrag_max_restarts.is_some()),
            ("restart_s", self.restart_s.is_some()),
        ];
        set.iter().find(|(_, on)| *on).map(|&(key, _)| {
            (
                key,
                format!(
                    "restart-based defragmentation is dynamic MIG's (kind = \"dynamic\"), not {}'s: remove it",
                    self.kind.name()
                ),
            )
        })
    }

    /// The first setting out of range: (key, what it must be).
    pub(crate) fn out_of_range(&self) -> Option<(&'static str, String)> {
        let week_min = 7.0 * 24.0 * 60.0;
        let pos = |v: f64, max: f64| -> Option<String> {
            (!(v.is_finite() && v > 0.0 && v <= max))
                .then(|| format!("must be a number > 0 and at most {max}, not {v}"))
        };
        if let Some(m) = pos(self.period_min, week_min) {
            return Some(("period_min", m));
        }
        if let Some(h) = self.hysteresis {
            if !(1..=1000).contains(&h) {
                return Some(("hysteresis", format!("must be within 1..1000, not {h}")));
            }
        }
        if !(self.forecast_h.is_finite() && (0.0..=24.0 * 365.0).contains(&self.forecast_h)) {
            return Some((
                "forecast_h",
                format!("must be a number >= 0 and at most 8760, not {}", self.forecast_h),
            ));
        }
        if let Some(t) = self.pending_timeout_min {
            if let Some(m) = pos(t, 365.0 * 24.0 * 60.0) {
                return Some(("pending_timeout_min", m));
            }
        }
        if let Some(h) = self.defrag_every_h {
            if let Some(m) = pos(h, 365.0 * 24.0) {
                return Some(("defrag_every_h", m));
            }
        }
        if let Some(n) = self.defrag_max_restarts {
            if !(1..=100_000).contains(&n) {
                return Some((
                    "defrag_max_restarts",
                    format!("must be within 1..100000, not {n}"),
                ));
            }
        }
        if let Some(r) = self.restart_s {
            if !(r.is_finite() && (0.0..=86_400.0).contains(&r)) {
                return Some((
                    "restart_s",
                    format!("must be a number >= 0 and at most 86400, not {r}"),
                ));
            }
        }
        if !(self.relayout_s.is_finite() && (0.0..=86_400.0).contains(&self.relayout_s)) {
            return Some((
                "relayout_s",
                format!("must be a number >= 0 and at most 86400, not {}", self.relayout_s),
            ));
        }
        None
    }
}
