//! `cg::memcpy_async` with `cg::wait` / `cg::wait_prior`: a group copies global memory into
//! shared memory in the background with `cp.async` (sm_80+), using the widest form (16, 8 or
//! 4 bytes per instruction) the addresses and the length allow; below sm_80 the copy is done
//! synchronously and waiting only synchronizes the group.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `cg::memcpy_async(g, dst, src, bytes); cg::wait(g);` | `cg::memcpy_async(&g, &mut dst, src).wait(&g);` (`dst` is borrowed until the wait, usable after) |
//! | several batches, `cg::wait_prior<N>(g)` | [`AsyncCopies`]: `q.memcpy_async(..)` per batch, `q.wait(&g, copy)` |
//!
//! The destination handle is borrowed by the [`AsyncCopy`] and handed back by the wait, so the
//! data cannot be read through it while the copy engine still writes it.
//!
//! **State spaces.** `cp.async` reads *global* memory and writes *shared* memory, each given
//! as an address of that space. The destination is one by type: a [`SharedSlice`] is made
//! only from shared memory (`shared!` statics, [`dynamic`](crate::shared::dynamic)). The
//! source is a plain `&[T]`, which may be a kernel parameter, a `global!` variable or a
//! [`GridVec`](crate::cg::GridVec) view (global memory), but also a thread's own array
//! (local memory) or a `constant!` (constant memory), which `cp.async` would read as a global
//! address and fault on (`CUDA_ERROR_INVALID_ADDRESS_SPACE`, losing the context). So the
//! source is checked before any copy: `isspacep.global` on a GPU (a slice lies in one state
//! space), the CPU device's registry of global memory (its buffers and `global!` variables)
//! on the CPU device; outside global memory the call panics, naming `memcpy_async` and its
//! call site, which the runtime reports as the launch's `Err` (file:line, block, thread).

use super::ThreadGroup;
use crate::DeviceCopy;
use crate::raw;
use crate::shared::SharedSlice;

/// A copy in flight into shared memory, made by [`memcpy_async`] or
/// [`AsyncCopies::memcpy_async`]: it borrows the destination handle mutably until the copy is
/// waited for ([`wait`](AsyncCopy::wait) or [`AsyncCopies::wait`], which end the borrow), so the
/// data cannot be read through it while the copy engine still writes it.
///
/// Handles made again from the same shared memory (another `STATIC.get()`, a `sub` taken
/// before) are aliases that the borrow does not cover: reading through one before the wait is
/// a race like any unsynchronized shared-memory access (see [`crate::shared`](mod@crate::shared)).
///
/// Dropping it without a wait (`let _ = memcpy_async(…)`, `drop(copy)`) ends the borrow too, so
/// the drop waits for this thread's own part of the copy (`cp.async.wait_all`): what this
/// thread reads through the handle afterwards is what the copy wrote. It does not synchronize
/// the group, so the other members' parts are theirs until a barrier, as any shared-memory
/// store of theirs is. (`mem::forget` skips that wait, and reading afterwards races with the
/// copy engine as reading through an alias does.)
#[derive(Debug)]
#[must_use = "the copy is in flight until it is waited for; its destination is borrowed until then"]
pub struct AsyncCopy<'a, T> {
    /// The exclusive borrow of the caller's handle, for as long as the copy is in flight. (Not
    /// the `&mut` itself: holding it would make the handle addressable, i.e. put it in local
    /// memory; the borrow alone is what keeps the handle unusable.)
    _dst: core::marker::PhantomData<&'a mut SharedSlice<T>>,
    seq: u32,
    /// The [`AsyncCopies`] that started it (0: none).
    queue: u64,
}

impl<'a, T: DeviceCopy> AsyncCopy<'a, T> {
    /// Waits for every outstanding copy of this thread, synchronizes `group` (so each member
    /// sees every member's part), and ends the borrow of the destination (`cg::wait(group)`).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait<G: ThreadGroup>(self, group: &G) {
        // The wait below covers what the drop would wait for.
        core::mem::forget(self);
        wait_all_and_sync(group);
    }
}

impl<T> Drop for AsyncCopy<'_, T> {
    /// A copy dropped without a wait: this thread's part has landed before the borrow of the
    /// destination ends (see the type's docs).
    #[inline(always)]
    fn drop(&mut self) {
        wait_own();
    }
}

/// `cg::memcpy_async(group, dst, src, bytes)`: the members of `group` copy `src` into the first
/// `src.len()` elements of `dst`, splitting the work among themselves, in the background
/// (`cp.async`); the destination is reachable again through [`AsyncCopy::wait`]. Every member
/// must call this with the same arguments. For several copies in flight at once (pipelines,
/// CUDA's `wait_prior`), use [`AsyncCopies`].
///
/// # Panics
/// If `dst` is shorter than `src`, or if `src` is not in global memory (a kernel parameter, a
/// `global!` variable): a thread's local array or a `constant!` cannot be copied by
/// `cp.async` (see the module docs).
#[inline(always)]
#[track_caller]
pub fn memcpy_async<'a, G: ThreadGroup, T: DeviceCopy>(
    group: &G,
    dst: &'a mut SharedSlice<T>,
    src: &[T],
) -> AsyncCopy<'a, T> {
    start(group, dst, src, 0, 0)
}

