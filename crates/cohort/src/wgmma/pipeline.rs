//! The warp-specialized TMA pipeline: a ring of stages (a tile of A and one of B each) in
//! dynamic shared memory, a full and an empty barrier per stage, one producer warp loading
//! stages with TMA and consumer warpgroups acquiring and releasing them (CUTLASS's
//! `PipelineTmaAsync`).

use core::cell::Cell;
use core::marker::PhantomData;
#[cfg(all(cohort_checked, target_arch = "nvptx64"))]
use core::panic::Location;

use super::mma::{Operands, operands_sealed};
use super::tile::{Key, TileShape, check_load};
use super::{Brand, Warpgroup, fail};
use crate::cg::ThreadBlock;
use crate::raw;
use crate::shared::SharedStatic;
use crate::tma::TensorMap;

/// The barriers of a pipeline of `STAGES` stages, declared with
/// [`tma_pipeline!`](crate::tma_pipeline) (`WORDS` = `2 · STAGES + 1`): used only through
/// [`scope`](Self::scope).
#[derive(Debug)]
pub struct PipelineStatic<const STAGES: usize, const WORDS: usize> {
    storage: &'static SharedStatic<u64, WORDS>,
}

impl<const STAGES: usize, const WORDS: usize> PipelineStatic<STAGES, WORDS> {
    #[doc(hidden)]
    pub const fn __new(storage: &'static SharedStatic<u64, WORDS>) -> Self {
        Self { storage }
    }
}

/// Declares a TMA pipeline's barriers in shared memory (a full and an empty barrier per stage):
///
/// ```
/// cohort::tma_pipeline! {
///     /// Four stages of A's and B's tiles.
///     static RING: [4];
/// }
/// ```
#[macro_export]
macro_rules! tma_pipeline {
    ($($(#[$m:meta])* $vis:vis static $name:ident: [$stages:expr];)*) => {$(
        #[doc(hidden)]
        #[allow(non_snake_case)]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::shared! { static STORAGE: [u64; 2 * ($stages) + 1]; }
            $(#[$m])*
            pub static PIPELINE: $crate::wgmma::PipelineStatic<{ $stages }, { 2 * ($stages) + 1 }> =
                $crate::wgmma::PipelineStatic::__new(&STORAGE);
        }
        $vis use $name::PIPELINE as $name;
    )*};
}

mod plan_sealed {
    pub trait Sealed {}
    impl Sealed for super::KeepRegisters {}
    impl<const P: u32, const C: u32> Sealed for super::SplitRegisters<P, C> {}
}

/// How a pipeline's warpgroups share the register file (sealed): [`KeepRegisters`] or
/// [`SplitRegisters`].
pub trait RegisterPlan: plan_sealed::Sealed {
    /// Registers per thread of the producer warpgroup and of each consumer warpgroup (0: as
    /// compiled).
    #[doc(hidden)]
    const SPLIT: (u32, u32);
    #[doc(hidden)]
    fn __producer();
    #[doc(hidden)]
    fn __consumer();
}

/// Every warpgroup keeps the registers the kernel was compiled with.
#[derive(Debug)]
pub enum KeepRegisters {}

/// Warp specialization's register split (`setmaxnreg`, sm_90a): the producer warpgroup drops to
/// `P` registers per thread at the start of the scope, each consumer warpgroup rises to `C`
/// (CUTLASS's 40 and 232 for one producer and two consumers). The kernel must be compiled for
/// at least `(P + consumers · C) / (1 + consumers)` registers per thread and launched with exactly
/// its block (`#[kernel(launch_bounds(T, 1))]`), or the consumers would wait forever for
/// registers: the runtime reads the split from the kernel's PTX and refuses such a launch with
/// an `Err` (`InvalidLaunch`, naming the kernel, its registers and what the split needs).
#[derive(Debug)]
pub enum SplitRegisters<const P: u32, const C: u32> {}

impl RegisterPlan for KeepRegisters {
    const SPLIT: (u32, u32) = (0, 0);
    #[inline(always)]
    fn __producer() {}
    #[inline(always)]
    fn __consumer() {}
}

impl<const P: u32, const C: u32> RegisterPlan for SplitRegisters<P, C> {
    const SPLIT: (u32, u32) = (P, C);
    #[inline(always)]
    fn __producer() {
        // SAFETY: called by the whole producer warpgroup, converged, at the start of the scope
        // (nothing before it in the scope diverges); `P` is at most what the kernel runs with
        // (the type's contract).
        unsafe { raw::setmaxnreg_dec::<P>() }
    }
    #[inline(always)]
    fn __consumer() {
        // SAFETY: called by a whole consumer warpgroup, converged, at the start of the scope;
        // the producer releases the registers it needs (the type's contract).
        unsafe { raw::setmaxnreg_inc::<C>() }
    }
}

/// The producer warp's handle: fills stages in ring order ([`fill`](Self::fill)).
#[derive(Debug)]
pub struct Producer<'p, A, B, const STAGES: usize> {
    bars: u32,
    ring: u32,
    issued: &'p Cell<u32>,
    _brand: Brand<'p>,
    _t: PhantomData<(A, B)>,
}

