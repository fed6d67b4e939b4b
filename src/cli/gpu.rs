//! `migplan gpu --model MODEL --place PROFILE@START[,...] [--explain PROFILE] [--json]`: one GPU
//! with the given GIs: its slice map, CF, per profile the free permitted starts and the capacity,
//! and optionally why a profile does or does not fit (Fig. 1).

use crate::catalog::{embedded, GpuModel, ProfileId};
use crate::explore::{self, Explanation, StartStatus};
use crate::mig::{self, Occupancy};
use serde_json::{json, Map, Value};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// GPU model (e.g. a100-40gb).
    #[arg(long)]
    pub model: String,
    /// GIs on the GPU as PROFILE@START, comma-separated or repeated (none: an empty GPU).
    #[arg(long, value_delimiter = ',')]
    pub place: Vec<String>,
    /// Explain why this profile does or does not fit (per permitted start, and after compaction).
    #[arg(long)]
    pub explain: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A profile of `model` by name (exact, else case-insensitive), or an error listing the names.
pub(crate) fn profile_by_name(model: &GpuModel, name: &str) -> anyhow::Result<ProfileId> {
    model
        .profile(name)
        .or_else(|| {
            model
                .profiles
                .iter()
                .position(|p| p.name.eq_ignore_ascii_case(name))
        })
        .ok_or_else(|| {
            anyhow::anyhow!(
                "unknown profile `{name}` for {}; profiles: {}",
                model.name,
                model.profile_names()
            )
        })
}

/// Parses `PROFILE@START` items into (profile, start) GIs.
pub(crate) fn parse_gis(model: &GpuModel, items: &[String]) -> anyhow::Result<Vec<(ProfileId, u8)>> {
    let mut gis = Vec::new();
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (name, start) = item
            .split_once('@')
            .ok_or_else(|| anyhow::anyhow!("`{item}`: expected PROFILE@START, e.g. 3g.20gb@4"))?;
        let p = profile_by_name(model, name.trim())?;
        let z: u8 = start.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "`{item}`: start `{start}` is not a slice number; permitted starts of {}: {}",
                model.profiles[p].name,
                join(&model.profiles[p].starts)
            )
        })?;
        gis.push((p, z));
    }
    Ok(gis)
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let catalog = embedded();
    let id = catalog.model_id(&a.model).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown GPU model `{}`; known models: {}",
            a.model,
            catalog.model_names()
        )
    })?;
    let model = catalog.model(id);
    if !model.mig {
        anyhow::bail!(
            "--model: {} has no MIG, so no slice map (its GPUs are whole or shared)",
            model.name
        );
    }
    let gis = parse_gis(model, &a.place)?;
    let occ = explore::build(model, &gis)?;
    let explanation = match &a.explain {
        Some(name) => {
            let p = profile_by_name(model, name)?;
            Some(explore::explain_gis(model, &gis, None, p)?)
        }
        None => None,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(model, &gis, &occ, explanation.as_ref())?)?
        );
    } else {
        print!("{}", render(model, &gis, &occ, explanation.as_ref()));
    }
    Ok(())
}

fn to_json(
    model: &GpuModel,
    gis: &[(ProfileId, u8)],
    occ: &Occupancy,
    e: Option<&Explanation>,
) -> anyhow::Result<Value> {
    let mut capacity = Map::new();
    let mut free = Map::new();
    for (p, prof) in model.profiles.iter().enumerate() {
        capacity.insert(prof.name.clone(), json!(mig::capacity(model, occ, p)));
        free.insert(
            prof.name.clone(),
            json!(mig::free_starts(model, occ, p).collect::<Vec<u8>>()),
        );
    }
    let mut v = json!({
        "model": model.name,
        "gis": gis.iter().map(|&(p, z)| json!({"profile": model.profiles[p].name, "start": z})).collect::<Vec<_>>(),
        "cf": mig::cf(model, occ),
        "memory_slices_used": occ.used_slices(),
        "compute_slices_used": occ.used_compute(model),
        "capacity": capacity,
        "free_starts": free,
    });
    if let Some(e) = e {
        v["explain"] = serde_json::to_value(e)?;
    }
    Ok(v)
}

