//! Checked mode: collectives reached by only part of their group become errors.
//!
//! CUDA leaves a collective that only part of its group reaches undefined (wrong values, or a
//! hang); see the convergence rule in [`crate::cg`]. Built with `--cfg cohort_checked` (what
//! `cohort_build` does by default for debug builds, or with `COHORT_CHECKED=1`), every
//! collective first checks that exactly its group is at **one call**, and otherwise ends the
//! kernel with an `Err` on the host that names the collective, the call site and the threads
//! present:
//!
//! | scope | how it checks | cost (checked mode only) |
//! |---|---|---|
//! | tile ≤ 32, coalesced group | `bar.warp.sync` on the group's mask (on sm_70+ members may arrive from different instructions), then `match.any.sync` of the call's number: every member must hold the same; a scan checks each step after the first too (only part of the tile calls the op in a step: a collective in the op meets the others at a check, where a bare `shfl.sync` would not pair with it and the tile would hang) | 2 warp instructions (a scan: 2 per step) |
//! | block (`sync_threads*`, block `reduce`/scans, the block part of grid syncs) | a barrier, thread 0 publishes its call's number in shared memory, a barrier, `barrier.red.or` of "mine differs" | 3 block barriers |
//! | block-wide copies (`AsyncBarrier::memcpy_async`, `bulk_copy`, `tensor_load`, `TensorMapMut::store_owned`): every thread is at thread 0's call, with thread 0's arguments | a barrier, thread 0 publishes its call's number and its arguments in shared memory, a barrier, `barrier.red.or` of "mine differ" (a thread at another barrier 0 — its own `sync_threads()` — is reported by its call, as in the block check; the CPU device compares the arguments always) | 3 block barriers |
//! | grid (`grid.sync()`, `GridVec` phase changes, `reduce_grid`) | block 0 publishes its call's number beside the barrier's generation; every other block compares after the barrier; the wait for the other blocks is bounded (5 s by `%globaltimer`) | a few global loads and stores per block, a timer read per spin |
//!
//! **What "one call" means.** Not the source location: `Location::caller()` is the same for
//! every call written inside one `macro_rules!` body (it is the macro's invocation), and for
//! every call reached through one `#[track_caller]` helper. Each check compares instead a
//! number of **its call instruction**: a marker (`raw::site_marker`) that every inlined copy of
//! the check carries, numbered by `cohort-build` in the PTX (a module whose markers are not
//! numbered is refused at load). So two calls in one macro expansion or helper that members
//! reach divergently are an error too, and the report says that the location is shared. The
//! location stays what the report names.
//!
//! The marker follows the check's first barrier (`bar.warp.sync` or `barrier.sync`), a
//! convergent instruction LLVM never hoists out of an `if`; an inline asm with side effects is
//! not hoisted past it, nor ever sunk or merged, so the two arms of a divergent branch keep two
//! markers. One call in a loop is one instruction, every iteration: its members agree.
//!
//! Without `cohort_checked` every function here is empty and inlined away: release kernels
//! are unchanged. Not checked: large tiles (64–512, named barriers), and a member that exited
//! instead of reaching the collective (it can hang the check, as it hangs the collective).
//!
//! On the CPU device the engine makes the same checks at every collective, checked mode or not
//! (its own errors: `divergence: …`, `deadlock in block …`), telling the calls of one location
//! apart by the address of their code in builds with debug assertions.

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
use core::panic::Location;

/// A 64-bit hash of a call site (file, line, column): the same in every thread that calls
/// from that site.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
fn site(loc: &Location<'_>) -> u64 {
    let file = loc.file().as_ptr() as u64;
    file.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((loc.line() as u64) << 32 | loc.column() as u64)
}

/// Whether two locations are the same file, line and column.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
fn same_location(a: &Location<'_>, b: &Location<'_>) -> bool {
    a.line() == b.line() && a.column() == b.column() && a.file() == b.file()
}

