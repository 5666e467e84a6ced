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

use std::ffi::c_void;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::DriverError;
use cudarc::driver::sys;

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

pub(crate) struct StreamInner {
    pub(crate) raw: sys::CUstream,
    pub(crate) gpu: Arc<GpuInner>,
    id: u64,
    pub(crate) kind: StreamKind,
    /// Whether it synchronizes with the legacy default stream.
    blocking: bool,
    /// An event re-recorded each time another stream or the host waits for this stream's
    /// work so far (created on first use).
    mark: Mutex<sys::CUevent>,
    /// Operations recorded on this stream (a sequence number for each).
    submitted: AtomicU64,
    /// Operations known finished (everything up to this number).
    completed: AtomicU64,
    /// `Some` while capturing into a graph: the memory the captured operations use.
    pub(crate) capture: Mutex<Option<Vec<Captured>>>,
    /// The message of a host function that panicked, for the next `synchronize`.
    callback_panic: Arc<Mutex<Option<String>>>,
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
// internally); the rest is atomics and mutexes.
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

    /// Makes `consumer` wait (on the GPU) for everything enqueued on this stream so far.
    /// The streams may belong to two contexts (devices): the event is made in this stream's
    /// context, and `consumer`'s context is current again on return.
    pub(crate) fn make_wait(&self, consumer: &StreamInner) -> Result<()> {
        let mut mark = self.mark.lock().unwrap_or_else(|p| p.into_inner());
        // Another context (device): make this stream's current to create and record its event,
        // and the consumer's again to wait (a stream may wait for another device's event).
        let other = !crate::peer::same_context(&self.gpu, &consumer.gpu);
        if other {
            self.gpu.bind()?;
        }
        let recorded = (|| {
            if mark.is_null() {
                // SAFETY: this stream's context is current (callers bind the consumer's, the
                // same one, or it was bound above); `mark` receives the handle.
                unsafe { crate::drv::cuEventCreate(&mut *mark, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) }
                    .result()
                    .map_err(|code| self.gpu.error(code, Doing::Call("creating an event".into())))?;
            }
            // SAFETY: live event and stream of this context, which is current; the event is
            // re-recorded under the lock.
            unsafe { crate::drv::cuEventRecord(*mark, self.raw) }
                .result()
                .map_err(|code| self.gpu.error(code, Doing::Call("ordering a stream after another".into())))
        })();
        if other {
            consumer.gpu.bind()?;
        }
        recorded?;
        // SAFETY: live event and stream (the event may be of another context: allowed);
        // `cuStreamWaitEvent` captures the state the event has now.
        unsafe { crate::drv::cuStreamWaitEvent(consumer.raw, *mark, 0) }
            .result()
            .map_err(|code| consumer.gpu.error(code, Doing::Call("ordering a stream after another".into())))
    }

    /// Waits on the host until operation `seq` has finished, before the host access `what`
    /// (which errors name).
    pub(crate) fn wait_host(&self, seq: u64, what: &'static str) -> Result<()> {
        if self.is_done(seq) {
            return Ok(());
        }
        self.sync_doing(|| Doing::Call(what.into()), Some(seq))
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        self.sync_doing(|| Doing::Wait("synchronizing a stream"), None)
    }

    /// Adds foreign work ([`StreamWork`]) enqueued now: a wait that covers the next operation
    /// recorded on this stream reports its failure (a lower bound of that operation's number:
    /// another thread may record one first, which only makes more waits report it).
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

