//! `cohort bench gemm`: a Hopper GEMM — TMA loads, `wgmma`, warp specialization — written with
//! Cohort's safe API (no `unsafe`), the design of the fast public H100 GEMMs (CUTLASS's
//! `KernelTmaWarpSpecializedCooperative`), twin of `host/benches/gemm_twins.cu`'s Hopper kernel.
//!
//! `C = A · Bᵀ`, the contract of [`gemm::gemm_tn`](crate::gemm::gemm_tn): A is M×K row-major, B is
//! stored N×K row-major (both K-contiguous: "TN"), C is M×N row-major `f32`; BF16 or F16 in,
//! FP32 accumulation (`wgmma.mma_async.sync.aligned.m64n256k16.f32.{bf16,f16}`).
//!
//! The design:
//! - a block of 384 threads (three warpgroups) computes a [`BM`]×[`BN`] = 128×256 tile of C,
//!   stepping through K [`BK`] = 64 at a time;
//! - a ring of [`STAGES`] stages in dynamic shared memory, each a 128×64 tile of A and a 256×64
//!   tile of B, 128-byte swizzled ([`Tile`]`<T, _, 64, Swizzle128B>`: one 128-byte swizzle atom
//!   per row), with a full and an empty barrier each ([`tma_pipeline!`](cohort::tma_pipeline));
//! - warpgroup 0 is the producer: it gives up registers (`setmaxnreg.dec` to 40) and its first
//!   warp fills the ring with TMA loads (one box of A and one of B per stage, lane 0 issuing),
//!   each stage as soon as the consumers released it ([`wgmma::Producer::fill`](cohort::wgmma::Producer::fill));
//! - warpgroups 1 and 2 are the consumers (`setmaxnreg.inc` to 232), each 64 rows of the tile:
//!   per stage one group of four `m64n256k16` MMAs on descriptors of the stage's tiles, the
//!   first of the whole product zero-initialising the accumulators (`scale-d = 0`); the
//!   previous stage's group is retired (`wgmma.wait_group 1`: one group stays in flight) and
//!   that stage released;
//! - the accumulators go to C from registers through a [`DisjointMatrix`] of layout
//!   [`Warpgroups`]`<32, 1>` (the producer warpgroup writes nothing), two adjacent columns per
//!   8-byte store.
//!
//! Shapes: M a multiple of 128, N of 256, K of 64 ([`host::check_shape`]; the host's
//! [`host::launch`] returns another as an `Err` before launching). The kernel itself refuses A
//! and B of different K, and a block whose tile of C reaches past C (a panic, the launch's
//! `Err`: C is written only by blocks whose whole tile lies inside it, with no check per
//! store); boxes reaching past A or B read zeros (TMA's fill).

use cohort::matrix::{Split, Warpgroups};
use cohort::mma::{bf16, f16};
use cohort::prelude::*;
use cohort::tma::TensorMap;
use cohort::wgmma::{Accumulator, MmaElement, N256, SplitRegisters, Swizzle128B, Tile};

/// Rows of C per block (two consumer warpgroups of 64).
pub const BM: usize = 128;
/// Columns of C per block (one `m64n256k16` accumulator per consumer).
pub const BN: usize = 256;
/// K per stage (one 128-byte swizzle atom of BF16 per row).
pub const BK: usize = 64;
/// Stages of the ring (4 × 48 KiB).
pub const STAGES: usize = 4;
/// Threads per block: a producer warpgroup and two consumers.
pub const THREADS: u32 = 384;
/// Bytes of dynamic shared memory a launch needs: the stages, and 1 KiB to align them.
pub const SMEM_BYTES: usize = STAGES * (BM + BN) * BK * 2 + 1024;

/// A stage's tile of A.
pub type TileA<T> = Tile<T, BM, BK, Swizzle128B>;
/// A stage's tile of B (Bᵀ: N rows of K).
pub type TileB<T> = Tile<T, BN, BK, Swizzle128B>;

/// C's layout: each consumer warpgroup's 64 × 256 accumulator, the producer writing nothing.
pub type Layout = Warpgroups<{ BN / 8 }, 1>;

cohort::tma_pipeline! {
    /// The ring's barriers.
    static RING: [STAGES];
}

