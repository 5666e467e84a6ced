//! Thread-block clusters (sm_90) and distributed shared memory.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `__cluster_dims__(x, y, z)` / `cudaLaunchKernelEx` + `cudaLaunchAttributeClusterDimension` | `#[kernel(cluster)]`, launched with `LaunchConfig::with_cluster(dims)` (a cluster of one without it) |
//! | `cudaOccupancyMaxActiveClusters` | `Function::max_active_clusters` (host); a launch that cannot co-schedule one cluster is an `Err` |
//! | `cg::this_cluster()` → `cluster_group` | [`this_cluster()`] → [`ClusterGroup`] |
//! | `cluster.sync()` | [`ClusterGroup::sync`] (also [`ThreadGroup::sync`]) |
//! | `token = cluster.barrier_arrive(); …; cluster.barrier_wait(std::move(token))` | [`ClusterGroup::barrier_arrive`] → [`ClusterArrival`]; [`ClusterArrival::wait`] or [`ClusterGroup::barrier_wait`] (see [split-phase barriers](#split-phase-barriers)) |
//! | `cluster.block_rank()`, `num_blocks()`, `dim_blocks()`, `block_index()` | same names |
//! | `cluster.thread_rank()`, `num_threads()`, `dim_threads()`, `is_valid()` | same names |
//! | `cluster.map_shared_rank(ptr, rank)` (read / `atomicAdd`) | [`ClusterGroup::map_shared_rank`]`(array, rank)` → [`RemoteArray`]: [`load`](RemoteArray::load), [`atomic`](RemoteArray::atomic) |
//! | `cluster.map_shared_rank(extern_smem, rank)` (dynamic shared memory) | [`ClusterGroup::map_shared_rank_slice`]`(&slice, rank)` → [`RemoteSlice`] (the same, with a run-time length) |
//! | `cluster.map_shared_rank(ptr, rank)[i] = v` | [`RemoteArray::store_own`]: the writing block's own part of the remote array (see below) |
//! | `cluster.query_shared_rank(ptr)` | [`RemoteArray::rank`] (a remote view knows its block) |
//! | `grid.cluster_rank()`, `num_clusters()`, `dim_clusters()`, `cluster_index()` | same names on [`Grid`](super::Grid) and [`GridGroup`](super::GridGroup) |
//!
//! # The lifetime of another block's shared memory
//!
//! CUDA's trap: a block's shared memory is gone when the block exits, and is not there before
//! the block starts; a block that reads or writes another's meanwhile reads freed memory (or
//! another kernel's). In Cohort that cannot happen in safe code. A `#[kernel(cluster)]` kernel's
//! entry brackets its body:
//!
//! - **before the body**, a cluster barrier (`barrier.cluster.arrive.aligned` +
//!   `wait.aligned`, unconditional straight-line code every thread executes): every block of the
//!   cluster has started before any thread can touch another's memory;
//! - **after the body** (reached by every thread that returns from it, from wherever it
//!   returns), the *exit protocol*: each warp's threads that return together add their number to
//!   a counter in their block's shared memory (after `bar.warp.sync`, one
//!   `atom.release.cluster` per warp), and every thread but the block's last leaves at once —
//!   so a block's `sync_threads()` after some of its threads returned works as in any kernel.
//!   The block's last thread to leave the body waits (`ld.relaxed.cluster` of every block's
//!   counter, all in flight together, then `fence.acq_rel.cluster`) until every block of the
//!   cluster has counted all its threads out of their bodies, then meets the other
//!   blocks' last threads at a cluster barrier, and leaves. So a block's memory is there until
//!   every thread of the cluster has left its body, and remote views exist only in bodies.
//!
//! A cluster barrier counts arrivals, wherever they come from; the protocol never depends on
//! that: the last threads arrive only when no thread is left in any body (so no body's
//! `cluster.sync()` can be paired with theirs), and the counters are per block and only grow.
//!
//! What it costs: the Programming Guide's histogram does the same two cluster barriers by hand;
//! the protocol adds one shared atomic per warp and, in one thread per block, one remote load
//! per block of the cluster (issued together: one round trip once the others are done).
//!
//! What it asks: as in CUDA, every thread of the cluster must reach each `cluster.sync()` — a
//! block that has left its body keeps its last thread waiting for the others, so a
//! `cluster.sync()` that another block's threads no longer reach waits for ever (CUDA would let
//! it through, the other block having exited). In checked mode the last thread's wait is
//! bounded (5 s) and ends the launch with an `Err`; the CPU device reports it as a spin
//! timeout.
//!
//! In a kernel that is not `#[kernel(cluster)]`, every block is a cluster of one (the host
//! launches such kernels only without clusters): [`this_cluster()`] still works, its only
//! block is the block itself.
//!
//! # Split-phase barriers
//!
//! [`ClusterGroup::barrier_arrive`] arrives (`barrier.cluster.arrive.release`) and returns a
//! [`ClusterArrival`]; its [`wait`](ClusterArrival::wait) waits (`barrier.cluster.wait.acquire`).
//! Work between the two overlaps the other blocks' arrival. PTX leaves a second arrival before
//! the wait undefined, and CUDA any other collective of the cluster in that window; in Cohort:
//!
//! - the token is not `Clone`/`Copy` and not `Send`, `wait` consumes it: an arrival is waited
//!   once, by its own thread (compile errors);
//! - dropping it waits (an early `return` or `?` between arrival and wait waits there);
//! - `mem::forget` is safe, and [`this_cluster()`] is a free handle, so the types cannot keep a
//!   `cluster.sync()` or a second `barrier_arrive()` out of the window: every thread has a
//!   *pending bit* in its block's shared memory (one `u32` per warp, zeroed by the entry before
//!   its barrier), set by `barrier_arrive` and cleared by the wait; `sync()` and
//!   `barrier_arrive()` check it first and, when it is set, end the kernel with a panic naming
//!   the call (an `Err` on the host, in every build, on the GPU and the CPU device);
//! - the exit protocol clears a forgotten arrival: a thread whose bit is still set when it leaves
//!   the body counts itself out, then waits for the arrival's phase, before it exits or, as its
//!   block's last thread, spins on the other blocks' counters (so its early arrival cannot
//!   complete the last threads' final barrier while it still reads their memory).
//!
//! In a cluster of one (a kernel that is not `#[kernel(cluster)]`, a launch without clusters, a
//! module below sm_90) the arrival does nothing and the wait is the block's barrier
//! (`barrier.sync 0`), which every thread of the block must reach once per arrival.
//!
//! Cost: `barrier_arrive` and the wait each add one shared atomic (`atom.or` / `atom.and`) to
//! the barrier instruction; `sync()` one shared load and a branch. The block-level split barrier
//! needs an `mbarrier` (a `bar.arrive` + `bar.sync` pair would count a thread twice) and is not
//! here; the grid's is not done yet either.
//!
//! As for `cluster.sync()`, every thread of the cluster must arrive: a thread that never does
//! (another arm of a branch) keeps the phase open, and its block-mates' waits wait for it.

