//! Streams, events, host callbacks and graphs.
//!
//! # Stream-ordered safety
//!
//! Every device allocation, pinned host buffer and registered host range carries a record of
//! the operations still pending on it, per stream ([`crate::track`]). Each operation Cohort
//! enqueues — a typed kernel launch, an asynchronous copy or fill, a graph replay — first makes
//! its stream wait (`cuStreamWaitEvent`, on the GPU: the host does not block) for the pending
//! operations of *other* streams that conflict with it on the bytes it touches (a write after a
//! read or a write, a read after a write), then records itself. The host waits the same way
//! before it reads or writes memory the GPU may still be using: synchronous copies, the host
//! view of a pinned buffer, freeing a buffer. So:
//!
//! - two streams never race on a buffer: the second operation waits for the first on the GPU;
//! - nothing is freed, unregistered or handed to the host while an operation still uses it;
//! - operations on one stream are ordered by the stream and cost no event.
//!
//! Waits are *lazy*: recording an operation costs no CUDA call; only when another stream (or
//! the host) needs to wait for it does Cohort record an event on its stream, which then also
//! covers whatever that stream ran before.
//!
//! # Graph captures
//!
//! A capture ([`Stream::capture`]) is a [`Capture`] shared by the stream it began on and every
//! stream joined into it; a stream joins only by [`Stream::wait`]ing for an event recorded in
//! the capture (Cohort never makes a stream wait for such an event itself: see below). Each
//! stream's link to its capture sits under a lock that every operation holds for reading from
//! its checks to its enqueue ([`StreamInner::gate`]) and that beginning, joining and ending take
//! for writing, so an operation either sees the capture it will be captured into, or was
//! enqueued before the stream entered it. Then:
//!
//! - an operation on any stream of the capture is kept by the graph (its memory kept alive,
//!   [`Captured`]) instead of being ordered and recorded; host memory and host functions are
//!   refused, and so is every operation from another thread than the capturing one, which
//!   would otherwise go into the graph, never running where its caller expects;
//! - a stream's mark event is recorded just before it enters a capture and not again until the
//!   capture ends: other streams and the host that wait for the stream's earlier work wait for
//!   that event, which is real work, never a captured point (waiting for one would join the
//!   waiting stream into the capture);
//! - events recorded in a capture are known as such: the host cannot wait for, query or time
//!   them, and once the capture has ended no stream can wait for them.
//!
//! Which device a handle belongs to is checked wherever an operation combines two
//! ([`crate::peer`]): a mix is an [`Error::CrossDevice`] before any driver call.

use std::ffi::c_void;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, Weak};
use std::thread::ThreadId;

use cudarc::driver::DriverError;
use cudarc::driver::sys;

use crate::backend::{EventH, Fill, GraphExecH, GraphH, StreamH};
use crate::device::{Doing, Finished, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::track::{Alloc, CopyDst, CopySrc, Use, run_tracked};

/// Unique numbers for streams (and per-thread default streams, per thread).
static IDS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's key for the per-thread default stream.
    static PER_THREAD_KEY: u64 = IDS.fetch_add(1, Ordering::Relaxed);
    /// Whether this thread is running a host function ([`Stream::host_fn`]).
    static IN_HOST_FN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is running a host function: CUDA refuses calls there, and a
/// wait for the stream that runs it would never return.
pub(crate) fn in_host_fn() -> bool {
    IN_HOST_FN.with(std::cell::Cell::get)
}

/// The error for a Cohort call made inside a host function.
pub(crate) fn host_fn_error(what: &str) -> Error {
    Error::Argument(format!(
        "{what} inside a host function (Stream::host_fn): CUDA calls are not allowed there, and waiting for \
         the stream that runs it would never return"
    ))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// Created by Cohort, destroyed when the last reference goes.
    Owned,
    /// `CU_STREAM_LEGACY`, the legacy default stream.
    Legacy,
    /// `CU_STREAM_PER_THREAD`: a different stream on every thread that uses it.
    PerThread,
}

/// A captured operation's use of memory, kept by the graph (which keeps the memory alive).
pub(crate) struct Captured {
    pub(crate) alloc: Arc<Alloc>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) write: bool,
}

/// A graph capture in progress ([`Stream::capture`]), shared by every stream in it: the one it
/// began on and those joined into it through events recorded in it ([`Stream::wait`]).
///
/// Cohort knows which streams are in a capture without asking the driver: a stream enters one
/// only by beginning it or by waiting for an event recorded in it, both through this module
/// (raw handles aside), and both under the stream's write lock ([`StreamInner::capture`]),
/// which every operation on the stream holds for reading from its checks to its enqueue. So an
/// operation either sees the capture it will be captured into, or is enqueued before the
/// stream entered it.
pub(crate) struct Capture {
    /// The thread that captures: operations from other threads into the capture's streams
    /// are refused (they would go into the graph instead of running, unknown to their caller).
    /// `None` for a stream the driver left capturing after the end (refused to every thread).
    thread: Option<ThreadId>,
    /// The memory the operations captured on any of its streams use.
    used: Mutex<Vec<Captured>>,
    /// The streams joined into it (not the one it began on), to check when it ends.
    joined: Mutex<Vec<Weak<StreamInner>>>,
    /// Set once `cuStreamEndCapture` has returned: its streams capture no more.
    ended: AtomicBool,
}

impl Capture {
    fn new() -> Self {
        Self {
            thread: Some(std::thread::current().id()),
            used: Mutex::new(Vec::new()),
            joined: Mutex::new(Vec::new()),
            ended: AtomicBool::new(false),
        }
    }

    /// What a stream the driver did not take out of its capture is left in: a capture of no
    /// thread, which never ends.
    fn stuck() -> Self {
        Self { thread: None, ..Self::new() }
    }

