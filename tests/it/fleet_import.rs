//! Real fleets in and Kubernetes artefacts out, through the real binary and the library:
//! `import nvidia-smi` keeps every captured instance at its start slice, `import k8s` reports its
//! counts and findings, `export k8s` writes YAML that parses and round-trips through
//! `import k8s --mig-config`, `relayout --k8s` prints the node runbook, and bad input is one line
//! naming file, line (or JSON path) and field, with nothing written.

use crate::common::cli::{fails, migplan, ok};
use crate::common::import::{
    export_k8s, findings, fixture, fixture_text, host, instances, k8s_fixture_import, k8s_import,
    k8s_import_of, nvidia_smi_import,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The `-lgi` rows of the capture files, read independently of the importer: (host, GPU, profile
/// name without `MIG `, start).
fn captured(dir: &Path) -> Vec<(String, usize, String, u8)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let first = text.lines().next().unwrap();
        let host = if first.parse::<u32>().is_ok() {
            p.file_stem().unwrap().to_string_lossy().into_owned()
        } else {
            first.to_string()
        };
        for l in text.lines().filter(|l| l.starts_with("|") && l.contains("MIG ")) {
            let f: Vec<&str> = l.trim_matches('|').split_whitespace().collect();
            let (z, _) = f[5].split_once(':').unwrap();
            v.push((
                host.clone(),
                f[0].parse().unwrap(),
                f[2].to_string(),
                z.parse().unwrap(),
            ));
        }
    }
    v.sort();
    v
}

#[test]
fn nvidia_smi_import_keeps_every_instance_where_the_capture_puts_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.toml");
    let caps = fixture("nvidia-smi/fleet");
    let json: Value = serde_json::from_str(&ok(nvidia_smi_import(&caps, &out).arg("--json"))).unwrap();
    assert_eq!(json["hosts"], 4);
    assert_eq!(json["gpus"], 10);
    assert_eq!(json["mig_disabled"], 2);
    assert_eq!(json["instances"], 20);
    let check = ok(migplan().arg("check").arg(&out));
    assert!(check.contains("4 hosts"), "{check}");
    let s = migplan::scenario::load(&out).unwrap();
    let expected = captured(&caps);
    assert_eq!(expected.len(), 20);
    assert_eq!(instances(&s), expected);
    // Hosts: hostname line, else the file stem; cores and RAM from nproc and free -g.
    let h = host(&s, "gpu-a100-80-off");
    assert_eq!((h.cores, h.ram_gb, h.gpus.len()), (96, 754, 2));
    let mixed = host(&s, "gpu-mixed-1");
    let models: Vec<&str> = mixed
        .gpus
        .iter()
        .map(|g| s.fleet.catalog.model(g.model).name.as_str())
        .collect();
    assert_eq!(models, ["a100-40gb", "a30-24gb"]);
    // Every instance is a VM of the `observed` tenant, within its host's cores and RAM.
    assert!(s.fleet.vms().all(|v| v.tenant.as_deref() == Some("observed")));
    s.fleet.check_invariants().unwrap();
    // The optimizer runs on the imported fleet.
    ok(migplan().arg("solve").arg(&out));
}

#[test]
fn the_tui_opens_an_imported_fleet() {
    let a = migplan::tui::Args {
        file: None,
        import: vec![
            "nvidia-smi".into(),
            fixture("nvidia-smi/fleet").display().to_string(),
        ],
    };
    let s = migplan::tui::session_of(&a).unwrap();
    assert_eq!(s.fleet().hosts.len(), 4);
    let bad = migplan::tui::Args {
        file: None,
        import: vec!["dcgm".into(), "x".into()],
    };
    assert!(migplan::tui::session_of(&bad).is_err());
}

