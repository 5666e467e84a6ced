//! Device memory: owned buffers, views, and the traits that turn them into kernel arguments.
//!
//! The copies here, between device memory and ordinary (pageable) host memory, are
//! synchronous: each first waits for the operations still pending on the buffer's range on any
//! stream that conflict with it (see [`crate::stream`]'s docs), then copies and returns when
//! the copy is done. Reading a buffer back always sees what the kernels launched before wrote,
//! and writing one never races a kernel still using it. Asynchronous copies are
//! [`Stream::copy`](crate::Stream::copy), with pinned host memory.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cohort::DeviceCopy;
use cohort::atomic::{Atomic, Space};
use cohort::mutex::Mutex;

use crate::backend::{Fault, StreamH};
use crate::device::{Doing, Finished, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::track::{Alloc, AllocKind, CopyDst, CopySrc, Use};

mod view;
pub use view::{DeviceView, DeviceViewMut};

/// An array of `T` in device memory, owned.
///
/// Freeing it (dropping it) first waits for the operations still using it on any stream.
pub struct DeviceBuffer<T: DeviceCopy> {
    ptr: u64,
    len: usize,
    alloc: Arc<Alloc>,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

fn copy_error(gpu: &GpuInner, what: &str, fault: Fault) -> Error {
    gpu.fail(fault, Doing::Call(what.to_string()))
}

/// Waits for the legacy default stream (where the synchronous copies and fills run) and so
/// for every blocking stream's work before them.
fn sync_legacy(gpu: &GpuInner) -> Result<()> {
    // SAFETY: the context is current (callers bind it); `CU_STREAM_LEGACY` is always valid.
    unsafe { gpu.backend.stream_synchronize(StreamH::LEGACY) }
        .map_err(|f| gpu.fail(f, Doing::Wait("waiting for a copy")))?;
    gpu.note_finished(Finished::Blocking);
    Ok(())
}

/// The byte range of `len` elements of `T` at `ptr` inside `alloc`.
fn byte_range<T>(alloc: &Alloc, ptr: u64, len: usize) -> std::ops::Range<usize> {
    let start = (ptr - alloc.ptr) as usize;
    start..start + len * size_of::<T>()
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Allocates room for `len` elements without initializing it.
    ///
    /// # Safety
    /// The contents are arbitrary bytes: read them only after writing, or if every bit
    /// pattern is a valid `T`.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub unsafe fn uninit(gpu: &Gpu, len: usize) -> Result<Self> {
        // Every buffer is made here (or by a cast, which checks its type): its elements cross
        // between host and device byte for byte, so they must have no padding.
        cohort::assert_no_padding::<T>();
        let bytes =
            len.checked_mul(size_of::<T>()).ok_or_else(|| Error::Argument(format!("{len} elements overflow")))?;
        gpu.inner.bind()?;
        let mut ptr = 0;
        if bytes > 0 {
            ptr = gpu
                .inner
                .backend
                .alloc(bytes)
                .map_err(|f| gpu.inner.fail(f, Doing::Call(format!("allocating {bytes} B of device memory"))))?;
        }
        let alloc = Arc::new(Alloc::new(&gpu.inner, ptr, std::ptr::null_mut(), AllocKind::Device));
        Ok(Self { ptr, len, alloc, _t: PhantomData })
    }

    /// A buffer of `len` elements over the whole of `alloc` (made elsewhere: stream-ordered
    /// allocations, `crate::pool`).
    pub(crate) fn from_alloc(alloc: Arc<Alloc>, len: usize) -> Self {
        Self { ptr: alloc.ptr, len, alloc, _t: PhantomData }
    }

    /// `len` elements, all bytes zero.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        // SAFETY: written with zeros before anyone reads it; zero bytes are a valid value for
        // every `DeviceCopy` primitive (and `#[derive(DeviceCopy)]` structs of them).
        let mut b = unsafe { Self::uninit(gpu, len)? };
        b.fill_zero()?;
        Ok(b)
    }

    /// A copy of `data` in device memory.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        // SAFETY: fully written by the copy before it is returned.
        let mut b = unsafe { Self::uninit(gpu, data.len())? };
        b.copy_from(data)?;
        Ok(b)
    }

    /// Number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// The allocation and the buffer's device address (for the kinds that name it: tensor maps).
    pub(crate) fn alloc_and_ptr(&self) -> (&Arc<Alloc>, u64) {
        (&self.alloc, self.ptr)
    }

    /// Whether there are no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    #[must_use]
    pub fn num_bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Overwrites the whole buffer with `data` (same length), after the operations still using
    /// it; synchronous.
    ///
    /// # Errors
    /// A length mismatch, or a driver failure (a failed kernel included).
    pub fn copy_from(&mut self, data: &[T]) -> Result<()> {
        self.as_view_mut().copy_from(data)
    }

    /// Copies the whole buffer into `out` (same length), after the operations still writing
    /// it; synchronous.
    ///
    /// # Errors
    /// A length mismatch, or a driver failure (a failed kernel included).
    pub fn copy_to(&self, out: &mut [T]) -> Result<()> {
        self.as_view().copy_to(out)
    }

    /// The contents, after the operations still writing the buffer; synchronous.
    ///
    /// # Errors
    /// A driver failure (a failed kernel included).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_view().to_vec()
    }

    /// Sets every byte to zero, after the operations still using the buffer; synchronous (see
    /// [`Stream::fill_bytes`](crate::Stream::fill_bytes) for the asynchronous fill).
    ///
    /// # Errors
    /// A driver failure.
    pub fn fill_zero(&mut self) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let gpu = &self.alloc.gpu;
        gpu.bind()?;
        self.alloc.host_access(byte_range::<T>(&self.alloc, self.ptr, self.len), true, "clearing device memory", || {
            // SAFETY: our allocation, `num_bytes` long; nothing pending uses it (waited above).
            unsafe { gpu.backend.memset(self.ptr, 0, self.num_bytes()) }
                .map_err(|code| copy_error(gpu, "clearing device memory", code))?;
            sync_legacy(gpu)
        })
    }

    /// A read-only view of `range`.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing, as slicing a `[T]` does (and with the same
    /// messages: `range end index 11 out of range for device buffer of length 10`).
    #[must_use]
    #[track_caller]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        let r = bounds(range, self.len);
        DeviceView {
            ptr: self.ptr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            alloc: &self.alloc,
            _t: PhantomData,
        }
    }

    /// A mutable view of `range`.
    ///
    /// # Panics
    /// As [`DeviceBuffer::slice`].
    #[must_use]
    #[track_caller]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        let r = bounds(range, self.len);
        DeviceViewMut {
            ptr: self.ptr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            alloc: &self.alloc,
            _t: PhantomData,
        }
    }

    /// The whole buffer as a view.
    #[must_use]
    pub fn as_view(&self) -> DeviceView<'_, T> {
        self.slice(..)
    }

    /// The whole buffer as a mutable view.
    #[must_use]
    pub fn as_view_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.slice_mut(..)
    }

    /// How many operations the buffer's record lists now (finished ones may still be listed):
    /// for tests that the record stays short.
    #[doc(hidden)]
    #[must_use]
    pub fn pending_accesses(&self) -> usize {
        self.alloc.pending()
    }

    /// The device address, for `unsafe` kernels that take `*const T`.
    #[must_use]
    pub fn as_device_ptr(&self) -> DevicePtr<T> {
        DevicePtr { addr: self.ptr, _t: PhantomData }
    }

    /// The device address, for `unsafe` kernels that take `*mut T`.
    #[must_use]
    pub fn as_device_ptr_mut(&mut self) -> DevicePtrMut<T> {
        DevicePtrMut { addr: self.ptr, _t: PhantomData }
    }
}

