//! The device operations a CUDA thread calls: barriers, warp collectives, grid sync.
//!
//! Each takes its call site through `#[track_caller]` (wrap them in `#[track_caller]`
//! functions to pass a user's site through). Each must be called from a kernel running in a
//! [`Mode::Threads`](crate::Mode::Threads) launch; anywhere else it ends the launch with
//! [`CpuError::Misuse`](crate::CpuError::Misuse) (or panics outside any launch).

use core::any::TypeId;
use core::mem::MaybeUninit;
use core::panic::Location;

use crate::ctx::{self, block_on, current, take_token};
use crate::sched::{Kind, Red, ReduxOp, ShflMode, Wait, WarpOp};

#[inline]
#[track_caller]
fn bar(op: &'static str, id: u32, count: u32, red: Red, pred: bool) -> u64 {
    block_on(Wait { op, site: Location::caller(), token: take_token(), kind: Kind::Bar { id, count, red, pred } })
}

/// A whole-block barrier on id `id` (no thread count): every thread of the block at this call,
/// as [`sync_threads`] (which is id 0).
#[inline]
#[track_caller]
pub(crate) fn bar_at(op: &'static str, id: u32) {
    bar(op, id, 0, Red::None, false);
}

/// `__syncthreads()` (`barrier.sync 0`): waits until every thread of the block is at this call.
/// Threads at different `sync_threads` calls, or a thread that exited while others wait, end
/// the launch with an error naming the sites.
#[track_caller]
pub fn sync_threads() {
    bar("sync_threads", 0, 0, Red::None, false);
}

/// `__syncthreads_count(pred)`: a block barrier returning how many threads passed `true`.
#[must_use]
#[track_caller]
pub fn sync_threads_count(pred: bool) -> u32 {
    bar("sync_threads_count", 0, 0, Red::Popc, pred) as u32
}

/// `__syncthreads_and(pred)`: a block barrier returning whether every thread passed `true`.
#[must_use]
#[track_caller]
pub fn sync_threads_and(pred: bool) -> bool {
    bar("sync_threads_and", 0, 0, Red::And, pred) != 0
}

/// `__syncthreads_or(pred)`: a block barrier returning whether any thread passed `true`.
#[must_use]
#[track_caller]
pub fn sync_threads_or(pred: bool) -> bool {
    bar("sync_threads_or", 0, 0, Red::Or, pred) != 0
}

/// `barrier.sync id, count`: named barrier `id` (0..16) completes when `count` threads have
/// arrived (0: every thread of the block), from any call sites. Arrivals beyond `count` wait
/// for the barrier's next use.
#[track_caller]
pub fn barrier_named(id: u32, count: u32) {
    let site = Location::caller();
    if id >= 16 {
        ctx::misuse("barrier_named", site, format!("barrier id {id} is not below 16"));
    }
    let count = if count == 0 { current().bdim.volume() as u32 } else { count };
    bar("barrier_named", id, count, Red::None, false);
}

/// `__syncwarp(mask)` (`bar.warp.sync`): the lanes of `mask` wait for each other; they may
/// arrive from different call sites (as on sm_70+). The calling lane must be in `mask`.
#[track_caller]
pub fn sync_warp(mask: u32) {
    warp("sync_warp", mask, WarpOp::Sync, 0);
}

/// `grid.sync()`: waits until every thread of every block of the (cooperative) launch is at
/// this call. In a launch that is not cooperative it ends the launch with an error.
#[track_caller]
pub fn grid_sync() {
    let site = Location::caller();
    if !current().cooperative {
        ctx::misuse("grid_sync", site, "grid sync in a launch that is not cooperative".into());
    }
    block_on(Wait { op: "grid_sync", site, token: take_token(), kind: Kind::Grid });
}

/// A pause in a spin-wait (the host arm of `nanosleep` and of spin loops): lets the other
/// threads of the block run before this one goes on. Threads of a block take turns only at
/// barriers, collectives and here, so a loop that waits for another thread of its block must
/// call this (or a collective) each time round. In a fast-path launch it yields the OS thread.
/// A block that moves only through spinning threads for longer than
/// [`LaunchSpec::spin_limit`](crate::LaunchSpec::spin_limit) ends the launch with
/// [`CpuError::SpinTimeout`](crate::CpuError::SpinTimeout).
#[track_caller]
pub fn yield_now() {
    if current().yielder.is_null() {
        std::thread::yield_now();
        return;
    }
    block_on(Wait { op: "yield_now", site: Location::caller(), token: take_token(), kind: Kind::Yield });
}

