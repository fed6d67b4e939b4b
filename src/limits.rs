//! Every upper bound on an input that sets an amount of work, in one table. Scenario files, traces
//! and the command line are checked against these when they are read, with the usual one-line
//! error, so that no accepted input makes a run hang, overflow or allocate without end.
//! `docs/limits.md` gives the reasons for each value.

/// Longest simulated period of one window (`warmup_h`, `measure_h`, `--hours`, `--warmup`), and
/// longest mean lifetime: ten years of simulated time, in hours.
pub(crate) const MAX_SIM_HOURS: f64 = 87_600.0;

/// Largest offered load rho (`load`, `--load`, `--loads`).
pub(crate) const MAX_LOAD: f64 = 100.0;

/// Most hosts in one scenario (over all host groups and hosts).
pub(crate) const MAX_HOSTS: u64 = 1_000_000;

/// Most seeds in one sweep (`--seeds`).
pub(crate) const MAX_SEEDS: u64 = 10_000;

/// Most solver threads (`policy.origamig.threads`).
pub(crate) const MAX_THREADS: u32 = 64;
/// `policy.origamig.host_columns_budget`: the multiplier of the host-content enumeration's limits (at
/// 32, up to 12.8 million cutting steps per host and 1.92 million columns per model).
pub const MAX_HOST_COLUMNS_BUDGET: u32 = 32;
/// `policy.origamig.reenable_room_share`: what `reenable = "room"` waits to see freed, in shares
/// of the lightest host's memory slices.
pub(crate) const MAX_REENABLE_ROOM_SHARE: f64 = 100.0;
/// `policy.origamig.reenable_gap_rise`: how far Γh must rise above its lowest value since a
/// consolidation call that changed nothing to enable the class again, in GPUs (hosts for M0).
pub(crate) const MAX_REENABLE_GAP_RISE: u32 = 1000;
/// `policy.origamig.merge_hosts`: the hosts of a merge neighborhood (Mmax of §6.7's largest variant, 32,
/// already takes calls to the time limit in the paper).
pub(crate) const MAX_MERGE_HOSTS: usize = 32;
/// `policy.origamig.neighborhood_vms`: the VMs of a VM-bounded neighborhood (twice the paper's Nmax).
pub(crate) const MAX_NEIGHBORHOOD_VMS: usize = 128;

/// `policy.origamig.delta_per_gb`: the migration penalty per GB a move copies. At 1000 a VM of 1 TB
/// costs 1e6 per move, [`MAX_WEIGHT`].
pub(crate) const MAX_DELTA_PER_GB: f64 = 1000.0;

/// Largest weight: profile weights (`large_profile_weight`, `profile_mix`), the rewards and costs
/// of the optimizer's objective (`weight_*`, `delta`) and the packing policy's weights.
pub(crate) const MAX_WEIGHT: f64 = 1e6;

/// Latest simulated time of a saved state (`now_s`, VM arrival and admission): a hundred years,
/// in seconds, far inside the calendar's range.
pub(crate) const MAX_NOW_S: f64 = 100.0 * 365.25 * 86_400.0;

/// Shortest lifetime of a trace pod that ran at all, in seconds (the trace's resolution).
pub(crate) const MIN_TRACE_LIFETIME_S: f64 = 1.0;

/// Most rows of a trace file.
pub(crate) const MAX_TRACE_ROWS: usize = 10_000_000;

/// Longest trace window (`trace_window_days`): ten years.
pub(crate) const MAX_TRACE_DAYS: f64 = 3_652.5;

/// Longest optimizer time limit per call (`time_limit_s`, `sim_time_limit_s`): one day.
pub(crate) const MAX_TIME_LIMIT_S: f64 = 86_400.0;

/// Most HiGHS branch-and-bound nodes per simulated call (`node_limit`): HiGHS counts them in a
/// 32-bit integer.
pub(crate) const MAX_NODE_LIMIT: u64 = i32::MAX as u64;

/// Most HiGHS simplex iterations per simulated call (`lp_iteration_limit`).
pub(crate) const MAX_LP_ITERATION_LIMIT: u64 = i64::MAX as u64;

/// A number as written in messages: large values in exponent form (`1e308`, not 309 digits),
/// the others as TOML writes them (`nan`, `-inf`).
pub fn show(v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if v.abs() >= 1e9 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_keeps_small_numbers_and_shortens_large_ones() {
        assert_eq!(show(0.85), "0.85");
        assert_eq!(show(999_999_999.0), "999999999");
        assert_eq!(show(1e308), "1e308");
        assert_eq!(show(-1e13), "-1e13");
        assert_eq!(show(f64::NAN), "nan");
        assert_eq!(show(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn the_latest_time_fits_the_calendar() {
        let start = chrono::DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z").unwrap();
        assert!(start
            .checked_add_signed(chrono::Duration::seconds(MAX_NOW_S as i64 * 2))
            .is_some());
    }
}
