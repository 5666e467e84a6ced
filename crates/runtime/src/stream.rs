//! Streams and events.

use std::fmt;
use std::sync::{Arc, Mutex};

use cudarc::driver::DriverError;
use cudarc::driver::sys;

use crate::device::{Gpu, GpuInner};
use crate::error::{Error, Result, is_sticky};
use crate::launch::LaunchConfig;

/// A CUDA stream: launches on one stream run in order.
///
/// Streams are created *blocking* (`CU_STREAM_DEFAULT`), so the synchronous copies of
/// [`DeviceBuffer`](crate::DeviceBuffer) wait for kernels on them: reading a buffer back always
/// sees the kernels launched before.
pub struct Stream {
    pub(crate) raw: sys::CUstream,
    pub(crate) gpu: Arc<GpuInner>,
    last: Mutex<Option<(Arc<str>, LaunchConfig)>>,
}

// SAFETY: a CUstream handle may be used from any thread (the driver synchronizes internally);
// the only interior state is behind a Mutex.
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
            .map_err(|code| Error::Driver { what: "creating a stream".into(), code })?;
        Ok(Self { raw, gpu: gpu.clone(), last: Mutex::new(None) })
    }

    /// Waits until everything launched on this stream has finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`], naming the last kernel launched here and, if it panicked,
    /// where.
    pub fn synchronize(&self) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: `raw` is a live stream of the current context.
        let r = unsafe { sys::cuStreamSynchronize(self.raw) }.result();
        r.map_err(|code| kernel_error(&self.gpu, code, Some(self)))
    }

    /// The raw handle, for interop.
    #[must_use]
    pub fn cu_stream(&self) -> sys::CUstream {
        self.raw
    }

    #[inline]
    pub(crate) fn note_launch(&self, kernel: &Arc<str>, config: LaunchConfig) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *last {
            Some((k, c)) if Arc::ptr_eq(k, kernel) => *c = config,
            slot => *slot = Some((kernel.clone(), config)),
        }
    }

    pub(crate) fn last_launch(&self) -> Option<(Arc<str>, LaunchConfig)> {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
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

/// Turns a failed synchronization into an error that names the kernel and, if it panicked,
/// where.
pub(crate) fn kernel_error(gpu: &GpuInner, code: DriverError, stream: Option<&Stream>) -> Error {
    if !is_sticky(&code) {
        return Error::Driver { what: "synchronizing".into(), code };
    }
    let last = stream.and_then(Stream::last_launch);
    Error::KernelFailed {
        kernel: last.as_ref().map(|(k, _)| k.clone()),
        config: last.map(|(_, c)| c),
        code,
        panic: gpu.take_panic(),
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
            .map_err(|code| Error::Driver { what: "creating an event".into(), code })?;
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
            .map_err(|code| Error::Driver { what: "recording an event".into(), code })
    }

    /// Waits for the event.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if work before it failed.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live handle.
        unsafe { sys::cuEventSynchronize(self.raw) }.result().map_err(|code| kernel_error(&self.gpu, code, None))
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
            code => Err(kernel_error(&self.gpu, DriverError(code), None)),
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
            .map_err(|code| Error::Driver { what: "reading event time".into(), code })?;
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
