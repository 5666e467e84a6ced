//! # Interop with cudarc (and what is built on it: candle, burn's CUDA backend)
//!
//! [cudarc](https://docs.rs/cudarc) is the crate most Rust CUDA code is built on, and Cohort's
//! own runtime sits on it: a CUDA context, stream and device pointer are the same things on
//! both sides. This module lets the two share them **without copies**, each side keeping its
//! own stream-ordered safety across the boundary.
//!
//! | cudarc | → Cohort | Cohort | → cudarc |
//! |---|---|---|---|
//! | `Arc<CudaContext>` | [`Gpu::from_cudarc`] | [`Gpu`] | [`Gpu::cuda_context`] |
//! | `Arc<CudaStream>` | [`Gpu::cudarc_stream`] | [`Stream`] | [`Stream::cudarc`] |
//! | `&CudaSlice<T>`, `CudaView<T>` | `.cohort()` ([`AsCohort`]): a `&[T]` kernel argument | `&DeviceBuffer<T>`, [`DeviceView`] | [`DeviceBuffer::with_cudarc`]: a `CudaView<T>` in a scope |
//! | `&mut CudaSlice<T>`, `CudaViewMut<T>` | `.cohort_mut()` ([`AsCohortMut`]): a `DisjointSlice<T>` / atomics argument | `&mut DeviceBuffer<T>`, [`DeviceViewMut`] | [`DeviceBuffer::with_cudarc_mut`]: a `CudaViewMut<T>` in a scope |
//!
//! ```no_run
//! # mod kernels { pub struct saxpy; impl saxpy {
//! #   pub fn load(_: &cohort_runtime::Module) -> Result<Self, cohort_runtime::Error> { unimplemented!() }
//! #   pub fn launch(&self, _: &cohort_runtime::Stream, _: impl Into<cohort_runtime::LaunchConfig>, _: f32,
//! #     _: impl cohort_runtime::SliceArg<f32>, _: impl cohort_runtime::DisjointArg<f32>)
//! #     -> Result<(), cohort_runtime::Error> { unimplemented!() } }
//! #   pub static PTX: cohort_runtime::PtxSet = cohort_runtime::PtxSet { crate_name: "k", modules: &[] }; }
//! use cohort_runtime::interop::{AsCohort, AsCohortMut};
//! use cohort_runtime::{Gpu, LaunchConfig, cudarc::driver::CudaContext};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;                      // cudarc's (or candle's: its device's context)
//! let cs = ctx.new_stream()?;
//! let x = cs.clone_htod(&[1.0f32; 1000])?;             // cudarc's memory…
//! let mut y = cs.alloc_zeros::<f32>(1000)?;
//! let gpu = Gpu::from_cudarc(&ctx)?;                   // …and a Cohort kernel on it
//! let stream = gpu.cudarc_stream(&cs)?;
//! let saxpy = kernels::saxpy::load(&gpu.load(&kernels::PTX)?)?;
//! saxpy.launch(&stream, LaunchConfig::for_elements(1000, 256), 2.0, x.cohort(), y.cohort_mut())?;
//! assert_eq!(cs.clone_dtoh(&y)?, vec![2.0f32; 1000]);  // cudarc reads it after the kernel
//! # Ok(()) }
//! ```
//!
//! # What is ordered across the boundary
//!
//! Each side keeps its own record of the work pending on its memory, and each operation that
//! crosses the boundary follows the record of the memory's owner:
//!
//! - **A Cohort kernel on cudarc memory** follows cudarc's protocol for the slice, the one
//!   cudarc's own `launch_builder` follows: the launch stream first waits for the slice's write
//!   event (a read) or its read and write events (a write), and the launch is then recorded into
//!   the slice's read or write event. A read also waits for the read event before recording it,
//!   so that the event still covers the earlier reader (cudarc keeps one read event per slice: a
//!   cudarc read on another stream replaces it, so two cudarc readers followed by a writer is
//!   cudarc's own limit, which a Cohort read neither has nor widens). When cudarc does not manage
//!   multi-stream synchronization for the slice's context (`CudaContext::
//!   is_managing_stream_synchronization`: one stream only, or event tracking disabled) or the
//!   slice has no events, cudarc assumes all work on the slice runs on the slice's own stream;
//!   Cohort then keeps that true: a launch on another stream waits for the slice's stream first,
//!   and the slice's stream waits for the launch after. Either way **freeing the slice waits for
//!   the Cohort launch** (cudarc's drop waits for the events, or frees on its own stream, which
//!   waited). Cohort's own memory in the same launch is ordered by Cohort's tracker as always.
//! - **cudarc work on Cohort memory** ([`DeviceBuffer::with_cudarc`], `_mut`): on entering the
//!   scope the stream waits for Cohort's conflicting work on the buffer (as a Cohort operation
//!   would), and the `CudaView` given is of a `CudaSlice` whose events are recorded on the
//!   stream then, so cudarc work on *any* stream of the context waits for them. On leaving, the
//!   stream waits for the view's events (cudarc work on other streams recorded them) and the
//!   whole scope is recorded as one Cohort operation on the stream: later Cohort work, host
//!   reads and the buffer's free wait for everything cudarc enqueued in the scope. The view
//!   cannot leave the scope (its lifetime is the closure's), and the memory is never freed by
//!   cudarc (the slice is leaked back, never dropped).
//! - **Streams**: a [`Stream`] made from a cudarc stream keeps cudarc's `Arc<CudaStream>` (cudarc
//!   destroys it); the `Arc<CudaStream>` [`Stream::cudarc`] gives for a Cohort stream may outlive
//!   the [`Stream`]: then the stream is never destroyed (its handle stays valid for cudarc).
//!
//! **Not tracked across the boundary**, and why:
//! - *cudarc's graph captures*: `CudaStream::begin_capture` is safe in cudarc, and its graphs
//!   keep no memory alive. Cohort never enqueues into a capture it did not begin: on every stream
//!   cudarc holds, or that waited for cudarc's events, each Cohort operation first asks the driver
//!   whether the stream is capturing (`cuStreamIsCapturing`) and is refused if it is; a Cohort
//!   capture ([`Stream::capture`]) refuses cudarc memory (its graph could not keep it alive). But
//!   work cudarc captures inside a `with_cudarc` scope and replays after it is outside Cohort's
//!   record, as it is outside cudarc's for its own slices.
//! - *cudarc work on other streams of a context that is not in cudarc's multi-stream mode*:
//!   cudarc then records no event, and assumes all work is on one stream. Cohort keeps its own
//!   context in that mode while memory is lent (it makes one stream there, once: cudarc then
//!   synchronizes the context, once); a second `Arc<CudaContext>` of the same device (another
//!   library's `CudaContext::new`) has its own mode, and cudarc records nothing for work
//!   enqueued through one that is not in it. Inside a `with_cudarc` scope, enqueue on the stream
//!   given (or through contexts in multi-stream mode).
//! - *Raw pointers*: `CudaSlice::leak`, `upgrade_device_ptr`, `DevicePtr::device_ptr` used by
//!   hand are as untracked as [`Stream::cu_stream`] on Cohort's side.
//!
//! The CPU device has no cudarc side: every function here is [`Error::NotOnCpu`] there (cudarc
//! needs a driver).