    /// Waits for everything enqueued so far, for operation `wanted` (`None`: a
    /// `synchronize`; see [`StreamInner::ran_past`]).
    fn sync_doing(&self, doing: impl FnOnce() -> Doing, wanted: Option<u64>) -> Result<()> {
        if in_host_fn() {
            return Err(host_fn_error("synchronizing a stream"));
        }
        let upto = self.submitted.load(Ordering::Relaxed);
        self.gpu.bind()?;
        // SAFETY: `raw` is a live stream of the current context.
        unsafe { crate::drv::cuStreamSynchronize(self.raw) }.result().map_err(|code| self.gpu.error(code, doing()))?;
        self.ran_past(upto, wanted)?;
        self.gpu.note_finished(Finished::Stream(self.key()));
        if let Some(message) = self.callback_panic.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(Error::HostFnPanicked(message));
        }
        Ok(())
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.gpu.bind().is_err() {
            return;
        }
        let mark = *self.mark.get_mut().unwrap_or_else(|p| p.into_inner());
        // SAFETY: handles we created, not used after this; work still queued on a destroyed
        // stream completes normally (its resources are released after it).
        unsafe {
            if !mark.is_null() {
                let _ = crate::drv::cuEventDestroy_v2(mark);
            }
            if self.kind == StreamKind::Owned {
                let _ = crate::drv::cuStreamDestroy_v2(self.raw);
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
        f.debug_struct("Stream").field("raw", &self.inner.raw).field("kind", &self.inner.kind).finish()
    }
}

impl Stream {
    fn wrap(gpu: &Arc<GpuInner>, raw: sys::CUstream, kind: StreamKind, blocking: bool) -> Self {
        Self {
            inner: Arc::new(StreamInner {
                raw,
                gpu: gpu.clone(),
                id: IDS.fetch_add(1, Ordering::Relaxed),
                kind,
                blocking,
                mark: Mutex::new(std::ptr::null_mut()),
                submitted: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                capture: Mutex::new(None),
                callback_panic: Arc::new(Mutex::new(None)),
                foreign: Mutex::new(Vec::new()),
            }),
        }
    }

    pub(crate) fn create(gpu: &Arc<GpuInner>, options: StreamOptions) -> Result<Self> {
        gpu.bind()?;
        let mut raw = std::ptr::null_mut();
        let flags = if options.non_blocking {
            sys::CUstream_flags::CU_STREAM_NON_BLOCKING
        } else {
            sys::CUstream_flags::CU_STREAM_DEFAULT
        };
        // SAFETY: the context is current; `raw` receives the handle.
        unsafe { crate::drv::cuStreamCreateWithPriority(&mut raw, flags as u32, options.priority) }
            .result()
            .map_err(|code| gpu.error(code, Doing::Call("creating a stream".into())))?;
        Ok(Self::wrap(gpu, raw, StreamKind::Owned, !options.non_blocking))
    }

    pub(crate) fn legacy(gpu: &Arc<GpuInner>) -> Self {
        Self::wrap(
            gpu,
            std::ptr::without_provenance_mut(0x1), // CU_STREAM_LEGACY
            StreamKind::Legacy,
            true,
        )
    }

    pub(crate) fn per_thread(gpu: &Arc<GpuInner>) -> Self {
        Self::wrap(
            gpu,
            std::ptr::without_provenance_mut(0x2), // CU_STREAM_PER_THREAD
            StreamKind::PerThread,
            true,
        )
    }

    /// Waits until everything enqueued on this stream has finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed (here or on another stream), naming it (as far
    /// as the driver lets Cohort know: see [`Error::KernelFailed`]'s `kernel`) and where it
    /// panicked; [`Error::HostFnPanicked`] if a host function of this stream panicked.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// Whether everything enqueued on this stream has finished (`cuStreamQuery`), without
    /// waiting.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if a kernel failed.
    pub fn query(&self) -> Result<bool> {
        let upto = self.inner.submitted.load(Ordering::Relaxed);
        self.inner.gpu.bind()?;
        // SAFETY: live stream of the current context.
        match unsafe { crate::drv::cuStreamQuery(self.inner.raw) } {
            sys::CUresult::CUDA_SUCCESS => {
                self.inner.ran_past(upto, Some(upto))?;
                Ok(true)
            }
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(self.inner.gpu.error(DriverError(code), Doing::Wait("querying a stream"))),
        }
    }

    /// The raw handle, for interop. Work enqueued through it is not tracked: order it yourself.
    #[must_use]
    pub fn cu_stream(&self) -> sys::CUstream {
        self.inner.raw
    }

    /// The stream's priority (lower is higher).
    ///
    /// # Errors
    /// A driver failure.
    pub fn priority(&self) -> Result<i32> {
        let mut p = 0;
        self.inner.gpu.bind()?;
        // SAFETY: live stream.
        unsafe { crate::drv::cuStreamGetPriority(self.inner.raw, &mut p) }
            .result()
            .map_err(|code| self.inner.gpu.error(code, Doing::Call("reading a stream's priority".into())))?;
        Ok(p)
    }