/// A consumer thread's handle: acquires stages in ring order ([`acquire`](Self::acquire)).
#[derive(Debug)]
pub struct Consumer<'p, A, B, const STAGES: usize> {
    bars: u32,
    ring: u32,
    next: u32,
    index: u32,
    _brand: Brand<'p>,
    _t: PhantomData<(A, B)>,
}

/// Where one tile of the stage being filled goes: [`load`](Self::load) it (once: it is
/// consumed) for the receipt [`Producer::fill`]'s closure returns.
#[derive(Debug)]
pub struct Slot<'f, A> {
    addr: u32,
    bar: u32,
    _brand: Brand<'f>,
    _t: PhantomData<A>,
}

/// The receipt of one tile load of a fill (only [`Slot::load`] makes one; `'f`: the fill's brand).
#[derive(Debug)]
pub struct Loaded<'f> {
    _brand: PhantomData<fn(&'f ()) -> &'f ()>,
}

/// A full stage a consumer holds: its tiles, readable, until it is dropped, which releases it
/// to the producer (a warp collective: one arrival per warp, after the warp's accesses). Hand
/// it to [`MmaScope::issue`](super::MmaScope::issue) to multiply its tiles; it comes back from
/// [`retire`](super::MmaScope::retire) once the MMAs have read them.
#[derive(Debug)]
#[must_use = "a stage is released when dropped: hand it to the MMAs first"]
pub struct Stage<'p, A, B> {
    a: A,
    b: B,
    empty: u32,
    _brand: PhantomData<fn(&'p ()) -> &'p ()>,
}

/// Waits until phase `phase` of the mbarrier at `addr` has completed (bounded in checked mode).
///
/// The caller guarantees that the barrier is live and at phase `phase` or `phase + 1`.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn wait_phase(addr: u32, phase: u32, op: &'static str) {
    let _ = op;
    #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
    let (start, loc) = (raw::globaltimer(), Location::caller());
    // SAFETY: the caller's guarantee (live, at `phase` or the next).
    while !unsafe { raw::mbarrier_wait_parity_shared(addr, u64::from(phase)) } {
        #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
        crate::check::async_barrier_waited(start, phase, op, loc);
        #[cfg(not(target_arch = "nvptx64"))]
        raw::nanosleep(0);
    }
}

