//! The `:` command language of the session: the commands, their usage and the parser that turns
//! a command line into an [`Action`] for [`update`]. The palette, the key bindings and scripted
//! tests share it.

use super::*;

/// The `:` commands [`parse_command`] accepts, with their usage (for completion and help).
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    (
        "add",
        "add MODEL PROFILE[,PROFILE]|share=GB [weight=W] [isolation=true]|gang=N [cores=N] [ram=N] [life=2h|open] [kind=job|tenant] [at=HOST:GPU@START]",
    ),
    ("remove", "remove VM: take a VM out of the fleet"),
    (
        "move",
        "move VM HOST GPU@START[,GPU@START]: move a running VM by hand",
    ),
    (
        "step",
        "step [DURATION|next]: one 10 s step, a duration (90s, 15m, 1h30m, 2d) or to the next event",
    ),
    ("next", "next: step to the next departure or arrival"),
    ("play", "play: start or stop the clock"),
    ("arrivals", "arrivals on|off|toggle: workload arrivals"),
    (
        "optimize",
        "optimize [auto|admission|consolidation|opt]: run an OrigaMIG call",
    ),
    ("apply", "apply: execute the previewed plan"),
    ("discard", "discard: drop the previewed plan"),
    ("plan-step", "plan-step: play one phase of the next plan step"),
    (
        "relayout",
        "relayout [LAYOUT]: preview a new layout of the selected GPU (drains its host)",
    ),
    (
        "mode",
        "mode GPU whole|shared|mig LAYOUT: preview a GPU's mode change as a drain; mode! applies it",
    ),
    (
        "defrag",
        "defrag [N|HOST/GPU]: preview the defragmentation plan (shares repacked, MIG tenants restarted at their next deploy) for a pending gang, N free GPUs or one GPU",
    ),
    ("undo", "undo: take back the last change"),
    ("redo", "redo: redo what undo took back"),
    ("policy", "policy NAME|next: switch the arrival policy"),
    ("w", "w [FILE]: save the scenario (atomically)"),
    ("e", "e FILE: open a scenario file"),
    (
        "q",
        "q: quit (asks when there are unsaved changes); q! quits anyway",
    ),
];

/// Parses a `:` command (the palette and the key bindings share these names) into an action.
/// Commands that only concern the screen (help, quit, moving the cursor) are handled by the
/// front end before this.
pub fn parse_command(s: &Session, line: &str) -> Result<Action> {
    let line = line.trim().trim_start_matches(':');
    let mut words = line.split_whitespace();
    let Some(cmd) = words.next() else {
        bail!("empty command");
    };
    let rest: Vec<&str> = words.collect();
    let arg = rest.join(" ");
    let vm_id = |t: Option<&&str>| -> Result<VmId> {
        let t = t.ok_or_else(|| anyhow!("`{cmd}` needs a VM id"))?;
        t.trim_start_matches('#')
            .parse()
            .map_err(|_| anyhow!("`{t}` is not a VM id"))
    };
    Ok(match cmd {
        "step" | "s" => {
            if arg.is_empty() {
                Action::Step
            } else if arg == "next" || arg == "event" {
                Action::StepToNextEvent
            } else {
                Action::StepFor(parse_positive_duration(&arg)?)
            }
        }
        "next" | "next-event" => Action::StepToNextEvent,
        "play" | "pause" => Action::TogglePlay,
        "arrivals" => Action::SetArrivals(match arg.as_str() {
            "on" => true,
            "off" => false,
            "toggle" | "" => !s.arrivals(),
            o => bail!("`arrivals {o}`: say on, off or toggle"),
        }),
        "optimize" | "opt" | "o" => Action::Optimize(parse_call_mode(&arg)?),
        "apply" => Action::ApplyPlan,
        "discard" => Action::DiscardPlan,
        "plan-step" => Action::PlanStep,
        "undo" | "u" => Action::Undo,
        "redo" => Action::Redo,
        "w" | "write" | "save" => Action::Save(if arg.is_empty() {
            None
        } else {
            Some(PathBuf::from(arg))
        }),
        "e" | "edit" | "open" => {
            if arg.is_empty() {
                bail!("`:e` needs a file name");
            }
            Action::Open(PathBuf::from(arg))
        }
        "policy" => {
            let names = PolicyKind::PLANNER;
            if arg.is_empty() {
                bail!("`:policy` needs a name: {}", PolicyKind::list(&names));
            }
            if arg == "next" {
                let i = names
                    .iter()
                    .position(|n| n.name() == s.policy_name())
                    .unwrap_or(0);
                Action::SetPolicy(names[(i + 1) % names.len()].name().to_string())
            } else {
                Action::SetPolicy(arg)
            }
        }
        "rm" | "remove" => Action::RemoveVm(vm_id(rest.first())?),
        "mv" | "move" => {
            // move VM HOST GPU@START[,GPU@START]
            let vm = vm_id(rest.first())?;
            let (Some(host), Some(at)) = (rest.get(1), rest.get(2)) else {
                bail!("usage: move VM HOST GPU@START[,GPU@START]");
            };
            Action::MoveVm {
                vm,
                to: parse_placement(s.fleet(), host, at)?,
            }
        }
        "add" => Action::AddVm(parse_add(s, &rest)?),
        "mode" | "mode!" => {
            let usage = "usage: mode HOST/GPU whole|shared|mig LAYOUT";
            let Some(gpu) = rest.first() else {
                bail!("{usage}");
            };
            let fleet = s.fleet();
            let (host, gpu) = crate::ops::mode::parse_gpu_ref(fleet, gpu)
                .map_err(|e| anyhow!("no GPU `{gpu}`: {e}; {usage}"))?;
            let target = crate::ops::mode::parse_target(fleet, host, gpu, &rest[1..])
                .map_err(|e| anyhow!("{e}; {usage}"))?;
            if cmd == "mode!" {
                Action::SetMode { host, gpu, target }
            } else {
                Action::PreviewMode { host, gpu, target }
            }
        }
        "defrag" => {
            use crate::ops::defrag::Goal;
            let fleet = s.fleet();
            Action::Defrag(match rest.as_slice() {
                [] => Goal::Auto,
                [w] => match w.parse::<usize>() {
                    Ok(n) => Goal::FreeGpus(n),
                    Err(_) => {
                        let (h, k) = crate::ops::mode::parse_gpu_ref(fleet, w).map_err(|e| {
                            anyhow!("`defrag {w}`: say a number of free GPUs or a GPU as HOST/GPU ({e})")
                        })?;
                        Goal::Gpu(h, k)
                    }
                },
                _ => bail!("usage: defrag [N|HOST/GPU]"),
            })
        }
        other => bail!("unknown command `{other}` (press ? for the list)"),
    })
}

