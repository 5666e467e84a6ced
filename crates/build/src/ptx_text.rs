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

/// `Err` unless the PTX was built for `arch` (its `.target sm_XX` directive): the shared device
/// directory never hands one architecture's module to another.
pub(crate) fn check_target(ptx: &[u8], arch: u32, path: &Path) -> Result<(), BuildError> {
    let text = String::from_utf8_lossy(ptx);
    let target = text.lines().find_map(|l| l.trim_start().strip_prefix(".target"));
    let first = target.and_then(|t| t.split([' ', ',', '\t']).find(|w| !w.is_empty()));
    if first == Some(format!("sm_{arch}").as_str()) {
        return Ok(());
    }
    Err(BuildError::Other(format!(
        "{} is not sm_{arch} PTX (its .target is {:?}): the device build wrote another module than asked",
        path.display(),
        target.map(str::trim)
    )))
}