/// Several copies in flight, in order: CUDA's `memcpy_async` batches with `wait_prior<N>`. Each
/// copy is waited for by handing its [`AsyncCopy`] back; the queue knows how many copies were
/// started after it, so it waits for exactly this one (`cp.async.wait_group N`) and the newer
/// ones stay in flight.
///
/// ```
/// # use cohort::prelude::*;
/// # use cohort::shared::SharedSlice;
/// # fn f(tb: cg::ThreadBlock, mut a: SharedSlice<u32>, mut b: SharedSlice<u32>, src: &[u32]) {
/// let mut q = cg::AsyncCopies::new();
/// let first = q.memcpy_async(&tb, &mut a, &src[..128]);
/// let second = q.memcpy_async(&tb, &mut b, &src[128..256]); // in flight while `first` is consumed
/// q.wait(&tb, first); // `cp.async.wait_group 1`, then a block barrier: `a` is usable again
/// # let _ = (a.len(), second);
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncCopies {
    started: u32,
    /// Tells this queue's copies from other queues' (whose counts mean nothing here): the SM
    /// clock when it was made, with the top bit set so that it is never 0 ([`queue_id`]);
    /// distinct for queues one thread makes one after another (each reads the clock at another
    /// cycle).
    id: u64,
}

/// A queue's id from the clock it read: every bit of the clock kept (clocks one cycle apart
/// give different ids), the top bit set (never 0, the id of "no queue"; a 64-bit cycle count
/// reaches 2^63 only after a century).
#[inline(always)]
const fn queue_id(clock: u64) -> u64 {
    clock | 1 << 63
}

impl AsyncCopies {
    /// A queue with no copies.
    #[must_use]
    pub fn new() -> Self {
        Self { started: 0, id: queue_id(crate::raw::clock64()) }
    }

    /// As [`memcpy_async`], counted in this queue.
    ///
    /// # Panics
    /// If `dst` is shorter than `src`, or if `src` is not in global memory.
    #[inline(always)]
    #[track_caller]
    pub fn memcpy_async<'a, G: ThreadGroup, T: DeviceCopy>(
        &mut self,
        group: &G,
        dst: &'a mut SharedSlice<T>,
        src: &[T],
    ) -> AsyncCopy<'a, T> {
        let seq = self.started;
        self.started = self.started.wrapping_add(1);
        start(group, dst, src, seq, self.id)
    }

    /// Waits for `copy` (and every copy of this thread started before it), leaving the copies
    /// started after it in flight; synchronizes `group`; ends the borrow of its destination.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait<G: ThreadGroup, T: DeviceCopy>(&mut self, group: &G, copy: AsyncCopy<'_, T>) {
        // Only this queue's own count says how many copies are newer; for a copy of another
        // queue (or none) wait for all, which is always enough.
        let newer = if copy.queue == self.id { self.started.wrapping_sub(copy.seq).wrapping_sub(1) } else { u32::MAX };
        // Waited for here, with only the newer copies left in flight (its drop would wait for all).
        core::mem::forget(copy);
        wait_newer_and_sync(group, newer);
    }
}

impl Default for AsyncCopies {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
#[track_caller]
fn start<'a, G: ThreadGroup, T: DeviceCopy>(
    group: &G,
    dst: &'a mut SharedSlice<T>,
    src: &[T],
    seq: u32,
    queue: u64,
) -> AsyncCopy<'a, T> {
    check_copy(dst, src);
    let bytes = core::mem::size_of_val(src) as u64;
    let rank: u64 = group.thread_rank().into();
    let n: u64 = group.num_threads().into();
    copy(dst.shared_addr(), src.as_ptr() as u64, bytes, rank, n);
    AsyncCopy { _dst: core::marker::PhantomData, seq, queue }
}

/// The checks of an asynchronous copy of `src` into `dst`: room, no padding, a global source.
#[inline(always)]
#[track_caller]
pub(super) fn check_copy<T: DeviceCopy>(dst: &SharedSlice<T>, src: &[T]) {
    assert!(dst.len() >= src.len(), "memcpy_async: destination shorter than source");
    // Copied as bytes and words into shared memory, then loaded as `T`.
    crate::assert_no_padding::<T>();
    let bytes = core::mem::size_of_val(src);
    // `cp.async` takes the source as a global address: anything else faults (and on the CPU
    // device is refused alike). Nothing is copied from an empty source.
    if bytes != 0 && !crate::global::in_global(src.as_ptr().cast(), bytes) {
        crate::panic::not_global("memcpy_async");
    }
}

