//! FF (§6.3): first-fit host selection with the default GI placement of §3 (Eq. 3). The
//! paper's default placement and the baseline the other policies are compared with.

use super::Policy;
use crate::fleet::{Fleet, Placement, Vm};

/// First fit: the first host with room for the VM's cores, RAM and GIs (largest GI first, each
/// on the first GPU of the host where it fits, at the start that maximizes CF).
#[derive(Debug, Clone, Default)]
pub(crate) struct FirstFit;

impl Policy for FirstFit {
    fn name(&self) -> &str {
        "ff"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) -> Option<Placement> {
        fleet.ff_placement(vm)
    }
}