#[test]
fn bad_captures_are_one_line_errors_and_write_nothing() {
    let good = fixture_text("nvidia-smi/fleet/gpu-a100-1.txt");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated table",
            good.lines().take(24).collect::<Vec<_>>().join("\n"),
            "truncated table",
        ),
        (
            "unknown product",
            good.replacen("NVIDIA A100-SXM4-40GB", "NVIDIA L40S", 1),
            ":7: name: unknown GPU product `NVIDIA L40S`",
        ),
        (
            "illegal start",
            good.replace(
                "7g.40gb          0        0          0:8",
                "7g.40gb          0        0          1:8",
            ),
            ":28: Placement Start:Size: start 1 is not a permitted start of 7g.40gb",
        ),
        (
            "overlap",
            good.replace(
                "1g.5gb          19        8          3:1",
                "1g.5gb          19        8          4:1",
            ),
            "overlaps another instance on GPU 1",
        ),
        (
            "name and ID disagree",
            good.replace(
                "MIG 2g.10gb         14        3",
                "MIG 3g.20gb         14        3",
            ),
            ":18: Name: profile ID 14 is 2g.10gb",
        ),
    ];
    for (what, text, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let cap = dir.path().join("gpu-a100-1.txt");
        std::fs::write(&cap, text).unwrap();
        let out = dir.path().join("x.toml");
        let err = fails(&mut nvidia_smi_import(&cap, &out));
        assert!(err.contains("gpu-a100-1.txt:"), "{what}: {err}");
        assert!(err.contains(want), "{what}: {err}");
        assert!(!out.exists(), "{what}: nothing is written on error");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{what}: no temporary file left"
        );
    }
    // No nproc/free lines and no --cores: an error naming the field; with the flags it imports.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("bare.txt");
    std::fs::write(&cap, good.lines().skip(5).collect::<Vec<_>>().join("\n")).unwrap();
    let out = dir.path().join("x.toml");
    let err = fails(&mut nvidia_smi_import(&cap, &out));
    assert!(err.contains("bare.txt: cores:"), "{err}");
    ok(nvidia_smi_import(&cap, &out).args(["--cores", "64", "--ram-gb", "512"]));
    let s = migplan::scenario::load(&out).unwrap();
    assert_eq!(s.fleet.hosts[0].name, "bare");
}

