//! Streams and events.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::DriverError;
use cudarc::driver::sys;

use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;

/// A CUDA stream: launches on one stream run in order.
///
/// Streams are created *blocking* (`CU_STREAM_DEFAULT`), so the synchronous copies of
/// [`DeviceBuffer`](crate::DeviceBuffer) wait for kernels on them: reading a buffer back always
/// sees the kernels launched before.
pub struct Stream {
    pub(crate) raw: sys::CUstream,
    pub(crate) gpu: Arc<GpuInner>,
    /// Names the stream in its context's record of unfinished launches.
    id: u64,
}

// SAFETY: a CUstream handle may be used from any thread (the driver synchronizes internally);
// the stream has no interior state of its own.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream").field("raw", &self.raw).finish()
    }
}

impl Stream {
    pub(crate) fn create(gpu: &Arc<GpuInner>) -> Result<Self> {
        gpu.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the context is current; `raw` receives the handle.
        unsafe { sys::cuStreamCreate(&mut raw, sys::CUstream_flags::CU_STREAM_DEFAULT as u32) }
            .result()
            .map_err(|code| gpu.error(code, Doing::Call("creating a stream".into())))?;
        static IDS: AtomicU64 = AtomicU64::new(0);
        Ok(Self { raw, gpu: gpu.clone(), id: IDS.fetch_add(1, Ordering::Relaxed) })
    }

    /// Waits until everything launched on this stream has finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed (here or on another stream), naming it (as far
    /// as the driver lets Cohort know: see [`Error::KernelFailed`]'s `kernel`) and where it
    /// panicked.
    pub fn synchronize(&self) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: `raw` is a live stream of the current context.
        unsafe { sys::cuStreamSynchronize(self.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Wait("synchronizing a stream")))?;
        self.gpu.note_finished(Some(self.id));
        Ok(())
    }

    /// The raw handle, for interop.
    #[must_use]
    pub fn cu_stream(&self) -> sys::CUstream {
        self.raw
    }

    /// Notes a successful launch (generated launchers call it through `Function`), for the
    /// error that names the kernel if it fails.
    #[inline]
    pub(crate) fn note_launch(&self, kernel: &Arc<str>, config: LaunchConfig) {
        self.gpu.note_launch(self.id, kernel, config);
    }

    /// The error for a launch of `kernel` on this stream that the driver refused with `code`:
    /// [`Error::Launch`], or [`Error::KernelFailed`] naming the kernel that failed before
    /// when the refusal is a sticky failure of an earlier kernel.
    pub(crate) fn launch_error(&self, kernel: &Arc<str>, config: LaunchConfig, code: DriverError) -> Error {
        let doing = Doing::Call(format!("launching kernel `{kernel}` with {config}"));
        self.gpu.lost(code, doing).unwrap_or_else(|_| Error::Launch { kernel: kernel.clone(), config, code })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: `raw` is a live stream we created; it is not used after this.
            unsafe {
                let _ = sys::cuStreamDestroy_v2(self.raw);
            }
        }
    }
}

/// A CUDA event, for timing work on a stream.
pub struct Event {
    raw: sys::CUevent,
    gpu: Arc<GpuInner>,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// A new event that records timing.
    ///
    /// # Errors
    /// A driver failure.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        gpu.inner.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the context is current.
        unsafe { sys::cuEventCreate(&mut raw, sys::CUevent_flags::CU_EVENT_DEFAULT as u32) }
            .result()
            .map_err(|code| gpu.inner.error(code, Doing::Call("creating an event".into())))?;
        Ok(Self { raw, gpu: gpu.inner.clone() })
    }

    /// Records the event on `stream`.
    ///
    /// # Errors
    /// A driver failure.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live and belong to the same context.
        unsafe { sys::cuEventRecord(self.raw, stream.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call("recording an event".into())))
    }

    /// Waits for the event.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if work before it failed.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live handle.
        unsafe { sys::cuEventSynchronize(self.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Wait("waiting for an event")))
    }

    /// Whether the work before the event has finished (`cuEventQuery`), without waiting.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if that work failed.
    pub fn is_complete(&self) -> Result<bool> {
        // SAFETY: live handle.
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(self.gpu.error(DriverError(code), Doing::Wait("querying an event"))),
        }
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    ///
    /// # Errors
    /// A driver failure (for example an event not yet recorded).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: both events are live.
        unsafe { sys::cuEventElapsedTime_v2(&mut ms, start.raw, self.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call("reading event time".into())))?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: we created it; not used after.
            unsafe {
                let _ = sys::cuEventDestroy_v2(self.raw);
            }
        }
    }
}