    /// Whether it has not ended.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        !self.ended.load(Ordering::Acquire)
    }

    /// Keeps `uses` (the operands of an operation captured on one of its streams) for the
    /// graph; host memory is refused.
    pub(crate) fn keep(&self, uses: &[Use<'_>]) -> Result<()> {
        let mut list = self.used.lock().unwrap_or_else(|p| p.into_inner());
        for u in uses {
            match (u.alloc.kind, u.owner) {
                (kind, Some(owner)) if kind.device_only() => {
                    list.push(Captured { alloc: owner.clone(), start: u.start, end: u.end, write: u.write });
                }
                _ => {
                    return Err(Error::Argument(
                        "pinned, registered or managed memory cannot be captured into a graph: the host could use \
                         it while a replay runs; copy through device memory, or replay without a graph"
                            .into(),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
impl Capture {
    /// A capture of the calling thread, for other modules' tests (`interop`).
    pub(crate) fn new_for_tests() -> Self {
        Self::new()
    }
    /// Whether it kept no memory.
    pub(crate) fn is_empty_for_tests(&self) -> bool {
        self.used.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }
    /// Ends it.
    pub(crate) fn end_for_tests(&self) {
        self.ended.store(true, Ordering::Release);
    }
}

/// The error for an operation (`what`) from another thread into a stream that `capture` holds.
fn other_thread_error(what: &str, capture: &Capture) -> Error {
    let Some(thread) = capture.thread else {
        return Error::Argument(format!(
            "{what}: the stream is still in a graph capture that the driver did not end (cuStreamEndCapture left \
             it capturing); make a new stream"
        ));
    };
    Error::Argument(format!(
        "{what}: the stream is being captured into a graph by another thread ({:?}, Stream::capture); from this \
         thread the work would go into that graph instead of running, and the graph would not keep its memory. \
         Enqueue it from the capturing thread inside the capture, or on a stream outside the capture",
        thread
    ))
}

/// `cuStreamWaitEvent(stream, event)`. The caller has checked that both are of one kind of
/// device, and that both are outside any capture, or both in one, or that the wait joins the
/// stream into the event's capture (holding the stream's write lock).
fn wait_event(stream: &StreamInner, event: &Event) -> Result<()> {
    stream.gpu.bind()?;
    // SAFETY: live handles of devices of one kind (the caller's check), of one context or of
    // two (CUDA lets a stream wait for another device's event); as for captures, the caller's
    // check.
    unsafe { stream.gpu.backend.stream_wait_event(stream.raw, event.raw) }
        .map_err(stream.gpu.failed("waiting for an event"))
}

fn outside_event_error() -> Error {
    Error::Argument(
        "Stream::wait: the stream is in a graph capture, and the event was recorded outside it; a stream in a capture \
         waits only for events recorded in that capture (order the work before the capture instead)"
            .into(),
    )
}

/// The right to enqueue on a stream ([`StreamInner::gate`]): while it is held, the stream does
/// not begin, join or leave a capture.
pub(crate) struct Gate<'s> {
    /// `None` for the default streams, which never capture.
    guard: Option<RwLockReadGuard<'s, Option<Arc<Capture>>>>,
}

impl Gate<'_> {
    /// The capture the stream is in (the calling thread's: another thread's is refused by
    /// [`StreamInner::gate`]).
    #[inline]
    pub(crate) fn capture(&self) -> Option<&Arc<Capture>> {
        self.guard.as_ref().and_then(|g| g.as_ref()).filter(|c| c.active())
    }
}

/// A stream's mark: the event other streams and the host wait for (see [`StreamInner::make_wait`]).
struct MarkState {
    /// Created on first use.
    event: EventH,
    /// While the stream is in a capture: that capture, and the number of the stream's last
    /// operation before it. `event` was recorded just before the stream entered the capture
    /// (it covers every real operation of the stream) and is not re-recorded until the capture
    /// ends: recorded inside the capture it would be a captured event, and a stream waiting for
    /// it would join the capture.
    frozen: Option<(Arc<Capture>, u64)>,
}

impl MarkState {
    /// The number of the last real operation the event covers, while the stream is in an
    /// active capture.
    fn frozen_upto(&mut self) -> Option<u64> {
        match &self.frozen {
            Some((c, upto)) if c.active() => Some(*upto),
            Some(_) => {
                self.frozen = None;
                None
            }
            None => None,
        }
    }
}

pub(crate) struct StreamInner {
    pub(crate) raw: StreamH,
    pub(crate) gpu: Arc<GpuInner>,
    id: u64,
    pub(crate) kind: StreamKind,
    /// Whether it synchronizes with the legacy default stream.
    blocking: bool,
    /// An event re-recorded each time another stream or the host waits for this stream's
    /// work so far.
    mark: Mutex<MarkState>,
    /// Operations recorded on this stream (a sequence number for each).
    submitted: AtomicU64,
    /// Operations known finished (everything up to this number).
    completed: AtomicU64,
    /// The capture the stream is in (begun on it, or joined), if any: read-locked by each
    /// operation from its checks to its enqueue ([`StreamInner::gate`]), write-locked to begin,
    /// join or end one. Lock order: this, then allocations' records, events' states, marks.
    pub(crate) capture: RwLock<Option<Arc<Capture>>>,
    /// The message of a host function that panicked, for the next `synchronize`.
    callback_panic: Arc<Mutex<Option<String>>>,
    /// The stream's cudarc side ([`crate::interop`]): cudarc's handle of it, whether cudarc owns
    /// it, whether cudarc may have captured it.
    pub(crate) interop: crate::interop::StreamLink,
    /// Work of another library enqueued on this stream whose failure its waits report (NCCL
    /// collectives that may be aborted), each with the number of the first operation that
    /// may include it: a wait that covers that number reports the failure.
    foreign: Mutex<Vec<(u64, Arc<dyn StreamWork>)>>,
}

/// Work enqueued on a stream by another library (an NCCL collective) that can fail without the
/// stream seeing an error: a collective whose communicator is aborted stops early, and the
/// stream goes on as if it had finished. Every wait of the stream that covers it (a `query`,
/// the host accesses of the memory it used) reports the failure as
/// [`Error::CollectiveAborted`], until a `synchronize` of the stream has reported it.
pub(crate) trait StreamWork: Send + Sync {
    /// Why it failed, if it did (asked once the stream has run past it).
    fn failure(&self) -> Option<Arc<str>>;
}

// SAFETY: a CUstream and a CUevent may be used from any thread (the driver synchronizes
// internally); the rest is atomics and locks.
unsafe impl Send for StreamInner {}
// SAFETY: as above.
unsafe impl Sync for StreamInner {}

impl StreamInner {
    /// The stream that operations issued *now, on this thread* run on: for the per-thread
    /// default stream, the calling thread's.
    #[inline]
    pub(crate) fn key(&self) -> u64 {
        match self.kind {
            StreamKind::PerThread => PER_THREAD_KEY.with(|k| *k),
            _ => self.id,
        }
    }

    /// Numbers the next operation on this stream.
    #[inline]
    pub(crate) fn next_seq(&self) -> u64 {
        self.submitted.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Whether operation `seq` is known to have finished.
    #[inline]
    pub(crate) fn is_done(&self, seq: u64) -> bool {
        self.completed.load(Ordering::Acquire) >= seq
    }

    /// Enters an operation (`what`, for errors) on this stream: until the [`Gate`] is dropped
    /// the stream does not begin, join or leave a capture. Every operation that enqueues work
    /// on a stream holds one from its checks to its enqueue.
    ///
    /// # Errors
    /// [`Error::Argument`] when another thread is capturing the stream.
    #[inline]
    pub(crate) fn gate(&self, what: &str) -> Result<Gate<'_>> {
        self.gate_with(|| what.to_string())
    }

    /// [`StreamInner::gate`], the operation named by `what` (called only for the error).
    #[inline]
    pub(crate) fn gate_with(&self, what: impl FnOnce() -> String) -> Result<Gate<'_>> {
        if self.kind != StreamKind::Owned {
            // The default streams cannot capture nor join a capture (refused where they would).
            return Ok(Gate { guard: None });
        }
        let guard = self.capture.read().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = guard.as_ref().filter(|c| c.active())
            && c.thread != Some(std::thread::current().id())
        {
            return Err(other_thread_error(&what(), c));
        }
        if self.interop.exposed() && guard.as_ref().is_none_or(|c| !c.active()) {
            // cudarc holds this stream, or it waited for cudarc's events: a capture cudarc
            // began (or joined it into) is invisible to the link above; ask the driver.
            crate::interop::refuse_foreign_capture(self, what)?;
        }
        Ok(Gate { guard: Some(guard) })
    }

    /// The capture the stream is in now, without holding it (the unit tests' view).
    #[cfg(test)]
    pub(crate) fn capture_now(&self) -> Option<Arc<Capture>> {
        if self.kind != StreamKind::Owned {
            return None;
        }
        self.capture.read().unwrap_or_else(|p| p.into_inner()).as_ref().filter(|c| c.active()).cloned()
    }

    /// Records the mark (creating it first) on this stream, whose context is current.
    /// Errors name `what`, the operation the mark is recorded for.
    fn record_mark(&self, mark: &mut MarkState, what: &str) -> Result<()> {
        if mark.event == EventH::NONE {
            // This stream's context is current (callers bind it).
            mark.event =
                self.gpu.backend.create_event(false).map_err(|f| self.gpu.fail(f, Doing::Call(what.into())))?;
        }
        // SAFETY: live event and stream of this context, which is current; the event is
        // re-recorded under the lock; the stream is not in a capture (callers checked: the
        // mark is never recorded inside one).
        unsafe { self.gpu.backend.record_event(mark.event, self.raw) }
            .map_err(|f| self.gpu.fail(f, Doing::Call(what.into())))
    }

    /// Makes `consumer` wait (on the GPU) for everything enqueued on this stream so far.
    /// The streams may belong to two contexts (devices): the event is made in this stream's
    /// context, and `consumer`'s context is current again on return. While this stream is in
    /// a capture, `consumer` waits for its work from before the capture (its captured work is
    /// not real work: it runs when the graph is replayed, ordered then).
    pub(crate) fn make_wait(&self, consumer: &StreamInner) -> Result<()> {
        crate::peer::require_same_kind(
            || "ordering a stream after another".into(),
            &consumer.gpu,
            &self.gpu,
            "the tracker never orders them",
        )?;
        let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        if mark.frozen_upto().is_none() {
            // Another context (device): make this stream's current to record its event, and
            // the consumer's again to wait (a stream may wait for another device's event).
            let other = !crate::peer::same_context(&self.gpu, &consumer.gpu);
            if other {
                self.gpu.bind()?;
            }
            let recorded = self.record_mark(&mut mark, "ordering a stream after another");
            if other {
                consumer.gpu.bind()?;
            }
            recorded?;
        }
        // SAFETY: live event and stream of devices of one kind (checked above; the event may
        // be of another context: allowed); `cuStreamWaitEvent` captures the state the event has
        // now; the event is a real one, never recorded in a capture.
        unsafe { consumer.gpu.backend.stream_wait_event(consumer.raw, mark.event) }
            .map_err(consumer.gpu.failed("ordering a stream after another"))
    }

    /// Makes this stream enter `capture` through `enter` (which begins the capture on it, or
    /// makes it wait for an event recorded in the capture): first the mark is recorded, so
    /// that it covers all the stream's real work while the stream is in the capture. The
    /// caller holds the stream's write lock and has made its context current.
    fn enter_capture(&self, capture: &Arc<Capture>, enter: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        if mark.frozen_upto().is_some() {
            return Err(Error::Argument("the stream is already in a graph capture".into()));
        }
        self.record_mark(&mut mark, "beginning a graph capture")?;
        // No operation runs meanwhile (the caller holds the write lock): this is the last one.
        let upto = self.submitted.load(Ordering::Acquire);
        enter()?;
        mark.frozen = Some((capture.clone(), upto));
        Ok(())
    }

    /// Waits on the host until operation `seq` has finished, before the host access `what`
    /// (which errors name).
    ///
    /// It waits for the mark, recorded now (or, while the stream is in a capture, the one
    /// recorded before it), rather than for the stream: a stream in a capture cannot be
    /// waited for, and one may enter a capture at any moment (the callers hold allocations'
    /// records, so they cannot take the stream's gate).
    pub(crate) fn wait_host(&self, seq: u64, what: &'static str) -> Result<()> {
        if self.is_done(seq) {
            return Ok(());
        }
        if in_host_fn() {
            return Err(host_fn_error(what));
        }
        let (event, upto, frozen) = {
            let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
            self.gpu.bind()?;
            match mark.frozen_upto() {
                Some(upto) => (mark.event, upto, true),
                None => {
                    let upto = self.submitted.load(Ordering::Acquire);
                    self.record_mark(&mut mark, what)?;
                    (mark.event, upto, false)
                }
            }
        };
        // SAFETY: the stream's live event (destroyed only with the stream, which `self`
        // keeps), never recorded in a capture; another thread may re-record it meanwhile, and
        // this then waits for more work, all of it enqueued.
        unsafe { self.gpu.backend.event_synchronize(event) }.map_err(self.gpu.failed(what))?;
        let ran = self.ran_past(upto, Some(seq));
        if !frozen {
            self.gpu.note_finished(Finished::Stream(self.key()));
        }
        ran
    }

    /// Adds foreign work ([`StreamWork`]) enqueued now: a wait that covers the next operation
    /// recorded on this stream reports its failure (a lower bound of that operation's number:
    /// another thread may record one first, which only makes more waits report it).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn add_foreign(&self, work: Arc<dyn StreamWork>) {
        let seq = self.submitted.load(Ordering::Relaxed) + 1;
        self.foreign.lock().unwrap_or_else(|p| p.into_inner()).push((seq, work));
    }

    /// Notes that the stream has run everything up to operation `upto`, for a wait for
    /// operation `wanted` (`None`: a `synchronize`). Foreign work up to `upto` that had not
    /// failed has finished. Failed work up to `wanted` is the error; a `synchronize` reports
    /// it and forgets it, another wait keeps it (every later wait that covers it reports it
    /// again), and then only the operations before the first failed work count as finished.
    fn ran_past(&self, upto: u64, wanted: Option<u64>) -> Result<()> {
        let report = wanted.unwrap_or(upto);
        let mut first_failed: Option<u64> = None;
        let mut reported: Option<(u64, Arc<str>)> = None;
        {
            let mut foreign = self.foreign.lock().unwrap_or_else(|p| p.into_inner());
            foreign.retain(|(seq, work)| {
                if *seq > upto {
                    return true;
                }
                match work.failure() {
                    Some(why) => {
                        first_failed = Some(first_failed.map_or(*seq, |f| f.min(*seq)));
                        if *seq <= report && reported.as_ref().is_none_or(|(s, _)| seq < s) {
                            reported = Some((*seq, why));
                        }
                        wanted.is_some()
                    }
                    // The stream ran past it, and it had not failed by then: it finished (an
                    // abort fails its work before it stops it).
                    None => false,
                }
            });
        }
        let done = match (wanted, first_failed) {
            (Some(_), Some(f)) => f - 1,
            _ => upto,
        };
        self.completed.fetch_max(done, Ordering::AcqRel);
        match reported {
            None => Ok(()),
            Some((_, why)) => Err(Error::CollectiveAborted(why.to_string())),
        }
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        if in_host_fn() {
            return Err(host_fn_error("synchronizing a stream"));
        }
        // Held while waiting: no capture begins on the stream meanwhile.
        let gate = self.gate("synchronizing a stream")?;
        if gate.capture().is_some() {
            return Err(Error::Argument(
                "synchronizing a stream that is in a graph capture (Stream::capture): its captured work runs only \
                 when the graph is replayed; synchronize after the capture"
                    .into(),
            ));
        }
        let upto = self.submitted.load(Ordering::Relaxed);
        self.gpu.bind()?;
        // SAFETY: `raw` is a live stream of the current context, not in a capture (the gate).
        unsafe { self.gpu.backend.stream_synchronize(self.raw) }
            .map_err(|f| self.gpu.fail(f, Doing::Wait("synchronizing a stream")))?;
        self.ran_past(upto, None)?;
        self.gpu.note_finished(Finished::Stream(self.key()));
        if let Some(message) = self.callback_panic.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(Error::HostFnPanicked(message));
        }
        Ok(())
    }

    /// Ends `capture`, begun on this stream by this thread: returns the graph (null when the
    /// driver made none) and the driver's answer. Every stream of the capture is out of it
    /// afterwards — or, if the driver still says one is capturing, it stays marked as in a
    /// capture that no thread owns, so that every operation on it is refused rather than
    /// captured into a graph nobody gets.
    fn end_capture(&self, capture: &Arc<Capture>) -> (Option<GraphH>, Result<()>) {
        let mut graph = None;
        let ended = {
            let mut link = self.capture.write().unwrap_or_else(|p| p.into_inner());
            let ended = self.gpu.bind().and_then(|()| {
                // SAFETY: the stream is capturing (begun by `Stream::capture` on this thread);
                // ending returns the graph, ours.
                let (made, ended) = unsafe { self.gpu.backend.end_capture(self.raw) };
                graph = made;
                ended.map_err(self.gpu.failed("ending a stream capture"))
            });
            *link = if still_capturing(self) {
                Some(self.stuck())
            } else {
                // Out of the capture now, before `ended` is set below: operations on it are
                // real again, so its mark must be again too.
                self.mark.lock().unwrap_or_else(|p| p.into_inner()).frozen = None;
                None
            };
            ended
        };
        // The joined streams, each under its own lock (never two at once), while the capture
        // still counts as active for them (other threads are refused meanwhile).
        let joined = std::mem::take(&mut *capture.joined.lock().unwrap_or_else(|p| p.into_inner()));
        for s in joined.iter().filter_map(Weak::upgrade) {
            let mut link = s.capture.write().unwrap_or_else(|p| p.into_inner());
            if link.as_ref().is_some_and(|c| Arc::ptr_eq(c, capture)) && still_capturing(&s) {
                *link = Some(s.stuck());
            }
        }
        capture.ended.store(true, Ordering::Release);
        let _ = self.gpu.bind();
        (graph, ended)
    }
}

impl StreamInner {
    /// A capture of no thread for this stream, which the driver left capturing: its mark stays
    /// frozen (recording it would make a captured event), so nothing can join the orphaned
    /// capture, and every operation on it is refused.
    fn stuck(&self) -> Arc<Capture> {
        let stuck = Arc::new(Capture::stuck());
        let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        let upto = match &mark.frozen {
            Some((_, upto)) => *upto,
            None => self.submitted.load(Ordering::Acquire),
        };
        mark.frozen = Some((stuck.clone(), upto));
        stuck
    }
}

/// Whether the driver says `s` is capturing (`true` too if it cannot say).
fn still_capturing(s: &StreamInner) -> bool {
    if s.gpu.bind().is_err() {
        return true;
    }
    // SAFETY: a live stream of its context, which is current.
    unsafe { s.gpu.backend.is_capturing(s.raw) }.unwrap_or(true)
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.gpu.bind().is_err() {
            return;
        }
        let mark = self.mark.get_mut().unwrap_or_else(|p| p.into_inner()).event;
        // SAFETY: handles we created, not used after this; work still queued on a destroyed
        // stream completes normally (its resources are released after it).
        unsafe {
            if mark != EventH::NONE {
                let _ = self.gpu.backend.destroy_event(mark);
            }
            // Not a stream cudarc owns, nor one whose cudarc handle cudarc code still holds
            // (that one is left to the driver's teardown: the handle must stay valid).
            if self.kind == StreamKind::Owned && self.interop.may_destroy() {
                let _ = self.gpu.backend.destroy_stream(self.raw);
            }
        }
    }
}

/// How to create a [`Stream`]: [`Gpu::new_stream_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamOptions {
    non_blocking: bool,
    priority: i32,
}

