//! One rank's communicator ([`Comm`]): what it holds, and what dropping it does. Making one is
//! [`create`](super::create)'s; its operations are [`collective`](super::collective)'s and
//! [`p2p`](super::p2p)'s.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::watch::{self, Cell, Record};
use crate::device::Gpu;

/// One rank's NCCL communicator, on one [`Gpu`] (its primary context).
///
/// `Send` but not `Sync`: NCCL allows one thread at a time per communicator (and its calls
/// are numbered in the order that thread makes them: see "Ranks of one process").
pub struct Comm {
    pub(super) cell: Arc<Cell>,
    /// The ranks of this communicator in this process: their calls, compared.
    pub(super) record: Arc<Record>,
    pub(super) gpu: Gpu,
    pub(super) rank: usize,
    pub(super) size: usize,
    /// The communicators made together, aborted together when the last of them is dropped.
    pub(super) _made: Arc<Made>,
    pub(super) _not_sync: PhantomData<std::cell::Cell<()>>,
}

/// Communicators made by one call, aborted together when the last is dropped.
pub(super) struct Made {
    pub(super) record: Arc<Record>,
    pub(super) cells: Vec<Arc<Cell>>,
}

impl Drop for Made {
    fn drop(&mut self) {
        // A collective of theirs still running: it fails (its streams' waits say so, and those
        // of the other ranks of this process that take part, which could not complete now).
        if self.cells.iter().any(|c| self.record.busy(c)) {
            let ranks: Vec<usize> = self.cells.iter().map(|c| c.rank).collect();
            self.record.abort(&format!(
                "NCCL: the communicator of rank(s) {ranks:?} was dropped before its collective completed; the \
                 communicator is aborted"
            ));
        }
        // One thread per communicator, all at once: `ncclCommAbort` may wait for the other
        // ranks of this node, so aborting them one after another from one thread could hang.
        watch::abort_cells(&self.cells);
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // A call another rank of this process made and waits for in NCCL can't complete now.
        self.record.leave(self.rank);
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.gpu.info().ordinal)
            .finish()
    }
}

impl Comm {
    /// Sets the deadline of this communicator's operations (every rank of it in this process):
    /// how long creating it or enqueueing an operation may take, and how long an operation may
    /// run on the GPU, before the communicator is aborted and the operation fails
    /// ([`NcclError::Aborted`](super::NcclError::Aborted),
    /// [`Error::CollectiveAborted`](crate::Error::CollectiveAborted) from its stream's waits).
    /// It starts as [`timeout`](super::timeout()) (`COHORT_NCCL_TIMEOUT`); operations enqueued
    /// before keep theirs.
    pub fn set_timeout(&self, timeout: Duration) {
        self.record.set_timeout(timeout);
    }

    /// The deadline of this communicator's operations ([`Comm::set_timeout`]).
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.record.timeout()
    }

    /// Why this communicator was aborted, if it was: its calls fail with this reason.
    #[must_use]
    pub fn aborted(&self) -> Option<String> {
        self.record.aborted().map(|w| w.to_string())
    }

    /// This communicator's rank.
    #[must_use]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    #[must_use]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The GPU it runs on.
    #[must_use]
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
}
