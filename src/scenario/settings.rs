//! Range checks of the `[workload]` and `[policy]` settings, made when a scenario is loaded, so
//! that `check`, `solve`, `simulate` and the planner refuse the same files, each with one line
//! naming the file, line, column and field. Serde already rejects a value of the wrong type; these
//! are the values of the right type that mean nothing (a negative penalty, a probability above
//! one, a threshold the paper rules out).

use super::{Ctx, PolicySettings, WorkloadSettings};
use crate::catalog::Catalog;
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
            if let Some((k, _)) = t.split_once('=') {
                if k.trim() == key {
                    let start = at + (line.len() - t.len());
                    return start..start + key.len();
                }
            }
        }
        at += line.len();
    }
    0..0
}

/// What a setting must be, checked against its value.
enum Want {
    /// A finite number >= 0.
    NonNegative(f64),
    /// A finite number > 0.
    Positive(f64),
    /// A number within 0..=1.
    Share(f64),
    /// An integer at least this large.
    AtLeast(i64, i64),
}

impl Want {
    /// `None` when the value is fine, else what it must be.
    fn fails(&self) -> Option<String> {
        match *self {
            Want::NonNegative(v) if !(v.is_finite() && v >= 0.0) => {
                Some(format!("must be a number >= 0, not {v}"))
            }
            Want::Positive(v) if !(v.is_finite() && v > 0.0) => {
                Some(format!("must be a number > 0, not {v}"))
            }
            Want::Share(v) if !(0.0..=1.0).contains(&v) => Some(format!("must be within 0..1, not {v}")),
            Want::AtLeast(v, min) if v < min => Some(format!("must be at least {min}, not {v}")),
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
    let workload = [
        ("load", Want::NonNegative(w.load)),
        ("job_share", Want::Share(w.job_share)),
        ("job_mean_h", Want::Positive(w.job_mean_h)),
        ("tenant_mean_h", Want::Positive(w.tenant_mean_h)),
        ("lognormal_sigma", Want::Positive(w.lognormal_sigma)),
        ("two_gi_prob", Want::Share(w.two_gi_prob)),
        ("warmup_h", Want::NonNegative(w.warmup_h)),
        ("measure_h", Want::NonNegative(w.measure_h)),
        ("large_profile_weight", Want::NonNegative(w.large_profile_weight)),
        ("trace_window_days", Want::Positive(w.trace_window_days)),
    ];
    // §4: a, b, e and w_p are rewards and costs, δ a penalty; a negative one turns the objective
    // of Eq. (5) around.
    let policy = [
        ("weight_admit", Want::NonNegative(p.weight_admit)),
        ("weight_host", Want::NonNegative(p.weight_host)),
        ("weight_gpu", Want::NonNegative(p.weight_gpu)),
        ("weight_free_start", Want::NonNegative(p.weight_free_start)),
        ("delta", Want::NonNegative(p.delta)),
        ("m_max", Want::AtLeast(p.m_max as i64, 1)),
        ("n_max", Want::AtLeast(p.n_max as i64, 1)),
        ("time_limit_s", Want::Positive(p.time_limit_s)),
        ("threads", Want::AtLeast(p.threads as i64, 1)),
        ("theta", Want::AtLeast(p.theta, 1)),
        ("check_every_s", Want::Positive(p.check_every_s)),
        ("compaction_min", Want::Positive(p.compaction_min)),
        ("migration_gbps", Want::Positive(p.migration_gbps)),
        ("defrag_stranded_share", Want::Share(p.defrag_stranded_share)),
        (
            "partitions",
            Want::AtLeast(p.partitions.min(i64::MAX as usize) as i64, 1),
        ),
    ];
    let top = [("now_s", Want::NonNegative(now_s.unwrap_or(0.0)))];
    for (table, rules) in [
        ("", &top[..]),
        ("workload", &workload[..]),
        ("policy", &policy[..]),
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
    for (key, v) in [
        ("packing_finish_gpu", p.packing_finish_gpu),
        ("packing_finish_host", p.packing_finish_host),
        ("packing_protect_host", p.packing_protect_host),
    ] {
        if !v.is_finite() {
            return fail(cx, "policy", key, format!("must be a finite number, not {v}"));
        }
    }
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

fn fail(cx: &Ctx, table: &str, key: &str, msg: String) -> anyhow::Result<()> {
    let field = if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    };
    cx.err(key_span(cx.src, table, key), &field, msg)
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
}