impl<const STAGES: usize, const WORDS: usize> PipelineStatic<STAGES, WORDS> {
    /// Makes the pipeline live for the block and runs each thread's part: `producer` in warp 0
    /// (all 32 lanes: lane 0 issues the copies) with the [`Producer`], nothing in warps 1–3 of
    /// warpgroup 0, `consumer` in every thread of the `CONSUMERS` consumer warpgroups (1, 2, …)
    /// with its [`Consumer`]. A block-wide collective (every thread of the block calls it). The
    /// ring's `STAGES` stages of an `A` and a `B` tile are carved from the launch's dynamic
    /// shared memory (at its first 1024-byte boundary: ask for `STAGES · (A::BYTES + B::BYTES)
    /// + 1024` bytes). `Regs` says how the warpgroups share registers ([`KeepRegisters`],
    /// [`SplitRegisters`]): each role's register count is set in its own branch, so that ptxas
    /// can honour it (code reachable under both would make it ignore `setmaxnreg`).
    ///
    /// When both have returned everywhere, every load the producer issued has landed, and the
    /// barriers are retired.
    ///
    /// # Panics
    /// A block of another size, stages that do not fit in the dynamic shared memory, a scope
    /// entered again while live (checked mode), a thread that returned before the call (a
    /// report naming the call).
    #[inline(always)]
    #[track_caller]
    pub fn scope<A, B, const CONSUMERS: usize, Regs>(
        &'static self,
        block: &ThreadBlock,
        producer: impl for<'p> FnOnce(Producer<'p, A, B, STAGES>),
        consumer: impl for<'p> FnOnce(Consumer<'p, A, B, STAGES>),
    ) where
        A: TileShape,
        B: TileShape<Elem = A::Elem>,
        Regs: RegisterPlan,
    {
        let _ = block;
        const {
            assert!(STAGES >= 1 && WORDS == 2 * STAGES + 1, "tma_pipeline!: the storage of its stages");
            assert!(CONSUMERS >= 1 && CONSUMERS <= 7, "a pipeline has 1 to 7 consumer warpgroups");
            assert!(
                A::BYTES.is_multiple_of(1024) && B::BYTES.is_multiple_of(1024),
                "a pipeline's tiles are whole KiB (each stays 1024-byte aligned in the ring)"
            );
            // The split must fit the SM's 64 Ki registers, and the producer must give up at
            // least what the consumers take (the pool is the block's allocation).
            let (p, c) = Regs::SPLIT;
            assert!(
                p == 0 || (128 * (p as usize + CONSUMERS * c as usize) <= 65536 && p <= c),
                "SplitRegisters: 128 × (P + consumers × C) must fit 65536 registers, P <= C"
            );
        };
        crate::check::block("TmaPipeline::scope");
        let n = crate::thread::block_size();
        if n as usize != 128 * (1 + CONSUMERS) {
            fail(2, n, "TmaPipeline::scope");
        }
        let stage_bytes = A::BYTES + B::BYTES;
        let dynamic = crate::shared::dynamic::<u8>();
        let base = dynamic.shared_addr();
        let ring = base.next_multiple_of(1024);
        // Below 2^32 bytes of shared memory: nothing overflows (the CPU device and a GPU have
        // at most 228 KiB).
        let need = (ring - base) as usize + STAGES * stage_bytes;
        if need > dynamic.len() {
            fail(3, (STAGES * stage_bytes + 1024) as u32, "TmaPipeline::scope");
        }
        let words = self.storage.get().as_slice();
        let bars = words.shared_addr();
        let rank = crate::thread::thread_rank_in_block();
        if rank == 0 {
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            {
                const LIVE: u64 = 0x77a5_c0b0_2790_11fe;
                if words.load(2 * STAGES) == LIVE ^ u64::from(bars) {
                    fail(7, 0, "TmaPipeline::scope");
                }
                words.store(2 * STAGES, LIVE ^ u64::from(bars));
            }
            for s in 0..STAGES as u32 {
                // SAFETY: the pipeline's own 8-byte aligned words, reachable only through this
                // scope; none is a live barrier (a scope ended with `inval` after a block
                // barrier, or none ran; a nested scope is refused above in checked mode and by
                // the CPU device); the block barrier below orders this before every use. Full
                // barriers expect the producer's one arrival, empty ones one per consumer warp.
                unsafe {
                    raw::mbarrier_init_shared(bars + 8 * s, 1);
                    raw::mbarrier_init_shared(bars + 8 * (STAGES as u32 + s), 4 * CONSUMERS as u32);
                }
            }
        }
        // SAFETY: every thread of the block that has not exited reaches this (the collective's
        // contract); exited ones are counted out and reported below.
        let here = unsafe { raw::barrier_sync_count(true) };
        if here != n {
            fail(2, here, "TmaPipeline::scope (threads of the block returned before it)");
        }
        let issued = Cell::new(0u32);
        let group = rank / 128;
        // Each role in its own branch, its register count set there (see above).
        if group == 0 {
            Regs::__producer();
            if rank < 32 {
                producer(Producer { bars, ring, issued: &issued, _brand: PhantomData, _t: PhantomData });
            }
        } else {
            Regs::__consumer();
            consumer(Consumer { bars, ring, next: 0, index: group - 1, _brand: PhantomData, _t: PhantomData });
        }
        // Every load lands before the barriers are retired and the ring is left: the producer
        // warp waits for the last fill of each stage (whatever the consumers did).
        if rank < 32 {
            let total = issued.get();
            for s in 0..(STAGES as u32).min(total) {
                let last_round = (total - 1 - s) / STAGES as u32;
                wait_phase(bars + 8 * s, last_round, "TmaPipeline::scope (the last loads)");
            }
        }
        crate::sync::barrier_unchecked();
        if rank == 0 {
            for s in 0..2 * STAGES as u32 {
                // SAFETY: every thread has passed the barrier above, after its last use of the
                // barriers, and every load completing on them has landed (the producer warp's
                // waits above).
                unsafe { raw::mbarrier_inval_shared(bars + 8 * s) };
            }
            #[cfg(all(cohort_checked, target_arch = "nvptx64"))]
            words.store(2 * STAGES, 0);
        }
    }
}

