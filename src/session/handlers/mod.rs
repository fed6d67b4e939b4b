//! The handlers of [`update`](super::update), one file per concern: the reducer only dispatches
//! each [`Action`](super::Action) to one of them.

pub(super) mod clock;
pub(super) mod defrag;
pub(super) mod file;
pub(super) mod fleet;
pub(super) mod history;
pub(super) mod mode;
pub(super) mod optimizer;
pub(super) mod plan;
pub(super) mod plan_step;
pub(super) mod settings;
pub(super) mod stepped;
