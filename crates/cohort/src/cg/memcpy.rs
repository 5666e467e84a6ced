//! `cg::memcpy_async` with `cg::wait` / `cg::wait_prior`: a group copies global memory into
//! shared memory in the background with `cp.async` (sm_80+), using the widest form (16, 8 or
//! 4 bytes per instruction) the addresses and the length allow; below sm_80 the copy is done
//! synchronously and waiting only synchronizes the group.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `cg::memcpy_async(g, dst, src, bytes); cg::wait(g);` | `cg::memcpy_async(&g, &mut dst, src).wait(&g);` (`dst` is borrowed until the wait, usable after) |
//! | several batches, `cg::wait_prior<N>(g)` | [`AsyncCopies`]: `q.memcpy_async(..)` per batch, `q.wait(&g, copy)` |
//! | a multistage pipeline of 2-D tiles: per stage, each thread's `cp.async.cg … 16` of rows of A's and B's tiles into padded shared tiles, `cp.async.commit_group`; `cp.async.wait_group N` + `__syncthreads()` | [`memcpy_async_tile`] per tile (or [`AsyncTiles::copy_next`] along a strip, checked once), [`commit_async_copies`], [`wait_prior::<N>`](wait_prior) |
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
use crate::matrix::{FullStrip, FullWindow, MatrixIndex};
use crate::raw;
use crate::shape::BlockShape;
use crate::shared::{SharedArray, SharedSlice};

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

/// The block copies an `R × C` window of a matrix in global memory into rows `row0 .. row0 + R`,
/// columns `0 .. C` of a shared tile of `SR` rows of `SC` (`SC >= C`: a padded tile, whose rows
/// start at other banks), in the background: 16 bytes per `cp.async.cg` (sm_80+; before, a
/// synchronous copy), the `R · C · size_of::<T>() / 16` chunks dealt out to the block's
/// threads by rank (a loop of constant trip count: `X · Y · Z` is the block's shape). Every
/// thread of the block calls it with the same arguments.
///
/// The copies join this thread's open group of `cp.async`s: close it with
/// [`commit_async_copies`] and wait for it with [`wait_prior`]. For the windows of a strip, one
/// after another (a GEMM's k-loop), [`AsyncTiles`] makes this function's checks once for the
/// whole strip.
///
/// The tile is a [`SharedArray`] handle, which (unlike [`memcpy_async`]'s `SharedSlice`) the
/// copy does not borrow: reading the rows before a wait covers them reads whatever has landed,
/// a race like any unsynchronized shared-memory access (see [`crate::shared`](mod@crate::shared)),
/// never memory outside the tile.
///
/// # Panics
/// If rows `row0 .. row0 + R` are not in the tile, if the window's rows do not start at
/// 16-byte aligned addresses (the matrix's first element and its row length in bytes multiples
/// of 16, and the window's first column a multiple of 16 bytes), or if the matrix is not in
/// global memory (a kernel parameter, a `global!` variable: see the module docs). Compile
/// errors: `C > SC`, or rows (`C` or `SC` elements) not a multiple of 16 bytes.
#[inline(always)]
#[track_caller]
pub fn memcpy_async_tile<
    const X: u32,
    const Y: u32,
    const Z: u32,
    T: DeviceCopy,
    const R: usize,
    const C: usize,
    I: MatrixIndex,
    const SR: usize,
    const SC: usize,
>(
    shape: &BlockShape<X, Y, Z>,
    dst: &SharedArray<[T; SC], SR>,
    row0: usize,
    src: &FullWindow<'_, T, R, C, I>,
) {
    let first = src.element(0, 0);
    check_tiles::<T, R, C, SC>(first, src.row_len(), 0, 1);
    copy_window(shape, dst, row0, src, 0);
}

