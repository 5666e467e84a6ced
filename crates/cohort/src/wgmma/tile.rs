//! [`Tile`]: a `wgmma` operand in shared memory, its layout (swizzle) in its type; TMA loads into
//! it; the descriptors made from it.

use core::marker::PhantomData;

use crate::cg::{AsyncBarrier, Transfer};
use crate::raw;
use crate::raw::WgmmaAcc;
use crate::shared::SharedSlice;
use crate::tma::{Swizzle, TensorMap};

mod element_sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// The input element types of `wgmma` with `f32` accumulators: [`bf16`](half::bf16) and
/// [`f16`](struct@half::f16) (sealed).
pub trait MmaElement: crate::mma::Half + crate::tma::TensorElement + element_sealed::Sealed + 'static {
    #[doc(hidden)]
    /// `acc = A · Bᵀ + (scale_d ? acc : 0)`.
    ///
    /// # Safety
    /// As [`WgmmaAcc::mma_bf16`].
    unsafe fn mma<A: WgmmaAcc>(acc: &mut A, a: u64, b: u64, scale_d: bool);
}

impl MmaElement for half::bf16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma<A: WgmmaAcc>(acc: &mut A, a: u64, b: u64, scale_d: bool) {
        // SAFETY: forwarded to the caller.
        unsafe { acc.mma_bf16(a, b, scale_d) }
    }
}

impl MmaElement for half::f16 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mma<A: WgmmaAcc>(acc: &mut A, a: u64, b: u64, scale_d: bool) {
        // SAFETY: forwarded to the caller.
        unsafe { acc.mma_f16(a, b, scale_d) }
    }
}

/// `R` rows of `C` elements of `T` (`bf16`, `f16`) in shared memory, K-major, laid out as a
/// `wgmma` descriptor of swizzle `S` reads them (see the [module docs](super#tiles-and-swizzles)):
/// element (`r`, `k`) is at byte `(2k / W) · R · W + r · W + 2k % W` of the tile (`W` =
/// `S::ATOM_BYTES`), swizzled by `S`. The address is a multiple of 1024.
///
/// Not `Copy`: an MMA group or a TMA load holds the handle until it completes, so nothing
/// writes the tile through it meanwhile (another handle made from the same memory is an alias,
/// as for every shared-memory handle: see [`crate::shared`](mod@crate::shared)).
///
/// Compile errors: `R` not a positive multiple of 8, `C` not a positive multiple of 16, rows
/// not whole atoms (`2 C` a multiple of `W`), a tile past the descriptors' reach (256 KiB).
#[derive(Debug)]
pub struct Tile<T, const R: usize, const C: usize, S> {
    mem: SharedSlice<T>,
    _s: PhantomData<S>,
}

/// What the pipeline and the MMAs need to know of a [`Tile`] type (sealed: implemented by
/// `Tile` alone).
pub trait TileShape: sealed::Sealed + Sized {
    /// The element type.
    type Elem: MmaElement;
    /// The swizzle.
    type Swizzle: Swizzle;
    /// Rows (M or N).
    const ROWS: usize;
    /// Elements per row (K).
    const COLS: usize;
    /// Bytes.
    const BYTES: usize;
    #[doc(hidden)]
    fn __from_slice(mem: SharedSlice<Self::Elem>, key: Key) -> Self;
    #[doc(hidden)]
    fn __addr(&self) -> u32;
    #[doc(hidden)]
    fn __descriptor(&self, r0: usize, k0: usize, rows: usize) -> (u64, bool);
}

mod sealed {
    pub trait Sealed {}
    impl<T, const R: usize, const C: usize, S> Sealed for super::Tile<T, R, C, S> {}

    /// What only this crate can make: [`TileShape`](super::TileShape)'s constructor takes it
    /// (a tile's memory must be checked, or come from a ring the pipeline checked).
    #[derive(Debug)]
    pub struct Key(pub(in crate::wgmma) ());
}
pub(super) use sealed::Key;

impl<T: MmaElement, const R: usize, const C: usize, S: Swizzle> Tile<T, R, C, S> {
    /// Bytes of the tile.
    pub const BYTES: usize = {
        assert!(R > 0 && R.is_multiple_of(8), "wgmma::Tile: rows come in groups of 8 (core matrices)");
        assert!(C > 0 && C.is_multiple_of(16), "wgmma::Tile: K comes in steps of 16 (one MMA)");
        assert!((2 * C).is_multiple_of(S::ATOM_BYTES as usize), "wgmma::Tile: a row is whole swizzle atoms");
        assert!(R * C * 2 < 1 << 18 && R * 16 < 1 << 18, "wgmma::Tile: a descriptor reaches 256 KiB");
        R * C * 2
    };

