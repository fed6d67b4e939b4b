//! Range checks of the `[workload]` and `[policy]` settings, made when a scenario is loaded, so
//! that `check`, `solve`, `simulate` and the planner refuse the same files, each with one line
//! naming the file, line, column and field. Serde already rejects a value of the wrong type; these
//! are the values of the right type that mean nothing (a negative penalty, a probability above
//! one, a threshold the paper rules out).

use super::{Ctx, PolicySettings, WorkloadSettings};
use crate::catalog::Catalog;
use crate::limits::{self, show};
use crate::policy_settings::OrigamigSettings;
use std::ops::Range;

/// Byte span of `key` in table `table` of `src` ("" for the top level), or `0..0` when the key
/// is not written there (a default value, which is always valid).
pub(super) fn key_span(src: &str, table: &str, key: &str) -> Range<usize> {
    let mut current = "";
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            current = t.trim_end().trim_matches(|c| c == '[' || c == ']').trim();
        } else if current == table {
            if let Some(start) = key_at(line, key) {
                return at + start..at + start + key.len();
            }
        }
        at += line.len();
    }
    0..0
}

/// Byte span of `key` in the `index`-th (0-based) table of the array `[[array]]`, or `0..0`.
pub(super) fn array_key_span(src: &str, array: &str, index: usize, key: &str) -> Range<usize> {
    let header = format!("[[{array}]]");
    let mut seen: Option<usize> = None;
    let mut inside = false;
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            inside = t.trim_end() == header;
            if inside {
                seen = Some(seen.map_or(0, |n| n + 1));
            }
        } else if inside && seen == Some(index) {
            if let Some(start) = key_at(line, key) {
                return at + start..at + start + key.len();
            }
        }
        at += line.len();
    }
    0..0
}

/// Where `key` (bare or quoted, then at its opening quote) begins in `line` when the line assigns
/// it; comment lines and other keys (whatever their values hold) do not count.
fn key_at(line: &str, key: &str) -> Option<usize> {
    let t = line.trim_start();
    if t.starts_with('#') {
        return None;
    }
    let (k, _) = t.split_once('=')?;
    let k = k.trim();
    let bare = k.trim_matches('"');
    if bare != key {
        return None;
    }
    Some(line.len() - t.len())
}

/// What a setting must be, checked against its value.
enum Want {
    /// A finite number within 0..=max.
    NonNegative(f64, f64),
    /// A finite number > 0 and <= max.
    Positive(f64, f64),
    /// A number within 0..=1.
    Share(f64),
    /// An integer within min..=max.
    Within(i64, i64, i64),
}

impl Want {
    /// `None` when the value is fine, else what it must be.
    fn fails(&self) -> Option<String> {
        match *self {
            Want::NonNegative(v, _) | Want::Positive(v, _) if !v.is_finite() => {
                Some(format!("must be a finite number, not {}", show(v)))
            }
            Want::NonNegative(v, _) if v < 0.0 => Some(format!("must be a number >= 0, not {}", show(v))),
            Want::Positive(v, _) if v <= 0.0 => Some(format!("must be a number > 0, not {}", show(v))),
            Want::NonNegative(v, max) | Want::Positive(v, max) if v > max => Some(format!(
                "must be at most {} (docs/limits.md), not {}",
                show(max),
                show(v)
            )),
            Want::Share(v) if !(0.0..=1.0).contains(&v) => Some(format!("must be within 0..1, not {v}")),
            Want::Within(v, min, _) if v < min => Some(format!("must be at least {min}, not {v}")),
            Want::Within(v, _, max) if v > max => {
                Some(format!("must be at most {max} (docs/limits.md), not {v}"))
            }
            _ => None,
        }
    }
}