//! # Races on remote memory
//!
//! As in [`crate::shared`](mod@crate::shared): values, not references. A remote [`load`](RemoteArray::load) is an
//! `ld` of the generic address `mapa` gives, an [`atomic`](RemoteArray::atomic) an atomic of
//! that address; nothing ever makes a Rust reference to another block's plain memory. Writes
//! follow a disjoint scheme: a remote array of `N` elements is split into one part of
//! `N / num_blocks()` elements per block of the cluster, and a block may store only into its
//! own part of another block's array ([`store_own`](RemoteArray::store_own)), as a thread may
//! set only its own elements of a [`DisjointSlice`](crate::slice::DisjointSlice). Reads of an
//! element another thread writes without a cluster barrier in between return either value
//! (a race, not undefined behaviour), as in the block's own shared memory.

use core::marker::PhantomData;

use super::ThreadGroup;
use crate::DeviceCopy;
use crate::atomic::{Atomic, Generic};
use crate::raw;
use crate::shared::{SharedArray, SharedSlice};
use crate::thread::{self, Dim3};

/// The thread-block cluster this thread's block belongs to (`cg::cluster_group`).
#[derive(Clone, Copy, Debug)]
pub struct ClusterGroup {
    _private: (),
}

/// `cg::this_cluster()`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn this_cluster() -> ClusterGroup {
    ClusterGroup { _private: () }
}

