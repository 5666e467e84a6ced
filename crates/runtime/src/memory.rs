//! Device memory: owned buffers, views, and the traits that turn them into kernel arguments.
//!
//! Copies here are synchronous (`cuMemcpyHtoD`/`cuMemcpyDtoH` on the legacy default stream),
//! and Cohort's streams are blocking, so a copy waits for every kernel launched before it:
//! reading a buffer back always sees what the kernels wrote, and writing one never races a
//! kernel still reading it.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cohort::DeviceCopy;
use cohort::atomic::{Atomic, Space};
use cohort::mutex::Mutex;
use cudarc::driver::sys;

use crate::device::{Gpu, GpuInner};
use crate::error::{Error, Result};

/// An array of `T` in device memory, owned.
pub struct DeviceBuffer<T: DeviceCopy> {
    ptr: u64,
    len: usize,
    gpu: Arc<GpuInner>,
    _t: PhantomData<T>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

fn copy_error(gpu: &GpuInner, what: &str, code: cudarc::driver::DriverError) -> Error {
    if crate::error::is_sticky(&code) {
        crate::stream::kernel_error(gpu, code, None)
    } else {
        Error::Driver { what: what.to_string(), code }
    }
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
        let bytes =
            len.checked_mul(size_of::<T>()).ok_or_else(|| Error::Argument(format!("{len} elements overflow")))?;
        gpu.inner.bind()?;
        let mut ptr = 0;
        if bytes > 0 {
            // SAFETY: the context is current; `ptr` receives the allocation.
            unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }
                .result()
                .map_err(|code| Error::Driver { what: format!("allocating {bytes} B of device memory"), code })?;
        }
        Ok(Self { ptr, len, gpu: gpu.inner.clone(), _t: PhantomData })
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

    /// Overwrites the whole buffer with `data` (same length), after every kernel launched
    /// before.
    ///
    /// # Errors
    /// A length mismatch, or a driver failure (a failed kernel included).
    pub fn copy_from(&mut self, data: &[T]) -> Result<()> {
        self.as_view_mut().copy_from(data)
    }

    /// Copies the whole buffer into `out` (same length), after every kernel launched before.
    ///
    /// # Errors
    /// A length mismatch, or a driver failure (a failed kernel included).
    pub fn copy_to(&self, out: &mut [T]) -> Result<()> {
        self.as_view().copy_to(out)
    }

    /// The contents, after every kernel launched before.
    ///
    /// # Errors
    /// A driver failure (a failed kernel included).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.as_view().to_vec()
    }

    /// Sets every byte to zero.
    ///
    /// # Errors
    /// A driver failure.
    pub fn fill_zero(&mut self) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        // SAFETY: our allocation, `num_bytes` long.
        unsafe { sys::cuMemsetD8_v2(self.ptr, 0, self.num_bytes()) }
            .result()
            .map_err(|code| copy_error(&self.gpu, "clearing device memory", code))
    }

    /// A read-only view of `range`.
    ///
    /// # Panics
    /// If `range` is out of bounds.
    #[must_use]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        let (s, e) = bounds(range, self.len);
        DeviceView { ptr: self.ptr + (s * size_of::<T>()) as u64, len: e - s, gpu: &self.gpu, _t: PhantomData }
    }

    /// A mutable view of `range`.
    ///
    /// # Panics
    /// If `range` is out of bounds.
    #[must_use]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        let (s, e) = bounds(range, self.len);
        DeviceViewMut { ptr: self.ptr + (s * size_of::<T>()) as u64, len: e - s, gpu: &self.gpu, _t: PhantomData }
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

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr != 0 && self.gpu.bind().is_ok() {
            // SAFETY: our allocation; `cuMemFree` waits for work still using it.
            unsafe {
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

fn bounds(range: impl RangeBounds<usize>, len: usize) -> (usize, usize) {
    let s = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s + 1,
        Bound::Unbounded => 0,
    };
    let e = match range.end_bound() {
        Bound::Included(&e) => e + 1,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(s <= e && e <= len, "device slice range {s}..{e} out of bounds for length {len}");
    (s, e)
}

/// A read-only view of part of a [`DeviceBuffer`].
pub struct DeviceView<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    gpu: &'a Arc<GpuInner>,
    _t: PhantomData<&'a [T]>,
}

impl<T: DeviceCopy> Clone for DeviceView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for DeviceView<'_, T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceView<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

impl<T: DeviceCopy> DeviceView<'_, T> {
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
    /// Copies the view into `out` (same length).
    ///
    /// # Errors
    /// A length mismatch, or a driver failure.
    pub fn copy_to(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::Argument(format!(
                "copy_to: device has {} elements, host slice {}",
                self.len,
                out.len()
            )));
        }
        if self.len == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        // SAFETY: `out` has room for exactly the view's bytes; the view is inside a live
        // allocation.
        unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.ptr, std::mem::size_of_val(out)) }
            .result()
            .map_err(|code| copy_error(self.gpu, "copying device memory to the host", code))
    }
    /// The view's contents.
    ///
    /// # Errors
    /// A driver failure.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v: Vec<T> = Vec::with_capacity(self.len);
        self.gpu.bind()?;
        if self.len > 0 {
            // SAFETY: `v` has capacity for `len` elements, all written by the copy before
            // `set_len`.
            unsafe {
                sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), self.ptr, self.len * size_of::<T>())
                    .result()
                    .map_err(|code| copy_error(self.gpu, "copying device memory to the host", code))?;
                v.set_len(self.len);
            }
        }
        Ok(v)
    }
}

