//! The running CUDA thread's context: its indices, and how it suspends itself.
//!
//! A worker OS thread runs many CUDA threads, one at a time, each on its own coroutine stack.
//! The context of the one running now lives in a thread-local [`Ctx`]. The scheduler sets it
//! before a thread's first resume; after that the thread restores its own context each time it
//! comes back from a suspension ([`block_on`]), so a resume costs no context write.

use core::cell::{Cell, RefCell};
use core::panic::Location;

use corosensei::Yielder;

use crate::Dim3;
use crate::error::CpuError;
use crate::sched::Wait;
use crate::shared::BlockShared;

/// What a suspended thread gets back when it is resumed: the collective's result.
pub(crate) type Resume = u64;

/// The context of the CUDA thread running on this OS thread.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    /// Inside a launch at all.
    pub active: bool,
    pub bid: Dim3,
    pub bdim: Dim3,
    pub gdim: Dim3,
    /// Rank of the thread in its block (x fastest).
    pub rank: u32,
    /// `block_rank * threads per block`: the global rank of the block's thread 0.
    pub grid_base: u64,
    pub cooperative: bool,
    /// This thread's coroutine yielder; null in a fast-path launch.
    pub yielder: *const Yielder<Resume, Wait>,
    /// The block's shared memory (and race-check state).
    pub block: *const BlockShared,
    /// The launch's clusters (null: a launch without clusters).
    pub cluster: *const crate::cluster::ClusterTable,
    /// The cluster barrier phase this thread arrived in and has not waited for
    /// (`cluster::NO_PHASE`: none).
    pub cluster_phase: u64,
    /// The split-phase arrivals this thread has not waited for (`split::SPLIT_BLOCK`,
    /// `split::SPLIT_GRID`).
    pub split: u8,
    /// The launch's grid split barrier (null: a launch that is not cooperative).
    pub grid_split: *const crate::split::GridSplit,
}

impl Ctx {
    /// `threadIdx`, from the rank (x fastest).
    #[inline(always)]
    pub(crate) fn tid(&self) -> Dim3 {
        let d = self.bdim;
        if d.y == 1 && d.z == 1 { Dim3::new(self.rank, 0, 0) } else { crate::sched::tid_of(self.rank, d) }
    }

    pub(crate) const NONE: Self = Self {
        active: false,
        bid: Dim3::ONE,
        bdim: Dim3::ONE,
        gdim: Dim3::ONE,
        rank: 0,
        grid_base: 0,
        cooperative: false,
        yielder: core::ptr::null(),
        block: core::ptr::null(),
        cluster: core::ptr::null(),
        cluster_phase: crate::cluster::NO_PHASE,
        split: 0,
        grid_split: core::ptr::null(),
    };
}

/// A kernel panic's location (file, line, column) and message.
pub(crate) type PanicNote = (Option<(String, u32, u32)>, String);

thread_local! {
    pub(crate) static CTX: Cell<Ctx> = const { Cell::new(Ctx::NONE) };
    /// Set while the scheduler drops suspended coroutines (their stacks unwind): a thread's
    /// root `catch_unwind` must let that unwind through.
    pub(crate) static DROPPING: Cell<bool> = const { Cell::new(false) };
    /// Where the last kernel panic on this OS thread happened and what it said (filled by the
    /// engine's panic hook).
    pub(crate) static LAST_PANIC: RefCell<Option<PanicNote>> = const { RefCell::new(None) };
    /// The call-instruction token of the operation about to be called ([`at_instruction`]).
    static TOKEN: Cell<u64> = const { Cell::new(0) };
}

/// Says which call instruction the next device operation of this OS thread comes from:
/// `token` is distinct per call instruction of the kernel's code after inlining (the device
/// library's host build passes the instruction's address in debug builds; 0 when unknown).
/// The engine then meets threads only when they are at the same call site **and** the same
/// instruction, so two calls that share a source location (inside one `macro_rules!`
/// expansion, or reached through one `#[track_caller]` helper) are told apart.
///
/// The next operation takes it (and clears it); an operation called without it has token 0.
#[inline]
pub fn at_instruction(token: u64) {
    TOKEN.with(|t| t.set(token));
}

/// The token [`at_instruction`] left for this operation (0 if none), cleared.
#[inline]
pub(crate) fn take_token() -> u64 {
    TOKEN.with(|t| t.replace(0))
}

/// Sets the thread of the context (the fast path's per-thread step: one field, not the whole
/// context).
#[inline(always)]
pub(crate) fn set_rank(rank: u32) {
    CTX.with(|c| {
        let p = c.as_ptr();
        // SAFETY: `p` points to this OS thread's context; no reference into the cell exists
        // (it is only ever read and written by value), and nothing else runs meanwhile. A new
        // thread has no split arrival of its own (the fast path shares one context).
        unsafe {
            (*p).rank = rank;
            (*p).split = 0;
        }
    });
}

