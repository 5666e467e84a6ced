//! How other streams and the host wait for a stream's work: its mark event, re-recorded when
//! one needs to wait (and frozen while the stream is in a capture), and the numbers of the
//! operations known finished (with foreign work whose failure a wait reports).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Capture, StreamInner, StreamWork, host_fn_error, in_host_fn};
use crate::backend::EventH;
use crate::device::{Doing, Finished};
use crate::error::{Error, Result};

/// A stream's mark: the event other streams and the host wait for (see [`StreamInner::make_wait`]).
pub(super) struct MarkState {
    /// Created on first use.
    pub(super) event: EventH,
    /// While the stream is in a capture: that capture, and the number of the stream's last
    /// operation before it. `event` was recorded just before the stream entered the capture
    /// (it covers every real operation of the stream) and is not re-recorded until the capture
    /// ends: recorded inside the capture it would be a captured event, and a stream waiting for
    /// it would join the capture.
    pub(super) frozen: Option<(Arc<Capture>, u64)>,
}

impl MarkState {
    /// The number of the last real operation the event covers, while the stream is in an
    /// active capture.
    pub(super) fn frozen_upto(&mut self) -> Option<u64> {
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

impl StreamInner {
    /// Records the mark (creating it first) on this stream, whose context is current.
    /// Errors name `what`, the operation the mark is recorded for.
    pub(super) fn record_mark(&self, mark: &mut MarkState, what: &str) -> Result<()> {
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
    pub(super) fn ran_past(&self, upto: u64, wanted: Option<u64>) -> Result<()> {
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
}
