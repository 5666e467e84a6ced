//! Host functions ([`Stream::host_fn`]): a closure run on a driver thread in stream order, and
//! what Cohort refuses inside one.

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use super::Stream;
use crate::device::Doing;
use crate::error::{Error, Result};

thread_local! {
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

impl Stream {
    /// The body of [`Stream::host_fn`] (see there).
    pub(super) fn host_fn_impl(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
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
}
