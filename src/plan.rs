//! Plans (§5.4): a [`Plan`] is a target state for some VMs (start a pending VM, move a running
//! one), a value that can be previewed and discarded. The executor ([`crate::executor`]) orders it
//! into steps and applies them; applying a plan is the only way a policy changes the fleet.

use crate::fleet::{Fleet, GpuMode, HostId, Placement, VmId};
use std::collections::{BTreeMap, BTreeSet};

/// A target placement for some VMs: pending VMs to start and running VMs to move.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Target placement of every VM that starts or moves.
    pub targets: BTreeMap<VmId, Placement>,
    /// Who proposed it (for logs and previews).
    pub origin: String,
    /// Running VMs of `targets` that reach their target by a restart at their next deploy
    /// (stopped, then started on the target; nothing is copied) instead of a live migration
    /// (docs/operations.md, "Defragmentation across modes").
    pub restarts: BTreeSet<VmId>,
    /// Mode switches of GPUs (host, GPU index) to the given mode. A switch runs when the GPU
    /// holds nothing (after the steps that empty it) and before the steps whose targets need the
    /// new mode (docs/operations.md, "Defragmentation across modes").
    pub modes: BTreeMap<(HostId, usize), GpuMode>,
}

impl Plan {
    /// Whether VM `id` reaches its target by a restart at its next deploy.
    pub fn restarts_at_deploy(&self, id: VmId) -> bool {
        self.restarts.contains(&id)
    }

    /// The hosts the plan touches on `fleet`: each target's host and the host each moving VM
    /// leaves (§6.3: no request goes to them until the moves end).
    pub fn hosts(&self, fleet: &Fleet) -> BTreeSet<HostId> {
        self.targets
            .iter()
            .flat_map(|(&id, to)| {
                let from = fleet.vm(id).and_then(|v| v.placement.as_ref()).map(|p| p.host);
                from.into_iter().chain([to.host])
            })
            .collect()
    }

    /// The GPUs (host, index) the plan's moving VMs leave on `fleet`: each GI's GPU before the
    /// move. Until a VM's copy ends its GIs still run there.
    pub fn source_gpus(&self, fleet: &Fleet) -> BTreeSet<(HostId, usize)> {
        self.targets
            .keys()
            .filter_map(|&id| fleet.vm(id)?.placement.as_ref())
            .flat_map(|p| p.gis.iter().map(move |gi| (p.host, gi.gpu)))
            .collect()
    }
}
