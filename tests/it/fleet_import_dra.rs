//! DRA ResourceSlices in (`import k8s --resourceslices`): MIG devices that publish their memory
//! slices are placed exactly where they sit (checked against the nvidia-smi capture of the same
//! node and against an independent reading of the fixture), devices named without placements are
//! arranged and said to be inferred, and bad slices are one line naming file, JSON path and field.

use crate::common::cli::{fails, migplan, ok};
use crate::common::import::{findings, fixture, fixture_text, instances, k8s_fixture_import, k8s_import};
use migplan::catalog::embedded;
use migplan::fleet_import::{nvidia_smi, resourceslices};
use serde_json::Value;
use std::collections::BTreeMap;

fn slices_text() -> String {
    fixture_text("k8s/resourceslices.json")
}

/// (GPU minor, profile name, start) of every MIG device of node `node` of the fixture, read from
/// its device name and `memorySlice<i>` capacities without the importer.
fn published(node: &str) -> Vec<(usize, String, u8)> {
    let v: Value = serde_json::from_str(&slices_text()).unwrap();
    let mut out = Vec::new();
    for s in v["items"].as_array().unwrap() {
        if s["spec"]["nodeName"] != node || s["spec"]["driver"] != "gpu.nvidia.com" {
            continue;
        }
        for d in s["spec"]["devices"].as_array().unwrap() {
            if d["attributes"]["type"]["string"] != "mig" {
                continue;
            }
            let name = d["name"].as_str().unwrap();
            let minor: usize = name.split('-').nth(1).unwrap().parse().unwrap();
            let start = d["capacity"]
                .as_object()
                .unwrap()
                .keys()
                .filter_map(|k| k.strip_prefix("memorySlice"))
                .map(|n| n.parse::<u8>().unwrap())
                .min()
                .unwrap();
            let profile = d["attributes"]["profile"]["string"].as_str().unwrap();
            out.push((minor, profile.to_string(), start));
        }
    }
    out.sort();
    out
}

fn gis_of(c: &nvidia_smi::CapturedGpu, k: usize) -> Vec<(usize, String, u8)> {
    let m = embedded().model(c.model);
    c.gis
        .iter()
        .map(|g| (k, m.profiles[g.profile].name.clone(), g.start))
        .collect()
}