impl ClusterGroup {
    /// Always true: every block is in a cluster (of one, without cluster launches).
    #[inline(always)]
    #[must_use]
    pub fn is_valid(&self) -> bool {
        true
    }

    /// This block's rank in the cluster, `0..num_blocks()` (`%cluster_ctarank`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_rank(&self) -> u32 {
        raw::cluster_ctarank()
    }

    /// Blocks in the cluster (`%cluster_nctarank`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn num_blocks(&self) -> u32 {
        raw::cluster_nctarank()
    }

    /// The cluster's extent in blocks (`%cluster_nctaid`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_blocks(&self) -> Dim3 {
        Dim3::new(raw::cluster_nctaid_x(), raw::cluster_nctaid_y(), raw::cluster_nctaid_z())
    }

    /// This block's index in the cluster (`%cluster_ctaid`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn block_index(&self) -> Dim3 {
        Dim3::new(raw::cluster_ctaid_x(), raw::cluster_ctaid_y(), raw::cluster_ctaid_z())
    }

    /// The cluster's extent in threads: `dim_blocks() * blockDim`, axis by axis.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn dim_threads(&self) -> Dim3 {
        let (c, b) = (self.dim_blocks(), thread::block_dim());
        Dim3::new(c.x * b.x, c.y * b.y, c.z * b.z)
    }

    /// `cluster.sync()`: every thread of the cluster waits for all others
    /// (`barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`): every thread's
    /// accesses before it (to its own or other blocks' shared memory, to global memory) happen
    /// before every thread's accesses after it. Every thread of the cluster must call it (see
    /// the [module docs](self) on what a block that already left its body does). Below sm_90
    /// a block barrier.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn sync(&self) {
        if raw::cluster_nctarank() > 1 {
            pending_is_clear("cluster.sync()");
        }
        // SAFETY: this thread has no arrival of its own in flight (every arrival of the library
        // is followed by its wait in the same function, and a split arrival's pending bit was
        // checked clear just above); the phase completes when every non-exited thread of the
        // cluster arrives.
        unsafe {
            raw::barrier_cluster_arrive();
            raw::barrier_cluster_wait();
        }
    }

    /// `cluster.barrier_arrive()`: this thread arrives at the cluster barrier and goes on; the
    /// returned token's [`wait`](ClusterArrival::wait) (or [`barrier_wait`](Self::barrier_wait))
    /// waits for the other threads' arrivals. Between the two, this thread may do anything but
    /// another cluster barrier: a [`sync`](Self::sync) or a second `barrier_arrive` there ends
    /// the kernel with a panic (the thread's pending bit, see the [module docs](self#split-phase-barriers)).
    /// Dropping the token unwaited waits; forgetting it (`mem::forget`) leaves the arrival
    /// pending, and the kernel's exit protocol waits for it.
    ///
    /// # Panics
    /// If this thread already has an arrival it has not waited for.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn barrier_arrive(&self) -> ClusterArrival {
        // A cluster of one (a kernel that is not a cluster kernel, a launch without clusters,
        // PTX below sm_90): the wait is the block's barrier, and nothing arrives here.
        if raw::cluster_nctarank() > 1 {
            pending_is_clear("cluster.barrier_arrive()");
            set_pending(true);
            // SAFETY: this thread has no arrival in flight (its pending bit was clear); the
            // phase completes when every non-exited thread of the cluster arrives.
            unsafe { raw::barrier_cluster_arrive() };
        }
        ClusterArrival { _not_send: PhantomData }
    }

    /// `cluster.barrier_wait(token)`: waits until every thread of the cluster has arrived in
    /// the phase `token` arrived in (the same as `token.wait()`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn barrier_wait(&self, token: ClusterArrival) {
        token.wait();
    }

    /// Block `rank`'s copy of the shared array `array` (`cluster.map_shared_rank(ptr, rank)`):
    /// a view whose loads and atomics reach that block's shared memory.
    ///
    /// # Panics
    /// If `rank >= num_blocks()`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn map_shared_rank<T: DeviceCopy, const N: usize>(
        &self,
        array: SharedArray<T, N>,
        rank: u32,
    ) -> RemoteArray<T, N> {
        const { assert!(size_of::<T>() % 4 == 0 && align_of::<T>() >= 4, "remote elements are whole 32-bit words") };
        // `store_own` and `load` move a `T` as 32-bit words: every byte must be a field's.
        crate::assert_no_padding::<T>();
        let blocks = self.num_blocks();
        assert!(rank < blocks, "cluster rank out of range");
        let local = crate::shared::generic_from_shared(array.as_slice().shared_addr());
        // SAFETY: `local` is this block's array (valid shared memory of `N` `T`s); `rank` is in
        // the cluster (asserted).
        let base = unsafe { raw::mapa_u64(local, rank, (N * size_of::<T>()) as u32) };
        RemoteArray { base, rank, me: self.block_rank(), blocks, _t: PhantomData }
    }
}

