//! The OrigaMIG optimizer (§5): triggers (§5.1), neighborhood selection (Algorithm 1, §5.2),
//! the restricted BILP (§4, §5.3), evaluation (§5.3) and the policy.

pub mod bilp;
pub mod neighborhood;
pub mod objective;
pub mod triggers;