    /// Records `event` on this stream: it completes when everything enqueued before it has.
    ///
    /// # Errors
    /// A driver failure.
    pub fn record(&self, event: &Event) -> Result<()> {
        event.record(self)
    }

    /// Makes this stream wait (on the GPU) until `event` completes (`cuStreamWaitEvent`); the
    /// event may be another GPU's.
    ///
    /// # Errors
    /// A driver failure.
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner.gpu.bind()?;
        // SAFETY: live handles (of one context, or of two: CUDA lets a stream wait for another
        // device's event).
        unsafe { crate::drv::cuStreamWaitEvent(self.inner.raw, event.raw, 0) }
            .result()
            .map_err(|code| self.inner.gpu.error(code, Doing::Call("waiting for an event".into())))
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
    /// A driver failure; [`Error::Argument`] while the stream is capturing a graph (a graph
    /// would run `f` once per replay, and `f` runs at most once).
    pub fn host_fn(&self, f: impl FnOnce() + Send + 'static) -> Result<()> {
        if self.inner.capture.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
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
        let r = unsafe { crate::drv::cuLaunchHostFunc(self.inner.raw, Some(trampoline), data) }.result();
        r.map_err(|code| {
            // SAFETY: refused, so the driver never calls `trampoline` with `data`.
            drop(unsafe { Box::from_raw(data.cast::<Payload>()) });
            self.inner.gpu.error(code, Doing::Call("enqueueing a host function".into()))
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
            // SAFETY: both ranges are inside live allocations (their `Use`s were made from
            // borrows that last this call) of `bytes` bytes; the tracker ordered the copy
            // after conflicting work on other streams. A peer copy names both allocations'
            // contexts, which the allocations keep alive.
            unsafe {
                match path {
                    crate::peer::CopyPath::Local => crate::drv::cuMemcpyAsync(dp, sp, bytes, self.inner.raw),
                    crate::peer::CopyPath::Peer(dc, sc) => {
                        crate::drv::cuMemcpyPeerAsync(dp, dc, sp, sc, bytes, self.inner.raw)
                    }
                }
            }
            .result()
            .map_err(|code| self.inner.gpu.error(code, Doing::Call(format!("copying {bytes} B asynchronously"))))
        })
    }

    /// Sets every byte of device memory `dst` to `value`, asynchronously (`cuMemsetD8Async`).
    ///
    /// # Errors
    /// [`Error::Argument`] for host memory; [`Error::CrossDevice`] for another GPU's buffer; a
    /// driver failure.
    pub fn fill_bytes<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: u8) -> Result<()> {
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
        if !crate::peer::same_context(&d.alloc.gpu, &self.inner.gpu) {
            return Err(Error::CrossDevice {
                what: "fill".into(),
                device: self.inner.gpu.info.ordinal,
                other: d.alloc.gpu.info.ordinal,
                reason: "fill a buffer on a stream of its own Gpu".into(),
            });
        }
        let bytes = d.end - d.start;
        if bytes == 0 {
            return Ok(());
        }
        let (ptr, n) = (d.device_addr(), bytes / width);
        self.inner.gpu.bind()?;
        run_tracked(&self.inner, &[d], || {
            let raw = self.inner.raw;
            // SAFETY: `ptr..ptr+bytes` is inside a live device allocation, aligned for `width`
            // (the view's element type is `width` bytes, or `width` is 1); ordered by the
            // tracker.
            unsafe {
                match width {
                    1 => crate::drv::cuMemsetD8Async(ptr, value as u8, n, raw),
                    2 => crate::drv::cuMemsetD16Async(ptr, value as u16, n, raw),
                    _ => crate::drv::cuMemsetD32Async(ptr, value, n, raw),
                }
            }
            .result()
            .map_err(|code| self.inner.gpu.error(code, Doing::Call(format!("filling {bytes} B asynchronously"))))
        })
    }

