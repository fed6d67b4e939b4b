//! What a policy's optimizer calls have done: one struct, [`CallLog`], that every policy making
//! calls returns through [`super::Policy::call_log`], for the simulator's metrics and the
//! planner's progress.

use crate::metrics::CallTally;

/// A policy's optimizer calls so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallLog {
    /// Wall-clock seconds of each call that ran the solver (a call whose neighborhood is empty
    /// is not counted here but in `trigger_checks`).
    pub times_s: Vec<f64>,
    /// The VMs of the neighborhood (|N̂|, pending VMs included) of each call of `times_s`, in the
    /// same order.
    pub vms: Vec<usize>,
    /// Trigger checks that built a neighborhood and found nothing to solve (an empty N̂).
    pub trigger_checks: u64,
    /// Their wall-clock seconds in total.
    pub trigger_check_s: f64,
    /// Calls that a limit ended before the optimum was proven.
    pub limited: LimitedCalls,
    /// The calls and trigger checks by what fired them and the neighborhood they took.
    pub tallies: Vec<CallTally>,
    /// Optimizer calls made (progress reports): those of `times_s`, or for the packing policy
    /// its defragmentation trigger's calls.
    pub calls: usize,
}

/// Optimizer calls that a limit ended before the optimum was proven (docs/optimizer.md, "Call
/// budget").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitedCalls {
    /// Ended by the node budget (`node_limit`): the same on any machine.
    pub node_limited: u64,
    /// Ended by the wall clock (`sim_time_limit_s`): where depends on the machine's speed and
    /// load, so the run's figures may differ elsewhere.
    pub wall_limited: u64,
}

impl LimitedCalls {
    /// Counts a call that ended with `status` (`None`: no solve ran).
    pub fn count(&mut self, status: Option<super::origamig::bilp::SolveStatus>) {
        use super::origamig::bilp::SolveStatus;
        match status {
            Some(SolveStatus::NodeLimit) => self.node_limited += 1,
            Some(SolveStatus::TimeLimit) => self.wall_limited += 1,
            _ => {}
        }
    }
}
