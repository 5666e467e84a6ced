//! Stream-ordered allocation (`cuMemAllocAsync` / `cuMemFreeAsync`) and memory pools
//! ([`MemPool`]).
//!
//! [`Stream::alloc_zeroed`] (the device's current pool, the default one unless changed) and
//! [`MemPool::alloc_zeroed`] (a pool of one's own) return an ordinary [`DeviceBuffer`]:
//! kernel arguments, copies, views, `to_vec` — everything a buffer from `cuMemAlloc` does, under
//! the same tracker. What differs is when the memory exists:
//!
//! - **Allocation** is an operation on the stream: the memory is valid for work enqueued after
//!   it on that stream. The tracker lists it as a *write* of the whole buffer on that stream,
//!   so work on another stream (or a host copy) that uses the buffer first waits for the
//!   allocation, exactly as it would wait for a kernel that wrote it.
//! - **Freeing** (dropping the buffer) is `cuMemFreeAsync` on the allocating stream, after that
//!   stream has been made to wait (on the GPU, with events) for every operation of *other*
//!   streams still pending on the buffer; the host does not wait. The pool may hand the memory
//!   to a later allocation only in stream order after the free, so it is never reused while an
//!   operation that may touch it is pending. (Freeing on the allocating stream, rather than on
//!   whichever stream used it last, keeps the common case — allocate, use and drop on one
//!   stream — free of events, and "last" is not defined across streams anyway.) The buffer
//!   keeps its stream and its pool alive until then.
//!
//! A `cuMemAlloc` buffer's drop waits on the host for the work still using it (a free would
//! otherwise race it), which costs a round trip per buffer; a stream-ordered one's does not —
//! what `cohort bench alloc` measures.
//!
//! **Graphs.** A stream-ordered buffer may be used inside [`Stream::capture`] like any device
//! buffer (the graph keeps it alive), but not *allocated* on a stream that is capturing (a graph
//! would own the memory: an [`Error::Argument`]). A buffer dropped while its stream captures is
//! freed after a host wait, off the capture.
//!
//! **Several GPUs.** Pool memory is reachable only from its own GPU (Cohort grants peers no
//! access to pools): a kernel of another GPU, or a copy on another GPU's stream, given a
//! stream-ordered buffer is an [`Error::CrossDevice`]; copy it into a `cuMemAlloc` buffer
//! first.
//!
//! **Pools.** Every device has a default pool; [`MemPool::new`] makes one of its own. A pool
//! keeps freed memory for reuse; at each synchronization (a stream or device synchronize, an
//! event wait) it returns to the system what exceeds its *release threshold* (0 bytes by
//! default: everything not in use). [`MemPool::set_release_threshold`] keeps more: an
//! allocate-use-free loop that synchronizes then finds its memory still in the pool.
//!
//! On the CPU device pools, stream-ordered allocation and freeing work alike (host memory; the
//! CPU device's streams finish each operation when it is enqueued, so a free is immediate).

use std::fmt;
use std::sync::Arc;

use cohort::DeviceCopy;

use crate::backend::{PoolAttr, PoolH};
use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::memory::DeviceBuffer;
use crate::stream::{Stream, StreamInner};
use crate::track::{Alloc, AllocKind, OrderedFree, record_allocation};

/// A pool's handle and whether Cohort made it (and destroys it).
pub(crate) struct PoolInner {
    raw: PoolH,
    gpu: Arc<GpuInner>,
    owned: bool,
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        if self.owned && self.gpu.bind().is_ok() {
            // SAFETY: ours, not used after. Every buffer allocated from it holds this pool, so
            // none is live; frees still in flight are finished by the driver, which releases
            // the pool's memory after them.
            unsafe {
                let _ = self.gpu.backend.destroy_pool(self.raw);
            }
        }
    }
}

/// A memory pool of one device (`cudaMemPool_t`): where stream-ordered allocations come from.
///
/// ```no_run
/// # use cohort_runtime::{Gpu, MemPool};
/// # fn main() -> Result<(), cohort_runtime::Error> {
/// let gpu = Gpu::new(0)?;
/// let s = gpu.new_stream()?;
/// let pool = MemPool::new(&gpu)?;
/// pool.set_release_threshold(u64::MAX)?;          // keep freed memory across synchronizes
/// for _ in 0..1000 {
///     let mut tmp = pool.alloc_zeroed::<f32>(&s, 1 << 20)?; // cudaMallocFromPoolAsync + memset
///     s.fill(&mut tmp, 1.0f32)?;
///     // … kernels on `s` using `tmp` …
/// }                                                // each drop: cudaFreeAsync on `s`, no host wait
/// s.synchronize()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct MemPool {
    inner: Arc<PoolInner>,
}

