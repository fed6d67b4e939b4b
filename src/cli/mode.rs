//! `migplan mode SCENARIO HOST/GPU whole|shared|mig LAYOUT [--json] [--apply -o OUT]`: a GPU's
//! mode change as a drain (docs/operations.md, "Mode changes"): whether the drain covers the
//! host or only the GPU, whether switching MIG on needs a GPU reset, every VM that leaves and
//! where it runs afterwards, the active hosts and GPUs before and after (`ops::mode`). With
//! `--apply -o OUT` the fleet after the change is written to OUT as a scenario; the scenario
//! file itself is only read.

use crate::fleet::Fleet;
use crate::ops::mode::{self, Destination, ModePreview, ModeTarget};
use crate::scenario;
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// The GPU to change: its host (name or index in the scenario), a slash and the GPU's
    /// index on the host, e.g. `mig-0/2`.
    #[arg(value_name = "HOST/GPU")]
    pub gpu: String,
    /// The new mode: `whole`, `shared`, or `mig LAYOUT` with a layout of assets/layouts.toml for
    /// the GPU's model (e.g. `mig all-balanced`).
    #[arg(value_name = "MODE", num_args = 1..=2, required = true)]
    pub mode: Vec<String>,
    #[command(flatten)]
    pub output: super::ChangeOutput,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let sc = scenario::load(&a.scenario)?;
    let fleet = &sc.fleet;
    let file = a.scenario.display().to_string();
    let (host, gpu) = mode::parse_gpu_ref(fleet, &a.gpu)
        .map_err(|e| anyhow::anyhow!("HOST/GPU `{}` in {file}: {e}", a.gpu))?;
    let words: Vec<&str> = a.mode.iter().map(String::as_str).collect();
    let target = mode::parse_target(fleet, host, gpu, &words)
        .map_err(|e| anyhow::anyhow!("MODE `{}`: {e}", words.join(" ")))?;
    let p = mode::mode_preview(fleet, host, gpu, &target)
        .map_err(|e| anyhow::anyhow!("MODE `{}`: {e}", words.join(" ")))?;
    a.output.finish(
        &sc,
        &p.after,
        || render(fleet, &p),
        || to_json(fleet, &p),
        "the mode change",
    )
}

/// The preview's lines (the same the planner's overlay and log show), then the active hosts
/// and GPUs before and after.
fn render(fleet: &Fleet, p: &ModePreview) -> String {
    let mut o = String::new();
    for l in p.lines(fleet) {
        o.push_str(&l);
        o.push('\n');
    }
    let ((hb, gb), (ha, ga)) = p.active(fleet);
    o.push_str(&format!(
        "active: {hb} hosts, {gb} GPUs before; {ha} hosts, {ga} GPUs after\n"
    ));
    o
}

/// The preview as JSON: the GPU, the modes, the drain's extent, the reset fact, one object per
/// leaver with its destination (`in_place`, `moved` with host and GPUs, or `pending`), the VMs
/// left pending and the active hosts and GPUs before and after.
fn to_json(fleet: &Fleet, p: &ModePreview) -> serde_json::Value {
    let leavers: Vec<serde_json::Value> = p
        .leavers
        .iter()
        .map(|l| {
            let to = match &l.to {
                Destination::InPlace => json!({"kind": "in_place"}),
                Destination::Moved(pl) => json!({
                    "kind": "moved",
                    "host": p.after.hosts[pl.host].name,
                    "gpus": pl.gis.iter().map(|s| s.gpu).collect::<Vec<_>>(),
                }),
                Destination::Pending => json!({"kind": "pending"}),
            };
            json!({
                "vm": l.vm,
                "tenant": l.tenant,
                "holds": l.what,
                "on_changed_gpu": l.on_changed_gpu,
                "to": to,
            })
        })
        .collect();
    let ((hb, gb), (ha, ga)) = p.active(fleet);
    json!({
        "host": p.host_name,
        "gpu": p.gpu,
        "from": p.from.name(),
        "to": p.target.mode().name(),
        "layout": match &p.target {
            ModeTarget::Mig(l) => Some(l.name.clone()),
            _ => None,
        },
        "host_drain": p.host_drain,
        "needs_reset": p.needs_reset,
        "leavers": leavers,
        "pending": p.stranded(),
        "active_before": {"hosts": hb, "gpus": gb},
        "active_after": {"hosts": ha, "gpus": ga},
    })
}