/// Whether `bytes` at `ptr` are a whole number of `U`, aligned for `U` (and `U` has a size).
fn castable<U>(ptr: u64, bytes: usize) -> Option<usize> {
    let size = size_of::<U>();
    (size != 0 && bytes.is_multiple_of(size) && ptr.is_multiple_of(align_of::<U>() as u64)).then(|| bytes / size)
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// The same memory as `U`s (CUDA's `reinterpret_cast` of a whole allocation, e.g. `u32` →
    /// `u32x4` for 16-byte loads): `Err(self)` unless its bytes are a whole number of `U`,
    /// aligned for `U`. Safe because every bit pattern is a valid `U` (`DeviceCopy`).
    ///
    /// # Errors
    /// The buffer itself, unchanged, when the sizes or the alignment do not fit.
    pub fn cast<U: DeviceCopy>(self) -> std::result::Result<DeviceBuffer<U>, Self> {
        cohort::assert_no_padding::<U>();
        match castable::<U>(self.ptr, self.num_bytes()) {
            None => Err(self),
            Some(len) => Ok(DeviceBuffer { ptr: self.ptr, len, alloc: self.alloc, _t: PhantomData }),
        }
    }
}

/// `range` resolved against a buffer of `len` elements, as `[T]` indexing does it: checked
/// arithmetic (no wrapping at `usize::MAX`) and the same panic messages.
#[track_caller]
pub(crate) fn bounds(range: impl RangeBounds<usize>, len: usize) -> std::ops::Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => {
            s.checked_add(1).unwrap_or_else(|| panic!("attempted to index device buffer from after maximum usize"))
        }
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => {
            e.checked_add(1).unwrap_or_else(|| panic!("attempted to index device buffer up to maximum usize"))
        }
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end {
        if matches!(range.end_bound(), Bound::Unbounded) {
            panic!("range start index {start} out of range for device buffer of length {len}");
        }
        panic!("slice index starts at {start} but ends at {end} (device buffer of length {len})");
    }
    if end > len {
        panic!("range end index {end} out of range for device buffer of length {len}");
    }
    start..end
}