/// The slice map: one cell per memory slice, each GI spanning its slices and labelled.
pub(crate) fn slice_map(model: &GpuModel, gis: &[(ProfileId, u8)]) -> String {
    let n = model.memory_slices as usize;
    // Inner cell width: room for every profile's name across its own size.
    let w = model
        .profiles
        .iter()
        .map(|p| {
            let g = p.size as usize;
            p.name.len().saturating_sub(g - 1).div_ceil(g)
        })
        .max()
        .unwrap_or(7)
        .max(5);
    let mut head = String::from(" ");
    let mut border = String::from("+");
    for u in 0..n {
        head.push_str(&format!("{:^w$} ", u));
        border.push_str(&"-".repeat(w));
        border.push('+');
    }
    let mut body = String::from("|");
    let mut u = 0usize;
    while u < n {
        if let Some(&(p, _)) = gis.iter().find(|&&(_, z)| z as usize == u) {
            let g = model.profiles[p].size as usize;
            let inner = g * w + (g - 1);
            body.push_str(&format!("{:^inner$}|", model.profiles[p].name));
            u += g;
        } else {
            body.push_str(&format!("{:^w$}|", "."));
            u += 1;
        }
    }
    format!("{}\n{border}\n{body}\n{border}\n", head.trim_end())
}

fn render(model: &GpuModel, gis: &[(ProfileId, u8)], occ: &Occupancy, e: Option<&Explanation>) -> String {
    let mut out = String::new();
    let list: Vec<String> = gis
        .iter()
        .map(|&(p, z)| format!("{}@{z}", model.profiles[p].name))
        .collect();
    out.push_str(&format!(
        "{}: {} GI(s){}{}\n",
        model.name,
        gis.len(),
        if gis.is_empty() { "" } else { ": " },
        list.join(", ")
    ));
    out.push_str(&slice_map(model, gis));
    out.push_str(&format!(
        "CF {} (paper profiles, +me left out)   memory slices {}/{}   compute slices {}/{}\n\n",
        mig::cf(model, occ),
        occ.used_slices(),
        model.memory_slices,
        occ.used_compute(model),
        model.compute_slices
    ));
    let rows: Vec<[String; 5]> = model
        .profiles
        .iter()
        .enumerate()
        .map(|(p, prof)| {
            let free: Vec<u8> = mig::free_starts(model, occ, p).collect();
            [
                prof.name.clone(),
                prof.size.to_string(),
                join(&prof.starts),
                if free.is_empty() { "-".into() } else { join(&free) },
                mig::capacity(model, occ, p).to_string(),
            ]
        })
        .collect();
    let header = ["profile", "size", "permitted starts", "free starts", "capacity"];
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |c: [&str; 5]| {
        format!(
            "{:<a$}  {:>b$}  {:<c$}  {:<d$}  {:>e$}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3],
            e = w[4]
        )
    };
    out.push_str(&line(header));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    if let Some(e) = e {
        out.push_str(&format!("\nexplain {}:\n", e.profile));
        for s in &e.starts {
            let what = match &s.status {
                StartStatus::Free => "free".to_string(),
                StartStatus::LimitReached => "slices free, but the instance limit is reached".to_string(),
                StartStatus::Occupied { slices, by } => {
                    let who: Vec<String> = by.iter().map(|b| format!("{}@{}", b.profile, b.start)).collect();
                    format!(
                        "blocked: slice(s) {} taken by {}",
                        explore::ranges(slices),
                        who.join(", ")
                    )
                }
            };
            let covers = if s.covers.0 == s.covers.1 {
                format!("slice {}", s.covers.0)
            } else {
                format!("slices {}-{}", s.covers.0, s.covers.1)
            };
            out.push_str(&format!("  start {} ({covers}): {what}\n", s.start));
        }
        out.push_str(&format!("  verdict: {}\n", e.reason));
        if let Some(c) = &e.compaction {
            let after: Vec<(ProfileId, u8)> = c.arrangement.iter().map(|g| (g.profile_id, g.start)).collect();
            out.push_str("  after compaction:\n");
            for l in slice_map(model, &after).lines() {
                out.push_str(&format!("  {l}\n"));
            }
        }
    }
    out
}

fn join(v: &[u8]) -> String {
    v.iter().map(|z| z.to_string()).collect::<Vec<_>>().join(",")
}