/// The checks of copies of `count` windows of `R × C`, the first at `first`, each `stride`
/// elements after the one before, from a matrix of rows of `row_len` elements: 16-byte aligned
/// rows, in global memory.
#[inline(always)]
#[track_caller]
fn check_tiles<T: DeviceCopy, const R: usize, const C: usize, const SC: usize>(
    first: *const T,
    row_len: usize,
    stride: usize,
    count: usize,
) {
    const {
        assert!(C <= SC, "memcpy_async_tile: the window is wider than the tile");
        assert!(
            (C * size_of::<T>()).is_multiple_of(16) && (SC * size_of::<T>()).is_multiple_of(16),
            "memcpy_async_tile: rows of the window and of the tile must be multiples of 16 bytes"
        );
    };
    crate::assert_no_padding::<T>();
    let row_bytes = row_len * size_of::<T>();
    // Every window's rows start at `first` plus multiples of `row_bytes` and `stride` elements.
    assert!(
        (first as usize | row_bytes | (stride * size_of::<T>())).is_multiple_of(16),
        "memcpy_async_tile: the window's rows are not 16-byte aligned"
    );
    // The windows' bytes, from the first one's first element to past the last one's last.
    let bytes = if R == 0 || C == 0 || count == 0 {
        0
    } else {
        ((count - 1) * stride + (R - 1) * row_len + C) * size_of::<T>()
    };
    if bytes != 0 && !crate::global::in_global(first.cast(), bytes) {
        crate::panic::not_global("memcpy_async_tile");
    }
}

/// [`memcpy_async_tile`] once [`check_tiles`] passed for `src`: only the destination rows are
/// checked (for `row0` LLVM can bound, a constant comparison that folds away). The window
/// copied is the one `offset` elements after `src` (0: `src` itself); the caller guarantees
/// that it is one [`check_tiles`] passed too, inside the matrix.
#[inline(always)]
#[track_caller]
fn copy_window<
    const X: u32,
    const Y: u32,
    const Z: u32,
    T: DeviceCopy,
    const R: usize,
    const C: usize,
    I: MatrixIndex,
    const SR: usize,
    const SC: usize,
>(
    shape: &BlockShape<X, Y, Z>,
    dst: &SharedArray<[T; SC], SR>,
    row0: usize,
    src: &FullWindow<'_, T, R, C, I>,
    offset: usize,
) {
    // A shared array's bytes are addressed in 32 bits (a larger one is no shared memory).
    const { assert!(SR * SC * size_of::<T>() <= u32::MAX as usize, "memcpy_async_tile: a tile of more than 4 GiB") };
    assert!(row0 <= SR && R <= SR - row0, "memcpy_async_tile: rows outside the tile");
    let threads = BlockShape::<X, Y, Z>::THREADS as usize;
    // 16-byte chunks per row, and in all.
    let per_row = C * size_of::<T>() / 16;
    let total = R * per_row;
    let rank = shape.rank() as usize;
    let mut j = 0;
    while j < total.div_ceil(threads) {
        let idx = rank + j * threads;
        if total.is_multiple_of(threads) || idx < total {
            let (r, q) = (idx / per_row, idx % per_row);
            // In 32 bits, as CUDA C++'s `smem_u32` addresses: the offset is below the tile's
            // size (row0 + r < SR, 16 q < SC · size), a `u32` (the constant assertion). The
            // thread's part (row r, chunk q) apart from the stage's (row0), so that a k-loop
            // keeps it in a register and adds the stage's.
            let pitch = (SC * size_of::<T>()) as u32;
            let d = dst
                .addr()
                .wrapping_add((row0 as u32).wrapping_mul(pitch))
                .wrapping_add((r as u32).wrapping_mul(pitch).wrapping_add(16 * q as u32));
            // The chunk's first element in `src` by its offset in the matrix's index type where
            // chunks start at elements (else by bytes), then `offset` more: a loop-invariant
            // pointer plus one scaled index (`IMAD.WIDE`) in a k-loop of `AsyncTiles::copy`.
            let chunk = if 16 % size_of::<T>() == 0 {
                src.element_flat(r, 16 * q / size_of::<T>()) as u64
            } else {
                src.element(r, 0) as u64 + 16 * q as u64
            };
            let s = chunk + (offset * size_of::<T>()) as u64;
            // SAFETY: r < R and 16 q < C · size: the 16 bytes at `s` are of row r of the window
            // `offset` elements after `src` (`src` itself for 0), inside the matrix (a full
            // window, the callers' precondition) and in global memory, 16-byte aligned (both
            // checked by `check_tiles`, the callers' precondition); those at `d` are of row
            // `row0 + r` of the tile (row0 + R <= SR, C <= SC), 16-byte aligned (the tile's
            // address is, `SharedArray`'s invariant, and so are its rows and the 16 q).
            unsafe { copy16(d, s) };
        }
        j += 1;
    }
}

