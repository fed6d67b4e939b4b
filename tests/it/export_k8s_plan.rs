//! `migplan export k8s PLAN.json --fleet S.toml`: a layout plan of `migplan layout --json` put on
//! a fleet's GPUs of its model. The YAML parses, the labels and ConfigMap give each planned GPU
//! exactly the plan's layout and every other GPU what `export k8s S.toml` gives it, the files
//! round-trip through `import k8s --mig-config`, and a plan that does not fit is one line.

use crate::common::cli::{fails, migplan, ok};
use crate::common::import::{export_k8s, findings, fixture, fixture_text, k8s_import, k8s_import_of};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

type Counts = BTreeMap<String, u32>;

/// Node -> label, from `labels.sh`.
fn labels(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(dir.join("labels.sh"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("kubectl label node "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[5], "--overwrite", "{l}");
            (
                f[3].to_string(),
                f[4].strip_prefix("nvidia.com/mig.config=").unwrap().to_string(),
            )
        })
        .collect()
}

/// The mig-parted config inside `mig-parted-config.yaml`, parsed as YAML.
fn configs(dir: &Path) -> serde_yaml_ng::Value {
    let cm: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join("mig-parted-config.yaml")).unwrap())
            .unwrap();
    assert_eq!(cm["kind"], "ConfigMap");
    let inner: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(cm["data"]["config.yaml"].as_str().unwrap()).unwrap();
    assert_eq!(inner["version"], "v1");
    inner["mig-configs"].clone()
}

/// What the exported files give GPU `k` of `node`: `None` for MIG disabled, else its instances.
fn gpu_config(dir: &Path, node: &str, k: usize) -> Option<Counts> {
    let label = &labels(dir)[node];
    let entries = configs(dir)[label.as_str()].as_sequence().unwrap().clone();
    let e = entries
        .iter()
        .find(|e| {
            e["devices"] == "all"
                || e["devices"]
                    .as_sequence()
                    .is_some_and(|d| d.iter().any(|x| x.as_u64() == Some(k as u64)))
        })
        .unwrap_or_else(|| panic!("no entry of `{label}` for GPU {k}"));
    if !e["mig-enabled"].as_bool().unwrap() {
        return None;
    }
    Some(
        e["mig-devices"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(p, n)| (p.as_str().unwrap().to_string(), n.as_u64().unwrap() as u32))
            .collect(),
    )
}

#[test]
fn a_layout_plan_is_exported_onto_the_fleet_and_round_trips_through_import() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let y = d.join("y.toml");
    let smi = fixture("nvidia-smi/fleet").display().to_string();
    let cfg = fixture("k8s/mig-config.yaml").display().to_string();
    k8s_import(&y, &["--smi", &smi, "--mig-config", &cfg]);
    let plan_json = ok(migplan().args([
        "layout",
        "--gpu",
        "a100-40gb",
        "--demand",
        "1g.5gb=7,2g.10gb=3,3g.20gb=2",
        "--gpus",
        "4",
        "--json",
    ]));
    let plan: Value = serde_json::from_str(&plan_json).unwrap();
    let planned: Vec<Counts> = plan["gpu_layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| serde_json::from_value(g["instances"].clone()).unwrap())
        .collect();
    assert_eq!(planned.len() as u64, plan["gpus_used"].as_u64().unwrap());
    assert!(planned.len() >= 2, "{plan_json}");
    let plan_file = d.join("plan.json");
    std::fs::write(&plan_file, &plan_json).unwrap();

    let (before, after) = (d.join("before"), d.join("after"));
    export_k8s(&y, &before);
    let said = ok(migplan()
        .args(["export", "k8s"])
        .arg(&plan_file)
        .arg("--fleet")
        .arg(&y)
        .arg("--out")
        .arg(&after));
    assert!(
        said.contains(&format!("{} of 7 a100-40gb GPU(s)", planned.len())),
        "{said}"
    );
    for d in [&before, &after] {
        let rq = std::fs::read_to_string(d.join("resourcequotas.yaml")).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&rq) {
            let _: serde_yaml_ng::Value = serde::Deserialize::deserialize(doc).unwrap();
        }
    }
    // The A100-40GB GPUs in host order and GPU index: the first ones take the plan's layouts in
    // its order, the others keep what the scenario's own export gives them.
    let s = migplan::scenario::load(&y).unwrap();
    let mut n = 0;
    for h in &s.fleet.hosts {
        for (k, g) in h.gpus.iter().enumerate() {
            let was = gpu_config(&before, &h.name, k);
            let now = gpu_config(&after, &h.name, k);
            if s.fleet.catalog.model(g.model).name == "a100-40gb" && n < planned.len() {
                assert_eq!(now.as_ref(), Some(&planned[n]), "{} GPU {k}", h.name);
                n += 1;
            } else {
                assert_eq!(now, was, "{} GPU {k}", h.name);
            }
        }
    }
    assert_eq!(n, planned.len());

    // Round trip: the nodes relabelled as labels.sh says, imported with the exported ConfigMap
    // (no captures), hold exactly the instances the exported configs name. gpu-mixed-1 is left
    // out: its labels say two A100s where its capture shows an A100 and an A30.
    let mut nodes: Value = serde_json::from_str(&fixture_text("k8s/nodes.json")).unwrap();
    let lab = labels(&after);
    let items = nodes["items"].as_array_mut().unwrap();
    items.retain(|n| n["metadata"]["name"] != "gpu-mixed-1");
    let mut want = 0;
    for n in items.iter_mut() {
        let name = n["metadata"]["name"].as_str().unwrap().to_string();
        let Some(l) = lab.get(&name) else { continue };
        n["metadata"]["labels"]["nvidia.com/mig.config"] = l.clone().into();
        let count: usize = n["metadata"]["labels"]["nvidia.com/gpu.count"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        for k in 0..count {
            want += gpu_config(&after, &name, k).map_or(0, |c| c.values().sum::<u32>());
        }
    }
    let nf = d.join("relabelled.json");
    std::fs::write(&nf, serde_json::to_string(&nodes).unwrap()).unwrap();
    let v: Value = serde_json::from_str(&ok(k8s_import_of(&nf, &fixture("k8s/pods.json"))
        .arg("--mig-config")
        .arg(after.join("mig-parted-config.yaml"))
        .arg("-o")
        .arg(d.join("back.toml"))
        .arg("--json")))
    .unwrap();
    assert_eq!(v["instances"], want, "{v}");
    let f = findings(&v);
    assert!(
        !f.iter().any(|x| x.contains("neither a layout")
            || x.contains("does not cover")
            || x.contains("cannot be placed")
            || x.contains("which a ")),
        "{f:?}"
    );
}