#[test]
fn k8s_import_with_captures_is_exact_and_reports_findings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.toml");
    let smi = fixture("nvidia-smi/fleet").display().to_string();
    let cfg = fixture("k8s/mig-config.yaml").display().to_string();
    let v = k8s_import(&out, &["--smi", &smi, "--mig-config", &cfg]);
    for key in [
        "hosts",
        "gpus",
        "instances",
        "pods",
        "pending",
        "inferred_placements",
        "findings",
    ] {
        assert!(v.get(key).is_some(), "--json lacks `{key}`: {v}");
    }
    // Six GPU nodes (the CPU node is left out); the mixed node has an A100 and an A30.
    assert_eq!(v["hosts"], 6);
    assert_eq!(v["gpus"], 12);
    // 20 captured instances and 7 + 0 from the single-strategy layouts (MIG-off GPUs hold none).
    assert_eq!(v["instances"], 27);
    assert_eq!(v["pods"], 19);
    assert_eq!(v["inferred_placements"], true, "the nodes without captures");
    assert_eq!(
        v["inferred_nodes"],
        serde_json::json!(["gpu-a100-single-1", "gpu-a100-invalid"])
    );
    let f = findings(&v);
    let has = |s: &str| f.iter().any(|x| x.contains(s));
    assert!(
        has("node gpu-a100-invalid: nvidia.com/gpu.product is `NVIDIA-A100-SXM4-40GB-MIG-INVALID`"),
        "{f:?}"
    );
    assert!(has("pod team-a/old-profile-0 asks for nvidia.com/mig-1g.5gb, a profile node gpu-h100-1's GPU model lacks"), "{f:?}");
    assert!(
        has("node gpu-h100-1 (its capture) cannot hold its pods: pod team-b/llm-c-0"),
        "{f:?}"
    );
    assert!(
        has("node gpu-h100-1: pods ask for 3 instance(s) of 3g.40gb, the capture shows 2"),
        "{f:?}"
    );
    assert!(has("node gpu-mixed-1: labels say 2 x a100-40gb"), "{f:?}");
    assert!(has("shows a100-40gb, a30-24gb: the capture is used"), "{f:?}");
    assert!(has("layout `team-x-special`"), "{f:?}");
    // Pending: llm-c-0 (no instance left), finetune (no node) and the A30 probe (no node).
    assert_eq!(v["pending"], 3);
    let s = migplan::scenario::load(&out).unwrap();
    let pending_tenants: Vec<String> = s
        .fleet
        .pending()
        .iter()
        .map(|id| s.fleet.vm(*id).unwrap().tenant.clone().unwrap())
        .collect();
    assert_eq!(pending_tenants, ["team-b", "team-b", "team-a"], "creation order");
    // The pod with two MIG resources is one VM with two GIs on gpu-a100-1.
    let a100 = s.fleet.hosts.iter().position(|h| h.name == "gpu-a100-1").unwrap();
    let two = s
        .fleet
        .vms()
        .filter(|v| v.placement.as_ref().is_some_and(|p| p.host == a100))
        .find(|v| v.gis.len() == 2)
        .expect("pipeline-0 has two GIs");
    assert_eq!((two.cores, two.ram_gb), (6, 48));
    // Placements on captured nodes are the captured instances.
    let smi_s = {
        let o = dir.path().join("x.toml");
        ok(&mut nvidia_smi_import(Path::new(&smi), &o));
        migplan::scenario::load(&o).unwrap()
    };
    let on = |s: &migplan::scenario::Scenario, host: &str| -> Vec<(usize, String, u8)> {
        instances(s)
            .into_iter()
            .filter(|i| i.0 == host)
            .map(|i| (i.1, i.2, i.3))
            .collect()
    };
    assert_eq!(
        on(&s, "gpu-a100-1"),
        on(&smi_s, "gpu-a100-1"),
        "every captured instance holds a pod"
    );
    let h100 = on(&s, "gpu-h100-1");
    assert!(h100.iter().all(|i| on(&smi_s, "gpu-h100-1").contains(i)));
    // The scenario loads, and solve and the checker run on it.
    ok(migplan().arg("check").arg(&out));
    ok(migplan().arg("solve").arg(&out));
    // --report prints the findings.
    let o2 = dir.path().join("z.toml");
    let text = ok(k8s_fixture_import()
        .args(["--smi", &smi, "--mig-config", &cfg, "--report", "-o"])
        .arg(&o2));
    assert!(
        text.contains("finding(s):") && text.contains("MIG-INVALID"),
        "{text}"
    );
}

#[test]
fn k8s_import_without_captures_infers_placements_from_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.toml");
    let v = k8s_import(&out, &[]);
    assert_eq!(v["inferred_placements"], true);
    let f = findings(&v);
    let has = |s: &str| f.iter().any(|x| x.contains(s));
    // a100-mixed is custom and no --mig-config was given.
    assert!(has("node gpu-a100-1: layout `a100-mixed` is neither a layout of a100-40gb nor a config of --mig-config"), "{f:?}");
    assert!(
        has("node gpu-mixed-1 (layout `all-balanced`) cannot hold its pods: pod team-a/bench-9x7 (4g.20gb)"),
        "{f:?}"
    );
    assert!(
        has("pod team-a/a30-probe-0 asks for nvidia.com/mig-1g.6gb, a profile any imported GPU model lacks"),
        "{f:?}"
    );
    let s = migplan::scenario::load(&out).unwrap();
    // all-balanced on the H100: two 3g.40gb per node, in creation order llm-a and llm-b get them.
    let h = s.fleet.hosts.iter().position(|h| h.name == "gpu-h100-1").unwrap();
    let placed_3g: Vec<(usize, u8)> = s
        .fleet
        .vms()
        .filter(|v| v.placement.as_ref().is_some_and(|p| p.host == h))
        .filter(|v| s.fleet.catalog.model(v.gis[0].model).profiles[v.gis[0].profile].name == "3g.40gb")
        .map(|v| {
            let g = v.placement.as_ref().unwrap().gis[0];
            (g.gpu, g.start)
        })
        .collect();
    assert_eq!(placed_3g.len(), 2);
    // Single strategy: nvidia.com/gpu on a -MIG-1g.5gb node is 1g.5gb instances (2 + 1).
    assert_eq!(host(&s, "gpu-a100-single-1").gpus[0].gis.len(), 3);
    // A whole-GPU pod on a MIG-disabled node holds the whole GPU.
    let off = host(&s, "gpu-a100-80-off");
    assert_eq!(off.gpus[0].occ.used_slices(), 8);
    assert_eq!(off.gpus[1].gis.len(), 0);
}

