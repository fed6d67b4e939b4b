//! One host's nvidia-smi capture: the text of
//!
//! ```text
//! { hostname; nproc; free -g;
//!   nvidia-smi --query-gpu=index,name,mig.mode.current,memory.total --format=csv;
//!   nvidia-smi mig -lgi; } > $(hostname).txt
//! ```
//!
//! with `nvidia-smi -q -x` (XML) accepted in place of the CSV query. The hostname, `nproc` and
//! `free -g` lines are optional. The `-lgi` table is parsed by fields, not by column offsets
//! (border widths differ between driver versions). Every instance is checked against the catalog:
//! its profile ID and name agree for the GPU's model, its size is the profile's, its start is
//! permitted and it overlaps no other instance. Errors are one line: file, line, field, rule.

use super::profiles;
use crate::catalog::{Catalog, ModelId, ProfileId};
use crate::mig::Occupancy;

/// One GPU instance as `nvidia-smi mig -lgi` shows it, checked against the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedGi {
    pub profile: ProfileId,
    pub start: u8,
    /// The GI ID nvidia-smi gave it.
    pub gi_id: u32,
    /// Line of its `-lgi` row.
    pub line: usize,
}

/// One GPU of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturedGpu {
    pub model: ModelId,
    pub product: String,
    pub mig_enabled: bool,
    /// Its instances, by start slice.
    pub gis: Vec<CapturedGi>,
}

/// One host's capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    pub file: String,
    /// From the hostname line, else the file's stem.
    pub host: String,
    /// From an `nproc` line.
    pub cores: Option<u32>,
    /// Total GiB from a `free -g` line.
    pub ram_gb: Option<u32>,
    /// In nvidia-smi index order.
    pub gpus: Vec<CapturedGpu>,
}

/// A GPU row before its instances are attached: index, product, MIG mode, line.
struct GpuRow {
    index: usize,
    product: String,
    mig: bool,
    line: usize,
}

/// An `-lgi` row as text fields: GPU, name, profile ID, GI ID, start, size, line.
struct GiRow {
    gpu: usize,
    name: String,
    profile_id: u32,
    gi_id: u32,
    start: u8,
    size: u8,
    line: usize,
}

/// Why a capture cannot be read: the file, the line when one is to blame, and what is wrong
/// (starting with the field or table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {problem}", line.map(|n| format!(":{n}")).unwrap_or_default())]
pub struct CaptureError {
    pub file: String,
    pub line: Option<usize>,
    pub problem: String,
}

impl CaptureError {
    fn new(file: &str, line: Option<usize>, problem: impl Into<String>) -> CaptureError {
        CaptureError {
            file: file.to_string(),
            line,
            problem: problem.into(),
        }
    }
}

