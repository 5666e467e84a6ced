//! Capturing device `printf` output.

use std::io::{Read, Write};
use std::sync::Mutex;

static CAPTURE: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread is inside `capture_stdout`: a capture inside it would wait for the
    /// turn this thread holds (a deadlock), so it is refused.
    static CAPTURING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as capturing until dropped (also when `f` panics).
struct Capturing;

impl Capturing {
    fn enter() -> std::io::Result<Self> {
        if CAPTURING.with(|c| c.replace(true)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "capture_stdout inside capture_stdout on one thread: the inner capture would wait for the outer \
                 one to end (it holds the process's standard output); capture once, around both",
            ));
        }
        Ok(Capturing)
    }
}

impl Drop for Capturing {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.set(false));
    }
}

/// Runs `f` with the process's standard output (file descriptor 1, where the CUDA driver
/// writes device `printf` output when the host synchronizes, and where the CPU device writes a
/// launch's output when it returns) redirected to a temporary file, and returns `f`'s result
/// with everything written meanwhile.
///
/// Synchronize inside `f` (the driver flushes the printf buffer at synchronization).
///
/// The redirection is switched while this thread holds Rust's `stdout()` lock (after flushing
/// it and C's streams), so nothing printed before the capture lands in it, and what a CPU-device
/// launch writes ([`cohort_cpu::emit`], one piece per launch) is wholly in it or wholly out. The
/// lock is *not* held while `f` runs: `f` may wait for anything (a device-wide synchronize, a
/// host function, another thread) without waiting for some other thread's `println!`. So what
/// other threads print meanwhile lands in the capture too (a test harness's `test name ... `
/// can come before a line of the device's); look for a kernel's lines by their content. The
/// device output of launches from any thread is captured, and so is what the process writes to
/// file descriptor 1 without Rust's `stdout()` (C libraries: NCCL's `NCCL_DEBUG` log, a C
/// `printf`). Captures in one process take turns.
///
/// # Errors
/// If the temporary file cannot be made or read, or the redirection fails; a capture inside
/// `f` (on the same thread) is an error of kind [`std::io::ErrorKind::WouldBlock`], not a
/// deadlock.
#[cfg(unix)]
pub fn capture_stdout<R>(f: impl FnOnce() -> R) -> std::io::Result<(R, String)> {
    use std::os::fd::AsRawFd;
    // Before taking the turn: this thread may hold it already.
    let _capturing = Capturing::enter()?;
    let _turn = CAPTURE.lock().unwrap_or_else(|p| p.into_inner());
    let path = std::env::temp_dir().join(format!(
        "cohort-stdout-{}-{:?}.txt",
        std::process::id(),
        std::thread::current().id()
    ));
    let file = std::fs::File::create(&path)?;
    // `stdout()`, then the gate (`cohort_cpu::emit` takes only the gate), for the switch only.
    let saved = {
        let mut out = std::io::stdout().lock();
        // What was printed before (a half line included) goes to the real standard output.
        out.flush()?;
        // SAFETY: flushing every C stream is always allowed.
        unsafe { libc::fflush(std::ptr::null_mut()) };
        let _gate = cohort_cpu::stdout_gate();
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
        saved
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    {
        let mut out = std::io::stdout().lock();
        let _ = out.flush();
        let _gate = cohort_cpu::stdout_gate();
        // SAFETY: as above; then fd 1 is restored and `saved` closed.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(saved, 1);
            libc::close(saved);
        }
    }
    let mut text = String::new();
    std::fs::File::open(&path)?.read_to_string(&mut text)?;
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(r) => Ok((r, text)),
        Err(p) => std::panic::resume_unwind(p),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::capture_stdout;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A capture's closure may wait for a thread that prints with `println!`: the capture does
    /// not hold Rust's `stdout()` lock meanwhile (when it did, this deadlocked — a closure that
    /// synchronizes a GPU waits the same way for a host function that prints), and what the
    /// other thread printed is captured.
    #[test]
    fn the_closure_may_wait_for_a_thread_that_prints() {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = capture_stdout(|| {
                // Through `stdout()` itself (the test harness diverts `println!` of a test's
                // threads before it reaches `stdout()`).
                std::thread::spawn(|| {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "printed by another thread while a capture waits for it").and_then(|()| out.flush())
                })
                .join()
            });
            let _ = tx.send(r.map(|(joined, text)| (joined.is_ok_and(|w| w.is_ok()), text)));
        });
        let (joined, text) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the capture deadlocked with a thread blocked in println!")
            .expect("capture_stdout failed");
        assert!(joined);
        assert!(text.contains("printed by another thread while a capture waits for it"), "captured: {text:?}");
    }
}
