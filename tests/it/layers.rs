//! The layer check: `docs/layers.txt` lists the top-level modules of `src/` layer by layer,
//! lowest first; a module may use (through a `crate::<module>` path) modules of its own layer and
//! of lower ones, never of a higher one. Every top-level module declared in `src/lib.rs` must be
//! listed.
//!
//! The checker works on text: comments, string and character literals are blanked, then every
//! `crate::<module>` path (in `use` lines, grouped `use crate::{a, b}` included, and inline
//! paths) is found with its line.

use std::collections::HashMap;
use std::path::Path;

/// Layer of each module (0 = lowest), from the text of a layers file.
fn parse_layers(text: &str) -> Result<HashMap<String, usize>, String> {
    let mut layer_of = HashMap::new();
    let mut layer = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        for module in line.split_whitespace() {
            if layer_of.insert(module.to_string(), layer).is_some() {
                return Err(format!("line {}: module `{module}` listed twice", i + 1));
            }
        }
        layer += 1;
    }
    Ok(layer_of)
}

/// `text` with comments, string literals and character literals replaced by spaces (newlines
/// kept, so byte offsets and line numbers are those of the source).
fn blank_non_code(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let (mut j, mut depth) = (i + 2, 1);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && (i == 0 || !is_ident(c[i - 1])) {
            // Raw string r"..." or r#"..."#.
            let hashes = (i + 1..c.len()).take_while(|&j| c[j] == '#').count();
            let open = i + 1 + hashes;
            if c.get(open) != Some(&'"') {
                i += 1;
                continue;
            }
            let mut j = open + 1;
            while j < c.len() && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#'))) {
                j += 1;
            }
            let end = (j + 1 + hashes).min(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), or else a lifetime or label.
            if next == Some('\\') {
                let end = (i + 2..c.len())
                    .find(|&j| c[j] == '\'')
                    .map_or(c.len(), |j| j + 1);
                blank(&mut out, i, end);
                i = end;
            } else if c.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The top-level modules named by `crate::` paths in `text`, each with its 1-based line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let code: Vec<char> = blank_non_code(text).chars().collect();
    let line_at = |pos: usize| 1 + code[..pos].iter().filter(|&&ch| ch == '\n').count();
    let ident_at = |mut j: usize| -> Option<(usize, String)> {
        while j < code.len() && code[j].is_whitespace() {
            j += 1;
        }
        let name: String = code[j..].iter().take_while(|&&ch| is_ident(ch)).collect();
        (!name.is_empty()).then_some((j, name))
    };
    let pat: Vec<char> = "crate".chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + pat.len() < code.len() {
        let starts = code[i..].starts_with(&pat) && (i == 0 || !is_ident(code[i - 1]));
        if !starts {
            i += 1;
            continue;
        }
        // `crate`, optional spaces, `::`.
        let mut j = i + pat.len();
        while j < code.len() && code[j].is_whitespace() {
            j += 1;
        }
        if !(code.get(j) == Some(&':') && code.get(j + 1) == Some(&':')) {
            i += pat.len();
            continue;
        }
        j += 2;
        while j < code.len() && code[j].is_whitespace() {
            j += 1;
        }
        if code.get(j) == Some(&'{') {
            // A group: the first name of each item at depth one.
            let mut depth = 1;
            let mut item_start = true;
            j += 1;
            while j < code.len() && depth > 0 {
                match code[j] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => item_start = true,
                    ch if depth == 1 && item_start && !ch.is_whitespace() => {
                        item_start = false;
                        if let Some((at, name)) = ident_at(j) {
                            if name != "self" {
                                found.push((line_at(at), name));
                            }
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        } else if let Some((at, name)) = ident_at(j) {
            found.push((line_at(at), name));
        }
        i = j.max(i + 1);
    }
    found
}

/// The top-level module of a file under `src/`: `src/fleet.rs` and `src/fleet/tests.rs` are
/// `fleet`; `src/lib.rs` and `src/main.rs` belong to none.
fn module_of(rel: &str) -> Option<String> {
    let rest = rel.strip_prefix("src/")?;
    let first = rest.split('/').next()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (rest.contains('/') || !matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The modules declared in the text of `src/lib.rs`, each with its line.
fn lib_modules(text: &str) -> Vec<(usize, String)> {
    blank_non_code(text)
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "mod")?;
            let name = words.get(at + 1)?.trim_end_matches(';');
            let visibility_only = words[..at].iter().all(|w| w.starts_with("pub"));
            (visibility_only && line.trim_end().ends_with(';')).then(|| (i + 1, name.to_string()))
        })
        .collect()
}

/// Every violation: a module using one of a higher layer (named by file, line and both modules),
/// and a module of `lib.rs` missing from the layers. `files` are (path from the crate root, text).
fn check(layers_text: &str, lib_rs: &str, files: &[(String, String)]) -> Vec<String> {
    let layer_of = match parse_layers(layers_text) {
        Ok(l) => l,
        Err(e) => return vec![format!("docs/layers.txt: {e}")],
    };
    let mut problems = Vec::new();
    for (line, m) in lib_modules(lib_rs) {
        if !layer_of.contains_key(&m) {
            problems.push(format!(
                "src/lib.rs:{line}: module `{m}` is missing from docs/layers.txt"
            ));
        }
    }
    for (path, text) in files {
        let Some(own) = module_of(path) else { continue };
        let Some(&own_layer) = layer_of.get(&own) else {
            continue; // reported above when lib.rs declares it
        };
        for (line, used) in crate_paths(text) {
            if let Some(&used_layer) = layer_of.get(&used) {
                if used_layer > own_layer {
                    problems.push(format!(
                        "{path}:{line}: `{own}` (layer {}) uses `crate::{used}` (layer {}, higher)",
                        own_layer + 1,
                        used_layer + 1
                    ));
                }
            }
        }
    }
    problems
}

fn rust_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
            out.push((rel, text));
        }
    }
}

