//! The one reader of mig-parted config files, for every command that takes one (`import
//! mig-parted`, `import k8s --mig-config`, the read-back of `export k8s`).
//!
//! The format is mig-parted's (docs/fleet-import.md, "mig-parted configs"): `version: v1`, then
//! `mig-configs:` mapping a config name to a list of entries, each with `devices` (`all` or a
//! list of GPU indices), `mig-enabled`, optionally `mig-devices` (profile -> count) and
//! `device-filter` (PCI device IDs the entry is limited to). The GPU operator's ConfigMap holding
//! such a config under `data` (`config.yaml`) is read too.
//!
//! Input from a user is guarded before the YAML parser sees it: nesting deeper than
//! [`MAX_NESTING`] levels is refused at once (the parser's time grows with the square of the
//! depth), and every error names the file with a line and column where the YAML parser gives
//! one, or the key path of the field to blame.

use serde_yaml_ng::Value;
use std::collections::BTreeMap;

/// Deepest nesting of YAML collections accepted. A mig-parted config needs five levels; the
/// ConfigMap wrapping is a separate document.
pub(crate) const MAX_NESTING: usize = 64;

/// One entry of a config: the GPUs it names and what it sets on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// GPU indices; `None` for `devices: all`.
    pub devices: Option<Vec<usize>>,
    pub mig_enabled: bool,
    /// Instances per profile name, in file order.
    pub mig_devices: Vec<(String, u32)>,
    /// PCI device IDs (`0x20B010DE`) the entry is limited to; empty when it has no filter.
    pub device_filter: Vec<String>,
}

/// A config: its entries in file order.
pub type Config = Vec<Entry>;

/// Why a mig-parted file cannot be read: the file with a line and column, or the key path of
/// the field to blame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigPartedError {
    #[error("{file}:{line}:{column}: {problem}")]
    At {
        file: String,
        line: usize,
        column: usize,
        problem: String,
    },
    #[error("{file}: {problem}")]
    File { file: String, problem: String },
    #[error("{file}: {path}: {problem}")]
    Field {
        file: String,
        path: String,
        problem: String,
    },
}

fn field(file: &str, path: impl Into<String>, problem: impl Into<String>) -> MigPartedError {
    MigPartedError::Field {
        file: file.to_string(),
        path: path.into(),
        problem: problem.into(),
    }
}

/// Refuses YAML whose collections nest deeper than `max` levels, naming the line and column
/// where the limit is passed. Flow collections (`[`, `{`) and compact block sequences (`- - x`)
/// are counted; quoted scalars and comments are skipped. Linear in the text.
pub(crate) fn check_nesting(text: &str, file: &str, max: usize) -> Result<(), MigPartedError> {
    let deep = |line: usize, column: usize| MigPartedError::At {
        file: file.to_string(),
        line,
        column,
        problem: format!("nested more than {max} levels deep: refused"),
    };
    let mut flow = 0usize;
    for (i, l) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut dashes = 0usize;
        let mut leading = true;
        let mut prev = ' ';
        let mut chars = l.chars().enumerate().peekable();
        while let Some((c, ch)) = chars.next() {
            match quote {
                Some('\'') if ch == '\'' => quote = None,
                Some('"') if ch == '\\' => {
                    chars.next();
                }
                Some('"') if ch == '"' => quote = None,
                Some(_) => {}
                None => match ch {
                    '#' if prev == ' ' || prev == '\t' || c == 0 => break,
                    '\'' | '"' => {
                        quote = Some(ch);
                        leading = false;
                    }
                    '[' | '{' => {
                        flow += 1;
                        leading = false;
                        if flow > max {
                            return Err(deep(i + 1, c + 1));
                        }
                    }
                    ']' | '}' => {
                        flow = flow.saturating_sub(1);
                        leading = false;
                    }
                    '-' | '?' if leading && chars.peek().is_none_or(|&(_, n)| n == ' ') => {
                        dashes += 1;
                        if dashes > max {
                            return Err(deep(i + 1, c + 1));
                        }
                    }
                    ' ' | '\t' => {}
                    _ => leading = false,
                },
            }
            prev = ch;
        }
    }
    Ok(())
}

/// The line of the `n`-th (1-based) document start marker `---` of `text`, if any.
fn document_marker(text: &str, n: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| *l == "---" || l.starts_with("--- "))
        .nth(n - 1)
        .map(|(i, _)| i + 1)
}

/// The line of the second occurrence of mapping key `key` at one indentation, if found.
fn duplicate_key_line(text: &str, key: &str) -> Option<usize> {
    let mut seen: Vec<(usize, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let body = l.trim_start().trim_start_matches("- ");
        let indent = l.len() - body.len();
        let k = body.split(':').next().unwrap_or("").trim();
        let k = k.trim_matches('"').trim_matches('\'');
        if k == key && body.contains(':') {
            if seen.iter().any(|&(ind, _)| ind == indent) {
                return Some(i + 1);
            }
            seen.push((indent, i + 1));
        }
    }
    None
}

