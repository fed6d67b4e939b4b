//! `migplan import k8s --nodes N.json --pods P.json [--smi DIR|FILE]... [--resourceslices
//! RS.json] [--mig-config FILE] -o y.toml [--json] [--report]`: a scenario from `kubectl get nodes
//! -o json` and `kubectl get pods -A -o json` (see `fleet_import::k8s`), with the devices of
//! `kubectl get resourceslices -o json` (see `fleet_import::resourceslices`). `-` reads one of the two from standard input. The
//! findings (mismatches real clusters show) are printed with `--report` and always in `--json`;
//! nothing is written on an error.

use crate::fleet_import::{self, k8s};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct K8sArgs {
    /// `kubectl get nodes -o json` output (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    pub nodes: PathBuf,
    /// `kubectl get pods -A -o json` output (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    pub pods: PathBuf,
    /// nvidia-smi captures of the nodes (files or folders): exact start slices.
    #[arg(long, value_name = "PATH")]
    pub smi: Vec<PathBuf>,
    /// `kubectl get resourceslices -o json` output (DRA): the GPUs and MIG devices the NVIDIA
    /// DRA driver publishes, with their start slices where it gives them.
    #[arg(long, value_name = "FILE")]
    pub resourceslices: Option<PathBuf>,
    /// A mig-parted config (or the GPU operator's ConfigMap) holding custom layouts that
    /// `nvidia.com/mig.config` labels name.
    #[arg(long, value_name = "FILE")]
    pub mig_config: Option<PathBuf>,
    /// Scenario file to write (TOML).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Print the counts and findings as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print every finding.
    #[arg(long)]
    pub report: bool,
}

/// Reads a file, or standard input for `-`; returns the text and the name errors use.
pub(super) fn read_input(p: &Path, what: &str) -> anyhow::Result<(String, String)> {
    if p.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| anyhow::anyhow!("<stdin>: cannot read the {what}: {e}"))?;
        Ok((crate::fsutil::text_of(bytes, "<stdin>")?, "<stdin>".into()))
    } else {
        let f = p.display().to_string();
        let bytes = std::fs::read(p).map_err(|e| anyhow::anyhow!("{f}: cannot read the {what}: {e}"))?;
        Ok((crate::fsutil::text_of(bytes, &f)?, f))
    }
}

pub fn run(a: K8sArgs) -> anyhow::Result<()> {
    let stdin = [Some(&a.nodes), Some(&a.pods), a.resourceslices.as_ref()]
        .iter()
        .filter(|p| p.is_some_and(|p| p.as_os_str() == "-"))
        .count();
    if stdin > 1 {
        anyhow::bail!("--nodes, --pods, --resourceslices: two of them cannot both read standard input");
    }
    let (nt, nf) = read_input(&a.nodes, "nodes")?;
    let (pt, pf) = read_input(&a.pods, "pods")?;
    let caps = if a.smi.is_empty() {
        Vec::new()
    } else {
        fleet_import::read_captures(&a.smi)?
    };
    let slices = match &a.resourceslices {
        None => Default::default(),
        Some(p) => {
            let (t, f) = read_input(p, "ResourceSlices")?;
            crate::fleet_import::resourceslices::parse(&t, &f, crate::catalog::embedded())?
        }
    };
    let configs = match &a.mig_config {
        None => Default::default(),
        Some(p) => {
            let (t, f) = read_input(p, "mig-parted config")?;
            k8s::parse_mig_parted(&t, &f)?
        }
    };
    let name = super::import_nvidia_smi::name_of(&a.out);
    let (s, rep) = k8s::import_with((&nt, &nf), (&pt, &pf), &caps, &slices, &configs, &name)?;
    fleet_import::save_checked(&s, &a.out)?;
    if a.json {
        let mut v = serde_json::to_value(&rep)?;
        v["out"] = a.out.display().to_string().into();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let placed = rep.pods.saturating_sub(rep.pending);
    println!(
        "Imported {} node(s), {} GPU(s), {} instance(s); {} GPU pod(s): {} placed, {} pending -> {}",
        rep.hosts,
        rep.gpus,
        rep.instances,
        rep.pods,
        placed,
        rep.pending,
        a.out.display()
    );
    let captured = rep.hosts - rep.inferred_nodes.len();
    if captured > 0 {
        println!(
            "Exact start slices on {captured} node(s) (captures or ResourceSlices); which pod holds which of several equal instances is inferred."
        );
    }
    if !rep.slice_nodes.is_empty() {
        println!("Devices from ResourceSlices on {}.", rep.slice_nodes.join(", "));
    }
    let (from_slices, from_labels): (Vec<&String>, Vec<&String>) = rep
        .inferred_nodes
        .iter()
        .partition(|n| rep.slice_nodes.contains(n));
    let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
    if !from_labels.is_empty() {
        println!(
            "Inferred placements on {} (no capture): instances from the nvidia.com/mig.config layout; pods in creation order take the first free instance of their profile, by GPU and start slice.",
            list(&from_labels)
        );
    }
    if !from_slices.is_empty() {
        println!(
            "Inferred start slices on {}: their ResourceSlices name MIG devices without placements; the devices are arranged by the layout rules.",
            list(&from_slices)
        );
    }
    if !rep.skipped_nodes.is_empty() {
        println!(
            "Left out {} node(s) without nvidia.com/gpu.product: {}",
            rep.skipped_nodes.len(),
            rep.skipped_nodes.join(", ")
        );
    }
    if a.report {
        println!("{} finding(s):", rep.findings.len());
        for f in &rep.findings {
            println!("  - {f}");
        }
    } else if !rep.findings.is_empty() {
        println!("{} finding(s): see --report", rep.findings.len());
    }
    Ok(())
}