use std::any::type_name;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cohort::DeviceCopy;
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice,
    SyncOnDrop,
};

use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::memory::{AtomicSliceArg, DeviceBuffer, DeviceView, DeviceViewMut, DisjointArg, SliceArg};
use crate::stream::{Gate, Stream, StreamInner, StreamKind};
use crate::track::{Alloc, AllocKind, CopyDst, CopySrc, Use, run_tracked_in};

// ---------------------------------------------------------------------------------------------
// Contexts and streams
// ---------------------------------------------------------------------------------------------

impl Gpu {
    /// A [`Gpu`] on a cudarc context (candle's `CudaDevice`'s, or any cudarc user's): the same
    /// CUDA context and the same `Arc<CudaContext>`, so Cohort's modules, buffers and streams
    /// and cudarc's slices and streams mix freely. [`Gpu::new`] on the same device gives the same
    /// (primary) context too, but another `Arc<CudaContext>`, whose cudarc bookkeeping (the
    /// multi-stream mode, the error record) is its own: prefer this one for interop.
    ///
    /// # Errors
    /// A driver failure reading the device's properties; [`Error::KernelFailed`] if a kernel
    /// failed earlier in this process.
    pub fn from_cudarc(ctx: &Arc<CudaContext>) -> Result<Gpu> {
        let ordinal = ctx.ordinal();
        let serial = if ctx.is_primary() { crate::budget::LaunchSerial::for_primary(ordinal) } else { Arc::default() };
        Gpu::from_context(ctx.clone(), ordinal, serial)
    }

    /// A Cohort [`Stream`] on a cudarc stream: Cohort's work enqueued on it is in the stream's
    /// order with cudarc's, and cross-stream ordering works as for any Cohort stream. The stream
    /// stays cudarc's: the returned [`Stream`] keeps the `Arc<CudaStream>` alive and never
    /// destroys it. cudarc's default stream is the legacy default stream
    /// ([`Gpu::legacy_stream`]), its per-thread stream [`Gpu::per_thread_stream`].
    ///
    /// Every Cohort operation on it first asks the driver whether cudarc is capturing it into a
    /// graph, and is refused then (see the module docs).
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another context than this `Gpu`'s;
    /// [`Error::NotOnCpu`] on the CPU device.
    pub fn cudarc_stream(&self, stream: &Arc<CudaStream>) -> Result<Stream> {
        let inner = &self.inner;
        inner.cuda("a cudarc stream")?;
        same_context(inner, stream.context(), "a cudarc stream (Gpu::cudarc_stream)")?;
        let raw = stream.cu_stream();
        match raw as usize {
            0 | 1 => return Ok(self.legacy_stream()),
            2 => return Ok(self.per_thread_stream()),
            _ => {}
        }
        inner.bind()?;
        let mut flags = 0u32;
        // SAFETY: a live stream (cudarc's `Arc` keeps it) of this context, which is current;
        // `flags` receives its flags.
        unsafe { crate::drv::cuStreamGetFlags(raw, &mut flags) }
            .result()
            .map_err(|code| inner.error(code, Doing::Call("reading a cudarc stream's flags".into())))?;
        let blocking = flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 == 0;
        Ok(Stream::wrap_linked(inner, raw, StreamKind::Owned, blocking, StreamLink::owned_by_cudarc(stream.clone())))
    }
}