fn is_hostname(l: &str) -> bool {
    !l.is_empty()
        && l.parse::<u64>().is_err()
        && l.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The sections found in a capture's text, before they are checked against each other.
#[derive(Default)]
struct Sections {
    host: Option<String>,
    cores: Option<u32>,
    ram_gb: Option<u32>,
    gpus: Option<Vec<GpuRow>>,
    gis: Option<Vec<GiRow>>,
}

/// Parses one capture; `stem` names the host when the capture has no hostname line.
pub fn parse(text: &str, file: &str, stem: &str, catalog: &Catalog) -> Result<Capture, CaptureError> {
    let lines: Vec<&str> = text.lines().collect();
    let sec = sections(&lines, file)?;
    let Some(rows) = sec.gpus else {
        return Err(CaptureError::new(file, None, "no GPU list: the capture needs `nvidia-smi --query-gpu=index,name,mig.mode.current,memory.total --format=csv` or `nvidia-smi -q -x`"));
    };
    let mut out_gpus = captured_gpus(&rows, file, catalog)?;
    let gis = match sec.gis {
        Some(g) => g,
        None if rows.iter().any(|r| r.mig) => {
            return Err(CaptureError::new(
                file,
                None,
                format!(
                    "no `nvidia-smi mig -lgi` table, but GPU {} has MIG enabled",
                    rows.iter().find(|r| r.mig).map(|r| r.index).unwrap_or(0)
                ),
            ))
        }
        None => Vec::new(),
    };
    let mut occ: Vec<Occupancy> = vec![Occupancy::empty(); out_gpus.len()];
    for g in gis {
        let n = out_gpus.len();
        let Some(gpu) = out_gpus.get_mut(g.gpu) else {
            return Err(CaptureError::new(
                file,
                Some(g.line),
                format!("GPU: GPU {} is not in the capture's GPU list ({n} GPUs)", g.gpu),
            ));
        };
        let gi = checked_gi(&g, gpu, &mut occ[g.gpu], file, catalog)?;
        gpu.gis.push(gi);
    }
    for g in &mut out_gpus {
        g.gis.sort_by_key(|x| x.start);
    }
    Ok(Capture {
        file: file.to_string(),
        host: sec.host.unwrap_or_else(|| stem.to_string()),
        cores: sec.cores,
        ram_gb: sec.ram_gb,
        gpus: out_gpus,
    })
}

/// Finds the hostname, `nproc`, `free -g`, the GPU list (CSV or XML) and the `-lgi` table.
fn sections(lines: &[&str], file: &str) -> Result<Sections, CaptureError> {
    let mut sec = Sections::default();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        let n = i + 1;
        if l.is_empty() {
            i += 1;
            continue;
        }
        if sec.host.is_none()
            && sec.cores.is_none()
            && sec.gpus.is_none()
            && sec.gis.is_none()
            && is_hostname(l)
        {
            sec.host = Some(l.to_string());
        } else if sec.cores.is_none() && sec.gpus.is_none() && l.parse::<u32>().is_ok() {
            sec.cores = l.parse::<u32>().ok();
        } else if let Some(rest) = l.strip_prefix("Mem:") {
            let total = rest.split_whitespace().next().unwrap_or("");
            let v = total.parse::<u32>().map_err(|_| {
                CaptureError::new(
                    file,
                    Some(n),
                    format!("free -g total: `{total}` is not a whole number of GiB"),
                )
            })?;
            sec.ram_gb = Some(v);
        } else if l.starts_with("index,") || l.starts_with("index ,") {
            let (rows, next) = parse_csv(lines, i, file)?;
            sec.gpus = Some(rows);
            i = next;
            continue;
        } else if l.contains("<nvidia_smi_log") {
            let (rows, next) = parse_xml(lines, i, file)?;
            sec.gpus = Some(rows);
            i = next;
            continue;
        } else if l.contains("GPU instances:") {
            let (rows, next) = parse_lgi(lines, i, file)?;
            sec.gis = Some(rows);
            i = next;
            continue;
        } else if l.starts_with("No MIG-enabled devices found") {
            sec.gis = Some(Vec::new());
        }
        i += 1;
    }
    Ok(sec)
}

/// The captured GPUs of the GPU list, in index order, without instances yet.
fn captured_gpus(rows: &[GpuRow], file: &str, catalog: &Catalog) -> Result<Vec<CapturedGpu>, CaptureError> {
    let err = |line: usize, field: &str, msg: String| {
        CaptureError::new(file, Some(line), format!("{field}: {msg}"))
    };
    let mut out = Vec::with_capacity(rows.len());
    for (k, r) in rows.iter().enumerate() {
        if r.index != k {
            return Err(err(
                r.line,
                "index",
                format!(
                    "GPU index {} out of order (expected {k}: indices run 0, 1, 2, ...)",
                    r.index
                ),
            ));
        }
        let Some(model) = profiles::model_of_product(catalog, &r.product) else {
            return Err(err(
                r.line,
                "name",
                format!(
                    "unknown GPU product `{}` (known: {})",
                    r.product,
                    profiles::known_products()
                ),
            ));
        };
        out.push(CapturedGpu {
            model,
            product: r.product.clone(),
            mig_enabled: r.mig,
            gis: Vec::new(),
        });
    }
    Ok(out)
}

