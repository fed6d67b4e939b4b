//! migplan: a planner for fleets of NVIDIA MIG GPUs, with the OrigaMIG optimizer.
//!
//! The core knows nothing of terminals; the TUI and the CLI are front ends over it. The modules
//! form layers, lowest first (`docs/layers.txt` lists them); a module imports modules of its own
//! layer and of lower ones, never of a higher one. One line per module, layer by layer:
//!
//! - `catalog`: GPU models and their MIG profiles.
//! - `policy_kind`: the names of the placement policies.
//! - `policy_settings`: the settings of each placement policy, one type per policy.
//! - `limits`: the upper bounds of every input that sets an amount of work.
//! - `fsutil`: kill-safe file writes (temporary file, sync, rename).
//!
//! - `mig`: the slice rules of one GPU (occupancy, permitted starts, the default GI placement).
//!
//! - `fleet`: hosts, GPUs, VMs and their placements, with the invariants every change keeps.
//! - `explore`: teaching and analysis over the slice rules of one GPU (§3, Fig. 1).
//!
//! - `scenario`: scenario files: the fleet, the workload and the policy settings.
//! - `workload`: requests, their lifetimes and traces.
//! - `metrics`: what a fleet state and a run measure.
//!
//! - `plan`: a plan, the target placements of some VMs.
//! - `executor`: ordering a plan into steps that use free resources only, and applying them.
//!
//! - `policy`: the placement policies (FF, MFI, TC, OrigaMIG, OPT, packing).
//!
//! - `sim`: the simulation clock, with the admission checks of arriving requests.
//!
//! - `ops`: operations over a fleet or a simulation's results: the layout menu and planner,
//!   chargeback, re-layout drains, the mig-parted reader and the exports.
//! - `fleet_import`: real fleets in, from nvidia-smi captures and kubectl JSON (above `ops`,
//!   whose layout menu and mig-parted reader it uses).
//!
//! - `session`: the planner session, a fleet under a simulated clock driven by actions.
//!
//! - `tui`: the terminal front end.
//! - `cli`: the command line, beside the TUI.

pub mod catalog;
pub mod cli;
pub mod executor;
pub mod explore;
pub mod fleet;
pub mod fleet_import;
pub mod fsutil;
pub mod limits;
pub mod metrics;
pub mod mig;
pub mod ops;
pub mod plan;
pub mod policy;
pub mod policy_kind;
pub mod policy_settings;
pub mod regime;
pub mod scenario;
pub mod session;
pub mod sim;
pub mod tui;
pub mod workload;