/// Parses one YAML document of user input into a value, after the nesting guard. Errors name
/// the file and, where one can be found, the line and column.
pub(crate) fn parse_yaml(text: &str, file: &str) -> Result<Value, MigPartedError> {
    check_nesting(text, file, MAX_NESTING)?;
    serde_yaml_ng::from_str(text).map_err(|e| yaml_error(text, file, &e))
}

/// A YAML parser error as one line with the best location there is.
pub(crate) fn yaml_error(text: &str, file: &str, e: &serde_yaml_ng::Error) -> MigPartedError {
    let msg = crate::catalog::one_line(&e.to_string());
    // The parser's own "at line L column C" suffix is replaced by the prefix.
    let problem = match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.clone(),
    };
    let problem = format!("not YAML: {problem}");
    // The parser places a duplicate key at its mapping; the line of the second key is better.
    let dup = problem
        .split("duplicate entry with key ")
        .nth(1)
        .and_then(|rest| duplicate_key_line(text, rest.trim().trim_matches('"')));
    if let Some(line) = dup {
        return MigPartedError::At {
            file: file.to_string(),
            line,
            column: 1,
            problem,
        };
    }
    if let Some(loc) = e.location() {
        return MigPartedError::At {
            file: file.to_string(),
            line: loc.line(),
            column: loc.column(),
            problem,
        };
    }
    let line = if msg.contains("more than one document") {
        // The second document starts at the second marker, or at the first when the text does
        // not open with one.
        let opens = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .is_some_and(|l| l == "---" || l.starts_with("--- "));
        document_marker(text, if opens { 2 } else { 1 })
    } else {
        None
    };
    match line {
        Some(line) => MigPartedError::At {
            file: file.to_string(),
            line,
            column: 1,
            problem,
        },
        None if msg.contains("repetition limit exceeded") => MigPartedError::File {
            file: file.to_string(),
            problem: "not YAML: its aliases (`*name`) expand past the parser's limit: refused".into(),
        },
        None => MigPartedError::File {
            file: file.to_string(),
            problem,
        },
    }
}

/// A value for a one-line message: YAML text, control characters escaped, at most 60 chars.
pub fn show(v: &Value) -> String {
    let s = serde_yaml_ng::to_string(v).unwrap_or_else(|_| "(value)".into());
    format!("`{}`", printable(s.trim()))
}

/// `s` fit for a one-line message: control characters escaped, at most 60 characters kept.
pub(crate) fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(60)
        .flat_map(|c| -> Vec<char> {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            }
        })
        .collect();
    if s.chars().count() > 60 {
        out.push_str("...");
    }
    out
}

