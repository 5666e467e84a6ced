//! The nested `cargo rustc` of a device build: the package and its shared target directory
//! (locked, found from `OUT_DIR`), rustc's dep-info, and cargo's JSON messages turned into
//! the build script's errors.

use std::env;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::BuildError;

pub(crate) fn package_name(crate_dir: &Path) -> Result<String, BuildError> {
    if let Ok(name) = env::var("CARGO_PKG_NAME")
        && env::var_os("CARGO_MANIFEST_DIR").is_some_and(|d| fs::canonicalize(d).ok().as_deref() == Some(crate_dir))
    {
        return Ok(name);
    }
    let toml = fs::read_to_string(crate_dir.join("Cargo.toml"))
        .map_err(|e| BuildError::Other(format!("{}: {e}", crate_dir.join("Cargo.toml").display())))?;
    let mut in_package = false;
    for line in toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_package = l == "[package]";
        } else if in_package && let Some(rest) = l.strip_prefix("name") {
            let v = rest.trim_start().trim_start_matches('=').trim().trim_matches('"');
            return Ok(v.to_string());
        }
    }
    Err(BuildError::Other(format!("no [package] name in {}", crate_dir.join("Cargo.toml").display())))
}

/// Locks the device target directory `dir` for this process until the file is dropped: one
/// device build at a time (from every build script and workspace that shares it), and its
/// `.ptx` read before the next one overwrites it.
pub(crate) fn lock_dir(dir: &Path) -> Result<fs::File, BuildError> {
    let other =
        |e: std::io::Error| BuildError::Other(format!("locking the device target directory {}: {e}", dir.display()));
    fs::create_dir_all(dir).map_err(other)?;
    let file = fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("cohort-build.lock"))
        .map_err(other)?;
    file.lock().map_err(other)?;
    Ok(file)
}

/// `<outer target dir>/cohort-ptx`, found from `OUT_DIR` by the `CACHEDIR.TAG` cargo writes at
/// a target root (the outermost one, so that builds nested in `target/`, such as trybuild's,
/// share the device build); `OUT_DIR/cohort-ptx` otherwise.
pub(crate) fn default_target_root(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .filter(|dir| dir.join("CACHEDIR.TAG").exists())
        .last()
        .map_or_else(|| out_dir.join("cohort-ptx"), |dir| dir.join("cohort-ptx"))
}

pub(crate) fn find_upwards(start: &Path, name: &str) -> Option<PathBuf> {
    start.ancestors().map(|d| d.join(name)).find(|p| p.exists())
}

/// The sources listed in a dep-info file, minus the standard library and registry crates.
pub(crate) fn read_dep_info(path: &Path, sysroot: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(path) else { return Vec::new() };
    let Some((_, deps)) = text.split_once(": ") else { return Vec::new() };
    let cargo_home = env::var_os("CARGO_HOME").map(PathBuf::from);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = deps.lines().next().unwrap_or("").chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out.retain(|p| {
        !p.starts_with(sysroot)
            && !cargo_home.as_ref().is_some_and(|h| p.starts_with(h))
            && !p.components().any(|c| c.as_os_str() == ".cargo" || c.as_os_str() == ".rustup")
    });
    out
}

pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)
}

/// How many compiler errors become `cargo::error=` headlines (rustc's full text follows anyway).
pub(crate) const MAX_HEADLINES: usize = 5;

/// One message of rustc, from cargo's `--message-format=json`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Diagnostic {
    /// `error`, `warning`, `note`, …
    pub(crate) level: String,
    /// The one-line message (`cannot add `u32` to `f32``).
    pub(crate) message: String,
    /// `E0277`, when it has one.
    pub(crate) code: Option<String>,
    /// The primary span: file, line, column.
    pub(crate) at: Option<(String, u64, u64)>,
    /// The message as rustc prints it.
    pub(crate) rendered: String,
}

impl Diagnostic {
    /// rustc's short form: `src/lib.rs:14:28: error[E0277]: cannot add `u32` to `f32``.
    pub(crate) fn short(&self) -> String {
        let at = self.at.as_ref().map(|(f, l, c)| format!("{f}:{l}:{c}: ")).unwrap_or_default();
        let code = self.code.as_ref().map(|c| format!("[{c}]")).unwrap_or_default();
        format!("{at}{}{code}: {}", self.level, self.message)
    }
}

/// The compiler messages in cargo's JSON output, minus rustc's closing summaries ("aborting
/// due to …") and duplicates.
pub(crate) fn compiler_messages(stdout: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v["reason"] != "compiler-message" {
            continue;
        }
        let m = &v["message"];
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let message = text(&m["message"]);
        if message.starts_with("aborting due to")
            || message.ends_with("warnings emitted")
            || message.ends_with("warning emitted")
        {
            continue;
        }
        let at = m["spans"].as_array().and_then(|spans| {
            let s = spans.iter().find(|s| s["is_primary"] == true)?;
            Some((text(&s["file_name"]), s["line_start"].as_u64()?, s["column_start"].as_u64()?))
        });
        let d = Diagnostic {
            level: text(&m["level"]),
            message,
            code: m["code"]["code"].as_str().map(str::to_string),
            at,
            rendered: text(&m["rendered"]),
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The `.ptx` file among the artifacts cargo reports (`compiler-artifact`) for the package of
/// `manifest`.
pub(crate) fn ptx_artifact(stdout: &str, manifest: &Path) -> Option<PathBuf> {
    stdout.lines().filter(|l| l.starts_with('{')).find_map(|line| {
        let v = serde_json::from_str::<serde_json::Value>(line).ok()?;
        if v["reason"] != "compiler-artifact" || v["manifest_path"].as_str().map(Path::new) != Some(manifest) {
            return None;
        }
        v["filenames"].as_array()?.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".ptx")).map(PathBuf::from)
    })
}

/// cargo's progress and summary lines (`Compiling …`, `error: could not compile …`), which
/// say nothing about the error itself.
pub(crate) fn is_progress_line(line: &str) -> bool {
    let t = line.trim_start();
    ["Compiling ", "Checking ", "Finished ", "Updating ", "Locking ", "Downloading ", "Downloaded ", "Blocking "]
        .iter()
        .any(|p| t.starts_with(p))
        || t.starts_with("error: could not compile")
        || (t.starts_with("warning: ") && t.contains("generated"))
}

/// Reports a failed build from a build script and exits: `headlines` as `cargo::error=` lines
/// (cargo prints them first, and again in its dump of the script's stdout), `details` on stderr.
pub(crate) fn fail(headlines: &[String], details: &str) -> ! {
    for h in headlines {
        println!("cargo::error={}", h.replace('\n', " "));
    }
    if !details.is_empty() {
        eprintln!("{details}");
    }
    std::process::exit(1);
}