#[inline]
#[track_caller]
fn warp(op: &'static str, mask: u32, wop: WarpOp, word: u64) -> u64 {
    block_on(Wait {
        op,
        site: Location::caller(),
        token: take_token(),
        kind: Kind::Warp { mask, op: wop, word, b: 0, c: 0, src: core::ptr::null(), dst: core::ptr::null_mut() },
    })
}

/// The `c` operand of `shfl.sync` for segments of `width` lanes (a power of two ≤ 32): clamp
/// 0 for [`ShflMode::Up`], 31 for the other modes, as CUDA's `__shfl*_sync` build it.
#[must_use]
pub const fn shfl_c(width: u32, up: bool) -> u32 {
    ((32 - width) << 8) | if up { 0 } else { 0x1f }
}

/// `shfl.sync.{mode}` of a whole value of any `Copy` type (moved by its bytes, so a type may
/// be of any size): every lane of `mask` must make this same call with the same `mask` and `T`.
/// `b` and `c` are PTX's operands (source lane or offset, and the packed clamp/segment value
/// of [`shfl_c`]). A lane whose source is outside its segment or past the clamp gets its own
/// `v`; a source lane outside `mask` is an error (a GPU returns an undefined value).
#[must_use]
#[track_caller]
pub fn shfl<T: Copy + 'static>(mode: ShflMode, mask: u32, v: T, b: u32, c: u32) -> T {
    let op = match mode {
        ShflMode::Idx => "shfl_idx",
        ShflMode::Up => "shfl_up",
        ShflMode::Down => "shfl_down",
        ShflMode::Bfly => "shfl_xor",
    };
    let mut out = MaybeUninit::<T>::uninit();
    block_on(Wait {
        op,
        site: Location::caller(),
        token: take_token(),
        kind: Kind::Warp {
            mask,
            op: WarpOp::Shfl(mode, TypeId::of::<T>(), size_of::<T>()),
            word: 0,
            b,
            c,
            src: (&raw const v).cast(),
            dst: out.as_mut_ptr().cast(),
        },
    });
    // SAFETY: `block_on` returned, so the scheduler completed this shuffle: it copied the
    // `size_of::<T>()` bytes of a `T` (this lane's `v` or another lane's, which the group
    // matched to the same `TypeId`) into `out`.
    unsafe { out.assume_init() }
}

/// A warp-wide all-gather: every lane of `mask` makes this same call with the same `mask` and
/// `T`, and receives every lane's `v`, lane *j*'s at index *j* (a lane outside `mask` leaves
/// the caller's own `v` in its slot). `op` names the instruction in errors (a divergent
/// `"mma_sync"`). The CPU device runs warp-wide instructions (`mma.sync`, `ldmatrix`) with it:
/// each lane gathers the whole warp's operands, computes, and keeps its own part.
#[must_use]
#[track_caller]
pub fn warp_gather<T: Copy + 'static>(op: &'static str, mask: u32, v: T) -> [T; 32] {
    let mut out = [v; 32];
    block_on(Wait {
        op,
        site: Location::caller(),
        token: take_token(),
        kind: Kind::Warp {
            mask,
            op: WarpOp::Gather(TypeId::of::<T>(), size_of::<T>()),
            word: 0,
            b: 0,
            c: 0,
            src: (&raw const v).cast(),
            dst: out.as_mut_ptr().cast(),
        },
    });
    out
}

/// `__shfl_sync(mask, v, src, width)`.
#[must_use]
#[track_caller]
pub fn shfl_idx<T: Copy + 'static>(mask: u32, v: T, src: u32, width: u32) -> T {
    shfl(ShflMode::Idx, mask, v, src, shfl_c(width, false))
}

/// `__shfl_up_sync(mask, v, delta, width)`.
#[must_use]
#[track_caller]
pub fn shfl_up<T: Copy + 'static>(mask: u32, v: T, delta: u32, width: u32) -> T {
    shfl(ShflMode::Up, mask, v, delta, shfl_c(width, true))
}

