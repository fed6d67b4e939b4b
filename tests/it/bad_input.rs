//! Input that used to panic, hang or be accepted without meaning: every case is refused with one
//! line naming the file (or option), the line and the field, with exit code 2, or runs within its
//! stated bound (`docs/limits.md`).

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use std::time::{Duration, Instant};

const HOST: &str = "[[host]]\nname = \"h0\"\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\"]\n";

/// Runs `migplan CMD FILE EXTRA..` on a scenario holding `text` and checks the one-line error.
fn refused(cmd: &str, text: &str, extra: &[&str], want: &[&str]) -> String {
    let (_d, path) = temp_file("s.toml", text);
    let p = path.to_str().unwrap().to_string();
    let mut args = vec![cmd, p.as_str()];
    args.extend_from_slice(extra);
    let out = migplan()
        .args(&args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_one_line_error(&out, &args, want);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn check_refuses(text: &str, want: &[&str]) -> String {
    refused("check", text, &[], want)
}

// ---- Panics (exit 3) on files that `check` accepted -------------------------------------------

#[test]
fn huge_large_profile_weight_is_refused() {
    let text = format!("{HOST}[workload]\nlarge_profile_weight = 1e308\n");
    check_refuses(
        &text,
        &[":7:1:", "workload.large_profile_weight", "1e308", "1000000"],
    );
    refused(
        "simulate",
        &text,
        &["--hours", "1"],
        &["workload.large_profile_weight"],
    );
}

#[test]
fn huge_profile_mix_weights_are_refused() {
    let text = format!("{HOST}[workload.profile_mix.a100-40gb]\n\"1g.5gb\" = 1e308\n\"7g.40gb\" = 1e308\n");
    check_refuses(&text, &[":7:1:", "workload.profile_mix", "1e308"]);
}

#[test]
fn now_s_beyond_the_calendar_is_refused() {
    for v in ["1e308", "1e13"] {
        let text = format!("now_s = {v}\n{HOST}");
        check_refuses(&text, &[":1:1:", "field `now_s`", v]);
    }
}

#[test]
fn seed_ranges_are_bounded() {
    let args = [
        "sweep",
        "scenarios/paper-32.toml",
        "--seeds",
        "1..18446744073709551615",
    ];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["--seeds", "10000"]);
    let args = ["sweep", "scenarios/paper-32.toml", "--seeds", "1..4294967296"];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["--seeds", "10000"]);
}

// ---- Hangs and unbounded growth ---------------------------------------------------------------

#[test]
fn a_trace_pod_shorter_than_a_second_is_refused() {
    let trace = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                 p0,1000,1024,1,500,,LS,Running,0,100,0\n\
                 p1,1000,1024,1,500,,LS,Running,10,10.000000001,10\n";
    let (_dt, tpath) = temp_file("t.csv", trace);
    let t = tpath.to_str().unwrap();
    let t0 = Instant::now();
    let err = refused(
        "simulate",
        HOST,
        &["--trace", t, "--hours", "1"],
        &[":3:", "deletion_time", "1 s"],
    );
    assert!(t0.elapsed() < Duration::from_secs(20), "{err}");
}

#[test]
fn amounts_of_work_are_bounded() {
    check_refuses(
        &format!("{HOST}[workload]\nload = 1e308\n"),
        &[":7:1:", "workload.load", "1e308", "100"],
    );
    check_refuses(
        &format!("{HOST}[workload]\nload = 999999999\n"),
        &[":7:1:", "workload.load", "999999999"],
    );
    check_refuses(
        &format!("{HOST}[workload]\nwarmup_h = 1e308\n"),
        &[":7:1:", "workload.warmup_h", "87600"],
    );
    check_refuses(
        &format!("{HOST}[workload]\nmeasure_h = 1e308\n"),
        &[":7:1:", "workload.measure_h", "87600"],
    );
    for (flag, v) in [("--hours", "1e308"), ("--warmup", "1e308"), ("--load", "1e308")] {
        refused("simulate", HOST, &[flag, v], &[flag, v]);
    }
}

#[test]
fn solver_threads_are_bounded() {
    for v in ["10000", "2147483648"] {
        let text = format!("{HOST}[policy]\nthreads = {v}\n");
        check_refuses(&text, &[":7:1:", "policy.threads", v, "64"]);
    }
}

#[test]
fn host_counts_are_bounded() {
    let text = "[[host_group]]\nprefix = \"h\"\ncount = 4294967295\ncores = 8\nram_gb = 64\ngpus = [\"a100-40gb\"]\n";
    let t0 = Instant::now();
    check_refuses(text, &[":3:", "host_group.count", "4294967295", "1000000"]);
    assert!(t0.elapsed() < Duration::from_secs(20));
    // Two groups of 600,000 each pass alone but not together.
    let two = "[[host_group]]\nprefix = \"a\"\ncount = 600000\ncores = 8\nram_gb = 64\ngpus = [\"a100-40gb\"]\n\
               [[host_group]]\nprefix = \"b\"\ncount = 600000\ncores = 8\nram_gb = 64\ngpus = [\"a100-40gb\"]\n";
    check_refuses(two, &[":9:", "host_group.count", "1000000"]);
}