impl Stream {
    /// cudarc's handle of this stream, for cudarc code (cuBLAS through `cudarc::cublas`, copies,
    /// launches) that should run in this stream's order. For a stream made from a cudarc stream,
    /// that stream; otherwise a handle that does not own the stream (cudarc never destroys it),
    /// made once. If the handle outlives this [`Stream`], the stream is not destroyed (the
    /// handle stays valid; the driver frees it with the context).
    ///
    /// From then on, every Cohort operation on the stream first asks the driver whether cudarc
    /// is capturing it, and is refused if it is.
    ///
    /// # Errors
    /// [`Error::NotOnCpu`] on the CPU device; [`Error::Argument`] for the per-thread default
    /// stream (its handle names another stream on every thread).
    pub fn cudarc(&self) -> Result<Arc<CudaStream>> {
        cudarc_handle(&self.inner).cloned()
    }
}

/// The stream's cudarc handle (made on first use), and the stream marked as exposed to cudarc.
fn cudarc_handle(s: &StreamInner) -> Result<&Arc<CudaStream>> {
    let ctx = s.gpu.cuda("a stream's cudarc handle (Stream::cudarc)")?;
    if s.kind == StreamKind::PerThread {
        return Err(Error::Argument(
            "the per-thread default stream has no single cudarc handle (it is another stream on every thread); use a \
             stream of its own (Gpu::new_stream)"
                .into(),
        ));
    }
    s.interop.exposed.store(true, Ordering::Release);
    // SAFETY: `raw` is a live stream of `ctx` (or the legacy default stream); the handle does
    // not own it (cudarc never destroys it), and the stream is not destroyed while the handle
    // has other holders than this link (`StreamLink::may_destroy`).
    Ok(s.interop.handle.get_or_init(|| unsafe { ctx.wrap_borrowed_stream(s.raw) }))
}

/// A stream's cudarc side (a field of every [`StreamInner`]).
#[derive(Default)]
pub(crate) struct StreamLink {
    /// cudarc's handle of the stream: the owner's, or one Cohort made ([`Stream::cudarc`]).
    handle: OnceLock<Arc<CudaStream>>,
    /// Whether cudarc owns the stream (it was made from a cudarc stream).
    cudarc_owns: bool,
    /// Whether cudarc may capture the stream, or may have joined it into a capture (it waited
    /// for a cudarc event): then every operation asks the driver first.
    exposed: AtomicBool,
    /// A stream cudarc made in the handle's context when memory was first lent on this stream:
    /// it keeps that context in cudarc's multi-stream mode, where cudarc orders its work on
    /// other streams by the lent memory's events (in single-stream mode it records none).
    multi: OnceLock<Arc<CudaStream>>,
}

impl StreamLink {
    fn owned_by_cudarc(stream: Arc<CudaStream>) -> Self {
        Self {
            handle: OnceLock::from(stream),
            cudarc_owns: true,
            exposed: AtomicBool::new(true),
            multi: OnceLock::new(),
        }
    }

    /// Whether the stream's capture state must be asked of the driver.
    #[inline]
    pub(crate) fn exposed(&self) -> bool {
        self.exposed.load(Ordering::Acquire)
    }

    /// Whether Cohort may destroy the stream: cudarc does not own it, and no cudarc code holds
    /// the handle Cohort gave out.
    pub(crate) fn may_destroy(&self) -> bool {
        !self.cudarc_owns && self.handle.get().is_none_or(|h| Arc::strong_count(h) == 1)
    }
}

/// `Err` when `s` is in a graph capture Cohort does not know (cudarc began it, or joined the
/// stream into it through an event recorded in it): an operation enqueued now would go into a
/// graph that keeps none of its memory. Called by the stream's gate for exposed streams, outside
/// Cohort's own captures.
pub(crate) fn refuse_foreign_capture(s: &StreamInner, what: impl FnOnce() -> String) -> Result<()> {
    if s.gpu.is_cpu() {
        return Ok(());
    }
    s.gpu.bind()?;
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream of the current context; `status` receives the answer.
    let r = unsafe { crate::drv::cuStreamIsCapturing(s.raw, &mut status) };
    if r == sys::CUresult::CUDA_SUCCESS && status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        return Ok(());
    }
    Err(Error::Argument(format!(
        "{}: the stream is in a graph capture that Cohort did not begin (cudarc's CudaStream::begin_capture, or a \
         wait for an event cudarc recorded in one), so the work would go into a graph that keeps none of its memory; \
         end that capture first, or use another stream",
        what()
    )))
}

/// `Err` ([`Error::CrossDevice`]) unless `ctx` is `gpu`'s CUDA context.
fn same_context(gpu: &GpuInner, ctx: &Arc<CudaContext>, what: &str) -> Result<()> {
    if ctx.cu_ctx() == gpu.cu_ctx() {
        return Ok(());
    }
    let reason = if ctx.ordinal() == gpu.info.ordinal {
        "it belongs to another CUDA context of the same device (a Gpu::isolated one, or a cudarc non-primary \
         context); make the Gpu with Gpu::from_cudarc on the cudarc context"
    } else {
        "it belongs to another GPU; use a Gpu (Gpu::from_cudarc) and streams of the GPU the memory is on, or copy it"
    };
    Err(Error::CrossDevice {
        what: what.to_string(),
        device: gpu.info.ordinal,
        other: ctx.ordinal(),
        reason: reason.into(),
    })
}