#[test]
fn published_memory_slices_place_instances_exactly_as_the_capture_does() {
    let s = resourceslices::parse(&slices_text(), "rs.json", embedded()).unwrap();
    let nodes: Vec<&str> = s.nodes.iter().map(|n| n.capture.host.as_str()).collect();
    // The compute-domain driver's slice is left out; three nodes of gpu.nvidia.com.
    assert_eq!(nodes, ["gpu-a100-1", "gpu-a100-80-off", "gpu-h100-1"]);
    let a100 = &s.nodes[0];
    assert!(a100.exact);
    let got: Vec<(usize, String, u8)> = {
        let mut v: Vec<_> = a100
            .capture
            .gpus
            .iter()
            .enumerate()
            .flat_map(|(k, g)| gis_of(g, k))
            .collect();
        v.sort();
        v
    };
    assert_eq!(got.len(), 9);
    assert_eq!(got, published("gpu-a100-1"));
    // The nvidia-smi capture of the same node, read by the capture importer, agrees instance for
    // instance (GPU index = minor here).
    let text = fixture_text("nvidia-smi/fleet/gpu-a100-1.txt");
    let cap = nvidia_smi::parse(&text, "gpu-a100-1.txt", "gpu-a100-1", embedded()).unwrap();
    let mut from_smi: Vec<_> = cap
        .gpus
        .iter()
        .enumerate()
        .flat_map(|(k, g)| gis_of(g, k))
        .collect();
    from_smi.sort();
    assert_eq!(got, from_smi);
    // Whole GPUs without MIG devices: MIG disabled.
    let off = &s.nodes[1].capture;
    assert_eq!(off.gpus.len(), 2);
    assert!(off.gpus.iter().all(|g| !g.mig_enabled && g.gis.is_empty()));
    assert_eq!(embedded().model(off.gpus[0].model).name, "a100-80gb");
    // v1beta1 devices named without placements: counts kept, starts arranged, not exact.
    let h100 = &s.nodes[2];
    assert!(!h100.exact);
    for (k, g) in h100.capture.gpus.iter().enumerate() {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (_, p, _) in gis_of(g, k) {
            *counts.entry(p).or_default() += 1;
        }
        let want: BTreeMap<String, u32> = [("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)]
            .map(|(p, n)| (p.to_string(), n))
            .into();
        assert_eq!(counts, want, "GPU {k}");
    }
    assert!(s.findings.is_empty(), "{:?}", s.findings);
}

#[test]
fn k8s_import_with_resourceslices_reports_exact_and_inferred_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.toml");
    let rs = fixture("k8s/resourceslices.json").display().to_string();
    let v = k8s_import(&out, &["--resourceslices", &rs]);
    assert_eq!(v["hosts"], 6);
    assert_eq!(
        v["slice_nodes"],
        serde_json::json!(["gpu-a100-1", "gpu-h100-1", "gpu-a100-80-off"])
    );
    let inferred: Vec<&str> = v["inferred_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(inferred.contains(&"gpu-h100-1"), "{inferred:?}");
    assert!(!inferred.contains(&"gpu-a100-1"), "{inferred:?}");
    assert!(!inferred.contains(&"gpu-a100-80-off"), "{inferred:?}");
    assert_eq!(v["inferred_placements"], true);
    let f = findings(&v);
    assert!(
        f.iter()
            .any(|x| x
                == "node gpu-h100-1: pods ask for 3 instance(s) of 3g.40gb, the ResourceSlice file shows 2"),
        "{f:?}"
    );
    // The pods on gpu-a100-1 sit where they sit with the capture instead of the slices.
    let with_smi = dir.path().join("z.toml");
    let smi = fixture("nvidia-smi/fleet/gpu-a100-1.txt").display().to_string();
    k8s_import(&with_smi, &["--smi", &smi]);
    let a = migplan::scenario::load(&out).unwrap();
    let b = migplan::scenario::load(&with_smi).unwrap();
    let on = |s: &migplan::scenario::Scenario| {
        instances(s)
            .into_iter()
            .filter(|(h, ..)| h == "gpu-a100-1")
            .collect::<Vec<_>>()
    };
    assert!(!on(&a).is_empty());
    assert_eq!(on(&a), on(&b));
    // The text summary says which placements are inferred and why.
    let text = ok(k8s_fixture_import()
        .args(["--resourceslices", &rs, "-o"])
        .arg(dir.path().join("t.toml")));
    assert!(
        text.contains(
            "Inferred start slices on gpu-h100-1: their ResourceSlices name MIG devices without placements"
        ),
        "{text}"
    );
    // The imported fleet holds together and the optimizer runs on it.
    a.fleet.check_invariants().unwrap();
    ok(migplan().arg("solve").arg(&out));
}

/// The fixture with one change at a JSON pointer.
fn changed(pointer: &str, value: Value) -> String {
    let mut v: Value = serde_json::from_str(&slices_text()).unwrap();
    *v.pointer_mut(pointer).unwrap() = value;
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn bad_resourceslices_are_one_line_errors_naming_the_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let text = slices_text();
    let dev = "/items/0/spec/devices";
    // Device 4 is GPU 0's 3g.20gb at 0:4, device 5 its 2g.10gb at 4:2.
    let moved = {
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let caps = v.pointer_mut(&format!("{dev}/4/capacity")).unwrap();
        let m = caps.as_object_mut().unwrap();
        m.remove("memorySlice0");
        m.insert("memorySlice4".into(), serde_json::json!({"value": "1"}));
        *v.pointer_mut(&format!("{dev}/4/name")).unwrap() = "gpu-0-mig-9-1-4".into();
        serde_json::to_string(&v).unwrap()
    };
    let overlap = {
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let caps = v.pointer_mut(&format!("{dev}/5/capacity")).unwrap();
        let m = caps.as_object_mut().unwrap();
        m.remove("memorySlice4");
        m.remove("memorySlice5");
        m.insert("memorySlice2".into(), serde_json::json!({"value": "1"}));
        m.insert("memorySlice3".into(), serde_json::json!({"value": "1"}));
        *v.pointer_mut(&format!("{dev}/5/name")).unwrap() = "gpu-0-mig-14-2-2".into();
        serde_json::to_string(&v).unwrap()
    };
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "broken",
            text[..text.len() / 2].to_string(),
            vec!["rs.json:", "not JSON"],
        ),
        (
            "profile",
            changed(&format!("{dev}/4/attributes/profile/string"), "9g.99gb".into()),
            vec![
                "items[0].spec.devices[4].attributes.profile",
                "`9g.99gb` is not a MIG profile of a100-40gb",
            ],
        ),
        (
            "start",
            moved,
            vec![
                "items[0].spec.devices[4].capacity.memorySlice1",
                "start 1 is not a permitted start of 3g.20gb",
            ],
        ),
        (
            "overlap",
            overlap,
            vec![
                "items[0].spec.devices[5].capacity.memorySlice2",
                "overlaps another MIG device",
            ],
        ),
        (
            "type",
            changed(&format!("{dev}/0/attributes/type/string"), "gpu-fraction".into()),
            vec![
                "items[0].spec.devices[0].attributes.type",
                "unknown device type `gpu-fraction`",
            ],
        ),
        (
            "product",
            changed(
                &format!("{dev}/0/attributes/productName/string"),
                "Tesla T4".into(),
            ),
            vec![
                "items[0].spec.devices[0].attributes.productName",
                "unknown GPU product `Tesla T4`",
            ],
        ),
        (
            "api",
            changed("/items/1/apiVersion", "resource.k8s.io/v1alpha2".into()),
            vec!["items[1].apiVersion", "resource.k8s.io/v1alpha2"],
        ),
        (
            "attribute",
            changed(
                &format!("{dev}/4/attributes/profile"),
                serde_json::json!({"int": 9}),
            ),
            vec![
                "items[0].spec.devices[4].attributes.profile",
                "expected a string attribute",
            ],
        ),
        (
            "node",
            changed("/items/2/spec/nodeName", Value::Null),
            vec!["items[2].spec.nodeName", "missing"],
        ),
    ];
    for (what, body, want) in cases {
        let rs = dir.path().join("rs.json");
        std::fs::write(&rs, body).unwrap();
        let out = dir.path().join(format!("{what}.toml"));
        let err = fails(
            k8s_fixture_import()
                .arg("--resourceslices")
                .arg(&rs)
                .arg("-o")
                .arg(&out),
        );
        for w in want {
            assert!(err.contains(w), "{what}: `{w}` not in {err}");
        }
        assert!(err.contains("rs.json"), "{what}: {err}");
        assert!(!out.exists(), "{what}: nothing is written on an error");
    }
}