/// `__shfl_down_sync(mask, v, delta, width)`.
#[must_use]
#[track_caller]
pub fn shfl_down<T: Copy + 'static>(mask: u32, v: T, delta: u32, width: u32) -> T {
    shfl(ShflMode::Down, mask, v, delta, shfl_c(width, false))
}

/// `__shfl_xor_sync(mask, v, lane_mask, width)`.
#[must_use]
#[track_caller]
pub fn shfl_xor<T: Copy + 'static>(mask: u32, v: T, lane_mask: u32, width: u32) -> T {
    shfl(ShflMode::Bfly, mask, v, lane_mask, shfl_c(width, false))
}

/// `__all_sync(mask, pred)`.
#[must_use]
#[track_caller]
pub fn vote_all(mask: u32, pred: bool) -> bool {
    warp("vote_all", mask, WarpOp::VoteAll, u64::from(pred)) != 0
}

/// `__any_sync(mask, pred)`.
#[must_use]
#[track_caller]
pub fn vote_any(mask: u32, pred: bool) -> bool {
    warp("vote_any", mask, WarpOp::VoteAny, u64::from(pred)) != 0
}

/// `__uni_sync(mask, pred)`: whether `pred` is the same in every lane of `mask`.
#[must_use]
#[track_caller]
pub fn vote_uni(mask: u32, pred: bool) -> bool {
    warp("vote_uni", mask, WarpOp::VoteUni, u64::from(pred)) != 0
}

/// `__ballot_sync(mask, pred)`: bit *i* set when lane *i* is in `mask` and passed `true`.
#[must_use]
#[track_caller]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    warp("ballot", mask, WarpOp::Ballot, u64::from(pred)) as u32
}

/// `__match_any_sync(mask, v)` on 32-bit values: the lanes of `mask` whose `v` equals ours.
#[must_use]
#[track_caller]
pub fn match_any_u32(mask: u32, v: u32) -> u32 {
    warp("match_any", mask, WarpOp::MatchAny(false), u64::from(v)) as u32
}

/// `__match_any_sync(mask, v)` on 64-bit values.
#[must_use]
#[track_caller]
pub fn match_any_u64(mask: u32, v: u64) -> u32 {
    warp("match_any", mask, WarpOp::MatchAny(true), v) as u32
}

/// `__match_all_sync(mask, v, &pred)` on 32-bit values: `(mask, true)` when every lane of
/// `mask` has the same `v`, else `(0, false)`.
#[must_use]
#[track_caller]
pub fn match_all_u32(mask: u32, v: u32) -> (u32, bool) {
    let r = warp("match_all", mask, WarpOp::MatchAll(false), u64::from(v));
    (r as u32, r >> 32 != 0)
}

/// `__match_all_sync(mask, v, &pred)` on 64-bit values.
#[must_use]
#[track_caller]
pub fn match_all_u64(mask: u32, v: u64) -> (u32, bool) {
    let r = warp("match_all", mask, WarpOp::MatchAll(true), v);
    (r as u32, r >> 32 != 0)
}

/// `redux.sync.{op}.u32` (`__reduce_{add,min,max,and,or,xor}_sync` on `unsigned`).
#[must_use]
#[track_caller]
pub fn redux_u32(op: ReduxOp, mask: u32, v: u32) -> u32 {
    warp("redux", mask, WarpOp::Redux(op, false), u64::from(v)) as u32
}

/// `redux.sync.{op}.s32` (`__reduce_{add,min,max}_sync` on `int`; and/or/xor act on the bits).
#[must_use]
#[track_caller]
pub fn redux_i32(op: ReduxOp, mask: u32, v: i32) -> i32 {
    warp("redux", mask, WarpOp::Redux(op, true), u64::from(v as u32)) as u32 as i32
}

/// `__activemask()`: the lanes of this warp at this same call once every lane of the warp has
/// run as far as it can (maximal convergence: see the crate docs). Never fails.
#[must_use]
#[track_caller]
pub fn activemask() -> u32 {
    block_on(Wait { op: "activemask", site: Location::caller(), token: take_token(), kind: Kind::Active }) as u32
}