/// One `-lgi` row checked against its GPU: MIG enabled, a profile whose ID and name agree, its
/// size, a permitted start, no overlap and the instance limit; added to the GPU's occupancy.
fn checked_gi(
    g: &GiRow,
    gpu: &CapturedGpu,
    o: &mut Occupancy,
    file: &str,
    catalog: &Catalog,
) -> Result<CapturedGi, CaptureError> {
    let err = |field: &str, msg: String| CaptureError::new(file, Some(g.line), format!("{field}: {msg}"));
    if !gpu.mig_enabled {
        return Err(err(
            "GPU",
            format!("GPU {} has MIG disabled but holds instance {}", g.gpu, g.gi_id),
        ));
    }
    let model = catalog.model(gpu.model);
    let by_name = profiles::resolve(model, &g.name);
    let profile = match (profiles::profile_of_id(model, g.profile_id), by_name) {
        (Some(p), Some(q)) if p == q => p,
        (Some(p), _) => {
            return Err(err(
                "Name",
                format!(
                    "profile ID {} is {} on {}, but the row names `{}`",
                    g.profile_id, model.profiles[p].name, model.name, g.name
                ),
            ))
        }
        (None, Some(q)) if profiles::gi_profile_id(model, q).is_none() => q,
        (None, _) => {
            return Err(err(
                "Profile ID",
                format!(
                    "no profile of {} has ID {} and name `{}` (profiles: {})",
                    model.name,
                    g.profile_id,
                    g.name,
                    model.profile_names()
                ),
            ))
        }
    };
    let prof = &model.profiles[profile];
    if g.size != prof.size {
        return Err(err(
            "Placement Start:Size",
            format!(
                "size {} but {} covers {} memory slice(s) on {}",
                g.size, prof.name, prof.size, model.name
            ),
        ));
    }
    if !prof.starts.contains(&g.start) {
        let starts: Vec<String> = prof.starts.iter().map(u8::to_string).collect();
        return Err(err(
            "Placement Start:Size",
            format!(
                "start {} is not a permitted start of {} on {} (permitted: {})",
                g.start,
                prof.name,
                model.name,
                starts.join(", ")
            ),
        ));
    }
    if o.mask & prof.mask_at(g.start) != 0 {
        return Err(err(
            "Placement Start:Size",
            format!(
                "instance {} ({} at {}:{}) overlaps another instance on GPU {}",
                g.gi_id, prof.name, g.start, g.size, g.gpu
            ),
        ));
    }
    if !o.can_place(model, profile, g.start) {
        return Err(err(
            "Name",
            format!(
                "GPU {} holds more than {} instance(s) of {}",
                g.gpu, prof.max_instances, prof.name
            ),
        ));
    }
    o.add(model, profile, g.start);
    Ok(CapturedGi {
        profile,
        start: g.start,
        gi_id: g.gi_id,
        line: g.line,
    })
}

/// The CSV of `--query-gpu=index,name,mig.mode.current,...`: header at `at`; rows until a line
/// that is not CSV. Returns the rows and the index of the first line after them.
fn parse_csv(lines: &[&str], at: usize, file: &str) -> Result<(Vec<GpuRow>, usize), CaptureError> {
    let header: Vec<String> = lines[at].split(',').map(|s| s.trim().to_string()).collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name || h.starts_with(&format!("{name} ")))
    };
    let (Some(ci), Some(cn), Some(cm)) = (col("index"), col("name"), col("mig.mode.current")) else {
        return Err(CaptureError::new(
            file,
            Some(at + 1),
            "CSV header: needs the columns index, name and mig.mode.current",
        ));
    };
    let mut rows = Vec::new();
    let mut i = at + 1;
    while i < lines.len() {
        let l = lines[i].trim();
        let n = i + 1;
        if l.is_empty() || l.starts_with(['+', '|']) || !l.contains(',') {
            break;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != header.len() {
            return Err(CaptureError::new(
                file,
                Some(n),
                format!(
                    "CSV row: {} fields where the header has {} (truncated row?)",
                    f.len(),
                    header.len()
                ),
            ));
        }
        let index = f[ci].parse::<usize>().map_err(|_| {
            CaptureError::new(file, Some(n), format!("index: `{}` is not a GPU index", f[ci]))
        })?;
        let mig = match f[cm] {
            "Enabled" => true,
            "Disabled" | "[N/A]" | "N/A" => false,
            other => {
                return Err(CaptureError::new(
                    file,
                    Some(n),
                    format!("mig.mode.current: `{other}` is not Enabled, Disabled or [N/A]"),
                ))
            }
        };
        rows.push(GpuRow {
            index,
            product: f[cn].to_string(),
            mig,
            line: n,
        });
        i += 1;
    }
    if rows.is_empty() {
        return Err(CaptureError::new(
            file,
            Some(at + 1),
            "CSV: a header but no GPU rows",
        ));
    }
    Ok((rows, i))
}

/// Text between `<tag>` and `</tag>` within `s`, with its byte offset.
fn tag<'a>(s: &'a str, name: &str) -> Option<(usize, &'a str)> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let a = s.find(&open)? + open.len();
    let b = a + s[a..].find(&close)?;
    Some((a, s[a..b].trim()))
}

