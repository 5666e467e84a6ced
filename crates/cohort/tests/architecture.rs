//! The device library's architecture, held (issue 26, "device tiers that hold"): reads the
//! sources of `crates/cohort/src` as text (no build of anything) and fails, naming the file, the
//! line and the rule, on
//!
//! - **inline PTX outside `src/raw/`**: the tokens `asm`, `global_asm`, `naked_asm` (a call or
//!   an import), `nvptx` (`core::arch::nvptx`), or an LLVM intrinsic (`"llvm.…"`, as
//!   `link_name`s are) anywhere but the `raw` tree;
//! - **an upward import**: a `crate::…` (or `$crate::…`) path in a module of one tier that names
//!   a module of a higher tier, by the tier table in the crate docs (`src/lib.rs`, "Tiers");
//! - **a module without a tier**: a module `src/lib.rs` declares, or a file or folder of `src/`,
//!   that the table does not list (or a table entry that is no module);
//! - **an import cycle** between modules (which the tier rule allows within one tier), or between
//!   the files of a folder module (`cg/`, `cg/reduce/`, `raw/`, `matrix/`): a path resolves to
//!   the file that defines its item, through the `pub use` re-exports of a folder's `mod.rs`
//!   (whose declaring and re-exporting its files is not an import, as `lib.rs`'s are not; a
//!   name used bare through such a re-export, inside `mod.rs`, is not followed).
//!
//! Comments (doc comments included: an intra-doc link may point anywhere) and string literals
//! are not code. `crate::NAME` of an item the crate root re-exports (`crate::DeviceCopy`) or of
//! an exported macro (`crate::shared!`) counts as the module that defines it; `super::…` that
//! climbs to the crate root counts as `crate::…`. What would hide a module's imports or code is
//! refused: an alias or a glob of the crate root, `extern crate self`, a `#[path]` module,
//! `include!`, `#[macro_use]`. A folder module (`cg/`, `raw/`) is one module of the tier table:
//! its files may use each other, but not in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The sources: path relative to `src/` (with `/`) → text.
type Tree = BTreeMap<String, String>;

/// One broken rule: which, and the message naming where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    rule: Rule,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rule {
    InlinePtx,
    Upward,
    NoTier,
    Cycle,
    FileCycle,
    Unresolved,
}

