//! Kernel outputs that safe code cannot alias: [`DisjointSlice`] and [`ThreadIndex`].
//!
//! A kernel's threads run concurrently, so a `&mut [T]` shared by all of them would be a data
//! race waiting to happen. Instead an output parameter is a [`DisjointSlice<T>`]: a thread may
//! write an element only through a [`ThreadIndex`], and a `ThreadIndex` can only be made from
//! the thread's own position in the grid ([`index_1d`](crate::thread::index_1d),
//! [`grid_stride`](crate::thread::grid_stride)). Two threads never hold the same index, so two
//! threads never write the same element: no races in safe code.
//!
//! A `ThreadIndex` is neither `Copy` nor `Clone`, nor [`DeviceCopy`](crate::DeviceCopy), so it
//! cannot be shuffled to another lane or stored in shared memory for another thread to use.
//! (The idea is NVIDIA cuda-oxide's `DisjointSlice`.)
//!
//! One writer per block, without `unsafe`:
//!
//! ```
//! use cohort::prelude::*;
//!
//! /// `sums[b]` = block `b`'s sum, written by its leader alone.
//! #[kernel]
//! pub fn block_sums(data: &[u32], mut sums: DisjointSlice<u32, PerBlock>) {
//!     let block = cg::this_thread_block();
//!     let v = data.get(*thread::index_1d()).copied().unwrap_or(0);
//!     let total = cg::reduce(&block, v, cg::plus);
//!     if let Some(b) = block.leader_index() {
//!         sums.set(b, total);
//!     }
//! }
//! ```
//!
//! The safe patterns CUDA kernels use for outputs, and their Cohort form:
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `out[blockIdx.x * blockDim.x + threadIdx.x] = v` | `out.set(thread::index_1d(), v)` |
//! | grid-stride loop writing `out[i]` | `for i in thread::grid_stride(n) { out.set(&i, v) }` |
//! | `if (threadIdx.x == 0) out[blockIdx.x] = v` | `if let Some(b) = block.leader_index() { out.set(b, v) }` (`DisjointSlice<T, PerBlock>`) |
//! | `if (tile.thread_rank() == 0) out[global_tile] = v` | `tile.leader_index()` (`DisjointSlice<T, PerTile<N>>`) |
//! | write own, `grid.sync()`, read any | a [`GridVec`](crate::cg::GridVec) parameter: `let all = x.publish(&grid);` … `let x = all.reclaim(&grid);` |
//! | `i = atomicAdd(&count, 1); out[i] = v` | [`AppendSlice::push`] (the counter belongs to the output) |
//! | 16-byte vector loads/stores, `reinterpret_cast` | [`vec`](crate::vec) types, [`cast_aligned`], [`cast`] |

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};
use core::ptr::NonNull;

#[doc(inline)]
pub use crate::thread::{IndexKind, PerBlock, PerThread, PerTile, ThreadIndex};

/// What indexes a [`DisjointSlice`]: a [`ThreadIndex`] of the slice's kind (by value or by
/// reference). Plain integers do not: two threads could pick the same one.
#[diagnostic::on_unimplemented(
    message = "a `DisjointSlice` is indexed by a `ThreadIndex` of its kind, not by `{Self}`",
    label = "not a `ThreadIndex` owned by this thread",
    note = "a plain number could be computed by two threads alike, and both would write one element",
    note = "use `thread::index_1d()` (or `thread::grid_stride(n)`) for the thread's own element, `block.leader_index()` \
            / `tile.leader_index()` for one element per block / tile (a `DisjointSlice<T, PerBlock>` / `PerTile<N>`), \
            or a `GridVec` parameter to read every element after a grid barrier"
)]
pub trait DisjointIndex<K: IndexKind> {
    #[doc(hidden)]
    fn rank(&self) -> usize;
}

impl<K: IndexKind> DisjointIndex<K> for ThreadIndex<K> {
    #[inline(always)]
    fn rank(&self) -> usize {
        self.get()
    }
}

impl<K: IndexKind> DisjointIndex<K> for &ThreadIndex<K> {
    #[inline(always)]
    fn rank(&self) -> usize {
        self.get()
    }
}

/// A kernel output in device memory where each thread writes only the elements its
/// [`ThreadIndex`]es of kind `K` own ([`PerThread`] by default; [`PerBlock`] and
/// [`PerTile<N>`] for one writer per block or per tile).
///
/// As a `#[kernel]` parameter it is passed from the host as `&mut DeviceBuffer<T>` (or a
/// mutable view); the kernel ABI is a pointer and a length.
#[derive(Debug)]
pub struct DisjointSlice<'a, T, K: IndexKind = PerThread> {
    ptr: NonNull<T>,
    len: usize,
    _life: PhantomData<(&'a mut [T], K)>,
}

