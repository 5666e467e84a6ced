//! Streams, events, host callbacks and graphs.
//!
//! | file | concept |
//! | --- | --- |
//! | `mod.rs` | [`Stream`] and its shared state, the legacy and per-thread default streams, synchronizing and querying; every public method of [`Stream`] (those of the concepts below call their `*_impl` there) |
//! | `options.rs` | [`StreamOptions`] |
//! | `gate.rs` | the stream's gate: what every operation holds from its checks to its enqueue |
//! | `mark.rs` | how other streams and the host wait for a stream's work (its mark event), and which of its operations have finished |
//! | `capture.rs` | graph captures: beginning, joining, ending, what a capture keeps ([`Stream::capture`]) |
//! | `graph.rs` | [`Graph`] and [`GraphExec`]: a captured graph and its replays |
//! | `event.rs` | [`Event`], and streams waiting for events ([`Stream::wait`]) |
//! | `host_fn.rs` | host functions ([`Stream::host_fn`]) and what Cohort refuses inside one |
//! | `copy.rs` | asynchronous copies and fills ([`Stream::copy`], [`Stream::fill`]) |
//!
//! (A type's public methods stay in the module that defines the type: the compiler's
//! diagnostics name a method of an `impl` block elsewhere by that block's module,
//! `cohort_runtime::stream::copy::<impl Stream>::copy`, instead of `Stream::copy`.)
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

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use cudarc::driver::DriverError;
use cudarc::driver::sys;

use crate::backend::{EventH, StreamH};
use crate::device::{Doing, GpuInner};
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::track::{CopyDst, CopySrc};

mod capture;
mod copy;
mod event;
mod gate;
mod graph;
mod host_fn;
mod mark;
mod options;
#[cfg(test)]
mod tests;

pub(crate) use capture::{Capture, Captured};
pub use event::Event;
pub(crate) use gate::Gate;
pub use graph::{Graph, GraphExec};
pub(crate) use host_fn::{host_fn_error, in_host_fn};
use mark::MarkState;
pub use options::StreamOptions;

thread_local! {
    /// This thread's key for the per-thread default stream.
    static PER_THREAD_KEY: u64 = IDS.fetch_add(1, Ordering::Relaxed);
}

/// Unique numbers for streams (and per-thread default streams, per thread).
static IDS: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// Created by Cohort, destroyed when the last reference goes.
    Owned,
    /// `CU_STREAM_LEGACY`, the legacy default stream.
    Legacy,
    /// `CU_STREAM_PER_THREAD`: a different stream on every thread that uses it.
    PerThread,
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
        self.copy_impl::<T>(src, dst)
    }

    /// Sets every byte of device memory `dst` to `value`, asynchronously (`cuMemsetD8Async`).
    ///
    /// # Errors
    /// [`Error::Argument`] for host memory; [`Error::CrossDevice`] for another GPU's buffer; a
    /// driver failure.
    pub fn fill_bytes<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: u8) -> Result<()> {
        self.fill_bytes_impl::<T>(dst, value)
    }

    /// Sets every element of device memory `dst` to `value`, asynchronously: `T` must be 1, 2
    /// or 4 bytes (`cuMemsetD8/D16/D32Async`, e.g. `f32` or `u32`); fill wider types with a
    /// kernel or [`Stream::fill_bytes`].
    ///
    /// # Errors
    /// [`Error::Argument`] for another size or for host memory; a driver failure.
    pub fn fill<T: cohort::DeviceCopy>(&self, dst: impl CopyDst<T>, value: T) -> Result<()> {
        self.fill_impl::<T>(dst, value)
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
        self.host_fn_impl(f)
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
    /// Only a non-blocking stream ([`StreamOptions::non_blocking`](crate::StreamOptions::non_blocking)) can capture or join a
    /// capture: while a *blocking* stream captures, work that any other thread puts on the
    /// legacy default stream (synchronous copies, `cudaMemcpy`-style calls of other libraries)
    /// fails with `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidates the capture.
    ///
    /// # Errors
    /// What `f` returns; [`Error::Argument`] on a blocking stream, on the legacy or per-thread
    /// default stream (CUDA cannot capture them), when already in a capture, or from another
    /// thread than one capturing it; a driver failure (a stream not joined back included).
    pub fn capture(&self, f: impl FnOnce(&Stream) -> Result<()>) -> Result<Graph> {
        self.capture_impl(f)
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
        self.wait_impl(event)
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