impl StreamOptions {
    /// A blocking stream of default priority (`cudaStreamCreate`).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// A stream that does not synchronize with the legacy default stream
    /// (`cudaStreamNonBlocking`).
    #[must_use]
    pub fn non_blocking(mut self, yes: bool) -> Self {
        self.non_blocking = yes;
        self
    }
    /// Scheduling priority: lower numbers are higher priorities; see
    /// [`Gpu::stream_priority_range`]. Values outside the range are clamped by the driver.
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }
}

/// A CUDA stream: operations on one stream run in order; operations on different streams may
/// overlap, and Cohort orders them where they touch the same memory (see the module docs and
/// the README's "Streams" section).
///
/// ```no_run
/// # use cohort_runtime::{Gpu, StreamOptions};
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpu = Gpu::new(0)?;
/// let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true))?;
/// let host = gpu.pinned_from(&[1.0f32; 1 << 20])?;
/// let mut dev = gpu.zeroed::<f32>(1 << 20)?;
/// s.copy(&host, &mut dev)?;              // asynchronous: returns at once
/// s.synchronize()?;
/// # Ok(()) }
/// ```
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("raw", &crate::backend::cuda::stream(self.inner.raw))
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl Stream {
    fn wrap(gpu: &Arc<GpuInner>, raw: StreamH, kind: StreamKind, blocking: bool) -> Self {
        Self::wrap_linked(gpu, raw, kind, blocking, crate::interop::StreamLink::default())
    }

    /// A stream with its cudarc side already known (a stream cudarc made: `interop`).
    pub(crate) fn wrap_linked(
        gpu: &Arc<GpuInner>,
        raw: StreamH,
        kind: StreamKind,
        blocking: bool,
        interop: crate::interop::StreamLink,
    ) -> Self {
        Self {
            inner: Arc::new(StreamInner {
                raw,
                gpu: gpu.clone(),
                id: IDS.fetch_add(1, Ordering::Relaxed),
                kind,
                blocking,
                mark: Mutex::new(MarkState { event: EventH::NONE, frozen: None }),
                submitted: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                capture: RwLock::new(None),
                callback_panic: Arc::new(Mutex::new(None)),
                interop,
                foreign: Mutex::new(Vec::new()),
            }),
        }
    }

    pub(crate) fn create(gpu: &Arc<GpuInner>, options: StreamOptions) -> Result<Self> {
        gpu.bind()?;
        let raw = gpu
            .backend
            .create_stream(options.non_blocking, options.priority)
            .map_err(gpu.failed("creating a stream"))?;
        Ok(Self::wrap(gpu, raw, StreamKind::Owned, !options.non_blocking))
    }

    pub(crate) fn legacy(gpu: &Arc<GpuInner>) -> Self {
        Self::wrap(gpu, StreamH::LEGACY, StreamKind::Legacy, true)
    }

    pub(crate) fn per_thread(gpu: &Arc<GpuInner>) -> Self {
        Self::wrap(gpu, StreamH::PER_THREAD, StreamKind::PerThread, true)
    }

    /// Waits until everything enqueued on this stream has finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed (here or on another stream), naming it (as far
    /// as the driver lets Cohort know: see [`Error::KernelFailed`]'s `kernel`) and where it
    /// panicked; [`Error::HostFnPanicked`] if a host function of this stream panicked;
    /// [`Error::Argument`] while the stream is in a graph capture (begun on it or joined), or
    /// from another thread than the capturing one.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// Whether everything enqueued on this stream has finished (`cuStreamQuery`), without
    /// waiting.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed; [`Error::Argument`] while the stream is in a
    /// graph capture.
    pub fn query(&self) -> Result<bool> {
        // Held while asking: no capture begins on the stream meanwhile.
        let gate = self.inner.gate("querying a stream")?;
        if gate.capture().is_some() {
            return Err(Error::Argument(
                "querying a stream that is in a graph capture (Stream::capture): its captured work runs only when the \
                 graph is replayed"
                    .into(),
            ));
        }
        let upto = self.inner.submitted.load(Ordering::Relaxed);
        self.inner.gpu.bind()?;
        // SAFETY: live stream of the current context, not in a capture (the gate).
        match unsafe { self.inner.gpu.backend.stream_query(self.inner.raw) } {
            Ok(true) => {
                self.inner.ran_past(upto, Some(upto))?;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(f) => Err(self.inner.gpu.fail(f, Doing::Wait("querying a stream"))),
        }
    }

    /// The raw handle, for interop. Work enqueued through it is not tracked: order it yourself.
    #[must_use]
    pub fn cu_stream(&self) -> sys::CUstream {
        crate::backend::cuda::stream(self.inner.raw)
    }

    /// The stream's priority (lower is higher).
    ///
    /// # Errors
    /// A driver failure.
    pub fn priority(&self) -> Result<i32> {
        self.inner.gpu.bind()?;
        // SAFETY: live stream.
        unsafe { self.inner.gpu.backend.stream_priority(self.inner.raw) }
            .map_err(self.inner.gpu.failed("reading a stream's priority"))
    }

    /// Records `event` on this stream: it completes when everything enqueued before it has.
    ///
    /// # Errors
    /// As [`Event::record`].
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Makes this stream wait (on the GPU) until `event` completes (`cuStreamWaitEvent`); the
    /// event may be another GPU's.
    ///
    /// Inside a graph capture, this is how work forks to another stream and joins back: an
    /// event recorded on a capturing stream, waited for by another stream of the same device,
    /// joins that stream into the capture (`Stream::wait` is the only way a stream joins
    /// one). From then until the capture ends, the stream's work is captured too — its memory
    /// kept by the graph, host memory and host functions refused, and work from other threads
    /// refused — and the capture must join it back (the capturing stream waits for an event
    /// recorded on it) before it ends, or the capture fails.
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for an event of the CPU device on a GPU's stream, or the
    /// reverse. [`Error::Argument`]: an event recorded in a capture waited for from another
    /// thread, by a default stream or a blocking stream (which cannot capture), or by a stream
    /// in another capture; an event recorded in a capture that has ended; an event recorded
    /// outside the capture waited for by a stream in one (CUDA refuses that too). A driver
    /// failure.
    pub fn wait(&self, event: &Event) -> Result<()> {
        let inner = &self.inner;
        crate::peer::require_same_kind(
            || "Stream::wait".into(),
            &inner.gpu,
            &event.gpu,
            "wait for events of the stream's own kind of device",
        )?;
        if in_host_fn() {
            return Err(host_fn_error("waiting for an event"));
        }
        // The usual case, an event recorded outside any capture: the stream's gate is enough.
        {
            let gate = inner.gate("waiting for an event")?;
            let state = event.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.captured.is_none() {
                if gate.capture().is_some() {
                    return Err(outside_event_error());
                }
                return wait_event(inner, event);
            }
        }
        // An event recorded in a capture: exclusive (for owned streams), as the wait may join
        // the stream into the capture.
        let mut link =
            (inner.kind == StreamKind::Owned).then(|| inner.capture.write().unwrap_or_else(|p| p.into_inner()));
        let state = event.state.lock().unwrap_or_else(|p| p.into_inner());
        let me = Some(std::thread::current().id());
        let here = link.as_ref().and_then(|l| l.as_ref()).filter(|c| c.active()).cloned();
        if let Some(c) = &here
            && c.thread != me
        {
            return Err(other_thread_error("waiting for an event", c));
        }
        let wait = || wait_event(inner, event);
        match (&state.captured, here) {
            (None, None) => wait(),
            (None, Some(_)) => Err(outside_event_error()),
            (Some(ec), _) if !ec.active() => Err(Error::Argument(
                "Stream::wait: the event was last recorded inside a graph capture that has ended, so it marks no real \
                 work; record it again outside a capture"
                    .into(),
            )),
            (Some(ec), _) if ec.thread != me => {
                Err(other_thread_error("waiting for an event recorded in a capture", ec))
            }
            (Some(ec), Some(c)) if Arc::ptr_eq(ec, &c) => wait(),
            (Some(_), Some(_)) => Err(Error::Argument(
                "Stream::wait: the stream is in one graph capture and the event was recorded in another; CUDA cannot \
                 merge two captures"
                    .into(),
            )),
            (Some(ec), None) => {
                let Some(link) = link.as_mut() else {
                    return Err(Error::Argument(
                        "Stream::wait: the legacy and per-thread default streams cannot join a graph capture; wait on a \
                         stream made with new_stream_with(StreamOptions::new().non_blocking(true))"
                            .into(),
                    ));
                };
                if inner.blocking {
                    return Err(Error::Argument(
                        "Stream::wait: a blocking stream cannot join a graph capture (other threads' legacy-stream work \
                         would fail while it captures); use a non-blocking stream \
                         (`gpu.new_stream_with(StreamOptions::new().non_blocking(true))`)"
                            .into(),
                    ));
                }
                inner.gpu.bind()?;
                inner.enter_capture(ec, wait)?;
                ec.joined.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(inner));
                **link = Some(ec.clone());
                Ok(())
            }
        }
    }

    /// [`Stream::wait`] under this stream's gate, which the caller holds: never joins the
    /// stream into a capture (the event and the stream are both outside any, or both in the
    /// gate's capture, else [`Error::Argument`]).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn wait_in(&self, event: &Event, gate: &Gate<'_>) -> Result<()> {
        let inner = &self.inner;
        crate::peer::require_same_kind(|| "Stream::wait".into(), &inner.gpu, &event.gpu, "")?;
        let state = event.state.lock().unwrap_or_else(|p| p.into_inner());
        let same = match (&state.captured, gate.capture()) {
            (None, None) => true,
            (Some(ec), Some(c)) => Arc::ptr_eq(ec, c),
            _ => false,
        };
        if !same {
            return Err(Error::Argument(
                "an internal wait would join a stream into a graph capture or cross captures".into(),
            ));
        }
        wait_event(inner, event)
    }

    /// Runs `f` on a driver thread once everything enqueued before it on this stream has
    /// finished (`cuLaunchHostFunc`); later work on the stream waits for it.
    ///
    /// `f` must not call CUDA: the driver refuses such calls from a host function, and a call
    /// that waits for the stream would never return. Cohort's operations on memory (launches,
    /// copies, host views) return [`Error::Argument`] there instead of waiting, and a buffer
    /// whose last owner is dropped there is leaked rather than freed. If `f` panics, the
    /// panic is caught and the stream's next [`Stream::synchronize`] returns
    /// [`Error::HostFnPanicked`].
    ///
    /// # Errors
    /// A driver failure; [`Error::Argument`] while the stream is in a graph capture (a graph
    /// would run `f` once per replay, and `f` runs at most once), or from another thread than
    /// the capturing one.
    pub fn host_fn(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        let gate = self.inner.gate("enqueueing a host function")?;
        if gate.capture().is_some() {
            return Err(Error::Argument(
                "a host function cannot be captured into a graph: it would run on every replay".into(),
            ));
        }
        type Payload = (Box<dyn FnOnce() + Send>, Arc<Mutex<Option<String>>>);
        unsafe extern "C" fn trampoline(data: *mut c_void) {
            // SAFETY: `data` is the `Box<Payload>` leaked below, handed to exactly one call.
            let payload = unsafe { Box::from_raw(data.cast::<Payload>()) };
            let (f, slot) = *payload;
            IN_HOST_FN.with(|c| c.set(true));
            let r = std::panic::catch_unwind(AssertUnwindSafe(f));
            IN_HOST_FN.with(|c| c.set(false));
            if let Err(p) = r {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a host function panicked".into());
                slot.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(msg);
            }
        }
        let payload: Box<Payload> = Box::new((Box::new(f), self.inner.callback_panic.clone()));
        let data = Box::into_raw(payload).cast::<c_void>();
        self.inner.gpu.bind()?;
        // SAFETY: `trampoline` takes ownership of `data` when it runs; if the driver refuses
        // the call it never runs and we take the payload back.
        let r = unsafe { self.inner.gpu.backend.launch_host_fn(self.inner.raw, trampoline, data) };
        drop(gate);
        r.map_err(|f| {
            // SAFETY: refused, so the driver never calls `trampoline` with `data`.
            drop(unsafe { Box::from_raw(data.cast::<Payload>()) });
            self.inner.gpu.fail(f, Doing::Call("enqueueing a host function".into()))
        })
    }

    /// Copies `src` into `dst` asynchronously (`cuMemcpyAsync`): device → device, pinned host
    /// → device, device → pinned host. Both must have the same length.
    ///
    /// `src`: `&DeviceBuffer`, a [`DeviceView`](crate::DeviceView), `&PinnedBuffer`, a
    /// [`PinnedView`](crate::PinnedView), `&Registered`. `dst`: `&mut DeviceBuffer`, a
    /// [`DeviceViewMut`](crate::DeviceViewMut), `&mut PinnedBuffer`, a
    /// [`PinnedViewMut`](crate::PinnedViewMut), `&mut Registered`. The copy waits for other
    /// streams' pending writes to `src` and uses of `dst`; the host sees `dst` (if pinned)
    /// only once it has finished. Pageable `&[T]`/`Vec<T>` are not accepted: copy those with
    /// the synchronous [`DeviceBuffer::copy_from`](crate::DeviceBuffer::copy_from) /
    /// [`copy_to`](crate::DeviceBuffer::copy_to), or stage them in a
    /// [`PinnedBuffer`](crate::PinnedBuffer).
    ///
    /// Device buffers of two GPUs (two contexts) are copied peer to peer
    /// (`cuMemcpyPeerAsync`) on this stream, which may belong to either GPU (or a third): no
    /// peer access is needed (without a direct path the driver stages the copy), and the copy
    /// is ordered with both buffers' pending work like any other (the stream waits for the
    /// other device's events).
    ///
    /// # Errors
    /// [`Error::Argument`] for lengths that differ; [`Error::CrossDevice`] for pinned or
    /// registered host memory of another context than this stream's; a driver failure.
    pub fn copy<T: cohort::DeviceCopy>(&self, src: impl CopySrc<T>, dst: impl CopyDst<T>) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let (s, d) = (src.use_read(), dst.use_write());
        let (sl, dl) = ((s.end - s.start) / size_of::<T>().max(1), (d.end - d.start) / size_of::<T>().max(1));
        if s.end - s.start != d.end - d.start {
            return Err(Error::Argument(format!("copy: the source has {sl} elements, the destination {dl}")));
        }
        if s.end == s.start {
            return Ok(());
        }
        let bytes = s.end - s.start;
        let (sp, dp) = (s.device_addr(), d.device_addr());
        let path = crate::peer::copy_path(&self.inner.gpu, &s, &d)?;
        self.inner.gpu.bind()?;
        run_tracked(&self.inner, &[s, d], || {
            let backend = &self.inner.gpu.backend;
            // SAFETY: both ranges are inside live allocations (their `Use`s were made from
            // borrows that last this call) of `bytes` bytes; the tracker ordered the copy
            // after conflicting work on other streams. A peer copy names both allocations'
            // contexts, which the allocations keep alive.
            unsafe {
                match path {
                    crate::peer::CopyPath::Local => backend.copy_async(dp, sp, bytes, self.inner.raw),
                    crate::peer::CopyPath::Peer(dc, sc) => {
                        backend.copy_peer_async(dp, dc, sp, sc, bytes, self.inner.raw)
                    }
                }
            }
            .map_err(|f| self.inner.gpu.fail(f, Doing::Call(format!("copying {bytes} B asynchronously"))))
        })
    }

    /// Sets every byte of device memory `dst` to `value`, asynchronously (`cuMemsetD8Async`).
    ///
    /// # Errors
    /// [`Error::Argument`] for host memory; [`Error::CrossDevice`] for another GPU's buffer; a
    /// driver failure.
    pub fn fill_bytes<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: u8) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let d = dst.use_write();
        self.memset(d, 1, u32::from(value))
    }

    /// Sets every element of device memory `dst` to `value`, asynchronously: `T` must be 1, 2
    /// or 4 bytes (`cuMemsetD8/D16/D32Async`, e.g. `f32` or `u32`); fill wider types with a
    /// kernel or [`Stream::fill_bytes`].
    ///
    /// # Errors
    /// [`Error::Argument`] for another size or for host memory; a driver failure.
    pub fn fill<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: T) -> Result<()> {
        cohort::assert_no_padding::<T>();
        let width = size_of::<T>();
        let mut bits = [0u8; 4];
        if !matches!(width, 1 | 2 | 4) {
            return Err(Error::Argument(format!(
                "fill: {} is {width} bytes; memset fills elements of 1, 2 or 4 bytes",
                std::any::type_name::<T>()
            )));
        }
        // SAFETY: `value` is `width` bytes, all initialized (`DeviceCopy` types have no
        // padding), and `bits` has room for them.
        unsafe { std::ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), bits.as_mut_ptr(), width) };
        let v = match width {
            1 => u32::from(bits[0]),
            2 => u32::from(u16::from_ne_bytes([bits[0], bits[1]])),
            _ => u32::from_ne_bytes(bits),
        };
        self.memset(dst.use_write(), width, v)
    }

    fn memset(&self, d: Use<'_>, width: usize, value: u32) -> Result<()> {
        if !d.is_device() {
            return Err(Error::Argument("fill: the destination must be device memory".into()));
        }
        crate::peer::require_same(
            || "fill".into(),
            &self.inner.gpu,
            &d.alloc.gpu,
            "fill a buffer on a stream of its own Gpu",
        )?;
        let bytes = d.end - d.start;
        if bytes == 0 {
            return Ok(());
        }
        let (ptr, n) = (d.device_addr(), bytes / width);
        self.inner.gpu.bind()?;
        run_tracked(&self.inner, &[d], || {
            let raw = self.inner.raw;
            let fill = match width {
                1 => Fill::U8(value as u8),
                2 => Fill::U16(value as u16),
                _ => Fill::U32(value),
            };
            // SAFETY: `ptr..ptr+bytes` is inside a live device allocation, aligned for `width`
            // (the view's element type is `width` bytes, or `width` is 1); ordered by the
            // tracker.
            unsafe { self.inner.gpu.backend.memset_async(ptr, fill, n, raw) }
                .map_err(|f| self.inner.gpu.fail(f, Doing::Call(format!("filling {bytes} B asynchronously"))))
        })
    }

    /// Captures the work `f` enqueues on this stream into a [`Graph`] instead of running it
    /// (`cuStreamBeginCapture` … `cuStreamEndCapture`, thread-local mode). Typed launches
    /// inside keep all their checks; the graph keeps the device memory its operations use
    /// alive, and each replay is ordered against other streams like any other operation.
    ///
    /// The capture may fork to other streams and join back through events
    /// ([`Stream::wait`] on an event recorded on this stream joins a stream into the capture):
    /// the work of every stream in the capture is captured, and the graph keeps its memory too.
    /// Every stream joined in must be joined back (this stream waits for an event recorded on
    /// it) before `f` returns, or the capture fails.
    ///
    /// While the capture lasts, its streams take work only from this thread: a launch, copy,
    /// fill, event record or wait from another thread into any of them is an
    /// [`Error::Argument`] (it would go into the graph instead of running). Synchronizing or
    /// querying them, and host functions, are refused too; pinned or registered host memory
    /// cannot be captured (the host could touch it while a replay runs). Waiting on the host
    /// for their earlier work (a host read, a free) waits for the work from before the capture.
    ///
    /// Only a non-blocking stream ([`StreamOptions::non_blocking`]) can capture or join a
    /// capture: while a *blocking* stream captures, work that any other thread puts on the
    /// legacy default stream (synchronous copies, `cudaMemcpy`-style calls of other libraries)
    /// fails with `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidates the capture.
    ///
    /// # Errors
    /// What `f` returns; [`Error::Argument`] on a blocking stream, on the legacy or per-thread
    /// default stream (CUDA cannot capture them), when already in a capture, or from another
    /// thread than one capturing it; a driver failure (a stream not joined back included).
    pub fn capture(&self, f: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        if !self.inner.gpu.backend.has_graphs() {
            return Err(crate::cpu::not_on_cpu(
                "capturing a graph (Stream::capture): the CPU device runs work when it \
                                               is enqueued; run the operations directly",
            ));
        }
        if self.inner.kind != StreamKind::Owned {
            return Err(Error::Argument("capture: only streams made by new_stream can be captured".into()));
        }
        if self.inner.blocking {
            return Err(Error::Argument(
                "capture: the stream is blocking; capture on a non-blocking stream \
                 (`gpu.new_stream_with(StreamOptions::new().non_blocking(true))`), since other threads' \
                 legacy-stream work would fail while a blocking stream captures"
                    .into(),
            ));
        }
        if in_host_fn() {
            return Err(host_fn_error("beginning a graph capture"));
        }
        let capture = Arc::new(Capture::new());
        {
            let mut link = self.inner.capture.write().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = link.as_ref().filter(|c| c.active()) {
                return Err(match c.thread {
                    Some(t) if t == std::thread::current().id() => {
                        Error::Argument("capture: the stream is already in a graph capture".into())
                    }
                    _ => other_thread_error("beginning a graph capture", c),
                });
            }
            self.inner.gpu.bind()?;
            self.inner.enter_capture(&capture, || {
                // SAFETY: live stream of the current context, not in a capture (checked above
                // under the write lock).
                unsafe { self.inner.gpu.backend.begin_capture(self.inner.raw) }
                    .map_err(self.inner.gpu.failed("beginning a stream capture"))
            })?;
            *link = Some(capture.clone());
        }
        /// Ends the capture if `f` panics (and drops the half-made graph).
        struct EndOnUnwind<'a>(&'a StreamInner, &'a Arc<Capture>, bool);
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                if self.2 {
                    let (graph, _) = self.0.end_capture(self.1);
                    if let Some(graph) = graph {
                        // SAFETY: the graph the capture made, ours, not used after this.
                        let _ = unsafe { self.0.gpu.backend.destroy_graph(graph) };
                    }
                }
            }
        }
        let mut guard = EndOnUnwind(&self.inner, &capture, true);
        let r = f(self);
        guard.2 = false;
        let (raw, ended) = self.inner.end_capture(&capture);
        let used = std::mem::take(&mut *capture.used.lock().unwrap_or_else(|p| p.into_inner()));
        let graph =
            raw.map(|raw| Graph { raw, gpu: self.inner.gpu.clone(), used: Arc::new(used), serial: Mutex::new(()) });
        r?;
        ended?;
        graph.ok_or_else(|| Error::Argument("capture: the driver returned no graph".into()))
    }

    /// Notes a successful launch (generated launchers call it through `Function`), for the
    /// error that names the kernel if it fails.
    #[inline]
    pub(crate) fn note_launch(&self, kernel: &Arc<str>, config: LaunchConfig) {
        self.inner.gpu.note_launch(self.inner.key(), self.inner.blocking, kernel, config);
    }

    /// The error for a launch of `kernel` on this stream that the driver refused with `code`:
    /// [`Error::Launch`], or [`Error::KernelFailed`] naming the kernel that failed before
    /// when the refusal is a sticky failure of an earlier kernel.
    pub(crate) fn launch_error(&self, kernel: &Arc<str>, config: LaunchConfig, code: DriverError) -> Error {
        let doing = Doing::Call(format!("launching kernel `{kernel}` with {config}"));
        self.inner.gpu.lost(code, doing).unwrap_or_else(|_| Error::Launch { kernel: kernel.clone(), config, code })
    }
}