    /// The tile over `mem`, which must be exactly `R × C` elements at a 1024-byte aligned shared
    /// address (what [`wgmma_tile!`](crate::wgmma_tile) declares).
    ///
    /// # Panics
    /// Another length or alignment (a report naming the call).
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn new(mem: SharedSlice<T>) -> Self {
        let bytes = Self::BYTES;
        if mem.len() * 2 != bytes {
            super::fail(6, mem.len() as u32, "wgmma::Tile::new (a slice of R × C elements)");
        }
        if !mem.shared_addr().is_multiple_of(1024) {
            super::fail(8, mem.shared_addr(), "wgmma::Tile::new");
        }
        Self { mem, _s: PhantomData }
    }

    /// The shared memory, as a plain slice handle again (in the tile's layout, not row-major).
    #[inline(always)]
    #[must_use]
    pub fn into_slice(self) -> SharedSlice<T> {
        self.mem
    }

    /// Where element (`r`, `k`) is kept: its index in the tile's slice.
    #[inline(always)]
    fn index(&self, r: usize, k: usize) -> usize {
        let w = S::ATOM_BYTES as usize;
        let kb = 2 * k;
        let logical = self.mem.shared_addr() + ((kb / w) * R * w + r * w + kb % w) as u32;
        // The swizzle only permutes 16-byte chunks within a row of `W` bytes: still the tile's.
        (raw::swizzle_address(logical, S::WGMMA_MODE) - self.mem.shared_addr()) as usize / 2
    }

    /// Element (`r`, `k`) (`ld.shared`).
    ///
    /// # Panics
    /// If `r >= R` or `k >= C`.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn load(&self, r: usize, k: usize) -> T {
        assert!(r < R && k < C, "wgmma::Tile: element out of the tile");
        self.mem.load(self.index(r, k))
    }

    /// Sets element (`r`, `k`) (`st.shared`).
    ///
    /// # Panics
    /// If `r >= R` or `k >= C`.
    #[inline(always)]
    #[track_caller]
    pub fn store(&mut self, r: usize, k: usize, v: T) {
        assert!(r < R && k < C, "wgmma::Tile: element out of the tile");
        self.mem.store(self.index(r, k), v)
    }

    /// The descriptor of rows `r0 .. r0 + rows`, K `k0 .. k0 + 16` (`rows <= R`), and whether
    /// that block is inside the tile at a multiple of 8 rows and 16 of K.
    ///
    /// Outside the tile: in checked mode and on the CPU device a report naming the call; in
    /// other GPU builds the block is moved into the tile (`r0` down to a multiple of 8 and at
    /// most `R - rows`, `k0` likewise) without a branch, so the MMA reads elements of the tile,
    /// never memory outside it, and the `false` returned makes [`MmaScope::issue`](super::MmaScope::issue)
    /// report the group once its MMAs are committed (a branch on a per-thread value between the
    /// MMAs of a group makes ptxas serialize them; after the commit it costs nothing; for
    /// constant arguments the checks fold away either way).
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn descriptor(&self, r0: usize, k0: usize, rows: usize) -> (u64, bool) {
        let rows = rows.min(R);
        // `&` of the comparisons, not `&&`: no branch.
        let inside = r0.is_multiple_of(8) & k0.is_multiple_of(16) & (r0 <= R - rows) & (k0 < C);
        #[cfg(any(cohort_checked, not(target_arch = "nvptx64")))]
        if !inside {
            super::fail(6, r0 as u32, "wgmma descriptor");
        }
        let (r0, k0) = (r0.min(R - rows) & !7, k0.min(C - 16) & !15);
        let w = S::ATOM_BYTES as usize;
        let kb = 2 * k0;
        let start = self.mem.shared_addr() + ((kb / w) * R * w + r0 * w + kb % w) as u32;
        // No swizzle: the two 8-element halves of K are core matrices `R · 16` bytes apart (the
        // leading offset), groups of 8 rows 128 bytes apart. Swizzled: the 16 elements lie in
        // one atom row (the leading offset is not used: 1, as CUTLASS sets it), groups of 8 rows
        // `8 W` apart.
        let lbo = if S::SPAN == 0 { (R * 16) as u32 } else { 16 };
        (raw::wgmma_descriptor(start, lbo, (8 * w) as u32, S::WGMMA_MODE), inside)
    }
}

impl<T: MmaElement, const R: usize, const C: usize, S: Swizzle> TileShape for Tile<T, R, C, S> {
    type Elem = T;
    type Swizzle = S;
    const ROWS: usize = R;
    const COLS: usize = C;
    const BYTES: usize = Self::BYTES;
    #[inline(always)]
    fn __from_slice(mem: SharedSlice<T>, key: Key) -> Self {
        let _ = key;
        Self { mem, _s: PhantomData }
    }
    #[inline(always)]
    fn __addr(&self) -> u32 {
        self.mem.shared_addr()
    }
    #[inline(always)]
    #[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
    fn __descriptor(&self, r0: usize, k0: usize, rows: usize) -> (u64, bool) {
        self.descriptor(r0, k0, rows)
    }
}