#[test]
fn bad_kubernetes_input_names_file_and_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = fixture_text("k8s/nodes.json");
    let pods = fixture_text("k8s/pods.json");
    let out = dir.path().join("y.toml");
    let run = |n: &str, p: &str| {
        let nf = dir.path().join("n.json");
        let pf = dir.path().join("p.json");
        std::fs::write(&nf, n).unwrap();
        std::fs::write(&pf, p).unwrap();
        let err = fails(k8s_import_of(&nf, &pf).arg("-o").arg(&out));
        assert!(!out.exists());
        err
    };
    let e = run(&nodes[..nodes.len() / 2], &pods);
    assert!(e.contains("n.json:") && e.contains("not JSON"), "{e}");
    let e = run(&nodes.replacen("\"527939588Ki\"", "\"527939588Qi\"", 1), &pods);
    assert!(
        e.contains("n.json: items[3].status.allocatable.memory: `527939588Qi`: unknown quantity suffix `Qi`"),
        "{e}"
    );
    let e = run(
        &nodes.replacen("NVIDIA-H100-80GB-HBM3", "NVIDIA-GH200-480GB", 1),
        &pods,
    );
    assert!(
        e.contains("n.json: items[1].metadata.labels[\"nvidia.com/gpu.product\"]: unknown GPU product `NVIDIA-GH200-480GB`"),
        "{e}"
    );
    let e = run(&nodes, &pods.replacen("\"64Gi\"", "\"64Gx\"", 1));
    assert!(
        e.contains("p.json: items[0].spec.containers[0].resources.requests[\"memory\"]"),
        "{e}"
    );
}

/// The per-GPU instance counts of every host: host -> GPU -> profile -> count.
fn counts(s: &migplan::scenario::Scenario) -> BTreeMap<String, Vec<BTreeMap<String, u32>>> {
    let f = &s.fleet;
    f.hosts
        .iter()
        .map(|h| {
            let per: Vec<BTreeMap<String, u32>> = h
                .gpus
                .iter()
                .map(|g| {
                    let m = f.catalog.model(g.model);
                    let mut c = BTreeMap::new();
                    for gi in &g.gis {
                        *c.entry(m.profiles[gi.profile].name.clone()).or_default() += 1;
                    }
                    c
                })
                .collect();
            (h.name.clone(), per)
        })
        .collect()
}

