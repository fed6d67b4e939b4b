//! The OrigaMIG optimizer (§5): triggers (§5.1), neighborhood selection (Algorithm 1, §5.2),
//! the restricted BILP (§4, §5.3), evaluation (§5.3), the executor's plan (§5.4) and the
//! `origamig` and `opt` policies.

pub mod bilp;
pub mod call;
pub mod greedy;
pub mod hostset;
pub mod neighborhood;
pub mod objective;
pub mod partitioned;
pub mod policy;
pub mod triggers;

pub use call::{propose, propose_with, CallMode, Proposal};
pub use partitioned::Partitioned;
pub use policy::{gpu_compaction_after, gpu_compaction_plan, Origamig, GPU_COMPACTION_ORIGIN};