impl ClusterGroup {
    /// Block `rank`'s copy of the shared slice `slice` (dynamic shared memory, or part of a
    /// static array): the [`map_shared_rank`](Self::map_shared_rank) of a run whose length is
    /// known at run time. Every block of a launch has the same shared-memory layout (static
    /// variables and the launch's dynamic size), so the same addresses in block `rank` are
    /// that block's copy of the same run.
    ///
    /// # Panics
    /// If `rank >= num_blocks()`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn map_shared_rank_slice<T: DeviceCopy>(&self, slice: &SharedSlice<T>, rank: u32) -> RemoteSlice<T> {
        const { assert!(size_of::<T>() % 4 == 0 && align_of::<T>() >= 4, "remote elements are whole 32-bit words") };
        // As in `map_shared_rank`: a `T` moves as 32-bit words.
        crate::assert_no_padding::<T>();
        let blocks = self.num_blocks();
        assert!(rank < blocks, "cluster rank out of range");
        let len = slice.len();
        let local = crate::shared::generic_from_shared(slice.shared_addr());
        // SAFETY: `local` is this block's run of `len` `T`s of valid shared memory (a
        // `SharedSlice` is always in bounds of the block's window); `rank` is in the cluster.
        let base = unsafe { raw::mapa_u64(local, rank, (len * size_of::<T>()) as u32) };
        RemoteSlice { base, len: len as u32, rank, me: self.block_rank(), blocks, _t: PhantomData }
    }
}

