//! Checked mode: collectives reached by only part of their group become errors.
//!
//! CUDA leaves a collective that only part of its group reaches undefined (wrong values, or a
//! hang); see the convergence rule in [`crate::cg`]. Built with `--cfg cohort_checked` (what
//! `cohort_build` does by default for debug builds, or with `COHORT_CHECKED=1`), every
//! collective first checks that exactly its group is at **one call site**, and otherwise ends the
//! kernel with an `Err` on the host that names the collective, the call site and the threads
//! present:
//!
//! | scope | how it checks | cost (checked mode only) |
//! |---|---|---|
//! | tile ≤ 32, coalesced group | `bar.warp.sync` on the group's mask (on sm_70+ members may arrive from different instructions), then `match.any.sync` of a hash of the call site: every member must hold the same | 2 warp instructions + a hash |
//! | block (`sync_threads*`, block `reduce`/scans) | a barrier, thread 0 publishes its call site in shared memory, a barrier, `barrier.red.or` of "mine differs" | 3 block barriers |
//! | grid (`grid.sync()`) | the wait for the other blocks is bounded (5 s by `%globaltimer`) | a timer read per spin |
//!
//! Without `cohort_checked` every function here is empty and inlined away: release kernels
//! are unchanged. Not checked: large tiles (64–512, named barriers), and a member that exited
//! instead of reaching the collective (it can hang the check, as it hangs the collective).

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

/// Checks that every lane of `mask` is at this call of `op` (warp-level groups).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn warp(op: &'static str, mask: u32) {
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    warp_at(op, mask, Location::caller());
    let _ = (op, mask);
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(never)]
fn warp_at(op: &'static str, mask: u32, loc: &'static Location<'static>) {
    // SAFETY: the calling lane is in `mask` (every group's mask holds its members); on sm_70+
    // the lanes of `mask` may reach this warp barrier from different instructions, which is
    // exactly the case being checked.
    unsafe { crate::raw::bar_warp_sync(mask) };
    // SAFETY: every lane of `mask` is past the warp barrier above and executes this.
    let same = unsafe { crate::raw::match_any_sync_b64(mask, site(loc)) };
    if same != mask {
        crate::panic::fail_check(crate::panic::CheckKind::Warp, op, mask, same, loc);
    }
}

/// Checks that every thread of the block is at this call of `op` (block-level collectives).
/// Every thread of the block must call it (it is made of block barriers).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub(crate) fn block(op: &'static str) {
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    block_at(op, Location::caller());
    let _ = op;
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
crate::shared! {
    /// The call site of thread 0 of the block, for the block check.
    static BLOCK_SITE: [u64; 1];
}

#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(never)]
fn block_at(op: &'static str, loc: &'static Location<'static>) {
    let me = site(loc);
    let cell = BLOCK_SITE.get();
    // SAFETY: every thread of the block reaches this and the next two barriers, from whichever
    // collective it is at: the non-aligned forms allow different instructions.
    unsafe { crate::raw::barrier_sync() };
    let rank = crate::thread::thread_rank_in_block();
    if rank == 0 {
        cell.store(0, me);
    }
    // SAFETY: as above.
    unsafe { crate::raw::barrier_sync() };
    let differs = cell.load(0) != me;
    // SAFETY: as above.
    let any = unsafe { crate::raw::barrier_sync_or(differs) };
    if differs {
        crate::panic::fail_check(crate::panic::CheckKind::Block, op, rank, 0, loc);
    }
    if any {
        // Another thread's check fails and traps the launch; this one waits for that rather
        // than entering a collective the others never reach.
        loop {
            crate::raw::nanosleep(1000);
        }
    }
}

/// How long a checked grid sync waits for the other blocks before it reports them missing.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
pub(crate) const GRID_SYNC_TIMEOUT_NS: u64 = 5_000_000_000;

/// For a grid sync's spin loop: ends the kernel with a grid check failure when `start_ns`
/// (a `%globaltimer` reading) is more than [`GRID_SYNC_TIMEOUT_NS`] ago.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) fn grid_waited(start_ns: u64, blocks: u32, op: &'static str, loc: &'static Location<'static>) {
    let now = crate::raw::globaltimer();
    if now.wrapping_sub(start_ns) > GRID_SYNC_TIMEOUT_NS {
        let ms = (now.wrapping_sub(start_ns) / 1_000_000) as u32;
        crate::panic::fail_check(crate::panic::CheckKind::Grid, op, ms, blocks, loc);
    }
}
