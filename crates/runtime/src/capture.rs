//! Capturing device `printf` output.

use std::io::{Read, Write};
use std::sync::Mutex;

static CAPTURE: Mutex<()> = Mutex::new(());

/// Runs `f` with the process's standard output (file descriptor 1, where the CUDA driver
/// writes device `printf` output when the host synchronizes) redirected to a temporary file,
/// and returns `f`'s result with everything written meanwhile.
///
/// Synchronize inside `f` (the driver flushes the printf buffer at synchronization). Anything
/// else the process prints to stdout meanwhile is captured too; captures in one process take
/// turns.
///
/// # Errors
/// If the temporary file cannot be made or read, or the redirection fails.
#[cfg(unix)]
pub fn capture_stdout<R>(f: impl FnOnce() -> R) -> std::io::Result<(R, String)> {
    use std::os::fd::AsRawFd;
    let _turn = CAPTURE.lock().unwrap_or_else(|p| p.into_inner());
    let path = std::env::temp_dir().join(format!(
        "cohort-stdout-{}-{:?}.txt",
        std::process::id(),
        std::thread::current().id()
    ));
    let file = std::fs::File::create(&path)?;
    std::io::stdout().flush()?;
    // SAFETY: flushing every C stream is always allowed.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    // SAFETY: duplicating fd 1 has no preconditions.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `file` is open; fd 1 now refers to it until restored below.
    if unsafe { libc::dup2(file.as_raw_fd(), 1) } < 0 {
        // SAFETY: `saved` is ours.
        unsafe { libc::close(saved) };
        return Err(std::io::Error::last_os_error());
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let _ = std::io::stdout().flush();
    // SAFETY: as above; then fd 1 is restored and `saved` closed.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved, 1);
        libc::close(saved);
    }
    let mut text = String::new();
    std::fs::File::open(&path)?.read_to_string(&mut text)?;
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(r) => Ok((r, text)),
        Err(p) => std::panic::resume_unwind(p),
    }
}
