//! The runtime's backend seam, held (issue 26 item 1): reads the sources of `crates/runtime/src`
//! as text (no build) and fails, naming the file, the line and the rule, on
//!
//! - **the old seam**: `drv::` (the re-declared driver functions) or the thread-local device
//!   switch (`on_cpu`, `set_current`) anywhere;
//! - **a driver call above the seam**: `sys::cuXxx(` or cudarc's `result::` layer outside
//!   `src/backend/` (every device operation goes through the `Backend` trait);
//! - **a device-kind branch above the seam**: `.is_cpu()` outside `src/backend/`, other than the
//!   public `Gpu::is_cpu` itself (behaviour that differs is a backend method or capability);
//! - **an upward import from the backend**: a `crate::X` path in `src/backend/` naming a module
//!   other than the leaf ones it may use (`launch`, `ptx`): it gets `Gpu`, `Function`, `Stream`
//!   and the rest only as arguments.
//!
//! Comment lines are not code; test modules (`#[cfg(test)]` to the end of a file) may use
//! anything.

use std::path::Path;

fn sources() -> Vec<(String, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read src").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).expect("under src").to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).expect("read source")));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    assert!(out.iter().any(|(p, _)| p == "backend/mod.rs"), "no src/backend/mod.rs");
    out
}

/// The code lines of a file (1-based numbers), without comment lines, up to its test module.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.split(" // ").next().unwrap_or(l)))
}

/// Whether `line` has `word` not preceded by an identifier character (`on_cpu(`, not
/// `not_on_cpu(`).
fn contains_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| !line[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// Whether `line` calls a driver function through cudarc's `sys` layer (`sys::cuMemAlloc_v2(`).
fn driver_call(line: &str) -> bool {
    line.match_indices("sys::cu").any(|(i, _)| {
        let rest = &line[i + "sys::cu".len()..];
        rest.starts_with(|c: char| c.is_ascii_uppercase())
            && rest.find('(').is_some_and(|p| rest[..p].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// The modules `crate::X` paths in `line` name.
fn crate_paths(line: &str) -> Vec<&str> {
    line.match_indices("crate::")
        .filter(|(i, _)| *i == 0 || !line[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$'))
        .map(|(i, _)| {
            let rest = &line[i + "crate::".len()..];
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

fn violations(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        let backend = path.starts_with("backend/");
        for (n, line) in code_lines(text) {
            let at = format!("src/{path}:{n}");
            for old in ["drv::", "on_cpu(", "set_current("] {
                if contains_word(line, old) {
                    out.push(format!("{at}: the old thread-local driver seam (`{old}`): use the backend"));
                }
            }
            if backend {
                for m in crate_paths(line) {
                    if !["launch", "ptx"].contains(&m) {
                        out.push(format!(
                            "{at}: the backend imports `crate::{m}` (only `launch` and `ptx` are below it)"
                        ));
                    }
                }
                continue;
            }
            if driver_call(line) || line.contains("driver::result::") {
                out.push(format!("{at}: a driver call above the backend seam: add a `Backend` method"));
            }
            if line.contains(".is_cpu()") && !(path == "cpu.rs" && line.contains("pub fn is_cpu")) {
                out.push(format!("{at}: `.is_cpu()` above the backend seam: make it a backend method or capability"));
            }
        }
    }
    out
}

#[test]
fn the_backend_seam_holds() {
    let v = violations(&sources());
    assert!(v.is_empty(), "{} violation(s) of the backend seam:\n{}", v.len(), v.join("\n"));
}

#[test]
fn the_rules_see_what_they_forbid() {
    let files = |path: &str, text: &str| vec![(path.to_string(), text.to_string())];
    let v = violations(&files("stream.rs", "    unsafe { crate::drv::cuStreamQuery(s) }\n"));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(violations(&files("track.rs", "        crate::cpu::set_current(self.gpu.is_cpu());\n")).len() == 2);
    assert!(violations(&files("cpu.rs", "    if on_cpu() {\n"))[0].contains("thread-local"));
    assert!(
        violations(&files("memory.rs", "    unsafe { sys::cuMemAlloc_v2(&mut p, n) }\n"))[0].contains("driver call")
    );
    assert!(violations(&files("device.rs", "    cudarc::driver::result::init()\n"))[0].contains("driver call"));
    assert!(violations(&files("module.rs", "        if self.module.gpu.is_cpu() {\n"))[0].contains("is_cpu"));
    assert!(violations(&files("backend/cpu.rs", "use crate::stream::Stream;\n"))[0].contains("crate::stream"));
    assert!(violations(&files("backend/cpu.rs", "use crate::device::Gpu;\n"))[0].contains("crate::device"));
    // Allowed: comments, test modules, the public `Gpu::is_cpu`, the backend's leaf imports,
    // and the backend's own driver calls.
    let ok = [
        ("stream.rs", "    // crate::drv::cuStreamQuery once went here\n"),
        ("stream.rs", "#[cfg(test)]\nmod tests {\n    fn f() { g.is_cpu(); }\n}\n"),
        ("cpu.rs", "    pub fn is_cpu(&self) -> bool {\n"),
        ("backend/cpu.rs", "use crate::launch::LaunchConfig;\n    let x = crate::ptx::entries_where(a, b, c);\n"),
        ("backend/cuda.rs", "    done(unsafe { sys::cuMemcpyHtoD_v2(dst, src, n) })\n"),
        ("memory.rs", "    let x = sys::CUresult::CUDA_SUCCESS;\n"),
        ("cpu.rs", "    return Err(crate::cpu::not_on_cpu(\"graphs\"));\n"),
    ];
    for (path, text) in ok {
        assert!(violations(&files(path, text)).is_empty(), "{path}: {text:?}: {:?}", violations(&files(path, text)));
    }
}