/// A device address for an `unsafe` kernel's `*const T` parameter.
#[derive(Debug)]
pub struct DevicePtr<T> {
    addr: u64,
    _t: PhantomData<*const T>,
}
impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}

/// A device address for an `unsafe` kernel's `*mut T` parameter.
#[derive(Debug)]
pub struct DevicePtrMut<T> {
    addr: u64,
    _t: PhantomData<*mut T>,
}
impl<T> Clone for DevicePtrMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtrMut<T> {}

impl<T> DevicePtr<T> {
    /// The address.
    #[must_use]
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// A null pointer.
    #[must_use]
    pub fn null() -> Self {
        Self { addr: 0, _t: PhantomData }
    }
    /// `self + count` elements (wrapping, unchecked: the kernel is `unsafe`).
    #[must_use]
    pub fn wrapping_add(self, count: usize) -> Self {
        Self { addr: self.addr.wrapping_add((count * size_of::<T>()) as u64), _t: PhantomData }
    }
}

impl<T> DevicePtrMut<T> {
    /// The address.
    #[must_use]
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// A null pointer.
    #[must_use]
    pub fn null() -> Self {
        Self { addr: 0, _t: PhantomData }
    }
    /// `self + count` elements (wrapping, unchecked: the kernel is `unsafe`).
    #[must_use]
    pub fn wrapping_add(self, count: usize) -> Self {
        Self { addr: self.addr.wrapping_add((count * size_of::<T>()) as u64), _t: PhantomData }
    }
}

