//! Asynchronous barriers in shared memory (CUDA's `cuda::barrier<thread_scope_block>`, PTX
//! `mbarrier`, sm_80+) and the copies that complete on them: `memcpy_async` (`cp.async`, sm_80)
//! and the bulk copy (`cp.async.bulk`, sm_90).
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `__shared__ cuda::barrier<cuda::thread_scope_block> bar;` | `cohort::async_barrier! { static BAR; }` |
//! | `if (threadIdx.x == 0) init(&bar, blockDim.x); __syncthreads();` … `bar` used … (never invalidated) | `BAR.scope(&block, \|bar\| { … })` (init by one thread, block barrier; at the end a block barrier and `mbarrier.inval`) |
//! | `auto t = bar.arrive(); … bar.wait(std::move(t));` | `let t = bar.arrive(); … t.wait();` |
//! | `bar.arrive_and_wait()` | [`bar.arrive_and_wait()`](AsyncBarrier::arrive_and_wait) |
//! | `bar.arrive_and_drop()` | [`bar.arrive_and_drop()`](AsyncBarrier::arrive_and_drop) |
//! | `cuda::memcpy_async(block, dst, src, n, bar); bar.arrive_and_wait();` | `bar.memcpy_async(&mut dst, src).wait();` (`dst` borrowed until then) |
//! | `cuda::device::memcpy_async_tx(dst, src, n, bar)` + `barrier_arrive_tx(bar, 1, n)` in one thread (sm_90 bulk copy) | `bar.bulk_copy(&mut dst, src).wait();` (every thread calls it; thread 0 issues the copy) |
//! | `mbarrier.try_wait.parity` loop | what every wait here is |
//!
//! **Initialised once, used only while live.** A barrier is the 8 bytes of a `static` declared
//! with [`async_barrier!`](crate::async_barrier); no handle to those bytes exists outside a
//! [`scope`](AsyncBarrierStatic::scope), a block-wide collective: thread 0 initialises the
//! barrier for every thread of the block, a block barrier orders that before any use (and
//! counts the threads at it: one that returned from the kernel before the scope would never
//! arrive, so that is an `Err` in every build, not a hang), the
//! closure runs with this thread's [`AsyncBarrier`] handle, and at its end every thread waits
//! for what it still has in flight, a block barrier, and thread 0 invalidates the barrier. So
//! safe code cannot use one uninitialised, nor (outside its scope) after it is gone. The
//! handle's lifetime is a brand (invariant, one per scope): a token of another barrier, or
//! one kept past its scope, does not compile.
//!
//! **Phases.** Every thread of the block arrives once per phase and waits for the phase it
//! arrived on; the handle counts phases, so each wait is `try_wait.parity` on the right parity.
//! An [`Arrival`] (CUDA's `arrival_token`) borrows the handle mutably: a thread cannot arrive
//! again before it waits, and waiting consumes the token, so a phase cannot be waited twice (both
//! compile errors). Dropping a token waits for it. What types cannot see is checked at run time
//! in every build (a few register compares): a token `mem::forget`-ed then an arrival on the same
//! phase, an arrival after [`arrive_and_drop`](AsyncBarrier::arrive_and_drop), a nested scope of
//! the same barrier (in checked mode on a GPU; always on the CPU device) end the kernel with an
//! `Err` naming the call site.
//!
//! One arrival per thread and phase, always: `memcpy_async`'s is the `.noinc` arrival its
//! `cp.async`s make when they land (compute-sanitizer's synccheck reports a thread's second
//! arrival on a phase it has not waited for as a "missing wait").
//!
//! **No silent hang.** In checked mode a wait is bounded (5 s by `%globaltimer`), then ends the
//! kernel with an `Err` naming the call and the phase: a thread that never arrives (it exited,
//! or it waits elsewhere), a copy whose bytes never land. On the CPU device a wait that nothing
//! completes ends the launch with a livelock error naming the wait.
//!
//! **Copies complete on the phase.** [`memcpy_async`](AsyncBarrier::memcpy_async) and
//! [`bulk_copy`](AsyncBarrier::bulk_copy) return a [`Transfer`] that holds the exclusive
//! borrow of the destination handle and this thread's arrival: the destination is reachable
//! again only through [`Transfer::wait`], after the phase — and so every copy of it — has
//! completed. Every thread of the block must make the call (it is this thread's arrival).
//! Sources must be global memory (checked as for [`cg::memcpy_async`](crate::cg::memcpy_async)).
//!
//! On the CPU device the engine models the barrier (`cohort_cpu::mbarrier_*`): phases,
//! arrival and transaction counts; copies land when issued. With its race check
//! (`COHORT_CPU_RACECHECK=1`) a phase orders its arrivals before its waits, so a read of a
//! destination through another handle before the wait is reported as a race with the copy.