/// The checks of a TMA load of `map`'s box into a tile of type `A`: the map's box is `[C, R]`,
/// its swizzle is the tile's, a row is one atom (what one box lands as), the innermost
/// coordinate at a multiple of 16 bytes. Returns the bytes.
#[inline(always)]
#[track_caller]
pub(super) fn check_load<A: TileShape>(map: &TensorMap<'_, A::Elem, 2>, coords: [i32; 2], op: &'static str) -> u32 {
    const {
        assert!(
            A::COLS * 2 == <A::Swizzle as Swizzle>::ATOM_BYTES as usize,
            "a TMA box lands as one atom column: load tiles whose rows are one swizzle atom (C = 64 BF16 for \
             128-byte swizzle, 32 for 64-byte, 16 for 32-byte, 8 without: not a wgmma tile)"
        )
    };
    let span = map.swizzle_span();
    if span != <A::Swizzle as Swizzle>::SPAN {
        crate::cg::async_barrier_fail_with(13, span, op);
    }
    let [c, r] = map.box_dims();
    if c as usize != A::COLS || r as usize != A::ROWS {
        crate::cg::async_barrier_fail_with(14, r, op);
    }
    if (i64::from(coords[0]) * 2) % 16 != 0 {
        crate::cg::async_barrier_fail_with(11, coords[0] as u32, op);
    }
    A::BYTES as u32
}

impl<'b> AsyncBarrier<'b> {
    /// A TMA tile load into a `wgmma` [`Tile`] (block-wide, as
    /// [`tensor_load`](AsyncBarrier::tensor_load)): the box of `map` at `coords` lands in
    /// the tile in its swizzled layout. The map's box must be `[C, R]` and its swizzle the
    /// tile's `S`; a row of the tile is one swizzle atom. The tile is reachable again through
    /// [`Transfer::wait`].
    ///
    /// # Panics
    /// A map whose swizzle or box is not the tile's, an innermost coordinate not at a multiple
    /// of 16 bytes (a report naming the call, every build).
    #[inline(always)]
    #[track_caller]
    pub fn tensor_load_tile<'d, T: MmaElement, const R: usize, const C: usize, S: Swizzle>(
        &mut self,
        tile: &'d mut Tile<T, R, C, S>,
        map: &TensorMap<'_, T, 2>,
        coords: [i32; 2],
    ) -> Transfer<'b, '_, 'd, T> {
        let bytes = check_load::<Tile<T, R, C, S>>(map, coords, "AsyncBarrier::tensor_load_tile");
        self.before_arrival("AsyncBarrier::tensor_load_tile");
        crate::check::block_uniform(
            "AsyncBarrier::tensor_load_tile",
            [
                u64::from(tile.mem.shared_addr()),
                map.addr(),
                u64::from(coords[0] as u32) | u64::from(coords[1] as u32) << 32,
            ],
        );
        if crate::thread::thread_rank_in_block() == 0 {
            map.fence_once();
            // SAFETY: live barrier, this thread's arrival not yet made (`before_arrival`); the
            // phase cannot complete before it, and then waits for `bytes` (the tile's, below
            // 2^18), which the copy completes. The copy: a valid, fenced map of this element
            // type and rank whose tensor nobody writes during the launch; `tile` is 1024-byte
            // aligned shared memory of exactly the box's bytes (its type and the checks above),
            // borrowed by every thread's `Transfer` until the phase completes.
            unsafe {
                let _ = raw::mbarrier_arrive_expect_tx_shared(self.addr, bytes);
                raw::cp_async_bulk_tensor_load::<2>(tile.mem.shared_addr(), map.addr(), coords, self.addr, bytes);
            }
        } else {
            // SAFETY: live barrier, this thread's arrival not yet made.
            let _ = unsafe { raw::mbarrier_arrive_shared(self.addr) };
        }
        self.state |= crate::cg::ARRIVED;
        self.transfer()
    }
}

/// Declares shared-memory arrays for `wgmma` tiles: as [`shared!`](macro@crate::shared),
/// 1024-byte aligned. Make the tile with [`Tile::new`]`(NAME.get().as_slice())`.
///
/// ```
/// cohort::wgmma_tile! {
///     /// A 64 × 64 BF16 operand.
///     static A: [cohort::mma::bf16; 64 * 64];
/// }
/// ```
#[macro_export]
macro_rules! wgmma_tile {
    ($($(#[$m:meta])* $vis:vis static $name:ident: [$t:ty; $n:expr];)*) => {$(
        $crate::__shared_static!($(#[$m])* $vis static $name: [$t; $n], align 1024);
    )*};
}
