//! Operations over a fleet or a simulation's results (docs/operations.md): the verified layout
//! menu and the layout planner, chargeback, re-layout drains and the mig-parted export.

pub mod chargeback;
pub mod defrag;
pub mod export;
pub mod import;
pub mod k8s_export;
pub mod layouts;
pub mod mig_parted;
pub mod mode;
pub mod planner;
pub mod relayout;
pub mod serving;