impl<'a, T, K: IndexKind> DisjointSlice<'a, T, K> {
    /// Wraps device memory.
    ///
    /// # Safety
    /// `ptr` must be non-null and valid for reads and writes of `len` elements of `T` for `'a` (or `len`
    /// must be 0), nothing else may access that memory meanwhile except other threads of the
    /// same launch through their own `DisjointSlice` over it, and each thread must have
    /// received the memory the same way (so that indices stay disjoint).
    #[inline(always)]
    #[must_use]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        // SAFETY: non-null by the caller's contract.
        Self { ptr: unsafe { NonNull::new_unchecked(ptr) }, len, _life: PhantomData }
    }

    /// Number of elements.
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element `index` owns, or `None` past the end.
    #[inline(always)]
    #[must_use]
    pub fn get_mut(&mut self, index: impl DisjointIndex<K>) -> Option<&mut T> {
        let rank = index.rank();
        if rank < self.len {
            // SAFETY: in bounds, and `index` is owned by this thread alone among the indices
            // of kind `K` (the only ones this slice accepts), so no other thread holds a
            // reference to this element.
            Some(unsafe { &mut *self.ptr.as_ptr().add(rank) })
        } else {
            None
        }
    }

    /// Writes `value` to the element `index` owns; returns `false` (and writes nothing) past
    /// the end.
    #[inline(always)]
    pub fn set(&mut self, index: impl DisjointIndex<K>, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// The element at `index`, without the ownership check.
    ///
    /// # Safety
    /// `index < self.len()`, and no other thread accesses element `index` meanwhile.
    #[inline(always)]
    #[must_use]
    pub unsafe fn get_unchecked_mut(&mut self, index: usize) -> &mut T {
        // SAFETY: the caller guarantees bounds and exclusivity.
        unsafe { &mut *self.ptr.as_ptr().add(index) }
    }

    /// The raw device pointer.
    #[inline(always)]
    #[must_use]
    pub const fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The same memory viewed as a slice of another index kind.
    ///
    /// # Safety
    /// Every thread of the launch must make the same change (so that all writers use indices
    /// of one kind), and no write made through the old kind may still be racing.
    #[inline(always)]
    #[must_use]
    pub unsafe fn rekind<L: IndexKind>(self) -> DisjointSlice<'a, T, L> {
        DisjointSlice { ptr: self.ptr, len: self.len, _life: PhantomData }
    }
}

impl<T, K: IndexKind, I: DisjointIndex<K>> Index<I> for DisjointSlice<'_, T, K> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, index: I) -> &T {
        let rank = index.rank();
        assert!(rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &*self.ptr.as_ptr().add(rank) }
    }
}

impl<T, K: IndexKind, I: DisjointIndex<K>> IndexMut<I> for DisjointSlice<'_, T, K> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, index: I) -> &mut T {
        let rank = index.rank();
        assert!(rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &mut *self.ptr.as_ptr().add(rank) }
    }
}

/// A kernel output whose slots are claimed with an atomic counter that belongs to it (CUDA's
/// `i = atomicAdd(&count, 1); out[i] = v;`, stream compaction): [`push`](Self::push) takes the
/// next slot and writes it. Each value the counter hands out is handed out once, and no other
/// counter can hand out this slice's slots, so two threads never write one slot.
///
/// As a `#[kernel]` parameter it is passed from the host as `&mut AppendBuffer<T>`
/// (`cohort_runtime`), which owns the elements and the counter; the host reads back the
/// elements pushed (and whether more were pushed than fit). Pushes stay in the order the
/// counter handed out slots, which is not deterministic across threads.
///
/// ```
/// use cohort::prelude::*;
///
/// /// Stream compaction: every value divisible by `k`, in some order.
/// #[kernel]
/// pub fn compact(vals: &[u32], k: u32, hits: AppendSlice<u32>) {
///     for i in thread::grid_stride(vals.len()) {
///         if vals[*i].is_multiple_of(k) {
///             let _ = hits.push(vals[*i]); // `None` when full; the host sees the count
///         }
///     }
/// }
/// ```
#[derive(Debug)]
pub struct AppendSlice<'a, T> {
    ptr: NonNull<T>,
    cap: usize,
    counter: &'a crate::atomic::Atomic<u64, crate::atomic::Global>,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T> AppendSlice<'a, T> {
    /// Wraps device memory and its counter.
    ///
    /// # Safety
    /// As [`abi::append`](crate::abi::append); `ptr` non-null.
    #[inline(always)]
    #[must_use]
    pub unsafe fn from_raw_parts(ptr: *mut T, cap: usize, counter: *mut u64) -> Self {
        Self {
            // SAFETY: non-null by the caller's contract.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            cap,
            // SAFETY: a global-memory `u64` accessed only atomically (the caller's contract).
            counter: unsafe { crate::atomic::Atomic::from_ptr(counter) },
            _life: PhantomData,
        }
    }

    /// How many elements fit.
    #[inline(always)]
    #[must_use]
    pub const fn capacity(&self) -> usize {
        self.cap
    }

    /// Claims `n` consecutive slots at once (one atomic add, CUDA's
    /// `base = atomicAdd(&count, n)`) for this thread to fill: an [`AppendChunk`] of the slots
    /// that fit (fewer than `n`, possibly none, when the slice fills up; the counter counts all
    /// `n`, so the host sees how many did not fit). Slots of the chunk that are never set keep
    /// whatever the buffer held.
    #[inline(always)]
    #[must_use]
    pub fn reserve(&self, n: usize) -> AppendChunk<'_, 'a, T> {
        let start = self.claim(n);
        AppendChunk { slice: self, start, len: n.min(self.cap.saturating_sub(start)) }
    }

    /// Claims `n` consecutive slots; returns the first. Crate-internal: whoever calls it owns
    /// slots `start .. start + n` (those below `capacity()`) and nobody else does.
    #[inline(always)]
    pub(crate) fn claim(&self, n: usize) -> usize {
        self.counter.fetch_add(n as u64, core::sync::atomic::Ordering::Relaxed) as usize
    }

    /// Writes `value` to slot `slot`.
    ///
    /// # Safety
    /// `slot < capacity()`, and the caller owns the slot: [`claim`](Self::claim) handed it to
    /// this thread (directly, or through a leader that claimed it for a group and handed each
    /// member distinct slots).
    #[inline(always)]
    pub(crate) unsafe fn write_slot(&self, slot: usize, value: T) {
        debug_assert!(slot < self.cap);
        // SAFETY: in bounds and owned by this thread alone (the caller's contract).
        unsafe { self.ptr.as_ptr().add(slot).write(value) };
    }

    /// Claims the next slot and writes `value` there; returns the slot, or `None` (writing
    /// nothing) when the slice is full. The counter counts every push, full or not, so the host
    /// can tell how many did not fit.
    #[inline(always)]
    pub fn push(&self, value: T) -> Option<usize> {
        let slot = self.claim(1);
        if slot < self.cap {
            // SAFETY: in bounds; the counter handed `slot` to this call alone (it only grows,
            // it belongs to this slice, and nothing else writes the slice during the launch).
            unsafe { self.write_slot(slot, value) };
            Some(slot)
        } else {
            None
        }
    }
}

