//! Events ([`Event`]), and a stream's waits for them ([`Stream::wait`]), which is how a stream
//! joins a graph capture.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::gate::other_thread_error;
use super::{Capture, Gate, Stream, StreamInner, StreamKind, host_fn_error, in_host_fn};
use crate::backend::EventH;
use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};

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

impl Stream {
    /// The body of [`Stream::wait`] (see there).
    pub(super) fn wait_impl(&self, event: &Event) -> Result<()> {
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
}

/// A CUDA event: a point in a stream's work, for timing and for making streams wait.
pub struct Event {
    raw: EventH,
    gpu: Arc<GpuInner>,
    pub(super) state: Mutex<EventState>,
}

/// What Cohort knows of an event's last record.
#[derive(Default)]
pub(super) struct EventState {
    /// The capture it was last recorded in, if it was recorded on a stream in a capture: it
    /// then marks a point of the graph, not of real work (waiting for it joins a stream into
    /// the capture; the host cannot wait for it or time it).
    pub(super) captured: Option<Arc<Capture>>,
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