impl fmt::Debug for MemPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemPool")
            .field("raw", &std::ptr::without_provenance::<()>(self.inner.raw.0))
            .field("device", &self.inner.gpu.info.ordinal)
            .field("owned", &self.inner.owned)
            .finish()
    }
}

impl MemPool {
    /// A new pool of `gpu`'s device (`cuMemPoolCreate`: device memory, no export handles),
    /// with a release threshold of 0. Destroyed when the last handle and the last buffer
    /// allocated from it are gone.
    ///
    /// # Errors
    /// A driver failure (`CUDA_ERROR_NOT_SUPPORTED` on a device without memory pools).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let inner = &gpu.inner;
        inner.bind()?;
        let raw = inner.backend.create_pool().map_err(inner.failed("creating a memory pool"))?;
        Ok(Self { inner: Arc::new(PoolInner { raw, gpu: inner.clone(), owned: true }) })
    }

    /// The device's default pool (`cuDeviceGetDefaultMemPool`), which [`Stream::alloc_zeroed`]
    /// allocates from. Its settings are the process's: a release threshold set here holds for
    /// every user of the device's default pool.
    ///
    /// # Errors
    /// A driver failure.
    pub fn device_default(gpu: &Gpu) -> Result<Self> {
        let inner = &gpu.inner;
        inner.bind()?;
        let raw = inner.backend.default_pool().map_err(inner.failed("reading the default memory pool"))?;
        Ok(Self { inner: Arc::new(PoolInner { raw, gpu: inner.clone(), owned: false }) })
    }

    fn get(&self, attr: PoolAttr, what: &str) -> Result<u64> {
        self.inner.gpu.bind()?;
        // SAFETY: live pool.
        unsafe { self.inner.gpu.backend.pool_attribute(self.inner.raw, attr) }
            .map_err(|f| self.inner.gpu.fail(f, Doing::Call(format!("reading a memory pool's {what}"))))
    }

    /// Keeps up to `bytes` of freed memory in the pool across synchronizations
    /// (`cudaMemPoolAttrReleaseThreshold`; `u64::MAX`: keep everything until
    /// [`MemPool::trim_to`]).
    ///
    /// # Errors
    /// A driver failure.
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        self.inner.gpu.bind()?;
        // SAFETY: live pool.
        unsafe { self.inner.gpu.backend.set_pool_attribute(self.inner.raw, PoolAttr::ReleaseThreshold, bytes) }
            .map_err(self.inner.gpu.failed("setting a memory pool's release threshold"))
    }

    /// The release threshold, bytes.
    ///
    /// # Errors
    /// A driver failure.
    pub fn release_threshold(&self) -> Result<u64> {
        self.get(PoolAttr::ReleaseThreshold, "release threshold")
    }

    /// Bytes the pool holds from the system now, in use or kept for reuse
    /// (`cudaMemPoolAttrReservedMemCurrent`).
    ///
    /// # Errors
    /// A driver failure.
    pub fn reserved_bytes(&self) -> Result<u64> {
        self.get(PoolAttr::ReservedCurrent, "reserved memory")
    }

    /// Bytes of the pool's allocations not yet freed (`cudaMemPoolAttrUsedMemCurrent`; a free
    /// counts once the host has seen it complete).
    ///
    /// # Errors
    /// A driver failure.
    pub fn used_bytes(&self) -> Result<u64> {
        self.get(PoolAttr::UsedCurrent, "used memory")
    }

    /// Returns to the system what the pool keeps beyond `keep_bytes` and does not use
    /// (`cuMemPoolTrimTo`). Memory of live buffers, and of frees not yet complete, stays.
    ///
    /// # Errors
    /// A driver failure.
    pub fn trim_to(&self, keep_bytes: usize) -> Result<()> {
        self.inner.gpu.bind()?;
        // SAFETY: live pool; trimming releases only memory no allocation holds.
        unsafe { self.inner.gpu.backend.trim_pool(self.inner.raw, keep_bytes) }
            .map_err(self.inner.gpu.failed("trimming a memory pool"))
    }

    /// `len` elements from this pool, allocated in stream order on `stream`
    /// (`cuMemAllocFromPoolAsync`) and zeroed on it (`cuMemsetD8Async`); freed in stream
    /// order when dropped (see the module docs).
    ///
    /// # Errors
    /// [`Error::CrossDevice`] for a stream of another device than the pool's;
    /// [`Error::Argument`] while `stream` is capturing a graph; out of memory or a driver
    /// failure.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, stream: &Stream, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: written with zeros (in stream order, before any other use) below.
        let mut b = unsafe { alloc_ordered::<T>(stream, Some(&self.inner), len)? };
        stream.fill_bytes(&mut b, 0)?;
        Ok(b)
    }

    /// [`MemPool::alloc_zeroed`] without the zeroing.
    ///
    /// # Safety
    /// The contents are arbitrary bytes (whatever the pool's last user left): read them only
    /// after writing them, or if every bit pattern is a valid `T`.
    ///
    /// # Errors
    /// As [`MemPool::alloc_zeroed`].
    pub unsafe fn alloc_uninit<T: DeviceCopy>(&self, stream: &Stream, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded to the caller.
        unsafe { alloc_ordered::<T>(stream, Some(&self.inner), len) }
    }
}

