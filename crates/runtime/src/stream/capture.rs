//! Graph captures: a [`Capture`] shared by the stream it began on and the streams joined into
//! it, beginning and ending one ([`Stream::capture`]), and what it keeps for the graph.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

use super::gate::other_thread_error;
use super::{Graph, Stream, StreamInner, StreamKind, host_fn_error, in_host_fn};
use crate::backend::GraphH;
use crate::error::{Error, Result};
use crate::track::{Alloc, Use};

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
    pub(super) thread: Option<ThreadId>,
    /// The memory the operations captured on any of its streams use.
    pub(super) used: Mutex<Vec<Captured>>,
    /// The streams joined into it (not the one it began on), to check when it ends.
    pub(super) joined: Mutex<Vec<Weak<StreamInner>>>,
    /// Set once `cuStreamEndCapture` has returned: its streams capture no more.
    pub(super) ended: AtomicBool,
}

impl Capture {
    pub(super) fn new() -> Self {
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

impl StreamInner {
    /// Makes this stream enter `capture` through `enter` (which begins the capture on it, or
    /// makes it wait for an event recorded in the capture): first the mark is recorded, so
    /// that it covers all the stream's real work while the stream is in the capture. The
    /// caller holds the stream's write lock and has made its context current.
    pub(super) fn enter_capture(&self, capture: &Arc<Capture>, enter: impl FnOnce() -> Result<()>) -> Result<()> {
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

impl Stream {
    /// The body of [`Stream::capture`] (see there).
    pub(super) fn capture_impl(&self, f: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
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
}