// ---- Unclear or wrong messages ----------------------------------------------------------------

#[test]
fn a_huge_optimizer_weight_is_refused_at_its_line() {
    check_refuses(
        &format!("{HOST}[policy]\ndelta = 1e20\n"),
        &[":7:1:", "policy.delta", "1e20", "1000000"],
    );
}

#[test]
fn a_huge_mean_lifetime_names_its_line() {
    check_refuses(
        &format!("{HOST}[workload]\njob_mean_h = 1e308\n"),
        &[":7:1:", "workload.job_mean_h", "1e308"],
    );
}

#[test]
fn vm_id_zero_is_reported_at_its_line() {
    let text = format!("{HOST}\n[[vm]]\ncores = 1\nid = 0\nram_gb = 1\n");
    check_refuses(&text, &[":9:1:", "field `id`"]);
}

#[test]
fn a_bad_start_is_reported_at_the_real_key() {
    let text = format!(
        "# start here: the start of the fleet\ndescription = \"start = soon\"\nname = \"x\"\nstart = \"tomorrow\"\n{HOST}"
    );
    check_refuses(&text, &[":4:1:", "field `start`", "tomorrow"]);
}

#[test]
fn syntax_errors_never_have_an_empty_message() {
    for text in [
        format!("{HOST}# a comment with a DEL \u{7f} byte\n"),
        format!("{HOST}name ="),
    ] {
        let err = check_refuses(&text, &[]);
        let after = err.rsplit(": ").next().unwrap_or("").trim();
        assert!(after.len() > 3, "{err:?}");
        assert!(!err.trim_end().ends_with(':'), "{err:?}");
    }
}

#[test]
fn control_bytes_of_a_key_are_not_echoed() {
    for key in ["a\rb", "a\u{1b}[2Jb", "a\u{7}b"] {
        let text = format!("{HOST}{key} = 1\n");
        let err = check_refuses(&text, &[":6:"]);
        assert!(!err.contains(['\r', '\u{1b}', '\u{7}']), "{err:?}");
    }
}

#[test]
fn clap_reads_negative_numbers_as_values() {
    refused(
        "simulate",
        HOST,
        &["--hours", "-1"],
        &["--hours", "must be > 0", "-1"],
    );
    refused(
        "simulate",
        HOST,
        &["--warmup", "-1"],
        &["--warmup", "must be >= 0", "-1"],
    );
    refused(
        "simulate",
        HOST,
        &["--load", "-0.5"],
        &["--load", "must be >= 0", "-0.5"],
    );
}

// ---- Accepted but meaningless -----------------------------------------------------------------

#[test]
fn meaningless_vm_times_are_refused() {
    for (field, v) in [
        ("lifetime_h", "-5"),
        ("lifetime_h", "nan"),
        ("lifetime_h", "0"),
        ("admitted_h", "-inf"),
        ("arrival_h", "nan"),
        ("arrival_h", "1e308"),
    ] {
        let text = format!("{HOST}\n[[vm]]\nid = 1\ncores = 1\nram_gb = 1\n{field} = {v}\n");
        check_refuses(&text, &[":11:1:", &format!("field `{field}`"), v]);
    }
}

#[test]
fn an_unknown_quota_profile_is_refused() {
    let text = format!("{HOST}[quotas.t1]\n\"nvidia.com/mig-9g.99gb\" = 2\n");
    check_refuses(&text, &[":7:1:", "quotas.t1", "9g.99gb"]);
    // In a fleet without hosts the missing hosts are named first.
    check_refuses("[quotas.t1]\n\"9g.99gb\" = 2\n", &["no hosts"]);
}

#[test]
fn a_fleet_without_hosts_or_gpus_is_refused() {
    for cmd in ["check", "solve", "simulate"] {
        refused(cmd, "", &[], &["s.toml", "no hosts", "[[host]]"]);
    }
    let no_gpus = "[[host]]\nname = \"h0\"\ncores = 8\nram_gb = 64\n";
    check_refuses(no_gpus, &["s.toml", "no GPUs", "gpus"]);
    let (_d, path) = temp_file("s.toml", "");
    let args = ["export", "mig-parted", path.to_str().unwrap()];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(&out, &args, &["no hosts"]);
}

#[test]
fn the_planner_refuses_a_fleet_without_hosts() {
    let (_d, path) = temp_file("empty.toml", "# nothing yet\n");
    let e = migplan::session::Session::open(&path).err().expect("refused");
    let e = format!("{e:#}");
    assert!(e.contains("empty.toml:") && e.contains("no hosts"), "{e}");
}