use core::marker::PhantomData;
#[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
use core::panic::Location;

use super::ThreadBlock;
use crate::DeviceCopy;
use crate::panic::CheckKind;
use crate::raw;
use crate::shared::{SharedSlice, SharedStatic};

/// The storage of an asynchronous barrier, declared with [`async_barrier!`](crate::async_barrier):
/// used only through [`scope`](Self::scope).
#[derive(Debug)]
pub struct AsyncBarrierStatic {
    /// Word 0: the mbarrier. Word 1: checked mode's "live" mark.
    storage: &'static SharedStatic<u64, 2>,
}

impl AsyncBarrierStatic {
    #[doc(hidden)]
    pub const fn __new(storage: &'static SharedStatic<u64, 2>) -> Self {
        Self { storage }
    }
}

/// Declares asynchronous barriers in shared memory, CUDA's
/// `__shared__ cuda::barrier<cuda::thread_scope_block> NAME;`, at item level:
///
/// ```
/// cohort::async_barrier! {
///     /// Completes when a tile has landed.
///     static FULL;
/// }
/// ```
#[macro_export]
macro_rules! async_barrier {
    ($($(#[$m:meta])* $vis:vis static $name:ident;)*) => {$(
        // The storage, private to a module of the same name (modules and statics are apart),
        // so that no `SharedArray` handle to a live barrier's words can be made; the barrier
        // itself is brought out under the static's name.
        #[doc(hidden)]
        #[allow(non_snake_case)]
        $vis mod $name {
            $crate::shared! { static STORAGE: [u64; 2]; }
            $(#[$m])*
            pub static BARRIER: $crate::cg::AsyncBarrierStatic = $crate::cg::AsyncBarrierStatic::__new(&STORAGE);
        }
        $vis use $name::BARRIER as $name;
    )*};
}

/// The "live" mark of checked mode: a value garbage shared memory holds with probability 2^-64.
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
const LIVE: u64 = 0xc0b0_27a5_b4e1_11fe_u64;

/// One thread's handle of a live asynchronous barrier, given by
/// [`AsyncBarrierStatic::scope`] for the scope's closure (`'b` is the scope's brand).
#[derive(Debug)]
pub struct AsyncBarrier<'b> {
    pub(crate) addr: u32,
    /// The phase this thread arrives on next (counted from the `init`).
    phase: u32,
    /// Bit 0: an arrival not yet waited for; bit 1: dropped out (`arrive_and_drop`).
    pub(crate) state: u32,
    _brand: PhantomData<fn(&'b ()) -> &'b ()>,
}

pub(crate) const ARRIVED: u32 = 1;
const DROPPED: u32 = 2;

impl AsyncBarrierStatic {
    /// Makes the barrier live for every thread of the block, runs `f` with this thread's
    /// handle, then retires it: a block-wide collective (every thread of the block must call it,
    /// as [`sync_threads`](crate::sync::sync_threads)). The barrier expects one arrival per
    /// thread of the block in each phase (fewer after [`arrive_and_drop`](AsyncBarrier::arrive_and_drop)s).
    ///
    /// At the end of `f` each thread first waits for a phase it arrived on and has not waited
    /// for (a forgotten token), so no copy is still landing when the barrier is invalidated.
    ///
    /// # Panics
    /// A nested scope of the same barrier (in checked mode on a GPU, always on the CPU device):
    /// it would initialise the barrier while live. A thread of the block that returned from the
    /// kernel before the call (in every build: the barrier would wait for its arrivals forever;
    /// the CPU device reports it at the scope's block barrier).
    #[inline(always)]
    #[track_caller]
    pub fn scope<R>(&'static self, block: &ThreadBlock, f: impl for<'b> FnOnce(&mut AsyncBarrier<'b>) -> R) -> R {
        let _ = block;
        crate::check::block("AsyncBarrier::scope");
        let words = self.storage.get().as_slice();
        let addr = words.shared_addr();
        let rank = crate::thread::thread_rank_in_block();
        if rank == 0 {
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            {
                if words.load(1) == LIVE ^ u64::from(addr) {
                    fail(1, "AsyncBarrier::scope");
                }
                words.store(1, LIVE ^ u64::from(addr));
            }
            // SAFETY: `addr` is the barrier's own 8-byte aligned shared word, reachable only
            // through this scope; no thread uses it as a live barrier (a scope of it ended with
            // `inval` after a block barrier, or none ran before; a nested one is refused above
            // in checked mode and by the CPU device); the block barrier below orders this
            // before every use; the block has 1..=1024 threads.
            unsafe { raw::mbarrier_init_shared(addr, crate::thread::block_size()) };
        }
        // The barrier expects an arrival from every thread of the block in each phase; a thread
        // that returned from the kernel before this call would never make it, and the block would
        // wait forever (a block barrier lets exited threads through on a GPU). So the block
        // barrier that orders the `init` before every use also counts the threads at it, and if
        // one is missing every thread here ends the kernel before anyone arrives.
        // SAFETY: every thread of the block that has not exited reaches this call (the
        // collective's contract); exited ones are let through, counted out, and reported below.
        let here = unsafe { raw::barrier_sync_count(true) };
        if here != crate::thread::block_size() {
            fail_with(7, crate::thread::block_size() - here, "AsyncBarrier::scope");
        }
        let mut bar = AsyncBarrier { addr, phase: 0, state: 0, _brand: PhantomData };
        let r = f(&mut bar);
        if bar.state & ARRIVED != 0 {
            bar.wait_current("AsyncBarrier::scope");
        }
        crate::sync::barrier_unchecked();
        if rank == 0 {
            // SAFETY: every thread has passed the barrier above, after its last use of the
            // barrier and after the phases it arrived on completed (so no copy is pending on it).
            unsafe { raw::mbarrier_inval_shared(addr) };
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            words.store(1, 0);
        }
        r
    }
}

/// Ends the kernel for a misused barrier (see [`CheckKind::AsyncBarrierMisuse`]).
#[cold]
#[inline(never)]
#[track_caller]
fn fail(code: u32, op: &'static str) -> ! {
    crate::panic::fail_check(CheckKind::AsyncBarrierMisuse, op, code, 0, core::panic::Location::caller(), None)
}

/// As [`fail`], with a number the report shows (a size).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn fail_with(code: u32, n: u32, op: &'static str) -> ! {
    crate::panic::fail_check(CheckKind::AsyncBarrierMisuse, op, code, n, core::panic::Location::caller(), None)
}

impl<'b> AsyncBarrier<'b> {
    /// This thread's arrival on the current phase (`bar.arrive()`): the token to wait for it
    /// with. The handle stays borrowed until then.
    #[inline(always)]
    #[track_caller]
    pub fn arrive(&mut self) -> Arrival<'b, '_> {
        self.before_arrival("AsyncBarrier::arrive");
        // SAFETY: the barrier is live (a handle exists only inside its scope), and this thread
        // has not arrived on the current phase (`before_arrival`).
        let _ = unsafe { raw::mbarrier_arrive_shared(self.addr) };
        self.state |= ARRIVED;
        Arrival { bar: self }
    }

    /// `bar.arrive_and_wait()`.
    #[inline(always)]
    #[track_caller]
    pub fn arrive_and_wait(&mut self) {
        self.arrive().wait();
    }

    /// `bar.arrive_and_drop()`: arrives on the current phase without waiting, and leaves the
    /// barrier (it expects one arrival fewer from the next phase on). This thread may not
    /// arrive again in this scope.
    #[inline(always)]
    #[track_caller]
    pub fn arrive_and_drop(&mut self) {
        self.before_arrival("AsyncBarrier::arrive_and_drop");
        // SAFETY: live barrier; this thread has not arrived on the current phase.
        unsafe { raw::mbarrier_arrive_drop_shared(self.addr) };
        self.state |= DROPPED;
    }

    /// `cuda::memcpy_async(block, dst, src, bar)`: the threads of the block copy `src` into the
    /// first `src.len()` elements of `dst` in the background (`cp.async`, each thread its
    /// share), each thread's share completing on the current phase, which this call arrives
    /// on. The destination is reachable again through [`Transfer::wait`]. Every thread of the
    /// block must call it with the same arguments (checked mode and the CPU device report a
    /// thread whose arguments differ from thread 0's: its `Transfer` would not stand for the
    /// copy that lands).
    ///
    /// # Panics
    /// If `dst` is shorter than `src`, or `src` is not in global memory.
    #[inline(always)]
    #[track_caller]
    pub fn memcpy_async<'d, T: DeviceCopy>(
        &mut self,
        dst: &'d mut SharedSlice<T>,
        src: &[T],
    ) -> Transfer<'b, '_, 'd, T> {
        self.before_arrival("AsyncBarrier::memcpy_async");
        super::memcpy::check_copy(dst, src);
        crate::check::block_uniform("AsyncBarrier::memcpy_async", copy_args(dst, src));
        let rank = crate::thread::thread_rank_in_block();
        let n = crate::thread::block_size();
        super::memcpy::copy(
            dst.shared_addr(),
            src.as_ptr() as u64,
            core::mem::size_of_val(src) as u64,
            rank.into(),
            n.into(),
        );
        // SAFETY: live barrier, this thread's arrival not yet made (`before_arrival`): this is
        // it, made when the thread's copies above have landed (`.noinc`: one arrival per thread
        // and phase, as for `arrive`; the thread does not arrive again before its wait).
        let _ = unsafe { raw::cp_async_mbarrier_arrive_noinc_shared(self.addr) };
        self.state |= ARRIVED;
        Transfer { arrival: Arrival { bar: self }, _dst: PhantomData }
    }

    /// The sm_90 bulk copy (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`):
    /// thread 0 of the block announces the bytes on the current phase and starts one copy of
    /// `src` into the first `src.len()` elements of `dst`; every other thread arrives. The
    /// destination is reachable again through [`Transfer::wait`]. Every thread of the block must
    /// call it with the same arguments: the copy is thread 0's, and every thread's `Transfer`
    /// borrows its own `dst` (checked mode and the CPU device report a thread whose arguments
    /// differ). Below sm_90 it is [`memcpy_async`](Self::memcpy_async).
    ///
    /// # Panics
    /// If `dst` is shorter than `src`, `src` is not in global memory, the size is not a multiple
    /// of 16 bytes or 2^20 bytes or more, or either address is not 16-byte aligned.
    #[inline(always)]
    #[track_caller]
    pub fn bulk_copy<'d, T: DeviceCopy>(&mut self, dst: &'d mut SharedSlice<T>, src: &[T]) -> Transfer<'b, '_, 'd, T> {
        // Checked as the barrier's misuse, not with `assert!`: a device panic records only its
        // location (see `crate::panic`), and these say what is wrong on both devices.
        let bytes = core::mem::size_of_val(src);
        if !bytes.is_multiple_of(16) {
            fail_with(4, bytes as u32, "AsyncBarrier::bulk_copy");
        }
        if bytes >= 1 << 20 {
            fail_with(5, bytes.min(u32::MAX as usize) as u32, "AsyncBarrier::bulk_copy");
        }
        if !(dst.shared_addr().is_multiple_of(16) && (src.as_ptr() as usize).is_multiple_of(16)) {
            fail_with(6, 0, "AsyncBarrier::bulk_copy");
        }
        #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
        {
            self.memcpy_async(dst, src)
        }
        #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90"))]
        {
            self.before_arrival("AsyncBarrier::bulk_copy");
            super::memcpy::check_copy(dst, src);
            crate::check::block_uniform("AsyncBarrier::bulk_copy", copy_args(dst, src));
            if crate::thread::thread_rank_in_block() == 0 {
                // SAFETY: live barrier, this thread's arrival not yet made; the phase cannot
                // complete before it (it needs this arrival), and it then waits for `bytes`
                // (< 2^20, asserted), which the copy below completes. The copy: `dst` is a
                // shared slice of at least `bytes` bytes, `src` global memory (checked), both
                // 16-byte aligned with a size a multiple of 16 (asserted); the destination is
                // borrowed by every thread's `Transfer` until the phase completes, and the
                // source is a shared borrow (no one writes it) for as long as that.
                unsafe {
                    let _ = raw::mbarrier_arrive_expect_tx_shared(self.addr, bytes as u32);
                    if bytes != 0 {
                        raw::cp_async_bulk_shared_global(
                            dst.shared_addr(),
                            src.as_ptr() as u64,
                            bytes as u32,
                            self.addr,
                        );
                    }
                }
            } else {
                // SAFETY: live barrier, this thread's arrival not yet made.
                let _ = unsafe { raw::mbarrier_arrive_shared(self.addr) };
            }
            self.state |= ARRIVED;
            Transfer { arrival: Arrival { bar: self }, _dst: PhantomData }
        }
    }

    /// The `Transfer` of this thread's arrival just made (by a copy that completes on it).
    #[inline(always)]
    pub(crate) fn transfer<'d, T>(&mut self) -> Transfer<'b, '_, 'd, T> {
        Transfer { arrival: Arrival { bar: self }, _dst: PhantomData }
    }

    #[inline(always)]
    #[track_caller]
    pub(crate) fn before_arrival(&self, op: &'static str) {
        if self.state != 0 {
            fail(if self.state & DROPPED != 0 { 3 } else { 2 }, op);
        }
    }

    /// Waits until the phase this thread arrived on has completed; the next arrival is on the
    /// next phase.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn wait_current(&mut self, op: &'static str) {
        let _ = op;
        #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
        let (start, loc) = (raw::globaltimer(), Location::caller());
        // SAFETY: live barrier; this thread arrived on phase `self.phase` and has not waited
        // for it, so the barrier is at that phase or the next (the next cannot complete
        // without this thread's arrival on it).
        while !unsafe { raw::mbarrier_wait_parity_shared(self.addr, u64::from(self.phase)) } {
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            crate::check::async_barrier_waited(start, self.phase, op, loc);
            #[cfg(not(target_arch = "nvptx64"))]
            raw::nanosleep(0);
        }
        self.phase = self.phase.wrapping_add(1);
        self.state &= !ARRIVED;
    }
}

