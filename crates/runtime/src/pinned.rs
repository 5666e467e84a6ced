//! Page-locked (pinned) host memory: [`PinnedBuffer`] and registered host memory
//! ([`Gpu::with_registered`]).
//!
//! Copies between pinned memory and the device run on the copy engines asynchronously
//! ([`Stream::copy`](crate::Stream::copy)); copies from ordinary pageable memory are staged by
//! the driver and synchronous. The host reaches pinned memory only through
//! [`PinnedBuffer::as_slice`] / [`as_mut_slice`](PinnedBuffer::as_mut_slice) (and the views'
//! equivalents), which first wait for the GPU operations still writing it (or, to write it,
//! still using it): an asynchronous copy into a pinned buffer is seen complete, and a copy out
//! of it never reads bytes the host is changing. Dropping a pinned buffer waits for the
//! operations still using it before freeing it.
//!
//! Pinned memory is also mapped into the device's address space, so kernels can read and
//! write it directly (zero-copy: pass `&PinnedBuffer` / `&mut PinnedBuffer` for `&[T]` /
//! `DisjointSlice<T>` parameters); each access then crosses PCIe / NVLink-C2C.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::ptr::NonNull;
use std::sync::Arc;

use cohort::DeviceCopy;

use crate::backend::HostAlloc;
use crate::device::{Doing, Gpu};
use crate::error::{Error, Result};
use crate::memory::{DisjointArg, SliceArg, bounds};
use crate::track::{Alloc, AllocKind, CopyDst, CopySrc, Use};

/// How to allocate a [`PinnedBuffer`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PinnedOptions {
    write_combined: bool,
}

impl PinnedOptions {
    /// Cached, portable, mapped memory (the default): fast to read and write from the CPU.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// Write-combined memory (`CU_MEMHOSTALLOC_WRITECOMBINED`): can be a little faster for
    /// the GPU to read over PCIe, but CPU *reads* of it are very slow (uncached). Only for
    /// buffers the CPU writes once and the GPU reads.
    #[must_use]
    pub fn write_combined(mut self, yes: bool) -> Self {
        self.write_combined = yes;
        self
    }
}

