//! The MMAs: accumulators, the scope that owns them while MMAs run, groups of MMAs and the
//! operands they hold.

use core::marker::PhantomData;
use core::mem::ManuallyDrop;

use super::tile::{MmaElement, TileShape};
use super::{Brand, Tile, Warpgroup};
use crate::raw::{self, WgmmaAcc};
use crate::tma::Swizzle;

mod shape_sealed {
    pub trait Sealed {}
}

/// The N of an `m64nNk16` MMA (sealed): [`N8`] … [`N256`].
pub trait Shape: shape_sealed::Sealed + 'static {
    /// N.
    const N: usize;
    /// A thread's accumulator registers: `[f32; N / 2]`.
    type Regs: WgmmaAcc + core::fmt::Debug;
    #[doc(hidden)]
    fn splat(v: f32) -> Self::Regs;
    #[doc(hidden)]
    fn get(r: &Self::Regs, i: usize) -> f32;
}

macro_rules! shapes {
    ($($(#[$m:meta])* $name:ident => $n:literal;)*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug)]
        pub enum $name {}
        impl shape_sealed::Sealed for $name {}
        impl Shape for $name {
            const N: usize = $n;
            type Regs = [f32; $n / 2];
            #[inline(always)]
            fn splat(v: f32) -> Self::Regs {
                [v; $n / 2]
            }
            #[inline(always)]
            fn get(r: &Self::Regs, i: usize) -> f32 {
                r[i]
            }
        }
    )*};
}

shapes! {
    /// `m64n8k16`: 4 accumulators per thread.
    N8 => 8;
    /// `m64n16k16`: 8 per thread.
    N16 => 16;
    /// `m64n32k16`: 16 per thread.
    N32 => 32;
    /// `m64n64k16`: 32 per thread.
    N64 => 64;
    /// `m64n128k16`: 64 per thread.
    N128 => 128;
    /// `m64n256k16`: 128 per thread (the fast GEMMs' shape).
    N256 => 256;
}

/// A warpgroup's 64 × N `f32` accumulator of `m64nNk16` MMAs, this thread's `N / 2` elements:
/// element `i` is at ([`coords`](Self::coords)) row `16 w + l / 4 + 8 ((i / 2) % 2)`, column
/// `8 (i / 4) + 2 (l % 4) + i % 2` for lane `l` of warp `w` of the warpgroup.
///
/// While MMAs may write it, it belongs to the [`MmaScope`] (see [`Warpgroup::mma`]): it can be
/// read only once they have all completed. Index it with constants (an unrolled loop): an
/// index LLVM cannot fold puts the registers in local memory. Not `Copy`: moved into the scope,
/// it is gone until the scope hands it back.
#[derive(Debug)]
pub struct Accumulator<S: Shape> {
    regs: S::Regs,
}

impl<S: Shape> Accumulator<S> {
    /// Elements per thread (`N / 2`).
    pub const LEN: usize = S::N / 2;

    /// Every element `v` (MMAs with `accumulate: false` need no initial value: any will do).
    #[inline(always)]
    #[must_use]
    pub fn splat(v: f32) -> Self {
        Self { regs: S::splat(v) }
    }

    /// Every element 0.
    #[inline(always)]
    #[must_use]
    pub fn zeros() -> Self {
        Self::splat(0.0)
    }

    /// Element `i`.
    ///
    /// # Panics
    /// If `i >= LEN`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn get(&self, i: usize) -> f32 {
        assert!(i < Self::LEN, "accumulator element index out of bounds");
        S::get(&self.regs, i)
    }

    /// Where element `i` of this thread's share sits in the 64 × N accumulator: (row, column).
    #[inline(always)]
    #[must_use]
    pub fn coords(i: usize) -> (usize, usize) {
        let w = (crate::thread::thread_rank_in_block() / 32) % 4;
        let (r, c) = raw::acc_coords(w, crate::thread::lane_id(), i as u32);
        (r as usize, c as usize)
    }

    /// Calls `f(row, col, value)` for each of this thread's elements.
    #[inline(always)]
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, f32)) {
        for i in 0..Self::LEN {
            let (r, c) = Self::coords(i);
            f(r, c, S::get(&self.regs, i));
        }
    }

    /// The registers.
    #[inline(always)]
    #[must_use]
    pub fn regs(&self) -> S::Regs {
        self.regs
    }
}

