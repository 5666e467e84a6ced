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
//! | write own, `grid.sync()`, read any | a [`GridVec`] parameter: `let all = x.publish(&grid);` … `let x = all.reclaim(&grid);` |
//! | `i = atomicAdd(&count, 1); out[i] = v` | [`AppendSlice::push`] (the counter belongs to the output) |
//! | 16-byte vector loads/stores, `reinterpret_cast` | [`vec`](crate::vec) types, [`cast_aligned`], [`cast`] |

use core::marker::PhantomData;
use core::ops::{Deref, Index, IndexMut};
use core::ptr::NonNull;

/// Which partition of the launch an index counts in: the kind of a [`ThreadIndex`] and of the
/// [`DisjointSlice`] it indexes. Indices of one kind are unique across the launch; indices of
/// different kinds are not (thread 5's own index and block 5's leader index are both 5), so a
/// slice accepts the indices of its own kind only.
pub trait IndexKind: sealed::Sealed + 'static {}

/// One element per thread: [`thread::index_1d`](crate::thread::index_1d),
/// [`thread::grid_stride`](crate::thread::grid_stride). The default kind.
#[derive(Debug)]
pub enum PerThread {}
/// One element per block, written by its leader (thread 0):
/// [`ThreadBlock::leader_index`](crate::cg::ThreadBlock::leader_index).
#[derive(Debug)]
pub enum PerBlock {}
/// One element per tile of `N` threads, written by its leader (rank 0):
/// `tile.leader_index()` (tiles of 1–512 threads).
#[derive(Debug)]
pub enum PerTile<const N: u32> {}

impl IndexKind for PerThread {}
impl IndexKind for PerBlock {}
impl<const N: u32> IndexKind for PerTile<N> {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::PerThread {}
    impl Sealed for super::PerBlock {}
    impl<const N: u32> Sealed for super::PerTile<N> {}
}

/// An index into a [`DisjointSlice`] that belongs to the calling thread alone, among the
/// indices of kind `K`.
///
/// It dereferences to `usize`, so it also indexes ordinary slices: `a[*i]`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadIndex<K: IndexKind = PerThread> {
    rank: usize,
    // Not Send/Sync, not Copy: it must not reach another thread.
    _not_send: PhantomData<(*const (), K)>,
}

impl<K: IndexKind> ThreadIndex<K> {
    /// Only the functions that hand out indices of kind `K` (thread positions, block and tile
    /// leaders) may call this.
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

impl<K: IndexKind> Deref for ThreadIndex<K> {
    type Target = usize;
    #[inline(always)]
    fn deref(&self) -> &usize {
        &self.rank
    }
}

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
        self.rank
    }
}

impl<K: IndexKind> DisjointIndex<K> for &ThreadIndex<K> {
    #[inline(always)]
    fn rank(&self) -> usize {
        self.rank
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

    /// Claims the next slot and writes `value` there; returns the slot, or `None` (writing
    /// nothing) when the slice is full. The counter counts every push, full or not, so the host
    /// can tell how many did not fit.
    #[inline(always)]
    pub fn push(&self, value: T) -> Option<usize> {
        let slot = self.counter.fetch_add(1, core::sync::atomic::Ordering::Relaxed) as usize;
        if slot < self.cap {
            // SAFETY: in bounds; the counter handed `slot` to this call alone (it only grows,
            // it belongs to this slice, and nothing else writes the slice during the launch).
            unsafe { self.ptr.as_ptr().add(slot).write(value) };
            Some(slot)
        } else {
            None
        }
    }
}

/// A vector of a cooperative kernel that alternates between **write phases** (each thread
/// writes only its own elements, as through a [`DisjointSlice`]) and **read phases** (every
/// thread reads every element), separated by grid barriers: the step of iterative solvers
/// (Jacobi, conjugate gradient), safely.
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
        crate::cg::grid::phase_init();
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
    pub fn publish(self, grid: &crate::cg::GridGroup) -> GridVecView<'a, T> {
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
    pub fn reclaim(self, grid: &crate::cg::GridGroup) -> GridVec<'a, T> {
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
