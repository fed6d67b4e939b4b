//! The fleet in words for the TUI's panels: VM shapes and placements, durations, why a VM
//! does not fit, stranded capacity and the gauges. Pure functions of the fleet; the TUI draws
//! what they return.

use super::*;

/// `3g.20gb+1g.5gb` (or `no GPU`) and the cores and RAM of a VM.
pub fn shape(fleet: &Fleet, vm: &Vm) -> String {
    let gpu = match vm.shape {
        crate::fleet::Shape::Mig => profiles_label(fleet, &vm.gis),
        crate::fleet::Shape::Share {
            gb,
            weight,
            isolation,
            ..
        } => format!(
            "share {gb} GB w {weight:.2}{}",
            if isolation { " isolated" } else { "" }
        ),
        crate::fleet::Shape::Gang { gpus, .. } => format!("gang of {gpus} GPUs"),
    };
    format!("{gpu}, {}c {}G", vm.cores, vm.ram_gb)
}

/// The profiles of a list of GIs, `+`-joined.
pub(crate) fn profiles_label(fleet: &Fleet, gis: &[GiRequest]) -> String {
    if gis.is_empty() {
        return "no GPU".into();
    }
    gis.iter()
        .map(|g| fleet.catalog.model(g.model).profiles[g.profile].name.as_str())
        .collect::<Vec<_>>()
        .join("+")
}

/// `host/gpu@start` for each GI of a placement.
pub(crate) fn placement_label(fleet: &Fleet, p: &Placement) -> String {
    let name = fleet.hosts.get(p.host).map(|h| h.name.as_str()).unwrap_or("?");
    let slots = p
        .gis
        .iter()
        .map(|s| format!("{}@{}", s.gpu, s.start))
        .collect::<Vec<_>>()
        .join(",");
    if slots.is_empty() {
        name.to_string()
    } else {
        format!("{name}/{slots}")
    }
}

/// `2h30m`, `45s`, `3d4h`.
pub(crate) fn format_duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    let (d, h, m, sec) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = String::new();
    if d > 0 {
        out += &format!("{d}d");
    }
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 && d == 0 {
        out += &format!("{m}m");
    }
    if (sec > 0 && d == 0 && h == 0) || out.is_empty() {
        out += &format!("{sec}s");
    }
    out
}

/// Parses a positive duration for the session (a step of the clock, a VM's lifetime): `90s`,
/// `15m`, `1h30m`, `2d`, or a bare number of seconds, as [`crate::sim::parse_duration`] reads them.
pub(crate) fn parse_positive_duration(text: &str) -> Result<f64> {
    let s = crate::sim::parse_duration(text)?;
    if s <= 0.0 {
        bail!("duration `{}` must be longer than 0 s", text.trim());
    }
    Ok(s)
}

/// Why a VM cannot be placed now, in words: resources, class, and for each GI whether the
/// profile's free slices exist but are fragmented.
pub fn unplaced_reason(fleet: &Fleet, vm: &Vm) -> String {
    let catalog = fleet.catalog;
    if let Some(p) = fleet.ff_placement(vm) {
        return format!(
            "it fits now on {} (the arrival policy has not placed it yet)",
            placement_label(fleet, &p)
        );
    }
    let hosts_with_room = fleet
        .hosts
        .iter()
        .filter(|h| h.free_cores() >= vm.cores && h.free_ram() >= vm.ram_gb)
        .count();
    if hosts_with_room == 0 {
        return format!(
            "no host has {} free cores and {} GB free RAM",
            vm.cores, vm.ram_gb
        );
    }
    let mut parts = Vec::new();
    for g in &vm.gis {
        let model = catalog.model(g.model);
        let prof = &model.profiles[g.profile];
        let gpus: Vec<&crate::fleet::Gpu> = fleet
            .hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .filter(|x| catalog.same_class(g.model, x.model))
            .collect();
        if gpus.is_empty() {
            parts.push(format!("the fleet has no {} GPU", model.class));
            continue;
        }
        let fit = gpus
            .iter()
            .filter(|x| mig::capacity(model, &x.occ, g.profile) > 0)
            .count();
        if fit > 0 {
            continue;
        }
        let enough = gpus
            .iter()
            .filter(|x| (model.memory_slices as u32 - x.occ.used_slices()) >= prof.size as u32)
            .count();
        let compact = gpus
            .iter()
            .filter(|x| (model.memory_slices as u32 - x.occ.used_slices()) >= prof.size as u32)
            .filter(|x| crate::explore::explain(model, &x.occ, g.profile).fits_after_compaction())
            .count();
        let mut s = format!(
            "{} fits on none of the {} {} GPUs",
            prof.name,
            gpus.len(),
            model.class
        );
        if enough > 0 {
            s += &format!(
                "; {enough} have {} free slices but not at a permitted start",
                prof.size
            );
        }
        if compact > 0 {
            s += &format!("; {compact} would fit it after compaction (try the optimizer: o)");
        }
        parts.push(s);
    }
    if parts.is_empty() {
        // Each GI fits somewhere, but no single host has room for all of them and the cores.
        return format!(
            "no single host has room for all its GIs with {} cores and {} GB RAM",
            vm.cores, vm.ram_gb
        );
    }
    parts.join("; ")
}