/// Tiles that a group of MMAs reads, held by the [`Group`] until it has completed (sealed to
/// the kinds that give up their handle: a pair of [`Tile`]s by value, a pipeline
/// [`Stage`](super::Stage)). `A` is the M side, `B` the N side (Bᵀ, K-major).
pub trait Operands: operands_sealed::Sealed {
    /// The element type of both.
    type Elem: MmaElement;
    /// A's tile type.
    type A: TileShape<Elem = Self::Elem>;
    /// B's tile type.
    type B: TileShape<Elem = Self::Elem>;
    #[doc(hidden)]
    fn __a(&self) -> &Self::A;
    #[doc(hidden)]
    fn __b(&self) -> &Self::B;
}

pub(super) mod operands_sealed {
    pub trait Sealed {}
}

impl<T, const RA: usize, const CA: usize, SA, const RB: usize, const CB: usize, SB> operands_sealed::Sealed
    for (Tile<T, RA, CA, SA>, Tile<T, RB, CB, SB>)
{
}

impl<T: MmaElement, const RA: usize, const CA: usize, SA: Swizzle, const RB: usize, const CB: usize, SB: Swizzle>
    Operands for (Tile<T, RA, CA, SA>, Tile<T, RB, CB, SB>)
{
    type Elem = T;
    type A = Tile<T, RA, CA, SA>;
    type B = Tile<T, RB, CB, SB>;
    #[inline(always)]
    fn __a(&self) -> &Self::A {
        &self.0
    }
    #[inline(always)]
    fn __b(&self) -> &Self::B {
        &self.1
    }
}

/// A group's operand tiles, inside [`MmaScope::issue`]: the only source of the descriptors its
/// MMAs take (`'g` is the group's brand; `S` the MMAs' shape, whose N rows of B a descriptor
/// covers).
#[derive(Debug)]
pub struct OperandTiles<'g, O, S> {
    o: &'g O,
    /// Set when a descriptor was outside its tile (GPU builds without checks: reported after
    /// the group's commit, see [`Tile`](super::Tile)'s descriptors).
    outside: core::cell::Cell<bool>,
    _brand: Brand<'g>,
    _s: PhantomData<S>,
}

/// A descriptor of 64 rows of A or N rows of B and 16 of K of a group's tile (`'g`: the
/// group's brand; made by [`OperandTiles::a`] / [`OperandTiles::b`]).
#[derive(Clone, Copy, Debug)]
pub struct Desc<'g, T> {
    desc: u64,
    _brand: Brand<'g>,
    _t: PhantomData<T>,
}

impl<'g, O: Operands, S: Shape> OperandTiles<'g, O, S> {
    /// The descriptor of A's rows `r0 .. r0 + 64` and K `k0 .. k0 + 16`.
    ///
    /// # Panics
    /// `r0` not a multiple of 8, `k0` not a multiple of 16, or the block outside the tile: a
    /// report naming the call in checked mode and on the CPU device; in other builds the block
    /// is moved into the tile and [`MmaScope::issue`] reports the group after committing its
    /// MMAs (see [`Tile`]'s descriptors). For constants the check folds away.
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    #[must_use]
    pub fn a(&self, r0: usize, k0: usize) -> Desc<'g, O::Elem> {
        self.desc(self.o.__a().__descriptor(r0, k0, 64))
    }

    /// The descriptor of B's rows `r0 .. r0 + N` (N: the MMAs' shape) and K `k0 .. k0 + 16`.
    ///
    /// # Panics
    /// As [`a`](Self::a).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    #[must_use]
    pub fn b(&self, r0: usize, k0: usize) -> Desc<'g, O::Elem> {
        const { assert!(S::N <= <O::B as TileShape>::ROWS, "wgmma: B's tile has fewer rows than the MMA's N") };
        self.desc(self.o.__b().__descriptor(r0, k0, S::N))
    }

    #[inline(always)]
    fn desc<T>(&self, (desc, inside): (u64, bool)) -> Desc<'g, T> {
        // `|`, not a branch: the report waits until the group is committed.
        self.outside.set(self.outside.get() | !inside);
        Desc { desc, _brand: PhantomData, _t: PhantomData }
    }

    /// The operands (to read elements of the tiles).
    #[inline(always)]
    #[must_use]
    pub fn operands(&self) -> &O {
        self.o
    }
}

