//! Exports a cluster can apply: every GPU gets exactly its mode in the mig-parted configs of
//! `export k8s` and `export mig-parted`, `import mig-parted` reads `mig-enabled` as mig-parted
//! applies it and reads back what `export k8s` wrote, and the inputs a fuzzing pass broke get
//! one-line errors with a location (or a refusal within a second for deep nesting).
//!
//! The reference for "as mig-parted applies it" is [`apply`] below, a transcription of the rules
//! of mig-parted's `apply` command (docs/fleet-import.md, "mig-parted and GPU modes"): for each
//! entry and each GPU it names, a GPU without MIG is skipped under `devices: all` or
//! `mig-enabled: false`, and refused when `mig-enabled: true` names it by index.

use super::common::cli::{fails, migplan, ok, temp_file};
use migplan::fleet::GpuMode;
use migplan::ops::{export, k8s_export, mig_parted};
use migplan::scenario::{self, Scenario};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn shipped() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut out: Vec<(String, Scenario)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let s = scenario::load(&p).unwrap();
            (
                format!("scenarios/{}", p.file_name().unwrap().to_string_lossy()),
                s,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 8);
    out
}

/// What applying `config` leaves on each GPU of a host whose GPUs are `(has MIG, n)`: per GPU
/// `None` (untouched) or `Some((mig_enabled, instances per profile name))`; `Err` where
/// mig-parted refuses.
#[allow(clippy::type_complexity)]
fn apply(
    config: &mig_parted::Config,
    gpus: &[bool],
) -> Result<Vec<Option<(bool, BTreeMap<String, u32>)>>, String> {
    let mut out = vec![None; gpus.len()];
    for e in config {
        let all = e.devices.is_none();
        let ks: Vec<usize> = e.devices.clone().unwrap_or_else(|| (0..gpus.len()).collect());
        for k in ks {
            let capable = gpus[k];
            if !capable && all {
                continue;
            }
            if !capable && !e.mig_enabled {
                continue;
            }
            if !capable && e.mig_enabled {
                return Err(format!("cannot set MIG config on non MIG-capable GPU {k}"));
            }
            let devs: BTreeMap<String, u32> = e.mig_devices.iter().filter(|(_, n)| *n > 0).cloned().collect();
            out[k] = Some((e.mig_enabled, devs));
        }
    }
    Ok(out)
}

/// Each GPU's configuration as it is in the scenario: `None` for a model without MIG.
fn expected(s: &Scenario, h: usize) -> Vec<Option<(bool, BTreeMap<String, u32>)>> {
    s.fleet.hosts[h]
        .gpus
        .iter()
        .map(|g| {
            let m = s.fleet.catalog.model(g.model);
            if !m.mig {
                return None;
            }
            if g.mode != GpuMode::Mig {
                return Some((false, BTreeMap::new()));
            }
            let devs = m
                .profiles
                .iter()
                .enumerate()
                .filter(|&(p, _)| g.occ.counts[p] > 0)
                .map(|(p, pr)| (pr.name.clone(), g.occ.counts[p] as u32))
                .collect();
            Some((true, devs))
        })
        .collect()
}