/// This thread's share (`rank` of `n`) of a copy of `bytes` bytes from global `s` to shared `d`,
/// with `cp.async` (then `cp.async.commit_group`) on sm_80+, synchronously before.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) fn copy(d: u32, s: u64, bytes: u64, rank: u64, n: u64) {
    crate::host::on_device!("memcpy_async" => {
        let a = d as u64 | s | bytes;
        let chunk = if a % 16 == 0 { 16 } else if a % 8 == 0 { 8 } else if a % 4 == 0 { 4 } else { 1 };
        let count = bytes / chunk;
        let mut i = rank;
        while i < count {
            let (dd, ss) = (d + (i * chunk) as u32, s + i * chunk);
            // SAFETY: `dd` is inside `dst` and `ss` inside `src` (both checked lengths).
            unsafe { copy_chunk(dd, ss, chunk) };
            i += n;
        }
        #[cfg(target_feature = "sm_80")]
        // SAFETY: sm_80; closes this thread's group of copies (possibly empty, so that every
        // thread counts groups alike).
        unsafe {
            raw::cp_async_commit_group()
        };
    } host => {
        // On the CPU device the copy is synchronous: this thread's chunks, byte by byte.
        let a = d as u64 | s | bytes;
        let chunk = if a % 16 == 0 { 16 } else if a % 8 == 0 { 8 } else if a % 4 == 0 { 4 } else { 1 };
        let count = bytes / chunk;
        let mut i = rank;
        while i < count {
            let (dd, ss) = (d + (i * chunk) as u32, s + i * chunk);
            cohort_cpu::shared_access(dd, chunk as u32, true);
            // SAFETY: `dd..dd + chunk` is inside the destination slice of this block's shared
            // window and `ss..ss + chunk` inside the source slice (both lengths checked by
            // `start`); the two do not overlap (one is shared memory, the other is not).
            unsafe {
                core::ptr::copy_nonoverlapping(ss as usize as *const u8, crate::host::shared_ptr(dd), chunk as usize)
            };
            i += n;
        }
    })
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn copy_chunk(d: u32, s: u64, chunk: u64) {
    #[cfg(target_feature = "sm_80")]
    // SAFETY: valid shared and global addresses (`start` checked that the source is global
    // memory; the destination is a `SharedSlice`, shared by construction), aligned to `chunk`
    // (the caller picked it).
    unsafe {
        match chunk {
            16 => raw::cp_async_cg_shared_global_16(d, s),
            8 => raw::cp_async_ca_shared_global_8(d, s),
            4 => raw::cp_async_ca_shared_global_4(d, s),
            _ => raw::st_shared_u8(d, raw::ld_u8(s)),
        }
    }
    #[cfg(not(target_feature = "sm_80"))]
    // SAFETY: as above, copied synchronously word by word.
    unsafe {
        let mut o = 0;
        while o < chunk {
            if chunk % 4 == 0 {
                raw::st_shared_b32(d + o as u32, raw::ld_u32(s + o));
                o += 4;
            } else {
                raw::st_shared_u8(d + o as u32, raw::ld_u8(s + o));
                o += 1;
            }
        }
    }
}

/// `cp.async.wait_all`: this thread's copies have landed (no group synchronization).
#[inline(always)]
fn wait_own() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    // SAFETY: sm_80 (the cfg); waiting has no other precondition.
    unsafe {
        raw::cp_async_wait_all()
    };
}

/// `cp.async.wait_all`, then `group.sync()`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn wait_all_and_sync<G: ThreadGroup>(group: &G) {
    crate::host::on_device!("wait" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: sm_80; waiting has no other precondition.
        unsafe {
            raw::cp_async_wait_all()
        };
        group.sync()
    } host => { group.sync() })
}

/// `cp.async.wait_group newer` (the immediate must be a constant: one arm per depth; deeper
/// than 7 waits for all), then `group.sync()`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn wait_newer_and_sync<G: ThreadGroup>(group: &G, newer: u32) {
    crate::host::on_device!("wait" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: sm_80; waiting has no other precondition.
        unsafe {
            match newer {
                0 => raw::cp_async_wait_group::<0>(),
                1 => raw::cp_async_wait_group::<1>(),
                2 => raw::cp_async_wait_group::<2>(),
                3 => raw::cp_async_wait_group::<3>(),
                4 => raw::cp_async_wait_group::<4>(),
                5 => raw::cp_async_wait_group::<5>(),
                6 => raw::cp_async_wait_group::<6>(),
                7 => raw::cp_async_wait_group::<7>(),
                _ => raw::cp_async_wait_all(),
            }
        };
        let _ = newer;
        group.sync()
    } host => {
        let _ = newer;
        group.sync()
    })
}

#[cfg(test)]
mod tests {
    use super::queue_id;

    /// Two queues made one after another read the clock one cycle apart at the least: their
    /// ids must differ, or one queue's wait would count the other's copies (and leave a copy it
    /// hands back in flight). (`clock | 1` made 2k and 2k + 1 one id.)
    #[test]
    fn queue_ids_of_clocks_one_cycle_apart_differ() {
        for c in [0u64, 1, 2, 100, 101, 1 << 40, u64::MAX >> 2] {
            assert_ne!(queue_id(c), queue_id(c + 1), "clocks {c} and {}", c + 1);
            assert_ne!(queue_id(c), 0);
        }
    }
}
