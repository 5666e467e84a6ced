//! The file graph inside each folder module: which file defines the item a path names (through
//! a folder's `mod.rs` re-exports), for the rule that its files import each other in no cycle.

use super::*;

/// The file a source belongs to as a unit of the file graph: its module path, `/`-joined
/// (`cg/reduce/warp.rs` → `cg/reduce/warp`, `cg/reduce/mod.rs` → `cg/reduce`).
pub(crate) fn unit_of(rel: &str) -> String {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    rel.strip_suffix("/mod").unwrap_or(rel).to_string()
}

/// The file graph inside each folder module: `(file, file)` → the site, for a path in one
/// file of `cg/` (say) that names an item of another file of `cg/`. A path resolves to the
/// file that defines its item: through the re-exports (`pub use x::{…}`, `pub(crate) use …`)
/// of a folder's `mod.rs` to the file they come from (for a glob re-export, `pub use x::*`, the
/// names `x.rs` defines). A folder's `mod.rs` declaring and
/// re-exporting its files is not an import (as `lib.rs`'s are not); its other paths are.
pub(crate) fn file_edges(tree: &Tree) -> BTreeMap<(String, String), String> {
    let units: BTreeSet<String> = tree.keys().map(|r| unit_of(r)).collect();
    // Per folder unit: re-exported name → the child unit it comes from.
    let mut reexports: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut codes: BTreeMap<&String, String> = BTreeMap::new();
    // `(folder, child)` for each `pub use child::*;` of a folder's `mod.rs`.
    let mut globbed: Vec<(String, String)> = Vec::new();
    for (rel, text) in tree {
        let mut code = blank(text, false);
        if rel.ends_with("/mod.rs") {
            let unit = unit_of(rel);
            let map = reexports.entry(unit.clone()).or_default();
            // Each `pub… use child::…;` statement: record, then blank it.
            let mut from = 0;
            while let Some(k) = code[from..].find("use ") {
                let at = from + k;
                from = at + 4;
                let head = code[..at].trim_end();
                let glued = at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
                if glued || !(head.ends_with("pub") || head.ends_with(')')) {
                    continue;
                }
                let start = head.rfind("pub").unwrap_or(at);
                let end = at + code[at..].find(';').unwrap_or(code.len() - at);
                // `child::{a, b as c}` read as the tree `self::child::{…}`.
                for (_, _, p) in rooted_paths(&format!("self::{}", code[at + 4..end].trim())) {
                    let child = format!("{unit}/{}", p.get(1).map_or("", String::as_str));
                    if p.len() < 3 || !units.contains(&child) {
                        continue;
                    }
                    let last = &p[p.len() - 1];
                    if p.len() == 3 && last == "*" {
                        globbed.push((unit.clone(), child));
                    } else {
                        map.insert(last.strip_prefix("as:").unwrap_or(last).to_string(), child);
                    }
                }
                let blanked: String = code[start..end].chars().map(|c| if c == '\n' { c } else { ' ' }).collect();
                code.replace_range(start..end, &blanked);
            }
        }
        codes.insert(rel, code);
    }
    // `pub use child::*;`: every name the child's file defines (items and methods alike: a
    // method's name is never a path's, so it only widens the table) comes from the child, unless
    // named explicitly.
    for (unit, child) in globbed {
        let Some(code) = codes.iter().find(|(rel, _)| unit_of(rel) == child).map(|(_, c)| c.clone()) else { continue };
        let ws: Vec<(usize, &str)> = words(&code).collect();
        for pair in ws.windows(2) {
            if matches!(pair[0].1, "fn" | "struct" | "enum" | "union" | "trait" | "type" | "const" | "static" | "mod")
                || (pair[0].1 == "macro_rules" && code[pair[0].0..].starts_with("macro_rules!"))
            {
                reexports
                    .entry(unit.clone())
                    .or_default()
                    .entry(pair[1].1.to_string())
                    .or_insert_with(|| child.clone());
            }
        }
    }
    // The unit that defines the item a module path (from the crate root) names.
    let resolve = |path: &[String]| -> Option<String> {
        let mut unit = String::new();
        let mut i = 0;
        while i < path.len() {
            let next = if unit.is_empty() { path[i].clone() } else { format!("{unit}/{}", path[i]) };
            if units.contains(&next) {
                unit = next;
                i += 1;
            } else if let Some(child) = reexports.get(&unit).and_then(|m| m.get(&path[i])) {
                unit = child.clone(); // and look the same name up again there
            } else {
                break;
            }
        }
        (!unit.is_empty()).then_some(unit)
    };
    let mut edges = BTreeMap::new();
    for (rel, code) in &codes {
        let me = unit_of(rel);
        let folder = module_of(rel);
        if !rel.contains('/') {
            continue; // a file module: the module graph has it
        }
        // This file's module path, segments (`cg/reduce/warp` → [cg, reduce, warp]).
        let base: Vec<String> = me.split('/').map(str::to_string).collect();
        for (at, inline, mut p) in rooted_paths(code) {
            p.retain(|seg| !seg.starts_with("as:"));
            let (head, rest) = p.split_first().map(|(h, r)| (h.as_str(), r)).unwrap_or(("", &[]));
            let mut here: Vec<String> = base.iter().chain(&inline).cloned().collect();
            let abs: Vec<String> = match head {
                "crate" => rest.to_vec(),
                "self" => here.into_iter().chain(rest.iter().cloned()).collect(),
                "super" => {
                    let ups = p.iter().take_while(|s| *s == "super").count();
                    if ups > here.len() {
                        continue;
                    }
                    here.truncate(here.len() - ups);
                    here.into_iter().chain(p[ups..].iter().cloned()).collect()
                }
                _ => continue,
            };
            if abs.first() != Some(&folder) {
                continue;
            }
            let Some(to) = resolve(&abs) else { continue };
            if to != me {
                let shown = p.join("::");
                edges
                    .entry((me.clone(), to))
                    .or_insert_with(|| format!("src/{rel}:{} uses `{shown}`", line_of(code, at)));
            }
        }
    }
    edges
}