#[test]
fn every_shipped_scenario_exports_each_gpu_in_its_mode() {
    for (file, s) in shipped() {
        let plan = k8s_export::plan(&s.fleet, &[]);
        let cm = k8s_export::configmap(&s.name, &plan);
        let configs = mig_parted::parse(&cm, "cm.yaml").unwrap_or_else(|e| panic!("{file}: {e}"));
        let labels: BTreeMap<&str, &str> = plan
            .labels
            .iter()
            .map(|(h, l)| (h.as_str(), l.as_str()))
            .collect();
        for (h, host) in s.fleet.hosts.iter().enumerate() {
            let want = expected(&s, h);
            let Some(label) = labels.get(host.name.as_str()) else {
                // No label: only a host with no GPU with MIG.
                assert!(
                    want.iter().all(Option::is_none),
                    "{file}: {} has no label",
                    host.name
                );
                continue;
            };
            let gpus: Vec<bool> = want.iter().map(Option::is_some).collect();
            let got = apply(&configs[*label], &gpus).unwrap_or_else(|e| panic!("{file} {}: {e}", host.name));
            assert_eq!(got, want, "{file}: host {} labelled {label}", host.name);
        }
        // `export mig-parted` (one config per host) gives the same configuration.
        let text = export::export(&s.fleet, &s.name, &[]);
        let per_host = mig_parted::parse(&text, "parted.yaml").unwrap();
        for (h, host) in s.fleet.hosts.iter().enumerate() {
            let want = expected(&s, h);
            match per_host.get(&host.name) {
                None => assert!(want.iter().all(Option::is_none), "{file}: {}", host.name),
                Some(c) => {
                    let gpus: Vec<bool> = want.iter().map(Option::is_some).collect();
                    assert_eq!(apply(c, &gpus).unwrap(), want, "{file}: {}", host.name);
                }
            }
        }
    }
}

#[test]
fn the_reported_configs_are_fixed() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();
    ok(migplan().args(["export", "k8s", "scenarios/inference-l40s.toml", "--out", &dir]));
    let cm = std::fs::read_to_string(out.path().join("mig-parted-config.yaml")).unwrap();
    let labels = std::fs::read_to_string(out.path().join("labels.sh")).unwrap();
    // L40S and L4 hosts: no config, no label.
    for host in ["l40s-0", "l4-0"] {
        assert!(!cm.contains(host), "{cm}");
        assert!(!labels.contains(host), "{labels}");
    }
    ok(migplan().args(["export", "k8s", "scenarios/mixed-modes.toml", "--out", &dir]));
    let labels = std::fs::read_to_string(out.path().join("labels.sh")).unwrap();
    for host in ["shared-0", "whole-0", "whole-1"] {
        assert!(
            labels.contains(&format!(
                "kubectl label node {host} nvidia.com/mig.config=all-disabled --overwrite"
            )),
            "{labels}"
        );
    }
    let cm = std::fs::read_to_string(out.path().join("mig-parted-config.yaml")).unwrap();
    let c = mig_parted::parse(&cm, "cm")
        .unwrap()
        .remove("all-disabled")
        .unwrap();
    assert_eq!(c.len(), 1);
    assert!(!c[0].mig_enabled);
}

/// The import's summary (`--json`): GPUs changed and hosts drained.
fn changes(args: &[&str]) -> (u64, u64) {
    let text = ok(migplan().args(args));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    (
        v["gpus_changed"].as_u64().unwrap(),
        v["hosts_drained"].as_u64().unwrap(),
    )
}

#[test]
fn import_reads_back_what_export_k8s_writes_for_every_shipped_scenario() {
    for (file, _) in shipped() {
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().display().to_string();
        ok(migplan().args(["export", "k8s", &file, "--out", &dir]));
        // The folder (ConfigMap and labels.sh together).
        assert_eq!(
            changes(&["import", "mig-parted", &file, &dir, "--json"]),
            (0, 0),
            "{file}"
        );
        // The ConfigMap with its labels given apart.
        let cm = out.path().join("mig-parted-config.yaml").display().to_string();
        let labels = out.path().join("labels.sh").display().to_string();
        assert_eq!(
            changes(&["import", "mig-parted", &file, &cm, "--labels", &labels, "--json"]),
            (0, 0),
            "{file}"
        );
        // The unwrapped config.yaml of the ConfigMap.
        let text = std::fs::read_to_string(&cm).unwrap();
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let inner = v["data"]["config.yaml"].as_str().unwrap().to_string();
        let plain = out.path().join("config.yaml");
        std::fs::write(&plain, inner).unwrap();
        let plain = plain.display().to_string();
        assert_eq!(
            changes(&[
                "import",
                "mig-parted",
                &file,
                &plain,
                "--labels",
                &labels,
                "--json"
            ]),
            (0, 0),
            "{file}"
        );
        let text = ok(migplan().args(["import", "mig-parted", &file, &dir]));
        assert!(text.contains("No GPU changes layout"), "{file}: {text}");
    }
}

