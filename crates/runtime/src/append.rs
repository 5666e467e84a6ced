//! [`AppendBuffer`] and [`GridVecBuffer`]: the host side of a kernel's `AppendSlice<T>` and
//! `GridVec<T>` parameters (device memory together with the word that keeps its use safe).

use cohort::DeviceCopy;

use crate::device::Gpu;
use crate::error::Result;
use crate::memory::{DeviceBuffer, buffer_use};
use crate::track::Use;

/// Device memory for `capacity` elements that kernels fill through an `AppendSlice<T>`
/// parameter, each thread claiming slots from the buffer's own counter (stream compaction,
/// work queues). The counter lives beside the elements and only kernels holding this buffer
/// (exclusively borrowed for the launch) advance it, so no two threads write one slot.
///
/// ```no_run
/// # fn f(gpu: &cohort_runtime::Gpu) -> cohort_runtime::Result<()> {
/// let mut hits = cohort_runtime::AppendBuffer::<u32>::new(gpu, 1 << 20)?;
/// // kernel.launch(gpu.stream(), config, &data, &mut hits)?;
/// let found: Vec<u32> = hits.to_vec()?; // what was pushed, in claim order
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AppendBuffer<T: DeviceCopy> {
    elems: DeviceBuffer<T>,
    counter: DeviceBuffer<u64>,
}

impl<T: DeviceCopy> AppendBuffer<T> {
    /// Room for `capacity` elements, none pushed yet.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn new(gpu: &Gpu, capacity: usize) -> Result<Self> {
        Ok(Self { elems: DeviceBuffer::zeroed(gpu, capacity)?, counter: DeviceBuffer::zeroed(gpu, 1)? })
    }

    /// How many elements fit.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.elems.len()
    }

    /// How many pushes kernels made so far, including those that did not fit (waits for the
    /// kernels that use the buffer).
    ///
    /// # Errors
    /// A driver failure, or a kernel that failed.
    pub fn pushed(&self) -> Result<u64> {
        Ok(self.counter.to_vec()?[0])
    }

    /// The elements pushed (at most [`capacity`](Self::capacity)), in the order their slots were
    /// claimed.
    ///
    /// # Errors
    /// A driver failure, or a kernel that failed.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let n = usize::try_from(self.pushed()?).unwrap_or(usize::MAX).min(self.capacity());
        self.elems.slice(..n).to_vec()
    }

    /// Forgets every element: the next push takes slot 0 again.
    ///
    /// # Errors
    /// A driver failure.
    pub fn clear(&mut self) -> Result<()> {
        self.counter.fill_zero()
    }
}

/// Host arguments for an `AppendSlice<T>` kernel parameter: `(elements, capacity, counter)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for an `AppendSlice<{T}>` parameter",
    note = "pass `&mut AppendBuffer<{T}>`: the elements and the counter that hands out their slots, exclusively borrowed"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait AppendArg<T> {
    #[doc(hidden)]
    fn raw_parts(&self) -> (u64, usize, u64);
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 2];
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> AppendArg<T> for &mut AppendBuffer<T> {
    fn raw_parts(&self) -> (u64, usize, u64) {
        (self.elems.as_device_ptr().addr(), self.elems.len(), self.counter.as_device_ptr().addr())
    }
    fn uses(&self) -> [Use<'_>; 2] {
        [buffer_use(&self.elems, true), buffer_use(&self.counter, true)]
    }
}

/// Device memory for a kernel's `GridVec<T>` parameter: the elements and the barrier word
/// that the vector's phases (`publish` / `reclaim`) synchronize the grid on.
#[derive(Debug)]
pub struct GridVecBuffer<T: DeviceCopy> {
    elems: DeviceBuffer<T>,
    barrier: DeviceBuffer<u32>,
}

impl<T: DeviceCopy> GridVecBuffer<T> {
    /// A copy of `data`.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn from_slice(gpu: &Gpu, data: &[T]) -> Result<Self> {
        Ok(Self { elems: DeviceBuffer::from_slice(gpu, data)?, barrier: DeviceBuffer::zeroed(gpu, 1)? })
    }

    /// `len` elements of zero bytes.
    ///
    /// # Errors
    /// Out of device memory, or a driver failure.
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        Ok(Self { elems: DeviceBuffer::zeroed(gpu, len)?, barrier: DeviceBuffer::zeroed(gpu, 1)? })
    }

    /// Number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        self.elems.len()
    }

    /// Whether there are no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    /// The elements (waits for the kernels that use the buffer).
    ///
    /// # Errors
    /// A driver failure, or a kernel that failed.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.elems.to_vec()
    }
}

/// Host arguments for a `GridVec<T>` kernel parameter: `(elements, length, barrier word)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `GridVec<{T}>` parameter",
    note = "pass `&mut GridVecBuffer<{T}>`: the elements and the barrier word of their phases, exclusively borrowed"
)]
///
/// # Safety
/// A launcher passes `raw_parts` to the kernel as they are: they must name memory of the
/// argument (the address of `len` elements, or of a `rows × cols` matrix, alive and — where the
/// kernel writes — exclusively borrowed for as long as `self` is), and `uses` must name that
/// memory, as written where the kernel writes it.
pub unsafe trait GridVecArg<T> {
    #[doc(hidden)]
    fn raw_parts(&self) -> (u64, usize, u64);
    #[doc(hidden)]
    fn uses(&self) -> [Use<'_>; 2];
}

// SAFETY: the parts are this memory's own address and length (shape), its uses the same range,
// written where the kernel writes it; the borrow keeps it alive (and exclusive, for `&mut`).
unsafe impl<T: DeviceCopy> GridVecArg<T> for &mut GridVecBuffer<T> {
    fn raw_parts(&self) -> (u64, usize, u64) {
        (self.elems.as_device_ptr().addr(), self.elems.len(), self.barrier.as_device_ptr().addr())
    }
    fn uses(&self) -> [Use<'_>; 2] {
        [buffer_use(&self.elems, true), buffer_use(&self.barrier, true)]
    }
}