/// `C = A · Bᵀ` for A (M×K, through the map `a`: dims `[K, M]`, box `[64, 128]`, 128-byte
/// swizzle), B (N×K, `b`: `[K, N]`, box `[64, 256]`), C (M×N), as the module docs say. Blocks
/// of 384 threads, a grid of `(N / 256, M / 128)`, [`SMEM_BYTES`] of dynamic shared memory.
#[kernel(instances(bf16, f16), launch_bounds(384, 1))]
pub fn gemm_tn_hopper<T: MmaElement>(
    shape: BlockShape<384>,
    a: TensorMap<T, 2>,
    b: TensorMap<T, 2>,
    mut c: DisjointMatrix<f32, Layout, u32>,
) {
    let block = cg::this_thread_block();
    let (m0, n0) = ((thread::block_idx_y() as usize * BM) as i32, (thread::block_idx_x() as usize * BN) as i32);
    let steps = a.boxes()[0];
    assert!(steps == b.boxes()[0], "gemm_hopper: A and B differ in K");
    RING.scope::<TileA<T>, TileB<T>, 2, SplitRegisters<40, 232>>(
        &block,
        |mut producer| {
            for kb in 0..steps {
                let k = (kb as usize * BK) as i32;
                producer.fill(|sa, sb| (sa.load(&a, [k, m0]), sb.load(&b, [k, n0])));
            }
        },
        |mut consumer| {
            let rows = 64 * consumer.index() as usize;
            let (acc, ()) = consumer.warpgroup().mma(Accumulator::<N256>::zeros(), |mma| {
                let mut in_flight = None;
                for kb in 0..steps {
                    let stage = consumer.acquire();
                    let group = mma.issue(stage, |tiles, ops| {
                        for kk in 0..BK / 16 {
                            ops.mma(tiles.a(rows, 16 * kk), tiles.b(0, 16 * kk), kb > 0 || kk > 0);
                        }
                    });
                    // The previous stage's MMAs have read it (this group stays in flight):
                    // release it.
                    if let Some(done) = in_flight.replace(group) {
                        drop(mma.retire_keeping::<1, _>(done));
                    }
                }
                if let Some(done) = in_flight {
                    drop(mma.retire(done));
                }
            });
            // Run j of row k of this thread's tile is accumulator elements 4j + 2k, 4j + 2k + 1.
            let regs = acc.regs();
            match c.tile(&shape).split_runs() {
                Split::Full(mut t) => {
                    for j in 0..BN / 8 {
                        for k in 0..2 {
                            t.set_run(k, j, [regs[4 * j + 2 * k], regs[4 * j + 2 * k + 1]]);
                        }
                    }
                }
                // Only where C is not whole tiles, which the host refuses (`host::check_shape`).
                Split::Edge(_) => {
                    panic!("gemm_hopper: C's tile reaches past C (M and N must be multiples of 128, 256)")
                }
            }
        },
    );
}