/// Reads a mig-parted config, or the GPU operator's ConfigMap holding one, into its configs by
/// name (sorted). Unknown keys are refused with their path.
pub fn parse(text: &str, file: &str) -> Result<BTreeMap<String, Config>, MigPartedError> {
    let doc = parse_yaml(text, file)?;
    if doc.get("kind").and_then(Value::as_str) == Some("ConfigMap") {
        let data = doc
            .get("data")
            .and_then(Value::as_mapping)
            .ok_or_else(|| field(file, "data", "the ConfigMap has no `data` mapping"))?;
        let (key, inner) = match data.get("config.yaml").and_then(Value::as_str) {
            Some(t) => ("config.yaml".to_string(), t),
            None => data
                .iter()
                .find_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?)))
                .ok_or_else(|| field(file, "data", "the ConfigMap holds no mig-parted config"))?,
        };
        return parse(inner, &format!("{file} (ConfigMap data.{key})"));
    }
    let Value::Mapping(top) = &doc else {
        return Err(MigPartedError::File {
            file: file.to_string(),
            problem: "expected a mapping with `version` and `mig-configs`".into(),
        });
    };
    for k in top.keys() {
        if !matches!(k.as_str(), Some("version" | "mig-configs")) {
            return Err(field(
                file,
                printable(k.as_str().unwrap_or("?")),
                format!(
                    "unknown top-level key {} (a mig-parted config has `version` and `mig-configs`; \
                     a ConfigMap has `kind: ConfigMap`)",
                    show(k)
                ),
            ));
        }
    }
    match top.get("version") {
        Some(Value::String(v)) if v == "v1" => {}
        Some(v) => {
            return Err(field(
                file,
                "version",
                format!("{} is not supported (expected v1)", show(v)),
            ))
        }
        None => return Err(field(file, "version", "missing: expected `version: v1`")),
    }
    let Some(Value::Mapping(configs)) = top.get("mig-configs") else {
        return Err(field(
            file,
            "mig-configs",
            "missing or not a mapping of config names",
        ));
    };
    let mut out = BTreeMap::new();
    for (name, entries) in configs {
        let Some(name) = name.as_str() else {
            return Err(field(
                file,
                "mig-configs",
                format!("config name {} is not a string", show(name)),
            ));
        };
        let ctx = format!("mig-configs.{}", printable(name));
        let Value::Sequence(list) = entries else {
            return Err(field(file, &ctx, "expected a list of entries"));
        };
        let cfg = list
            .iter()
            .enumerate()
            .map(|(i, e)| entry(e, file, &format!("{ctx}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert(name.to_string(), cfg);
    }
    Ok(out)
}

/// One entry of a config; `ctx` is its key path.
fn entry(e: &Value, file: &str, ctx: &str) -> Result<Entry, MigPartedError> {
    let Value::Mapping(e) = e else {
        return Err(field(file, ctx, "expected a mapping"));
    };
    for k in e.keys() {
        if !matches!(
            k.as_str(),
            Some("devices" | "mig-enabled" | "mig-devices" | "device-filter")
        ) {
            return Err(field(
                file,
                ctx,
                format!(
                    "unknown key {} (supported: devices, mig-enabled, mig-devices, device-filter)",
                    show(k)
                ),
            ));
        }
    }
    let devices = match e.get("devices") {
        Some(Value::String(s)) if s == "all" => None,
        Some(Value::Sequence(list)) => {
            let mut ks = Vec::with_capacity(list.len());
            for (j, d) in list.iter().enumerate() {
                match d.as_u64().and_then(|k| usize::try_from(k).ok()) {
                    Some(k) => ks.push(k),
                    None => {
                        return Err(field(
                            file,
                            format!("{ctx}.devices[{j}]"),
                            format!("{} is not a GPU index", show(d)),
                        ))
                    }
                }
            }
            Some(ks)
        }
        Some(other) => {
            return Err(field(
                file,
                format!("{ctx}.devices"),
                format!("{} is neither `all` nor a list of GPU indices", show(other)),
            ))
        }
        None => return Err(field(file, format!("{ctx}.devices"), "missing")),
    };
    let mig_enabled = match e.get("mig-enabled") {
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(field(
                file,
                format!("{ctx}.mig-enabled"),
                format!("{} is not true or false", show(other)),
            ))
        }
        None => return Err(field(file, format!("{ctx}.mig-enabled"), "missing")),
    };
    let mut mig_devices = Vec::new();
    match e.get("mig-devices") {
        None => {}
        Some(Value::Mapping(m)) => {
            for (p, c) in m {
                let Some(p) = p.as_str() else {
                    return Err(field(
                        file,
                        format!("{ctx}.mig-devices"),
                        format!("profile {} is not a string", show(p)),
                    ));
                };
                let Some(c) = c.as_u64().and_then(|c| u32::try_from(c).ok()) else {
                    return Err(field(
                        file,
                        format!("{ctx}.mig-devices.{}", printable(p)),
                        format!("{} is not a count (a whole number up to {})", show(c), u32::MAX),
                    ));
                };
                mig_devices.push((p.to_string(), c));
            }
        }
        Some(other) => {
            return Err(field(
                file,
                format!("{ctx}.mig-devices"),
                format!("{} is not a mapping of profile to count", show(other)),
            ))
        }
    }
    if !mig_enabled && mig_devices.iter().any(|&(_, c)| c > 0) {
        return Err(field(
            file,
            format!("{ctx}.mig-devices"),
            "instances given with `mig-enabled: false`",
        ));
    }
    let device_filter = match e.get("device-filter") {
        None => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Sequence(list)) => list
            .iter()
            .enumerate()
            .map(|(j, d)| {
                d.as_str().map(str::to_string).ok_or_else(|| {
                    field(
                        file,
                        format!("{ctx}.device-filter[{j}]"),
                        format!("{} is not a PCI device ID string", show(d)),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(field(
                file,
                format!("{ctx}.device-filter"),
                format!("{} is neither a device ID nor a list of them", show(other)),
            ))
        }
    };
    Ok(Entry {
        devices,
        mig_enabled,
        mig_devices,
        device_filter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_in_flow_and_compact_block_collections() {
        let ok = "a: [[1, 2], {b: [3]}]\n- - x\n";
        assert!(check_nesting(ok, "f", 3).is_ok());
        let deep = format!("a: {}{}\n", "[".repeat(5), "]".repeat(5));
        let e = check_nesting(&deep, "f", 4).unwrap_err().to_string();
        assert_eq!(e, "f:1:8: nested more than 4 levels deep: refused");
        let dashes = format!("x:\n  {}y\n", "- ".repeat(5));
        assert!(check_nesting(&dashes, "f", 4)
            .unwrap_err()
            .to_string()
            .starts_with("f:2:"));
        // Brackets inside quotes and comments do not count.
        let quoted = format!(
            "a: \"{}\" # {}\nb: '{}'\n",
            "[".repeat(9),
            "{".repeat(9),
            "[".repeat(9)
        );
        assert!(check_nesting(&quoted, "f", 2).is_ok());
    }
}