#[test]
fn export_k8s_writes_parsing_yaml_that_round_trips_through_import() {
    let dir = tempfile::tempdir().unwrap();
    let y = dir.path().join("y.toml");
    let smi = fixture("nvidia-smi/fleet").display().to_string();
    let cfg = fixture("k8s/mig-config.yaml").display().to_string();
    k8s_import(&y, &["--smi", &smi, "--mig-config", &cfg]);
    let art = dir.path().join("k8s");
    export_k8s(&y, &art);
    let labels = std::fs::read_to_string(art.join("labels.sh")).unwrap();
    let cm = std::fs::read_to_string(art.join("mig-parted-config.yaml")).unwrap();
    let rq = std::fs::read_to_string(art.join("resourcequotas.yaml")).unwrap();
    // Each YAML parses; the ConfigMap's payload is a mig-parted config.
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&cm).unwrap();
    assert_eq!(doc["kind"], "ConfigMap");
    let inner: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(doc["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(inner["version"], "v1");
    for d in serde_yaml_ng::Deserializer::from_str(&rq) {
        let _: serde_yaml_ng::Value = serde::Deserialize::deserialize(d).unwrap();
    }
    // One label per GPU node; the H100 node is all-balanced only if every GPU is.
    let label_of: BTreeMap<String, String> = labels
        .lines()
        .filter(|l| l.starts_with("kubectl label node "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[3].to_string(),
                f[4].trim_start_matches("nvidia.com/mig.config=").to_string(),
            )
        })
        .collect();
    assert_eq!(label_of.len(), 6, "{labels}");
    assert!(labels
        .lines()
        .filter(|l| l.starts_with("kubectl"))
        .all(|l| l.ends_with("--overwrite")));
    assert_eq!(label_of["gpu-a100-80-off"], "all-disabled");
    for l in label_of.values() {
        assert!(
            inner["mig-configs"].get(l.as_str()).is_some(),
            "config `{l}` is in the ConfigMap"
        );
    }
    // Round trip: relabel the nodes as labels.sh says, import with the exported ConfigMap, and
    // every GPU holds the same instances as the exported scenario.
    let mut nodes: Value = serde_json::from_str(&fixture_text("k8s/nodes.json")).unwrap();
    for n in nodes["items"].as_array_mut().unwrap() {
        let name = n["metadata"]["name"].as_str().unwrap().to_string();
        if let Some(l) = label_of.get(&name) {
            n["metadata"]["labels"]["nvidia.com/mig.config"] = l.clone().into();
        }
    }
    let nf = dir.path().join("relabelled.json");
    std::fs::write(&nf, serde_json::to_string(&nodes).unwrap()).unwrap();
    let back = dir.path().join("back.toml");
    ok(k8s_import_of(&nf, &fixture("k8s/pods.json"))
        .arg("--mig-config")
        .arg(art.join("mig-parted-config.yaml"))
        .arg("-o")
        .arg(&back));
    let a = migplan::scenario::load(&y).unwrap();
    let b = migplan::scenario::load(&back).unwrap();
    let (ca, cb) = (counts(&a), counts(&b));
    for host in ["gpu-a100-1", "gpu-h100-1", "gpu-a100-80-off", "gpu-a100-single-1"] {
        assert_eq!(ca[host], cb[host], "{host}");
    }
}

/// Per GPU of a host with `gpus` GPUs, the MIG devices that config `name` of an exported
/// ConfigMap gives it (`devices: all` or a list of indices per entry).
fn config_per_gpu(cm: &str, name: &str, gpus: usize) -> Vec<BTreeMap<String, u32>> {
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(cm).unwrap();
    let inner: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(doc["data"]["config.yaml"].as_str().unwrap()).unwrap();
    let mut per = vec![BTreeMap::new(); gpus];
    let entries = inner["mig-configs"][name]
        .as_sequence()
        .unwrap_or_else(|| panic!("no config `{name}` in {cm}"));
    for e in entries {
        let ks: Vec<usize> = match e["devices"].as_sequence() {
            Some(v) => v.iter().map(|k| k.as_u64().unwrap() as usize).collect(),
            None => (0..gpus).collect(),
        };
        for k in ks {
            if let Some(m) = e["mig-devices"].as_mapping() {
                for (p, n) in m {
                    per[k].insert(p.as_str().unwrap().to_string(), n.as_u64().unwrap() as u32);
                }
            }
        }
    }
    per
}