impl ThreadGroup for ClusterGroup {
    type Size = u32;
    /// `block_rank() * blockDim + thread rank in the block`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn thread_rank(&self) -> u32 {
        self.block_rank() * thread::block_size() + thread::thread_rank_in_block()
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn num_threads(&self) -> u32 {
        self.num_blocks() * thread::block_size()
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn sync(&self) {
        ClusterGroup::sync(self)
    }
}

/// Another block's (or this block's) copy of a shared array, seen through distributed shared
/// memory (`ld` / atomics of the generic address `mapa` gives). A `Copy` handle: it is only
/// ever made and used inside a kernel's body, and the kernel's entry keeps every block of the
/// cluster alive until every body has returned (the [module docs](self)).
#[derive(Debug)]
pub struct RemoteArray<T, const N: usize> {
    base: u64,
    rank: u32,
    me: u32,
    blocks: u32,
    _t: PhantomData<T>,
}

impl<T, const N: usize> Clone for RemoteArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for RemoteArray<T, N> {}

impl<T: DeviceCopy, const N: usize> RemoteArray<T, N> {
    /// The rank of the block whose memory this is (`cluster.query_shared_rank`).
    #[inline(always)]
    #[must_use]
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// `N`.
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N == 0`.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Element `i` of the remote block's array.
    ///
    /// # Panics
    /// If `i >= N`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn load(&self, i: usize) -> T {
        assert!(i < N, "remote shared memory index out of bounds");
        let at = self.base + (i * size_of::<T>()) as u64;
        let mut out = core::mem::MaybeUninit::<T>::uninit();
        let p = out.as_mut_ptr().cast::<u32>();
        let mut w = 0;
        while w < size_of::<T>() / 4 {
            // SAFETY: `at + 4w` is inside element `i` of the remote array, 4-byte aligned (the
            // array is 16-byte aligned, `T` is made of aligned words); the remote block is
            // alive (the module docs); the write stays inside `out`.
            unsafe { p.add(w).write(raw::ld_dsmem_b32(at + 4 * w as u64)) };
            w += 1;
        }
        // SAFETY: every word written above; every bit pattern is a valid `T` (`DeviceCopy`).
        unsafe { out.assume_init() }
    }

    /// How many elements each block owns in every copy of the array: `N / num_blocks()`.
    #[inline(always)]
    #[must_use]
    pub fn part_len(&self) -> usize {
        N / self.blocks as usize
    }

    /// Stores `v` as element `j` of **this** block's part of the remote array: element
    /// `block_rank() * part_len() + j` (the disjoint scheme of the [module docs](self): each
    /// block writes only its own part of another block's array, so two blocks never write one
    /// element).
    ///
    /// # Panics
    /// If `j >= part_len()`.
    #[inline(always)]
    #[track_caller]
    pub fn store_own(&self, j: usize, v: T) {
        let part = self.part_len();
        assert!(j < part, "index past this block's part of the remote array");
        let i = self.me as usize * part + j;
        let at = self.base + (i * size_of::<T>()) as u64;
        let p = (&raw const v).cast::<u32>();
        let mut w = 0;
        while w < size_of::<T>() / 4 {
            // SAFETY: inside element `i` (< N: `me < blocks`, `j < part`), 4-byte aligned, of a
            // live block's array (as `load`); the read stays inside `v`, whose bytes are all
            // initialized (no padding: asserted when the view was made).
            unsafe { raw::st_dsmem_b32(at + 4 * w as u64, p.add(w).read()) };
            w += 1;
        }
    }
}

impl<T: DeviceCopy, const N: usize> RemoteArray<T, N> {
    /// Element `i` as an atomic (`atom` of its generic address, at device scope): the remote
    /// `atomicAdd(&remote[i], v)` of the Programming Guide's histogram.
    ///
    /// The reference is `'static` for the reasons [`SharedSlice::atomic`](crate::shared::SharedSlice::atomic)
    /// gives, and the remote block outlives every body of its cluster.
    ///
    /// # Panics
    /// If `i >= N`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn atomic(&self, i: usize) -> &'static Atomic<T, Generic> {
        assert!(i < N, "remote shared memory index out of bounds");
        let at = self.base + (i * size_of::<T>()) as u64;
        // SAFETY: the generic address of element `i` of a live block's array, aligned for `T`,
        // valid until every body of the cluster has returned (the module docs); `Atomic` only
        // touches it atomically.
        unsafe { Atomic::from_ptr(at as usize as *mut T) }
    }
}

crate::shared! {
    /// The exit protocol's counter: threads of this block that have left the kernel's body.
    static LEFT: [u32; 1];
    /// One bit per thread of the block (thread `t`: word `t / 32`, bit `t % 32`): set while the
    /// thread has a split arrival ([`ClusterGroup::barrier_arrive`]) it has not waited for.
    /// Used only in clusters of more than one block, which only `#[kernel(cluster)]` kernels
    /// have (the host refuses the others' cluster launches), whose entry zeroes it; in a
    /// cluster of one it is never read (its content is whatever the block's memory held).
    static PENDING: [u32; 32];
}