/// Page-locked host memory holding `len` elements of `T` (`cuMemHostAlloc`), usable by
/// asynchronous copies on every stream and, mapped, by kernels.
pub struct PinnedBuffer<T: DeviceCopy> {
    alloc: Arc<Alloc>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedBuffer<{}>[{}] at {:p}", std::any::type_name::<T>(), self.len, self.alloc.host)
    }
}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// `len` elements of zero bytes, with `options`.
    ///
    /// # Errors
    /// Out of memory (page-locked memory is limited by the OS), or a driver failure.
    pub fn with_options(gpu: &Gpu, len: usize, options: PinnedOptions) -> Result<Self> {
        // Its elements cross between host and device byte for byte: no padding.
        cohort::assert_no_padding::<T>();
        let bytes =
            len.checked_mul(size_of::<T>()).ok_or_else(|| Error::Argument(format!("{len} elements overflow")))?;
        let inner = &gpu.inner;
        inner.bind()?;
        if bytes == 0 {
            let host = NonNull::<T>::dangling().as_ptr().cast::<u8>();
            let alloc = Arc::new(Alloc::new(inner, 0, host, AllocKind::Registered));
            return Ok(Self { alloc, len, _t: PhantomData });
        }
        let flags = HostAlloc { portable: true, write_combined: options.write_combined };
        let host = inner
            .backend
            .alloc_host(bytes, flags)
            .map_err(|f| inner.fail(f, Doing::Call(format!("allocating {bytes} B of pinned host memory"))))?;
        // From here the allocation is freed by `Alloc`'s drop if anything fails.
        let mut alloc = Alloc::new(inner, 0, host, AllocKind::Pinned);
        // SAFETY: `host` is `bytes` long and ours; zero bytes are a valid `T` (`DeviceCopy`).
        unsafe { std::ptr::write_bytes(host, 0, bytes) };
        // SAFETY: `host` was allocated mapped in this context.
        let dptr =
            unsafe { inner.backend.host_device_ptr(host) }.map_err(inner.failed("mapping pinned host memory"))?;
        alloc.ptr = dptr;
        Ok(Self { alloc: Arc::new(alloc), len, _t: PhantomData })
    }

    /// `len` elements of zero bytes (cached, mapped).
    ///
    /// # Errors
    /// As [`PinnedBuffer::with_options`].
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        Self::with_options(gpu, len, PinnedOptions::new())
    }

    /// A pinned copy of `data`.
    ///
    /// # Errors
    /// As [`PinnedBuffer::with_options`].
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

    fn host(&self) -> *mut T {
        self.alloc.host.cast()
    }

    /// The contents, once every GPU operation still writing them has finished (waits).
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.alloc.host_access(0..self.len * size_of::<T>(), false, "reading pinned host memory", || Ok(()))?;
        // SAFETY: `len` initialized elements at `host`, valid while `self` lives; no pending
        // GPU operation writes them (waited above) and none can start while this shared
        // borrow lasts (writers need `&mut self`).
        Ok(unsafe { std::slice::from_raw_parts(self.host(), self.len) })
    }

    /// The contents, mutably, once every GPU operation still using them has finished (waits).
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.alloc.host_access(0..self.len * size_of::<T>(), true, "writing pinned host memory", || Ok(()))?;
        // SAFETY: as in `as_slice`; no GPU operation uses the memory now, and none can start
        // while this exclusive borrow lasts.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.host(), self.len) })
    }

    /// A copy of the contents (waits as [`PinnedBuffer::as_slice`]).
    ///
    /// # Errors
    /// As [`PinnedBuffer::as_slice`].
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }

    /// A view of `range`, for copies of part of the buffer.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing, as slicing a `[T]` does.
    #[must_use]
    #[track_caller]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> PinnedView<'_, T> {
        let r = bounds(range, self.len);
        PinnedView { alloc: &self.alloc, start: r.start, len: r.len(), _t: PhantomData }
    }

    /// A mutable view of `range`.
    ///
    /// # Panics
    /// As [`PinnedBuffer::slice`].
    #[must_use]
    #[track_caller]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> PinnedViewMut<'_, T> {
        let r = bounds(range, self.len);
        PinnedViewMut { alloc: &self.alloc, start: r.start, len: r.len(), _t: PhantomData }
    }

    /// Mutable views of consecutive chunks of `chunk` elements (the last may be shorter),
    /// all alive at once: for pipelines that stage one chunk per stream.
    ///
    /// # Panics
    /// If `chunk` is 0.
    #[must_use]
    #[track_caller]
    pub fn chunks_mut(&mut self, chunk: usize) -> Vec<PinnedViewMut<'_, T>> {
        assert!(chunk != 0, "PinnedBuffer::chunks_mut: chunk size is 0");
        (0..self.len)
            .step_by(chunk)
            .map(|start| PinnedViewMut { alloc: &self.alloc, start, len: chunk.min(self.len - start), _t: PhantomData })
            .collect()
    }

    fn whole(&self, write: bool) -> Use<'_> {
        Use::new(&self.alloc, 0..self.len * size_of::<T>(), write)
    }
}

/// A read-only view of part of a [`PinnedBuffer`] (or registered memory).
pub struct PinnedView<'a, T: DeviceCopy> {
    alloc: &'a Arc<Alloc>,
    start: usize,
    len: usize,
    _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for PinnedView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for PinnedView<'_, T> {}

impl<T: DeviceCopy> fmt::Debug for PinnedView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedView<{}>[{}..{}]", std::any::type_name::<T>(), self.start, self.start + self.len)
    }
}

impl<'a, T: DeviceCopy> PinnedView<'a, T> {
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
    fn range(&self) -> std::ops::Range<usize> {
        self.start * size_of::<T>()..(self.start + self.len) * size_of::<T>()
    }
    /// The view's elements, once the GPU operations still writing them have finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_slice(&self) -> Result<&'a [T]> {
        self.alloc.host_access(self.range(), false, "reading pinned host memory", || Ok(()))?;
        // SAFETY: inside the buffer, borrowed shared for `'a` (so no writer can start), and
        // no pending writer remains (waited above).
        Ok(unsafe { std::slice::from_raw_parts(self.alloc.host.cast::<T>().add(self.start), self.len) })
    }
}

/// A mutable view of part of a [`PinnedBuffer`] (or registered memory).
pub struct PinnedViewMut<'a, T: DeviceCopy> {
    alloc: &'a Arc<Alloc>,
    start: usize,
    len: usize,
    _t: PhantomData<&'a mut [T]>,
}

