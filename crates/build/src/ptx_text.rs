//! What the builder reads and rewrites in PTX text: whether it calls the device runtime, its
//! `.target`, and checked mode's call-site markers.

use std::path::Path;

use crate::BuildError;

/// The symbol prefix of the device runtime's CDP2 entry points: PTX that mentions it must be
/// linked with `libcudadevrt.a`.
pub const DEVICE_RUNTIME_MARK: &str = "__cudaCDP2";

/// Whether PTX text calls the device runtime (a kernel launches kernels).
#[must_use]
pub fn needs_device_runtime(ptx: &str) -> bool {
    ptx.contains(DEVICE_RUNTIME_MARK)
}

/// What a checked-mode call-site marker says in PTX before the builder numbers it: the device
/// library's `raw::site_marker` emits `mov.u32 %r, 0; // cohort-site?` at each collective's
/// check, one per call instruction after inlining (the same text as
/// `cohort::raw::SITE_MARKER_UNNUMBERED`).
pub const SITE_MARKER_UNNUMBERED: &str = "// cohort-site?";
/// What a numbered marker says, before its number (`cohort::raw::SITE_MARKER_NUMBERED`).
pub const SITE_MARKER_NUMBERED: &str = "// cohort-site=";

/// Numbers checked mode's call-site markers: the `n`-th `mov.u32 %r, 0; // cohort-site?` of the
/// module becomes `mov.u32 %r, n; // cohort-site=n` (`n` from 1). Checked mode compares these
/// numbers between the members of a collective, so each call instruction needs its own; the
/// runtime refuses PTX whose markers are not numbered. Returns the text and how many markers
/// it numbered (PTX without markers, as release builds are, comes back unchanged).
///
/// # Errors
/// A marker in another form than the device library's (the text of the line).
pub fn number_site_markers(ptx: &str) -> Result<(String, u32), String> {
    if !ptx.contains(SITE_MARKER_UNNUMBERED) {
        return Ok((ptx.to_owned(), 0));
    }
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 64);
    let mut n = 0u32;
    for line in ptx.split_inclusive('\n') {
        let Some(at) = line.find(SITE_MARKER_UNNUMBERED) else {
            out.push_str(line);
            continue;
        };
        let (code, rest) = line.split_at(at);
        let Some(head) = code.trim_end().strip_suffix(", 0;").filter(|h| h.trim_start().starts_with("mov.u32")) else {
            return Err(format!("a call-site marker in an unexpected form: `{}`", line.trim()));
        };
        n = n.checked_add(1).ok_or("more than 2^32 call-site markers")?;
        let rest = &rest[SITE_MARKER_UNNUMBERED.len()..];
        out.push_str(&format!("{head}, {n}; {SITE_MARKER_NUMBERED}{n}{rest}"));
    }
    Ok((out, n))
}

/// What a kernel's launch-bounds marker says in PTX before its numbers (the same text as
/// `cohort::raw::LAUNCH_BOUNDS_MARKER`): `// cohort-launch-bounds T B R`, emitted as the first
/// instruction of the entry of a `#[kernel(launch_bounds(T, B), max_registers(R))]` kernel.
pub const LAUNCH_BOUNDS_MARKER: &str = "// cohort-launch-bounds ";
/// What [`apply_launch_bounds`] leaves of a marker it applied (a comment the runtime accepts).
pub const LAUNCH_BOUNDS_APPLIED: &str = "// cohort-launch-bounds-applied ";

