//! Communicators that can be aborted at any time, the operations enqueued on them, and the
//! watchdog that turns a collective that never completes into an error (see the parent
//! module's docs, "Hangs").

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::ledger::{Call, Ledger, Refusal};
use super::{NCCL_IN_PROGRESS, NCCL_SUCCESS, NcclError, NcclId, NcclResult, RawComm, RawResult};
use crate::device::Gpu;
use crate::stream::StreamWork;
use crate::track::Mark;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The environment variable that sets the default [`timeout`], in seconds.
pub const TIMEOUT_VAR: &str = "COHORT_NCCL_TIMEOUT";

/// The default deadline when [`TIMEOUT_VAR`] is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an NCCL operation may take before its communicator is aborted: the value of
/// [`TIMEOUT_VAR`] (seconds, fractions allowed) if set, else [`DEFAULT_TIMEOUT`]. Each
/// communicator starts with it; [`Comm::set_timeout`](super::Comm::set_timeout) changes one.
#[must_use]
pub fn timeout() -> Duration {
    static T: OnceLock<Duration> = OnceLock::new();
    *T.get_or_init(|| parse_timeout(std::env::var(TIMEOUT_VAR).ok().as_deref()))
}

/// [`TIMEOUT_VAR`]'s value as a deadline: positive seconds (up to a year), else the default.
fn parse_timeout(v: Option<&str>) -> Duration {
    v.and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 365.0 * 86400.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

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
                    return Err(super::arg(format!(
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
            return Err(super::arg(format!(
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
    fn watch(&self, now: Instant) -> bool {
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

/// What to do with an operation that has not finished.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Wait,
    /// Abort its communicators, for this reason (completing "NCCL: <operation> …").
    Abort(String),
}

/// The watchdog's rule: abort when NCCL reports an error on one of the communicators
/// (`failed`: the rank and the code), or when the operation began on the GPU (`started`) more
/// than `timeout` ago.
pub(crate) fn judge(
    now: Instant,
    started: Option<Instant>,
    timeout: Duration,
    failed: Option<(usize, i32)>,
) -> Verdict {
    if let Some((rank, code)) = failed {
        return Verdict::Abort(format!(
            "failed: NCCL reported error {code} on rank {rank}'s communicator; the communicator is aborted"
        ));
    }
    match started {
        Some(t) if now.duration_since(t) > timeout => Verdict::Abort(format!(
            "did not complete within {:.1} s of starting on the GPU ({TIMEOUT_VAR}, Comm::set_timeout): a rank of the \
             communicator did not make it, or made a different call (ranks in other processes are not compared); the \
             communicator is aborted",
            timeout.as_secs_f64()
        )),
        _ => Verdict::Wait,
    }
}

/// What a poll of the communicators being enqueued on found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Poll {
    /// All ready.
    Ready,
    /// Some still in progress.
    InProgress,
    /// A failure: the rank and the code.
    Failed(usize, i32),
    /// A communicator was aborted.
    Aborted,
}

/// Polls `poll` until it is no longer [`Poll::InProgress`] or `timeout` has passed since
/// `since`: the enqueueing of a non-blocking communicator's operations, bounded.
pub(crate) fn poll_until(since: Instant, timeout: Duration, mut poll: impl FnMut() -> Poll) -> Result<(), Poll> {
    let mut spins = 0u32;
    loop {
        match poll() {
            Poll::Ready => return Ok(()),
            Poll::InProgress if since.elapsed() > timeout => return Err(Poll::InProgress),
            Poll::InProgress => {}
            other => return Err(other),
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(if spins < 1024 { 20 } else { 1000 }));
        }
    }
}

/// The state of `cells` for [`poll_until`].
pub(crate) fn poll_cells(cells: &[Arc<Cell>]) -> Poll {
    let mut all = Poll::Ready;
    for c in cells {
        match c.state() {
            State::Ready => {}
            State::InProgress => all = Poll::InProgress,
            State::Failed(code) => return Poll::Failed(c.rank, code),
            State::Aborted => return Poll::Aborted,
        }
    }
    all
}

/// The watchdog: a thread that looks at every pending operation every few milliseconds.
struct Watchdog {
    ops: Mutex<Vec<Arc<OpState>>>,
    wake: Condvar,
}

/// How often the watchdog looks.
const PERIOD: Duration = Duration::from_millis(5);

fn watchdog() -> &'static Watchdog {
    static W: OnceLock<Watchdog> = OnceLock::new();
    static START: std::sync::Once = std::sync::Once::new();
    let w = W.get_or_init(|| Watchdog { ops: Mutex::new(Vec::new()), wake: Condvar::new() });
    START.call_once(|| {
        let spawned = std::thread::Builder::new().name("cohort-nccl-watchdog".into()).spawn(move || {
            loop {
                let ops: Vec<Arc<OpState>> = {
                    let mut g = lock(&w.ops);
                    while g.is_empty() {
                        g = w.wake.wait(g).unwrap_or_else(|p| p.into_inner());
                    }
                    g.clone()
                };
                let now = Instant::now();
                let finished: Vec<*const OpState> = ops.iter().filter(|o| !o.watch(now)).map(Arc::as_ptr).collect();
                if !finished.is_empty() {
                    lock(&w.ops).retain(|o| !finished.contains(&Arc::as_ptr(o)));
                }
                drop(ops);
                std::thread::sleep(PERIOD);
            }
        });
        // Without a watchdog, waits are unbounded again: say so once.
        if let Err(e) = spawned {
            eprintln!("cohort: the NCCL watchdog thread could not start ({e}): stuck collectives will hang");
        }
    });
    w
}

/// Has the watchdog watch `op` until it finishes or fails.
pub(crate) fn watch(op: Arc<OpState>) {
    let w = watchdog();
    lock(&w.ops).push(op);
    w.wake.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::ReduceOp;
    use crate::nccl::ledger::CallKind;

    /// Aborts per (fake) handle.
    static ABORTED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    static QUERY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

    unsafe extern "C" fn mock_abort(c: RawComm) -> RawResult {
        lock(&ABORTED).push(c as usize);
        0
    }
    unsafe extern "C" fn ready(_: RawComm, out: *mut RawResult) -> RawResult {
        // SAFETY: the caller passes a live int.
        unsafe { *out = NCCL_SUCCESS };
        0
    }
    unsafe extern "C" fn mock_query(_: RawComm, out: *mut RawResult) -> RawResult {
        // SAFETY: the caller passes a live int.
        unsafe { *out = QUERY.load(Ordering::SeqCst) };
        0
    }

    /// A cell whose handle is the fake `id`, seen only by the mocks.
    fn cell(rank: usize, id: usize) -> Arc<Cell> {
        Arc::new(Cell::new(rank, None, id as RawComm, mock_abort, ready))
    }

    fn aborts(id: usize) -> usize {
        lock(&ABORTED).iter().filter(|&&h| h == id).count()
    }

    fn ar(count: usize) -> Call {
        Call { kind: CallKind::AllReduce(ReduceOp::Sum), dtype: 7, count }
    }

    #[test]
    fn judge_waits_then_aborts_past_the_deadline_or_on_an_error() {
        let t0 = Instant::now();
        let d = Duration::from_millis(100);
        assert_eq!(judge(t0 + Duration::from_secs(9), None, d, None), Verdict::Wait, "not started: no deadline");
        assert_eq!(judge(t0 + Duration::from_millis(50), Some(t0), d, None), Verdict::Wait);
        let Verdict::Abort(why) = judge(t0 + Duration::from_millis(150), Some(t0), d, None) else { panic!() };
        assert!(why.contains("did not complete within 0.1 s") && why.contains(TIMEOUT_VAR), "{why}");
        let Verdict::Abort(why) = judge(t0, None, d, Some((1, 6))) else { panic!() };
        assert!(why.contains("error 6 on rank 1"), "{why}");
    }

    #[test]
    fn the_timeout_variable_is_positive_seconds_or_the_default() {
        assert_eq!(parse_timeout(Some("2.5")), Duration::from_millis(2500));
        assert_eq!(parse_timeout(Some(" 60 ")), Duration::from_secs(60));
        for bad in [None, Some(""), Some("soon"), Some("0"), Some("-3"), Some("inf"), Some("NaN"), Some("1e300")] {
            assert_eq!(parse_timeout(bad), DEFAULT_TIMEOUT, "{bad:?}");
        }
    }

    #[test]
    fn poll_until_is_bounded() {
        let t0 = Instant::now();
        assert_eq!(poll_until(t0, Duration::from_millis(30), || Poll::InProgress), Err(Poll::InProgress));
        assert!(t0.elapsed() >= Duration::from_millis(30));
        let mut n = 0;
        assert_eq!(
            poll_until(Instant::now(), Duration::from_secs(5), || {
                n += 1;
                if n < 100 { Poll::InProgress } else { Poll::Ready }
            }),
            Ok(())
        );
        assert_eq!(poll_until(Instant::now(), Duration::from_secs(5), || Poll::Failed(2, 3)), Err(Poll::Failed(2, 3)));
    }

    /// A call that disagrees with one another rank enqueued aborts the communicator: the
    /// pending operation fails (so its stream's waits report it), every handle is aborted
    /// once, and later calls are refused with the reason.
    #[test]
    fn a_mismatch_with_an_enqueued_call_aborts_and_fails_the_pending_operation() {
        let rec = Record::new(2, None);
        rec.join_all([0, 1]);
        let (c0, c1) = (cell(0, 0x1000), cell(1, 0x1001));
        rec.add_cell(c0.clone());
        rec.add_cell(c1.clone());
        let op0 = Arc::new(OpState::new("all_reduce of 64 f32 (Sum) on rank 0".into(), vec![], vec![c0.clone()]));
        rec.post(&[(0, ar(64))], &op0).unwrap();
        let op1 = Arc::new(OpState::new("all_reduce of 32 f32 (Sum) on rank 1".into(), vec![], vec![c1.clone()]));
        let e = rec.post(&[(1, ar(32))], &op1).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, NcclError::Mismatch(_)), "{e:?}");
        assert!(text.contains("ranks 0 and 1") && text.contains("count") && text.contains("aborted"), "{text}");
        assert!(matches!(op0.status(), OpStatus::Failed(ref w) if w.contains("count")), "{:?}", op0.status());
        assert!(op0.failure().is_some());
        assert_eq!((aborts(0x1000), aborts(0x1001)), (1, 1), "both ranks' handles aborted");
        assert_eq!((c0.state(), c1.state()), (State::Aborted, State::Aborted));
        let again = Arc::new(OpState::new("x".into(), vec![], vec![c0.clone()]));
        assert!(matches!(rec.post(&[(0, ar(64))], &again), Err(NcclError::Aborted(ref w)) if w.contains("count")));
        // Aborting again does nothing.
        rec.abort("again");
        assert_eq!((aborts(0x1000), aborts(0x1001)), (1, 1), "once");
    }

    /// Within one batch nothing was enqueued: refused, nothing aborted.
    #[test]
    fn a_mismatch_inside_one_group_refuses_without_aborting() {
        let rec = Record::new(2, None);
        rec.join_all([0, 1]);
        let c0 = cell(0, 0x2000);
        rec.add_cell(c0.clone());
        let op = Arc::new(OpState::new("g".into(), vec![], vec![c0.clone()]));
        assert!(matches!(rec.post(&[(0, ar(64)), (1, ar(65))], &op), Err(NcclError::Mismatch(_))));
        assert!(rec.aborted().is_none());
        assert_eq!((c0.state(), aborts(0x2000)), (State::Ready, 0));
        assert_eq!(op.status(), OpStatus::Pending);
    }

    #[test]
    fn dropping_a_rank_that_another_waits_for_aborts() {
        let rec = Record::new(2, None);
        rec.join_all([0, 1]);
        let c0 = cell(0, 0x3000);
        rec.add_cell(c0.clone());
        let op = Arc::new(OpState::new("all_reduce on rank 0".into(), vec![], vec![c0.clone()]));
        rec.post(&[(0, ar(8))], &op).unwrap();
        rec.leave(1);
        assert!(rec.aborted().is_some_and(|w| w.contains("rank 1's communicator was dropped")));
        assert!(op.failure().is_some());
        assert_eq!(aborts(0x3000), 1);
    }

    #[test]
    fn the_async_error_of_a_cell_is_read_under_its_lock() {
        let c = Arc::new(Cell::new(3, None, 0x4000 as RawComm, mock_abort, mock_query));
        QUERY.store(NCCL_IN_PROGRESS, Ordering::SeqCst);
        assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::InProgress);
        QUERY.store(6, Ordering::SeqCst);
        assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::Failed(3, 6));
        QUERY.store(0, Ordering::SeqCst);
        assert_eq!(poll_cells(std::slice::from_ref(&c)), Poll::Ready);
    }

    #[test]
    fn ids_join_one_record_per_id_and_refuse_a_rank_twice() {
        let id = NcclId::from_bytes([7; super::super::ID_BYTES]);
        let a = Record::join_id(&id, 2, 0).unwrap();
        let b = Record::join_id(&id, 2, 1).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.local_ranks(), vec![0, 1]);
        assert!(Record::join_id(&id, 2, 1).is_err(), "rank 1 twice");
        assert!(Record::join_id(&id, 3, 2).is_err(), "another size");
        drop((a, b));
        // Gone with its last communicator: the id starts afresh.
        let c = Record::join_id(&id, 2, 1).unwrap();
        assert_eq!(c.local_ranks(), vec![1]);
    }
}