/// `HOST` and `GPU@START[,GPU@START]` into a placement.
pub(crate) fn parse_placement(fleet: &Fleet, host: &str, at: &str) -> Result<Placement> {
    let h = fleet
        .hosts
        .iter()
        .position(|x| x.name == host)
        .or_else(|| host.parse::<usize>().ok().filter(|&i| i < fleet.hosts.len()))
        .ok_or_else(|| anyhow!("no host `{host}`"))?;
    let gis = at
        .split(',')
        .map(|a| {
            let (g, z) = a
                .split_once('@')
                .ok_or_else(|| anyhow!("`{a}` is not GPU@START (for example 0@4)"))?;
            Ok(GiSlot {
                gpu: g
                    .trim()
                    .parse()
                    .map_err(|_| anyhow!("`{g}` is not a GPU index"))?,
                start: z
                    .trim()
                    .parse()
                    .map_err(|_| anyhow!("`{z}` is not a start slice"))?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Placement { host: h, gis })
}

/// `add MODEL PROFILE[,PROFILE] [cores=N] [ram=N] [life=2h|open] [kind=job|tenant] [at=HOST:GPU@START,..]`.
fn parse_add(s: &Session, words: &[&str]) -> Result<VmRequest> {
    let usage = "usage: add MODEL PROFILE[,PROFILE]|share=GB [weight=W] [isolation=true]|gang=N [cores=N] \
                 [ram=N] [life=2h|open] [kind=job|tenant] [at=HOST:GPU@START]";
    let (Some(model), Some(profiles)) = (words.first(), words.get(1)) else {
        bail!("{usage}");
    };
    if profiles.starts_with("share=") || profiles.starts_with("gang=") {
        return parse_add_shape(s, model, &words[1..], usage);
    }
    let catalog = s.fleet().catalog;
    let m = catalog
        .model_id(model)
        .ok_or_else(|| anyhow!("unknown GPU model `{model}` (known: {})", catalog.model_names()))?;
    let gm = catalog.model(m);
    let mut gis = Vec::new();
    for p in profiles.split(',') {
        let profile = gm.profile(p).ok_or_else(|| {
            anyhow!(
                "unknown profile `{p}` for {} (known: {})",
                gm.name,
                gm.profile_names()
            )
        })?;
        gis.push(GiRequest { model: m, profile });
    }
    let compute: u32 = gis.iter().map(|g| gm.profiles[g.profile].compute as u32).sum();
    let mut req = VmRequest {
        gis,
        cores: 4 * compute,
        ram_gb: 16 * compute,
        lifetime_s: None,
        kind: VmKind::Job,
        tenant: None,
        pin: None,
        shape: crate::fleet::Shape::Mig,
    };
    add_options(s, &mut req, &words[2..], usage)?;
    Ok(req)
}

/// `add MODEL share=GB [weight=W] [isolation=true|false] ...` or `add MODEL gang=N ...`: a soft
/// share (default weight: its memory's part of the GPU) or a gang of N whole GPUs on one host.
fn parse_add_shape(s: &Session, model: &str, words: &[&str], usage: &str) -> Result<VmRequest> {
    let catalog = s.fleet().catalog;
    let m = catalog
        .model_id(model)
        .ok_or_else(|| anyhow!("unknown GPU model `{model}` (known: {})", catalog.model_names()))?;
    let mut req = VmRequest {
        gis: Vec::new(),
        cores: 4,
        ram_gb: 16,
        lifetime_s: None,
        kind: VmKind::Job,
        tenant: None,
        pin: None,
        shape: crate::fleet::Shape::Mig,
    };
    let (mut share, mut weight, mut isolation, mut gang) = (None, None, false, None);
    let mut rest = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some(("share", v)) => {
                share = Some(
                    v.parse::<u32>()
                        .map_err(|_| anyhow!("share=`{v}` is not a whole number of GB"))?,
                )
            }
            Some(("weight", v)) => {
                let x: f64 = v.parse().map_err(|_| anyhow!("weight=`{v}` is not a number"))?;
                if !(x.is_finite() && x > 0.0) {
                    bail!("weight=`{v}`: a compute weight is a number > 0");
                }
                weight = Some(x);
            }
            Some(("isolation", v)) => {
                isolation = match v {
                    "true" | "yes" => true,
                    "false" | "no" => false,
                    _ => bail!("isolation=`{v}`: true or false"),
                }
            }
            Some(("gang", v)) => {
                gang = Some(
                    v.parse::<u32>()
                        .map_err(|_| anyhow!("gang=`{v}` is not a number of GPUs"))?,
                )
            }
            _ => rest.push(*w),
        }
    }
    req.shape = match (share, gang) {
        (Some(gb), None) => {
            let cap = crate::fleet::gpu_gb(catalog, m);
            if gb == 0 || gb > cap {
                bail!("share={gb}: a share takes 1 to {cap} GB of a {model}");
            }
            crate::fleet::Shape::Share {
                model: m,
                gb,
                weight: weight.unwrap_or(gb as f64 / catalog.model(m).memory_gb),
                isolation,
            }
        }
        (None, Some(n)) => {
            let most = s.fleet().hosts.iter().map(|h| h.gpus.len()).max().unwrap_or(0) as u32;
            if n == 0 || n > most {
                bail!("gang={n}: a gang takes 1 to {most} GPUs of one host (the largest host here)");
            }
            req.cores = 8 * n;
            req.ram_gb = 64 * n;
            crate::fleet::Shape::Gang { model: m, gpus: n }
        }
        _ => bail!("say share=GB or gang=N, not both; {usage}"),
    };
    if weight.is_some() && share.is_none() {
        bail!("weight= goes with share=; {usage}");
    }
    add_options(s, &mut req, &rest, usage)?;
    Ok(req)
}

/// The `key=value` options every form of `add` takes.
fn add_options(s: &Session, req: &mut VmRequest, words: &[&str], usage: &str) -> Result<()> {
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| anyhow!("`{w}`: expected key=value; {usage}"))?;
        match k {
            "cores" => req.cores = v.parse().map_err(|_| anyhow!("cores=`{v}` is not a number"))?,
            "ram" => req.ram_gb = v.parse().map_err(|_| anyhow!("ram=`{v}` is not a number"))?,
            "life" | "lifetime" => {
                req.lifetime_s = if v == "open" {
                    None
                } else {
                    Some(parse_positive_duration(v)?)
                }
            }
            "kind" => {
                req.kind = match v {
                    "job" => VmKind::Job,
                    "tenant" => VmKind::Tenant,
                    _ => bail!("kind=`{v}`: job or tenant"),
                }
            }
            "tenant" => req.tenant = Some(v.to_string()),
            "at" => {
                let (host, at) = v
                    .split_once(':')
                    .ok_or_else(|| anyhow!("at=`{v}`: expected HOST:GPU@START"))?;
                req.pin = Some(parse_placement(s.fleet(), host, at)?);
            }
            _ => bail!("unknown option `{k}`; {usage}"),
        }
    }
    Ok(())
}
