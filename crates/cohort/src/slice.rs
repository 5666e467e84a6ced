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

use core::marker::PhantomData;
use core::ops::{Deref, Index, IndexMut};
use core::ptr::NonNull;

/// An index into a [`DisjointSlice`] that belongs to the calling thread alone.
///
/// It dereferences to `usize`, so it also indexes ordinary slices: `a[*i]`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex {
    rank: usize,
    // Not Send/Sync, not Copy: it must not reach another thread.
    _not_send: PhantomData<*const ()>,
}

impl ThreadIndex {
    /// Only the thread-position functions of [`crate::thread`] may call this.
    #[inline(always)]
    pub(crate) const fn from_rank(rank: usize) -> Self {
        Self { rank, _not_send: PhantomData }
    }

    /// The index as a plain number.
    #[inline(always)]
    #[must_use]
    pub const fn get(&self) -> usize {
        self.rank
    }

    /// Makes an index from any number.
    ///
    /// # Safety
    /// No other thread of the launch may use an index with the same value on the same
    /// [`DisjointSlice`] while this one is in use (otherwise two threads write one element).
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new_unchecked(rank: usize) -> Self {
        Self::from_rank(rank)
    }
}

impl Deref for ThreadIndex {
    type Target = usize;
    #[inline(always)]
    fn deref(&self) -> &usize {
        &self.rank
    }
}

/// A kernel output in device memory where each thread writes only the elements its
/// [`ThreadIndex`]es own.
///
/// As a `#[kernel]` parameter it is passed from the host as `&mut DeviceBuffer<T>` (or a
/// mutable view); the kernel ABI is a pointer and a length.
#[derive(Debug)]
pub struct DisjointSlice<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T> DisjointSlice<'a, T> {
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
    pub fn get_mut(&mut self, index: &ThreadIndex) -> Option<&mut T> {
        if index.rank < self.len {
            // SAFETY: in bounds, and `index` is owned by this thread alone, so no other thread
            // holds a reference to this element.
            Some(unsafe { &mut *self.ptr.as_ptr().add(index.rank) })
        } else {
            None
        }
    }

    /// Writes `value` to the element `index` owns; returns `false` (and writes nothing) past
    /// the end.
    #[inline(always)]
    pub fn set(&mut self, index: &ThreadIndex, value: T) -> bool {
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
}

impl<T> Index<ThreadIndex> for DisjointSlice<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, index: ThreadIndex) -> &T {
        assert!(index.rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &*self.ptr.as_ptr().add(index.rank) }
    }
}

impl<T> IndexMut<ThreadIndex> for DisjointSlice<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, index: ThreadIndex) -> &mut T {
        assert!(index.rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &mut *self.ptr.as_ptr().add(index.rank) }
    }
}

impl<T> Index<&ThreadIndex> for DisjointSlice<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, index: &ThreadIndex) -> &T {
        assert!(index.rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &*self.ptr.as_ptr().add(index.rank) }
    }
}

impl<T> IndexMut<&ThreadIndex> for DisjointSlice<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, index: &ThreadIndex) -> &mut T {
        assert!(index.rank < self.len, "DisjointSlice index out of bounds");
        // SAFETY: in bounds, and the element belongs to this thread.
        unsafe { &mut *self.ptr.as_ptr().add(index.rank) }
    }
}

/// Splits `s` into a head, a run of `U` aligned for `U`, and a tail, reinterpreting the middle
/// (`<[T]>::align_to`, made safe because every bit pattern is a valid `U`). Use it for wide
/// loads: a `&[u8]` viewed as 16-byte aligned chunks loads with one `ld.global.v4` each.
#[inline(always)]
#[must_use]
pub fn cast_aligned<T: crate::DeviceCopy, U: crate::DeviceCopy>(s: &[T]) -> (&[T], &[U], &[T]) {
    // SAFETY: `T` and `U` are `DeviceCopy`: plain bytes, valid for every bit pattern.
    unsafe { s.align_to::<U>() }
}