/// A CUDA event: a point in a stream's work, for timing and for making streams wait.
pub struct Event {
    raw: EventH,
    gpu: Arc<GpuInner>,
    state: Mutex<EventState>,
}

/// What Cohort knows of an event's last record.
#[derive(Default)]
struct EventState {
    /// The capture it was last recorded in, if it was recorded on a stream in a capture: it
    /// then marks a point of the graph, not of real work (waiting for it joins a stream into
    /// the capture; the host cannot wait for it or time it).
    captured: Option<Arc<Capture>>,
}

// SAFETY: event handles may be used from any thread; the state is under a mutex.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("raw", &std::ptr::without_provenance::<()>(self.raw.0)).finish()
    }
}

impl Event {
    fn create(gpu: &Gpu, timing: bool) -> Result<Self> {
        gpu.inner.bind()?;
        let raw = gpu.inner.backend.create_event(timing).map_err(gpu.inner.failed("creating an event"))?;
        Ok(Self { raw, gpu: gpu.inner.clone(), state: Mutex::new(EventState::default()) })
    }

    /// A new event that records timing (`cudaEventCreate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::create(gpu, true)
    }

    /// A new event without timing, cheaper to record and wait for
    /// (`cudaEventDisableTiming`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn untimed(gpu: &Gpu) -> Result<Self> {
        Self::create(gpu, false)
    }

    /// Records the event on `stream`, a stream of the event's `Gpu` (another GPU's stream may
    /// [`Stream::wait`] for it). On a stream in a graph capture, the event marks a point of the
    /// capture: a stream that waits for it joins the capture (see [`Stream::capture`]).
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another context (or device); [`Error::Argument`]
    /// on a stream another thread is capturing; a driver failure.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        crate::peer::require_same(
            || "recording an event".into(),
            &self.gpu,
            &stream.inner.gpu,
            "record an event on a stream of the Gpu it was made for",
        )?;
        let gate = stream.inner.gate("recording an event")?;
        self.record_in(&stream.inner, &gate)
    }

    /// [`Event::record`] on `stream`, of the event's context, whose gate the caller holds.
    pub(crate) fn record_in(&self, stream: &StreamInner, gate: &Gate<'_>) -> Result<()> {
        if in_host_fn() {
            return Err(host_fn_error("recording an event"));
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.gpu.bind()?;
        // SAFETY: both handles are live and belong to the same context (checked by the
        // callers), which is current.
        unsafe { self.gpu.backend.record_event(self.raw, stream.raw) }
            .map_err(self.gpu.failed("recording an event"))?;
        state.captured = gate.capture().cloned();
        Ok(())
    }

    /// `Err` (naming `what`) when the event was last recorded in a graph capture: it marks no
    /// real work, so the host cannot wait for it, query it or time it.
    fn real(&self, what: &str) -> Result<()> {
        match &self.state.lock().unwrap_or_else(|p| p.into_inner()).captured {
            None => Ok(()),
            Some(_) => Err(Error::Argument(format!(
                "{what}: the event was last recorded inside a graph capture (Stream::capture), so it marks a point of \
                 the graph, not of work that runs; record it on a stream outside a capture"
            ))),
        }
    }

    /// Waits for the event.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if work before it failed; [`Error::Argument`] for an event
    /// last recorded in a graph capture.
    pub fn synchronize(&self) -> Result<()> {
        self.real("waiting for an event")?;
        self.gpu.bind()?;
        // SAFETY: live handle.
        unsafe { self.gpu.backend.event_synchronize(self.raw) }
            .map_err(|f| self.gpu.fail(f, Doing::Wait("waiting for an event")))
    }

    /// Whether the work before the event has finished (`cuEventQuery`), without waiting.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if that work failed; [`Error::Argument`] for an event last
    /// recorded in a graph capture.
    pub fn is_complete(&self) -> Result<bool> {
        self.real("querying an event")?;
        self.gpu.bind()?;
        // SAFETY: live handle.
        unsafe { self.gpu.backend.event_query(self.raw) }
            .map_err(|f| self.gpu.fail(f, Doing::Wait("querying an event")))
    }

    /// Same as [`Event::is_complete`] (CUDA's name).
    ///
    /// # Errors
    /// As [`Event::is_complete`].
    pub fn query(&self) -> Result<bool> {
        self.is_complete()
    }

    /// Milliseconds from `start` to this event (both recorded with timing, and complete).
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for events of two contexts (devices); [`Error::Argument`] for an
    /// event last recorded in a graph capture; a driver failure (an event not yet recorded, or
    /// made [`Event::untimed`]).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        crate::peer::require_same(
            || "timing two events (Event::elapsed_ms_since)".into(),
            &self.gpu,
            &start.gpu,
            "time events of one Gpu",
        )?;
        self.real("timing an event")?;
        start.real("timing an event")?;
        self.gpu.bind()?;
        // SAFETY: both events are live, of one context (checked above), which is current.
        unsafe { self.gpu.backend.event_elapsed_ms(start.raw, self.raw) }.map_err(self.gpu.failed("reading event time"))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: we created it; not used after.
            unsafe {
                let _ = self.gpu.backend.destroy_event(self.raw);
            }
        }
    }
}

