//! Device `printf` output on the CPU device: collected per host launch, written to standard
//! output when the launch returns, as a GPU's driver writes its printf buffer when the host
//! synchronizes.
//!
//! A kernel's `printf!` (the device library's host build) formats its line and hands it to
//! [`device_print`], which appends it whole to the buffer of the launch running on this OS
//! thread (the threads of one host launch and of every grid it launches from the device share
//! one buffer). [`launch_typed`](crate::launch_typed) writes the buffer with [`emit`] when the
//! host launch has completed, child grids included, before it returns: so a launch's output is
//! one write, in the order the calls were made, on standard output before the launch returns,
//! and nothing another thread prints can land inside one of its lines. The buffer grows as
//! needed (a GPU's printf FIFO holds 1 MiB per launch by default and drops what does not fit;
//! here nothing is dropped, and nothing is written before the launch returns, which would make
//! a worker thread wait for `stdout()` while the launching thread may hold it). A call outside
//! any launch is written at once.
//!
//! [`emit`] writes through Rust's `stdout()` lock, except while a capture of file descriptor 1
//! holds that lock (`cohort_runtime::capture_stdout`, through [`stdout_gate`]): then it writes
//! to the descriptor directly, so that a launch on another thread neither waits for the capture
//! to end (which could wait for that thread) nor writes into the middle of someone's line.

use std::cell::Cell;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};

/// One host launch's printf output.
pub(crate) struct PrintBuffer {
    bytes: Mutex<Vec<u8>>,
}

impl PrintBuffer {
    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

thread_local! {
    /// The printf buffer of the launch whose threads run on this OS thread (null: none).
    static PRINT: Cell<*const PrintBuffer> = const { Cell::new(core::ptr::null()) };
}

/// Appends one `printf` call's output (a whole call) to the running launch's buffer, or writes
/// it at once outside a launch.
pub fn device_print(bytes: &[u8]) {
    let p = PRINT.with(Cell::get);
    if p.is_null() {
        emit(bytes);
        return;
    }
    // SAFETY: `PRINT` points at the buffer of the launch running on this OS thread: it lives in
    // `launch_typed`'s frame (a `PrintScope`) until every thread of the launch and of its child
    // grids has finished, and is unset on this thread before that frame ends.
    let buf = unsafe { &*p };
    buf.lock().extend_from_slice(bytes);
}

/// The printf buffer of one launch (made by the host launch, shared by its child grids), set
/// on the launching OS thread while the launch runs.
pub(crate) struct PrintScope {
    /// The host launch's own buffer; `None` for a launch inside another (a child grid).
    owned: Option<Box<PrintBuffer>>,
    ptr: *const PrintBuffer,
    prev: *const PrintBuffer,
}

// SAFETY: other threads only read `ptr` (`install`), a pointer to a `Sync` buffer that lives
// until the scope drops; `owned` and `prev` are used by `Drop`, on the thread that made it.
unsafe impl Sync for PrintScope {}

impl PrintScope {
    /// The buffer of the launch this OS thread is already in, or a new one for a host launch.
    pub(crate) fn enter() -> Self {
        let prev = PRINT.with(Cell::get);
        if !prev.is_null() {
            return Self { owned: None, ptr: prev, prev };
        }
        let owned = Box::new(PrintBuffer { bytes: Mutex::new(Vec::new()) });
        let ptr: *const PrintBuffer = &*owned;
        PRINT.with(|c| c.set(ptr));
        Self { owned: Some(owned), ptr, prev }
    }

    /// Makes the buffer this launch's on a worker OS thread, until the guard drops.
    pub(crate) fn install(&self) -> PrintInstalled {
        PrintInstalled(PRINT.with(|c| c.replace(self.ptr)))
    }
}

impl Drop for PrintScope {
    fn drop(&mut self) {
        PRINT.with(|c| c.set(self.prev));
        if let Some(buf) = self.owned.take() {
            let bytes = buf.bytes.into_inner().unwrap_or_else(|p| p.into_inner());
            if !bytes.is_empty() {
                emit(&bytes);
            }
        }
    }
}

/// Restores a worker's previous buffer when dropped.
pub(crate) struct PrintInstalled(*const PrintBuffer);

impl Drop for PrintInstalled {
    fn drop(&mut self) {
        PRINT.with(|c| c.set(self.0));
    }
}

/// `true` while a capture of file descriptor 1 holds Rust's `stdout()` lock.
static CAPTURING: Mutex<bool> = Mutex::new(false);

/// The gate between [`emit`] and a capture of standard output. A capture takes it, then
/// Rust's `stdout()` lock, redirects file descriptor 1 and sets it to `true` before letting go
/// of it; at the end it takes it again (still holding the `stdout()` lock), restores the
/// descriptor and sets it to `false`. [`emit`] holds it while it writes, so it never writes
/// while the descriptor is being switched, and never waits for the `stdout()` lock while a
/// capture holds it (lock order: this gate, then `stdout()`).
#[doc(hidden)]
pub fn stdout_gate() -> MutexGuard<'static, bool> {
    CAPTURING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes device output to standard output in one piece: through Rust's `stdout()` lock (after
/// whatever it buffered), or, while a capture holds that lock, straight to file descriptor 1.
pub fn emit(bytes: &[u8]) {
    let gate = stdout_gate();
    if *gate {
        write_fd1(bytes);
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(bytes);
        let _ = out.flush();
    }
    drop(gate);
}

#[cfg(unix)]
fn write_fd1(bytes: &[u8]) {
    use std::os::fd::FromRawFd;
    // SAFETY: file descriptor 1 is open (a capture redirected it to its file and restores it
    // only under the gate this caller holds); `ManuallyDrop` keeps it from being closed.
    let fd1 = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
    let _ = (&*fd1).write_all(bytes);
}

#[cfg(not(unix))]
fn write_fd1(bytes: &[u8]) {
    let _ = std::io::stdout().write_all(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LaunchSpec, launch, thread_rank};

    /// Two launches whose threads each print: every call lands in its launch's buffer, and the
    /// buffer is written when the launch returns (here: kept, not written, to look at it).
    #[test]
    fn a_launch_collects_its_threads_output_in_call_order() {
        let seen = Mutex::new(Vec::new());
        launch(&LaunchSpec::new(3u32, 4u32), &|| {
            let r = thread_rank();
            device_print(format!("a {r}\n").as_bytes());
            // SAFETY: inside a launch, PRINT is the launch's live buffer.
            let p = PRINT.with(Cell::get);
            assert!(!p.is_null(), "no buffer inside a launch");
            seen.lock().unwrap().push(p as usize);
        })
        .unwrap();
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 12);
        assert!(seen.iter().all(|&p| p == seen[0]), "the blocks of one launch share one buffer");
        assert!(PRINT.with(Cell::get).is_null(), "the buffer is unset after the launch");
    }
}
