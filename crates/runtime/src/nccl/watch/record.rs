//! The ranks of one communicator that live in this process ([`Record`]: their calls compared,
//! their pending operations) and one enqueued group of operations ([`OpState`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::{Cell, State, Verdict, abort_cells, judge, lock, timeout};
use crate::nccl::error::arg;
use crate::nccl::ledger::{Call, Ledger, Refusal};
use crate::nccl::{NcclError, NcclId, NcclResult};
use crate::stream::StreamWork;
use crate::track::Mark;

/// The ranks of one communicator that live in this process, the calls they made (compared
/// across them: [`Ledger`]) and the operations still pending on them.
pub(crate) struct Record {
    /// The number of ranks.
    pub(crate) size: usize,
    /// The unique id of a communicator made by `Comm::from_rank` (its ranks in this process
    /// share this record), `None` for one made by `Comm::for_gpus`.
    id: Option<NcclId>,
    timeout_ns: AtomicU64,
    state: Mutex<RecordState>,
}

#[derive(Default)]
struct RecordState {
    ledger: Ledger,
    cells: Vec<Arc<Cell>>,
    aborted: Option<Arc<str>>,
    ops: Vec<Arc<OpState>>,
}

/// The records of communicators made by `Comm::from_rank`, by unique id.
static RECORDS: Mutex<Vec<(NcclId, usize, Weak<Record>)>> = Mutex::new(Vec::new());

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record").field("size", &self.size).field("id", &self.id).finish_non_exhaustive()
    }
}

impl Record {
    pub(crate) fn new(size: usize, id: Option<NcclId>) -> Self {
        Self {
            size,
            id,
            timeout_ns: AtomicU64::new(timeout().as_nanos().min(u64::MAX as u128) as u64),
            state: Mutex::new(RecordState::default()),
        }
    }

    /// The record of the communicator with unique id `id` and `size` ranks in this process
    /// (made now if none lives), with `rank` joined to it.
    ///
    /// # Errors
    /// [`NcclError::Cohort`] (an argument error) if `rank` has joined already, or the id is
    /// in use by a communicator of another size.
    pub(crate) fn join_id(id: &NcclId, size: usize, rank: usize) -> NcclResult<Arc<Self>> {
        let mut all = lock(&RECORDS);
        all.retain(|(_, _, w)| w.strong_count() > 0);
        let rec = match all.iter().find(|(i, _, _)| i == id) {
            Some((_, n, w)) => {
                if *n != size {
                    return Err(arg(format!(
                        "Comm::from_rank: this id is in use by a communicator of {n} ranks in this process, not {size}"
                    )));
                }
                w.upgrade().expect("kept only while alive")
            }
            None => {
                let rec = Arc::new(Self::new(size, Some(*id)));
                all.push((*id, size, Arc::downgrade(&rec)));
                rec
            }
        };
        if !lock(&rec.state).ledger.join(rank) {
            return Err(arg(format!(
                "Comm::from_rank: rank {rank} of this id already has a communicator in this process (NCCL wants each \
                 rank once)"
            )));
        }
        Ok(rec)
    }

    /// Adds local ranks (a communicator made by `Comm::for_gpus`).
    pub(crate) fn join_all(&self, ranks: impl IntoIterator<Item = usize>) {
        let mut s = lock(&self.state);
        for r in ranks {
            s.ledger.join(r);
        }
    }

    /// Forgets `rank`, whose communicator was not made.
    pub(crate) fn unjoin(&self, rank: usize) {
        lock(&self.state).ledger.unjoin(rank);
    }

    /// Adds the communicator of a local rank.
    pub(crate) fn add_cell(&self, cell: Arc<Cell>) {
        lock(&self.state).cells.push(cell);
    }