/// A captured sequence of operations ([`Stream::capture`]), to instantiate and replay.
///
/// Shareable between threads: CUDA graph objects are not internally synchronized ("Graph
/// object thread safety": no two calls on one graph may run at once, even ones that look
/// read-only, such as instantiating), so every call on it takes its turn.
pub struct Graph {
    raw: GraphH,
    gpu: Arc<GpuInner>,
    used: Arc<Vec<Captured>>,
    /// Held by every driver call on `raw`.
    serial: Mutex<()>,
}

// SAFETY: a CUgraph may be used from any thread, one call at a time: every call on `raw` holds
// `serial` (and `drop` has `&mut self`); the rest is shared immutable data.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Each allocation (and each loaded module's record) once, however many nodes use it.
        let mut seen: Vec<*const crate::track::Alloc> = Vec::new();
        let (mut memory, mut modules) = (0usize, 0usize);
        for c in self.used.iter() {
            if !seen.contains(&Arc::as_ptr(&c.alloc)) {
                seen.push(Arc::as_ptr(&c.alloc));
                if c.alloc.is_keeper() { modules += 1 } else { memory += 1 }
            }
        }
        f.debug_struct("Graph")
            .field("raw", &std::ptr::without_provenance::<()>(self.raw.0))
            .field("allocations", &memory)
            .field("modules", &modules)
            .finish()
    }
}