/// A split arrival at the cluster barrier ([`ClusterGroup::barrier_arrive`]), waited for by
/// [`wait`](Self::wait) (or [`ClusterGroup::barrier_wait`]). Not `Clone`/`Copy` (one wait per
/// arrival) and not `Send` (it is this thread's arrival); dropping it waits.
#[must_use = "a split arrival must be waited for (`token.wait()`); dropping it waits at once"]
#[derive(Debug)]
pub struct ClusterArrival {
    _not_send: PhantomData<*const ()>,
}

impl ClusterArrival {
    /// `barrier.cluster.wait`: waits until every non-exited thread of the cluster has arrived
    /// in this arrival's phase; then every thread's accesses before its arrival happen before
    /// this thread's accesses after the wait.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn wait(self) {
        core::mem::forget(self);
        wait_pending();
    }
}

impl Drop for ClusterArrival {
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        // On the CPU device a kernel's panic unwinds through the body: the launch is over, and
        // a wait now would panic again inside the unwinding.
        #[cfg(not(target_arch = "nvptx64"))]
        if std::thread::panicking() {
            return;
        }
        wait_pending();
    }
}

/// This thread's word of [`PENDING`] and its bit.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn pending_slot() -> (usize, u32) {
    let t = thread::thread_rank_in_block();
    ((t / 32) as usize, 1 << (t % 32))
}

/// Whether this thread has a split arrival it has not waited for.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn is_pending() -> bool {
    let (w, bit) = pending_slot();
    // Only this thread changes its bit: a relaxed load sees its own last update.
    PENDING.get().atomic(w).load(crate::atomic::Ordering::Relaxed) & bit != 0
}

/// Sets or clears this thread's pending bit.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn set_pending(on: bool) {
    let (w, bit) = pending_slot();
    let a = PENDING.get().atomic(w);
    if on {
        a.fetch_or(bit, crate::atomic::Ordering::Relaxed);
    } else {
        a.fetch_and(!bit, crate::atomic::Ordering::Relaxed);
    }
}

/// Panics (ends the kernel) when this thread has a pending split arrival: `what` would be a
/// second arrival before its wait, which PTX leaves undefined.
#[inline(always)]
#[track_caller]
fn pending_is_clear(what: &'static str) {
    if is_pending() {
        pending_misuse(what);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn pending_misuse(what: &'static str) -> ! {
    // A check report, not `panic!`: a device panic records only its location (see
    // `crate::panic`), and this says what is wrong on both devices.
    let code = if what.len() == "cluster.sync()".len() { 1 } else { 2 };
    crate::panic::fail_check(
        crate::panic::CheckKind::ClusterSplitMisuse,
        what,
        code,
        0,
        core::panic::Location::caller(),
        None,
    )
}

/// Waits for this thread's pending split arrival and clears its bit.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn wait_pending() {
    if raw::cluster_nctarank() > 1 {
        set_pending(false);
        // SAFETY: this thread arrived (`barrier_arrive` set the bit that the token stands for,
        // and a token is waited once: `wait` forgets it, `drop` runs once; the cluster's size
        // is the same at the arrival) and has not waited since.
        unsafe { raw::barrier_cluster_wait() };
    } else {
        // SAFETY: the cluster is this block: the wait is its barrier, which every thread of the
        // block reaches once per arrival (the convergence rule, as for `cluster.sync()` below
        // sm_90); a thread that is missing keeps the block waiting (a hang, not a race).
        unsafe { raw::barrier_sync() };
    }
}

/// The start of a `#[kernel(cluster)]` kernel's entry, before anything else: zeroes the block's
/// exit counter and waits until every block of the cluster has done so (a cluster barrier), so
/// that no block's memory is touched before its block has started.
///
/// Every thread of the block runs it, unconditionally and first (the `.aligned` barrier needs
/// every thread of the block at this one instruction).
#[doc(hidden)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn __cluster_enter() {
    // Every thread stores the same 0: straight-line code, no branch before the aligned barrier.
    LEFT.get().store(0, 0);
    // Threads 0..32 zero the pending words 0..32 (thread `t` and `t + 32k` store the same 0 to
    // word `t % 32`), which cover every thread of a block of up to 1024: no arrival is pending.
    PENDING.get().store((thread::thread_rank_in_block() % 32) as usize, 0);
    // SAFETY: the first cluster operation of every thread (so no arrival in flight), reached by
    // every thread of the cluster at this one instruction, converged (nothing before it
    // branches); no thread can have exited.
    unsafe { raw::barrier_cluster_sync_aligned() }
}

