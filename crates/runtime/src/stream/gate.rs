//! The stream's gate ([`StreamInner::gate`]): every operation that enqueues work on a stream
//! holds it from its checks to its enqueue, so the stream does not begin, join or leave a
//! capture meanwhile, and an operation from another thread than the capturing one is refused.

use std::sync::{Arc, RwLockReadGuard};

use super::{Capture, StreamInner, StreamKind};
use crate::error::{Error, Result};

/// The error for an operation (`what`) from another thread into a stream that `capture` holds.
pub(super) fn other_thread_error(what: &str, capture: &Capture) -> Error {
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

impl StreamInner {
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
}
