//! Operations over a fleet or a simulation's results (docs/operations.md): the verified layout
//! menu and the layout planner, chargeback, re-layout drains, the mig-parted reader and the
//! Kubernetes and mig-parted exports. Importing a real fleet is `crate::fleet_import`.

pub mod chargeback;
pub mod defrag;
pub mod export;
pub mod k8s_export;
pub mod layout_planner;
pub mod layouts;
pub mod menu_file;
pub mod mig_parted;
pub mod mode;
pub mod relayout;
pub mod serving;
