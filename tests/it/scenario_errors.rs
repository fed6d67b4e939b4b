//! Bad scenarios: every error is one line naming the file, line, column and field, and the
//! binary exits with code 2 without panicking.

use crate::common::cli::migplan;

const HOST: &str = "[[host]]\nname = \"h0\"\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\"]\n";

fn vm(id: u32, profile: &str, at: &str, cores: u32) -> String {
    format!(
        "\n[[vm]]\nid = {id}\nmodel = \"a100-40gb\"\nprofiles = [\"{profile}\"]\ncores = {cores}\nram_gb = 16\nhost = \"h0\"\nat = [\"{at}\"]\n"
    )
}

/// (scenario text, substrings the one-line error must contain)
fn cases() -> Vec<(String, Vec<&'static str>)> {
    vec![
        (
            format!("{HOST}colour = \"red\"\n"),
            vec![":6:1:", "unknown field `colour`"],
        ),
        (
            HOST.replace("a100-40gb", "a100-41gb"),
            vec![":5:", "field `gpus`", "unknown GPU model `a100-41gb`"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.21gb", "0@0", 4)),
            vec![":10:", "field `profiles`", "unknown profile `3g.21gb`"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "0@2", 4)),
            vec![":14:", "field `at`", "may not start at slice 2", "[0, 4]"],
        ),
        (
            format!(
                "{HOST}{}{}",
                vm(1, "3g.20gb", "0@4", 4),
                vm(2, "2g.10gb", "0@4", 4)
            ),
            vec![":23:", "field `at`", "slice 4 of host h0 GPU 0 is taken by VM 1"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "0@0", 90)),
            vec![":14:", "field `at`", "80 free cores, 90 needed"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "1@0", 4)),
            vec![":14:", "field `at`", "has no GPU 1"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "zero", 4)),
            vec![":14:", "field `at`", "`zero` is not GPU@START"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "0@0", 4)).replace("ram_gb = 16", "ram_gb = \"lots\""),
            vec![":12:", "field `ram_gb`"],
        ),
        ("name = \"x\"\n[[host]\n".to_string(), vec![":2:"]),
        (
            format!("{HOST}[workload]\nload = 0.8\nburst = true\n"),
            vec![":8:1:", "unknown field `burst`"],
        ),
        (
            format!("{HOST}[policy]\ndelta = \"ten\"\n"),
            vec![":7:", "field `delta`"],
        ),
        (
            format!("{HOST}{}", vm(1, "3g.20gb", "0@0", 4)).replace("host = \"h0\"\nat", "host = \"h9\"\nat"),
            vec![":13:", "field `host`", "no host named `h9`"],
        ),
        (
            HOST.to_string() + "curve = \"steam\"\n",
            vec![":6:", "field `curve`", "unknown power curve"],
        ),
        // Values of the right type that mean nothing are refused at load time too, so `check`
        // refuses what `simulate` and `solve` would.
        (
            format!("{HOST}[workload]\ntwo_gi_prob = 1.5\n"),
            vec![
                ":7:1:",
                "field `workload.two_gi_prob`",
                "must be within 0..1, not 1.5",
            ],
        ),
        (
            format!("{HOST}[policy]\ntheta = 0\n"),
            vec![":7:1:", "field `policy.theta`", "must be at least 1, not 0"],
        ),
        (
            format!("{HOST}[policy]\nweight_gpu = 20\n  delta = -5\n"),
            vec![":8:3:", "field `policy.delta`", "must be a number >= 0, not -5"],
        ),
        // The migration penalty per GB (§7): negative, NaN, too large, not a number.
        (
            format!("{HOST}[policy]\ndelta_per_gb = -0.5\n"),
            vec![
                ":7:1:",
                "field `policy.delta_per_gb`",
                "must be a number >= 0, not -0.5",
            ],
        ),
        (
            format!("{HOST}[policy]\ndelta_per_gb = nan\n"),
            vec![
                ":7:1:",
                "field `policy.delta_per_gb`",
                "must be a finite number, not nan",
            ],
        ),
        (
            format!("{HOST}[policy]\ndelta_per_gb = 5000\n"),
            vec![
                ":7:1:",
                "field `policy.delta_per_gb`",
                "must be at most 1000 (docs/limits.md), not 5000",
            ],
        ),
        (
            format!("{HOST}[policy]\ndelta_per_gb = \"ten\"\n"),
            vec![":7:", "field `delta_per_gb`"],
        ),
        (
            format!("{HOST}[workload]\nload = 0.8\n[policy]\ntime_limit_s = 0\n"),
            vec![
                ":9:1:",
                "field `policy.time_limit_s`",
                "must be a number > 0, not 0",
            ],
        ),
        (
            format!("{HOST}[policy]\ntime_limit_s = 5\nsim_time_limit_s = 0\n"),
            vec![
                ":8:1:",
                "field `policy.sim_time_limit_s`",
                "must be a number > 0, not 0",
            ],
        ),
        (
            format!("{HOST}[policy]\nnode_limit = 3000000000\n"),
            vec![
                ":7:1:",
                "field `policy.node_limit`",
                "must be at most 2147483647 (docs/limits.md), not 3000000000",
            ],
        ),
        (
            format!("{HOST}[policy]\nmigration_gbps = 0.0\n"),
            vec![
                ":7:1:",
                "field `policy.migration_gbps`",
                "must be a number > 0, not 0",
            ],
        ),
        (
            format!("{HOST}[policy]\nm_max = 0\n"),
            vec![":7:1:", "field `policy.m_max`", "must be at least 1, not 0"],
        ),
        (
            format!("{HOST}[policy]\nm_max_gpus = 0\n"),
            vec![":7:1:", "field `policy.m_max_gpus`", "must be at least 1, not 0"],
        ),
        (
            format!("{HOST}[policy]\narrival = \"best-fit\"\n"),
            vec![":7:1:", "field `policy.arrival`", "unknown policy `best-fit`"],
        ),
        (
            format!("{HOST}[workload]\ntrace_model = \"x100\"\n"),
            vec![
                ":7:1:",
                "field `workload.trace_model`",
                "unknown GPU model `x100`",
            ],
        ),
        (
            format!("{HOST}[workload.profile_mix.a100-40gb]\n\"1g.5gb\" = -1\n"),
            vec![
                "field `workload.profile_mix`",
                "weight of a100-40gb 1g.5gb must be a number >= 0",
            ],
        ),
        (
            format!("now_s = -60.0\n{HOST}"),
            vec![":1:1:", "field `now_s`", "must be a number >= 0, not -60"],
        ),
    ]
}

#[test]
fn library_errors_name_file_line_and_field() {
    for (text, want) in cases() {
        let err = migplan::scenario::parse(&text, "bad.toml")
            .expect_err(&text)
            .to_string();
        assert!(!err.contains('\n'), "multi-line error: {err}");
        assert!(err.starts_with("bad.toml:"), "{err}");
        for w in want {
            assert!(err.contains(w), "error `{err}` lacks `{w}` for:\n{text}");
        }
    }
}

#[test]
fn binary_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (text, want)) in cases().into_iter().enumerate() {
        let path = dir.path().join(format!("case{i}.toml"));
        std::fs::write(&path, &text).unwrap();
        let out = migplan().arg("check").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "case {i}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(&format!("case{i}.toml:")), "{stderr}");
        assert!(stderr.contains(want[want.len() - 1]), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn missing_file_is_an_error_not_a_panic() {
    let out = migplan().args(["check", "/nonexistent/x.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.toml: cannot read"));
}
