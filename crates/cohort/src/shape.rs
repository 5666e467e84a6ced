//! Launch shapes the compiler can use: a kernel that declares its block shape gets thread
//! indices whose bounds LLVM knows, so indexing a shared tile with them needs no run-time check.
//!
//! A kernel declares its block shape with a [`BlockShape<X, Y, Z>`] parameter. The parameter
//! costs nothing at run time (it is not passed: the PTX entry has no slot for it), but it is part
//! of the kernel's ABI record, and the launcher refuses every other block shape with
//! `Error::BlockShape` naming the kernel and both shapes — so inside the kernel, `threadIdx.x <
//! X` is a fact, and [`BlockShape::x`] hands it to LLVM (`assume`). Every bounds check on an
//! index derived from those facts (a shared tile's `load_at(y + 8 * j, x)` in an unrolled loop, a
//! [`Window`](crate::matrix::Window)'s element) then folds away at compile time; a check LLVM
//! cannot prove stays, and panics as before.
//!
//! ```
//! use cohort::prelude::*;
//!
//! cohort::shared! { static TILE: [[f32; 33]; 32]; }
//!
//! /// Transposes one 32×32 tile per block of 32×8 threads (`out` is `cols × rows`).
//! #[kernel]
//! pub fn transpose(
//!     shape: BlockShape<32, 8>,
//!     input: &[f32],
//!     rows: usize,
//!     cols: usize,
//!     mut out: DisjointMatrix<f32, TransposedTiles<Cyclic<4, 1>>>,
//! ) {
//!     let (x, y) = (shape.x() as usize, shape.y() as usize);
//!     let (bx, by) = (thread::block_idx_x() as usize, thread::block_idx_y() as usize);
//!     let Some(a) = Matrix::new(input, rows, cols) else { return };
//!     let tile = TILE.get();
//!     for j in 0..4 {
//!         tile.store_at(y + 8 * j, x, a.load_or(by * 32 + y + 8 * j, bx * 32 + x, 0.0));
//!     }
//!     sync_threads();
//!     let mut mine = out.tile(&shape);
//!     for j in 0..4 {
//!         mine.set(j, 0, tile.load_at(x, y + 8 * j));
//!     }
//! }
//! ```

use core::marker::PhantomData;

use crate::raw;

/// The block shape of a launch, `X × Y × Z` threads, as a kernel parameter: proof, checked by
/// the launcher, that every block of this launch has exactly this shape.
///
/// It is not passed at run time. The host launcher of a kernel with a `BlockShape` parameter
/// refuses any other `block` in the launch configuration (`Error::BlockShape`), and the shape is
/// part of the kernel's ABI record, so a module built from another declaration is refused at
/// `load`. Safe code cannot make one otherwise.
#[derive(Debug)]
pub struct BlockShape<const X: u32, const Y: u32 = 1, const Z: u32 = 1> {
    // Not Send: the fact holds for this launch only.
    _launch: PhantomData<*const ()>,
}

impl<const X: u32, const Y: u32, const Z: u32> Clone for BlockShape<X, Y, Z> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<const X: u32, const Y: u32, const Z: u32> Copy for BlockShape<X, Y, Z> {}

impl<const X: u32, const Y: u32, const Z: u32> BlockShape<X, Y, Z> {
    /// Threads per block, `X * Y * Z`.
    pub const THREADS: u32 = X * Y * Z;

    /// The shape as `[x, y, z]` (what the launcher compares the configuration with).
    pub const DIMS: [u32; 3] = {
        assert!(X >= 1 && Y >= 1 && Z >= 1, "a block shape has at least one thread in each dimension");
        assert!(X <= 1024 && Y <= 1024 && Z <= 64, "CUDA blocks are at most 1024 × 1024 × 64");
        assert!(X as u64 * Y as u64 * Z as u64 <= 1024, "CUDA blocks have at most 1024 threads");
        [X, Y, Z]
    };

    /// The shape of this launch.
    ///
    /// # Safety
    /// Every block of the launch must have exactly `X × Y × Z` threads (`#[kernel]` entries make
    /// this only after their launcher checked it).
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new_unchecked() -> Self {
        let _ = Self::DIMS;
        Self { _launch: PhantomData }
    }

    /// `threadIdx.x`, known to be `< X`.
    #[inline(always)]
    #[must_use]
    pub fn x(&self) -> u32 {
        let v = raw::tid_x();
        // SAFETY: the launch's blocks are X wide (the launcher checked; see `new_unchecked`).
        unsafe { core::hint::assert_unchecked(v < X) };
        v
    }

    /// `threadIdx.y`, known to be `< Y`.
    #[inline(always)]
    #[must_use]
    pub fn y(&self) -> u32 {
        if Y == 1 {
            return 0;
        }
        let v = raw::tid_y();
        // SAFETY: as in `x`.
        unsafe { core::hint::assert_unchecked(v < Y) };
        v
    }

    /// `threadIdx.z`, known to be `< Z`.
    #[inline(always)]
    #[must_use]
    pub fn z(&self) -> u32 {
        if Z == 1 {
            return 0;
        }
        let v = raw::tid_z();
        // SAFETY: as in `x`.
        unsafe { core::hint::assert_unchecked(v < Z) };
        v
    }

    /// This thread's rank in the block, `x + X * (y + Y * z)`, known to be `< X * Y * Z` (and
    /// computed with constants instead of `blockDim`).
    #[inline(always)]
    #[must_use]
    pub fn rank(&self) -> u32 {
        let r = self.x() + X * (self.y() + Y * self.z());
        // SAFETY: x < X, y < Y, z < Z.
        unsafe { core::hint::assert_unchecked(r < Self::THREADS) };
        r
    }

    /// This thread's column in the grid, `blockIdx.x * X + x`.
    #[inline(always)]
    #[must_use]
    pub fn global_x(&self) -> usize {
        raw::ctaid_x() as usize * X as usize + self.x() as usize
    }

    /// This thread's row in the grid, `blockIdx.y * Y + y`.
    #[inline(always)]
    #[must_use]
    pub fn global_y(&self) -> usize {
        raw::ctaid_y() as usize * Y as usize + self.y() as usize
    }
}