// ---------------------------------------------------------------------------------------------
// cudarc memory as kernel arguments
// ---------------------------------------------------------------------------------------------

/// cudarc memory a Cohort operation uses: what the tracker needs to order the operation by
/// cudarc's own record ([`run_foreign`]).
pub(crate) trait Foreign: Sync {
    /// The memory's context (the slice's stream's).
    fn context(&self) -> &Arc<CudaContext>;
    /// The slice's own stream: the one cudarc frees it on, and (outside cudarc's multi-stream
    /// mode) the one cudarc assumes all its work runs on.
    fn home(&self) -> &Arc<CudaStream>;
    /// Makes `cs` wait for the slice's cudarc events the access conflicts with (cudarc's
    /// `DevicePtr`/`DevicePtrMut` protocol; cudarc records a failed wait in the context's error
    /// state), and returns the event to record the access into afterwards, if the slice has
    /// events.
    fn order<'s>(&'s self, cs: &'s CudaStream) -> Result<Option<&'s CudaEvent>>;
    /// `T`'s name and the element count, for errors.
    fn describe(&self) -> String;
}

/// What the [`Use`]s of cudarc memory point at instead of an allocation: never locked, never
/// recorded (they are diverted to [`run_foreign`] before the tracker looks at them).
pub(crate) fn placeholder() -> &'static Alloc {
    static PLACEHOLDER: OnceLock<Alloc> = OnceLock::new();
    PLACEHOLDER.get_or_init(|| {
        let gpu = Arc::new(GpuInner::new_cpu(crate::cpu::info()));
        Alloc::new(&gpu, 0, std::ptr::null_mut(), AllocKind::Registered)
    })
}

/// `&[T]` of cudarc memory for a Cohort kernel: `slice.cohort()` ([`AsCohort`]) on a
/// `CudaSlice<T>`, a `CudaView<T>` or a `CudaViewMut<T>`. The launch is ordered after cudarc's
/// writes of the slice and recorded as its read (see the module docs).
pub struct Cudarc<'a, T> {
    view: CudaView<'a, T>,
    ptr: u64,
}

/// A kernel's `DisjointSlice<T>` (or slice of atomics) on cudarc memory: `slice.cohort_mut()`
/// ([`AsCohortMut`]) on a `CudaSlice<T>` or a `CudaViewMut<T>`. The launch is ordered after
/// cudarc's reads and writes of the slice and recorded as its write.
pub struct CudarcMut<'a, T> {
    /// Taken by the launch (cudarc's protocol for a write consumes a view).
    view: Mutex<Option<CudaViewMut<'a, T>>>,
    /// The slice's own stream.
    home: Arc<CudaStream>,
    ptr: u64,
    len: usize,
}

impl<T> std::fmt::Debug for Cudarc<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cudarc<{}>[{}] at {:#x}", type_name::<T>(), self.view.len(), self.ptr)
    }
}

impl<T> std::fmt::Debug for CudarcMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudarcMut<{}>[{}] at {:#x}", type_name::<T>(), self.len, self.ptr)
    }
}

/// The device address of a cudarc view. cudarc hands it out only with its access protocol:
/// asked on the slice's own stream, that stream waits for the slice's last write (in cudarc's
/// multi-stream mode only; it is what cudarc's own work on that stream does), and nothing is
/// recorded (the record is forgotten).
fn address<T, V: DevicePtr<T>>(view: &V) -> u64 {
    let (ptr, record) = view.device_ptr(DeviceSlice::stream(view));
    std::mem::forget(record);
    ptr
}

/// cudarc's memory as a read-only Cohort kernel argument (`use cohort_runtime::interop::AsCohort`).
pub trait AsCohort<T> {
    /// A `&[T]` kernel argument.
    fn cohort(&self) -> Cudarc<'_, T>;
}

/// cudarc's memory as a written Cohort kernel argument (`use cohort_runtime::interop::AsCohortMut`).
pub trait AsCohortMut<T> {
    /// A `DisjointSlice<T>` (or `&[AtomicU32]`-like) kernel argument.
    fn cohort_mut(&mut self) -> CudarcMut<'_, T>;
}

impl<T> AsCohort<T> for CudaSlice<T> {
    fn cohort(&self) -> Cudarc<'_, T> {
        let view = self.as_view();
        let ptr = address(&view);
        Cudarc { view, ptr }
    }
}

impl<T> AsCohort<T> for CudaView<'_, T> {
    fn cohort(&self) -> Cudarc<'_, T> {
        let view = self.slice(..);
        let ptr = address(&view);
        Cudarc { view, ptr }
    }
}

impl<T> AsCohort<T> for CudaViewMut<'_, T> {
    fn cohort(&self) -> Cudarc<'_, T> {
        let view = self.slice(..);
        let ptr = address(&view);
        Cudarc { view, ptr }
    }
}

impl<T> AsCohortMut<T> for CudaSlice<T> {
    fn cohort_mut(&mut self) -> CudarcMut<'_, T> {
        CudarcMut::new(self.as_view_mut())
    }
}

impl<T> AsCohortMut<T> for CudaViewMut<'_, T> {
    fn cohort_mut(&mut self) -> CudarcMut<'_, T> {
        CudarcMut::new(self.slice_mut(..))
    }
}

