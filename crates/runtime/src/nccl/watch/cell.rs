//! A communicator's handle: used under its lock, its asynchronous state read, aborted once
//! (on a thread of its own).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::lock;
use crate::device::Gpu;
use crate::nccl::library::{NCCL_IN_PROGRESS, NCCL_SUCCESS, RawComm, RawResult};

/// `ncclCommAbort`.
pub(crate) type AbortFn = unsafe extern "C" fn(RawComm) -> RawResult;
/// `ncclCommGetAsyncError`.
pub(crate) type QueryFn = unsafe extern "C" fn(RawComm, *mut RawResult) -> RawResult;

/// A communicator handle (sent to the thread that aborts it).
pub(crate) struct Handle(pub(crate) RawComm);
// SAFETY: an NCCL communicator may be used from any thread, one at a time: every use holds
// its `Cell`'s lock, or owns the handle (after it was taken out to be aborted).
unsafe impl Send for Handle {}

/// What NCCL says of a communicator's last operations (`ncclCommGetAsyncError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Done enqueueing (NCCL accepts the next call).
    Ready,
    /// Still enqueueing (a non-blocking communicator's `ncclInProgress`).
    InProgress,
    /// An error: the communicator must be aborted.
    Failed(RawResult),
    /// Aborted already (by anyone; the record says why).
    Aborted,
}

/// One rank's communicator in this process: its handle, until it is aborted.
pub(crate) struct Cell {
    pub(crate) rank: usize,
    pub(crate) gpu: Option<Gpu>,
    /// `None` once aborted. Every NCCL call on the communicator is made holding this lock, so
    /// that the handle is never used while (or after) it is aborted.
    raw: Mutex<Option<Handle>>,
    abort: AbortFn,
    query: QueryFn,
}

impl Cell {
    pub(crate) fn new(rank: usize, gpu: Option<Gpu>, raw: RawComm, abort: AbortFn, query: QueryFn) -> Self {
        Self { rank, gpu, raw: Mutex::new(Some(Handle(raw))), abort, query }
    }

    /// The handle, locked: `None` once aborted.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<Handle>> {
        lock(&self.raw)
    }

    /// `ncclCommGetAsyncError`. A communicator another thread is making a call on (its lock
    /// is held: a blocking communicator may wait inside NCCL) is [`State::InProgress`]: this
    /// never waits for the lock.
    pub(crate) fn state(&self) -> State {
        let g = match self.raw.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return State::InProgress,
        };
        let Some(h) = g.as_ref() else { return State::Aborted };
        let mut err = NCCL_SUCCESS;
        // SAFETY: a live communicator (its lock is held: no one aborts it meanwhile); `err`
        // is a live int for NCCL to write.
        let rc = unsafe { (self.query)(h.0, &mut err) };
        match (rc, err) {
            (NCCL_SUCCESS, NCCL_SUCCESS) => State::Ready,
            (NCCL_SUCCESS, NCCL_IN_PROGRESS) => State::InProgress,
            (NCCL_SUCCESS, e) | (e, _) => State::Failed(e),
        }
    }

    /// On a thread of its own (`ncclCommAbort` may wait for the other ranks of this node, and
    /// a blocking communicator's lock may be held by a call waiting inside NCCL): takes the
    /// handle out under the lock (nothing uses it after) and aborts it.
    fn abort(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let cell = self.clone();
        std::thread::spawn(move || {
            let Some(h) = cell.lock().take() else { return };
            if cell.gpu.as_ref().is_none_or(|g| g.inner.bind().is_ok()) {
                // SAFETY: ours (taken out of the cell under its lock: no other call uses it),
                // aborted once, never used after.
                unsafe {
                    let _ = (cell.abort)(h.0);
                }
            }
        })
    }
}

/// Aborts `cells` all at once (one thread each) and waits for them, at most a little: an
/// `ncclCommAbort` that does not return (a bug of some NCCL versions) is left to finish alone.
pub(crate) fn abort_cells<'c>(cells: impl IntoIterator<Item = &'c Arc<Cell>>) {
    if crate::stream::in_host_fn() {
        return; // no CUDA call may be made there: leave them
    }
    let threads: Vec<_> = cells.into_iter().map(Cell::abort).collect();
    let until = Instant::now() + Duration::from_secs(30);
    for t in threads {
        while !t.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        if t.is_finished() {
            let _ = t.join();
        }
    }
}