impl Graph {
    /// Number of nodes (kernels, copies, fills) in the graph.
    ///
    /// # Errors
    /// A driver failure.
    pub fn node_count(&self) -> Result<usize> {
        self.gpu.bind()?;
        let _turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: live graph, no other call on it meanwhile (`serial`).
        unsafe { self.gpu.backend.graph_nodes(self.raw) }.map_err(self.gpu.failed("counting graph nodes"))
    }

    /// An executable instance (`cuGraphInstantiate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn instantiate(&self) -> Result<GraphExec> {
        self.gpu.bind()?;
        let turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: live graph, no other call on it meanwhile (`serial`).
        let raw = unsafe { self.gpu.backend.instantiate_graph(self.raw) }
            .map_err(self.gpu.failed("instantiating a graph"))?;
        drop(turn);
        Ok(GraphExec { raw, gpu: self.gpu.clone(), used: self.used.clone(), serial: Mutex::new(()) })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours, not used after.
            unsafe {
                let _ = self.gpu.backend.destroy_graph(self.raw);
            }
        }
    }
}

/// An instantiated [`Graph`]: [`GraphExec::launch`] replays it on a stream. Shareable between
/// threads: replays from several threads take turns (`cuGraphLaunch` is under CUDA's graph
/// thread-safety rule too).
pub struct GraphExec {
    raw: GraphExecH,
    gpu: Arc<GpuInner>,
    used: Arc<Vec<Captured>>,
    /// Held by every driver call on `raw`.
    serial: Mutex<()>,
}