/// Checks that every lane of `mask` is at this call of `op` (warp-level groups).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn warp(op: &'static str, mask: u32) {
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    {
        // SAFETY: the calling lane is in `mask` (every group's mask holds its members); on
        // sm_70+ the lanes of `mask` may reach a warp barrier from different instructions,
        // which is exactly the case being checked. It is this call's own instruction (inlined
        // here) so that the marker after it stays in this call (see the module docs).
        unsafe { crate::raw::bar_warp_sync(mask) };
        warp_at(op, mask, Location::caller(), crate::raw::site_marker());
    }
    let _ = (op, mask);
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(never)]
fn warp_at(op: &'static str, mask: u32, loc: &'static Location<'static>, call: u32) {
    // SAFETY: every lane of `mask` is past the warp barrier of its call and executes this.
    let same = unsafe { crate::raw::match_any_sync_b32(mask, call) };
    if same != mask {
        // Every lane of `mask` is here (none has a match set of the whole mask): do the lanes
        // that differ share a source location?
        // SAFETY: as above.
        let same_loc = unsafe { crate::raw::match_any_sync_b64(mask, site(loc)) };
        let kind = if same_loc == mask { crate::panic::CheckKind::WarpSameSite } else { crate::panic::CheckKind::Warp };
        crate::panic::fail_check(kind, op, mask, same, loc, None);
    }
}

/// Checks that every thread of the block is at this call of `op` (block-level collectives),
/// and returns the call's number (0 without checked mode). Every thread of the block must call
/// it (it is made of block barriers).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn block(op: &'static str) -> u32 {
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    {
        // SAFETY: every thread of the block reaches this barrier and the two in `block_at`, from
        // whichever collective it is at: the non-aligned form allows different instructions.
        // It is this call's own (see `warp`).
        unsafe { crate::raw::barrier_sync() };
        let call = crate::raw::site_marker();
        block_at(op, Location::caller(), call);
        call
    }
    #[cfg(not(all(cohort_checked, target_arch = "nvptx64")))]
    {
        let _ = op;
        0
    }
}