/// The running thread's context; panics outside a launch.
#[inline(always)]
#[track_caller]
pub(crate) fn current() -> Ctx {
    let c = CTX.with(Cell::get);
    if !c.active {
        outside();
    }
    c
}

#[cold]
#[inline(never)]
#[track_caller]
fn outside() -> ! {
    panic!("a cohort-cpu device operation was called outside a kernel running on the CPU device")
}

/// Ends the running CUDA thread with `err` as the launch's error (no panic hook runs).
#[cold]
pub(crate) fn raise(err: CpuError) -> ! {
    std::panic::resume_unwind(Box::new(err))
}

/// Ends the running thread with a [`CpuError::Misuse`] of `op` at `site`.
#[cold]
pub(crate) fn misuse(op: &'static str, site: &'static Location<'static>, reason: String) -> ! {
    let c = current();
    raise(CpuError::Misuse { block: c.bid, thread: c.tid(), op, site, reason })
}

/// Suspends the running thread at `wait` until the scheduler completes it; returns the result.
#[inline]
pub(crate) fn block_on(wait: Wait) -> Resume {
    let c = current();
    if c.yielder.is_null() {
        misuse(
            wait.op,
            wait.site,
            "a collective or barrier in a fast-path launch (`Mode::Loop` runs threads one after another and \
             can't meet them; launch with `Mode::Threads`)"
                .into(),
        );
    }
    // SAFETY: `yielder` is set by this thread's coroutine body to its own `Yielder`, which lives
    // on the coroutine's stack for as long as the body runs, and this code runs inside the body.
    // The context was restored by this thread (or set by the scheduler for its first resume),
    // so it is this thread's yielder, not another coroutine's.
    let y = unsafe { &*c.yielder };
    let out = y.suspend(wait);
    CTX.with(|x| x.set(c));
    out
}

/// `threadIdx` of the running CUDA thread.
#[must_use]
#[inline]
#[track_caller]
pub fn thread_idx() -> Dim3 {
    current().tid()
}

/// `blockIdx` of the running CUDA thread.
#[must_use]
#[inline]
#[track_caller]
pub fn block_idx() -> Dim3 {
    current().bid
}

/// `blockDim` of the running launch.
#[must_use]
#[inline]
#[track_caller]
pub fn block_dim() -> Dim3 {
    current().bdim
}

/// `gridDim` of the running launch.
#[must_use]
#[inline]
#[track_caller]
pub fn grid_dim() -> Dim3 {
    current().gdim
}

/// The running thread's rank in its block (x fastest).
#[must_use]
#[inline]
#[track_caller]
pub fn thread_rank() -> u32 {
    current().rank
}

/// The running thread's rank in the grid: `block rank * block size + thread rank`.
#[must_use]
#[inline]
#[track_caller]
pub fn global_rank() -> u64 {
    let c = current();
    c.grid_base + u64::from(c.rank)
}

/// `%laneid`: the thread's lane in its warp (`thread_rank() % 32`).
#[must_use]
#[inline]
#[track_caller]
pub fn lane_id() -> u32 {
    current().rank % 32
}

/// The thread's warp in its block (`thread_rank() / 32`).
#[must_use]
#[inline]
#[track_caller]
pub fn warp_id() -> u32 {
    current().rank / 32
}

/// `%lanemask_lt`: the lanes below this one.
#[must_use]
#[inline]
#[track_caller]
pub fn lanemask_lt() -> u32 {
    (1u32 << lane_id()) - 1
}

/// `%lanemask_le`: this lane and the ones below.
#[must_use]
#[inline]
#[track_caller]
pub fn lanemask_le() -> u32 {
    lanemask_lt() | lanemask_eq()
}

/// `%lanemask_eq`: this lane's bit.
#[must_use]
#[inline]
#[track_caller]
pub fn lanemask_eq() -> u32 {
    1u32 << lane_id()
}

/// `%lanemask_gt`: the lanes above this one.
#[must_use]
#[inline]
#[track_caller]
pub fn lanemask_gt() -> u32 {
    !lanemask_le()
}

/// `%lanemask_ge`: this lane and the ones above.
#[must_use]
#[inline]
#[track_caller]
pub fn lanemask_ge() -> u32 {
    !lanemask_lt()
}

/// Whether this OS thread is running a CUDA thread of a CPU launch now.
#[must_use]
#[inline]
pub fn in_kernel() -> bool {
    CTX.with(Cell::get).active
}

/// Whether the running launch is cooperative (grid sync allowed).
#[must_use]
#[inline]
#[track_caller]
pub fn is_cooperative() -> bool {
    current().cooperative
}
