//! mig-parted export: the document parses as YAML, says that start slices are the driver's
//! choice, and round-trips through the importer.

use migplan::ops::export;
use migplan::scenario::{self, Scenario};
use serde_yaml_ng::Value;

fn load(name: &str) -> Scenario {
    let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
    scenario::load(std::path::Path::new(&path)).unwrap()
}

#[test]
fn worked_example_exports_as_mig_parted_yaml() {
    let s = load("h100-four-tenants.toml");
    let text = export::export(&s.fleet, &s.name, &[]);
    assert!(text.contains("mig-parted does not pin start slices"), "{text}");
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["version"], Value::from("v1"));
    let entries = doc["mig-configs"]["gpu-node-07"].as_sequence().unwrap();
    assert_eq!(entries.len(), 3);
    // GPUs 0 and 1 are all-balanced, GPU 2 whole, GPU 3 MIG on with no instances.
    assert_eq!(
        entries[0]["devices"],
        serde_yaml_ng::from_str::<Value>("[0, 1]").unwrap()
    );
    assert_eq!(entries[0]["mig-enabled"], Value::from(true));
    assert_eq!(entries[0]["mig-devices"]["1g.10gb"], Value::from(2));
    assert_eq!(entries[0]["mig-devices"]["2g.20gb"], Value::from(1));
    assert_eq!(entries[0]["mig-devices"]["3g.40gb"], Value::from(1));
    assert_eq!(entries[1]["mig-devices"]["7g.80gb"], Value::from(1));
    assert_eq!(
        entries[2]["devices"],
        serde_yaml_ng::from_str::<Value>("[3]").unwrap()
    );
    assert_eq!(entries[2]["mig-devices"].as_mapping().unwrap().len(), 0);
}

#[test]
fn export_import_export_is_the_same_document() {
    for name in ["h100-four-tenants.toml", "demo.toml", "fig1.toml"] {
        let s = load(name);
        let text = export::export(&s.fleet, &s.name, &[]);
        let layouts = export::import(&s.fleet, &text, "exported.yaml").unwrap();
        // The importer gives back each GPU's current instances...
        let current: Vec<_> = (0..s.fleet.hosts.len())
            .filter(|&h| !s.fleet.hosts[h].gpus.is_empty())
            .map(|h| export::current(&s.fleet, h))
            .collect();
        assert_eq!(layouts, current, "{name}");
        // ...and exporting them again writes the same document, byte for byte.
        assert_eq!(export::render(&s.fleet, &s.name, &layouts), text, "{name}");
    }
}

#[test]
fn one_host_and_devices_all() {
    let s = load("demo.toml");
    let h = s.fleet.hosts.iter().position(|h| h.name == "a100-0").unwrap();
    let text = export::export(&s.fleet, &s.name, &[h]);
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["mig-configs"].as_mapping().unwrap().len(), 1);
    // A config in mig-parted's own style (`devices: all`) applies to every GPU of the host and is
    // written back as `devices: all`.
    let seed = "version: v1\nmig-configs:\n  gpu-node-07:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"4g.40gb\": 1\n        \"3g.40gb\": 1\n";
    let s = load("h100-four-tenants.toml");
    let l = export::import(&s.fleet, seed, "seed.yaml").unwrap();
    assert_eq!(l[0].devices.len(), 4);
    assert!(l[0].devices.iter().all(|d| d == &l[0].devices[0]));
    let again = export::render(&s.fleet, &s.name, &l);
    assert!(again.contains("    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": 1\n        \"4g.40gb\": 1\n"), "{again}");
    assert_eq!(export::import(&s.fleet, &again, "again.yaml").unwrap(), l);
}

#[test]
fn import_errors_name_the_entry() {
    let s = load("h100-four-tenants.toml");
    let doc = |body: &str| format!("version: v1\nmig-configs:\n  gpu-node-07:\n{body}");
    let cases = [
        (doc("    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.20gb\": 1\n"), "unknown profile `3g.20gb`"),
        (doc("    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": 2\n        \"1g.10gb\": 1\n"), "cannot be placed"),
        (doc("    - devices: [0]\n      mig-enabled: true\n    - devices: [0, 1]\n      mig-enabled: false\n"), "GPU 0 of host `gpu-node-07` is configured twice"),
        (doc("    - devices: [4]\n      mig-enabled: true\n"), "not a GPU index"),
        (doc("    - devices: all\n      mig-enabled: false\n      mig-devices:\n        \"1g.10gb\": 1\n"), "mig-enabled: false"),
        (doc("    - devices: all\n      mig-enabled: true\n      device-filter: 7\n"), "device-filter: `7` is neither a device ID nor a list of them"),
        (doc("    - devices: all\n      mig-enabled: true\n      devices-filter: x\n"), "unknown key `devices-filter`"),
        (doc("    - devices: all\n"), "mig-configs.gpu-node-07[0].mig-enabled: missing"),
        ("version: v2\nmig-configs: {}\n".to_string(), "version: `v2` is not supported"),
        ("version: v1\nmig-configs:\n  nobody:\n    - devices: all\n      mig-enabled: true\n".to_string(), "no config applies to a host of the scenario (configs: `nobody`)"),
        ("version: v1\nmig-configs: [\n".to_string(), "not YAML"),
    ];
    for (text, want) in cases {
        let e = export::import(&s.fleet, &text, "in.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{want}: {e}");
        assert!(e.starts_with("in.yaml"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