/// The end of a `#[kernel(cluster)]` kernel's entry, after the body returned: the exit protocol
/// of the [module docs](self). Every thread of the kernel runs it once, and returns from the
/// entry right after.
#[doc(hidden)]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn __cluster_exit() {
    // A cluster of one (a launch without clusters, a child launch, PTX below sm_90): no other
    // block can reach this block's memory, and its own threads have all left the body once the
    // last of them has: nothing to wait for.
    if raw::cluster_nctarank() == 1 {
        // A forgotten split arrival: no other block waits for this one, and an exiting thread
        // no longer holds up its own block's phase.
        // SAFETY: the thread returns from the entry next.
        unsafe { raw::cluster_thread_exit() };
        return;
    }
    let left = LEFT.get();
    let addr = left.as_slice().shared_addr();
    let threads = thread::block_size();
    // The lanes of the warp that left the body together: `bar.warp.sync` orders their accesses
    // before the first lane's release, which covers them (the ordering `__syncwarp` gives).
    let lanes = super::coalesced_threads();
    let (rank, count) = (lanes.thread_rank(), lanes.num_threads());
    lanes.sync();
    let before = if rank == 0 {
        // SAFETY: the block's own counter, a 4-byte aligned shared `u32`.
        unsafe { raw::atom_add_release_cluster_shared_u32(addr, count) }
    } else {
        0
    };
    let before = super::WarpGroup::shfl(&lanes, before, 0);
    // A split arrival left pending (its token forgotten): wait for its phase now, after
    // counting out (the last threads' spin below needs every thread counted, and a pending
    // thread that waited first could wait for a last thread that is spinning) and before the
    // spin (a last thread's arrival must not complete a phase while it still reads the other
    // blocks' counters: its early arrival would let the others' final barrier pass it).
    if is_pending() {
        wait_pending();
    }
    if before + count == threads && rank == count - 1 {
        // The block's last thread: every other thread of the block has left its body.
        wait_for_cluster(left, threads);
        // SAFETY: this thread has no arrival in flight (its body returned, and every arrival of
        // the library is waited in the function that made it); every thread still alive in the
        // cluster is a block's last thread here, past its wait above: the phase completes when
        // all of them arrive, after every one has read the counters.
        unsafe {
            raw::barrier_cluster_arrive();
            raw::barrier_cluster_wait();
        }
    }
    // SAFETY: the thread returns from the entry next.
    unsafe { raw::cluster_thread_exit() }
}

/// The last thread of a block waits until every block of the cluster has counted `threads`
/// threads out of their bodies: the blocks' counters read together (`ld.relaxed.cluster`, up to
/// 16 loads in flight at once rather than one remote round trip per block), again after a short
/// sleep until all are full, then `fence.acq_rel.cluster` (the acquire of what every block's
/// counting released). Bounded in checked mode.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn wait_for_cluster(left: SharedArray<u32, 1>, threads: u32) {
    let local = crate::shared::generic_from_shared(left.as_slice().shared_addr());
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    let (start, loc) = (raw::globaltimer(), core::panic::Location::caller());
    let blocks = raw::cluster_nctarank();
    loop {
        let mut counts = [threads; 16];
        for (r, count) in (0u32..).zip(counts.iter_mut()) {
            if r < blocks {
                // SAFETY: every block's counter, at the same shared address as this one's; each
                // block of the cluster has started (the entry's barrier) and stays until every
                // last thread has passed this loop (the barrier after it); a cluster has at most
                // 16 blocks.
                let peer = unsafe { raw::mapa_u64(local, r, 4) };
                // SAFETY: as above: a live block's aligned `u32`, only ever accessed atomically.
                *count = unsafe { raw::ld_relaxed_dsmem_b32(peer) };
            }
        }
        if counts.iter().all(|&c| c == threads) {
            break;
        }
        raw::nanosleep(32);
        #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
        crate::check::cluster_waited(start, blocks, loc);
    }
    raw::fence_acq_rel_cluster();
}