#[test]
fn a_plan_that_does_not_fit_the_fleet_is_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fleet = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/h100-four-tenants.toml");
    let plan = |gpus: u32| -> Value {
        serde_json::from_str(&ok(migplan().args([
            "layout",
            "--gpu",
            "h100-80gb",
            "--demand",
            &format!("1g.10gb={}", 7 * gpus),
            "--gpus",
            &gpus.to_string(),
            "--json",
        ])))
        .unwrap()
    };
    let s = migplan::scenario::load(&fleet).unwrap();
    let h100 = s.fleet.hosts.iter().flat_map(|h| &h.gpus).count() as u32;
    let too_many = plan(h100 + 1);
    let mut wrong = plan(1);
    wrong["gpu_layouts"][0]["instances"]["1g.10gb"] = 3.into();
    let mut unknown = plan(1);
    wrong["gpu_layouts"][0]["layout"] = "all-1g.10gb".into();
    unknown["gpu_layouts"][0]["instances"] = serde_json::json!({"9g.99gb": 1});
    let has = format!("the fleet has {h100}");
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "many",
            too_many,
            vec!["plan.json: gpu_layouts: the plan configures", &has],
        ),
        (
            "wrong",
            wrong,
            vec![
                "gpu_layouts[0].instances",
                "layout `all-1g.10gb` of h100-80gb holds",
            ],
        ),
        (
            "unknown",
            unknown,
            vec!["gpu_layouts[0].instances[\"9g.99gb\"]", "no profile `9g.99gb`"],
        ),
        ("exact", plan(1), vec!["plan.json: exact: missing"]),
    ];
    for (what, v, want) in cases {
        let f = d.join("plan.json");
        std::fs::write(&f, v.to_string()).unwrap();
        let out = d.join(what);
        let mut cmd = migplan();
        cmd.args(["export", "k8s"])
            .arg(&f)
            .arg("--fleet")
            .arg(&fleet)
            .arg("--out")
            .arg(&out);
        if what == "exact" {
            cmd.arg("--exact");
        }
        let err = fails(&mut cmd);
        for w in want {
            assert!(err.contains(w), "{what}: `{w}` not in {err}");
        }
        assert!(!out.exists(), "{what}: nothing written");
    }
    // A plan needs the fleet it goes on.
    let f = d.join("plan.json");
    std::fs::write(&f, plan(1).to_string()).unwrap();
    let err = fails(
        migplan()
            .args(["export", "k8s"])
            .arg(&f)
            .arg("--out")
            .arg(d.join("x")),
    );
    assert!(err.contains("--fleet"), "{err}");
}
