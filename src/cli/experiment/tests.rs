//! Unit tests of `cli::experiment`.

use super::*;
#[test]
fn the_eq5_gap_sums_the_snapshots_and_the_worst_snapshot_is_kept_apart() {
    let snap = |o: f64, p: f64| Snapshot {
        hosts: 8,
        seed: 3,
        t_h: 48.0,
        vms: 10,
        origamig_active: 4,
        opt_active: 3,
        origamig_eq5: o,
        opt_eq5: p,
        opt_status: SolveStatus::Optimal,
        opt_gap: 0.0,
        opt_s: 0.1,
    };
    // Three snapshots of seed 3 at 8 hosts: 30 and 25 below OPT at two of them.
    let (agg, worst) = eq5_gaps(&[snap(1092.0, 1092.0), snap(781.0, 811.0), snap(781.0, 806.0)]);
    assert!((agg - 55.0 / 2709.0).abs() < 1e-12, "{agg}");
    assert!((worst - 30.0 / 811.0).abs() < 1e-12, "{worst}");
    assert_eq!(eq5_gaps(&[]), (0.0, 0.0));
}
