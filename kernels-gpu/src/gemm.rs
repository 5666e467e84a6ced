//! `cohort bench gemm`: an Ampere-style tensor-core GEMM written with Cohort's safe API (no
//! `unsafe`), the same algorithm as its CUDA C++ twin `host/benches/gemm_twins.cu`.
//!
//! `C = A · Bᵀ`: A is M×K row-major, B is stored N×K row-major (the "TN" layout of cuBLAS and
//! of every fast GEMM: both operands K-contiguous), C is M×N row-major `f32`; BF16 or F16
//! inputs, FP32 accumulation (`mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`).
//!
//! The design (CUTLASS's sm_80 multistage GEMM):
//! - a block of 256 threads (8 warps; `launch_bounds(256)`, as the twin's) computes a
//!   [`BM`]×[`BN`] tile of C, stepping through K [`BK`] at a time; its warps are 2 × 4, each a
//!   64×32 tile of C: 4 × 4 m16n8 accumulators;
//! - a ring of [`STAGES`] shared stages of A's and B's tiles in dynamic shared memory
//!   ([`shared::dynamic_array`]), rows padded to [`LDS`] elements (80 bytes: `ldmatrix`'s eight
//!   rows fall on eight different 16-byte bank groups), filled by `cp.async` 16 bytes per thread
//!   per chunk ([`cg::AsyncTiles::copy`] of tile `k` along A's and B's strips: one check of
//!   `k < steps` for both, 32-bit addresses; one `cp.async` group per stage,
//!   [`cg::commit_async_copies`]), `STAGES - 1` tiles ahead of the math
//!   ([`cg::wait_prior`]`::<STAGES - 2>`: one barrier per step of K);
//! - per 16 of K, each warp loads its A fragments with `ldmatrix.x4` ([`WarpTiles::a`], as
//!   [`mma::load_a`]) and its B fragments two n8 at a time with `ldmatrix.x4`
//!   ([`WarpTiles::b_pair`], as [`mma::load_b_nk_pair`]), each lane from one pointer into its
//!   warp's slice of the stage at constant offsets, then issues 16 `mma.sync` m16n8k16;
//! - the accumulators go to C through a [`DisjointMatrix`] of layout
//!   [`MmaWarps`] under [`Within`]: the launcher checks that the grid
//!   covers nothing outside C, and each lane writes its fragment elements with no check, two
//!   adjacent columns per 8-byte store ([`ThreadTile::split_runs`](cohort::matrix::ThreadTile::split_runs)).
//!
//! Every index into shared memory is derived from the block shape, the lane and the stage
//! (`k % STAGES`), so LLVM proves the tiles' bounds and `ldmatrix`'s 16-byte alignment and removes
//! the checks; the global tiles come from [`Matrix::row_strip`]s checked once per block (inside
//! the matrices, 16-byte aligned rows, global memory).
//!
//! Shapes: M and N multiples of 128, K a multiple of 32, and the buffers' first elements
//! 16-byte aligned (any device allocation is). [`host::check_shape`] says why another is refused; the
//! host's [`host::launch`] returns that as an `Err` before launching, and the kernel itself refuses it
//! with a panic (an `Err` of the launch) before it reads or writes anything.

use cohort::matrix::{MmaWarps, Split};
use cohort::mma::{self, FragB, FragC, MmaInput, TilesA, TilesBNk, WarpTiles, bf16, f16};
use cohort::prelude::*;
use cohort::shared;

/// Rows of C per block.
pub const BM: usize = 128;
/// Columns of C per block.
pub const BN: usize = 128;
/// K per pipeline stage.
pub const BK: usize = 32;
/// Stages of the shared ring (`STAGES - 1` tiles in flight while one is consumed).
pub const STAGES: usize = 4;
/// The shared tiles' row length in elements: `BK` plus 8 of padding (80 bytes).
pub const LDS: usize = BK + 8;
/// Threads per block (8 warps).
pub const THREADS: u32 = 256;
/// Warps along N (and along M: 8 / `WARPS_N`).
const WARPS_N: usize = 4;
/// Each warp's tile of C: `WTM` × `WTN`.
const WTM: usize = BM / (8 / WARPS_N);
const WTN: usize = BN / WARPS_N;
/// m16n8 accumulators per warp: `MI` × `NI`.
const MI: usize = WTM / 16;
const NI: usize = WTN / 8;
/// Rows of the shared ring: A's `STAGES` tiles of `BM` rows, then B's of `BN`.
const SROWS: usize = STAGES * (BM + BN);
/// Bytes of dynamic shared memory a launch needs (80 KiB).
pub const SMEM_BYTES: usize = SROWS * LDS * 2;

/// C's layout: each warp's `MI × NI` accumulators, warps 4 to a row, the grid checked to stay
/// inside C.
pub type Layout = Within<MmaWarps<MI, NI, WARPS_N>>;