#[test]
fn src_follows_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), root, &mut files);
    assert!(files.len() > 10, "src/ holds only {} Rust files", files.len());
    let problems = check(&read("docs/layers.txt"), &read("src/lib.rs"), &files);
    assert!(problems.is_empty(), "layer violations:\n{}", problems.join("\n"));
}

const LAYERS: &str = "# lowest first\ncatalog\nmig explore\n\n# the fleet\nfleet\nsim\n";
const LIB: &str =
    "//! doc\npub mod catalog;\nmod explore;\npub mod fleet;\npub(crate) mod mig;\npub mod sim;\n";

fn one(path: &str, text: &str) -> Vec<String> {
    check(LAYERS, LIB, &[(path.to_string(), text.to_string())])
}

#[test]
fn layers_file_skips_comments_and_blank_lines() {
    let l = parse_layers(LAYERS).unwrap();
    assert_eq!(l["catalog"], 0);
    assert_eq!(l["mig"], 1);
    assert_eq!(l["explore"], 1);
    assert_eq!(l["fleet"], 2);
    assert_eq!(l["sim"], 3);
    assert_eq!(l.len(), 5);
    assert_eq!(
        parse_layers("a\nb a\n").unwrap_err(),
        "line 2: module `a` listed twice"
    );
}

#[test]
fn lower_and_same_layer_uses_pass() {
    let text = "use crate::catalog::Catalog;\nuse crate::mig;\nfn f() { crate::explore::run(); }\n";
    assert_eq!(one("src/mig/rules.rs", text), Vec::<String>::new());
    assert_eq!(
        one("src/sim.rs", "use crate::{catalog, fleet::Fleet};\n"),
        Vec::<String>::new()
    );
}

#[test]
fn a_use_of_a_higher_layer_names_file_line_and_both_modules() {
    let text = "use crate::catalog::Catalog;\n\nuse crate::sim::Simulator;\n";
    assert_eq!(
        one("src/fleet.rs", text),
        vec!["src/fleet.rs:3: `fleet` (layer 3) uses `crate::sim` (layer 4, higher)"]
    );
    // A file below the module's directory belongs to the module.
    assert_eq!(one("src/mig/tests.rs", text).len(), 1);
    assert!(one("src/mig/tests.rs", text)[0].starts_with("src/mig/tests.rs:3: `mig` (layer 2)"));
}

#[test]
fn inline_paths_and_groups_are_found() {
    let text = "fn f() {\n    let s = crate::sim::Simulator::new();\n}\n";
    assert_eq!(one("src/catalog.rs", text).len(), 1);
    assert!(one("src/catalog.rs", text)[0].starts_with("src/catalog.rs:2: `catalog`"));
    let group = "use crate::{\n    catalog::Catalog,\n    fleet::{Fleet, Vm},\n    self,\n};\n";
    let v = one("src/mig.rs", group);
    assert_eq!(
        v,
        vec!["src/mig.rs:3: `mig` (layer 2) uses `crate::fleet` (layer 3, higher)"]
    );
    assert_eq!(crate_paths("use crate :: sim;"), vec![(1, "sim".to_string())]);
    assert_eq!(
        crate_paths("pub(crate) fn f() {}\nlet x = my_crate::sim;"),
        vec![]
    );
}

#[test]
fn comments_strings_and_char_literals_are_skipped() {
    let text = concat!(
        "//! Talks about crate::sim.\n",
        "// use crate::sim::Simulator;\n",
        "/* crate::sim /* nested */ crate::sim */\n",
        "const S: &str = \"crate::sim\";\n",
        "const R: &str = r#\"crate::sim \"quoted\"\"#;\n",
        "const Q: char = '\"';\n",
        "fn f<'a>(x: &'a str) -> &'a str { x }\n",
        "use crate::fleet;\n",
    );
    // Only the last line counts: fleet is above catalog.
    assert_eq!(crate_paths(text), vec![(8, "fleet".to_string())]);
    assert_eq!(one("src/catalog.rs", text).len(), 1);
}

#[test]
fn a_module_of_lib_rs_missing_from_the_layers_fails() {
    let lib = format!("{LIB}pub mod tui;\n// pub mod old;\n");
    assert_eq!(
        check(LAYERS, &lib, &[]),
        vec!["src/lib.rs:7: module `tui` is missing from docs/layers.txt"]
    );
    assert_eq!(check(LAYERS, LIB, &[]), Vec::<String>::new());
    assert_eq!(
        check("a\na\n", LIB, &[]),
        vec!["docs/layers.txt: line 2: module `a` listed twice"]
    );
}

#[test]
fn files_outside_modules_are_not_checked() {
    assert_eq!(module_of("src/lib.rs"), None);
    assert_eq!(module_of("src/main.rs"), None);
    assert_eq!(module_of("src/fleet.rs").as_deref(), Some("fleet"));
    assert_eq!(
        module_of("src/policy/origamig/bilp.rs").as_deref(),
        Some("policy")
    );
    assert!(one("src/main.rs", "use crate::sim;\n").is_empty());
}