    /// The deadline of this communicator's operations.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout_ns.load(Ordering::Relaxed))
    }

    pub(crate) fn set_timeout(&self, t: Duration) {
        self.timeout_ns.store(t.as_nanos().clamp(1, u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// Why it was aborted, if it was.
    pub(crate) fn aborted(&self) -> Option<Arc<str>> {
        lock(&self.state).aborted.clone()
    }

    /// The ranks in this process.
    #[cfg(test)]
    pub(crate) fn local_ranks(&self) -> Vec<usize> {
        lock(&self.state).ledger.local().iter().copied().collect()
    }

    /// Posts a batch of calls (one group) to the ledger and `op` to the pending operations: a
    /// refused batch is an error, and one that disagrees with a call already enqueued aborts
    /// the communicator (that call's rank waits in NCCL for a call that will not come).
    pub(crate) fn post(&self, batch: &[(usize, Call)], op: &Arc<OpState>) -> NcclResult<()> {
        let refused = {
            let mut s = lock(&self.state);
            if let Some(why) = &s.aborted {
                return Err(NcclError::Aborted(why.to_string()));
            }
            match s.ledger.post(batch) {
                Ok(()) => {
                    s.ops.retain(|o| o.status() == OpStatus::Pending);
                    s.ops.push(op.clone());
                    return Ok(());
                }
                Err(r) => r,
            }
        };
        let text = format!("NCCL: {refused}");
        if let Refusal::Mismatch(m) = &refused
            && m.enqueued
        {
            let why = format!(
                "{text}. Rank {}'s call was enqueued already and would wait forever: the communicator is aborted",
                m.first.0
            );
            self.abort(&why);
            return Err(NcclError::Mismatch(why));
        }
        Err(NcclError::Mismatch(text))
    }

    /// Notes that a local rank's `Comm` is gone; aborts the communicator if a call another
    /// local rank enqueued waits for it.
    pub(crate) fn leave(&self, rank: usize) {
        let waiting = lock(&self.state).ledger.leave(rank);
        if let Some((r, call)) = waiting {
            self.abort(&format!(
                "NCCL: rank {rank}'s communicator was dropped before it made the {call} that rank {r} made: the \
                 communicator is aborted"
            ));
        }
    }

    /// Aborts every local rank's communicator, once, with `why`: the operations not known to
    /// have completed fail with it (before NCCL stops them, so that a wait that returns because
    /// they stopped sees the failure), and every later call is refused with it.
    pub(crate) fn abort(&self, why: &str) {
        let (cells, ops) = {
            let mut s = lock(&self.state);
            if s.aborted.is_some() {
                return;
            }
            s.aborted = Some(why.into());
            (s.cells.clone(), std::mem::take(&mut s.ops))
        };
        let why: Arc<str> = why.into();
        for op in &ops {
            op.fail_unless_done(&why);
        }
        abort_cells(&cells);
    }

    /// Whether an operation that uses `cell` has not finished.
    pub(crate) fn busy(&self, cell: &Arc<Cell>) -> bool {
        let ops: Vec<_> = lock(&self.state).ops.iter().filter(|o| o.uses(cell)).cloned().collect();
        ops.iter().any(|o| o.status() == OpStatus::Pending && !o.marks.get().is_some_and(|(_, end)| end.is_done()))
    }
}

/// Where an enqueued NCCL operation stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OpStatus {
    /// Enqueued (or being enqueued), not known finished.
    Pending,
    /// Finished.
    Done,
    /// Its communicator was aborted before it finished: why.
    Failed(Arc<str>),
}

/// One enqueued group of NCCL operations (what the watchdog watches and what the streams it
/// ran on report when they are waited for).
pub(crate) struct OpState {
    /// "all_reduce of 64 f32 (Sum) on rank 0, …".
    pub(crate) what: String,
    /// The communicators' records (weak: a record keeps its pending operations).
    records: Vec<Weak<Record>>,
    cells: Vec<Arc<Cell>>,
    timeout: Duration,
    status: Mutex<OpStatus>,
    /// Events recorded before and after the operations (on the group's lead stream), once
    /// enqueued.
    marks: OnceLock<(Mark, Mark)>,
    /// When the watchdog saw the start event complete: the operations began on the GPU.
    started: Mutex<Option<Instant>>,
}

impl fmt::Debug for OpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpState").field("what", &self.what).field("status", &self.status()).finish_non_exhaustive()
    }
}

impl OpState {
    pub(crate) fn new(what: String, records: Vec<Arc<Record>>, cells: Vec<Arc<Cell>>) -> Self {
        let timeout = records.iter().map(|r| r.timeout()).min().unwrap_or_else(timeout);
        Self {
            what,
            records: records.iter().map(Arc::downgrade).collect(),
            cells,
            timeout,
            status: Mutex::new(OpStatus::Pending),
            marks: OnceLock::new(),
            started: Mutex::new(None),
        }
    }

    pub(crate) fn status(&self) -> OpStatus {
        lock(&self.status).clone()
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    fn uses(&self, cell: &Arc<Cell>) -> bool {
        self.cells.iter().any(|c| Arc::ptr_eq(c, cell))
    }

    /// The events around the enqueued operations: the watchdog's deadline starts when the
    /// first completes, and the operations are done when the second does.
    pub(crate) fn set_marks(&self, start: Mark, end: Mark) {
        let _ = self.marks.set((start, end));
    }

    /// Whether it was wholly enqueued (its events recorded).
    pub(crate) fn is_enqueued(&self) -> bool {
        self.marks.get().is_some()
    }

    fn fail_unless_done(&self, why: &Arc<str>) {
        let done = self.marks.get().is_some_and(|(_, end)| end.is_done());
        let mut s = lock(&self.status);
        if *s == OpStatus::Pending {
            *s = if done { OpStatus::Done } else { OpStatus::Failed(why.clone()) };
        }
    }

    /// Aborts the operation's communicators with `why`.
    pub(crate) fn abort(&self, why: &str) {
        for r in self.records.iter().filter_map(Weak::upgrade) {
            r.abort(why);
        }
        // A record aborted before this operation was posted to it did not fail it.
        self.fail_unless_done(&why.into());
    }

    /// The watchdog's look at the operation at `now`: `false` once there is nothing more to
    /// watch.
    pub(super) fn watch(&self, now: Instant) -> bool {
        if self.status() != OpStatus::Pending {
            return false;
        }
        let Some((start, end)) = self.marks.get() else { return true }; // still being enqueued
        if end.is_done() {
            let mut s = lock(&self.status);
            if *s == OpStatus::Pending {
                *s = OpStatus::Done;
            }
            return false;
        }
        let started = {
            let mut st = lock(&self.started);
            if st.is_none() && start.is_done() {
                *st = Some(now);
            }
            *st
        };
        let failed = self.cells.iter().find_map(|c| match c.state() {
            State::Failed(code) => Some((c.rank, code)),
            _ => None,
        });
        match judge(now, started, self.timeout, failed) {
            Verdict::Wait => true,
            Verdict::Abort(why) => {
                self.abort(&format!("NCCL: {} {why}", self.what));
                false
            }
        }
    }
}

impl StreamWork for OpState {
    fn failure(&self) -> Option<Arc<str>> {
        match self.status() {
            OpStatus::Failed(why) => Some(why),
            _ => None,
        }
    }
}