/// The host side: shape checks, the tensor maps, the launch configuration, a checked launch.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    extern crate std;

    use std::format;
    use std::string::String;

    use cohort_runtime::TensorMap;
    use cohort_runtime::tensor_map::{L2Promotion, Swizzle, TensorMapSpec};

    use super::{BK, BM, BN, SMEM_BYTES, THREADS, gemm_tn_hopper};

    /// Why the kernel cannot compute an `m × n × k` product, if it cannot.
    #[must_use]
    pub fn check_shape(m: usize, n: usize, k: usize) -> Option<String> {
        if m == 0 || n == 0 || k == 0 || !m.is_multiple_of(BM) || !n.is_multiple_of(BN) || !k.is_multiple_of(BK) {
            return Some(format!(
                "gemm_hopper: {m} × {n} × {k} is not supported (M must be a non-zero multiple of {BM}, N of {BN}, K \
                 of {BK})"
            ));
        }
        if n / BN > i32::MAX as usize || m / BM > 65535 || k > 1 << 31 || m > 1 << 31 || n > 1 << 31 {
            return Some(format!("gemm_hopper: {m} × {n} × {k} needs more blocks or coordinates than there are"));
        }
        None
    }

    /// The launch configuration of an `m × n` product: `(n / 256, m / 128)` blocks of 384
    /// threads, [`SMEM_BYTES`] of dynamic shared memory.
    #[must_use]
    pub fn config(m: usize, n: usize) -> cohort_runtime::LaunchConfig {
        cohort_runtime::LaunchConfig::new(((n / BN) as u32, (m / BM) as u32), THREADS)
            .with_shared_mem(SMEM_BYTES as u32)
    }

    /// The tensor map of a `rows × k` row-major operand in boxes of `box_rows × 64` (128-byte
    /// swizzle, 256-byte L2 promotion).
    ///
    /// # Errors
    /// As `TensorMap::new` (a buffer of another size, a GPU without TMA).
    pub fn map<T: Gemm>(
        buffer: &cohort_runtime::DeviceBuffer<T>,
        rows: usize,
        k: usize,
        box_rows: usize,
    ) -> cohort_runtime::Result<TensorMap<'_, T, 2>> {
        let spec = TensorMapSpec::new([k as u64, rows as u64], [BK as u32, box_rows as u32])
            .swizzle(Swizzle::B128)
            .l2_promotion(L2Promotion::B256);
        TensorMap::new(buffer, spec)
    }

    /// `C = A · Bᵀ` on `stream`: A `m × k`, B `n × k`, C `m × n`, all row-major, with the
    /// [`gemm_tn_hopper`] instance of `T` loaded from `module` (`cohort_kernels::PTX`; on a GPU
    /// of compute capability 9.0, whose module is `sm_90a`).
    ///
    /// # Errors
    /// `Error::Argument` for a shape the kernel does not support ([`check_shape`]) or buffers of
    /// other sizes; `Error::NeedsArchSpecific` where the loaded module has no `wgmma`; the
    /// launch's errors.
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

    /// [`launch`] with the kernel loaded once ([`Gemm::load`]).
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
        check(m, n, k, a.len(), b.len(), c.len())?;
        let (ma, mb) = (map(a, m, k, BM)?, map(b, n, k, BN)?);
        launch_mapped::<T>(kernel, stream, (m, n, k), &ma, &mb, c)
    }

    /// [`launch_loaded`] with the operands' tensor maps made once ([`map`]`(a, m, k, 128)`,
    /// `map(b, n, k, 256)`): what a benchmark times.
    ///
    /// # Errors
    /// As [`launch`]; maps of other shapes.
    pub fn launch_mapped<T: Gemm>(
        kernel: &T::Kernel,
        stream: &cohort_runtime::Stream,
        (m, n, k): (usize, usize, usize),
        a: &TensorMap<'_, T, 2>,
        b: &TensorMap<'_, T, 2>,
        c: &mut cohort_runtime::DeviceBuffer<f32>,
    ) -> cohort_runtime::Result<()> {
        check(m, n, k, m * k, n * k, c.len())?;
        let (sa, sb) = (a.spec(), b.spec());
        if sa.dims != [k as u64, m as u64] || sb.dims != [k as u64, n as u64] {
            return Err(cohort_runtime::Error::Argument(format!(
                "gemm_hopper: the maps describe {:?} and {:?}, the product {m} × {n} × {k} needs [{k}, {m}] and [{k}, {n}]",
                sa.dims, sb.dims
            )));
        }
        T::run(kernel, stream, config(m, n), a, b, c.as_matrix_mut(m, n)?)
    }

    fn check(m: usize, n: usize, k: usize, a: usize, b: usize, c: usize) -> cohort_runtime::Result<()> {
        if let Some(why) = check_shape(m, n, k) {
            return Err(cohort_runtime::Error::Argument(why));
        }
        let sizes = [(a, m * k, "A"), (b, n * k, "B"), (c, m * n, "C")];
        if let Some((len, want, name)) = sizes.iter().find(|(len, want, _)| len != want) {
            return Err(cohort_runtime::Error::Argument(format!(
                "gemm_hopper: {name} holds {len} elements, {m} × {n} × {k} needs {want}"
            )));
        }
        Ok(())
    }

    /// The input element types of [`gemm_tn_hopper`]: BF16 and F16.
    pub trait Gemm: cohort::wgmma::MmaElement {
        /// The loaded kernel (`gemm_tn_hopper::<Self>`).
        type Kernel;
        /// Loads `gemm_tn_hopper::<Self>` from `module`.
        ///
        /// # Errors
        /// As the kernel's `load` (`Error::NeedsArchSpecific` outside an `sm_90a` module on a GPU).
        fn load(module: &cohort_runtime::Module) -> cohort_runtime::Result<Self::Kernel>;
        #[doc(hidden)]
        fn run(
            kernel: &Self::Kernel,
            stream: &cohort_runtime::Stream,
            cfg: cohort_runtime::LaunchConfig,
            a: &TensorMap<'_, Self, 2>,
            b: &TensorMap<'_, Self, 2>,
            c: cohort_runtime::MatrixMut<'_, f32>,
        ) -> cohort_runtime::Result<()>;
    }

    macro_rules! gemm_instance {
        ($($t:ty),*) => {$(
            impl Gemm for $t {
                type Kernel = gemm_tn_hopper<$t>;
                fn load(module: &cohort_runtime::Module) -> cohort_runtime::Result<Self::Kernel> {
                    gemm_tn_hopper::<$t>::load(module)
                }
                fn run(
                    kernel: &Self::Kernel,
                    stream: &cohort_runtime::Stream,
                    cfg: cohort_runtime::LaunchConfig,
                    a: &TensorMap<'_, Self, 2>,
                    b: &TensorMap<'_, Self, 2>,
                    c: cohort_runtime::MatrixMut<'_, f32>,
                ) -> cohort_runtime::Result<()> {
                    kernel.launch(stream, cfg, a, b, c)
                }
            }
        )*};
    }
    gemm_instance!(cohort::mma::bf16, cohort::mma::f16);
}