impl<T: DeviceCopy> fmt::Debug for PinnedViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedViewMut<{}>[{}..{}]", std::any::type_name::<T>(), self.start, self.start + self.len)
    }
}

impl<T: DeviceCopy> PinnedViewMut<'_, T> {
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
    /// Read-only access (as [`DeviceViewMut::as_view`](crate::DeviceViewMut::as_view)).
    #[must_use]
    pub fn as_view(&self) -> PinnedView<'_, T> {
        PinnedView { alloc: self.alloc, start: self.start, len: self.len, _t: PhantomData }
    }
    fn range(&self) -> std::ops::Range<usize> {
        self.as_view().range()
    }
    /// The view's elements, once the GPU operations still writing them have finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_slice(&self) -> Result<&[T]> {
        self.as_view().as_slice()
    }
    /// The view's elements, mutably, once the GPU operations still using them have finished.
    ///
    /// # Errors
    /// [`Error::KernelFailed`] if such an operation failed.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.alloc.host_access(self.range(), true, "writing pinned host memory", || Ok(()))?;
        // SAFETY: inside the buffer, exclusively ours; no pending GPU use (waited above), and
        // none can start while this borrow of the view lasts.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.alloc.host.cast::<T>().add(self.start), self.len) })
    }
}

impl Gpu {
    /// `len` zeroed elements of pinned host memory ([`PinnedBuffer::new`]).
    ///
    /// # Errors
    /// As [`PinnedBuffer::with_options`].
    pub fn pinned<T: DeviceCopy>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        PinnedBuffer::new(self, len)
    }

    /// A pinned copy of `data` ([`PinnedBuffer::from_slice`]).
    ///
    /// # Errors
    /// As [`PinnedBuffer::with_options`].
    pub fn pinned_from<T: DeviceCopy>(&self, data: &[T]) -> Result<PinnedBuffer<T>> {
        PinnedBuffer::from_slice(self, data)
    }

    /// Page-locks `data` for the duration of `f` (`cuMemHostRegister`), so that `f` can copy
    /// it asynchronously and kernels can map it, without a staging copy. Before returning
    /// (also if `f` panics), waits for every operation still using the memory and unregisters
    /// it; only then is `data` the caller's again.
    ///
    /// `f` receives the memory as a [`Registered`], which works like a [`PinnedBuffer`]
    /// borrowed for the scope. Registering costs about as much as allocating pinned memory;
    /// for repeated transfers, allocate a [`PinnedBuffer`] once instead.
    ///
    /// # Errors
    /// A driver failure registering the memory (the OS limit on locked memory), or waiting
    /// for the operations (a failed kernel).
    pub fn with_registered<T: DeviceCopy, R>(
        &self,
        data: &mut [T],
        f: impl for<'s> FnOnce(&mut Registered<'s, T>) -> R,
    ) -> Result<R> {
        // Its elements cross between host and device byte for byte: no padding.
        cohort::assert_no_padding::<T>();
        let inner = &self.inner;
        let bytes = size_of_val(data);
        let host = data.as_mut_ptr().cast::<u8>();
        inner.bind()?;
        if bytes > 0 {
            // SAFETY: `data` is `bytes` of memory borrowed exclusively for this call; it is
            // unregistered before the call returns (the guard below).
            unsafe { inner.backend.register_host(host, bytes) }
                .map_err(|f| inner.fail(f, Doing::Call(format!("registering {bytes} B of host memory"))))?;
        }
        /// Waits for the memory's operations and unregisters it, however the scope ends: at
        /// the end of the scope by `finish` (which returns what the wait found), or when
        /// unwinding by its drop.
        struct Unregister(Arc<Alloc>, usize, bool);
        impl Unregister {
            fn finish(&mut self) -> Result<()> {
                if std::mem::replace(&mut self.2, true) {
                    return Ok(());
                }
                let waited = self.0.host_access(0..usize::MAX, true, "unregistering host memory", || Ok(()));
                if self.1 > 0 && self.0.gpu.bind().is_ok() {
                    // SAFETY: registered above; no operation uses it any more (waited), and
                    // the `Registered` handle is gone (dropped before this is called).
                    unsafe {
                        let _ = self.0.gpu.backend.unregister_host(self.0.host);
                    }
                }
                waited
            }
        }
        impl Drop for Unregister {
            fn drop(&mut self) {
                let _ = self.finish();
            }
        }
        let mut guard = Unregister(Arc::new(Alloc::new(inner, 0, host, AllocKind::Registered)), bytes, false);
        if bytes > 0 {
            // SAFETY: registered mapped in this context.
            let dptr = unsafe { inner.backend.host_device_ptr(host) }
                .map_err(inner.failed("mapping registered host memory"))?;
            match Arc::get_mut(&mut guard.0) {
                Some(a) => a.ptr = dptr,
                None => unreachable!("the allocation is not shared yet"),
            }
        }
        let result = {
            let mut reg = Registered {
                buf: PinnedBuffer { alloc: guard.0.clone(), len: data.len(), _t: PhantomData },
                _scope: PhantomData,
            };
            f(&mut reg)
        };
        // The wait's error is the scope's: a failed kernel (or aborted collective) that used
        // the memory means its contents are not what the scope's work wrote.
        guard.finish()?;
        Ok(result)
    }
}