/// `C = A · Bᵀ` for A (M×K), B (N×K), C (M×N), as the module docs say. Blocks of 256 threads,
/// a grid of `(N / 128, M / 128)`, [`SMEM_BYTES`] of dynamic shared memory.
#[kernel(instances(bf16, f16), launch_bounds(256))]
pub fn gemm_tn<T: MmaInput<f32>>(
    shape: BlockShape<256>,
    a: Matrix<T, u32>,
    b: Matrix<T, u32>,
    mut c: DisjointMatrix<f32, Layout, u32>,
) {
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let w = shape.rank() as usize / 32;
    let (wm, wn) = (w / WARPS_N, w % WARPS_N);
    let (m0, n0) = (thread::block_idx_y() * BM as u32, thread::block_idx_x() * BN as u32);
    let tiles = shared::dynamic_array::<[T; LDS], SROWS>();
    // A's rows m0.., B's rows n0.., walked along K: checked once, here.
    assert!(a.cols() == b.cols(), "gemm: A and B differ in K");
    let (Split::Full(sa), Split::Full(sb)) = (a.row_strip::<BM, BK>(m0).split(), b.row_strip::<BN, BK>(n0).split())
    else {
        panic!("gemm: M and N must be multiples of 128 and K of 32, the grid inside them")
    };
    // Their tiles' rows are 16-byte aligned global memory: checked once, here.
    let (ta, tb) = (cg::AsyncTiles::new(sa), cg::AsyncTiles::new(sb));
    // Steps of K, in 32 bits (as the twin's `int`): K / BK tiles of each strip (the same
    // number: A and B have K columns).
    let steps: u32 = ta.windows().min(tb.windows());

    // Fills stage `s` with tile `k` of A and of B (none past K), and closes its group.
    let fill = |s: usize, k: u32| {
        if k < steps {
            ta.copy(&shape, &tiles, s * BM, k);
            tb.copy(&shape, &tiles, STAGES * BM + s * BN, k);
        }
        cg::commit_async_copies();
    };
    for s in 0..STAGES - 1 {
        fill(s, s as u32);
    }

    // This warp's rows of every stage, WTM of A and WTN of B (N×K), all BK columns: one lane
    // pointer each, blocks of 16×16 by index (stage s's block i of A is block 8 s + i).
    let ta = WarpTiles::<T, { (STAGES - 1) * BM + WTM }, BK, TilesA>::new(&tiles, wm * WTM, 0);
    let tb = WarpTiles::<T, { (STAGES - 1) * BN + WTN }, BK, TilesBNk>::new(&tiles, STAGES * BM + wn * WTN, 0);
    let mut acc = [[FragC::<f32>::splat(0.0); NI]; MI];
    for kt in 0..steps {
        // Stage kt has landed, for every thread; and every warp is done with stage kt - 1,
        // which the fill below overwrites.
        cg::wait_prior::<{ STAGES as u32 - 2 }>(&block);
        // (No overflow: kt < steps <= K / BK < 2^32 / 32.)
        let next = kt + STAGES as u32 - 1;
        fill(next as usize % STAGES, next);
        // Stage kt % STAGES: its blocks of 16 rows start at block BM / 16 · s of A's, BN / 16 · s
        // of B's.
        let s = kt as usize % STAGES;
        let (ba, bb) = (s * BM / 16, s * BN / 16);
        for kk in 0..BK / 16 {
            let fa: [_; MI] = core::array::from_fn(|i| ta.a(&warp, ba + i, kk));
            let fb: [[FragB<T>; 2]; NI / 2] = core::array::from_fn(|j| tb.b_pair(&warp, bb + j, kk));
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, d) in row.iter_mut().enumerate() {
                    *d = mma::mma_sync(&warp, &fa[i], &fb[j / 2][j % 2], d);
                }
            }
        }
    }

    // Each lane's elements of its warp's accumulators, a pair of adjacent columns at a time (the
    // layout's run j = ni of row k = 2 mi + h is elements 2h, 2h + 1 of accumulator (mi, ni)):
    // one 8-byte store each where C's rows keep pairs aligned (always, for a device buffer).
    match c.tile(&shape).split_runs() {
        Split::Full(mut t) => each_pair(&acc, |k, j, v| t.set_run(k, j, v)),
        Split::Edge(mut t) => each_pair(&acc, |k, j, v| t.set_run(k, j, v)),
    }
}

/// `f(k, j, [x, y])` for run `j` of row `k` of the `MmaWarps` layout: elements `2h`, `2h + 1`
/// of accumulator `(mi, ni)`, `k = 2 mi + h`, `j = ni`.
#[inline(always)]
fn each_pair(acc: &[[FragC<f32>; NI]; MI], mut f: impl FnMut(usize, usize, [f32; 2]) -> bool) {
    for (mi, row) in acc.iter().enumerate() {
        for (ni, d) in row.iter().enumerate() {
            for h in 0..2 {
                f(2 * mi + h, ni, [d.get(2 * h), d.get(2 * h + 1)]);
            }
        }
    }
}