/// Checks every numeric and named setting of `[workload]`, `[policy]` and `now_s`.
pub(super) fn check(
    cx: &Ctx,
    catalog: &Catalog,
    now_s: Option<f64>,
    w: &WorkloadSettings,
    p: &PolicySettings,
) -> anyhow::Result<()> {
    let workload = workload_rules(w);
    let origamig = origamig_rules(&p.origamig);
    let mix = [
        ("share", Want::Share(w.mix.share)),
        ("isolated", Want::Share(w.mix.isolated)),
        ("gang", Want::Share(w.mix.gang)),
        ("gang_gpus", Want::Within(i64::from(w.mix.gang_gpus), 1, 64)),
    ];
    let top = [(
        "now_s",
        Want::NonNegative(now_s.unwrap_or(0.0), limits::MAX_NOW_S),
    )];
    for (table, rules) in [
        ("", &top[..]),
        ("workload", &workload[..]),
        ("workload.mix", &mix[..]),
        (
            "policy",
            &[("migration_gbps", Want::Positive(p.migration_gbps, f64::MAX))][..],
        ),
        ("policy.origamig", &origamig[..]),
        (
            "policy.tc",
            &[(
                "compaction_min",
                Want::Positive(p.tc.compaction_min, limits::MAX_SIM_HOURS * 60.0),
            )][..],
        ),
        (
            "policy.packing",
            &[(
                "defrag_stranded_share",
                Want::Share(p.packing.defrag_stranded_share),
            )][..],
        ),
    ] {
        for (key, want) in rules {
            if let Some(msg) = want.fails() {
                let why = match *key {
                    "theta" => " (§5.1: Γh = 0 proves that no GPU can be switched off)",
                    "defrag_stranded_share" => " (0 = off)",
                    _ => "",
                };
                return fail(cx, table, key, format!("{msg}{why}"));
            }
        }
    }
    if w.mix.share + w.mix.gang > 1.0 {
        return fail(
            cx,
            "workload.mix",
            "gang",
            format!(
                "share + gang must be at most 1 (the rest are MIG requests), not {}",
                limits::show(w.mix.share + w.mix.gang)
            ),
        );
    }
    check_policy_extras(cx, p)?;
    if catalog.model_id(&w.trace_model).is_none() {
        return fail(
            cx,
            "workload",
            "trace_model",
            format!(
                "unknown GPU model `{}` (known: {})",
                w.trace_model,
                catalog.model_names()
            ),
        );
    }
    Ok(())
}

/// The range of each number of `[workload]` (a data table).
fn workload_rules(w: &WorkloadSettings) -> Vec<(&'static str, Want)> {
    let hours = limits::MAX_SIM_HOURS;
    let weight = limits::MAX_WEIGHT;
    vec![
        ("load", Want::NonNegative(w.load, limits::MAX_LOAD)),
        ("job_share", Want::Share(w.job_share)),
        ("job_mean_h", Want::Positive(w.job_mean_h, hours)),
        ("tenant_mean_h", Want::Positive(w.tenant_mean_h, hours)),
        ("lognormal_sigma", Want::Positive(w.lognormal_sigma, 10.0)),
        ("two_gi_prob", Want::Share(w.two_gi_prob)),
        ("warmup_h", Want::NonNegative(w.warmup_h, hours)),
        ("measure_h", Want::NonNegative(w.measure_h, hours)),
        (
            "large_profile_weight",
            Want::NonNegative(w.large_profile_weight, weight),
        ),
        (
            "trace_window_days",
            Want::Positive(w.trace_window_days, limits::MAX_TRACE_DAYS),
        ),
    ]
}

