//! The sources as text: loaded from `src/`, comments and literals blanked (so that only code
//! is read), identifiers and lines.

use super::*;

pub(crate) fn load(dir: &Path) -> Tree {
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
pub(crate) fn blank(text: &str, keep_strings: bool) -> String {
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
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The identifiers of `code` (comments and strings blanked), with their byte offsets.
pub(crate) fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
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
