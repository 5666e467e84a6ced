//! Views of device memory: [`DeviceView`] (read-only) and [`DeviceViewMut`] (exclusive) of a
//! range of a [`DeviceBuffer`](super::DeviceBuffer) or a [`ManagedBuffer`](crate::ManagedBuffer),
//! and splitting them into disjoint parts (`split_at`, `split_at_mut`, `chunks_mut`), each part
//! tracked as its own byte range (two launches writing the two halves of a buffer on two
//! streams run at once).

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use cohort::DeviceCopy;

use super::{bounds, byte_range, castable, copy_error, sync_legacy};
use crate::device::Finished;
use crate::error::{Error, Result};
use crate::track::Alloc;

/// A read-only view of part of a [`DeviceBuffer`](super::DeviceBuffer) (or of a
/// [`ManagedBuffer`](crate::ManagedBuffer)).
pub struct DeviceView<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) alloc: &'a Arc<Alloc>,
    pub(super) _t: PhantomData<&'a [T]>,
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

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// A view of `len` elements at device address `ptr`, inside `alloc` (another owner's
    /// memory: managed buffers, `crate::managed`).
    pub(crate) fn from_parts(alloc: &'a Arc<Alloc>, ptr: u64, len: usize) -> Self {
        Self { ptr, len, alloc, _t: PhantomData }
    }
}

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// The same elements as `U`s, if their bytes are a whole number of `U` aligned for `U`
    /// (see [`DeviceBuffer::cast`](super::DeviceBuffer::cast)).
    #[must_use]
    pub fn cast<U: DeviceCopy>(self) -> Option<DeviceView<'a, U>> {
        cohort::assert_no_padding::<U>();
        castable::<U>(self.ptr, self.len * size_of::<T>()).map(|len| DeviceView {
            ptr: self.ptr,
            len,
            alloc: self.alloc,
            _t: PhantomData,
        })
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
        let gpu = &self.alloc.gpu;
        gpu.bind()?;
        self.alloc.host_access(
            byte_range::<T>(self.alloc, self.ptr, self.len),
            false,
            "copying device memory to the host",
            || {
                // SAFETY: `out` has room for exactly the view's bytes; the view is inside a live
                // allocation, and no pending operation writes it (waited above).
                unsafe { gpu.backend.copy_dtoh(out.as_mut_ptr().cast(), self.ptr, std::mem::size_of_val(out)) }
                    .map_err(|code| copy_error(gpu, "copying device memory to the host", code))?;
                // The copy ran on the legacy default stream, after every blocking stream's work,
                // and returned when done: none of that work failed.
                gpu.note_finished(Finished::Blocking);
                Ok(())
            },
        )
    }
    /// The view's contents.
    ///
    /// # Errors
    /// A driver failure.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v: Vec<T> = Vec::with_capacity(self.len);
        if self.len > 0 {
            let gpu = &self.alloc.gpu;
            gpu.bind()?;
            self.alloc.host_access(
                byte_range::<T>(self.alloc, self.ptr, self.len),
                false,
                "copying device memory to the host",
                || {
                    // SAFETY: `v` has capacity for `len` elements, all written by the copy before
                    // `set_len`; no pending operation writes the view (waited above).
                    unsafe {
                        gpu.backend
                            .copy_dtoh(v.as_mut_ptr().cast(), self.ptr, self.len * size_of::<T>())
                            .map_err(|code| copy_error(gpu, "copying device memory to the host", code))?;
                        v.set_len(self.len);
                    }
                    // As in `copy_to`.
                    gpu.note_finished(Finished::Blocking);
                    Ok(())
                },
            )?;
        }
        Ok(v)
    }
}