/// The range of each number of `[policy.origamig]` (a data table).
fn origamig_rules(p: &OrigamigSettings) -> Vec<(&'static str, Want)> {
    let hours = limits::MAX_SIM_HOURS;
    let weight = limits::MAX_WEIGHT;
    // §4: a, b, e and w_p are rewards and costs, δ a penalty; a negative one turns the objective
    // of Eq. (5) around.
    vec![
        ("weight_admit", Want::NonNegative(p.weight_admit, weight)),
        ("weight_host", Want::NonNegative(p.weight_host, weight)),
        ("weight_gpu", Want::NonNegative(p.weight_gpu, weight)),
        (
            "weight_free_start",
            Want::NonNegative(p.weight_free_start, weight),
        ),
        ("delta", Want::NonNegative(p.delta, weight)),
        ("delta_job_extra", Want::NonNegative(p.delta_job_extra, weight)),
        (
            "delta_per_gb",
            Want::NonNegative(p.delta_per_gb, limits::MAX_DELTA_PER_GB),
        ),
        ("m_max", Want::Within(p.m_max as i64, 1, i64::MAX)),
        ("m_max_gpus", Want::Within(p.m_max_gpus as i64, 1, i64::MAX)),
        ("n_max", Want::Within(p.n_max as i64, 1, i64::MAX)),
        (
            "time_limit_s",
            Want::Positive(p.time_limit_s, limits::MAX_TIME_LIMIT_S),
        ),
        (
            "node_limit",
            Want::Within(
                p.node_limit.min(i64::MAX as u64) as i64,
                0,
                limits::MAX_NODE_LIMIT as i64,
            ),
        ),
        (
            "sim_time_limit_s",
            Want::Positive(p.sim_time_limit_s, limits::MAX_TIME_LIMIT_S),
        ),
        (
            "lp_iteration_limit",
            Want::Within(
                p.lp_iteration_limit.min(i64::MAX as u64) as i64,
                1,
                limits::MAX_LP_ITERATION_LIMIT as i64,
            ),
        ),
        (
            "threads",
            Want::Within(p.threads as i64, 1, limits::MAX_THREADS as i64),
        ),
        ("theta", Want::Within(p.theta, 1, i64::MAX)),
        ("check_every_s", Want::Positive(p.check_every_s, hours * 3600.0)),
        (
            "consolidation_hold_s",
            Want::NonNegative(p.consolidation_hold_s, hours * 3600.0),
        ),
        (
            "reenable_room_share",
            Want::NonNegative(p.reenable_room_share, limits::MAX_REENABLE_ROOM_SHARE),
        ),
        (
            "reenable_gap_rise",
            Want::Within(
                p.reenable_gap_rise as i64,
                1,
                limits::MAX_REENABLE_GAP_RISE as i64,
            ),
        ),
        (
            "gpu_compaction_min",
            Want::NonNegative(p.gpu_compaction_min, hours * 60.0),
        ),
        (
            "gpu_compaction_small_min",
            Want::NonNegative(p.gpu_compaction_small_min, hours * 60.0),
        ),
        (
            "partitions",
            Want::Within(
                p.partitions.min(i64::MAX as usize) as i64,
                1,
                limits::MAX_HOSTS as i64,
            ),
        ),
        (
            "partition_hosts",
            Want::Within(
                p.partition_hosts.min(i64::MAX as usize) as i64,
                0,
                limits::MAX_HOSTS as i64,
            ),
        ),
        (
            "host_columns_budget",
            Want::Within(
                p.host_columns_budget as i64,
                1,
                limits::MAX_HOST_COLUMNS_BUDGET as i64,
            ),
        ),
    ]
}

/// The `[policy]` settings whose rule is not a plain range: the packing score's signed weights,
/// `merge_hosts`, `neighborhood_vms`, and `partitions` against `partition_hosts`.
fn check_policy_extras(cx: &Ctx, p: &PolicySettings) -> anyhow::Result<()> {
    let weight = limits::MAX_WEIGHT;
    for (key, v) in [
        ("finish_gpu", p.packing.finish_gpu),
        ("finish_host", p.packing.finish_host),
        ("protect_host", p.packing.protect_host),
    ] {
        if !(v.is_finite() && v.abs() <= weight) {
            return fail(
                cx,
                "policy.packing",
                key,
                format!(
                    "must be a finite number within ±{}, not {}",
                    show(weight),
                    show(v)
                ),
            );
        }
    }
    let p = &p.origamig;
    if p.merge_hosts == 1 || p.merge_hosts > limits::MAX_MERGE_HOSTS {
        return fail(
            cx,
            "policy.origamig",
            "merge_hosts",
            format!(
                "must be 0 (off) or within 2..={} (docs/limits.md), not {}",
                limits::MAX_MERGE_HOSTS,
                p.merge_hosts
            ),
        );
    }
    if p.neighborhood_vms > limits::MAX_NEIGHBORHOOD_VMS {
        return fail(
            cx,
            "policy.origamig",
            "neighborhood_vms",
            format!(
                "must be 0 (off) or within 1..={} (docs/limits.md), not {}",
                limits::MAX_NEIGHBORHOOD_VMS,
                p.neighborhood_vms
            ),
        );
    }
    if p.partition_hosts > 0 && p.partitions > 1 {
        return fail(
            cx,
            "policy.origamig",
            "partition_hosts",
            format!(
                "set either partitions ({}) or partition_hosts ({}), not both",
                p.partitions, p.partition_hosts
            ),
        );
    }
    Ok(())
}