/// The host side: shape checks, the launch configuration, a checked launch.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    extern crate std;

    use std::format;
    use std::string::String;

    use super::{BK, BM, BN, SMEM_BYTES, THREADS, gemm_tn};

    /// Why the kernel cannot compute an `m × n × k` product, if it cannot.
    #[must_use]
    pub fn check_shape(m: usize, n: usize, k: usize) -> Option<String> {
        if m == 0 || n == 0 || k == 0 || !m.is_multiple_of(BM) || !n.is_multiple_of(BN) || !k.is_multiple_of(BK) {
            return Some(format!(
                "gemm: {m} × {n} × {k} is not supported (M and N must be non-zero multiples of {BM}, K of {BK})"
            ));
        }
        if n / BN > i32::MAX as usize || m / BM > 65535 {
            return Some(format!("gemm: {m} × {n} needs more blocks than a grid has"));
        }
        None
    }

    /// The launch configuration of an `m × n` product: `(n / 128, m / 128)` blocks of 256 threads,
    /// [`SMEM_BYTES`] of dynamic shared memory.
    #[must_use]
    pub fn config(m: usize, n: usize) -> cohort_runtime::LaunchConfig {
        cohort_runtime::LaunchConfig::new(((n / BN) as u32, (m / BM) as u32), THREADS)
            .with_shared_mem(SMEM_BYTES as u32)
    }

    /// `C = A · Bᵀ` on `stream`: A `m × k`, B `n × k`, C `m × n`, all row-major, with the
    /// [`gemm_tn`] instance of `T` loaded from `module` (`cohort_kernels::PTX`).
    ///
    /// # Errors
    /// `Error::Argument` for a shape the kernel does not support ([`check_shape`]) or buffers of
    /// other sizes; the launch's errors.
    pub fn launch<T: Gemm>(
        module: &cohort_runtime::Module,
        stream: &cohort_runtime::Stream,
        shape: (usize, usize, usize),
        a: &cohort_runtime::DeviceBuffer<T>,
        b: &cohort_runtime::DeviceBuffer<T>,
        c: &mut cohort_runtime::DeviceBuffer<f32>,
    ) -> cohort_runtime::Result<()> {
        launch_loaded(&T::load(module)?, stream, shape, a, b, c)
    }

    /// [`launch`] with the kernel loaded once ([`Gemm::load`]): what a benchmark times.
    ///
    /// # Errors
    /// As [`launch`].
    pub fn launch_loaded<T: Gemm>(
        kernel: &T::Kernel,
        stream: &cohort_runtime::Stream,
        (m, n, k): (usize, usize, usize),
        a: &cohort_runtime::DeviceBuffer<T>,
        b: &cohort_runtime::DeviceBuffer<T>,
        c: &mut cohort_runtime::DeviceBuffer<f32>,
    ) -> cohort_runtime::Result<()> {
        if let Some(why) = check_shape(m, n, k) {
            return Err(cohort_runtime::Error::Argument(why));
        }
        let sizes = [(a.len(), m * k, "A"), (b.len(), n * k, "B"), (c.len(), m * n, "C")];
        if let Some((len, want, name)) = sizes.iter().find(|(len, want, _)| len != want) {
            return Err(cohort_runtime::Error::Argument(format!(
                "gemm: {name} holds {len} elements, {m} × {n} × {k} needs {want}"
            )));
        }
        T::run(kernel, stream, config(m, n), a.as_matrix(m, k)?, b.as_matrix(n, k)?, c.as_matrix_mut(m, n)?)
    }

    /// The input element types of [`gemm_tn`]: BF16 and F16.
    pub trait Gemm: cohort::mma::Half + cohort::DeviceCopy {
        /// The loaded kernel (`gemm_tn::<Self>`).
        type Kernel;
        /// Loads `gemm_tn::<Self>` from `module`.
        ///
        /// # Errors
        /// As the kernel's `load`.
        fn load(module: &cohort_runtime::Module) -> cohort_runtime::Result<Self::Kernel>;
        #[doc(hidden)]
        fn run(
            kernel: &Self::Kernel,
            stream: &cohort_runtime::Stream,
            cfg: cohort_runtime::LaunchConfig,
            a: cohort_runtime::MatrixRef<'_, Self>,
            b: cohort_runtime::MatrixRef<'_, Self>,
            c: cohort_runtime::MatrixMut<'_, f32>,
        ) -> cohort_runtime::Result<()>;
    }

    macro_rules! gemm_instance {
        ($($t:ty),*) => {$(
            impl Gemm for $t {
                type Kernel = gemm_tn<$t>;
                fn load(module: &cohort_runtime::Module) -> cohort_runtime::Result<Self::Kernel> {
                    gemm_tn::<$t>::load(module)
                }
                fn run(
                    kernel: &Self::Kernel,
                    stream: &cohort_runtime::Stream,
                    cfg: cohort_runtime::LaunchConfig,
                    a: cohort_runtime::MatrixRef<'_, Self>,
                    b: cohort_runtime::MatrixRef<'_, Self>,
                    c: cohort_runtime::MatrixMut<'_, f32>,
                ) -> cohort_runtime::Result<()> {
                    kernel.launch(stream, cfg, a, b, c)
                }
            }
        )*};
    }
    gemm_instance!(cohort::mma::bf16, cohort::mma::f16);
}