/// Gives each entry that holds a launch-bounds marker the directives it asks for, between its
/// parameter list and its body: `.maxntid T, 1, 1` (T > 0), `.minnctapersm B` (B > 0) and
/// `.maxnreg R` (R > 0), as nvcc writes CUDA C++'s `__launch_bounds__(T, B)` and
/// `__maxnreg__(R)`; the marker becomes [`LAUNCH_BOUNDS_APPLIED`]. Returns the text and how many
/// entries it bounded (PTX without markers comes back unchanged).
///
/// # Errors
/// A marker outside an entry, in another form than the device library's, or two different
/// markers in one entry.
pub fn apply_launch_bounds(ptx: &str) -> Result<(String, u32), String> {
    if !ptx.contains(LAUNCH_BOUNDS_MARKER) {
        return Ok((ptx.to_owned(), 0));
    }
    let lines: Vec<&str> = ptx.split_inclusive('\n').collect();
    // Where each function's body opens (`{` alone on its line) and whether it is an entry.
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut n = 0u32;
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i].trim_start();
        let is_entry = head.contains(".entry ");
        if !(is_entry || head.contains(".func ")) || head.starts_with("//") {
            if lines[i].contains(LAUNCH_BOUNDS_MARKER) {
                return Err(format!("a launch-bounds marker outside any function: `{}`", lines[i].trim()));
            }
            out.push_str(lines[i]);
            i += 1;
            continue;
        }
        // The header runs to the line that is `{` alone (a declaration, `.extern .func …;`, ends
        // with `;` before it); the body to the line that is `}` alone.
        let open = (i..lines.len())
            .find(|&j| lines[j].trim() == "{" || lines[j].trim_end().ends_with(';'))
            .ok_or("a function without a body")?;
        if lines[open].trim() != "{" {
            for line in &lines[i..=open] {
                out.push_str(line);
            }
            i = open + 1;
            continue;
        }
        let close =
            (open..lines.len()).find(|&j| lines[j].trim_end() == "}").ok_or("a function body without its end")?;
        let mut bounds: Option<[u32; 3]> = None;
        for line in &lines[open..close] {
            let Some(at) = line.find(LAUNCH_BOUNDS_MARKER) else { continue };
            if !is_entry {
                return Err(format!("a launch-bounds marker in a device function (not an entry): `{}`", line.trim()));
            }
            let nums: Vec<u32> = line[at + LAUNCH_BOUNDS_MARKER.len()..]
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| format!("a launch-bounds marker in an unexpected form: `{}`", line.trim()))?;
            let &[t, b, r] = nums.as_slice() else {
                return Err(format!("a launch-bounds marker in an unexpected form: `{}`", line.trim()));
            };
            if bounds.is_some_and(|x| x != [t, b, r]) {
                return Err(format!("two different launch-bounds markers in one entry: `{}`", line.trim()));
            }
            bounds = Some([t, b, r]);
        }
        for line in &lines[i..open] {
            out.push_str(line);
        }
        if let Some([t, b, r]) = bounds {
            n += 1;
            if t > 0 {
                out.push_str(&format!(".maxntid {t}, 1, 1\n"));
            }
            if b > 0 {
                out.push_str(&format!(".minnctapersm {b}\n"));
            }
            if r > 0 {
                out.push_str(&format!(".maxnreg {r}\n"));
            }
        }
        for line in &lines[open..=close] {
            out.push_str(&line.replace(LAUNCH_BOUNDS_MARKER, LAUNCH_BOUNDS_APPLIED));
        }
        i = close + 1;
    }
    Ok((out, n))
}

/// `Err` unless the PTX was built for `arch` (`sm_90`, `sm_90a`: its `.target` directive): the
/// shared device directory never hands one architecture's module to another.
pub(crate) fn check_target(ptx: &[u8], arch: &str, path: &Path) -> Result<(), BuildError> {
    let text = String::from_utf8_lossy(ptx);
    let target = text.lines().find_map(|l| l.trim_start().strip_prefix(".target"));
    let first = target.and_then(|t| t.split([' ', ',', '\t']).find(|w| !w.is_empty()));
    if first == Some(arch) {
        return Ok(());
    }
    Err(BuildError::Other(format!(
        "{} is not {arch} PTX (its .target is {:?}): the device build wrote another module than asked",
        path.display(),
        target.map(str::trim)
    )))
}
