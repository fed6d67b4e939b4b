//! The figures of a seed are byte-identical before and after a change that is not meant to change
//! behaviour: `migplan simulate` on the paper's 32-host fleet, one seed, a short window, for each
//! policy, against the JSON kept in `tests/golden/<policy>.json`. The window is short: each
//! run takes about a second, and OrigaMIG's solves end well inside their time limit (a solve cut
//! by the limit would make the figures depend on the machine's speed).
//!
//! Fields that measure time on this machine rather than the simulation are removed before the
//! comparison (see [`TIMING_FIELDS`]); everything else must match exactly.
//!
//! To regenerate the files, only when a change of behaviour is intended (and say so in the commit):
//! `MIGPLAN_BLESS_GOLDEN=1 cargo test --test it figures`

use crate::common::cli::migplan;
use crate::common::{golden_args, without_timing, CALL_TALLY_TIMING_FIELDS, TIMING_FIELDS};
use serde_json::Value;
use std::path::PathBuf;

fn golden_path(policy: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{policy}.json"))
}

fn figures_match_the_golden_file(policy: &str) {
    let args = golden_args("scenarios/paper-32.toml", policy);
    let out = migplan().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "migplan {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).expect("simulate --json prints JSON");
    let run = without_timing(run);
    // The rows of `calls_by_trigger` are printed only for policies that make calls.
    let present = if run.get("calls_by_trigger").is_some() {
        TIMING_FIELDS.len()
    } else {
        TIMING_FIELDS.len() - CALL_TALLY_TIMING_FIELDS
    };
    for f in &TIMING_FIELDS[..present] {
        assert!(
            out.stdout
                .windows(f.len() + 2)
                .any(|w| w == format!("\"{f}\"").as_bytes()),
            "timing field `{f}` is no longer in the output: update TIMING_FIELDS"
        );
    }
    let text = serde_json::to_string_pretty(&run).unwrap() + "\n";
    let path = golden_path(policy);
    if std::env::var_os("MIGPLAN_BLESS_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let golden: Value = serde_json::from_str(&golden).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        run == golden,
        "`migplan {}` no longer gives the figures of {} (timing fields {TIMING_FIELDS:?} aside).\n\
         If the change of behaviour is intended, regenerate with \
         `MIGPLAN_BLESS_GOLDEN=1 cargo test --test it figures` and say why in the commit.\n\
         now:\n{text}",
        args.join(" "),
        path.display(),
    );
}

#[test]
fn ff_figures_are_unchanged() {
    figures_match_the_golden_file("ff");
}

#[test]
fn mfi_figures_are_unchanged() {
    figures_match_the_golden_file("mfi");
}

#[test]
fn tc_figures_are_unchanged() {
    figures_match_the_golden_file("tc");
}

#[test]
fn origamig_figures_are_unchanged() {
    figures_match_the_golden_file("origamig");
}

#[test]
fn packing_figures_are_unchanged() {
    figures_match_the_golden_file("packing");
}

#[test]
fn timing_fields_are_removed_at_any_depth() {
    let v = serde_json::json!({"wall_s": 1.5, "a": {"call_s_p95": 2, "b": [{"call_s_median": 3, "c": 4}]}, "d": 5});
    assert_eq!(
        without_timing(v),
        serde_json::json!({"a": {"b": [{"c": 4}]}, "d": 5})
    );
}