/// Consecutive slots of an [`AppendSlice`] that [`AppendSlice::reserve`] claimed for one thread:
/// it alone writes them, in any order ([`set`](Self::set)). CUDA's `base = atomicAdd(&count, n);
/// for k in 0..n { out[base + k] = …; }`, with the slots that did not fit left out.
#[derive(Debug)]
pub struct AppendChunk<'s, 'a, T> {
    slice: &'s AppendSlice<'a, T>,
    start: usize,
    len: usize,
}

impl<T> AppendChunk<'_, '_, T> {
    /// The first slot's position in the slice (where the host will find it).
    #[inline(always)]
    #[must_use]
    pub const fn start(&self) -> usize {
        self.start
    }

    /// How many slots the chunk holds (those of the `n` asked for that fit).
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether no slot fit.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes `value` to the chunk's slot `k`; `false` (writing nothing) if `k >= len()`.
    #[inline(always)]
    pub fn set(&mut self, k: usize, value: T) -> bool {
        if k < self.len {
            // SAFETY: `start + k < start + len <= capacity`, and `reserve` claimed the slots
            // `start .. start + len` for this chunk alone (the counter hands each value out
            // once); the chunk is this thread's (not `Copy`, not `DeviceCopy`: no other thread
            // can get it).
            unsafe { self.slice.write_slot(self.start + k, value) };
            true
        } else {
            false
        }
    }
}

/// Splits `s` into a head, a run of `U` aligned for `U`, and a tail, reinterpreting the middle
/// (`<[T]>::align_to`, made safe because every bit pattern is a valid `U`). Use it for wide
/// loads: a `&[u8]` viewed as 16-byte aligned chunks loads with one `ld.global.v4` each.
#[inline(always)]
#[must_use]
pub fn cast_aligned<T: crate::DeviceCopy, U: crate::DeviceCopy>(s: &[T]) -> (&[T], &[U], &[T]) {
    // Padding of `T` read as a `U` would be uninitialized bytes.
    crate::assert_no_padding::<T>();
    crate::assert_no_padding::<U>();
    // SAFETY: `T` and `U` are `DeviceCopy`: plain bytes, valid for every bit pattern.
    unsafe { s.align_to::<U>() }
}

/// `s` viewed as `U`s when its bytes are exactly a whole number of `U`, aligned for `U`
/// (`reinterpret_cast` of a whole array); `None` otherwise. Every bit pattern is a valid `U`
/// (both are `DeviceCopy`), so the view is safe.
#[inline(always)]
#[must_use]
pub fn cast<T: crate::DeviceCopy, U: crate::DeviceCopy>(s: &[T]) -> Option<&[U]> {
    // Padding of `T` read as a `U` would be uninitialized bytes.
    crate::assert_no_padding::<T>();
    crate::assert_no_padding::<U>();
    let bytes = core::mem::size_of_val(s);
    if size_of::<U>() == 0
        || !bytes.is_multiple_of(size_of::<U>())
        || !(s.as_ptr() as usize).is_multiple_of(align_of::<U>())
    {
        return None;
    }
    // SAFETY: in bounds (the same bytes), aligned for `U` (checked), every bit pattern is a
    // valid `U`, and the shared borrow of `s` covers the result's lifetime.
    Some(unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<U>(), bytes / size_of::<U>()) })
}