/// The XML of `nvidia-smi -q -x` from line `at`: one GPU per `<gpu id=...>` element, in order,
/// with `<product_name>` and `<mig_mode><current_mig>`.
fn parse_xml(lines: &[&str], at: usize, file: &str) -> Result<(Vec<GpuRow>, usize), CaptureError> {
    let end = (at..lines.len())
        .find(|&i| lines[i].contains("</nvidia_smi_log>"))
        .ok_or_else(|| {
            CaptureError::new(
                file,
                Some(at + 1),
                "nvidia_smi_log: no closing tag (truncated XML)",
            )
        })?;
    let xml = lines[at..=end].join("\n");
    let line_at = |off: usize| at + 1 + xml[..off].matches('\n').count();
    let mut rows = Vec::new();
    let mut from = 0;
    while let Some(p) = xml[from..].find("<gpu id=") {
        let start = from + p;
        let Some(len) = xml[start..].find("</gpu>") else {
            return Err(CaptureError::new(
                file,
                Some(line_at(start)),
                "gpu: no closing tag (truncated XML)",
            ));
        };
        let body = &xml[start..start + len];
        let Some((off, product)) = tag(body, "product_name") else {
            return Err(CaptureError::new(
                file,
                Some(line_at(start)),
                "product_name: missing in <gpu>",
            ));
        };
        let mig = match tag(body, "mig_mode").and_then(|(_, m)| tag(m, "current_mig")) {
            Some((_, "Enabled")) => true,
            Some((_, "Disabled")) | Some((_, "N/A")) | None => false,
            Some((moff, other)) => {
                return Err(CaptureError::new(
                    file,
                    Some(line_at(start + moff)),
                    format!("current_mig: `{other}` is not Enabled, Disabled or N/A"),
                ))
            }
        };
        rows.push(GpuRow {
            index: rows.len(),
            product: product.to_string(),
            mig,
            line: line_at(start + off),
        });
        from = start + len;
    }
    if rows.is_empty() {
        return Err(CaptureError::new(
            file,
            Some(at + 1),
            "nvidia_smi_log: no <gpu> element",
        ));
    }
    Ok((rows, end + 1))
}