impl<'p, A: TileShape, B: TileShape<Elem = A::Elem>, const STAGES: usize> Producer<'p, A, B, STAGES> {
    /// Fills the next stage of the ring: waits until every consumer has released it (its
    /// previous contents), announces the two tiles' bytes on its full barrier, and runs `f`,
    /// which must load both tiles ([`Slot::load`]) and return the receipts. A warp collective
    /// (the producer warp's 32 lanes; lane 0 issues).
    #[inline(always)]
    #[track_caller]
    pub fn fill(&mut self, f: impl for<'f> FnOnce(Slot<'f, A>, Slot<'f, B>) -> (Loaded<'f>, Loaded<'f>)) {
        crate::check::warp("Producer::fill", u32::MAX);
        let i = self.issued.get();
        let (s, round) = (i % STAGES as u32, i / STAGES as u32);
        let (full, empty) = (self.bars + 8 * s, self.bars + 8 * (STAGES as u32 + s));
        if round > 0 {
            // The consumers' releases of this stage's previous fill (round - 1): the barrier is
            // at that phase or the next (it completes once per fill, after it).
            wait_phase(empty, round - 1, "Producer::fill (waiting for the consumers)");
        }
        if crate::thread::lane_id() == 0 {
            // SAFETY: live barrier (the scope); its current phase is `round` (completed once per
            // earlier fill of this stage, each after its bytes landed and this arrival) and
            // expects this lane's one arrival; the bytes (< 2^20) are exactly the two loads'
            // that `f` must issue (it returns one receipt per tile, which only a load makes).
            let _ = unsafe { raw::mbarrier_arrive_expect_tx_shared(full, (A::BYTES + B::BYTES) as u32) };
        }
        let at = self.ring + s * (A::BYTES + B::BYTES) as u32;
        let _receipts = f(
            Slot { addr: at, bar: full, _brand: PhantomData, _t: PhantomData },
            Slot { addr: at + A::BYTES as u32, bar: full, _brand: PhantomData, _t: PhantomData },
        );
        self.issued.set(i + 1);
    }
}

