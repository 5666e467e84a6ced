//! The rules of the crate docs' tier table over the module graph: inline PTX only in `raw/`,
//! downward imports, a tier for every module, no cycles.

use super::*;

/// The module a source file belongs to: `""` for `lib.rs`, else its first path component
/// (`cg/grid.rs` → `cg`, `raw/mod.rs` → `raw`, `atomic.rs` → `atomic`).
pub(crate) fn module_of(rel: &str) -> String {
    if rel == "lib.rs" {
        return String::new();
    }
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// The tier table of `lib.rs`'s docs: module → tier, from the rows after the header
/// `| tier | modules | …`, each module a backticked name in the second column.
pub(crate) fn tier_table(lib: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut table = BTreeMap::new();
    let mut lines = lib.lines().map(|l| l.trim_start().strip_prefix("//!").map(str::trim));
    let header = |l: &str| {
        let cells: Vec<_> = l.split('|').map(str::trim).collect();
        cells.len() > 3 && cells[1] == "tier" && cells[2] == "modules"
    };
    if !lines.by_ref().any(|l| l.is_some_and(header)) {
        return Err("src/lib.rs: no tier table (a `| tier | modules | … |` table in the crate docs)".into());
    }
    for line in lines {
        let Some(line) = line.filter(|l| l.starts_with('|')) else { break };
        let cells: Vec<_> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 || cells[1].starts_with("---") {
            continue;
        }
        let tier: u32 =
            cells[1].parse().map_err(|_| format!("src/lib.rs: tier table: `{}` is not a tier number", cells[1]))?;
        for (k, name) in cells[2].split('`').enumerate() {
            if k % 2 == 1
                && let Some(old) = table.insert(name.to_string(), tier)
            {
                return Err(format!("src/lib.rs: tier table: `{name}` is in tiers {old} and {tier}"));
            }
        }
    }
    if table.is_empty() {
        return Err("src/lib.rs: the tier table has no rows".into());
    }
    Ok(table)
}

/// The modules `lib.rs` declares (`mod x;`, `pub mod x;`, … — not inline ones).
pub(crate) fn declared_modules(lib_code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in lib_code.lines() {
        let mut l = line.trim();
        for vis in ["pub(crate) ", "pub "] {
            l = l.strip_prefix(vis).unwrap_or(l);
        }
        if let Some(name) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            out.insert(name.trim().to_string());
        }
    }
    out
}

/// What a `crate::NAME` that is no module stands for: the crate root's `pub use m::{…}` items
/// and `#[macro_export]` macros, by the module that defines them.
pub(crate) fn root_items(tree: &Tree, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (rel, text) in tree {
        let code = blank(text, false);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("#[macro_export]") {
            rest = &rest[at..];
            if let Some(m) = rest.find("macro_rules!") {
                let name: String = rest[m + "macro_rules!".len()..]
                    .trim_start()
                    .chars()
                    .take_while(|&c| c.is_alphanumeric() || c == '_')
                    .collect();
                out.insert(name, module_of(rel));
            }
            rest = &rest[1..];
        }
    }
    if let Some(lib) = tree.get("lib.rs") {
        let code = blank(lib, false);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("pub use ") {
            rest = &rest[at + "pub use ".len()..];
            let stmt = &rest[..rest.find(';').unwrap_or(rest.len())];
            let (head, tail) = stmt.split_once("::").unwrap_or((stmt, ""));
            if modules.contains(head.trim()) {
                for item in tail.trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace()).split(',') {
                    let item = item.trim();
                    let name = item.rsplit(" as ").next().unwrap_or(item).rsplit("::").next().unwrap_or(item).trim();
                    if !name.is_empty() {
                        out.insert(name.to_string(), head.trim().to_string());
                    }
                }
            }
        }
    }
    out
}