impl<T> Desc<'_, T> {
    /// The 64-bit matrix descriptor.
    #[inline(always)]
    #[must_use]
    pub fn bits(&self) -> u64 {
        self.desc
    }
}

/// The MMAs of one group, inside [`MmaScope::issue`]: each [`mma`](Self::mma) is one
/// `wgmma.mma_async` on the scope's accumulator.
#[derive(Debug)]
pub struct Issue<'g, 'a, S: Shape> {
    acc: &'a mut S::Regs,
    _brand: PhantomData<fn(&'g ()) -> &'g ()>,
}

impl<'g, S: Shape> Issue<'g, '_, S> {
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}`: `acc = A · Bᵀ + acc` (`accumulate`)
    /// or `A · Bᵀ` (not: the accumulator's value is not read, `scale-d = 0`), for the 64 × 16 A
    /// and N × 16 B of the descriptors. A warpgroup collective (every thread with the same
    /// operands).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    pub fn mma<T: MmaElement>(&mut self, a: Desc<'g, T>, b: Desc<'g, T>, accumulate: bool) {
        crate::check::warpgroup("wgmma mma");
        // SAFETY: the warpgroup is converged here (`MmaScope::issue`'s check, the convergence
        // rule); the fence was made at the start of the group; the descriptors come from tiles
        // of this group's operands (the brand `'g`) and cover 64 rows of A, N of B and 16 of K
        // inside them (the tiles made them so); the group holds the tiles until a wait covers
        // it; the accumulator belongs to the scope, which reads it only after `wait_group 0`.
        unsafe { T::mma(self.acc, a.desc, b.desc, accumulate) }
    }
}

/// MMAs committed as one group, holding their operand tiles (`O`) until [`MmaScope::retire`]
/// hands them back after the group completed. Dropped instead, it waits for every group of the
/// warpgroup (`wgmma.wait_group 0`) before its operands are dropped (a warpgroup collective).
#[derive(Debug)]
#[must_use = "a group holds its tiles until it is retired (`MmaScope::retire`); dropped, it waits for every group"]
pub struct Group<'s, O> {
    operands: ManuallyDrop<O>,
    seq: u32,
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl<O> Drop for Group<'_, O> {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn drop(&mut self) {
        crate::check::warpgroup("wgmma group dropped");
        // SAFETY: a warpgroup collective, converged (the check, the convergence rule); sm_90a
        // (a group exists only after `issue`, which traps elsewhere).
        unsafe { raw::wgmma_wait_group::<0>() };
        // SAFETY: dropped once, here; never used again.
        unsafe { ManuallyDrop::drop(&mut self.operands) };
    }
}

/// A warpgroup's MMAs in flight on one accumulator, which the scope owns ([`Warpgroup::mma`]).
#[derive(Debug)]
pub struct MmaScope<'s, S: Shape> {
    acc: S::Regs,
    committed: u32,
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl Warpgroup {
    /// Runs MMAs on `acc` (see [`MmaScope`]) and returns it, with `f`'s result, once every MMA
    /// of the scope has completed (`wgmma.wait_group 0`, the accumulators as its operands). A
    /// warpgroup collective: all 128 threads call it, converged.
    #[inline(always)]
    #[track_caller]
    pub fn mma<S: Shape, R>(
        &self,
        acc: Accumulator<S>,
        f: impl for<'s> FnOnce(&mut MmaScope<'s, S>) -> R,
    ) -> (Accumulator<S>, R) {
        let mut scope = MmaScope { acc: acc.regs, committed: 0, _brand: PhantomData };
        let r = f(&mut scope);
        crate::check::warpgroup("Warpgroup::mma (its end)");
        // SAFETY: converged (the check); sm_90a (as every wgmma: a trap elsewhere, which the
        // runtime never launches); the registers are operands.
        unsafe { scope.acc.wait::<0>() };
        (Accumulator { regs: scope.acc }, r)
    }
}

