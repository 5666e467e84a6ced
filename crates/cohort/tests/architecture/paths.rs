//! The paths of the code: `crate::…`, `$crate::…`, `super::…` (climbing through inline `mod`
//! blocks), and whole use trees rooted at `crate`, `super` or `self`.

use super::*;

/// `super::…` paths of `code` (a file `depth` modules below the crate root: 1 for `x.rs` and
/// `x/mod.rs`, 2 for `x/y.rs`) that climb to the crate root, through the inline `mod … { }`
/// blocks around them, as the `crate::X` they name: (byte offset, X).
pub(crate) fn super_paths(code: &str, depth: usize) -> Vec<(usize, String)> {
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
pub(crate) fn crate_paths(code: &str) -> Vec<(usize, String)> {
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

/// Every path of `code` that starts with `crate::`, `super::` or `self::` (use trees
/// expanded: `super::{a, b::{self, C}}` gives `super::a`, `super::b`, `super::b::C`), as
/// (byte offset, the inline `mod` blocks around it by name, the path's segments).
pub(crate) fn rooted_paths(code: &str) -> Vec<(usize, Vec<String>, Vec<String>)> {
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
            if rest.starts_with('*') {
                segs.push("*".to_string()); // a glob: its items are not named
                i += 1;
                break;
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