/// Every rule, over `tree` (the sources of one crate, `lib.rs` at its root).
pub(crate) fn check(tree: &Tree) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut v = |rule, message: String| found.push(Violation { rule, message });

    // (a) Inline PTX only under raw/.
    for (rel, text) in tree {
        if rel.starts_with("raw/") {
            continue;
        }
        let code = blank(text, false);
        let code_strings = blank(text, true);
        let mut hits: Vec<(usize, &str)> = words(&code)
            .filter_map(|(at, w)| match w {
                "asm" | "global_asm" | "naked_asm" => Some((at, "inline assembly (`asm!`, `global_asm!`)")),
                "nvptx" => Some((at, "an NVVM intrinsic (`core::arch::nvptx`)")),
                _ => None,
            })
            .collect();
        hits.extend(
            code_strings
                .match_indices("\"llvm.")
                .map(|(at, _)| (at, "an LLVM / NVVM intrinsic (`link_name = \"llvm.…\"`)")),
        );
        for (at, why) in hits {
            v(
                Rule::InlinePtx,
                format!(
                    "src/{rel}:{}: {why} outside src/raw/ (rule: raw/ is the only home of inline PTX; \
                     move it into a small `#[inline(always)]` function there)",
                    line_of(&code, at)
                ),
            );
        }
    }

    // The crate naming itself (`extern crate self as cohort;`) would make `cohort::…` paths
    // that the check cannot follow, from any module; `#[macro_use]`, macros used without one.
    for (rel, text) in tree {
        let code = blank(text, false);
        let ws: Vec<(usize, &str)> = words(&code).collect();
        for pair in ws.windows(3) {
            if let [(at, "extern"), (_, "crate"), (_, "self")] = pair {
                v(
                    Rule::Unresolved,
                    format!("src/{rel}:{}: `extern crate self`: the crate may not name itself", line_of(&code, *at)),
                );
            }
        }
        // `#[macro_use]` lets a module's `macro_rules!` reach the modules after it unnamed.
        for &(at, _) in ws.iter().filter(|(_, w)| *w == "macro_use") {
            v(
                Rule::Unresolved,
                format!("src/{rel}:{}: `#[macro_use]`: macros reach other modules without a path", line_of(&code, at)),
            );
        }
    }

    // (c) Every module in the table, every table entry a module.
    let Some(lib) = tree.get("lib.rs") else {
        v(Rule::NoTier, "src/lib.rs: missing".into());
        return found;
    };
    let tiers = match tier_table(lib) {
        Ok(t) => t,
        Err(e) => {
            v(Rule::NoTier, e);
            return found;
        }
    };
    let declared = declared_modules(&blank(lib, false));
    let on_disk: BTreeSet<String> = tree.keys().map(|r| module_of(r)).filter(|m| !m.is_empty()).collect();
    for m in declared.union(&on_disk) {
        if !tiers.contains_key(m) {
            let at = if tree.contains_key(&format!("{m}.rs")) {
                format!("src/{m}.rs")
            } else if on_disk.contains(m) {
                format!("src/{m}/")
            } else {
                "src/lib.rs".to_string()
            };
            let what = if declared.contains(m) { "declared in src/lib.rs" } else { "a file or folder of src/" };
            v(
                Rule::NoTier,
                format!(
                    "{at}: module `{m}` ({what}) is not in the tier table of src/lib.rs (rule: every module has a tier)"
                ),
            );
        }
    }
    for m in tiers.keys() {
        if !declared.contains(m) {
            v(
                Rule::NoTier,
                format!("src/lib.rs: the tier table names `{m}`, which src/lib.rs does not declare as a module"),
            );
        }
    }

    // (b) Imports only downward; and the module graph for (d).
    let modules: BTreeSet<String> = declared.clone();
    let items = root_items(tree, &modules);
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for (rel, text) in tree {
        let from = module_of(rel);
        if from.is_empty() {
            continue; // the crate root declares and re-exports every module
        }
        let code = blank(text, false);
        let ws: Vec<(usize, &str)> = words(&code).collect();
        for (k, &(at, w)) in ws.iter().enumerate() {
            let next = code[at + w.len()..].trim_start();
            let prev = if k > 0 { ws[k - 1].1 } else { "" };
            let before = code[..at].trim_end();
            let bad = match w {
                // `use crate as c;`, `use {crate as c}`: paths the check cannot follow.
                "crate" if next.starts_with("as ") && (prev == "use" || before.ends_with(['{', ','])) => {
                    Some("an alias of the crate root")
                }
                "path" if code[..at].trim_end().ends_with("#[") => {
                    Some("a `#[path]` module (a file outside its module's place)")
                }
                "include" if next.starts_with('!') => Some("`include!` of source text"),
                _ => None,
            };
            if let Some(what) = bad {
                v(
                    Rule::Unresolved,
                    format!("src/{rel}:{}: {what} hides which module the code belongs to or uses", line_of(&code, at)),
                );
            }
        }
        let depth = rel.split('/').count() - usize::from(rel.ends_with("/mod.rs"));
        let mut refs = crate_paths(&code);
        refs.extend(super_paths(&code, depth));
        refs.sort();
        let mut seen = BTreeSet::new();
        for (at, name) in refs {
            let line = line_of(&code, at);
            if !seen.insert((line, name.clone())) {
                continue; // one report per line and path
            }
            let to = if modules.contains(&name) {
                name.clone()
            } else if let Some(m) = items.get(&name) {
                m.clone()
            } else if matches!(name.as_str(), "prelude" | "__cpu" | "kernel" | "contract") {
                continue; // the root's own (the prelude) or another crate's
            } else if name == "*" {
                v(
                    Rule::Unresolved,
                    format!("src/{rel}:{line}: `crate::*`: a glob of the crate root hides which modules it uses"),
                );
                continue;
            } else {
                v(Rule::Unresolved, format!("src/{rel}:{line}: `crate::{name}`: no module defines `{name}`"));
                continue;
            };
            if to == from {
                continue;
            }
            let (Some(&tf), Some(&tt)) = (tiers.get(&from), tiers.get(&to)) else { continue };
            if tt > tf {
                v(
                    Rule::Upward,
                    format!(
                        "src/{rel}:{line}: upward import: `{from}` (tier {tf}) uses `crate::{name}` (module `{to}`, \
                         tier {tt}) (rule: a module imports only from its own tier and the tiers below it, by the \
                         table in src/lib.rs)"
                    ),
                );
            }
            edges.entry((from.clone(), to)).or_insert_with(|| format!("src/{rel}:{line} uses `crate::{name}`"));
        }
    }

    // (d) No cycles: strongly connected components of more than one module.
    for (scc, sites) in cycles(&edges) {
        v(Rule::Cycle, format!("import cycle between modules {} (rule: no import cycles):{sites}", names(&scc)));
    }

    // (e) No cycles between the files of a folder module either (`cg/reduce/warp.rs` →
    // `cg/tile.rs` → …): the same rule one level down, so that a folder's files layer too.
    for (scc, sites) in cycles(&file_edges(tree)) {
        v(Rule::FileCycle, format!("import cycle between files {} (rule: no import cycles):{sites}", names(&scc)));
    }
    found.sort();
    found
}

/// `` `a`, `b` `` for a set of names.
pub(crate) fn names(set: &BTreeSet<String>) -> String {
    set.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
}

/// The strongly connected components of more than one node of a graph (`(from, to)` → the
/// site that makes the edge), each with the sites of its edges (one line each).
pub(crate) fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<(BTreeSet<String>, String)> {
    let nodes: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start.clone()];
        while let Some(n) = stack.pop() {
            for ((a, b), _) in edges.range((n.clone(), String::new())..) {
                if *a != n {
                    break;
                }
                if seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|&n| (n, reach(n))).collect();
    let mut reported = BTreeSet::new();
    let mut out = Vec::new();
    for &n in &nodes {
        if reported.contains(n) || !reachable[n].contains(n) {
            continue;
        }
        let scc: BTreeSet<String> = nodes
            .iter()
            .filter(|&&m| reachable[n].contains(m) && reachable[m].contains(n))
            .map(|&m| m.clone())
            .collect();
        let mut sites = String::new();
        for ((a, b), site) in edges {
            if scc.contains(a) && scc.contains(b) {
                let _ = write!(sites, "\n    {a} → {b}: {site}");
            }
        }
        reported.extend(scc.iter().cloned());
        out.push((scc, sites));
    }
    out
}
