//! Real fleets in: the import fixtures, the `import` and `export k8s` commands run on them, and
//! readings of the scenarios they write that do not go through the importer.

use super::cli::{migplan, ok};
use assert_cmd::Command;
use migplan::fleet::Host;
use migplan::scenario::Scenario;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A file or folder of `tests/it/fixtures`.
pub fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(p)
}

/// The text of a fixture file.
pub fn fixture_text(p: &str) -> String {
    std::fs::read_to_string(fixture(p)).unwrap()
}

/// `migplan import nvidia-smi CAPTURES -o OUT`; more arguments may be added.
pub fn nvidia_smi_import(captures: &Path, out: &Path) -> Command {
    let mut cmd = migplan();
    cmd.args(["import", "nvidia-smi"])
        .arg(captures)
        .arg("-o")
        .arg(out);
    cmd
}

/// `migplan import k8s --nodes NODES --pods PODS`; the other sources and `-o` are added by the
/// caller.
pub fn k8s_import_of(nodes: &Path, pods: &Path) -> Command {
    let mut cmd = migplan();
    cmd.args(["import", "k8s", "--nodes"])
        .arg(nodes)
        .arg("--pods")
        .arg(pods);
    cmd
}

/// [`k8s_import_of`] the fixture's `k8s/nodes.json` and `k8s/pods.json`.
pub fn k8s_fixture_import() -> Command {
    k8s_import_of(&fixture("k8s/nodes.json"), &fixture("k8s/pods.json"))
}

/// Imports the fixture's nodes and pods with `extra` arguments into `out`; the `--json` summary.
pub fn k8s_import(out: &Path, extra: &[&str]) -> Value {
    let mut cmd = k8s_fixture_import();
    cmd.args(extra).arg("-o").arg(out).arg("--json");
    serde_json::from_str(&ok(&mut cmd)).unwrap()
}

/// `migplan export k8s SCENARIO --out DIR`, which must succeed; its standard output.
pub fn export_k8s(scenario: &Path, dir: &Path) -> String {
    ok(migplan()
        .args(["export", "k8s"])
        .arg(scenario)
        .arg("--out")
        .arg(dir))
}

/// The `findings` of an import's `--json` summary.
pub fn findings(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// The host named `name` of a scenario.
pub fn host<'a>(s: &'a Scenario, name: &str) -> &'a Host {
    s.fleet
        .hosts
        .iter()
        .find(|h| h.name == name)
        .unwrap_or_else(|| panic!("no host `{name}`"))
}

/// (host, GPU, profile name, start) of every instance of a scenario.
pub fn instances(s: &Scenario) -> Vec<(String, usize, String, u8)> {
    let f = &s.fleet;
    let mut v = Vec::new();
    for h in &f.hosts {
        for (k, g) in h.gpus.iter().enumerate() {
            let m = f.catalog.model(g.model);
            for gi in &g.gis {
                v.push((h.name.clone(), k, m.profiles[gi.profile].name.clone(), gi.start));
            }
        }
    }
    v.sort();
    v
}