impl<'a, T> CudarcMut<'a, T> {
    fn new(view: CudaViewMut<'a, T>) -> Self {
        let (ptr, len) = (address(&view), view.len());
        let home = DeviceSlice::stream(&view).clone();
        Self { view: Mutex::new(Some(view)), home, ptr, len }
    }
}

impl<T: Sync> Foreign for Cudarc<'_, T> {
    fn context(&self) -> &Arc<CudaContext> {
        DeviceSlice::stream(&self.view).context()
    }
    fn home(&self) -> &Arc<CudaStream> {
        DeviceSlice::stream(&self.view)
    }
    fn order<'s>(&'s self, cs: &'s CudaStream) -> Result<Option<&'s CudaEvent>> {
        let (_, record) = self.view.device_ptr(cs);
        Ok(event_of(record))
    }
    fn describe(&self) -> String {
        format!("cudarc memory ({} × {}, read)", self.view.len(), type_name::<T>())
    }
}

impl<T: Send + Sync> Foreign for CudarcMut<'_, T> {
    fn context(&self) -> &Arc<CudaContext> {
        self.home.context()
    }
    fn home(&self) -> &Arc<CudaStream> {
        &self.home
    }
    fn order<'s>(&'s self, cs: &'s CudaStream) -> Result<Option<&'s CudaEvent>> {
        let view = self.view.lock().unwrap_or_else(|p| p.into_inner()).take();
        let view: CudaViewMut<'s, T> = view.ok_or_else(|| {
            Error::Argument(format!("{}: one written cudarc argument serves one launch", self.describe()))
        })?;
        let (_, record) = view.view_ptr_mut(cs);
        Ok(event_of(record))
    }
    fn describe(&self) -> String {
        format!("cudarc memory ({} × {}, written)", self.len, type_name::<T>())
    }
}

/// The event a cudarc access record would record when dropped; the record itself is forgotten
/// (Cohort records the event after the operation, when it was enqueued).
fn event_of(record: SyncOnDrop<'_>) -> Option<&CudaEvent> {
    let event = match &record {
        SyncOnDrop::Record(Some((event, _))) => Some(*event),
        _ => None,
    };
    std::mem::forget(record);
    event
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy + Sync> SliceArg<T> for Cudarc<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.view.len())
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::foreign(self, false)]
    }
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy + Send + Sync> DisjointArg<T> for CudarcMut<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::foreign(self, true)]
    }
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy + Send + Sync> AtomicSliceArg for CudarcMut<'_, T> {
    type Elem = T;
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::foreign(self, true)]
    }
}

/// Whether two raw streams are the same stream (cudarc's default stream, null, is the legacy
/// default stream, `CU_STREAM_LEGACY`).
fn same_stream(a: sys::CUstream, b: sys::CUstream) -> bool {
    let norm = |s: sys::CUstream| if s.is_null() { 1 } else { s as usize };
    norm(a) == norm(b)
}

/// What a launch does after it is enqueued, for one cudarc operand.
enum After<'s> {
    /// Record the launch into the slice's event (cudarc's multi-stream mode).
    Record(&'s CudaEvent, &'s Arc<CudaContext>, &'s Arc<CudaStream>),
    /// Make the slice's own stream wait for the launch (cudarc assumes all work on the slice
    /// runs there).
    Join(&'s Arc<CudaStream>, &'s Arc<CudaStream>),
}