/// Another block's (or this block's) copy of a shared run of run-time length
/// ([`ClusterGroup::map_shared_rank_slice`]): [`RemoteArray`]'s loads, atomics and disjoint
/// stores, bounds-checked against the run's length.
#[derive(Debug)]
pub struct RemoteSlice<T> {
    base: u64,
    len: u32,
    rank: u32,
    me: u32,
    blocks: u32,
    _t: PhantomData<T>,
}

impl<T> Clone for RemoteSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RemoteSlice<T> {}

impl<T: DeviceCopy> RemoteSlice<T> {
    /// The rank of the block whose memory this is.
    #[inline(always)]
    #[must_use]
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The run's length in elements.
    #[inline(always)]
    #[must_use]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the run is empty.
    #[inline(always)]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element `i` of the remote block's run.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn load(&self, i: usize) -> T {
        assert!(i < self.len(), "remote shared memory index out of bounds");
        // SAFETY: element `i` of a live block's run (in bounds), 4-byte aligned words.
        unsafe { load_words(self.base + (i * size_of::<T>()) as u64) }
    }

    /// How many elements each block owns in every copy of the run: `len() / num_blocks()`.
    #[inline(always)]
    #[must_use]
    pub fn part_len(&self) -> usize {
        self.len as usize / self.blocks as usize
    }

    /// Stores `v` as element `j` of **this** block's part of the remote run (element
    /// `block_rank() * part_len() + j`): the disjoint scheme of [`RemoteArray::store_own`].
    ///
    /// # Panics
    /// If `j >= part_len()`.
    #[inline(always)]
    #[track_caller]
    pub fn store_own(&self, j: usize, v: T) {
        let part = self.part_len();
        assert!(j < part, "index past this block's part of the remote array");
        let i = self.me as usize * part + j;
        // SAFETY: element `i` < len (`me < blocks`, `j < part`) of a live block's run.
        unsafe { store_words(self.base + (i * size_of::<T>()) as u64, v) }
    }

    /// Element `i` as an atomic (as [`RemoteArray::atomic`]).
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn atomic(&self, i: usize) -> &'static Atomic<T, Generic> {
        assert!(i < self.len(), "remote shared memory index out of bounds");
        let at = self.base + (i * size_of::<T>()) as u64;
        // SAFETY: as `RemoteArray::atomic`: a live block's aligned element, touched atomically.
        unsafe { Atomic::from_ptr(at as usize as *mut T) }
    }
}

/// A `T` read word by word from distributed shared memory.
///
/// # Safety
/// `at` is the generic address of a `T` in the shared memory of a live block of the cluster,
/// 4-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn load_words<T: DeviceCopy>(at: u64) -> T {
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    let p = out.as_mut_ptr().cast::<u32>();
    let mut w = 0;
    while w < size_of::<T>() / 4 {
        // SAFETY: inside the element (the caller), the write inside `out`.
        unsafe { p.add(w).write(raw::ld_dsmem_b32(at + 4 * w as u64)) };
        w += 1;
    }
    // SAFETY: every word written; every bit pattern is a valid `T` (`DeviceCopy`).
    unsafe { out.assume_init() }
}

/// A `T` stored word by word into distributed shared memory.
///
/// # Safety
/// As [`load_words`], and no other thread writes the element (the disjoint scheme).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn store_words<T: DeviceCopy>(at: u64, v: T) {
    let p = (&raw const v).cast::<u32>();
    let mut w = 0;
    while w < size_of::<T>() / 4 {
        // SAFETY: inside the element (the caller); the read inside `v`, all of whose bytes are
        // initialized (no padding: asserted when the view was made).
        unsafe { raw::st_dsmem_b32(at + 4 * w as u64, p.add(w).read()) };
        w += 1;
    }
}
