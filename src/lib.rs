//! migplan: a planner for fleets of NVIDIA MIG GPUs, with the OrigaMIG optimizer.
//!
//! The core (catalog, slice rules, fleet state, scenarios, policies, solver, executor,
//! simulation, metrics) knows nothing of terminals; the TUI and the CLI are front ends over it.

pub mod catalog;
pub mod cli;
pub mod explore;
pub mod fleet;
pub mod metrics;
pub mod mig;
pub mod ops;
pub mod plan;
pub mod policy;
pub mod scenario;
pub mod session;
pub mod sim;
pub mod tui;
pub mod workload;
