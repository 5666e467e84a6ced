//! Managed (unified) memory: [`ManagedBuffer`] (`cudaMallocManaged`), one address for the host
//! and the device, pages migrating on demand.
//!
//! A managed buffer is a kernel argument like a [`DeviceBuffer`](crate::DeviceBuffer) (the same
//! argument traits, tracked the same way), and the host reads and writes it in place — but
//! only through borrows the tracker gates, as [`PinnedBuffer`](crate::PinnedBuffer)'s host
//! view is gated:
//!
//! - [`ManagedBuffer::as_slice`] first waits for every pending GPU operation that *writes* the
//!   buffer; while the `&[T]` lives, `self` is borrowed shared, so nothing that writes it (a
//!   `DisjointSlice` or atomic argument, a copy into it: all take `&mut`) can be enqueued.
//!   Kernels that only read it may run meanwhile: reads beside reads are no race.
//! - [`ManagedBuffer::as_mut_slice`] first waits for every pending GPU operation that *uses*
//!   the buffer; while the `&mut [T]` lives, nothing else can name the buffer at all.
//!
//! So the host never sees a page a kernel is still writing, and no kernel sees a page the host
//! is writing. That needs a device on which the host and the GPU may touch managed memory at
//! the same time (`concurrentManagedAccess`: Linux, Pascal and later): on other systems
//! (Windows, some embedded devices) the host may not touch *any* managed memory while *any*
//! kernel runs, which a per-buffer record cannot promise, so [`ManagedBuffer::new`] refuses
//! there (`CUDA_ERROR_NOT_SUPPORTED`).
//!
//! **Not more than the device has.** Managed memory can be larger than the GPU's memory (pages
//! are evicted to the host), but on some machines a program that oversubscribes can hang the
//! GPU, not only itself. Cohort refuses a managed allocation that, with the managed buffers of
//! this process still alive on the device, exceeds 15/16 of the device's free memory now (an
//! `Error::OutOfMemory`, saying so). It cannot see memory allocated
//! after it by other means (or by other processes), which may still leave managed pages
//! nowhere to go: keep managed buffers well inside the card.
//!
//! **Prefetch and advice** ([`ManagedBuffer::prefetch`], [`ManagedBuffer::advise`]) move pages
//! ahead of use and tell the driver how the buffer is used; neither changes what a program
//! computes. A prefetch is an operation on a stream, tracked as a read of the buffer.
//!
//! Managed buffers are not captured into graphs (the host could use them while a replay runs)
//! and are used only by their own GPU's kernels and streams. On the CPU device a managed buffer
//! is host memory: every method works, and prefetches and advice do nothing.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use cohort::DeviceCopy;
use cudarc::driver::DriverError;
use cudarc::driver::sys::{self, CUdevice_attribute as A};

use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::memory::{AtomicSliceArg, DeviceView, DeviceViewMut, DisjointArg, MutexSliceArg, SliceArg, bounds};
use crate::stream::Stream;
use crate::track::{Alloc, AllocKind, CopyDst, CopySrc, Use, run_tracked};

pub use crate::backend::{Advice, Location};

/// Bytes of live managed buffers per device (ordinal), for the oversubscription check.
static LIVE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// A live managed allocation's share of [`LIVE`], given back when the buffer goes (after its
/// memory is freed: it is dropped after the allocation).
struct Tally {
    device: usize,
    bytes: usize,
}

impl Drop for Tally {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = live.iter_mut().find(|(d, _)| *d == self.device) {
            e.1 = e.1.saturating_sub(self.bytes);
        }
    }
}