impl Stream {
    /// `len` elements allocated in stream order on this stream from the device's current pool
    /// (`cudaMallocAsync`) and zeroed on it; freed in stream order (`cudaFreeAsync` on this
    /// stream, after the other streams' pending work on it) when dropped. See [`MemPool`] and
    /// the `pool` module docs.
    ///
    /// # Errors
    /// [`Error::Argument`] while this stream is capturing a graph; out of memory or a driver
    /// failure.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: written with zeros (in stream order, before any other use) below.
        let mut b = unsafe { alloc_ordered::<T>(self, None, len)? };
        self.fill_bytes(&mut b, 0)?;
        Ok(b)
    }

    /// [`Stream::alloc_zeroed`] without the zeroing.
    ///
    /// # Safety
    /// The contents are arbitrary bytes: read them only after writing them, or if every bit
    /// pattern is a valid `T`.
    ///
    /// # Errors
    /// As [`Stream::alloc_zeroed`].
    pub unsafe fn alloc_uninit<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: forwarded to the caller.
        unsafe { alloc_ordered::<T>(self, None, len) }
    }
}

/// Whether `stream` is capturing a graph (its own capture, or one it joined by waiting for a
/// capturing stream's event), as the driver says; a stream the driver cannot answer for counts
/// as capturing. Asks the driver only, never Cohort's capture record: a buffer may be freed
/// while that record is locked (a capture ending on a panic drops what it captured).
pub(crate) fn capturing(stream: &StreamInner) -> bool {
    capturing_raw(stream)
}

fn capturing_raw(stream: &StreamInner) -> bool {
    // SAFETY: live stream (the caller bound its context).
    unsafe { stream.gpu.backend.is_capturing(stream.raw) }.unwrap_or(true)
}

/// `len` elements of `T` allocated on `stream` from `pool` (the device's current pool if
/// `None`), listed as a write on `stream`, freed in stream order when the buffer goes.
///
/// # Safety
/// The contents are arbitrary bytes (see [`Stream::alloc_uninit`]).
unsafe fn alloc_ordered<T: DeviceCopy>(
    stream: &Stream,
    pool: Option<&Arc<PoolInner>>,
    len: usize,
) -> Result<DeviceBuffer<T>> {
    let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| Error::Argument(format!("{len} elements overflow")))?;
    let gpu = &stream.inner.gpu;
    if let Some(p) = pool
        && !crate::peer::same_context(&p.gpu, gpu)
    {
        return Err(Error::CrossDevice {
            what: "a stream-ordered allocation".into(),
            device: p.gpu.info.ordinal,
            other: gpu.info.ordinal,
            reason: "allocate from a pool on a stream of the pool's own Gpu".into(),
        });
    }
    gpu.bind()?;
    if bytes == 0 {
        let alloc = Arc::new(Alloc::new(gpu, 0, std::ptr::null_mut(), AllocKind::Device));
        return Ok(DeviceBuffer::from_alloc(alloc, 0));
    }
    // Held through the allocation, so that no capture begins (nor this stream joins one)
    // between the check and it; another thread's capture is refused.
    let gate = stream.inner.gate("a stream-ordered allocation")?;
    if gate.capture().is_some() || capturing_raw(&stream.inner) {
        return Err(Error::Argument(
            "a stream-ordered allocation on a stream that is capturing a graph: the graph would own the memory; \
             allocate before the capture (the graph keeps the buffers it uses alive)"
                .into(),
        ));
    }
    // SAFETY: the context is current; the pool (if any) is a live pool of this context, the
    // stream a live stream of it.
    let ptr = unsafe { gpu.backend.alloc_async(bytes, pool.map(|p| p.raw), stream.inner.raw) }
        .map_err(|f| gpu.fail(f, Doing::Call(format!("allocating {bytes} B in stream order"))))?;
    // Before `alloc` exists: its drop (on a failure below) looks at the capture state.
    drop(gate);
    let mut alloc = Alloc::new(gpu, ptr, std::ptr::null_mut(), AllocKind::Pooled);
    alloc.ordered = Some(OrderedFree { stream: stream.inner.clone(), _pool: pool.cloned() });
    // From here a failure drops `alloc`, which frees it in stream order.
    let alloc = Arc::new(alloc);
    record_allocation(&stream.inner, &alloc, bytes)?;
    Ok(DeviceBuffer::from_alloc(alloc, len))
}