fn load(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read src").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).expect("under src").to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&p).expect("read source"));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// `text` with every comment blanked, and every string and char literal's contents too unless
/// `keep_strings`: same lines, so line numbers stay.
fn blank(text: &str, keep_strings: bool) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let put = |out: &mut String, ch: char, keep: bool| out.push(if ch == '\n' || keep { ch } else { ' ' });
    // The string or char literal whose opening quote is at `at`, its contents blanked unless
    // `keep_strings` (escapes skipped whole): the index after its closing quote.
    let quoted = |c: &[char], at: usize, out: &mut String| {
        let q = c[at];
        out.push(q);
        let mut i = at + 1;
        while i < c.len() && c[i] != q {
            if c[i] == '\\' && i + 1 < c.len() {
                put(out, c[i], keep_strings);
                i += 1;
            }
            put(out, c[i], keep_strings);
            i += 1;
        }
        if i < c.len() {
            out.push(q);
            i += 1;
        }
        i
    };
    let mut i = 0;
    while i < c.len() {
        let prev = if i > 0 { c[i - 1] } else { ' ' };
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                put(&mut out, c[i], false);
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    put(&mut out, c[i], false);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (!ident(prev) || (matches!(prev, 'b' | 'c') && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"' | '#'))
        {
            // A raw string `r"…"`, `r#"…"#`, … (or an identifier starting with `r`).
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            for &ch in &c[i..=j] {
                out.push(ch);
            }
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    for &ch in &c[i..=i + hashes] {
                        out.push(ch);
                    }
                    i += hashes + 1;
                    break;
                }
                put(&mut out, c[i], keep_strings);
                i += 1;
            }
        } else if c[i] == '"' {
            i = quoted(&c, i, &mut out);
        } else if c[i] == '\''
            && (!ident(prev) || (prev == 'b' && (i < 2 || !ident(c[i - 2]))))
            && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\''))
        {
            // A char literal (`'a'`, `'\n'`, `'\u{1F600}'`); a lifetime `'a` is code.
            i = quoted(&c, i, &mut out);
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The 1-based line of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The module a source file belongs to: `""` for `lib.rs`, else its first path component
/// (`cg/grid.rs` → `cg`, `raw/mod.rs` → `raw`, `atomic.rs` → `atomic`).
fn module_of(rel: &str) -> String {
    if rel == "lib.rs" {
        return String::new();
    }
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// The tier table of `lib.rs`'s docs: module → tier, from the rows after the header
/// `| tier | modules | …`, each module a backticked name in the second column.
fn tier_table(lib: &str) -> Result<BTreeMap<String, u32>, String> {
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
fn declared_modules(lib_code: &str) -> BTreeSet<String> {
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
fn root_items(tree: &Tree, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
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

/// The identifiers of `code` (comments and strings blanked), with their byte offsets.
fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices().chain([(code.len(), ' ')]) {
        match (start, ident(c)) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push((s, &code[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out.into_iter()
}

/// `super::…` paths of `code` (a file `depth` modules below the crate root: 1 for `x.rs` and
/// `x/mod.rs`, 2 for `x/y.rs`) that climb to the crate root, through the inline `mod … { }`
/// blocks around them, as the `crate::X` they name: (byte offset, X).
fn super_paths(code: &str, depth: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // The brace stack: whether each open `{` opens an inline module.
    let mut stack: Vec<bool> = Vec::new();
    let ws: Vec<(usize, &str)> = words(code).collect();
    let b = code.as_bytes();
    let mut pos = 0;
    while pos < code.len() {
        match b[pos] {
            b'{' => {
                // `mod NAME {`: the two words just before this brace.
                let n = ws.partition_point(|(a, _)| *a < pos);
                let is_mod = n >= 2 && ws[n - 2].1 == "mod" && {
                    let (a, w) = ws[n - 1];
                    code[a + w.len()..pos].trim().is_empty()
                };
                stack.push(is_mod);
            }
            b'}' => {
                stack.pop();
            }
            b's' if code[pos..].starts_with("super")
                && (pos == 0 || !(b[pos - 1].is_ascii_alphanumeric() || b[pos - 1] == b'_' || b[pos - 1] == b':')) =>
            {
                let mut rest = &code[pos..];
                let mut climbs = 0;
                while let Some(r) = rest.strip_prefix("super") {
                    let r = r.trim_start();
                    let Some(r) = r.strip_prefix("::") else { break };
                    climbs += 1;
                    rest = r.trim_start();
                }
                let level = depth + stack.iter().filter(|m| **m).count();
                if climbs > 0 && climbs >= level {
                    if climbs > level {
                        out.push((pos, "super".to_string())); // past the root: not a path rustc takes
                    } else if let Some(r) = rest.strip_prefix('{') {
                        // `super::super::{a, b}` at the root: the group's first names.
                        for item in r[..r.find('}').unwrap_or(r.len())].split(',') {
                            let name: String =
                                item.trim().chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
                            out.push((pos, name));
                        }
                    } else {
                        let name: String = rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
                        out.push((pos, name));
                    }
                }
                pos += "super".len();
                continue;
            }
            _ => {}
        }
        pos += 1;
    }
    out
}

/// Every `crate::X` / `$crate::X` in `code` (use trees `crate::{a, b::c}` give `a` and `b`):
/// (byte offset, X).
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut from = 0;
    while let Some(k) = code[from..].find("crate::") {
        let at = from + k;
        from = at + 1;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The items at depth 1 of the use tree.
            let (mut depth, mut item_start) = (0usize, true);
            for (i, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String =
                            group[i..].chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
                        out.push((at, name));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
            out.push((at, if name.is_empty() { rest.chars().take(1).collect() } else { name }));
        }
    }
    out
}

/// Every rule, over `tree` (the sources of one crate, `lib.rs` at its root).
fn check(tree: &Tree) -> Vec<Violation> {
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
fn names(set: &BTreeSet<String>) -> String {
    set.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
}

/// The strongly connected components of more than one node of a graph (`(from, to)` → the
/// site that makes the edge), each with the sites of its edges (one line each).
fn cycles(edges: &BTreeMap<(String, String), String>) -> Vec<(BTreeSet<String>, String)> {
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

/// The file a source belongs to as a unit of the file graph: its module path, `/`-joined
/// (`cg/reduce/warp.rs` → `cg/reduce/warp`, `cg/reduce/mod.rs` → `cg/reduce`).
fn unit_of(rel: &str) -> String {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    rel.strip_suffix("/mod").unwrap_or(rel).to_string()
}

/// Every path of `code` that starts with `crate::`, `super::` or `self::` (use trees
/// expanded: `super::{a, b::{self, C}}` gives `super::a`, `super::b`, `super::b::C`), as
/// (byte offset, the inline `mod` blocks around it by name, the path's segments).
fn rooted_paths(code: &str) -> Vec<(usize, Vec<String>, Vec<String>)> {
    fn ident(s: &str) -> &str {
        let n = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        &s[..n]
    }
    /// The paths of a use tree at `s` under `prefix`; how far it read.
    fn tree(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let mut segs = prefix.to_vec();
        let mut i = 0;
        loop {
            i += s[i..].len() - s[i..].trim_start().len();
            let rest = &s[i..];
            if let Some(group) = rest.strip_prefix('{') {
                i += 1;
                let mut g = group;
                loop {
                    let read = tree(g, &segs, out);
                    i += read;
                    g = &g[read..];
                    let t = g.trim_start();
                    i += g.len() - t.len();
                    g = t;
                    if let Some(r) = g.strip_prefix(',') {
                        i += 1;
                        g = r;
                        if g.trim_start().starts_with('}') {
                            let t = g.trim_start();
                            i += g.len() - t.len() + 1;
                            return i;
                        }
                    } else {
                        if g.starts_with('}') {
                            i += 1;
                        }
                        return i;
                    }
                }
            }
            let w = ident(rest);
            if w.is_empty() {
                break;
            }
            if w != "self" || segs.is_empty() {
                segs.push(w.to_string());
            }
            i += w.len();
            let after = s[i..].trim_start();
            match after.strip_prefix("::") {
                Some(_) => i += s[i..].len() - after.len() + 2,
                None => {
                    // `name as alias`: the alias rides along as a last `as:alias` segment.
                    if let Some(r) = after.strip_prefix("as ") {
                        let alias = ident(r.trim_start());
                        i += s[i..].len() - r.trim_start().len() + alias.len();
                        let mut p = segs.clone();
                        p.push(format!("as:{alias}"));
                        out.push(p);
                        return i;
                    }
                    break;
                }
            }
        }
        if segs.len() > prefix.len() || segs.is_empty() {
            out.push(segs);
        } else {
            out.push(prefix.to_vec());
        }
        i
    }
    let mut out = Vec::new();
    let ws: Vec<(usize, &str)> = words(code).collect();
    // The brace stack: the inline module each open `{` opens, if any.
    let mut stack: Vec<Option<String>> = Vec::new();
    let b = code.as_bytes();
    let mut k = 0;
    let mut pos = 0;
    while pos < code.len() {
        match b[pos] {
            b'{' => {
                let n = ws.partition_point(|(a, _)| *a < pos);
                let name = (n >= 2 && ws[n - 2].1 == "mod" && {
                    let (a, w) = ws[n - 1];
                    code[a + w.len()..pos].trim().is_empty()
                })
                .then(|| ws[n - 1].1.to_string());
                stack.push(name);
            }
            b'}' => {
                stack.pop();
            }
            _ => {}
        }
        while k < ws.len() && ws[k].0 < pos {
            k += 1;
        }
        if k < ws.len() && ws[k].0 == pos {
            let (at, w) = ws[k];
            let starts = matches!(w, "crate" | "super" | "self")
                && (at == 0 || !(b[at - 1] == b':' || b[at - 1] == b'$'))
                && code[at + w.len()..].trim_start().starts_with("::");
            if starts {
                let inline: Vec<String> = stack.iter().flatten().cloned().collect();
                let mut paths = Vec::new();
                tree(&code[at..], &[], &mut paths);
                for p in paths {
                    out.push((at, inline.clone(), p));
                }
            }
        }
        pos += 1;
    }
    out
}

/// The file graph inside each folder module: `(file, file)` → the site, for a path in one
/// file of `cg/` (say) that names an item of another file of `cg/`. A path resolves to the
/// file that defines its item: through the re-exports (`pub use x::{…}`, `pub(crate) use …`)
/// of a folder's `mod.rs` to the file they come from. A folder's `mod.rs` declaring and
/// re-exporting its files is not an import (as `lib.rs`'s are not); its other paths are.
fn file_edges(tree: &Tree) -> BTreeMap<(String, String), String> {
    let units: BTreeSet<String> = tree.keys().map(|r| unit_of(r)).collect();
    // Per folder unit: re-exported name → the child unit it comes from.
    let mut reexports: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut codes: BTreeMap<&String, String> = BTreeMap::new();
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
                    if p.len() >= 3 && units.contains(&format!("{unit}/{}", p[1])) {
                        let last = &p[p.len() - 1];
                        map.insert(last.strip_prefix("as:").unwrap_or(last).to_string(), format!("{unit}/{}", p[1]));
                    }
                }
                let blanked: String = code[start..end].chars().map(|c| if c == '\n' { c } else { ' ' }).collect();
                code.replace_range(start..end, &blanked);
            }
        }
        codes.insert(rel, code);
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

/// This crate's sources, or those under `COHORT_ARCH_SRC` (another tree's `src/`, say an older
/// commit's: `git archive <commit> crates/cohort/src | tar -x -C /tmp/old`, then
/// `COHORT_ARCH_SRC=/tmp/old/crates/cohort/src cargo test -p cohort --test architecture`).
fn cohort_src() -> Tree {
    match std::env::var_os("COHORT_ARCH_SRC") {
        Some(dir) => load(Path::new(&dir)),
        None => load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")),
    }
}

fn assert_none(rules: &[Rule]) {
    let bad: Vec<_> = check(&cohort_src()).into_iter().filter(|v| rules.contains(&v.rule)).map(|v| v.message).collect();
    assert!(bad.is_empty(), "{} violation(s) of the device library's architecture:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn inline_ptx_only_in_raw() {
    assert_none(&[Rule::InlinePtx]);
}

#[test]
fn tiers_import_only_downward() {
    assert_none(&[Rule::Upward, Rule::Unresolved]);
}

#[test]
fn every_module_has_a_tier() {
    assert_none(&[Rule::NoTier]);
}

#[test]
fn no_import_cycles() {
    assert_none(&[Rule::Cycle]);
}

#[test]
fn no_import_cycles_between_files() {
    assert_none(&[Rule::FileCycle]);
}

/// Prints every import cycle, of modules and of files, and passes: `cargo test -p cohort --test
/// architecture import_cycles -- --nocapture` (with `COHORT_ARCH_SRC` for another tree).
#[test]
fn import_cycles() {
    let found: Vec<_> =
        check(&cohort_src()).into_iter().filter(|v| matches!(v.rule, Rule::Cycle | Rule::FileCycle)).collect();
    println!("{} import cycle(s)", found.len());
    for v in found {
        println!("{}", v.message);
    }
}

/// The file rule, on a made-up folder module: a cycle through a `mod.rs` re-export is found,
/// with the file that defines the item; the `mod.rs` declaring and re-exporting its files, and
/// its files using what it defines, are no cycle.
#[test]
fn the_checker_finds_file_cycles() {
    let lib =
        "//! | tier | modules |\n//! |---|---|\n//! | 1 | `grp` |\n//! | 2 | `top` |\n\npub mod grp;\npub mod top;\n";
    let files: &[(&str, &str)] = &[
        ("lib.rs", lib),
        ("grp/mod.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\npub(crate) use b::{B, helper as h};\npub trait T {}\n"),
        ("grp/a.rs", "use super::T;\npub struct A;\nfn f() { super::h() }\n"),
        ("grp/b.rs", "use super::T;\npub struct B;\nmod inner {\n    use super::super::c::C;\n}\npub fn helper() {}\n"),
        (
            "grp/c.rs",
            "use crate::grp::{self, a::{self, A}};\npub struct C;\nfn g() -> self::C { C }\nfn k() { let _ = grp::B; }\n",
        ),
        ("top.rs", "use crate::grp::A;\n"),
    ];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    let edges = file_edges(&tree);
    let e = |a: &str, b: &str| edges.contains_key(&(a.to_string(), b.to_string()));
    assert!(e("grp/a", "grp/b"), "`super::h` is b's `helper` (through `as`): {edges:?}");
    assert!(e("grp/b", "grp/c"), "`super::super::c` out of an inline module: {edges:?}");
    assert!(e("grp/c", "grp/a"), "{edges:?}");
    assert!(e("grp/a", "grp"), "`super::T` is mod.rs's own: {edges:?}");
    assert!(!e("grp", "grp/a") && !e("grp", "grp/b"), "re-exports are no imports: {edges:?}");
    assert!(!e("grp/c", "grp/b"), "a bare `grp::B` after `use crate::grp::{{self}}` is not followed: {edges:?}");
    assert_eq!(got.len(), 1, "{all}");
    assert!(
        got[0].rule == Rule::FileCycle
            && ["`grp/a`, `grp/b`, `grp/c`", "src/grp/a.rs:3", "src/grp/b.rs:4", "src/grp/c.rs:1"]
                .iter()
                .all(|p| got[0].message.contains(p)),
        "{all}"
    );
}

/// The checker itself, on a small made-up crate with one violation of each rule.
#[test]
fn the_checker_reports_each_rule() {
    let lib = r#"//! ## Tiers
//!
//! | tier | modules | what |
//! |---|---|---|
//! | 0 | `host` | glue |
//! | 1 | [`raw`] | PTX |
//! | 2 | [`low`], `twin`, `pair` | values |
//! | 3 | [`high`](mod@high) | groups |
//! | 4 | `ghost` | not a module |

pub mod high;
mod host;
pub mod low;
pub mod pair;
pub mod raw;
pub mod stray;
mod twin;
pub use low::Thing;
pub mod prelude {
    pub use crate::high::Group;
}
"#;
    let files: &[(&str, &str)] = &[
        ("lib.rs", lib),
        ("host.rs", "pub fn glue() {}\n"),
        ("raw/mod.rs", "pub mod sreg;\npub use sreg::*;\n"),
        (
            "raw/sreg.rs",
            "use crate::host::glue;\npub fn tid() -> u32 { let r; unsafe { core::arch::asm!(\"mov.u32 {0}, %tid.x;\", out(reg32) r) }; r }\n",
        ),
        (
            "low.rs",
            "// asm!(\"in a comment\") and a string \"core::arch::asm!\" are not code\n\
             use crate::raw;\n\
             pub struct Thing;\n\
             pub fn bad() { unsafe { core::arch::asm!(\"trap;\") } }\n\
             pub fn up() -> crate::high::Group { crate::high::Group }\n\
             const S: &str = \"core::arch::asm!(crate::high)\"; const B: u8 = b'\"'; const R: &str = r#\"asm!\"#;\n",
        ),
        (
            "high.rs",
            "use crate::{low::{self, Thing}, raw};\npub struct Group;\n#[macro_export]\nmacro_rules! group { () => { $crate::Thing } }\n",
        ),
        ("twin.rs", "pub fn a() { crate::pair::b() }\n"),
        ("pair.rs", "pub fn b() { crate::twin::a() }\nconst C: char = '\"'; fn l<'a>(x: &'a str) -> &'a str { x }\n"),
        ("stray.rs", "pub fn s() { crate::group!(); crate::nowhere::f() }\n"),
    ];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let has =
        |rule: Rule, parts: &[&str]| got.iter().any(|v| v.rule == rule && parts.iter().all(|p| v.message.contains(p)));
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    assert!(has(Rule::InlinePtx, &["src/low.rs:4:", "outside src/raw/"]), "{all}");
    assert!(has(Rule::Upward, &["src/low.rs:5:", "`low` (tier 2)", "`crate::high`", "tier 3"]), "{all}");
    assert!(has(Rule::NoTier, &["src/stray.rs: module `stray`", "not in the tier table"]), "{all}");
    assert!(has(Rule::NoTier, &["names `ghost`"]), "{all}");
    assert!(has(Rule::Cycle, &["`pair`, `twin`", "src/twin.rs:1", "src/pair.rs:1"]), "{all}");
    // The upward import closes a cycle with `high`'s (downward) use of `low`.
    assert!(has(Rule::Cycle, &["`high`, `low`", "src/high.rs:1", "src/low.rs:5"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/stray.rs:1:", "`crate::nowhere`"]), "{all}");
    // Nothing else: not the comment, the strings (`b'"'` and the raw one included), raw's
    // `asm!`, the macro's `$crate::Thing` (`low`'s, through the root's `pub use`), `stray`'s
    // `crate::group!` (`high`'s macro; `stray` has no tier to compare), the prelude, the char
    // literal or the lifetimes.
    assert_eq!(got.len(), 7, "{all}");
}

/// The checker on code that hides its inline PTX or its imports: `asm !` spaced, an alias or a
/// glob of the crate root, `super::super::` out of an inline module, a `#[path]` module, the
/// crate naming itself, `#[macro_use]`.
#[test]
fn the_checker_sees_through_evasions() {
    let lib = "//! | tier | modules |\n//! |---|---|\n//! | 0 | `host` |\n//! | 1 | `raw` |\n\
               //! | 2 | `low` |\n//! | 3 | `high` |\n\nmod high;\nmod host;\nmod low;\nmod raw;\n\
               extern crate self as me;\n#[macro_use]\nmod macros {}\n";
    let low = "mod inner {\n    pub fn f() -> super::super::high::Group { todo!() }\n}\n\
               use crate as root;\n\
               use crate::*;\n\
               pub fn g() { unsafe { core::arch::asm ! (\"trap;\") } }\n\
               #[path = \"raw/evil.rs\"]\nmod evil;\n\
               use core::arch::{asm as a};\n";
    let files: &[(&str, &str)] =
        &[("lib.rs", lib), ("host.rs", ""), ("raw/mod.rs", ""), ("low.rs", low), ("high.rs", "pub struct Group;\n")];
    let tree: Tree = files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect();
    let got = check(&tree);
    let has =
        |rule: Rule, parts: &[&str]| got.iter().any(|v| v.rule == rule && parts.iter().all(|p| v.message.contains(p)));
    let all = got.iter().map(|v| format!("{:?}: {}", v.rule, v.message)).collect::<Vec<_>>().join("\n");
    assert!(has(Rule::Upward, &["src/low.rs:2:", "`crate::high`"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:4:", "alias of the crate root"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:5:", "`crate::*`"]), "{all}");
    assert!(has(Rule::InlinePtx, &["src/low.rs:6:"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/low.rs:7:", "`#[path]`"]), "{all}");
    assert!(has(Rule::InlinePtx, &["src/low.rs:9:"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/lib.rs:12:", "extern crate self"]), "{all}");
    assert!(has(Rule::Unresolved, &["src/lib.rs:13:", "`#[macro_use]`"]), "{all}");
    assert_eq!(got.len(), 8, "{all}");
}