/// A mutable view of part of a [`DeviceBuffer`](super::DeviceBuffer) (or of a
/// [`ManagedBuffer`](crate::ManagedBuffer)).
pub struct DeviceViewMut<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) alloc: &'a Arc<Alloc>,
    pub(super) _t: PhantomData<&'a mut [T]>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceViewMut<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.ptr)
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    /// A mutable view of `len` elements at device address `ptr`, inside `alloc` (see
    /// [`DeviceView::from_parts`]); the caller holds the memory exclusively for `'a`.
    pub(crate) fn from_parts(alloc: &'a Arc<Alloc>, ptr: u64, len: usize) -> Self {
        Self { ptr, len, alloc, _t: PhantomData }
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    /// The same elements as `U`s, if their bytes are a whole number of `U` aligned for `U`
    /// (see [`DeviceBuffer::cast`](super::DeviceBuffer::cast)).
    #[must_use]
    pub fn cast<U: DeviceCopy>(self) -> Option<DeviceViewMut<'a, U>> {
        cohort::assert_no_padding::<U>();
        castable::<U>(self.ptr, self.len * size_of::<T>()).map(|len| DeviceViewMut {
            ptr: self.ptr,
            len,
            alloc: self.alloc,
            _t: PhantomData,
        })
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
    /// Read-only access.
    #[must_use]
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { ptr: self.ptr, len: self.len, alloc: self.alloc, _t: PhantomData }
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
        let gpu = &self.alloc.gpu;
        gpu.bind()?;
        self.alloc.host_access(
            byte_range::<T>(self.alloc, self.ptr, self.len),
            true,
            "copying host memory to the device",
            || {
                // SAFETY: `data` holds exactly the view's bytes; the view is inside a live
                // allocation that no pending operation uses (waited above).
                unsafe { gpu.backend.copy_htod(self.ptr, data.as_ptr().cast(), std::mem::size_of_val(data)) }
                    .map_err(|code| copy_error(gpu, "copying host memory to the device", code))?;
                // A pageable copy may return before its DMA has finished: wait for it, so that
                // the copy is complete for every stream.
                sync_legacy(gpu)
            },
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Sub-views and splitting: disjoint parts of one buffer, each its own tracked byte range.

impl<'a, T: DeviceCopy> DeviceView<'a, T> {
    /// A read-only view of `range` of this view.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing (as slicing a `[T]`).
    #[must_use]
    #[track_caller]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'a, T> {
        let r = bounds(range, self.len);
        DeviceView {
            ptr: self.ptr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            alloc: self.alloc,
            _t: PhantomData,
        }
    }

    /// The first `mid` elements and the rest (`<[T]>::split_at`).
    ///
    /// # Panics
    /// If `mid > len`.
    #[must_use]
    #[track_caller]
    pub fn split_at(self, mid: usize) -> (DeviceView<'a, T>, DeviceView<'a, T>) {
        assert!(mid <= self.len, "split_at: mid {mid} > len {}", self.len);
        (self.slice(..mid), self.slice(mid..))
    }
}

impl<'a, T: DeviceCopy> DeviceViewMut<'a, T> {
    /// A mutable view of `range` of this view, borrowing it.
    ///
    /// # Panics
    /// If `range` is out of bounds or decreasing (as slicing a `[T]`).
    #[must_use]
    #[track_caller]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        let r = bounds(range, self.len);
        DeviceViewMut {
            ptr: self.ptr + (r.start * size_of::<T>()) as u64,
            len: r.len(),
            alloc: self.alloc,
            _t: PhantomData,
        }
    }

    /// The first `mid` elements and the rest, both mutable (`<[T]>::split_at_mut`): two launches
    /// may write them at once, on two streams (each is tracked as its own byte range).
    ///
    /// # Panics
    /// If `mid > len`.
    #[must_use]
    #[track_caller]
    pub fn split_at_mut(self, mid: usize) -> (DeviceViewMut<'a, T>, DeviceViewMut<'a, T>) {
        assert!(mid <= self.len, "split_at_mut: mid {mid} > len {}", self.len);
        let at = self.ptr + (mid * size_of::<T>()) as u64;
        (
            DeviceViewMut { ptr: self.ptr, len: mid, alloc: self.alloc, _t: PhantomData },
            DeviceViewMut { ptr: at, len: self.len - mid, alloc: self.alloc, _t: PhantomData },
        )
    }

    /// The view in disjoint mutable parts of `chunk` elements (the last may be shorter), as
    /// `<[T]>::chunks_mut`.
    ///
    /// # Panics
    /// If `chunk` is 0.
    #[must_use]
    #[track_caller]
    pub fn chunks_mut(self, chunk: usize) -> Vec<DeviceViewMut<'a, T>> {
        assert!(chunk != 0, "chunks_mut: chunk size is 0");
        (0..self.len)
            .step_by(chunk)
            .map(|start| DeviceViewMut {
                ptr: self.ptr + (start * size_of::<T>()) as u64,
                len: chunk.min(self.len - start),
                alloc: self.alloc,
                _t: PhantomData,
            })
            .collect()
    }
}

impl<T: DeviceCopy> super::DeviceBuffer<T> {
    /// The first `mid` elements and the rest, read-only (`<[T]>::split_at`).
    ///
    /// # Panics
    /// If `mid > len`.
    #[must_use]
    #[track_caller]
    pub fn split_at(&self, mid: usize) -> (DeviceView<'_, T>, DeviceView<'_, T>) {
        self.as_view().split_at(mid)
    }

    /// The first `mid` elements and the rest, both mutable (`<[T]>::split_at_mut`): hand them to
    /// two kernels (on two streams, they run at once: each half is tracked as its own range).
    ///
    /// # Panics
    /// If `mid > len`.
    #[must_use]
    #[track_caller]
    pub fn split_at_mut(&mut self, mid: usize) -> (DeviceViewMut<'_, T>, DeviceViewMut<'_, T>) {
        self.as_view_mut().split_at_mut(mid)
    }

    /// The buffer in disjoint mutable parts of `chunk` elements (the last may be shorter).
    ///
    /// # Panics
    /// If `chunk` is 0.
    #[must_use]
    #[track_caller]
    pub fn chunks_mut(&mut self, chunk: usize) -> Vec<DeviceViewMut<'_, T>> {
        self.as_view_mut().chunks_mut(chunk)
    }
}
