//! Fleet operations from the MIG notes (seeds 002 and 003, DESIGN §5): the verified layout menu
//! and the layout planner, per-tenant quotas and the multi-GPU admission rule, chargeback,
//! re-layout drains, mig-parted export and the packing arrival policy.

pub mod chargeback;
pub mod export;
pub mod import;
pub mod k8s_export;
pub mod layouts;
pub mod packing;
pub mod planner;
pub mod quotas;
pub mod relayout;