impl<'f, A: TileShape> Slot<'f, A> {
    /// Loads the box of `map` at `coords` into this tile (lane 0 issues the TMA copy, which
    /// completes on the stage's full barrier). The map's box must be the tile (`[C, R]`), its
    /// swizzle the tile's, `coords[0]` at a multiple of 16 bytes.
    ///
    /// # Panics
    /// Otherwise (a report naming the call, every build).
    #[inline(always)]
    #[track_caller]
    pub fn load(self, map: &TensorMap<'_, A::Elem, 2>, coords: [i32; 2]) -> Loaded<'f> {
        let bytes = check_load::<A>(map, coords, "Producer::fill (a tile's load)");
        if crate::thread::lane_id() == 0 {
            map.fence_once();
            // SAFETY: a valid, fenced map of this element type and rank whose tensor nobody
            // writes during the launch; `addr` is this stage's tile, 1024-byte aligned in the
            // ring inside the launch's dynamic shared memory (checked by the scope), of exactly
            // the box's bytes (checked above), which no consumer reads before the full barrier
            // completes and none still reads (the fill waited for every consumer's release);
            // the barrier's current phase announced these bytes (`fill`).
            unsafe { raw::cp_async_bulk_tensor_load::<2>(self.addr, map.addr(), coords, self.bar, bytes) };
        }
        Loaded { _brand: PhantomData }
    }
}

impl<'p, A: TileShape, B: TileShape<Elem = A::Elem>, const STAGES: usize> Consumer<'p, A, B, STAGES> {
    /// Waits for the next stage of the ring to be full and returns it (this thread's handle to
    /// its tiles). Holding every stage of the ring at once and acquiring another waits forever
    /// (in checked mode: an `Err` after 5 s).
    #[inline(always)]
    #[track_caller]
    pub fn acquire(&mut self) -> Stage<'p, A, B> {
        let i = self.next;
        let (s, round) = (i % STAGES as u32, i / STAGES as u32);
        // The barrier is at phase `round` or the next: the producer fills this stage again
        // (round + 1) only after every consumer released round `round`, this one included.
        wait_phase(self.bars + 8 * s, round, "Consumer::acquire");
        self.next = i.wrapping_add(1);
        let elems = crate::shared::dynamic::<A::Elem>();
        let at = (self.ring - elems.shared_addr()) as usize / 2 + s as usize * (A::BYTES + B::BYTES) / 2;
        Stage {
            // The ring's tiles: 1024-byte aligned, inside the dynamic window (the scope checked).
            a: A::__from_slice(elems.sub(at, A::BYTES / 2), Key(())),
            b: B::__from_slice(elems.sub(at + A::BYTES / 2, B::BYTES / 2), Key(())),
            empty: self.bars + 8 * (STAGES as u32 + s),
            _brand: PhantomData,
        }
    }

    /// Which consumer warpgroup this is (0 for warpgroup 1).
    #[inline(always)]
    #[must_use]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// This thread's warpgroup, for its MMAs.
    #[inline(always)]
    #[must_use]
    pub fn warpgroup(&self) -> Warpgroup {
        Warpgroup::of_thread()
    }
}

impl<A, B> Stage<'_, A, B> {
    /// The stage's tile of A.
    #[inline(always)]
    #[must_use]
    pub fn a(&self) -> &A {
        &self.a
    }

    /// The stage's tile of B.
    #[inline(always)]
    #[must_use]
    pub fn b(&self) -> &B {
        &self.b
    }
}

impl<A, B> Drop for Stage<'_, A, B> {
    /// Releases the stage to the producer: a warp collective (every lane of the warp drops its
    /// handle at the same call), one arrival per warp once all its lanes are done with it.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn drop(&mut self) {
        crate::check::warp("Stage (released)", u32::MAX);
        // SAFETY: the whole warp is here (the convergence rule, checked above); the warp
        // barrier orders every lane's accesses of the tiles before lane 0's release arrival.
        unsafe { raw::bar_warp_sync(u32::MAX) };
        // SAFETY: a live barrier (the scope outlives the stage: `'p`); its current phase is
        // this fill's, which still expects this warp's one arrival (each warp acquires each fill
        // once and releases it once: this drop), lane 0's (predicated: no branch between MMAs).
        unsafe { raw::mbarrier_arrive_shared_if(self.empty, crate::thread::lane_id() == 0) };
    }
}

impl<A, B> operands_sealed::Sealed for Stage<'_, A, B> {}

impl<A: TileShape, B: TileShape<Elem = A::Elem>> Operands for Stage<'_, A, B> {
    type Elem = A::Elem;
    type A = A;
    type B = B;
    #[inline(always)]
    fn __a(&self) -> &A {
        &self.a
    }
    #[inline(always)]
    fn __b(&self) -> &B {
        &self.b
    }
}
