//! Cutting one entry, with everything it uses, out of a PTX module (or marking it in the
//! whole module).

use std::collections::{HashMap, HashSet};

/// One top-level statement of a PTX module: a declaration, a definition or a variable.
pub(super) struct Item<'a> {
    pub(super) text: &'a str,
    pub(super) name: Option<&'a str>,
}

/// `text` without its `//` and `/* */` comments (for finding names, not for printing).
pub(super) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |e| &tail[e..]);
        } else if tail.starts_with("/*") {
            rest = tail.find("*/").map_or("", |e| &tail[e + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The identifiers in `text` (PTX: letters, digits, `_`, `$`, `%`; not starting with a digit).
pub(super) fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'))
        .filter(|t| t.chars().next().is_some_and(|c| !c.is_ascii_digit()))
}

/// The name an item declares or defines: the first identifier after its directives
/// (`.visible .entry NAME(`, `.func (.param .b64 r) NAME`, `.global .align 8 .u64 NAME[3]`).
fn defined_name(text: &str) -> Option<&str> {
    let mut rest = text.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(r.len());
            rest = r[end..].trim_start();
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            rest = rest[end..].trim_start();
        } else if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        } else if rest.starts_with("//") {
            rest = rest[rest.find('\n')?..].trim_start();
        } else {
            let name = identifiers(rest).next()?;
            return rest.starts_with(name).then_some(name);
        }
    }
}

/// The length of the comment `rest` starts with (a `//` comment up to its line's end, a `/* */`
/// comment whole), 0 when it starts with none; `None` for a `/*` never closed.
fn comment_len(rest: &str) -> Option<usize> {
    if rest.starts_with("//") {
        Some(rest.find('\n').unwrap_or(rest.len()))
    } else if rest.starts_with("/*") {
        Some(rest.find("*/")? + 2)
    } else {
        Some(0)
    }
}

/// Splits a PTX module into its header lines (`.version`, `.target`, `.address_size`) and its
/// top-level items; `None` if it is not shaped as expected (unbalanced braces, an unterminated
/// item).
pub(super) fn split_module(ptx: &str) -> Option<(Vec<&str>, Vec<Item<'_>>)> {
    let b = ptx.as_bytes();
    let (mut header, mut items) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < b.len() {
        // Between items: whitespace, comments, header directives.
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let rest = &ptx[i..];
        let comment = comment_len(rest)?;
        if comment > 0 {
            i += comment;
            continue;
        }
        if [".version", ".target", ".address_size"].iter().any(|d| rest.starts_with(d)) {
            let end = rest.find('\n').unwrap_or(rest.len());
            header.push(rest[..end].trim_end());
            i += end;
            continue;
        }
        // An item: up to a `;` outside braces, or the `}` that closes its body.
        let start = i;
        let mut depth = 0usize;
        let end = loop {
            if i >= b.len() {
                return None;
            }
            let comment = comment_len(&ptx[i..])?;
            if comment > 0 {
                i += comment;
                continue;
            }
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        // A body ends here, unless an initializer's `= {…};` goes on to its `;`.
                        let after = ptx[i + 1..].trim_start_matches([' ', '\t']);
                        if !after.starts_with(';') && !after.starts_with(',') {
                            break i + 1;
                        }
                    }
                }
                b';' if depth == 0 => break i + 1,
                _ => {}
            }
            i += 1;
        };
        let text = &ptx[start..end];
        items.push(Item { text, name: defined_name(text) });
        i = end;
    }
    Some((header, items))
}

/// The PTX of one kernel: the module's header, then — in the module's order — the kernel's
/// `.entry` and every item it needs (transitively: the functions it calls, their prototypes, the
/// globals, constants and shared variables it names). `None` if the module has no such entry or
/// cannot be split.
pub fn extract_entry(ptx: &str, kernel: &str) -> Option<String> {
    let (header, items) = split_module(ptx)?;
    let is_entry = |it: &Item<'_>| it.name == Some(kernel) && strip_comments(it.text).contains(".entry");
    if !items.iter().any(is_entry) {
        return None;
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if let Some(n) = it.name {
            by_name.entry(n).or_default().push(i);
        }
    }
    let mut need: HashSet<&str> = HashSet::from([kernel]);
    let mut todo = vec![kernel];
    while let Some(n) = todo.pop() {
        for &i in by_name.get(n).into_iter().flatten() {
            let code = strip_comments(items[i].text);
            for id in identifiers(&code) {
                if let Some((&known, _)) = by_name.get_key_value(id)
                    && need.insert(known)
                {
                    todo.push(known);
                }
            }
        }
    }
    // Other kernels are in `need` only when this one launches them (it names their address).
    // Dynamic shared memory (`.extern .shared`) stays, named or not: ptxas aligns the static
    // shared memory of every kernel to it (8 B of static shared memory count as 16 beside an
    // `.align 16` extern array), so the report matches the whole module's.
    let dynamic_shared = |it: &Item<'_>| strip_comments(it.text).trim_start().starts_with(".extern .shared");
    let mut out = header.join("\n");
    out.push_str("\n\n");
    for it in items.iter().filter(|it| it.name.is_some_and(|n| need.contains(n)) || dynamic_shared(it)) {
        out.push_str(it.text);
        out.push_str("\n\n");
    }
    Some(out)
}

/// The whole module with a comment line before `kernel`'s `.entry`.
pub fn mark_entry(ptx: &str, kernel: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 80);
    for line in ptx.lines() {
        let l = line.trim_start();
        let entry = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry "));
        if entry.is_some_and(|r| r.split(['(', ' ']).next() == Some(kernel)) {
            out.push_str(&format!("// >>>>>>>> cohort: the kernel `{kernel}` <<<<<<<<\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
