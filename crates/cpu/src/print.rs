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
//! and nothing another thread prints can land inside one of its lines. A buffer that reaches
//! [`FLUSH_BYTES`] is written out during the launch (whole calls, in order): a GPU's printf
//! FIFO holds 1 MiB per launch by default and drops what does not fit; here nothing is
//! dropped. A call outside any launch is written at once.
//!
//! [`emit`] writes straight to file descriptor 1, in one piece, as the CUDA driver writes a
//! GPU's printf output: it never takes Rust's `stdout()` lock, so a launch never waits for a
//! thread that holds it (a `print!` in progress, a capture switching the descriptor). What
//! Rust's `stdout()` still buffers then (a half line, `print!` without a newline) comes after
//! it. [`stdout_gate`] keeps [`emit`] from writing while a capture switches the descriptor.

use std::cell::Cell;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};

/// Bytes of printf output a launch keeps before it writes them out (during the launch).
pub const FLUSH_BYTES: usize = 1 << 20;

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
    let mut b = buf.lock();
    b.extend_from_slice(bytes);
    if b.len() >= FLUSH_BYTES {
        // Under the buffer's lock (then the gate; `emit` waits for nothing else): the calls
        // stay in order.
        emit(&b);
        b.clear();
    }
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

/// Held while device output is written to file descriptor 1, and while a capture switches
/// that descriptor.
static GATE: Mutex<()> = Mutex::new(());

/// The gate between [`emit`] and a capture of standard output: a capture takes it (after
/// Rust's `stdout()` lock: [`emit`] takes nothing else, so no order of the two can deadlock)
/// while it redirects file descriptor 1 and while it restores it, so that one [`emit`] lands
/// wholly in the capture or wholly outside it.
#[doc(hidden)]
pub fn stdout_gate() -> MutexGuard<'static, ()> {
    GATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes device output to standard output (file descriptor 1) in one piece, under
/// [`stdout_gate`]; never waits for Rust's `stdout()` lock.
pub fn emit(bytes: &[u8]) {
    let _gate = stdout_gate();
    write_fd1(bytes);
}

#[cfg(unix)]
fn write_fd1(bytes: &[u8]) {
    use std::os::fd::FromRawFd;
    // SAFETY: file descriptor 1 is the process's standard output (a capture switches it only
    // under the gate the caller holds); `ManuallyDrop` keeps it from being closed.
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

    /// Every thread of a launch, on every worker, writes into the one buffer of the launch,
    /// which is unset again when it returns.
    #[test]
    fn the_threads_of_a_launch_share_one_buffer() {
        let seen = Mutex::new(Vec::new());
        launch(&LaunchSpec::new(3u32, 4u32).workers(2), &|| {
            device_print(format!("printf from thread {}\n", thread_rank()).as_bytes());
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

    /// A launch writes its output without Rust's `stdout()` lock: it finishes while another
    /// thread holds that lock (as `cohort_runtime::capture_stdout` does for a whole capture).
    #[test]
    fn output_is_written_without_waiting_for_the_stdout_lock() {
        let held = std::io::stdout().lock();
        let t = std::thread::spawn(|| {
            launch(&LaunchSpec::new(2u32, 2u32), &|| device_print(b"printf while stdout() is locked\n")).unwrap();
        });
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !t.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let finished = t.is_finished();
        drop(held);
        t.join().unwrap();
        assert!(finished, "the launch waited for the stdout() lock");
    }
}