#[test]
fn export_k8s_keeps_an_imported_label_while_the_pods_fit_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    let y = dir.path().join("y.toml");
    let smi = fixture("nvidia-smi/fleet").display().to_string();
    k8s_import(&y, &["--smi", &smi]);
    let text = std::fs::read_to_string(&y).unwrap();
    assert!(text.contains("mig_config = \"all-balanced\""), "{text}");
    // gpu-h100-1 is labelled all-balanced and its pods use only some of that layout's
    // instances: the node keeps its label and the config holds the whole layout (1g.10gb x 2,
    // 2g.20gb, 3g.40gb per GPU), not just the instances in use.
    let art = dir.path().join("k8s");
    export_k8s(&y, &art);
    let labels = std::fs::read_to_string(art.join("labels.sh")).unwrap();
    let cm = std::fs::read_to_string(art.join("mig-parted-config.yaml")).unwrap();
    assert!(
        labels.contains("kubectl label node gpu-h100-1 nvidia.com/mig.config=all-balanced --overwrite"),
        "{labels}"
    );
    let full: BTreeMap<String, u32> = [("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    assert_eq!(
        config_per_gpu(&cm, "all-balanced", 2),
        vec![full.clone(), full.clone()]
    );
    let a = migplan::scenario::load(&y).unwrap();
    let in_use = &counts(&a)["gpu-h100-1"];
    assert_ne!(
        in_use,
        &vec![full.clone(), full],
        "the fixture leaves instances unused"
    );
    // The same node labelled with a layout its instances do not fit (all-7g.80gb holds one
    // 7g.80gb) gets a config of its own that holds exactly what runs.
    let edited = text.replace(
        "note = \"nvidia.com/mig.config=all-balanced\"\nmig_config = \"all-balanced\"",
        "note = \"nvidia.com/mig.config=all-balanced\"\nmig_config = \"all-7g.80gb\"",
    );
    assert_ne!(edited, text);
    let e = dir.path().join("edited.toml");
    std::fs::write(&e, edited).unwrap();
    let art2 = dir.path().join("k8s2");
    export_k8s(&e, &art2);
    let labels2 = std::fs::read_to_string(art2.join("labels.sh")).unwrap();
    assert!(
        labels2.contains("kubectl label node gpu-h100-1 nvidia.com/mig.config=gpu-h100-1 --overwrite"),
        "{labels2}"
    );
    let cm2 = std::fs::read_to_string(art2.join("mig-parted-config.yaml")).unwrap();
    assert_eq!(&config_per_gpu(&cm2, "gpu-h100-1", 2), in_use, "{cm2}");
}

#[test]
fn export_k8s_writes_resource_quotas_from_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let s = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/h100-four-tenants.toml");
    export_k8s(&s, dir.path());
    let rq = std::fs::read_to_string(dir.path().join("resourcequotas.yaml")).unwrap();
    let docs: Vec<serde_yaml_ng::Value> = serde_yaml_ng::Deserializer::from_str(&rq)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let sc = migplan::scenario::load(&s).unwrap();
    assert_eq!(docs.len(), sc.quotas.len());
    for d in &docs {
        assert_eq!(d["kind"], "ResourceQuota");
        let ns = d["metadata"]["namespace"].as_str().unwrap();
        let hard = d["spec"]["hard"].as_mapping().unwrap();
        assert_eq!(hard.len(), sc.quotas[ns].len());
        assert!(hard
            .keys()
            .all(|k| k.as_str().unwrap().starts_with("requests.nvidia.com/mig-")));
    }
}