/// An array of `T` in managed memory (`cuMemAllocManaged`), owned: the same address on the
/// host and the device. See the module docs for when the host may touch it.
///
/// ```no_run
/// # mod kernels { pub struct scale; impl scale {
/// #   pub fn load(_: &cohort_runtime::Module) -> Result<Self, cohort_runtime::Error> { unimplemented!() }
/// #   pub fn launch(&self, _: &cohort_runtime::Stream, _: impl Into<cohort_runtime::LaunchConfig>,
/// #     _: &mut cohort_runtime::ManagedBuffer<f32>, _: f32) -> Result<(), cohort_runtime::Error> { unimplemented!() } }
/// #   pub static PTX: cohort_runtime::PtxSet = cohort_runtime::PtxSet { crate_name: "k", modules: &[] }; }
/// use cohort_runtime::{Gpu, LaunchConfig, Location, ManagedBuffer};
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpu = Gpu::new(0)?;
/// let scale = kernels::scale::load(&gpu.load(&kernels::PTX)?)?;
/// let mut data = ManagedBuffer::<f32>::new(&gpu, 1 << 20)?;
/// data.as_mut_slice()?.fill(1.0);                       // the host writes in place
/// data.prefetch(gpu.stream(), Location::Device)?;       // optional: move the pages first
/// scale.launch(gpu.stream(), LaunchConfig::for_elements(1 << 20, 256), &mut data, 2.0)?;
/// assert!(data.as_slice()?.iter().all(|&x| x == 2.0)); // waits for the kernel, then reads in place
/// # Ok(()) }
/// ```
pub struct ManagedBuffer<T: DeviceCopy> {
    alloc: Arc<Alloc>,
    len: usize,
    /// After `alloc`: given back once the memory is freed.
    _tally: Option<Tally>,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for ManagedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ManagedBuffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.alloc.ptr)
    }
}

