//! The agent's modules import one way: from the CLI down to leaf modules, never
//! in circles. This test reads `agent/src`, builds the graph of `crate::` and
//! `super::` references between module files (test code left out), and fails
//! on any cycle, and on any import that points up the layers the README's
//! architecture section lists.
//!
//! A module file is `agent/src/a/b.rs` (`a::b`) or `agent/src/a/mod.rs` (`a`).
//! A child may use its parent (`a::b` → `a`): the parent is the module's face,
//! holding what its children share (`wire`'s `view!` macro and `Error`), as in
//! smoltcp. Every other edge counts: a parent's use of its children (by bare
//! name, `track::Tracker`), siblings, and modules elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first: a module may import only from its own layer or
/// lower ones (and, within a layer, never in a circle). Keep in step with the
/// README's "Layers" section.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "leaf",
        &[
            "units",
            "clock",
            "private_file",
            "digest",
            "auth",
            "tasks",
            "counters",
            "interfaces",
            "ethtool",
            "caps",
            "s3",
        ],
    ),
    ("wire", &["wire", "capture_file", "sidecar"]),
    (
        "stages",
        &["ring", "capture", "analyze", "follow", "traffic"],
    ),
    (
        "windows",
        &[
            "window",
            "recorder",
            "matcher",
            "packet_triggers",
            "baseline",
        ],
    ),
    (
        "delivery",
        &["deliver", "collect", "api", "config", "fleet"],
    ),
    (
        "agent",
        &[
            "agent",
            "wrap",
            "demo",
            "triggers_cmd",
            "selftest",
            "wireshark_profile",
        ],
    ),
    ("cli", &["cli", "main", "lib"]),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("agent/src")
}

/// Every module file: module path (`a::b`) → source text without its tests.
fn modules() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read agent/src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src_dir()).expect("under src");
            let mut parts: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if parts.last().map(String::as_str) == Some("tests") {
                continue; // a test-only file (`wire/tests.rs`)
            }
            if parts.last().map(String::as_str) == Some("mod") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read module");
            let text = match text.find("#[cfg(test)]\nmod tests") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            out.insert(parts.join("::"), text);
        }
    }
    out
}

/// The module file a path like `deliver::upload::Uploader` lands in: the longest
/// prefix that is a module.
fn resolve(path: &[&str], mods: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|m| mods.contains_key(m))
}

/// Paths named after `crate::` (with `use crate::{a, b::c}` groups opened)
/// and after `super::` (made absolute from `module`).
fn references(module: &str, text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let code = code_of(text);
    let me: Vec<&str> = module.split("::").collect();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", me[..me.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut paths = Vec::new();
            if rest.starts_with('{') {
                let end = matching_brace(rest);
                for item in split_top(&rest[1..end]) {
                    paths.push(item);
                }
            } else {
                paths.push(
                    rest.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                        .collect(),
                );
            }
            for p in paths {
                let mut full: Vec<String> = base.iter().map(|s| s.to_string()).collect();
                full.extend(p.split("::").map(|s| s.trim().to_string()).take_while(|s| {
                    !s.is_empty()
                        && !s.starts_with('{')
                        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
                }));
                out.push(full);
            }
        }
    }
    out
}

/// The text without comments (`//` to the end of a line; not `http://`).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // a comment, not `http://` in a string
            Some(i) if l[..i].trim().is_empty() || l[..i].ends_with(' ') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// `a, b::{c, d}, e` → `a`, `b::c`, `b::d`, `e`.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let bytes: Vec<char> = s.chars().collect();
    let mut items = Vec::new();
    for (i, c) in bytes.iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(bytes[start..i].iter().collect::<String>());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(bytes[start..].iter().collect::<String>());
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        match item.find("::{") {
            Some(i) => {
                let head = &item[..i];
                let inner = &item[i + 2..];
                let end = matching_brace(inner);
                for sub in split_top(&inner[1..end]) {
                    out.push(format!("{head}::{sub}"));
                }
            }
            None => out.push(item.to_string()),
        }
    }
    out
}

/// module → the modules it imports from (itself and its ancestors left out).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules();
    let mut g = BTreeMap::new();
    for (m, text) in &mods {
        let mut deps = BTreeSet::new();
        for path in references(m, text) {
            let parts: Vec<&str> = path.iter().map(String::as_str).collect();
            if let Some(target) = resolve(&parts, &mods) {
                if m != &target && !m.starts_with(&format!("{target}::")) {
                    deps.insert(target);
                }
            }
        }
        // A parent names its children without a prefix: `track::Tracker`.
        let prefix = format!("{m}::");
        for child in mods
            .keys()
            .filter(|c| c.starts_with(&prefix) && !c[prefix.len()..].contains("::"))
        {
            let name = format!("{}::", &child[prefix.len()..]);
            let code = code_of(text);
            if code.match_indices(&name).any(|(i, _)| {
                !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
            }) {
                deps.insert(child.clone());
            }
        }
        g.insert(m.clone(), deps);
    }
    g
}

fn layer_of(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or(module);
    LAYERS
        .iter()
        .position(|(_, mods)| mods.contains(&top))
        .unwrap_or_else(|| panic!("module `{top}` is in no layer: add it to LAYERS in tests/module_layers.rs and to the README's layers"))
}

#[test]
fn no_module_imports_from_a_module_that_imports_it() {
    let g = graph();
    // Tarjan-free: a cycle exists iff some edge a → b has a path b →* a.
    let mut cycles = Vec::new();
    for (a, deps) in &g {
        for b in deps {
            if let Some(path) = path_between(&g, b, a) {
                cycles.push(format!("{a} → {}", path.join(" → ")));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

fn path_between(
    g: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    to: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![from.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last().expect("non-empty").clone();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in g.get(&last).into_iter().flatten() {
            let mut p = path.clone();
            p.push(next.clone());
            stack.push(p);
        }
    }
    None
}

#[test]
fn imports_point_down_the_layers() {
    let g = graph();
    let mut upward = Vec::new();
    for (a, deps) in &g {
        for b in deps {
            if layer_of(b) > layer_of(a) {
                upward.push(format!(
                    "{a} ({}) imports {b} ({})",
                    LAYERS[layer_of(a)].0,
                    LAYERS[layer_of(b)].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_nested_imports() {
    let refs = references(
        "a::b",
        "use crate::{x::{Y, z::W}, v};\nuse super::c::D;\nlet q = crate::k::f(); // crate::ignored\n",
    );
    let flat: Vec<String> = refs.iter().map(|p| p.join("::")).collect();
    assert_eq!(flat, ["x::Y", "x::z::W", "v", "k::f", "a::c::D"]);
}