/// Host arguments for a kernel's `&[T]` parameter: `&DeviceBuffer<T>` or a [`DeviceView`]
/// for plain `T`; `&mut DeviceBuffer<U>` or a [`DeviceViewMut`] for a slice of atomics
/// `&[Atomic<U>]` (exclusive on the host while the kernel's threads share it atomically) —
/// these are the *atomic views*: the host reads the same buffer back as plain `U`; and
/// `&mut DeviceBuffer<u32>` of zeros for a slice of [`Mutex`]es.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `&[{T}]` kernel parameter",
    label = "not a device buffer or view that a `&[{T}]` parameter takes",
    note = "for `&[T]` (read-only) pass `&buffer` (a `DeviceBuffer<T>`) or `buffer.slice(..)`",
    note = "for `&[AtomicU32]` (any `&[Atomic<T>]`) and `&[Mutex]`, which the kernel's threads write, pass `&mut buffer` \
            (a `DeviceBuffer<u32>`, or `DeviceBuffer<T>` for `Atomic<T>`; zeros for unlocked mutexes) or \
            `buffer.slice_mut(..)`"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait SliceArg<T> {
    /// Device address and element count.
    fn raw_parts(&self) -> (u64, usize);
    /// The memory the kernel reads (plain `T`) or writes (atomics), for stream ordering.
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

/// Host arguments for a kernel's `DisjointSlice<T>` parameter: `&mut DeviceBuffer<T>` or a
/// [`DeviceViewMut`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `DisjointSlice<{T}>` kernel parameter",
    label = "expected `&mut DeviceBuffer<{T}>`",
    note = "outputs are exclusive while the kernel runs: pass `&mut buffer` or `buffer.slice_mut(..)`"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait DisjointArg<T> {
    /// Device address and element count.
    fn raw_parts(&self) -> (u64, usize);
    /// The memory the kernel writes, for stream ordering.
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

/// The operand of a whole buffer.
pub(crate) fn buffer_use<T: DeviceCopy>(b: &DeviceBuffer<T>, write: bool) -> Use<'_> {
    Use::new(&b.alloc, byte_range::<T>(&b.alloc, b.ptr, b.len), write)
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> SliceArg<T> for &DeviceBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [buffer_use(self, false)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> SliceArg<T> for DeviceView<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), false)]
    }
}
/// Host arguments for a kernel's slice of atomics `&[Atomic<T>]` (`&[AtomicU32]`, …):
/// `&mut DeviceBuffer<T>` or a [`DeviceViewMut`] (`buffer.slice_mut(..)`). Exclusive on the
/// host: the kernel's threads write the buffer (atomically) while it runs. (`SliceArg` reaches
/// atomics and mutexes through this trait and [`MutexSliceArg`], so that the error for a wrong
/// argument points at what to pass instead of at an unrelated impl.)
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait AtomicSliceArg {
    /// The plain element type (`u32` for `AtomicU32`).
    type Elem: DeviceCopy;
    #[doc(hidden)]
    fn raw_parts(&self) -> (u64, usize);
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

/// Host arguments for a kernel's `&[Mutex]`: `&mut DeviceBuffer<u32>` of zeros (unlocked) or a
/// [`DeviceViewMut<u32>`](DeviceViewMut). Exclusive on the host while the kernel locks them.
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait MutexSliceArg {
    #[doc(hidden)]
    fn raw_parts(&self) -> (u64, usize);
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

// A wrong argument for an atomic or mutex slice fails `AtomicSliceArg` / `MutexSliceArg`, and
// rustc's help lists that trait's impls: what to pass. (With all impls on `SliceArg`, it pointed
// at the `Mutex` impl for an atomic slice.)
// SAFETY: `AtomicSliceArg`'s, an `unsafe trait` with the same contract.
unsafe impl<T: DeviceCopy, S: Space, A: AtomicSliceArg<Elem = T>> SliceArg<Atomic<T, S>> for A {
    fn raw_parts(&self) -> (u64, usize) {
        AtomicSliceArg::raw_parts(self)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        AtomicSliceArg::uses(self)
    }
}
// SAFETY: `MutexSliceArg`'s, an `unsafe trait` with the same contract.
unsafe impl<S: Space, A: MutexSliceArg> SliceArg<Mutex<S>> for A {
    fn raw_parts(&self) -> (u64, usize) {
        MutexSliceArg::raw_parts(self)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        MutexSliceArg::uses(self)
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> AtomicSliceArg for &mut DeviceBuffer<T> {
    type Elem = T;
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [buffer_use(self, true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> AtomicSliceArg for DeviceViewMut<'_, T> {
    type Elem = T;
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), true)]
    }
}
// SAFETY: the view's own parts and uses (above); the exclusive reborrow keeps the view, and
// so its memory, borrowed for the launch.
unsafe impl<T: DeviceCopy> AtomicSliceArg for &mut DeviceViewMut<'_, T> {
    type Elem = T;
    fn raw_parts(&self) -> (u64, usize) {
        AtomicSliceArg::raw_parts(&**self)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        AtomicSliceArg::uses(&**self)
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl MutexSliceArg for &mut DeviceBuffer<u32> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [buffer_use(self, true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl MutexSliceArg for DeviceViewMut<'_, u32> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::new(self.alloc, byte_range::<u32>(self.alloc, self.ptr, self.len), true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> DisjointArg<T> for &mut DeviceBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [buffer_use(self, true)]
    }
}
// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> DisjointArg<T> for DeviceViewMut<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), true)]
    }
}
// SAFETY: the view's own parts and uses (above); the exclusive reborrow keeps the view, and
// so its memory, borrowed for the launch.
unsafe impl<T: DeviceCopy> DisjointArg<T> for &mut DeviceViewMut<'_, T> {
    fn raw_parts(&self) -> (u64, usize) {
        DisjointArg::raw_parts(&**self)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        DisjointArg::uses(&**self)
    }
}

