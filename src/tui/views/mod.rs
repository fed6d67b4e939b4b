//! The views of the TUI, each drawing from `&App` only.

pub mod charts;
pub mod detail;
pub mod fleet;
pub mod gauges;
pub mod log;
pub mod mode;
pub mod overlays;
pub mod preview;
pub mod regime;
pub mod relayout;
pub mod status;