// SAFETY: as for `Graph`: every call on `raw` holds `serial` (`drop` has `&mut self`).
unsafe impl Send for GraphExec {}
// SAFETY: as for `Graph`.
unsafe impl Sync for GraphExec {}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec").field("raw", &std::ptr::without_provenance::<()>(self.raw.0)).finish()
    }
}

impl GraphExec {
    /// Replays the graph on `stream` (`cuGraphLaunch`), ordered like any other operation
    /// against other streams' work on the memory it uses.
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another context than the one the graph was
    /// captured in; a driver failure (a kernel that failed in an earlier replay included).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        crate::peer::require_same(
            || "a graph replay".into(),
            &self.gpu,
            &stream.inner.gpu,
            "a graph runs only on streams of the context it was captured in (its kernels and memory are that \
             context's); capture it again on the other GPU",
        )?;
        let uses: Vec<Use<'_>> = self.used.iter().map(Use::captured).collect();
        self.gpu.bind()?;
        run_tracked(&stream.inner, &uses, || {
            // Taken last (nothing is locked under it): replays of this instance from other
            // threads wait here.
            let _turn = self.serial.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: live instance and stream of one context (checked above), no other call
            // on the instance meanwhile (`serial`); the memory it uses is kept alive by `used`,
            // and the tracker ordered the replay after conflicting work.
            unsafe { self.gpu.backend.launch_graph(self.raw, stream.inner.raw) }
                .map_err(self.gpu.failed("launching a graph"))
        })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours; a replay still running keeps its resources until it finishes.
            unsafe {
                let _ = self.gpu.backend.destroy_graph_exec(self.raw);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The capture bookkeeping, without a GPU: the CPU device has no graphs, so these link its
    //! streams to a [`Capture`] as `Stream::capture` and `Stream::wait` do, and check what the
    //! gate, the tracker and the event rules make of it (the CPU driver accepts the waits).

    use super::*;
    use crate::StreamOptions;

    fn cpu_stream(gpu: &Gpu) -> Stream {
        gpu.new_stream_with(StreamOptions::new().non_blocking(true)).unwrap()
    }

    /// `s` as `Stream::capture` leaves it: in `c`, its mark frozen.
    fn begin(s: &Stream, c: &Arc<Capture>) {
        let mut link = s.inner.capture.write().unwrap();
        s.inner.gpu.bind().unwrap();
        s.inner.enter_capture(c, || Ok(())).unwrap();
        *link = Some(c.clone());
    }

    /// A capture owned by another thread.
    fn foreign_capture() -> Arc<Capture> {
        std::thread::spawn(|| Arc::new(Capture::new())).join().unwrap()
    }

    fn is_argument<T: fmt::Debug>(r: Result<T>, needle: &str) {
        match r {
            Err(Error::Argument(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected an argument error mentioning {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn a_joined_stream_s_memory_is_kept_by_the_capture() {
        let gpu = Gpu::cpu().unwrap();
        let (origin, side) = (cpu_stream(&gpu), cpu_stream(&gpu));
        let c = Arc::new(Capture::new());
        begin(&origin, &c);
        let fork = Event::untimed(&gpu).unwrap();
        fork.record(&origin).unwrap();
        assert!(fork.state.lock().unwrap().captured.as_ref().is_some_and(|e| Arc::ptr_eq(e, &c)));
        // Waiting for an event recorded in the capture joins `side` into it.
        side.wait(&fork).unwrap();
        assert!(side.inner.capture_now().is_some_and(|j| Arc::ptr_eq(&j, &c)));
        assert_eq!(c.joined.lock().unwrap().len(), 1);
        let mut buf = gpu.zeroed::<u32>(64).unwrap();
        side.fill(&mut buf, 7u32).unwrap();
        {
            let used = c.used.lock().unwrap();
            assert_eq!(used.len(), 1, "the joined stream's fill is kept by the capture");
            assert!(used[0].alloc.ptr == buf.as_device_ptr().addr() && used[0].write);
        }
        assert_eq!(buf.pending_accesses(), 0, "a captured operation is not recorded as real work");
        // Host memory, host functions, waits and queries on a joined stream are refused.
        let pinned = gpu.pinned::<u32>(64).unwrap();
        is_argument(side.copy(&pinned, &mut buf), "pinned");
        is_argument(side.host_fn(|| ()), "host function");
        is_argument(side.synchronize(), "graph capture");
        is_argument(side.query(), "graph capture");
        // The end takes it out.
        c.ended.store(true, Ordering::Release);
        assert!(side.inner.capture_now().is_none());
        side.fill(&mut buf, 9u32).unwrap();
        assert_eq!(buf.to_vec().unwrap(), vec![9u32; 64]);
        assert_eq!(c.used.lock().unwrap().len(), 1, "after the end nothing more is kept");
    }

    #[test]
    fn other_threads_are_refused_by_streams_in_a_capture() {
        let gpu = Gpu::cpu().unwrap();
        let s = cpu_stream(&gpu);
        let c = foreign_capture();
        begin(&s, &c);
        let mut buf = gpu.upload(&[5u32; 64]).unwrap();
        let other = gpu.upload(&[6u32; 64]).unwrap();
        is_argument(s.fill(&mut buf, 1u32), "another thread");
        is_argument(s.copy(&other, &mut buf), "another thread");
        let e = Event::untimed(&gpu).unwrap();
        is_argument(e.record(&s), "another thread");
        is_argument(s.wait(&e), "another thread");
        is_argument(s.synchronize(), "another thread");
        is_argument(s.host_fn(|| ()), "another thread");
        assert!(matches!(s.capture(|_| Ok(())), Err(Error::NotOnCpu { .. })));
        assert!(c.used.lock().unwrap().is_empty(), "nothing was kept");
        // Nothing ran (the CPU device would have run it at once).
        assert_eq!(buf.to_vec().unwrap(), vec![5u32; 64]);
        c.ended.store(true, Ordering::Release);
        s.fill(&mut buf, 1u32).unwrap();
        assert_eq!(buf.to_vec().unwrap(), vec![1u32; 64]);
    }

    #[test]
    fn events_recorded_in_a_capture_mark_no_work() {
        let gpu = Gpu::cpu().unwrap();
        let (s, plain, blocking) = (cpu_stream(&gpu), cpu_stream(&gpu), gpu.new_stream().unwrap());
        let c = Arc::new(Capture::new());
        begin(&s, &c);
        let (e, outside) = (Event::new(&gpu).unwrap(), Event::new(&gpu).unwrap());
        outside.record(&plain).unwrap();
        e.record(&s).unwrap();
        is_argument(e.synchronize(), "inside a graph capture");
        is_argument(e.query(), "inside a graph capture");
        is_argument(e.elapsed_ms_since(&outside), "inside a graph capture");
        is_argument(outside.elapsed_ms_since(&e), "inside a graph capture");
        is_argument(s.wait(&outside), "recorded outside");
        is_argument(blocking.wait(&e), "blocking");
        is_argument(gpu.legacy_stream().wait(&e), "default streams");
        is_argument(gpu.per_thread_stream().wait(&e), "default streams");
        // From another thread, a stream outside the capture cannot join it.
        let joined = std::thread::scope(|sc| sc.spawn(|| plain.wait(&e)).join().unwrap());
        is_argument(joined, "another thread");
        assert!(plain.inner.capture_now().is_none());
        // A second capture's event cannot merge into this one.
        let (s2, c2) = (cpu_stream(&gpu), Arc::new(Capture::new()));
        begin(&s2, &c2);
        let e2 = Event::untimed(&gpu).unwrap();
        e2.record(&s2).unwrap();
        is_argument(s.wait(&e2), "another");
        c2.ended.store(true, Ordering::Release);
        c.ended.store(true, Ordering::Release);
        // After the end, the event still marks a point of the ended capture until recorded again.
        is_argument(plain.wait(&e), "has ended");
        e.record(&plain).unwrap();
        plain.wait(&e).unwrap();
        e.synchronize().unwrap();
        assert!(e.elapsed_ms_since(&outside).is_ok());
    }

    #[test]
    fn a_frozen_mark_covers_the_work_before_the_capture() {
        let gpu = Gpu::cpu().unwrap();
        let (s, reader) = (cpu_stream(&gpu), cpu_stream(&gpu));
        let mut buf = gpu.zeroed::<u32>(64).unwrap();
        s.fill(&mut buf, 3u32).unwrap();
        s.fill(&mut buf, 4u32).unwrap();
        let c = Arc::new(Capture::new());
        begin(&s, &c);
        assert_eq!(s.inner.mark.lock().unwrap().frozen_upto(), Some(2), "the mark covers both fills");
        // Host waits and other streams' waits use the frozen mark (no record on `s`).
        assert_eq!(buf.to_vec().unwrap(), vec![4u32; 64]);
        let mut out = gpu.zeroed::<u32>(64).unwrap();
        reader.copy(&buf, &mut out).unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![4u32; 64]);
        c.ended.store(true, Ordering::Release);
        assert_eq!(s.inner.mark.lock().unwrap().frozen_upto(), None, "thawed once the capture ended");
    }
}