impl<T: DeviceCopy> CopySrc<T> for &DeviceBuffer<T> {
    fn use_read(&self) -> Use<'_> {
        buffer_use(self, false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for &mut DeviceBuffer<T> {
    fn use_read(&self) -> Use<'_> {
        buffer_use(self, false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for DeviceView<'_, T> {
    fn use_read(&self) -> Use<'_> {
        Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), false)
    }
}
impl<T: DeviceCopy> CopySrc<T> for &DeviceViewMut<'_, T> {
    fn use_read(&self) -> Use<'_> {
        Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), false)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut DeviceBuffer<T> {
    fn use_write(&self) -> Use<'_> {
        buffer_use(self, true)
    }
}
impl<T: DeviceCopy> CopyDst<T> for DeviceViewMut<'_, T> {
    fn use_write(&self) -> Use<'_> {
        Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), true)
    }
}
impl<T: DeviceCopy> CopyDst<T> for &mut DeviceViewMut<'_, T> {
    fn use_write(&self) -> Use<'_> {
        Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.len), true)
    }
}

impl Gpu {
    /// A copy of `data` in device memory (`DeviceBuffer::from_slice`).
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::from_slice(self, data)
    }

    /// `len` zeroed elements (`DeviceBuffer::zeroed`).
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn zeroed<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        DeviceBuffer::zeroed(self, len)
    }
}

/// A mutably borrowed device buffer (or part of one) viewed as a `rows × cols` row-major
/// matrix: the host argument of a `DisjointMatrix<T, L>` kernel parameter. Made by
/// [`DeviceBuffer::as_matrix_mut`] or [`DeviceViewMut::into_matrix`], which check that the
/// buffer holds `rows * cols` elements.
pub struct MatrixMut<'a, T: DeviceCopy> {
    alloc: &'a Arc<Alloc>,
    ptr: u64,
    rows: usize,
    cols: usize,
    _t: PhantomData<&'a mut [T]>,
}

fn matrix_fits(len: usize, rows: usize, cols: usize) -> Result<()> {
    match rows.checked_mul(cols) {
        Some(n) if n <= len => Ok(()),
        _ => Err(Error::Argument(format!("a {rows} × {cols} matrix does not fit in {len} elements"))),
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// This buffer as a `rows × cols` row-major matrix, for a `DisjointMatrix` parameter.
    ///
    /// # Errors
    /// [`Error::Argument`] if `rows * cols` exceeds the buffer's length.
    pub fn as_matrix_mut(&mut self, rows: usize, cols: usize) -> Result<MatrixMut<'_, T>> {
        matrix_fits(self.len, rows, cols)?;
        Ok(MatrixMut { alloc: &self.alloc, ptr: self.ptr, rows, cols, _t: PhantomData })
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    /// This view as a `rows × cols` row-major matrix, for a `DisjointMatrix` parameter.
    ///
    /// # Errors
    /// [`Error::Argument`] if `rows * cols` exceeds the view's length.
    pub fn into_matrix(self, rows: usize, cols: usize) -> Result<MatrixMut<'a, T>> {
        matrix_fits(self.len, rows, cols)?;
        Ok(MatrixMut { alloc: self.alloc, ptr: self.ptr, rows, cols, _t: PhantomData })
    }
}