#[test]
fn a_strategy_label_that_disagrees_with_the_product_is_a_finding() {
    let nodes = fixture_text("k8s/nodes.json");
    let pods = fixture_text("k8s/pods.json");
    let none = BTreeMap::new();
    let run = |nodes: &str| {
        let (_, rep) =
            migplan::fleet_import::k8s::import((nodes, "n.json"), (&pods, "p.json"), &[], &none, "t")
                .unwrap();
        rep.findings
            .into_iter()
            .filter(|f| f.contains("mig.strategy"))
            .collect::<Vec<_>>()
    };
    // The fixture's single-strategy node carries the -MIG-1g.5gb suffix: they agree.
    assert!(run(&nodes).is_empty());
    let mut v: Value = serde_json::from_str(&nodes).unwrap();
    let item = |v: &mut Value, name: &str| -> usize {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n["metadata"]["name"] == name)
            .unwrap()
    };
    let i = item(&mut v, "gpu-a100-single-1");
    v["items"][i]["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed".into();
    let j = item(&mut v, "gpu-h100-1");
    v["items"][j]["metadata"]["labels"]["nvidia.com/mig.strategy"] = "fancy".into();
    assert_eq!(
        run(&v.to_string()),
        [
            "node gpu-h100-1: nvidia.com/mig.strategy is `fancy`, not none, single or mixed: read from nvidia.com/gpu.product instead",
            "node gpu-a100-single-1: nvidia.com/mig.strategy is `mixed`, but nvidia.com/gpu.product `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb` has the single strategy's -MIG- suffix: the suffix is used",
        ]
    );
}

#[test]
fn truncated_or_reshaped_resourceslices_are_errors_never_panics() {
    let text = slices_text();
    for cut in (0..text.len()).step_by(97) {
        let e = resourceslices::parse(&text[..cut], "rs.json", embedded()).unwrap_err();
        assert!(e.to_string().starts_with("rs.json"), "{e}");
    }
    // Every field replaced in turn by a value of the wrong shape: an error or a reading, never a
    // panic; errors name the file.
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut pointers = Vec::new();
    fn walk(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| walk(x, format!("{at}/{k}"), out)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
            _ => {}
        }
        out.push(at);
    }
    walk(&v["items"][0], "/items/0".into(), &mut pointers);
    for p in pointers.iter().step_by(3) {
        for bad in [
            Value::Null,
            serde_json::json!(7),
            serde_json::json!("x"),
            serde_json::json!([]),
        ] {
            let mut w = v.clone();
            *w.pointer_mut(p).unwrap() = bad;
            if let Err(e) = resourceslices::parse(&w.to_string(), "rs.json", embedded()) {
                assert!(e.to_string().starts_with("rs.json"), "{p}: {e}");
            }
        }
    }
}