/// What a block-wide copy's arguments must agree on in every thread: the destination (its
/// address and length) and the source (its address and length).
#[inline(always)]
fn copy_args<T: DeviceCopy>(dst: &SharedSlice<T>, src: &[T]) -> [u64; 3] {
    [u64::from(dst.shared_addr()) | (dst.len() as u64) << 32, src.as_ptr() as u64, src.len() as u64]
}

/// This thread's arrival on a phase (CUDA's `arrival_token`): wait for the phase with
/// [`wait`](Self::wait). It borrows the barrier handle, so the thread cannot arrive again before;
/// dropped, it waits.
#[derive(Debug)]
#[must_use = "an arrival is waited for with `.wait()` (dropping it waits too)"]
pub struct Arrival<'b, 'h> {
    bar: &'h mut AsyncBarrier<'b>,
}

impl Arrival<'_, '_> {
    /// Waits until the phase has completed: every thread of the block arrived, and every
    /// copy that completes on it landed (`mbarrier.try_wait.parity` loop).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait(self) {
        let mut me = core::mem::ManuallyDrop::new(self);
        me.bar.wait_current("AsyncBarrier::wait");
    }
}

impl Drop for Arrival<'_, '_> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        self.bar.wait_current("AsyncBarrier::wait (a dropped arrival)");
    }
}

/// A copy in flight that completes on a barrier phase, and this thread's arrival on it: it
/// borrows the destination handle until [`wait`](Self::wait) (dropped, it waits).
#[derive(Debug)]
#[must_use = "the copy is in flight until its phase completes; `.wait()` for it to use the destination"]
pub struct Transfer<'b, 'h, 'd, T> {
    arrival: Arrival<'b, 'h>,
    _dst: PhantomData<&'d mut SharedSlice<T>>,
}

impl<T> Transfer<'_, '_, '_, T> {
    /// Waits until the phase has completed (every thread's part of the copy landed), ending the
    /// borrow of the destination.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn wait(self) {
        self.arrival.wait();
    }
}