/// [`block`] for the block's own collectives (`sync_threads*`, block `reduce` and scans): first,
/// in checked mode and on the CPU device, a report when this thread has a split block arrival
/// it has not waited for ([`cg::split`](crate::cg::split): no collective of the block between
/// `barrier_arrive` and its wait).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn block_collective(op: &'static str) -> u32 {
    split_state::block_barrier_allowed(op);
    block(op)
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
crate::shared! {
    /// The call of thread 0 of the block, for the block check: its number and its location
    /// (the address of a `&'static Location`).
    static BLOCK_SITE: [u64; 2];
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(never)]
fn block_at(op: &'static str, loc: &'static Location<'static>, call: u32) {
    let cell = BLOCK_SITE.get();
    let rank = crate::thread::thread_rank_in_block();
    if rank == 0 {
        cell.store(0, u64::from(call));
        cell.store(1, loc as *const Location<'static> as u64);
    }
    // SAFETY: as in `block`.
    unsafe { crate::raw::barrier_sync() };
    let differs = cell.load(0) != u64::from(call);
    // SAFETY: as above.
    let any = unsafe { crate::raw::barrier_sync_or(differs) };
    if differs {
        // SAFETY: thread 0 stored the address of its `&'static Location` (a constant of this
        // module) before the barrier above, and nobody writes the cell until every thread has
        // passed the `barrier.red` above.
        let first: &'static Location<'static> = unsafe { &*(cell.load(1) as *const Location<'static>) };
        let kind = if same_location(first, loc) {
            crate::panic::CheckKind::BlockSameSite
        } else {
            crate::panic::CheckKind::Block
        };
        crate::panic::fail_check(kind, op, rank, 0, loc, Some(first));
    }
    if any {
        // Another thread's check fails and traps the launch; this one waits for that rather
        // than entering a collective the others never reach.
        loop {
            crate::raw::nanosleep(1000);
        }
    }
}

#[cfg(any(all(cohort_checked, target_arch = "nvptx64"), not(target_arch = "nvptx64")))]
crate::shared! {
    /// Thread 0's arguments for the uniformity check of a block-wide copy.
    static BLOCK_ARGS: [u64; 4];
}

/// Checks (in checked mode on a GPU, and always on the CPU device) that every thread of the
/// block calls a block-wide copy `op` with the same `args` as thread 0 — the copy that thread 0
/// issues is the one every thread's borrow stands for. A thread whose arguments differ ends the
/// launch with [`CheckKind::AsyncBarrierMisuse`](crate::panic::CheckKind::AsyncBarrierMisuse)
/// code 10 (number 2: its rank); the others wait for that. On a GPU the check is also the block
/// check of this call (as [`block`]): a thread that meets its barriers from another call — its
/// own `sync_threads()` on a divergent path, which barrier 0 counts like any arrival — is
/// reported as a divergence by its call's number, so it cannot stand in for a thread of the
/// copy. Every thread of the block must call it (it is made of block barriers). Without checked
/// mode on a GPU it is empty.
#[inline(always)]
#[track_caller]
pub(crate) fn block_uniform<const N: usize>(op: &'static str, args: [u64; N]) {
    const { assert!(N <= 4) };
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    {
        let (site, cell) = (BLOCK_SITE.get(), BLOCK_ARGS.get());
        let rank = crate::thread::thread_rank_in_block();
        let loc = Location::caller();
        // SAFETY: every thread of the block reaches these three barriers (the caller's
        // contract), from whichever call it is at: the non-aligned form allows different
        // instructions. The first orders the previous check's loads of the cells before thread
        // 0's stores. It is this call's own (see `block`): the call's number is compared with
        // the arguments, so a thread at another barrier 0 (a user's `sync_threads()` on a
        // divergent path, whose block check reads `BLOCK_SITE`) cannot stand in for this copy.
        unsafe { crate::raw::barrier_sync() };
        let call = u64::from(crate::raw::site_marker());
        if rank == 0 {
            site.store(0, call);
            site.store(1, loc as *const Location<'static> as u64);
            for (i, a) in args.iter().enumerate() {
                cell.store(i, *a);
            }
        }
        // SAFETY: as above.
        unsafe { crate::raw::barrier_sync() };
        // Thread 0's call, whichever block check or copy published it (so a thread here while
        // thread 0 is at its own `sync_threads()` sees that call, not an older copy's).
        let differs = site.load(0) != call || args.iter().enumerate().any(|(i, a)| cell.load(i) != *a);
        // SAFETY: as above.
        let any = unsafe { crate::raw::barrier_sync_or(differs) };
        if differs {
            // SAFETY: thread 0 stored the address of its `&'static Location` (a constant of
            // this module) before the barrier above, and nobody writes the cell until every
            // thread has passed the `barrier.red` above.
            let first: &'static Location<'static> = unsafe { &*(site.load(1) as *const Location<'static>) };
            let (kind, a, b, other) = if site.load(0) != call {
                let kind = if same_location(first, loc) {
                    crate::panic::CheckKind::BlockSameSite
                } else {
                    crate::panic::CheckKind::Block
                };
                (kind, rank, 0, Some(first))
            } else {
                (crate::panic::CheckKind::AsyncBarrierMisuse, 10, rank, None)
            };
            crate::panic::fail_check(kind, op, a, b, loc, other);
        }
        if any {
            // Another thread's check fails and ends the launch; this one waits for that rather
            // than issuing a copy the others disagree on.
            loop {
                crate::raw::nanosleep(1000);
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // The CPU device's barriers meet only threads at the same barrier instruction, so the
        // arguments are all there is to compare.
        let cell = BLOCK_ARGS.get();
        let rank = crate::thread::thread_rank_in_block();
        // SAFETY: every thread of the block reaches these barriers (the caller's contract); the
        // first orders the previous check's loads of the cell before thread 0's stores.
        unsafe { crate::raw::barrier_sync() };
        if rank == 0 {
            for (i, a) in args.iter().enumerate() {
                cell.store(i, *a);
            }
        }
        // SAFETY: as above.
        unsafe { crate::raw::barrier_sync() };
        let differs = args.iter().enumerate().any(|(i, a)| cell.load(i) != *a);
        // SAFETY: as above.
        let any = unsafe { crate::raw::barrier_sync_or(differs) };
        if differs {
            crate::panic::fail_check(
                crate::panic::CheckKind::AsyncBarrierMisuse,
                op,
                10,
                rank,
                core::panic::Location::caller(),
                None,
            );
        }
        if any {
            // Another thread's check fails and ends the launch; this one waits for that rather
            // than issuing a copy the others disagree on.
            loop {
                crate::raw::nanosleep(1000);
            }
        }
    }
    #[cfg(not(any(all(cohort_checked, target_arch = "nvptx64"), not(target_arch = "nvptx64"))))]
    let _ = (op, args);
}

#[cfg(any(all(cohort_checked, target_arch = "nvptx64"), not(target_arch = "nvptx64")))]
crate::shared! {
    /// Each warp's call for the warpgroup check (one word per warp of a block of up to 1024
    /// threads).
    static WARPGROUP_SITES: [u64; 32];
}

/// Checks (in checked mode on a GPU, and always on the CPU device) that the four warps of this
/// thread's warpgroup (threads `128 g .. 128 g + 128` of the block) are all at this call of
/// `op`, converged: a warp at another call ends the launch with
/// [`CheckKind::WgmmaMisuse`](crate::panic::CheckKind::WgmmaMisuse) code 5. Every thread of
/// the warpgroup must call it (it is made of named barriers `15 - g` for 128 threads); a warp
/// that never comes hangs it on a GPU (the CPU device reports the deadlock). Without checked
/// mode on a GPU it is empty.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn warpgroup(op: &'static str) {
    #[cfg(any(all(cohort_checked, target_arch = "nvptx64"), not(target_arch = "nvptx64")))]
    {
        // Each warp converged at one call first (warp-level check; the CPU device checks this
        // at the warp collectives of the instructions themselves).
        warp(op, u32::MAX);
        let rank = crate::thread::thread_rank_in_block();
        let (warp_no, lane) = (rank / 32, rank % 32);
        let group = warp_no / 4;
        let id = 15 - group % 8;
        // SAFETY: the 128 threads of this warpgroup reach the three barriers of this check
        // (the caller's contract: a warpgroup collective), from whichever call they are at (the
        // non-aligned form allows different instructions).
        unsafe { crate::raw::barrier_sync_named(id, 128) };
        #[cfg(target_arch = "nvptx64")]
        let call = u64::from(crate::raw::site_marker());
        #[cfg(not(target_arch = "nvptx64"))]
        let call = core::panic::Location::caller() as *const core::panic::Location<'static> as u64;
        let sites = WARPGROUP_SITES.get();
        if lane == 0 {
            sites.store(warp_no as usize % 32, call);
        }
        // SAFETY: as above.
        unsafe { crate::raw::barrier_sync_named(id, 128) };
        let first = (4 * group) as usize % 32;
        let differs = (0..4).find(|&w| sites.load(first + w) != call);
        // SAFETY: as above: no warp stores its next call before all four compared.
        unsafe { crate::raw::barrier_sync_named(id, 128) };
        if let Some(w) = differs {
            crate::panic::fail_check(
                crate::panic::CheckKind::WgmmaMisuse,
                op,
                5,
                w as u32,
                core::panic::Location::caller(),
                None,
            );
        }
    }
    #[cfg(not(any(all(cohort_checked, target_arch = "nvptx64"), not(target_arch = "nvptx64"))))]
    let _ = op;
}

/// How long a checked wait (a grid sync for the other blocks, a phase change for the block's
/// threads) lasts before it reports them missing.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
pub(crate) const WAIT_TIMEOUT_NS: u64 = 5_000_000_000;

/// For a grid sync's spin loop: ends the kernel with a grid check failure when `start_ns`
/// (a `%globaltimer` reading) is more than [`WAIT_TIMEOUT_NS`] ago.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) fn grid_waited(start_ns: u64, blocks: u32, op: &'static str, loc: &'static Location<'static>) {
    let now = crate::raw::globaltimer();
    if now.wrapping_sub(start_ns) > WAIT_TIMEOUT_NS {
        let ms = (now.wrapping_sub(start_ns) / 1_000_000) as u32;
        crate::panic::fail_check(crate::panic::CheckKind::Grid, op, ms, blocks, loc, None);
    }
}

/// For a cluster kernel's exit: ends the kernel when the block's last thread has waited more
/// than [`WAIT_TIMEOUT_NS`] since `start_ns` for the other blocks of its cluster of `blocks` to
/// leave their bodies.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) fn cluster_waited(start_ns: u64, blocks: u32, loc: &'static Location<'static>) {
    let now = crate::raw::globaltimer();
    if now.wrapping_sub(start_ns) > WAIT_TIMEOUT_NS {
        let ms = (now.wrapping_sub(start_ns) / 1_000_000) as u32;
        crate::panic::fail_check(crate::panic::CheckKind::ClusterExit, "cluster exit", ms, blocks, loc, None);
    }
}

/// For a phase change's wait for the block's threads: ends the kernel when `start_ns` is more
/// than [`WAIT_TIMEOUT_NS`] ago (a thread of the block is elsewhere: at a barrier of its own,
/// or exited).
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) fn phase_waited(start_ns: u64, op: &'static str, loc: &'static Location<'static>) {
    let now = crate::raw::globaltimer();
    if now.wrapping_sub(start_ns) > WAIT_TIMEOUT_NS {
        let ms = (now.wrapping_sub(start_ns) / 1_000_000) as u32;
        let threads = crate::thread::block_size();
        crate::panic::fail_check(crate::panic::CheckKind::PhaseBlock, op, ms, threads, loc, None);
    }
}

/// For an asynchronous barrier's wait: ends the kernel when `start_ns` is more than
/// [`WAIT_TIMEOUT_NS`] ago (a thread did not arrive, or announced bytes never landed).
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) fn async_barrier_waited(start_ns: u64, phase: u32, op: &'static str, loc: &'static Location<'static>) {
    let now = crate::raw::globaltimer();
    if now.wrapping_sub(start_ns) > WAIT_TIMEOUT_NS {
        let ms = (now.wrapping_sub(start_ns) / 1_000_000) as u32;
        crate::panic::fail_check(crate::panic::CheckKind::AsyncBarrier, op, ms, phase, loc, None);
    }
}

/// Checked mode's comparison of grid-sync calls across blocks.
///
/// Block 0's thread 0 publishes, before it arrives at a grid barrier, its call's number and
/// location in a slot of a module global, chosen by the barrier word's address and the
/// parity of the barrier's generation (bit 31 of the word, which only the last arrival of a
/// generation flips, so every arriving block sees the same). Every other block's thread 0
/// reads the slot once the barrier completes and compares. Two slots per word suffice: block 0
/// writes the slot of generation *g* again only at *g* + 2, which it reaches only after every
/// block arrived at *g* + 1, after its comparison of *g*.
///
/// The slots are shared by every launch of the module (concurrent cooperative launches on
/// other streams) and by every barrier word (the driver's workspace, each `GridVec`'s): a
/// slot is a seqlock (writers take it with a CAS, readers retry nothing) that holds the word's
/// address, and a reader that finds another word's record, or a write in progress, skips the
/// comparison. So a collision can only hide a divergence, never report one that isn't.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
pub(crate) mod grid_sites {
    use core::panic::Location;
    use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

    use crate::atomic::{AtomicU32, AtomicU64};

    /// One published grid-sync call.
    pub(crate) struct Slot {
        /// Even: stable; odd: a write is in progress.
        seq: AtomicU32,
        /// The barrier word's address.
        word: AtomicU64,
        /// The call's number.
        call: AtomicU64,
        /// The call's `&'static Location`, as an address.
        loc: AtomicU64,
    }

    const SLOTS: usize = 16;

    #[allow(clippy::declare_interior_mutable_const)]
    // SAFETY: a device `static` is `.global` memory, the space of these atomics.
    const EMPTY: Slot = unsafe {
        Slot { seq: AtomicU32::new(0), word: AtomicU64::new(0), call: AtomicU64::new(0), loc: AtomicU64::new(0) }
    };

    /// The slots (a module global, zero at load).
    static SITES: [Slot; SLOTS] = [EMPTY; SLOTS];

    /// The slot of generation `parity` of the barrier on `word`: a hash of the address (from
    /// its high product bits: words are 4-byte aligned, vectors' words further) and the parity.
    #[inline(always)]
    fn slot(word: u64, parity: u32) -> &'static Slot {
        let h = (word.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize;
        &SITES[(2 * h + (parity & 1) as usize) % SLOTS]
    }

    /// Block 0, before it arrives at generation `parity` of the barrier on `word`: publishes
    /// its call.
    #[inline(never)]
    pub(crate) fn publish(word: u64, parity: u32, call: u32, loc: &'static Location<'static>) {
        let s = slot(word, parity);
        // Another launch (or another word of this one) may be writing this slot: take it. A
        // writer holds it for four stores, without waiting for anything.
        let seq = loop {
            let seq = s.seq.load(Relaxed);
            if seq & 1 == 0 && s.seq.compare_exchange(seq, seq | 1, Acquire, Relaxed).is_ok() {
                break seq;
            }
            crate::raw::nanosleep(100);
        };
        s.word.store(word, Relaxed);
        s.call.store(u64::from(call), Relaxed);
        s.loc.store(loc as *const Location<'static> as u64, Relaxed);
        s.seq.store(seq.wrapping_add(2), Release);
    }

    /// Another block, after generation `parity` of the barrier on `word` completed: block 0's
    /// call there, if the slot still holds it.
    #[inline(never)]
    pub(crate) fn read(word: u64, parity: u32) -> Option<(u32, &'static Location<'static>)> {
        let s = slot(word, parity);
        let seq = s.seq.load(Acquire);
        if seq & 1 != 0 {
            return None;
        }
        let (w, call, loc) = (s.word.load(Relaxed), s.call.load(Relaxed), s.loc.load(Relaxed));
        crate::raw::fence_acq_rel_gpu();
        if s.seq.load(Relaxed) != seq || w != word || loc == 0 {
            return None;
        }
        // SAFETY: block 0 stored the address of its `&'static Location` (a constant of this
        // module) under this sequence number, which has not changed since.
        Some((call as u32, unsafe { &*(loc as *const Location<'static>) }))
    }
}

/// Ends the kernel with a split-barrier misuse report ([`cg::split`](crate::cg::split)'s
/// checks; `code` as [`CheckKind::SplitMisuse`](crate::panic::CheckKind::SplitMisuse)
/// documents, `group` 0 the block's, 1 the grid's). Here, among the checks, so that a kernel's
/// checked-mode code calls only `check` functions (`tests/ptx`).
#[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
#[cold]
#[inline(never)]
pub(crate) fn split_misuse(op: &'static str, code: u32, group: u32, loc: &'static core::panic::Location<'static>) -> ! {
    crate::panic::fail_check(crate::panic::CheckKind::SplitMisuse, op, code, group, loc, None)
}

/// The pending bits of the block's and the grid's split barriers ([`cg::split`](crate::cg::split)):
/// a bit per thread and group, set by an arrival and cleared by its wait, in checked mode on a
/// GPU (shared memory) and always on the CPU device. Here, below the groups, so that the
/// block's collectives (`sync`) and the grid's `sync()` can ask it without importing `cg`.
pub(crate) mod split_state {
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    use core::panic::Location;

    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    use crate::raw;

    /// The block's pending group.
    pub(crate) const BLOCK: u32 = 0;
    /// The grid's pending group.
    pub(crate) const GRID: u32 = 1;

    /// Checked mode's pending bits (a `.shared` array of 64 words): thread `t` of the block has bit
    /// `t % 32` of word `t / 32` for its block arrival and of word `32 + t / 32` for its grid
    /// arrival. Each thread touches only its own two bits (atomically, so neighbours' updates of a
    /// word never collide), and clears them at kernel entry ([`__thread_enter`](crate::cg::split::__thread_enter)). Declared by hand,
    /// not with `shared!`, so that its address is taken afresh at each use (see [`pending_word`]).
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    const SPLIT_PENDING_ID: u64 = crate::shared::__id("cohort::cg::split::SPLIT_PENDING");
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    crate::__raw_ptx_var!(shared_decl SPLIT_PENDING, SPLIT_PENDING_ID, 16, 256);

    /// This thread's word of the pending bits for `group`, and its bit. The thread's rank and the
    /// array's address are taken afresh here: held from the entry's clearing to the exit's check
    /// (or hoisted out of a loop of barriers) they would cost registers for the whole kernel, and
    /// spill in kernels that use every register (`tests/ptx`).
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    #[inline(always)]
    fn pending_word(group: u32) -> (&'static crate::atomic::Atomic<u32, crate::atomic::Shared>, u32) {
        let t = raw::thread_rank_fresh();
        let base = crate::__raw_ptx_var!(shared_addr_fresh SPLIT_PENDING, SPLIT_PENDING_ID);
        let word = base + 4 * (group * 32 + (t / 32) % 32);
        let generic = crate::shared::generic_from_shared(word);
        // SAFETY: a word of the 64-word `.shared` array declared above (group < 2, (t / 32) % 32 <
        // 32), valid for the whole kernel; `Atomic` only touches it with atomic instructions.
        (unsafe { crate::atomic::Atomic::from_ptr(generic as *mut u32) }, 1 << (t % 32))
    }

    /// The CPU device's pending bit of `group`.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    fn cpu_bit(group: u32) -> u8 {
        if group == BLOCK { cohort_cpu::SPLIT_BLOCK } else { cohort_cpu::SPLIT_GRID }
    }

    /// Whether this thread has a split arrival of `group` it has not waited for (tracked in
    /// checked mode and on the CPU device only).
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) fn pending(group: u32) -> bool {
        #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
        {
            let (word, bit) = pending_word(group);
            // Only this thread changes its bit: a relaxed load sees its own last update.
            word.load(crate::atomic::Ordering::Relaxed) & bit != 0
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            cohort_cpu::split_pending(cpu_bit(group))
        }
    }

    /// Sets or clears this thread's pending bit of `group` (nothing where nothing is tracked).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub(crate) fn set_pending(group: u32, on: bool) {
        #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
        {
            let (a, bit) = pending_word(group);
            if on {
                a.fetch_or(bit, crate::atomic::Ordering::Relaxed);
            } else {
                a.fetch_and(!bit, crate::atomic::Ordering::Relaxed);
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        cohort_cpu::set_split_pending(cpu_bit(group), on);
        #[cfg(all(not(cohort_checked), target_arch = "nvptx64"))]
        let _ = (group, on);
    }

    /// Ends the kernel with a split-barrier misuse report: `code` as
    /// [`CheckKind::SplitMisuse`](crate::panic::CheckKind::SplitMisuse) documents, `group` 0 the
    /// block's, 1 the grid's.
    #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
    #[inline(always)]
    pub(crate) fn misuse(op: &'static str, code: u32, group: u32, loc: &'static Location<'static>) -> ! {
        super::split_misuse(op, code, group, loc)
    }

    /// A new arrival of `group` by this thread: a report if one is pending (checked mode, the CPU
    /// device), then its pending bit.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn arrive(group: u32, op: &'static str) {
        #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
        if pending(group) {
            misuse(op, 1, group, Location::caller());
        }
        set_pending(group, true);
        let _ = op;
    }

    /// Before a block barrier of the block's own collectives (`sync_threads*`, block `reduce` and
    /// scans): a report when this thread's block split arrival is not waited for yet (the CPU
    /// device only).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn block_barrier_allowed(op: &'static str) {
        // Not on a GPU, even in checked mode: there the block's split waits use a barrier of their
        // own (id 14), so a collective inside the window pairs with nothing of the split barrier
        // and is harmless; and checking here, in every `sync_threads()` of checked mode, costs
        // registers in the tightest loops (the Ampere GEMM spilled). The CPU device reports it: CUDA
        // leaves it undefined, and code meant to stay portable to CUDA C++ must not rely on it.
        #[cfg(not(target_arch = "nvptx64"))]
        if pending(BLOCK) {
            misuse(op, 2, BLOCK, Location::caller());
        }
        let _ = op;
    }

    /// Before `grid.sync()`: a report when this thread's grid split arrival is not waited for yet
    /// (checked mode, the CPU device).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub(crate) fn grid_sync_allowed(op: &'static str) {
        #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
        if pending(GRID) {
            misuse(op, 5, GRID, Location::caller());
        }
        let _ = op;
    }
}