/// The largest profile (by size, then compute) that could start at slice `u` of a GPU now;
/// `None` when no profile can (a stranded slice) or the slice is taken.
pub(crate) fn largest_start_at(
    model: &crate::catalog::GpuModel,
    occ: &Occupancy,
    u: u8,
) -> Option<ProfileId> {
    if occ.mask & (1 << u) != 0 {
        return None;
    }
    model
        .cf_profiles()
        .filter(|&p| occ.can_place(model, p, u))
        .max_by_key(|&p| {
            (
                model.profiles[p].size,
                model.profiles[p].compute,
                std::cmp::Reverse(p),
            )
        })
}

/// Stranded capacity per profile of every class in the fleet: free slices of the class
/// that a GI of the profile cannot use without moving anything.
pub fn stranded(fleet: &Fleet) -> Vec<Stranded> {
    let catalog = fleet.catalog;
    let mut classes: Vec<ModelId> = Vec::new();
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        if !classes.iter().any(|&c| catalog.same_class(c, g.model)) {
            classes.push(g.model);
        }
    }
    let mut out = Vec::new();
    for m in classes {
        let model = catalog.model(m);
        let gpus: Vec<&Occupancy> = fleet
            .hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .filter(|g| catalog.same_class(m, g.model))
            .map(|g| &g.occ)
            .collect();
        out.extend(
            crate::metrics::stranded_on(model, &gpus)
                .into_iter()
                .map(|(p, s)| Stranded {
                    model: m,
                    profile: p,
                    count: s.count,
                    share: s.share,
                }),
        );
    }
    out
}

/// Computes the gauges of a fleet at time `now_s`.
pub fn gauges(fleet: &Fleet, now_s: f64, energy_kwh: f64, acceptance: f64) -> Gauges {
    let catalog = fleet.catalog;
    let mut used = 0u32;
    let mut total_active = 0u32;
    // Gamma per class: active GPUs minus the GPUs the placed slices need at least (Eq. 17).
    let mut per_class: BTreeMap<String, (ModelId, i64, u32)> = BTreeMap::new();
    for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
        let model = catalog.model(g.model);
        let e = per_class.entry(model.class.clone()).or_insert((g.model, 0, 0));
        if !g.occ.is_empty() {
            used += g.occ.used_slices();
            total_active += model.memory_slices as u32;
            e.1 += 1;
        }
        e.2 += g.occ.used_slices();
    }
    let gamma = per_class
        .values()
        .map(|&(m, active, slices)| {
            let u = catalog.model(m).memory_slices as u32;
            (m, active - slices.div_ceil(u) as i64)
        })
        .collect();
    let pending = fleet
        .pending()
        .iter()
        .filter_map(|&id| fleet.vm(id))
        .map(|v| Waiting {
            vm: v.id,
            shape: shape(fleet, v),
            wait_s: (now_s - v.arrival).max(0.0),
            reason: unplaced_reason(fleet, v),
        })
        .collect();
    Gauges {
        active_hosts: fleet.active_hosts(),
        hosts: fleet.hosts.len(),
        active_gpus: fleet.active_gpus(),
        gpus: fleet.total_gpus(),
        least_gpus: crate::metrics::least_gpus(fleet),
        packing: if total_active == 0 {
            0.0
        } else {
            used as f64 / total_active as f64
        },
        stranded: stranded(fleet),
        capacity: crate::metrics::stranded_capacity(fleet),
        gamma,
        power_w: fleet.power_w(),
        energy_kwh,
        acceptance,
        pending,
        placed_vms: fleet.vms().filter(|v| v.placement.is_some()).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_positive_duration;

    #[test]
    fn planner_durations_are_positive_and_read_like_the_simulators() {
        assert_eq!(parse_positive_duration("1h30m").unwrap(), 5400.0);
        assert_eq!(parse_positive_duration(" 90 ").unwrap(), 90.0);
        for bad in ["0", "0s", "", "5x", "-3", "10m5"] {
            let e = parse_positive_duration(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(parse_positive_duration("0m")
            .unwrap_err()
            .to_string()
            .contains("longer than 0 s"));
    }
}