#[test]
fn relayout_k8s_prints_the_node_runbook_naming_every_gpu_pod() {
    let dir = tempfile::tempdir().unwrap();
    let y = dir.path().join("y.toml");
    let smi = fixture("nvidia-smi/fleet").display().to_string();
    k8s_import(&y, &["--smi", &smi]);
    let pods = fixture("k8s/pods.json").display().to_string();
    let relayout = |extra: &[&str]| {
        ok(migplan()
            .arg("relayout")
            .arg(&y)
            .args([
                "--host",
                "gpu-h100-1",
                "--gpu",
                "0",
                "--layout",
                "all-1g.10gb",
                "--k8s",
            ])
            .args(extra))
    };
    let text = relayout(&["--pods", &pods]);
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("no `{s}` in:\n{text}"));
    let steps = [
        at("kubectl cordon gpu-h100-1"),
        at("kubectl delete pod -n team-b llm-a-0"),
        at("kubectl label node gpu-h100-1 nvidia.com/mig.config=gpu-h100-1 --overwrite"),
        at("kubectl wait node/gpu-h100-1"),
        at("kubectl uncordon gpu-h100-1"),
    ];
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        text.contains(r"nvidia\.com/mig\.config\.state}'=success"),
        "{text}"
    );
    assert!(text.contains("--timeout=10m"), "{text}");
    // Every GPU pod of the node, on both GPUs, is named (not only GPU 0's); finished pods are not.
    for p in [
        "team-b/llm-a-0",
        "team-b/llm-b-0",
        "team-b/llm-c-0",
        "team-c/embed-4kq2x",
        "team-a/old-profile-0",
    ] {
        assert!(text.contains(p), "{p}: {text}");
    }
    assert!(!text.contains("batch-done-1"), "{text}");
    // The new label is a per-host config (GPU 1 keeps all-balanced): its entry is printed.
    assert!(
        text.contains("gpu-h100-1") && text.contains("\"1g.10gb\": 7"),
        "{text}"
    );
    // Without --pods, VMs and tenants are named instead.
    let text = relayout(&[]);
    assert!(
        text.contains("--field-selector spec.nodeName=gpu-h100-1"),
        "{text}"
    );
}

#[test]
fn truncated_kubernetes_json_is_an_error_never_a_panic() {
    let nodes = fixture_text("k8s/nodes.json");
    let pods = fixture_text("k8s/pods.json");
    let none = BTreeMap::new();
    for cut in (0..nodes.len()).step_by(97) {
        let r =
            migplan::fleet_import::k8s::import((&nodes[..cut], "n.json"), (&pods, "p.json"), &[], &none, "t");
        let e = r.expect_err("a cut document is not JSON").to_string();
        assert!(e.starts_with("n.json:") && !e.contains('\n'), "{e}");
    }
    for cut in (0..pods.len()).step_by(131) {
        let r =
            migplan::fleet_import::k8s::import((&nodes, "n.json"), (&pods[..cut], "p.json"), &[], &none, "t");
        assert!(r.is_err());
    }
    // Absurd counts are refused, not allocated.
    let huge = pods.replacen(
        "\"nvidia.com/mig-3g.20gb\": \"1\"",
        "\"nvidia.com/mig-3g.20gb\": \"1e9\"",
        1,
    );
    let e = migplan::fleet_import::k8s::import((&nodes, "n.json"), (&huge, "p.json"), &[], &none, "t")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("items[0].spec.containers[0].resources.requests[\"nvidia.com/mig-3g.20gb\"]"),
        "{e}"
    );
}

#[test]
fn k8s_import_reads_nodes_or_pods_from_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
    k8s_import(&a, &[]);
    let nodes = fixture_text("k8s/nodes.json");
    ok(migplan()
        .args(["import", "k8s", "--nodes", "-", "--pods"])
        .arg(fixture("k8s/pods.json"))
        .arg("-o")
        .arg(&b)
        .write_stdin(nodes));
    let norm = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .replace("name = \"b\"", "name = \"a\"")
    };
    assert_eq!(norm(&a), norm(&b));
    let err = fails(
        migplan()
            .args(["import", "k8s", "--nodes", "-", "--pods", "-", "-o"])
            .arg(&b),
    );
    assert!(err.contains("cannot both read standard input"), "{err}");
}