/// Refuses managed memory on a GPU where the host and the device cannot touch it at the same
/// time (see the module docs).
fn check_support(gpu: &GpuInner) -> Result<()> {
    let Some(ctx) = &gpu.ctx else { return Ok(()) };
    let unsupported = |what: String| Error::Driver { what, code: DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED) };
    let attr = |a: A| ctx.attribute(a).map_err(|code| gpu.error(code, Doing::Call(format!("reading {a:?}"))));
    if attr(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? == 0 {
        return Err(unsupported(format!("managed memory on device {}: the device has none", gpu.info.ordinal)));
    }
    if attr(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? == 0 {
        return Err(unsupported(format!(
            "managed memory on device {}: the host may not touch managed memory while any kernel runs here \
             (concurrentManagedAccess = 0), which Cohort's per-buffer tracking cannot promise; use a DeviceBuffer \
             and a PinnedBuffer",
            gpu.info.ordinal
        )));
    }
    Ok(())
}

/// Counts `bytes` of managed memory against `gpu`, or refuses them if the device's live managed
/// buffers and these would exceed 15/16 of its free memory.
fn reserve(gpu: &Gpu, bytes: usize) -> Result<Tally> {
    let (free, _) = gpu.memory_info()?;
    let device = gpu.inner.info.ordinal;
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    let now = live.iter().find(|(d, _)| *d == device).map_or(0, |e| e.1);
    if too_much(now, bytes, free) {
        return Err(gpu.inner.error(
            DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            Doing::Call(format!(
                "allocating {bytes} B of managed memory (refused: with the {now} B of managed buffers still alive it \
                 would exceed 15/16 of the device's {free} B free, and oversubscribing managed memory can hang the GPU)"
            )),
        ));
    }
    match live.iter_mut().find(|(d, _)| *d == device) {
        Some(e) => e.1 += bytes,
        None => live.push((device, bytes)),
    }
    Ok(Tally { device, bytes })
}

/// Whether `bytes` more of managed memory, with `live` bytes of it alive, exceed 15/16 of the
/// device's `free` bytes.
fn too_much(live: usize, bytes: usize, free: usize) -> bool {
    live.checked_add(bytes).is_none_or(|total| total > free / 16 * 15)
}

impl<T: DeviceCopy> ManagedBuffer<T> {
    /// `len` elements of managed memory, all bytes zero (written by the host).
    ///
    /// # Errors
    /// `CUDA_ERROR_NOT_SUPPORTED` on a device without concurrent managed access;
    /// [`Error::OutOfMemory`] for more than the device can hold (see the module docs); a
    /// driver failure.
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let bytes =
            len.checked_mul(size_of::<T>()).ok_or_else(|| Error::Argument(format!("{len} elements overflow")))?;
        let inner = &gpu.inner;
        inner.bind()?;
        check_support(inner)?;
        if bytes == 0 {
            let host = NonNull::<T>::dangling().as_ptr().cast::<u8>();
            let alloc = Arc::new(Alloc::new(inner, 0, host, AllocKind::Managed));
            return Ok(Self { alloc, len, _tally: None, _t: PhantomData });
        }
        let tally = reserve(gpu, bytes)?;
        inner.bind()?;
        // Attached globally (any stream may use it).
        let ptr = inner
            .backend
            .alloc_managed(bytes)
            .map_err(|f| inner.fail(f, Doing::Call(format!("allocating {bytes} B of managed memory"))))?;
        let host = ptr as usize as *mut u8;
        // SAFETY: `bytes` of memory we own at `host` (managed memory is host-addressable), that
        // no operation uses yet; zero bytes are a valid `T` (`DeviceCopy`).
        unsafe { std::ptr::write_bytes(host, 0, bytes) };
        let alloc = Arc::new(Alloc::new(inner, ptr, host, AllocKind::Managed));
        Ok(Self { alloc, len, _tally: Some(tally), _t: PhantomData })
    }

    /// A managed copy of `data`.
    ///
    /// # Errors
    /// As [`ManagedBuffer::new`].
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        let mut b = Self::new(gpu, data.len())?;
        b.as_mut_slice()?.copy_from_slice(data);
        Ok(b)
    }

    /// Number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The contents, in place, once every GPU operation still writing them has finished
    /// (waits). Kernels that only read the buffer may be enqueued while the slice lives;
    /// nothing that writes it can be.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.alloc.host_access(0..self.bytes(), false, "reading managed memory", || Ok(()))?;
        // SAFETY: `len` initialized elements at `host` (zeroed at allocation, written since only
        // through `&mut self` or by operations that have finished), valid while `self` lives;
        // no pending GPU operation writes them (waited above) and none can start while this
        // shared borrow lasts (writers need `&mut self`); the device supports concurrent access
        // (checked at allocation), so kernels reading it meanwhile are fine.
        Ok(unsafe { std::slice::from_raw_parts(self.alloc.host.cast::<T>(), self.len) })
    }

    /// The contents, in place and mutably, once every GPU operation still using them has
    /// finished (waits). Nothing can use the buffer while the slice lives.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.alloc.host_access(0..self.bytes(), true, "writing managed memory", || Ok(()))?;
        // SAFETY: as in `as_slice`; no GPU operation uses the memory now, and none can start
        // while this exclusive borrow lasts.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.alloc.host.cast::<T>(), self.len) })
    }

    /// A copy of the contents (waits as [`ManagedBuffer::as_slice`]).
    ///
    /// # Errors
    /// As [`ManagedBuffer::as_slice`].
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// A read-only view of `range`, for kernel arguments and copies of part of the buffer.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing, as slicing a `[T]` does.
    #[must_use]
    #[track_caller]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        let r = bounds(range, self.len);
        DeviceView::from_parts(&self.alloc, self.alloc.ptr + (r.start * size_of::<T>()) as u64, r.len())
    }

    /// A mutable view of `range`.
    ///
    /// # Panics
    /// As [`ManagedBuffer::slice`].
    #[must_use]
    #[track_caller]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        let r = bounds(range, self.len);
        DeviceViewMut::from_parts(&self.alloc, self.alloc.ptr + (r.start * size_of::<T>()) as u64, r.len())
    }

    /// Migrates the buffer's pages to `to` ahead of use, on `stream` (`cudaMemPrefetchAsync`):
    /// kernels after it on `stream` find them there. Tracked as a read of the buffer on
    /// `stream` (a writer on another stream waits for it). Changes nothing a program computes.
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another device; [`Error::Argument`] while
    /// `stream` is capturing a graph; a driver failure.
    pub fn prefetch(&self, stream: &Stream, to: Location) -> Result<()> {
        let gpu = &self.alloc.gpu;
        if !crate::peer::same_context(gpu, &stream.inner.gpu) {
            return Err(Error::CrossDevice {
                what: "a managed-memory prefetch".into(),
                device: stream.inner.gpu.info.ordinal,
                other: gpu.info.ordinal,
                reason: "prefetch a managed buffer on a stream of its own Gpu".into(),
            });
        }
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        gpu.bind()?;
        let uses = [Use::new(&self.alloc, 0..bytes, false)];
        run_tracked(&stream.inner, &uses, || {
            // SAFETY: the whole of a live managed allocation of this context, on a stream of it;
            // a prefetch moves pages, never their contents.
            unsafe { gpu.backend.prefetch(self.alloc.ptr, bytes, to, stream.inner.raw) }
                .map_err(|f| gpu.fail(f, Doing::Call(format!("prefetching {bytes} B of managed memory"))))
        })
    }

    /// Tells the driver how the buffer is used (`cudaMemAdvise`); takes effect at once and
    /// changes nothing a program computes.
    ///
    /// # Errors
    /// A driver failure.
    pub fn advise(&self, advice: Advice) -> Result<()> {
        let bytes = self.bytes();
        if bytes == 0 {
            return Ok(());
        }
        let gpu = &self.alloc.gpu;
        gpu.bind()?;
        // SAFETY: the whole of a live managed allocation; advice is a hint about placement.
        unsafe { gpu.backend.advise(self.alloc.ptr, bytes, advice) }
            .map_err(|f| gpu.fail(f, Doing::Call(format!("advising {advice:?} on managed memory"))))
    }

    fn whole(&self, write: bool) -> Use<'_> {
        Use::new(&self.alloc, 0..self.bytes(), write)
    }

    /// How many operations the buffer's record lists now: for tests.
    #[doc(hidden)]
    #[must_use]
    pub fn pending_accesses(&self) -> usize {
        self.alloc.pending()
    }
}

