//! `migplan import nvidia-smi DIR|FILES... -o fleet.toml [--cores N] [--ram-gb N] [--json]`:
//! a scenario from one nvidia-smi capture per host (see `fleet_import::nvidia_smi`), written
//! atomically; nothing is written when any capture is wrong.

use crate::fleet_import;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct NvidiaSmiArgs {
    /// Capture files (one per host), or folders of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Scenario file to write (TOML).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Cores of a host whose capture has no `nproc` line.
    #[arg(long, value_name = "N")]
    pub cores: Option<u32>,
    /// RAM in GB of a host whose capture has no `free -g` line.
    #[arg(long, value_name = "GB")]
    pub ram_gb: Option<u32>,
    /// Print a JSON summary.
    #[arg(long)]
    pub json: bool,
}

/// The scenario name of an output path: its stem.
pub(super) fn name_of(out: &std::path::Path) -> String {
    out.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into())
}

pub fn run(a: NvidiaSmiArgs) -> anyhow::Result<()> {
    let (s, sum) = fleet_import::from_nvidia_smi(&a.paths, a.cores, a.ram_gb, &name_of(&a.out))?;
    fleet_import::save_checked(&s, &a.out)?;
    if a.json {
        let mut v = serde_json::to_value(&sum)?;
        v["out"] = a.out.display().to_string().into();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "Imported {} host(s), {} GPU(s) ({} with MIG disabled), {} instance(s) at their reported start slices -> {}",
            sum.hosts,
            sum.gpus,
            sum.mig_disabled,
            sum.instances,
            a.out.display()
        );
        println!("Owners are unknown from nvidia-smi: each instance is a VM of tenant `observed`.");
    }
    Ok(())
}