    /// Captures the work `f` enqueues on this stream into a [`Graph`] instead of running it
    /// (`cuStreamBeginCapture` … `cuStreamEndCapture`, thread-local mode). Typed launches
    /// inside keep all their checks; the graph keeps the device memory its operations use
    /// alive, and each replay is ordered against other streams like any other operation.
    ///
    /// Pinned or registered host memory and host functions cannot be captured (the host could
    /// touch that memory while a replay runs): they are an [`Error::Argument`] inside `f`.
    ///
    /// Only a non-blocking stream ([`StreamOptions::non_blocking`]) can capture: while a
    /// *blocking* stream captures, work that any other thread puts on the legacy default stream
    /// (synchronous copies, `cudaMemcpy`-style calls of other libraries) fails with
    /// `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidates the capture.
    ///
    /// # Errors
    /// What `f` returns; [`Error::Argument`] on a blocking stream, on the legacy or per-thread
    /// default stream (CUDA cannot capture them) or when already capturing; a driver failure.
    pub fn capture(&self, f: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        if self.inner.gpu.is_cpu() {
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
        {
            let mut cap = self.inner.capture.lock().unwrap_or_else(|p| p.into_inner());
            if cap.is_some() {
                return Err(Error::Argument("capture: the stream is already capturing".into()));
            }
            self.inner.gpu.bind()?;
            // SAFETY: live stream of the current context.
            unsafe {
                crate::drv::cuStreamBeginCapture_v2(
                    self.inner.raw,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            }
            .result()
            .map_err(|code| self.inner.gpu.error(code, Doing::Call("beginning a stream capture".into())))?;
            *cap = Some(Vec::new());
        }
        /// Ends the capture if `f` panics (and drops the half-made graph).
        struct EndOnUnwind<'a>(&'a StreamInner, bool);
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.capture.lock().unwrap_or_else(|p| p.into_inner()).take();
                    let mut graph = std::ptr::null_mut();
                    // SAFETY: the stream is capturing (begun above); the graph is ours.
                    unsafe {
                        if crate::drv::cuStreamEndCapture(self.0.raw, &mut graph).result().is_ok() && !graph.is_null() {
                            let _ = crate::drv::cuGraphDestroy(graph);
                        }
                    }
                }
            }
        }
        let mut guard = EndOnUnwind(&self.inner, true);
        let r = f(self);
        guard.1 = false;
        let used = self.inner.capture.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
        let mut raw = std::ptr::null_mut();
        // SAFETY: the stream is capturing (begun above); ending returns the graph, ours.
        let ended = unsafe { crate::drv::cuStreamEndCapture(self.inner.raw, &mut raw) }.result();
        let graph = (!raw.is_null()).then(|| Graph { raw, gpu: self.inner.gpu.clone(), used: Arc::new(used) });
        r?;
        ended.map_err(|code| self.inner.gpu.error(code, Doing::Call("ending a stream capture".into())))?;
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
    raw: sys::CUevent,
    gpu: Arc<GpuInner>,
}

// SAFETY: event handles may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("raw", &self.raw).finish()
    }
}

impl Event {
    fn create(gpu: &Gpu, flags: sys::CUevent_flags) -> Result<Self> {
        gpu.inner.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the context is current.
        unsafe { crate::drv::cuEventCreate(&mut raw, flags as u32) }
            .result()
            .map_err(|code| gpu.inner.error(code, Doing::Call("creating an event".into())))?;
        Ok(Self { raw, gpu: gpu.inner.clone() })
    }