impl<'s, S: Shape> MmaScope<'s, S> {
    /// One group of MMAs on `operands`: `wgmma.fence` (the accumulator as its operand), the
    /// MMAs `f` issues with descriptors of `operands`' tiles ([`OperandTiles`]), then
    /// `wgmma.commit_group`. The group holds `operands` until [`retire`](Self::retire). A
    /// warpgroup collective: all 128 threads call it with the same operands, converged.
    #[inline(always)]
    #[track_caller]
    pub fn issue<O: Operands>(
        &mut self,
        operands: O,
        f: impl for<'g> FnOnce(&OperandTiles<'g, O, S>, &mut Issue<'g, '_, S>),
    ) -> Group<'s, O> {
        crate::check::warpgroup("MmaScope::issue");
        // SAFETY: converged (the check); sm_90a; the registers are operands.
        unsafe { self.acc.fence() };
        let tiles =
            OperandTiles { o: &operands, outside: core::cell::Cell::new(false), _brand: PhantomData, _s: PhantomData };
        f(&tiles, &mut Issue { acc: &mut self.acc, _brand: PhantomData });
        // SAFETY: converged (the check above, nothing between diverges: `f` is the warpgroup's).
        unsafe { raw::wgmma_commit_group() };
        // A descriptor outside its tile (moved into it, so the MMAs read only the tile): the
        // group's result is not what was asked, a report (every build; in checked mode and on the
        // CPU device the descriptor's own call reported it already).
        if tiles.outside.get() {
            super::fail(10, 0, "MmaScope::issue");
        }
        self.committed = self.committed.wrapping_add(1);
        Group { operands: ManuallyDrop::new(operands), seq: self.committed, _brand: PhantomData }
    }

    /// Waits until `group` has completed (`wgmma.wait_group N`, N the groups committed after
    /// it, at most 3, the newer ones left in flight) and hands its operands back. A warpgroup
    /// collective.
    #[inline(always)]
    #[track_caller]
    pub fn retire<O>(&mut self, group: Group<'s, O>) -> O {
        let newer = self.committed.wrapping_sub(group.seq);
        crate::check::warpgroup("MmaScope::retire");
        // With `newer` groups committed after this one, waiting until at most `min(newer, 3)`
        // are pending waits for this one.
        // SAFETY: (each arm) converged (the check); sm_90a; the registers are operands.
        unsafe {
            match newer {
                0 => self.acc.wait::<0>(),
                1 => self.acc.wait::<1>(),
                2 => self.acc.wait::<2>(),
                _ => self.acc.wait::<3>(),
            }
        }
        Self::take(group)
    }

    /// [`retire`](Self::retire) for a group with at least `N` groups committed after it (a
    /// pipeline's steady state: one group in flight while the previous one is retired), with
    /// one `wgmma.wait_group N` and no branch on the count (so the loop around it keeps its
    /// MMAs back to back). A warpgroup collective.
    ///
    /// # Panics
    /// Fewer than `N` groups committed after `group` (a report naming the call): waiting `N`
    /// would not cover it.
    #[inline(always)]
    #[track_caller]
    pub fn retire_keeping<const N: u32, O>(&mut self, group: Group<'s, O>) -> O {
        const { assert!(N <= 7, "wgmma.wait_group: at most 7 groups in flight") };
        let newer = self.committed.wrapping_sub(group.seq);
        if newer < N {
            super::fail(9, newer, "MmaScope::retire_keeping");
        }
        crate::check::warpgroup("MmaScope::retire_keeping");
        // SAFETY: converged (the check); sm_90a; the registers are operands. At least `N`
        // groups were committed after this one, so at most `N` pending means it completed.
        unsafe { self.acc.wait::<N>() };
        Self::take(group)
    }

    /// A retired group's operands.
    #[inline(always)]
    fn take<O>(group: Group<'s, O>) -> O {
        let mut group = ManuallyDrop::new(group);
        // SAFETY: the group is not dropped (ManuallyDrop) nor used again; its operands are
        // taken once.
        unsafe { ManuallyDrop::take(&mut group.operands) }
    }
}
