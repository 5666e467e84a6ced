//! `reduce_update_async` and `reduce_store_async` (CUDA's `cooperative_groups/details/reduce.h`,
//! "asynchronous reduce").
//!
//! In CUDA the `*_async` variants reduce over the group and have **one** participating thread
//! update or store the result instead of returning it to every thread; nothing waits for that
//! write, so other threads see it only after a later synchronization of the group (or of a
//! larger group). "Async" is about *who* writes and *when the others may look*, not a copy
//! engine: the reduction itself is the usual collective.
//!
//! What safe Rust must guarantee is that the one write is not a data race:
//! * **atomic destination** ([`Atomic<T, S>`], CUDA's `cuda::atomic_ref`): any thread may touch
//!   it at any time; rank 0 updates it with one atomic read-modify-write
//!   ([`reduce_update_async`]: `fetch_add`/`fetch_min`/`fetch_max`/`fetch_and`/`fetch_or`/
//!   `fetch_xor` for the matching op on integers, `fetch_add` on floats, a compare-and-swap
//!   loop for other ops) or one relaxed store ([`reduce_store_async`] on `&Atomic`).
//! * **plain destination** (CUDA's `TyArg* ptr`): the writer must own it. In Cohort a plain
//!   destination is an `Option<&mut T>`: `Some` in the members that own an output element (for a
//!   tile's output, its leader: `tile.leader_index()` with a
//!   [`DisjointSlice`](crate::slice::DisjointSlice) of [`PerTile`](crate::thread::PerTile)
//!   elements), `None` elsewhere; every `Some` receives the group's result. Exclusivity is the
//!   borrow checker's: no other thread can read the element while the `&mut` lives, so there is
//!   nothing to synchronize, and a member without one cannot write.
//!
//! Groups: every [`Collective`] (tiles, large tiles, coalesced groups, and — Cohort's
//! extension, as for [`reduce`](super::reduce) — the thread block). They are collectives: every
//! member calls them at the same site (the [convergence rule](crate::cg#convergence)), checked
//! as `reduce` is.

use super::{AtomicKind, Collective, ReduceOp};
use crate::DeviceCopy;
use crate::atomic::{Atomic, Ordering, Space};

/// Values whose [`Atomic`] the async reductions can update: `u32`, `i32`, `u64`, `i64`, `f32`,
/// `f64`.
pub trait AtomicReduce: DeviceCopy + sealed::Sealed {
    /// `a = op(a, v)` atomically, relaxed, at the atomic's default scope.
    #[doc(hidden)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn update_on<S: Space, Op: ReduceOp<Self>>(a: &Atomic<Self, S>, v: Self, op: Op);
    /// `a = v`, relaxed.
    #[doc(hidden)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn store_on<S: Space>(a: &Atomic<Self, S>, v: Self);
}

mod sealed {
    pub trait Sealed {}
}

/// `a = op(a, v)` by a compare-and-swap loop.
macro_rules! cas_update {
    ($a:expr, $v:expr, $op:expr) => {{
        let (a, v, op) = ($a, $v, $op);
        let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| Some(op.combine(old, v)));
    }};
}

macro_rules! atomic_reduce_int {
    ($($t:ty)*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicReduce for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn update_on<S: Space, Op: ReduceOp<Self>>(a: &Atomic<$t, S>, v: $t, op: Op) {
                match op.atomic_kind() {
                    AtomicKind::Add => { a.fetch_add(v, Ordering::Relaxed); }
                    AtomicKind::Min => { a.fetch_min(v, Ordering::Relaxed); }
                    AtomicKind::Max => { a.fetch_max(v, Ordering::Relaxed); }
                    AtomicKind::And => { a.fetch_and(v, Ordering::Relaxed); }
                    AtomicKind::Or => { a.fetch_or(v, Ordering::Relaxed); }
                    AtomicKind::Xor => { a.fetch_xor(v, Ordering::Relaxed); }
                    AtomicKind::Other => cas_update!(a, v, op),
                }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn store_on<S: Space>(a: &Atomic<$t, S>, v: $t) {
                a.store(v, Ordering::Relaxed)
            }
        }
    )*};
}
atomic_reduce_int!(u32 i32 u64 i64);

macro_rules! atomic_reduce_float {
    ($($t:ty)*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicReduce for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn update_on<S: Space, Op: ReduceOp<Self>>(a: &Atomic<$t, S>, v: $t, op: Op) {
                // `less`/`greater` on floats keep the op's own NaN rule (the CAS loop applies
                // it), which the atomics' `fetch_min`/`fetch_max` (IEEE minNum) do not share.
                match op.atomic_kind() {
                    AtomicKind::Add => { a.fetch_add(v, Ordering::Relaxed); }
                    _ => cas_update!(a, v, op),
                }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn store_on<S: Space>(a: &Atomic<$t, S>, v: $t) {
                a.store(v, Ordering::Relaxed)
            }
        }
    )*};
}
atomic_reduce_float!(f32 f64);

/// `cg::reduce_update_async(group, atomic, value, op)`: combines every member's `value` with
/// `op`, and the member of rank 0 applies the result to `dst` with one atomic
/// read-modify-write of the same op (`dst = dst op result`). Nothing is returned; other threads
/// see the update through the atomic (after a synchronization of the group, every member sees
/// it). A collective (the [convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn reduce_update_async<G: Collective, T: AtomicReduce, S: Space, Op: ReduceOp<T>>(
    group: &G,
    dst: &Atomic<T, S>,
    value: T,
    op: Op,
) {
    let r = group.reduce_with(value, op);
    if group.thread_rank().into() == 0 {
        T::update_on(dst, r, op);
    }
}

/// Where [`reduce_store_async`] may store: an [`Atomic`] (rank 0 stores, relaxed) or an
/// `Option<&mut T>` (every member holding `Some` stores into its own element).
pub trait StoreTarget<T>: sealed_target::Sealed {
    /// Stores the group's result `r`; `leader` is whether this member has rank 0.
    #[doc(hidden)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn store_result(self, r: T, leader: bool);
}

mod sealed_target {
    pub trait Sealed {}
}

impl<T: AtomicReduce, S: Space> sealed_target::Sealed for &Atomic<T, S> {}
impl<T: AtomicReduce, S: Space> StoreTarget<T> for &Atomic<T, S> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn store_result(self, r: T, leader: bool) {
        if leader {
            T::store_on(self, r);
        }
    }
}

impl<T> sealed_target::Sealed for Option<&mut T> {}
impl<T> StoreTarget<T> for Option<&mut T> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn store_result(self, r: T, _leader: bool) {
        if let Some(d) = self {
            *d = r;
        }
    }
}

/// `cg::reduce_store_async(group, dst, value, op)`: combines every member's `value` with `op`
/// and stores the result into `dst` instead of returning it: through an `&Atomic` by the member
/// of rank 0 (a relaxed store), or through an `Option<&mut T>` by each member that holds
/// `Some` (the owner of the destination, which its `&mut` proves). A collective (the
/// [convergence rule](crate::cg#convergence)).
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn reduce_store_async<G: Collective, T: DeviceCopy, D: StoreTarget<T>, Op: ReduceOp<T>>(
    group: &G,
    dst: D,
    value: T,
    op: Op,
) {
    let r = group.reduce_with(value, op);
    dst.store_result(r, group.thread_rank().into() == 0);
}
