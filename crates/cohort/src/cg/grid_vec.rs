//! [`GridVec`]: a vector of a cooperative kernel whose write and read phases are separated by
//! grid barriers on the vector's own word (the grid-scope sibling of
//! [`MultiGridVec`](super::MultiGridVec)).

use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::NonNull;

use super::GridGroup;
use crate::slice::DisjointIndex;
use crate::thread::PerThread;

/// A vector of a cooperative kernel that alternates between **write phases** (each thread
/// writes only its own elements, as through a [`DisjointSlice`](crate::slice::DisjointSlice))
/// and **read phases** (every thread reads every element), separated by grid barriers: the step
/// of iterative solvers (Jacobi, conjugate gradient), safely.
///
/// `publish` and `reclaim` synchronize the grid on a barrier word that belongs to *this*
/// vector (the host's `GridVecBuffer` holds it beside the elements), after checking that every
/// thread of the block is at the same vector's barrier. The block's part is a barrier that
/// only phase changes arrive on (an `mbarrier` in shared memory, set up at kernel entry), so a
/// thread's own `sync_threads()` cannot stand in for it. So threads that diverge — some
/// publishing this vector, others another, others at barriers of their own — never pass a
/// barrier together: they wait (and in checked mode end the launch with an `Err` after 5 s)
/// instead of reading what others still write. Cost: one grid barrier, an `mbarrier`
/// arrive-and-wait and two block barriers per phase change.
///
/// As a `#[kernel]` parameter it is passed from the host as `&mut GridVecBuffer<T>`.
///
/// ```
/// use cohort::prelude::*;
///
/// /// Jacobi sweeps of `x[i] = (b[i] + x[i-1] + x[i+1]) / 4` on a ring, `iters` times.
/// #[kernel(cooperative)]
/// pub fn jacobi(grid: GridGroup, b: &[f32], mut x: GridVec<f32>, iters: u32) {
///     let i = thread::index_1d();
///     let n = x.len();
///     for _ in 0..iters {
///         let all = x.publish(&grid); // every thread reads every element
///         let next = if *i < n { (b[*i] + all[(*i + n - 1) % n] + all[(*i + 1) % n]) / 4.0 } else { 0.0 };
///         x = all.reclaim(&grid); // back to writing its own
///         x.set(&i, next);
///     }
/// }
/// ```
#[derive(Debug)]
pub struct GridVec<'a, T> {
    ptr: NonNull<T>,
    len: usize,
    barrier: *mut u32,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T> GridVec<'a, T> {
    /// Wraps device memory and its barrier word, and makes the block's phase barrier ready
    /// (a block barrier: see below).
    ///
    /// # Safety
    /// As [`abi::grid_vec`](crate::abi::grid_vec); `ptr` non-null; every thread of the launch
    /// receives the same vector. Every thread of the block calls this at the same point,
    /// before any phase change of any vector and while no thread of the block is in one (at
    /// kernel entry, as `#[kernel]`'s parameter rebuild does).
    #[inline(always)]
    #[must_use]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize, barrier: *mut u32) -> Self {
        super::grid::phase_init();
        // SAFETY: non-null by the caller's contract.
        Self { ptr: unsafe { NonNull::new_unchecked(ptr) }, len, barrier, _life: PhantomData }
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

    /// The element `index` owns (write phase), or `None` past the end.
    #[inline(always)]
    #[must_use]
    pub fn get_mut(&mut self, index: impl DisjointIndex<PerThread>) -> Option<&mut T> {
        let rank = index.rank();
        // SAFETY: in bounds, and `index` is this thread's own (per-thread kind), so no other
        // thread writes or reads this element during the write phase.
        (rank < self.len).then(|| unsafe { &mut *self.ptr.as_ptr().add(rank) })
    }

    /// Writes `value` to the element `index` owns; `false` (nothing written) past the end.
    #[inline(always)]
    pub fn set(&mut self, index: impl DisjointIndex<PerThread>, value: T) -> bool {
        match self.get_mut(index) {
            Some(slot) => {
                *slot = value;
                true
            }
            None => false,
        }
    }

    /// The address of the vector's barrier word.
    #[inline(always)]
    pub(crate) fn barrier_word(&self) -> u64 {
        self.barrier as u64
    }

    /// The elements' address.
    #[inline(always)]
    pub(crate) fn elements(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Ends the write phase: a grid barrier on this vector, after which every thread may read
    /// every element. Every thread of the grid must call it.
    #[inline(always)]
    #[track_caller]
    pub fn publish(self, grid: &GridGroup) -> GridVecView<'a, T> {
        grid.phase_barrier(self.barrier as u64, "GridVec::publish");
        GridVecView { vec: self }
    }
}

/// A [`GridVec`] in a read phase: dereferences to `&[T]`; [`reclaim`](Self::reclaim) ends the
/// phase (the borrows of the slice end before it can be called).
#[derive(Debug)]
pub struct GridVecView<'a, T> {
    vec: GridVec<'a, T>,
}

impl<'a, T> GridVecView<'a, T> {
    /// Ends the read phase: a grid barrier on this vector, after which threads write their own
    /// elements again. Every thread of the grid must call it.
    #[inline(always)]
    #[track_caller]
    pub fn reclaim(self, grid: &GridGroup) -> GridVec<'a, T> {
        grid.phase_barrier(self.vec.barrier as u64, "GridVec::reclaim");
        self.vec
    }
}

impl<T> Deref for GridVecView<'_, T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: valid for `len` elements; in a read phase no thread writes (writing needs the
        // `GridVec`, which every thread gave up to a barrier on this vector's own word, and a
        // thread still holding it waits at no barrier of this vector with the others).
        unsafe { core::slice::from_raw_parts(self.vec.ptr.as_ptr(), self.vec.len) }
    }
}