/// What a `DisjointMatrix<T, L>` kernel parameter accepts: a [`MatrixMut`].
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait MatrixArg<T> {
    /// Device address, rows and columns (`rows * cols` elements fit at the address).
    fn raw_parts(&self) -> (u64, usize, usize);
    /// The memory the kernel writes, for stream ordering.
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> MatrixArg<T> for MatrixMut<'_, T> {
    fn raw_parts(&self) -> (u64, usize, usize) {
        (self.ptr, self.rows, self.cols)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        [Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, self.rows * self.cols), true)]
    }
}

/// A shared-borrowed device buffer (or part of one) viewed as a read-only `rows × cols`
/// row-major matrix: the host argument of a `Matrix<T, I>` kernel parameter. Made by
/// [`DeviceBuffer::as_matrix`] or [`DeviceView::into_matrix`], which check that the buffer holds
/// `rows * cols` elements, and at least one (a read outside the matrix, `load_or`, loads element
/// 0 and discards it); the launcher checks the shape against the parameter's index type. The
/// kernel then gets its `Matrix` with no check of its own (what `Matrix::new` costs in every
/// thread).
pub struct MatrixRef<'a, T: DeviceCopy> {
    alloc: &'a Arc<Alloc>,
    ptr: u64,
    rows: usize,
    cols: usize,
    _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for MatrixRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for MatrixRef<'_, T> {}

/// What a read-only matrix needs of `len` elements: `rows * cols` of them, and at least one.
fn matrix_ref_fits(len: usize, rows: usize, cols: usize) -> Result<()> {
    matrix_fits(len, rows, cols)?;
    if len == 0 {
        return Err(Error::Argument(format!(
            "a {rows} × {cols} matrix needs a buffer of at least one element (a read outside it loads element 0)"
        )));
    }
    Ok(())
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// This buffer as a read-only `rows × cols` row-major matrix, for a `Matrix` parameter.
    ///
    /// # Errors
    /// [`Error::Argument`] if `rows * cols` exceeds the buffer's length, or the buffer is empty.
    pub fn as_matrix(&self, rows: usize, cols: usize) -> Result<MatrixRef<'_, T>> {
        matrix_ref_fits(self.len, rows, cols)?;
        Ok(MatrixRef { alloc: &self.alloc, ptr: self.ptr, rows, cols, _t: PhantomData })
    }
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// This view as a read-only `rows × cols` row-major matrix, for a `Matrix` parameter.
    ///
    /// # Errors
    /// [`Error::Argument`] if `rows * cols` exceeds the view's length, or the view is empty.
    pub fn into_matrix(self, rows: usize, cols: usize) -> Result<MatrixRef<'a, T>> {
        matrix_ref_fits(self.len, rows, cols)?;
        Ok(MatrixRef { alloc: self.alloc, ptr: self.ptr, rows, cols, _t: PhantomData })
    }
}

/// What the two matrix views share: their shape and how they print.
macro_rules! matrix_view {
    ($($view:ident),*) => {$(
        impl<T: DeviceCopy> $view<'_, T> {
            /// Rows.
            #[must_use]
            pub fn rows(&self) -> usize {
                self.rows
            }
            /// Columns.
            #[must_use]
            pub fn cols(&self) -> usize {
                self.cols
            }
        }

        impl<T: DeviceCopy> fmt::Debug for $view<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let (view, ty) = (stringify!($view), std::any::type_name::<T>());
                write!(f, "{view}<{ty}>({} × {} at {:#x})", self.rows, self.cols, self.ptr)
            }
        }
    )*};
}
matrix_view!(MatrixMut, MatrixRef);