    /// A new event that records timing (`cudaEventCreate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::create(gpu, sys::CUevent_flags::CU_EVENT_DEFAULT)
    }

    /// A new event without timing, cheaper to record and wait for
    /// (`cudaEventDisableTiming`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn untimed(gpu: &Gpu) -> Result<Self> {
        Self::create(gpu, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
    }

    /// Records the event on `stream`, a stream of the event's `Gpu` (another GPU's stream may
    /// [`Stream::wait`] for it).
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another context; a driver failure.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        if !crate::peer::same_context(&self.gpu, &stream.inner.gpu) {
            return Err(Error::CrossDevice {
                what: "recording an event".into(),
                device: self.gpu.info.ordinal,
                other: stream.inner.gpu.info.ordinal,
                reason: "record an event on a stream of the Gpu it was made for".into(),
            });
        }
        self.gpu.bind()?;
        // SAFETY: both handles are live and belong to the same context.
        unsafe { crate::drv::cuEventRecord(self.raw, stream.inner.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call("recording an event".into())))
    }

    /// Waits for the event.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if work before it failed.
    pub fn synchronize(&self) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: live handle.
        unsafe { crate::drv::cuEventSynchronize(self.raw) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Wait("waiting for an event")))
    }

    /// Whether the work before the event has finished (`cuEventQuery`), without waiting.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if that work failed.
    pub fn is_complete(&self) -> Result<bool> {
        self.gpu.bind()?;
        // SAFETY: live handle.
        match unsafe { crate::drv::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(self.gpu.error(DriverError(code), Doing::Wait("querying an event"))),
        }
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
    /// A driver failure (an event not yet recorded, or made [`Event::untimed`]).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        let mut ms = 0.0f32;
        self.gpu.bind()?;
        // SAFETY: both events are live.
        unsafe { crate::drv::cuEventElapsedTime_v2(&mut ms, start.raw, self.raw) }
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
                let _ = crate::drv::cuEventDestroy_v2(self.raw);
            }
        }
    }
}

/// A captured sequence of operations ([`Stream::capture`]), to instantiate and replay.
pub struct Graph {
    raw: sys::CUgraph,
    gpu: Arc<GpuInner>,
    used: Arc<Vec<Captured>>,
}

// SAFETY: graph handles may be used from any thread; the rest is shared immutable data.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph").field("raw", &self.raw).field("allocations", &self.used.len()).finish()
    }
}

impl Graph {
    /// Number of nodes (kernels, copies, fills) in the graph.
    ///
    /// # Errors
    /// A driver failure.
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0usize;
        self.gpu.bind()?;
        // SAFETY: live graph; a null node array asks for the count only.
        unsafe { crate::drv::cuGraphGetNodes(self.raw, std::ptr::null_mut(), &mut n) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call("counting graph nodes".into())))?;
        Ok(n)
    }

    /// An executable instance (`cuGraphInstantiate`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn instantiate(&self) -> Result<GraphExec> {
        self.gpu.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: live graph; `raw` receives the instance.
        unsafe { crate::drv::cuGraphInstantiateWithFlags(&mut raw, self.raw, 0) }
            .result()
            .map_err(|code| self.gpu.error(code, Doing::Call("instantiating a graph".into())))?;
        Ok(GraphExec { raw, gpu: self.gpu.clone(), used: self.used.clone() })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours, not used after.
            unsafe {
                let _ = crate::drv::cuGraphDestroy(self.raw);
            }
        }
    }
}

/// An instantiated [`Graph`]: [`GraphExec::launch`] replays it on a stream.
pub struct GraphExec {
    raw: sys::CUgraphExec,
    gpu: Arc<GpuInner>,
    used: Arc<Vec<Captured>>,
}

// SAFETY: as for `Graph`.
unsafe impl Send for GraphExec {}
// SAFETY: as for `Graph`.
unsafe impl Sync for GraphExec {}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec").field("raw", &self.raw).finish()
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
        if !crate::peer::same_context(&self.gpu, &stream.inner.gpu) {
            return Err(Error::CrossDevice {
                what: "a graph replay".into(),
                device: self.gpu.info.ordinal,
                other: stream.inner.gpu.info.ordinal,
                reason: "a graph runs only on streams of the context it was captured in (its kernels and memory \
                         are that context's); capture it again on the other GPU"
                    .into(),
            });
        }
        let uses: Vec<Use<'_>> = self.used.iter().map(Use::captured).collect();
        self.gpu.bind()?;
        run_tracked(&stream.inner, &uses, || {
            // SAFETY: live instance and stream of one context (checked above); the memory it
            // uses is kept alive by `used`, and the tracker ordered the replay after
            // conflicting work.
            unsafe { crate::drv::cuGraphLaunch(self.raw, stream.inner.raw) }
                .result()
                .map_err(|code| self.gpu.error(code, Doing::Call("launching a graph".into())))
        })
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if self.gpu.bind().is_ok() {
            // SAFETY: ours; a replay still running keeps its resources until it finishes.
            unsafe {
                let _ = crate::drv::cuGraphExecDestroy(self.raw);
            }
        }
    }
}
