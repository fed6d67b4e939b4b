//! The integration tests, in one binary: every test binary links HiGHS, so one binary instead of
//! one per file saves most of the link time of `cargo test`. Each module is a former file of
//! `tests/`; `common` holds the helpers they share.
//!
//! HiGHS's thread count is global to a process (the first value used wins); every test here
//! solves with one thread, so the tests can share the process.

mod bad_input;
mod batch_cli;
mod big_nodes;
mod call_budget;
mod cli_rules;
mod common;
mod defrag;
mod determinism;
mod executor;
mod export_k8s_plan;
mod export_modes;
mod figures;
mod fleet_import;
mod fleet_import_dra;
mod fleet_props;
mod fuzz;
mod gpu_modes;
mod host_budget;
mod kill_writes;
mod layers;
mod menu_files;
mod mode_change;
mod mode_cli;
mod mode_l40s;
mod ops_chargeback;
mod ops_cli;
mod ops_export;
mod ops_import_cli;
mod ops_layout_planner;
mod ops_layouts;
mod ops_packing;
mod ops_quotas;
mod ops_relayout;
mod ops_relayout_cli;
mod ops_simulation;
mod opt_bilp;
mod opt_experiment;
mod opt_policy;
mod opt_solve_cli;
mod origamig_calls;
mod origamig_merge;
mod origamig_penalty;
mod origamig_preset;
mod partitions;
mod policy_sections;
mod regimes;
mod rules_paper_figures;
mod scenario_errors;
mod scenario_roundtrip;
mod serving_modes;
mod session_plan;
mod session_reducer;
mod session_step;
mod sim_cli;
mod sim_clock;
mod sim_energy;
mod sim_policies;
mod sim_trace;
mod sim_workload;
mod stranded_modes;
mod sweep_shard;
mod tui_modes;
mod tui_play_keys;
mod tui_regime;
mod tui_screens;
mod tui_script;
mod tui_step;
mod tui_tmux;