/// The boxed `nvidia-smi mig -lgi` table whose title is at `at`: header lines down to the `===`
/// rule, then rows separated by `+---+` borders; the table ends at its last border.
fn parse_lgi(lines: &[&str], at: usize, file: &str) -> Result<(Vec<GiRow>, usize), CaptureError> {
    let mut i = at + 1;
    while i < lines.len() && !lines[i].trim().starts_with("|=") {
        if !lines[i].trim().starts_with('|') {
            return Err(CaptureError::new(
                file,
                Some(i + 1),
                "GPU instances: the header ends before its `===` rule (truncated table)",
            ));
        }
        i += 1;
    }
    if i >= lines.len() {
        return Err(CaptureError::new(
            file,
            Some(at + 1),
            "GPU instances: no `===` rule under the header (truncated table)",
        ));
    }
    i += 1;
    let mut rows = Vec::new();
    let mut closed = false;
    while i < lines.len() {
        let l = lines[i].trim();
        let n = i + 1;
        if l.starts_with('+') {
            closed = true;
            i += 1;
            continue;
        }
        if !l.starts_with('|') {
            break;
        }
        closed = false;
        let inner = l.trim_matches('|');
        let f: Vec<&str> = inner.split_whitespace().collect();
        if f.len() < 5 || !f[f.len() - 1].contains(':') {
            return Err(CaptureError::new(file, Some(n), "GPU instances row: expected GPU, Name, Profile ID, Instance ID and Placement Start:Size (truncated row?)"));
        }
        let k = f.len();
        let gpu = f[0]
            .parse()
            .map_err(|_| CaptureError::new(file, Some(n), format!("GPU: `{}` is not a GPU index", f[0])))?;
        let profile_id = f[k - 3].parse().map_err(|_| {
            CaptureError::new(
                file,
                Some(n),
                format!("Profile ID: `{}` is not a number", f[k - 3]),
            )
        })?;
        let gi_id = f[k - 2].parse().map_err(|_| {
            CaptureError::new(
                file,
                Some(n),
                format!("Instance ID: `{}` is not a number", f[k - 2]),
            )
        })?;
        let (z, s) = f[k - 1].split_once(':').unwrap_or(("", ""));
        let (Ok(start), Ok(size)) = (z.parse::<u8>(), s.parse::<u8>()) else {
            return Err(CaptureError::new(
                file,
                Some(n),
                format!("Placement Start:Size: `{}` is not START:SIZE", f[k - 1]),
            ));
        };
        rows.push(GiRow {
            gpu,
            name: f[1..k - 3].join(" "),
            profile_id,
            gi_id,
            start,
            size,
            line: n,
        });
        i += 1;
    }
    if !closed {
        return Err(CaptureError::new(
            file,
            Some(i),
            "GPU instances: the table ends without its closing border (truncated table)",
        ));
    }
    Ok((rows, i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;

    const OK: &str = "\
gpu-a
64
               total        used        free      shared  buff/cache   available
Mem:             503          41         455           0           6         458
Swap:              0           0           0
index, name, mig.mode.current, memory.total [MiB]
0, NVIDIA A100-SXM4-40GB, Enabled, 40960 MiB
1, NVIDIA A100-SXM4-40GB, Disabled, 40960 MiB
+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 1g.5gb          19        7          4:1     |
+-------------------------------------------------------+
|   0  MIG 3g.20gb          9        2          0:4     |
+-------------------------------------------------------+
";

    #[test]
    fn a_capture_gives_host_resources_gpus_and_instances() {
        let c = parse(OK, "gpu-a.txt", "gpu-a", embedded()).unwrap();
        assert_eq!(c.host, "gpu-a");
        assert_eq!((c.cores, c.ram_gb), (Some(64), Some(503)));
        assert_eq!(c.gpus.len(), 2);
        assert!(!c.gpus[1].mig_enabled);
        let starts: Vec<(u8, u32)> = c.gpus[0].gis.iter().map(|g| (g.start, g.gi_id)).collect();
        assert_eq!(starts, [(0, 2), (4, 7)]);
    }

    fn bad(from: &str, to: &str) -> String {
        parse(&OK.replace(from, to), "h.txt", "h", embedded())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn captures_that_break_the_rules_are_one_line_errors() {
        let e = bad("4:1", "7:1");
        assert!(e.starts_with("h.txt:14: Placement Start:Size: start 7"), "{e}");
        let e = bad("0:4", "2:4");
        assert!(e.contains("start 2 is not a permitted start of 3g.20gb"), "{e}");
        let e = bad("4:1     |", "1:1     |");
        assert!(e.starts_with("h.txt:16:") && e.contains("overlaps"), "{e}");
        let e = bad("A100-SXM4-40GB, Enabled", "Tesla T4, Enabled");
        assert!(
            e.starts_with("h.txt:7: name: unknown GPU product `NVIDIA Tesla T4`"),
            "{e}"
        );
        let e = bad("MIG 1g.5gb          19", "MIG 2g.10gb         19");
        assert!(e.contains("profile ID 19 is 1g.5gb"), "{e}");
        let e = bad("4:1", "4:2");
        assert!(e.contains("size 2"), "{e}");
        let truncated: String = OK.lines().take(14).collect::<Vec<_>>().join("\n");
        let e = parse(&truncated, "h.txt", "h", embedded())
            .unwrap_err()
            .to_string();
        assert!(e.contains("truncated table"), "{e}");
        let e = bad(
            "0, NVIDIA A100-SXM4-40GB, Enabled, 40960 MiB",
            "0, NVIDIA A100-SXM4-40GB",
        );
        assert!(e.starts_with("h.txt:7: CSV row"), "{e}");
        assert!(e.lines().count() == 1);
    }

    #[test]
    fn truncated_or_damaged_captures_never_panic() {
        let lines: Vec<&str> = OK.lines().collect();
        let mut texts: Vec<String> = (0..=OK.len())
            .filter(|&i| OK.is_char_boundary(i))
            .map(|i| OK[..i].to_string())
            .collect();
        for skip in 0..lines.len() {
            let t: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .map(|(_, l)| *l)
                .collect();
            texts.push(t.join("\n"));
        }
        for t in &texts {
            if let Err(e) = parse(t, "h.txt", "h", embedded()) {
                let e = e.to_string();
                assert!(e.starts_with("h.txt") && !e.contains('\n'), "{e}");
            }
        }
    }
}