pub(super) fn fail(cx: &Ctx, table: &str, key: &str, msg: String) -> anyhow::Result<()> {
    let (span, field) = locate(cx.src, table, key);
    cx.err(span, &field, msg)
}

/// Where `key` of `table` is written in `src`, and the field's name as written there: in its
/// table, as a dotted key of `[policy]` (`origamig.delta = 10`), or as the flat `[policy]` key of
/// earlier versions (`delta = 10`, named `policy.origamig.delta`); `0..0` and the new name when it is not
/// written (a default value).
pub(super) fn locate(src: &str, table: &str, key: &str) -> (Range<usize>, String) {
    let field = if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    };
    let at = key_span(src, table, key);
    if at != (0..0) {
        return (at, field);
    }
    if let Some(section) = table.strip_prefix("policy.") {
        let dotted = key_span(src, "policy", &format!("{section}.{key}"));
        if dotted != (0..0) {
            return (dotted, field);
        }
        let old = super::LEGACY_POLICY_KEYS
            .iter()
            .find(|(_, s, n)| *s == section && *n == key);
        if let Some((old, _, _)) = old {
            let flat = key_span(src, "policy", old);
            if flat != (0..0) {
                return (flat, format!("policy.{old}"));
            }
        }
    }
    (0..0, field)
}

/// The flat `[policy]` keys of earlier versions written in `src`, each as `LINE:COL` with the key
/// and where it lives now; an error naming the first one also written in its new place.
pub(super) fn legacy_keys(cx: &Ctx) -> anyhow::Result<Vec<(usize, usize, String, String)>> {
    let mut out = Vec::new();
    for &(old, section, new) in super::LEGACY_POLICY_KEYS {
        let flat = key_span(cx.src, "policy", old);
        if flat == (0..0) {
            continue;
        }
        let table = format!("policy.{section}");
        let mut now = key_span(cx.src, &table, new);
        if now == (0..0) {
            now = key_span(cx.src, "policy", &format!("{section}.{new}"));
        }
        if now != (0..0) {
            let (l, _) = super::line_col(cx.src, now);
            return cx.err(
                flat,
                &format!("policy.{old}"),
                format!("also written as `{table}.{new}` (line {l}): keep one"),
            );
        }
        let (l, c) = super::line_col(cx.src, flat);
        out.push((l, c, format!("policy.{old}"), format!("{table}.{new}")));
    }
    // Saved by every earlier version, read now as the layout planner's hysteresis.
    let flat = key_span(cx.src, "policy", "layout_hysteresis");
    if flat != (0..0) {
        let (l, c) = super::line_col(cx.src, flat);
        out.push((
            l,
            c,
            "policy.layout_hysteresis".into(),
            "regime.hysteresis".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::key_span;

    #[test]
    fn key_span_finds_the_key_in_its_table_only() {
        let src = "load = 1\n[workload]\nseed = 2\n load = 0.5\n[policy]\nload = 3\n";
        let at = key_span(src, "workload", "load");
        assert_eq!(&src[at.clone()], "load");
        assert_eq!(src[..at.start].matches('\n').count(), 3);
        assert_eq!(key_span(src, "", "load"), 0..4);
        assert_eq!(key_span(src, "policy", "seed"), 0..0);
    }

    #[test]
    fn key_search_skips_comments_and_values_and_reads_quoted_keys() {
        let src = "# start = 1\ndescription = \"start = 2\"\nstart = 3\n[q]\n\"a.b\" = 1\n";
        let at = key_span(src, "", "start");
        assert_eq!(src[..at.start].matches('\n').count(), 2);
        let at = key_span(src, "q", "a.b");
        assert_eq!(&src[at.start..at.start + 5], "\"a.b\"");
    }

    #[test]
    fn array_key_span_finds_the_key_of_the_nth_table() {
        let src = "[[vm]]\nid = 1\n[[host]]\nid = 9\n[[vm]]\ncores = 1\nid = 0\n";
        let at = super::array_key_span(src, "vm", 1, "id");
        assert_eq!(src[..at.start].matches('\n').count(), 6);
        assert_eq!(super::array_key_span(src, "vm", 2, "id"), 0..0);
    }
}
