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
//!
//! | file | concept |
//! | --- | --- |
//! | `mod.rs` | contexts and streams: a [`Gpu`] on a cudarc context, a [`Stream`] on a cudarc stream and back, captures cudarc began; the public `with_cudarc*` of device buffers and views |
//! | `foreign.rs` | cudarc memory in Cohort operations: [`AsCohort`], [`AsCohortMut`], ordered by cudarc's own record |
//! | `lend.rs` | Cohort memory lent to cudarc: what [`DeviceBuffer::with_cudarc`] and `_mut` do |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use cohort::DeviceCopy;
use cudarc::driver::{CudaContext, CudaStream, CudaView, CudaViewMut};

use crate::backend::cuda;
use crate::device::{Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use crate::stream::{Stream, StreamInner, StreamKind};
use crate::track::{CopyDst, CopySrc};

mod foreign;
mod lend;
use lend::lend;
#[cfg(test)]
mod tests;

pub use foreign::{AsCohort, AsCohortMut, Cudarc, CudarcMut};
pub(crate) use foreign::{Foreign, placeholder, run_foreign};

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
        let raw = cuda::stream_h(raw);
        // SAFETY: a live stream (cudarc's `Arc` keeps it) of this context, which is current.
        let non_blocking = unsafe { inner.backend.stream_non_blocking(raw) }
            .map_err(inner.failed("reading a cudarc stream's flags"))?;
        Ok(Stream::wrap_linked(
            inner,
            raw,
            StreamKind::Owned,
            !non_blocking,
            StreamLink::owned_by_cudarc(stream.clone()),
        ))
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
    Ok(s.interop.handle.get_or_init(|| unsafe { ctx.wrap_borrowed_stream(cuda::stream(s.raw)) }))
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
    if !s.gpu.backend.has_graphs() {
        // Nothing captures on this device.
        return Ok(());
    }
    s.gpu.bind()?;
    // SAFETY: a live stream of the current context.
    if let Ok(false) = unsafe { s.gpu.backend.is_capturing(s.raw) } {
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