const L40S: &str = "scenarios/inference-l40s.toml";
const MIXED: &str = "scenarios/mixed-modes.toml";

#[test]
fn mig_enabled_is_read_as_mig_parted_applies_it() {
    // On GPUs without MIG: `mig-enabled: false` leaves them alone, `devices: all` skips them.
    for body in [
        "    - devices: [0, 1, 2, 3]\n      mig-enabled: false\n",
        "    - devices: all\n      mig-enabled: false\n",
        "    - devices: all\n      mig-enabled: true\n      mig-devices: {}\n",
    ] {
        let (_d, f) = temp_file("c.yaml", &format!("version: v1\nmig-configs:\n  l40s-0:\n{body}"));
        let f = f.display().to_string();
        assert_eq!(
            changes(&["import", "mig-parted", L40S, &f, "--json"]),
            (0, 0),
            "{body}"
        );
    }
    // ...and MIG on named by index is refused, naming the file, the entry and the GPU.
    let (_d, f) = temp_file(
        "c.yaml",
        "version: v1\nmig-configs:\n  l40s-0:\n    - devices: [0, 1, 2, 3]\n      mig-enabled: true\n      mig-devices: {}\n",
    );
    let fname = f.display().to_string();
    let err = fails(migplan().args(["import", "mig-parted", L40S, &fname]));
    assert!(err.contains(&format!("{fname}: mig-configs.l40s-0[0]")), "{err}");
    assert!(
        err.contains("GPU 0 of host `l40s-0` is a l40s-48gb, which has no MIG"),
        "{err}"
    );
    // Whole and shared GPUs of a MIG model: MIG off changes nothing...
    let (_d, f) = temp_file(
        "c.yaml",
        "version: v1\nmig-configs:\n  whole-0:\n    - devices: all\n      mig-enabled: false\n  shared-0:\n    - devices: all\n      mig-enabled: false\n",
    );
    let f = f.display().to_string();
    assert_eq!(changes(&["import", "mig-parted", MIXED, &f, "--json"]), (0, 0));
    // ...MIG on is a change of mode.
    let (_d, f) = temp_file(
        "c.yaml",
        "version: v1\nmig-configs:\n  whole-0:\n    - devices: [2]\n      mig-enabled: true\n      mig-devices: {\"3g.40gb\": 2}\n",
    );
    let f = f.display().to_string();
    let (gpus, _) = changes(&["import", "mig-parted", MIXED, &f, "--json"]);
    assert_eq!(gpus, 1);
    // A MIG GPU switched off is a change, too.
    let (_d, f) = temp_file(
        "c.yaml",
        "version: v1\nmig-configs:\n  mig-0:\n    - devices: [1]\n      mig-enabled: false\n",
    );
    let f = f.display().to_string();
    assert_eq!(changes(&["import", "mig-parted", MIXED, &f, "--json"]).0, 1);
}

#[test]
fn labels_that_name_no_config_or_no_host_are_one_line() {
    let (_d, cfg) = temp_file(
        "c.yaml",
        "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n",
    );
    let cfg = cfg.display().to_string();
    for (labels, want) in [
        (
            "kubectl label node whole-0 nvidia.com/mig.config=nope --overwrite\n",
            "l.sh:1: node `whole-0` is labelled `nope`",
        ),
        (
            "set -eu\nkubectl label node ghost nvidia.com/mig.config=all-disabled\n",
            "l.sh:2: node `ghost` is not a host",
        ),
        (
            "kubectl label node 'whole-0 nvidia.com/mig.config=x\n",
            "l.sh:1: unterminated quote",
        ),
    ] {
        let (_l, lf) = temp_file("l.sh", labels);
        let lf = lf.display().to_string();
        let err = fails(migplan().args(["import", "mig-parted", MIXED, &cfg, "--labels", &lf]));
        assert!(err.contains(want), "{want}: {err}");
    }
    // Without labels, configs named after layouts name no host: the message says what to give.
    let err = fails(migplan().args(["import", "mig-parted", MIXED, &cfg]));
    assert!(
        err.contains("no config applies to a host") && err.contains("--labels"),
        "{err}"
    );
}