impl Gpu {
    /// `len` zeroed elements of managed memory ([`ManagedBuffer::new`]).
    ///
    /// # Errors
    /// As [`ManagedBuffer::new`].
    pub fn managed<T: DeviceCopy>(&self, len: usize) -> Result<ManagedBuffer<T>> {
        ManagedBuffer::new(self, len)
    }
}

// Kernel arguments and copies, as for a `DeviceBuffer`: read through `&`, written through `&mut`.
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> SliceArg<T> for &ManagedBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(false)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> DisjointArg<T> for &mut ManagedBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> AtomicSliceArg for &mut ManagedBuffer<T> {
    type Elem = T;
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl MutexSliceArg for &mut ManagedBuffer<u32> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(true)]
    }
}
impl<T: DeviceCopy> CopySrc<T> for &ManagedBuffer<T> {
    fn use_read(&self) -> Use<'_> {
        self.whole(false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for &mut ManagedBuffer<T> {
    fn use_read(&self) -> Use<'_> {
        self.whole(false)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut ManagedBuffer<T> {
    fn use_write(&self) -> Use<'_> {
        self.whole(true)
    }
}

#[cfg(test)]
mod tests {
    use super::too_much;

    #[test]
    fn managed_memory_stays_inside_the_free_memory() {
        let free = 16 << 30;
        assert!(!too_much(0, 15 << 30, free));
        assert!(too_much(0, (15 << 30) + 1, free));
        // Live managed buffers count: two of 8 GiB do not fit where one does.
        assert!(!too_much(0, 8 << 30, free));
        assert!(too_much(8 << 30, 8 << 30, free));
        assert!(too_much(usize::MAX, 1, free), "overflow is refused");
        assert!(too_much(0, 1, 0));
    }
}