/// Host memory registered for a scope ([`Gpu::with_registered`]): a [`PinnedBuffer`]
/// borrowed from the caller. Read it through `Deref` (`reg.as_slice()`, `reg.slice(..)`), and
/// write it through its own methods.
pub struct Registered<'s, T: DeviceCopy> {
    buf: PinnedBuffer<T>,
    /// Invariant in `'s`: two scopes' `Registered`s are different types, so they cannot be
    /// swapped between scopes.
    _scope: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl<T: DeviceCopy> fmt::Debug for Registered<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Registered<{}>[{}]", std::any::type_name::<T>(), self.buf.len)
    }
}

impl<T: DeviceCopy> std::ops::Deref for Registered<'_, T> {
    type Target = PinnedBuffer<T>;
    fn deref(&self) -> &PinnedBuffer<T> {
        &self.buf
    }
}

impl<T: DeviceCopy> Registered<'_, T> {
    /// As [`PinnedBuffer::as_mut_slice`].
    ///
    /// # Errors
    /// As [`PinnedBuffer::as_mut_slice`].
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.buf.as_mut_slice()
    }
    /// As [`PinnedBuffer::slice_mut`].
    ///
    /// # Panics
    /// As [`PinnedBuffer::slice_mut`].
    #[must_use]
    #[track_caller]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> PinnedViewMut<'_, T> {
        self.buf.slice_mut(range)
    }
}

impl<T: DeviceCopy> CopySrc<T> for &PinnedBuffer<T> {
    fn use_read(&self) -> Use<'_> {
        self.whole(false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for &Registered<'_, T> {
    fn use_read(&self) -> Use<'_> {
        self.buf.whole(false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for PinnedView<'_, T> {
    fn use_read(&self) -> Use<'_> {
        let r = self.range();
        Use::new(self.alloc, r, false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for &PinnedViewMut<'_, T> {
    fn use_read(&self) -> Use<'_> {
        Use::new(self.alloc, self.range(), false)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut PinnedBuffer<T> {
    fn use_write(&self) -> Use<'_> {
        self.whole(true)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut Registered<'_, T> {
    fn use_write(&self) -> Use<'_> {
        self.buf.whole(true)
    }
}
impl<T: DeviceCopy> CopyDst<T> for PinnedViewMut<'_, T> {
    fn use_write(&self) -> Use<'_> {
        let r = self.range();
        Use::new(self.alloc, r, true)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut PinnedViewMut<'_, T> {
    fn use_write(&self) -> Use<'_> {
        let r = self.range();
        Use::new(self.alloc, r, true)
    }
}

// Zero-copy kernel arguments: the mapped address of the memory.
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> SliceArg<T> for &PinnedBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(false)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> DisjointArg<T> for &mut PinnedBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [self.whole(true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> SliceArg<T> for PinnedView<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr + (self.start * size_of::<T>()) as u64, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        let r = self.range();
        [Use::new(self.alloc, r, false)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> DisjointArg<T> for PinnedViewMut<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.alloc.ptr + (self.start * size_of::<T>()) as u64, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        let r = self.range();
        [Use::new(self.alloc, r, true)]
    }
}
