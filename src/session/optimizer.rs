//! The bridge from a session's solve request to the OrigaMIG optimizer (§5).

use super::{ObjectiveTerms, OptimizeMode, SolveProgress};
use crate::fleet::{Fleet, HostId};
use crate::plan::Plan;
use crate::scenario::PolicySettings;
use anyhow::{bail, Result};

/// What a call returned.
pub struct CallOutcome {
    pub plan: Plan,
    pub hosts: Vec<HostId>,
    pub status: String,
    pub gap: f64,
    pub solve_s: f64,
    pub terms: Option<(ObjectiveTerms, ObjectiveTerms)>,
}

/// Runs one optimizer call on a copy of the fleet.
pub fn propose(
    _fleet: &Fleet,
    mode: OptimizeMode,
    _settings: &PolicySettings,
    _progress: &mut dyn FnMut(SolveProgress) -> bool,
) -> Result<CallOutcome> {
    bail!(
        "the OrigaMIG optimizer is not part of this build yet ({} call refused)",
        mode.name()
    )
}