/// The windows of a [`FullStrip`](crate::matrix::FullStrip) (a GEMM block's row strip of A,
/// walked along K), copied one after another into shared tiles with `cp.async`: the checks of
/// [`memcpy_async_tile`] — 16-byte aligned rows, global memory — made once for the whole strip
/// by [`new`](Self::new), none per window.
///
/// ```
/// # use cohort::prelude::*;
/// # use cohort::matrix::Split;
/// # use cohort::mma::bf16;
/// # fn f(shape: BlockShape<256>, a: Matrix<'_, bf16, u32>, m0: u32, tiles: SharedArray<[bf16; 40], 512>) {
/// let Split::Full(strip) = a.row_strip::<128, 32>(m0).split() else { panic!("A's strip leaves A") };
/// let mut a_tiles = cg::AsyncTiles::new(strip);
/// for s in 0..3 {
///     // Stage s of 4 holds rows 128 s .. 128 s + 128 of the tiles.
///     a_tiles.copy_next(&shape, &tiles, 128 * s);
///     cg::commit_async_copies();
/// }
/// cg::wait_prior::<2>(&cg::this_thread_block()); // stage 0 landed, and is seen by every thread
/// # }
/// ```
#[derive(Debug)]
pub struct AsyncTiles<'a, T, const R: usize, const C: usize, I: MatrixIndex> {
    strip: FullStrip<'a, T, R, C, I>,
}

impl<'a, T: DeviceCopy, const R: usize, const C: usize, I: MatrixIndex> AsyncTiles<'a, T, R, C, I> {
    /// Checks the whole strip for [`copy_next`](Self::copy_next).
    ///
    /// # Panics
    /// As [`memcpy_async_tile`]: rows not 16-byte aligned, or a matrix not in global memory.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn new(strip: FullStrip<'a, T, R, C, I>) -> Self {
        let (first, stride, row_len, left) = strip.span();
        // Only the rows' widths of a tile are known here: `check_tiles`'s constant checks for
        // the narrowest tile these windows fit, `C` wide (`copy_next` checks `C <= SC` again).
        check_tiles::<T, R, C, C>(first, row_len, stride, left);
        Self { strip }
    }

    /// Windows not yet copied.
    #[inline(always)]
    #[must_use]
    pub fn len(&self) -> usize {
        self.strip.len()
    }

    /// Whether every window was copied.
    #[inline(always)]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.strip.len() == 0
    }

    /// Windows not yet copied, in the matrix's index type (`u32` for a `Matrix<T, u32>`): the
    /// count a k-loop of [`copy`](Self::copy) runs to.
    #[inline(always)]
    #[must_use]
    pub fn windows(&self) -> I {
        self.strip.len_index()
    }

    /// [`memcpy_async_tile`] of window `k` counted from the next one (window `k` of the strip
    /// when no [`copy_next`](Self::copy_next) came before) into rows `row0 .. row0 + R` of
    /// `dst`, without advancing; `false` (nothing copied) if there is no such window (`k` not
    /// below [`windows`](Self::windows)). The form of a k-loop that fills stage
    /// `(k + STAGES - 1) % STAGES` with tile `k + STAGES - 1`: one comparison in `I`, no
    /// counter per strip.
    ///
    /// # Panics
    /// As [`copy_next`](Self::copy_next).
    #[inline(always)]
    #[track_caller]
    pub fn copy<const X: u32, const Y: u32, const Z: u32, const SR: usize, const SC: usize>(
        &self,
        shape: &BlockShape<X, Y, Z>,
        dst: &SharedArray<[T; SC], SR>,
        row0: usize,
        k: I,
    ) -> bool {
        const {
            assert!(C <= SC, "memcpy_async_tile: the window is wider than the tile");
            assert!(
                (SC * size_of::<T>()).is_multiple_of(16),
                "memcpy_async_tile: rows of the tile must be multiples of 16 bytes"
            );
        };
        match self.strip.peek(k) {
            Some((next, offset)) => {
                // `new` checked every window of the strip, window k among them: the one
                // `offset` elements after the next.
                copy_window(shape, dst, row0, &next, offset);
                true
            }
            None => false,
        }
    }

    /// [`memcpy_async_tile`] of the strip's next window into rows `row0 .. row0 + R` of `dst`;
    /// `false` (nothing copied) after the last one.
    ///
    /// # Panics
    /// If rows `row0 .. row0 + R` are not in the tile (a comparison that folds away for `row0`
    /// LLVM can bound, such as a stage index times `R`). Compile errors as
    /// [`memcpy_async_tile`]'s.
    #[inline(always)]
    #[track_caller]
    pub fn copy_next<const X: u32, const Y: u32, const Z: u32, const SR: usize, const SC: usize>(
        &mut self,
        shape: &BlockShape<X, Y, Z>,
        dst: &SharedArray<[T; SC], SR>,
        row0: usize,
    ) -> bool {
        const {
            assert!(C <= SC, "memcpy_async_tile: the window is wider than the tile");
            assert!(
                (SC * size_of::<T>()).is_multiple_of(16),
                "memcpy_async_tile: rows of the tile must be multiples of 16 bytes"
            );
        };
        match self.strip.next() {
            Some(w) => {
                // `new` checked every window of the strip, this one among them.
                copy_window(shape, dst, row0, &w, 0);
                true
            }
            None => false,
        }
    }
}