/// [`run_tracked_in`] of an operation some of whose operands are cudarc memory: Cohort's own
/// operands are ordered and recorded by the tracker as always; around the operation, each
/// cudarc operand is ordered by cudarc's record of it (see the module docs).
pub(crate) fn run_foreign(
    stream: &Arc<StreamInner>,
    gate: &Gate<'_>,
    uses: &[Use<'_>],
    op: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    let foreign: Vec<(&dyn Foreign, bool)> = uses.iter().filter_map(|u| u.foreign.map(|f| (f, u.write))).collect();
    let what = || foreign.iter().map(|(f, _)| f.describe()).collect::<Vec<_>>().join(", ");
    if gate.capture().is_some() {
        return Err(Error::Argument(format!(
            "{}: cudarc's memory cannot be captured into a Cohort graph (Stream::capture), which could not keep it \
             alive while replays run; launch it outside the capture, or copy it into a DeviceBuffer",
            what()
        )));
    }
    if stream.gpu.is_cpu() {
        return Err(crate::cpu::not_on_cpu(format!(
            "{}: cudarc's memory is a GPU's, which the CPU device cannot use (copy it into a DeviceBuffer of the \
             CPU device through host memory)",
            what()
        )));
    }
    if stream.kind == StreamKind::PerThread {
        return Err(Error::Argument(format!(
            "{}: cudarc's memory on the per-thread default stream, whose handle names another stream on every thread; \
             use a stream of its own",
            what()
        )));
    }
    for (f, _) in &foreign {
        same_context(&stream.gpu, f.context(), &f.describe())?;
    }
    // Waiting for cudarc's events could join the stream into a capture cudarc began (an event
    // recorded in it): from now on the gate asks the driver, and so does this operation below.
    stream.interop.exposed.store(true, Ordering::Release);
    let native: Vec<Use<'_>> = uses.iter().filter(|u| u.foreign.is_none()).copied().collect();
    run_tracked_in(stream, gate, &native, || {
        stream.gpu.bind()?;
        let driver = |code, doing: String| stream.gpu.error(code, Doing::Call(doing));
        // cudarc's handle of the stream, made with each operand's own `Arc<CudaContext>`: that
        // context's bookkeeping (its mode, its error record) is the one cudarc uses for the slice.
        let handles: Vec<Arc<CudaStream>> = foreign
            .iter()
            // SAFETY: the stream is live (`stream` holds it) and of the operand's context
            // (checked above); the handle does not own it and is dropped before this returns.
            .map(|(f, _)| unsafe { f.context().wrap_borrowed_stream(stream.raw) })
            .collect();
        let mut after: Vec<After<'_>> = Vec::with_capacity(foreign.len());
        for ((f, write), cs) in foreign.iter().zip(&handles) {
            let ctx = f.context();
            let managing = ctx.is_managing_stream_synchronization();
            let event = f.order(cs)?;
            ctx.check_err()
                .map_err(|code| driver(code, format!("ordering after cudarc's work on {}", f.describe())))?;
            match event {
                Some(event) if managing => {
                    if !write {
                        // Also after the last reader: the read event recorded below then still
                        // covers it (cudarc keeps one read event).
                        cs.wait(event).map_err(|code| driver(code, format!("ordering after {}", f.describe())))?;
                    }
                    after.push(After::Record(event, ctx, cs));
                }
                _ => {
                    let home = f.home();
                    if !same_stream(home.cu_stream(), stream.raw) {
                        refuse_capture_of(home, &stream.gpu, *f)?;
                        cs.join(home)
                            .map_err(|code| driver(code, format!("ordering after the stream of {}", f.describe())))?;
                        after.push(After::Join(home, cs));
                    }
                }
            }
        }
        // A wait above may have joined the stream into a capture cudarc began: then nothing is
        // enqueued (the gate refuses the stream from now on).
        refuse_foreign_capture(stream, what)?;
        op()?;
        let mut recorded = Ok(());
        for a in &after {
            let r = match a {
                After::Record(event, ctx, cs) if ctx.is_managing_stream_synchronization() => event.record(cs),
                After::Record(..) => Ok(()),
                After::Join(home, cs) => home.join(cs),
            };
            if recorded.is_ok() {
                recorded = r;
            }
        }
        if recorded.is_err() {
            // cudarc was not told: the operation finishes before cudarc can touch the memory
            // again (or free it).
            // SAFETY: a live stream of the current context, not in a capture (checked above).
            unsafe { crate::drv::cuStreamSynchronize(stream.raw) }
                .result()
                .map_err(|code| stream.gpu.error(code, Doing::Wait("waiting for work on cudarc's memory")))?;
        }
        Ok(())
    })
}

/// `Err` when cudarc's `home` stream is in a graph capture: an event recorded on it now would be
/// a point of the graph, and waiting for it would join the Cohort stream into the capture.
fn refuse_capture_of(home: &CudaStream, gpu: &GpuInner, f: &dyn Foreign) -> Result<()> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream (the slice keeps it) of the current context; `status` receives it.
    let r = unsafe { crate::drv::cuStreamIsCapturing(home.cu_stream(), &mut status) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(
            gpu.error(cudarc::driver::DriverError(r), Doing::Call("asking whether cudarc's stream captures".into()))
        );
    }
    if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        return Err(Error::Argument(format!(
            "{}: the stream the memory belongs to is in a cudarc graph capture; ordering a Cohort stream after it would \
             join that capture; end it first",
            f.describe()
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Cohort memory lent to cudarc
// ---------------------------------------------------------------------------------------------

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Lends the buffer to cudarc code for the length of `f`, as a `CudaView<T>` (no copy), with
    /// cudarc's handle of `stream`: cudarc reads it (copies out of it, cuBLAS inputs, cudarc
    /// launches) in `stream`'s order with Cohort's work. On entry `stream` waits for Cohort's
    /// writes of the buffer on other streams; on return everything cudarc enqueued in `f` is
    /// recorded as one Cohort read on `stream`, which later writes and the buffer's free wait
    /// for (see the module docs for cudarc work on other streams).
    ///
    /// # Errors
    /// [`Error::NotOnCpu`] on the CPU device; [`Error::CrossDevice`] for a stream of another
    /// context than the buffer's; [`Error::Argument`] for the per-thread default stream, or a
    /// stream in a graph capture (Cohort's, or one cudarc began and left open in `f`).
    pub fn with_cudarc<R>(
        &self,
        stream: &Stream,
        f: impl for<'s> FnOnce(CudaView<'s, T>, &'s Arc<CudaStream>) -> R,
    ) -> Result<R> {
        self.as_view().with_cudarc(stream, f)
    }

    /// [`DeviceBuffer::with_cudarc`] for cudarc code that writes the buffer (copies into it,
    /// cuBLAS outputs, cudarc kernels): a `CudaViewMut<T>`; on entry `stream` waits for Cohort's
    /// reads and writes of the buffer, and `f`'s work is recorded as one write.
    ///
    /// # Errors
    /// As [`DeviceBuffer::with_cudarc`].
    pub fn with_cudarc_mut<R>(
        &mut self,
        stream: &Stream,
        f: impl for<'s> FnOnce(CudaViewMut<'s, T>, &'s Arc<CudaStream>) -> R,
    ) -> Result<R> {
        self.as_view_mut().with_cudarc_mut(stream, f)
    }
}

impl<T: DeviceCopy> DeviceView<'_, T> {
    /// [`DeviceBuffer::with_cudarc`] for part of a buffer.
    ///
    /// # Errors
    /// As [`DeviceBuffer::with_cudarc`].
    pub fn with_cudarc<R>(
        &self,
        stream: &Stream,
        f: impl for<'s> FnOnce(CudaView<'s, T>, &'s Arc<CudaStream>) -> R,
    ) -> Result<R> {
        lend(stream, CopySrc::<T>::use_read(self), self.len(), |slice, cs| f(slice.as_view(), cs))
    }
}

impl<T: DeviceCopy> DeviceViewMut<'_, T> {
    /// [`DeviceBuffer::with_cudarc_mut`] for part of a buffer.
    ///
    /// # Errors
    /// As [`DeviceBuffer::with_cudarc`].
    pub fn with_cudarc_mut<R>(
        &mut self,
        stream: &Stream,
        f: impl for<'s> FnOnce(CudaViewMut<'s, T>, &'s Arc<CudaStream>) -> R,
    ) -> Result<R> {
        let len = self.len();
        lend(stream, CopyDst::<T>::use_write(&*self), len, |slice, cs| f(slice.as_view_mut(), cs))
    }
}

/// Keeps the context of `cs` in cudarc's multi-stream mode while the stream lives (see
/// [`StreamLink::multi`]); cudarc synchronizes the context when it enters the mode, once.
fn keep_multi_stream(s: &StreamInner, cs: &CudaStream) -> Result<()> {
    if s.interop.multi.get().is_none() {
        let ctx = cs.context();
        let multi = ctx.new_stream().map_err(|code| {
            s.gpu.error(code, Doing::Call("making a cudarc stream (for cudarc's multi-stream mode)".into()))
        })?;
        let _ = s.interop.multi.set(multi);
    }
    Ok(())
}

/// Runs `each` on the read and the write event of a slice Cohort lends (none when its context
/// does not track events), obtained through cudarc's access protocol on `cs` (whose own waits,
/// if any, are for these events), the records forgotten.
fn lent_events<T>(
    slice: &mut CudaSlice<T>,
    cs: &CudaStream,
    mut each: impl FnMut(&CudaEvent) -> std::result::Result<(), cudarc::driver::DriverError>,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    if let Some(read) = event_of(DevicePtr::device_ptr(&*slice, cs).1) {
        each(read)?;
    }
    if let Some(write) = event_of(slice.device_ptr_mut(cs).1) {
        each(write)?;
    }
    cs.context().check_err()
}

/// The entry or exit of a lending scope: `u` as an operation on the stream (it waits for
/// Cohort's conflicting work, and is recorded: at the exit, after everything cudarc enqueued).
fn enter_or_leave(s: &Arc<StreamInner>, u: Use<'_>, what: &str) -> Result<()> {
    let gate = s.gate(what)?;
    if gate.capture().is_some() {
        return Err(Error::Argument(format!(
            "{what}: the stream is in a graph capture (Stream::capture), whose graph would not keep cudarc's work on \
             the memory in order; lend it outside the capture"
        )));
    }
    run_tracked_in(s, &gate, &[u], || Ok(()))
}

/// A slice lent to cudarc: given back (never freed) once, by [`Lent::give_back`] or when
/// dropped (a panic in the scope).
struct Lent<'a, T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    stream: &'a Arc<StreamInner>,
    cs: &'a Arc<CudaStream>,
    u: Use<'a>,
    what: &'static str,
    done: bool,
}

