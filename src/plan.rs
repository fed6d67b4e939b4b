//! Plans (§5.4): a [`Plan`] is a target state for some VMs (start a pending VM, move a running
//! one), a value that can be previewed and discarded. The executor ([`crate::executor`]) orders it
//! into steps and applies them; applying a plan is the only way a policy changes the fleet.

use crate::fleet::{Placement, VmId};
use std::collections::BTreeMap;

/// A target placement for some VMs: pending VMs to start and running VMs to move.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Target placement of every VM that starts or moves.
    pub targets: BTreeMap<VmId, Placement>,
    /// Who proposed it (for logs and previews).
    pub origin: String,
}