/// 16 bytes from global `s` to shared `d`: `cp.async.cg` on sm_80+, else loads and stores; on
/// the CPU device a synchronous copy (its access to the block's shared window checked).
///
/// # Safety
/// `d` is 16 bytes of this block's shared memory and `s` 16 bytes of global memory, both
/// 16-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn copy16(d: u32, s: u64) {
    crate::host::on_device!("memcpy_async_tile" => {
        // SAFETY: the caller's contract.
        unsafe { copy_chunk(d, s, 16) }
    } host => {
        cohort_cpu::shared_access(d, 16, true);
        // SAFETY: `d..d + 16` is in this block's shared window and `s..s + 16` is global memory
        // (the caller's contract); they do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(s as usize as *const u8, crate::host::shared_ptr(d), 16) }
    })
}

/// `cp.async.commit_group`: closes this thread's group of [`memcpy_async_tile`] copies (an empty
/// group too, so that every thread counts groups alike), for [`wait_prior`] to wait for. Below
/// sm_80 and on the CPU device, where the copies are synchronous, nothing.
#[inline(always)]
pub fn commit_async_copies() {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    // SAFETY: sm_80 (the cfg); committing has no other precondition.
    unsafe {
        raw::cp_async_commit_group()
    };
}

/// CUDA's `cg::wait_prior<N>(group)`: waits until at most the `N` most recently committed groups
/// of this thread's `cp.async`s are in flight (`cp.async.wait_group N`), then synchronizes
/// `group`, so each member sees what every member's copies of the older groups wrote.
///
/// Copies of [`AsyncCopies`] / [`memcpy_async`] keep their own count: a group committed here
/// only ever makes their waits wait for more, never less.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
pub fn wait_prior<const N: u32>(group: &impl ThreadGroup) {
    crate::host::on_device!("wait_prior" => {
        #[cfg(target_feature = "sm_80")]
        // SAFETY: sm_80; waiting has no other precondition.
        unsafe {
            raw::cp_async_wait_group::<N>()
        };
        group.sync()
    } host => { group.sync() })
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