/// A mutable view of part of a [`DeviceBuffer`].
pub struct DeviceViewMut<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    gpu: &'a Arc<GpuInner>,
    _t: PhantomData<&'a mut [T]>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceViewMut<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
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
    /// Read-only access.
    #[must_use]
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { ptr: self.ptr, len: self.len, gpu: self.gpu, _t: PhantomData }
    }
    /// Overwrites the view with `data` (same length).
    ///
    /// # Errors
    /// A length mismatch, or a driver failure.
    pub fn copy_from(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::Argument(format!(
                "copy_from: device has {} elements, host slice {}",
                self.len,
                data.len()
            )));
        }
        if self.len == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        // SAFETY: `data` holds exactly the view's bytes; the view is inside a live allocation.
        unsafe { sys::cuMemcpyHtoD_v2(self.ptr, data.as_ptr().cast(), std::mem::size_of_val(data)) }
            .result()
            .map_err(|code| copy_error(self.gpu, "copying host memory to the device", code))
    }
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
    label = "expected a device buffer of `{T}`",
    note = "pass `&DeviceBuffer<T>` or `buffer.slice(..)` for `&[T]`, and `&mut DeviceBuffer<u32>` (or `slice_mut`) for `&[AtomicU32]`"
)]
pub trait SliceArg<T> {
    /// Device address and element count.
    fn raw_parts(&self) -> (u64, usize);
}

/// Host arguments for a kernel's `DisjointSlice<T>` parameter: `&mut DeviceBuffer<T>` or a
/// [`DeviceViewMut`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `DisjointSlice<{T}>` kernel parameter",
    label = "expected `&mut DeviceBuffer<{T}>`",
    note = "outputs are exclusive while the kernel runs: pass `&mut buffer` or `buffer.slice_mut(..)`"
)]
pub trait DisjointArg<T> {
    /// Device address and element count.
    fn raw_parts(&self) -> (u64, usize);
}

impl<T: DeviceCopy> SliceArg<T> for &DeviceBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<'a, T: DeviceCopy> SliceArg<T> for DeviceView<'a, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<T: DeviceCopy, S: Space> SliceArg<Atomic<T, S>> for &mut DeviceBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<'a, T: DeviceCopy, S: Space> SliceArg<Atomic<T, S>> for DeviceViewMut<'a, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<S: Space> SliceArg<Mutex<S>> for &mut DeviceBuffer<u32> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<S: Space> SliceArg<Mutex<S>> for DeviceViewMut<'_, u32> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<T: DeviceCopy> DisjointArg<T> for &mut DeviceBuffer<T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
    }
}
impl<'a, T: DeviceCopy> DisjointArg<T> for DeviceViewMut<'a, T> {
    fn raw_parts(&self) -> (u64, usize) {
        (self.ptr, self.len)
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