/// A mig-parted config whose value nests `depth` flow sequences.
fn nested_yaml(depth: usize) -> String {
    format!(
        "version: v1\nmig-configs:\n  a: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[test]
fn deep_nesting_is_refused_within_a_second() {
    let (_d, y) = temp_file("deep.yaml", &nested_yaml(150_000));
    let y = y.display().to_string();
    let t = Instant::now();
    let err = fails(migplan().args(["import", "mig-parted", "scenarios/demo.toml", &y]));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(
        err.contains(&format!("{y}:3:")) && err.contains("nested more than"),
        "{err}"
    );
    // The same through `import k8s --mig-config`, and JSON nodes nested as deep.
    let (_n, nodes) = temp_file(
        "nodes.json",
        &format!("{}{}", "[".repeat(150_000), "]".repeat(150_000)),
    );
    let nodes = nodes.display().to_string();
    let (_p, pods) = temp_file("pods.json", "{\"items\": []}");
    let pods = pods.display().to_string();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().join("x.toml").display().to_string();
    let t = Instant::now();
    let err = fails(migplan().args(["import", "k8s", "--nodes", &nodes, "--pods", &pods, "--out", &o]));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(err.contains(&format!("{nodes}:1:")), "{err}");
    let (_g, good) = temp_file("nodes.json", "{\"items\": []}");
    let good = good.display().to_string();
    let t = Instant::now();
    let err = fails(migplan().args([
        "import",
        "k8s",
        "--nodes",
        &good,
        "--pods",
        &pods,
        "--mig-config",
        &y,
        "--out",
        &o,
    ]));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(err.contains("nested more than"), "{err}");
    assert!(!out.path().join("x.toml").exists());
}

#[test]
fn yaml_errors_name_the_file_and_the_line() {
    let cases = [
        (
            "version: v1\nmig-configs:\n  x:\n    - devices: all\n      mig-enabled: true\n  x:\n    - devices: all\n      mig-enabled: false\n",
            "c.yaml:6:",
        ),
        ("version: v1\nmig-configs: {}\n---\nversion: v1\n", "c.yaml:3:"),
        ("version: v1\nmig-configs:\n  x: [\n", "c.yaml:"),
    ];
    let s = scenario::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/demo.toml"
    )))
    .unwrap();
    for (text, want) in cases {
        let e = export::import(&s.fleet, text, "c.yaml").unwrap_err().to_string();
        assert!(e.starts_with(want), "{want}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // Aliases expanding past the parser's limit: the file is named, the reason given.
    let mut laughs = String::from("version: v1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let prev = format!("*a{}", i - 1);
        laughs += &format!("a{i}: &a{i} [{}]\n", [prev.as_str(); 10].join(", "));
    }
    let e = export::import(&s.fleet, &laughs, "c.yaml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("c.yaml"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    // A count past every integer type.
    let big = "version: v1\nmig-configs:\n  a100-0:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.5gb\": 99999999999999999999999999999999999999999\n";
    let e = export::import(&s.fleet, big, "c.yaml").unwrap_err().to_string();
    assert!(
        e.contains("c.yaml: mig-configs.a100-0[0].mig-devices.1g.5gb"),
        "{e}"
    );
}

#[test]
fn text_that_is_not_utf8_names_the_line_and_the_byte() {
    let bad: &[u8] = b"version: v1\nmig-configs:\n  # caf\xe9\n";
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.yaml");
    std::fs::write(&f, bad).unwrap();
    let f = f.display().to_string();
    let err = fails(migplan().args(["import", "mig-parted", "scenarios/demo.toml", &f]));
    assert!(
        err.contains(&format!("{f}:3:8: not UTF-8 text (byte 0xe9 at offset 32)")),
        "{err}"
    );
    let nodes = dir.path().join("nodes.json");
    std::fs::write(&nodes, b"{\"items\": [\xff]}").unwrap();
    let nodes = nodes.display().to_string();
    let o = dir.path().join("x.toml").display().to_string();
    let err = fails(migplan().args(["import", "k8s", "--nodes", &nodes, "--pods", &nodes, "--out", &o]));
    assert!(err.contains(&format!("{nodes}:1:12: not UTF-8")), "{err}");
    let cap = dir.path().join("host.csv");
    std::fs::write(&cap, b"\xfe").unwrap();
    let cap = cap.display().to_string();
    let err = fails(migplan().args(["import", "nvidia-smi", &cap, "--out", &o]));
    assert!(err.contains(&format!("{cap}:1:1: not UTF-8")), "{err}");
}

#[test]
fn an_empty_plan_file_is_called_empty() {
    let (_d, f) = temp_file("plan.json", "");
    let f = f.display().to_string();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display().to_string();
    let err = fails(migplan().args(["export", "k8s", &f, "--fleet", "scenarios/demo.toml", "--out", &o]));
    assert!(err.contains(&format!("{f}: the file is empty")), "{err}");
}

#[test]
fn batch_on_a_fleet_with_no_free_gpu_says_what_frees_one() {
    for file in ["scenarios/demo.toml", "scenarios/fig1.toml"] {
        let text = ok(migplan().args(["batch", file]));
        assert!(
            text.contains("GPU in MIG mode: none was laid out"),
            "{file}: {text}"
        );
        assert!(
            text.contains(&format!("`migplan defrag {file}`"))
                && text.contains(&format!("`migplan solve {file}`")),
            "{file}: {text}"
        );
    }
}

#[test]
fn device_filters_apply_an_entry_to_the_models_they_name() {
    // As in the GPU operator's default config: one config, one entry per GPU family, each
    // limited to its boards' PCI device IDs (A100-80GB/H100-80GB, then A100-40GB).
    let text = "version: v1\nmig-configs:\n  all-1g.10gb:\n    - device-filter: [\"0x233010DE\", \"0x20B210DE\"]\n      devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 7\n    - device-filter: [\"0x20b010de\", \"0x20F110DE\"]\n      devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 4\n    - device-filter: \"0x99999999\"\n      devices: all\n      mig-enabled: true\n      mig-devices:\n        \"9g.99gb\": 1\n";
    let s = scenario::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/demo.toml"
    )))
    .unwrap();
    let mut labels = export::NodeLabels::new();
    labels.insert("a100-0".into(), ("all-1g.10gb".into(), 1));
    let got = export::import_with_labels(&s.fleet, text, "c.yaml", Some((&labels, "l.sh"))).unwrap();
    assert_eq!(got.len(), 1);
    let model = s.fleet.catalog.model(s.fleet.hosts[got[0].host].gpus[0].model);
    let p = model.profile("1g.10gb").unwrap();
    // Every A100-40GB GPU takes the second entry (4 x 1g.10gb); the other entries match nothing.
    for d in &got[0].devices {
        let d = d.as_ref().unwrap();
        assert!(d.mig_enabled);
        assert_eq!(d.counts[p], 4);
        assert_eq!(d.counts.iter().sum::<u32>(), 4);
    }
    // The catalog maps each ID to one model.
    let c = migplan::catalog::embedded();
    let of = |id: &str| {
        c.models
            .iter()
            .find(|m| m.pci_ids.iter().any(|x| x == id))
            .map(|m| m.name.as_str())
    };
    assert_eq!(of("0x20B010DE"), Some("a100-40gb"));
    assert_eq!(of("0x20B210DE"), Some("a100-80gb"));
    assert_eq!(of("0x233010DE"), Some("h100-80gb"));
    assert_eq!(of("0x20B710DE"), Some("a30-24gb"));
    assert_eq!(of("0x99999999"), None);
}
