//! cudarc memory in Cohort operations: a `CudaSlice` or view passed to a kernel (or copy) as
//! [`Cudarc`] / [`CudarcMut`] ([`AsCohort`], [`AsCohortMut`]), ordered by cudarc's own record
//! around the operation ([`run_foreign`]).

use std::any::type_name;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DeviceSlice, SyncOnDrop,
};

use super::{refuse_foreign_capture, same_context};
use crate::backend::cuda;
use crate::device::{Doing, GpuInner};
use crate::error::{Error, Result};
use crate::memory::{AtomicSliceArg, DisjointArg, SliceArg};
use crate::stream::{Gate, StreamInner, StreamKind};
use crate::track::{Alloc, AllocKind, Use, run_tracked_in};
use cohort::DeviceCopy;

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
pub(super) fn event_of(record: SyncOnDrop<'_>) -> Option<&CudaEvent> {
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
    if stream.gpu.ctx.is_none() {
        // No CUDA context: not a device cudarc's memory can be used on.
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
            .map(|(f, _)| unsafe { f.context().wrap_borrowed_stream(cuda::stream(stream.raw)) })
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
                    if !same_stream(home.cu_stream(), cuda::stream(stream.raw)) {
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
            unsafe { stream.gpu.backend.stream_synchronize(stream.raw) }
                .map_err(|f| stream.gpu.fail(f, Doing::Wait("waiting for work on cudarc's memory")))?;
        }
        Ok(())
    })
}

/// `Err` when cudarc's `home` stream is in a graph capture: an event recorded on it now would be
/// a point of the graph, and waiting for it would join the Cohort stream into the capture.
fn refuse_capture_of(home: &CudaStream, gpu: &GpuInner, f: &dyn Foreign) -> Result<()> {
    // SAFETY: a live stream (the slice keeps it) of the current context.
    let capturing = unsafe { gpu.backend.is_capturing(cuda::stream_h(home.cu_stream())) }
        .map_err(gpu.failed("asking whether cudarc's stream captures"))?;
    if capturing {
        return Err(Error::Argument(format!(
            "{}: the stream the memory belongs to is in a cudarc graph capture; ordering a Cohort stream after it would \
             join that capture; end it first",
            f.describe()
        )));
    }
    Ok(())
}