impl<T> Lent<'_, T> {
    /// The exit: the stream waits for cudarc's record of the slice (work cudarc enqueued on
    /// other streams), the slice is leaked back (cudarc frees nothing), and the scope is recorded
    /// as one Cohort operation on the stream. If that fails, the whole context is waited for
    /// (best effort) before the error is returned.
    fn give_back(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(());
        }
        let cs = self.cs;
        let waited = lent_events(&mut self.slice, cs, |event| cs.wait(event));
        // SAFETY: taken once (`done`), and not used after.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        let _ = slice.leak();
        let recorded = waited
            .map_err(|code| self.stream.gpu.error(code, Doing::Call(self.what.into())))
            .and_then(|()| enter_or_leave(self.stream, self.u, self.what));
        if recorded.is_err() {
            let _ = cs.context().synchronize();
        }
        recorded
    }
}

impl<T> Drop for Lent<'_, T> {
    fn drop(&mut self) {
        let _ = self.give_back();
    }
}

/// Lends `len` elements of `T` of the allocation range `u` (read, or written) to cudarc code
/// `f`, on `stream` (see the module docs).
fn lend<T: DeviceCopy, R>(
    stream: &Stream,
    u: Use<'_>,
    len: usize,
    f: impl FnOnce(&mut CudaSlice<T>, &Arc<CudaStream>) -> R,
) -> Result<R> {
    let s = &stream.inner;
    let what =
        if u.write { "lending memory to cudarc (with_cudarc_mut)" } else { "lending memory to cudarc (with_cudarc)" };
    if crate::stream::in_host_fn() {
        return Err(crate::stream::host_fn_error(what));
    }
    s.gpu.cuda(what)?;
    if u.alloc.kind != AllocKind::Device {
        return Err(Error::Argument(format!("{what}: only device memory can be lent to cudarc")));
    }
    crate::peer::require_same(|| what.into(), &s.gpu, &u.alloc.gpu, "lend the buffer on a stream of its own Gpu")?;
    let cs = cudarc_handle(s)?;
    keep_multi_stream(s, cs)?;
    enter_or_leave(s, u, what)?;
    s.gpu.bind()?;
    // SAFETY: `len` elements of `T` at this address are inside a live device allocation of
    // `cs`'s context (checked above), which the caller's borrow of the buffer keeps alive (and,
    // for a write, unaliased) past this call; the slice is never dropped (`Lent` leaks it back),
    // so cudarc never frees the memory.
    let slice = unsafe { cs.upgrade_device_ptr::<T>(u.device_addr(), len) };
    let mut lent = Lent { slice: ManuallyDrop::new(slice), stream: s, cs, u, what, done: false };
    // The slice's events mark the entry (after Cohort's conflicting work): cudarc's work on
    // other streams waits for them.
    lent_events(&mut lent.slice, cs, |event| event.record(cs))
        .map_err(|code| s.gpu.error(code, Doing::Call(what.into())))?;
    let r = f(&mut lent.slice, cs);
    lent.give_back()?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    //! What can be checked without a GPU: cudarc's memory is refused where it cannot go, before
    //! anything runs or is recorded. The protocol itself (cudarc's events, streams, lending) is
    //! exercised by `tests/gpu/interop.rs` on a GPU.

    use super::*;
    use crate::StreamOptions;
    use crate::stream::Capture;

    /// cudarc memory that is never reached: the refusals come first.
    struct Unreachable;

    impl Foreign for Unreachable {
        fn context(&self) -> &Arc<CudaContext> {
            unreachable!("the refusal comes before the context is compared")
        }
        fn home(&self) -> &Arc<CudaStream> {
            unreachable!("the refusal comes before the home stream is used")
        }
        fn order<'s>(&'s self, _: &'s CudaStream) -> Result<Option<&'s CudaEvent>> {
            unreachable!("the refusal comes before cudarc's record is read")
        }
        fn describe(&self) -> String {
            "cudarc memory (test)".into()
        }
    }

    #[test]
    fn cudarc_memory_on_the_cpu_device_is_refused_before_anything_runs() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let mut buf = gpu.zeroed::<u32>(64).unwrap();
        let fake = Unreachable;
        let uses = [crate::memory::buffer_use(&buf, true), Use::foreign(&fake, false)];
        let mut ran = false;
        let r = crate::track::run_tracked(&s.inner, &uses, || {
            ran = true;
            Ok(())
        });
        match r {
            Err(Error::NotOnCpu { what }) => assert!(what.contains("cudarc memory (test)"), "{what}"),
            other => panic!("expected NotOnCpu, got {other:?}"),
        }
        assert!(!ran, "nothing ran");
        assert_eq!(buf.pending_accesses(), 0, "nothing was recorded, not even the Cohort operand");
        assert!(!s.inner.interop.exposed(), "a refused operation does not mark the stream");
        buf.fill_zero().unwrap();
    }

    #[test]
    fn cudarc_memory_is_refused_in_a_cohort_graph_capture() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream_with(StreamOptions::new().non_blocking(true)).unwrap();
        // `s` as `Stream::capture` leaves it (the CPU device has no graphs: see `stream`'s tests).
        let c = Arc::new(Capture::new_for_tests());
        *s.inner.capture.write().unwrap() = Some(c.clone());
        let buf = gpu.zeroed::<u32>(64).unwrap();
        let fake = Unreachable;
        let uses = [crate::memory::buffer_use(&buf, false), Use::foreign(&fake, true)];
        let r = crate::track::run_tracked(&s.inner, &uses, || Ok(()));
        match r {
            Err(Error::Argument(m)) => assert!(m.contains("cannot be captured into a Cohort graph"), "{m}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(c.is_empty_for_tests(), "the capture kept nothing");
        c.end_for_tests();
    }

    #[test]
    fn the_placeholder_is_never_a_real_allocation() {
        let p = placeholder();
        assert_eq!((p.ptr, p.kind), (0, AllocKind::Registered));
        assert!(p.gpu.is_cpu());
        assert_eq!(p.pending(), 0);
        let fake = Unreachable;
        let u = Use::foreign(&fake, true);
        assert_eq!((u.start, u.end, u.owner.is_none()), (0, 0, true), "an empty range that nothing keeps");
    }

    #[test]
    fn an_exposed_stream_of_the_cpu_device_still_works() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        s.inner.interop.exposed.store(true, Ordering::Release);
        let mut buf = gpu.zeroed::<u32>(8).unwrap();
        s.fill(&mut buf, 5u32).unwrap();
        assert_eq!(buf.to_vec().unwrap(), vec![5u32; 8]);
        assert!(matches!(s.cudarc(), Err(Error::NotOnCpu { .. })));
        assert!(matches!(buf.with_cudarc(&s, |_, _| ()), Err(Error::NotOnCpu { .. })));
        assert_eq!(buf.to_vec().unwrap(), vec![5u32; 8], "the refused lend changed nothing");
    }
}