/// What a read-only `Matrix<T, I>` kernel parameter accepts: a [`MatrixRef`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `Matrix<{T}>` kernel parameter",
    label = "expected a `MatrixRef<{T}>`",
    note = "view a buffer as a matrix: `buffer.as_matrix(rows, cols)?`"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait MatrixRefArg<T> {
    /// Device address, rows and columns (`max(rows * cols, 1)` elements at the address).
    fn raw_parts(&self) -> (u64, usize, usize);
    /// The memory the kernel reads, for stream ordering.
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 1];
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> MatrixRefArg<T> for MatrixRef<'_, T> {
    fn raw_parts(&self) -> (u64, usize, usize) {
        (self.ptr, self.rows, self.cols)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        let n = (self.rows * self.cols).max(1);
        [Use::new(self.alloc, byte_range::<T>(self.alloc, self.ptr, n), false)]
    }
}

#[cfg(test)]
mod tests {
    use super::{bounds, castable};

    #[test]
    fn casts_need_whole_aligned_elements() {
        assert_eq!(castable::<[u32; 4]>(256, 64), Some(4));
        assert_eq!(castable::<u64>(256, 12), None);
        assert_eq!(castable::<u64>(260, 16), None);
        assert_eq!(castable::<()>(256, 16), None);
        assert_eq!(castable::<u8>(1, 3), Some(3));
    }
    use std::ops::Bound;

    fn panic_message<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).err().expect("expected a panic");
        e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap()
    }

    #[test]
    fn bounds_in_range() {
        assert_eq!(bounds(.., 10), 0..10);
        assert_eq!(bounds(2..5, 10), 2..5);
        assert_eq!(bounds(2..=5, 10), 2..6);
        assert_eq!(bounds(..=9, 10), 0..10);
        assert_eq!(bounds(10.., 10), 10..10);
        assert_eq!(bounds(3..3, 10), 3..3);
        assert_eq!(bounds((Bound::Excluded(2), Bound::Included(4)), 10), 3..5);
        assert_eq!(bounds(.., 0), 0..0);
    }

    #[test]
    fn bounds_at_usize_max_panic_instead_of_wrapping() {
        // `..=usize::MAX` used to wrap to the empty `0..0`.
        let m = panic_message(|| bounds(..=usize::MAX, 10));
        assert_eq!(m, "attempted to index device buffer up to maximum usize");
        // `(Excluded(usize::MAX), Unbounded)` used to wrap to the whole buffer.
        let m = panic_message(|| bounds((Bound::Excluded(usize::MAX), Bound::Unbounded), 10));
        assert_eq!(m, "attempted to index device buffer from after maximum usize");
        let m = panic_message(|| bounds(usize::MAX.., 10));
        assert_eq!(m, format!("range start index {} out of range for device buffer of length 10", usize::MAX));
        let m = panic_message(|| bounds(0..usize::MAX, 10));
        assert_eq!(m, format!("range end index {} out of range for device buffer of length 10", usize::MAX));
    }

    #[test]
    fn bounds_out_of_range_panic_like_slices() {
        let m = panic_message(|| bounds(..11, 10));
        assert_eq!(m, "range end index 11 out of range for device buffer of length 10");
        let m = panic_message(|| bounds(..=10, 10));
        assert_eq!(m, "range end index 11 out of range for device buffer of length 10");
        let m = panic_message(|| bounds(11.., 10));
        assert_eq!(m, "range start index 11 out of range for device buffer of length 10");
        #[allow(clippy::reversed_empty_ranges)]
        let m = panic_message(|| bounds(5..3, 10));
        assert_eq!(m, "slice index starts at 5 but ends at 3 (device buffer of length 10)");
        let m = panic_message(|| bounds((Bound::Excluded(3), Bound::Excluded(3)), 10));
        assert_eq!(m, "slice index starts at 4 but ends at 3 (device buffer of length 10)");
    }
}
