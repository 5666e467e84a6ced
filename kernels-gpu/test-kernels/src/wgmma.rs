//! Hopper's warpgroup MMA (`cohort::wgmma`): MMAs on tiles threads fill, of every swizzle and
//! N = 64, 128, 256, K chained, zero-initialised through `scale-d` or accumulating onto a value;
//! TMA loads into 128-byte-swizzled tiles read by MMAs; and the misuses a run reports.
//!
//! Each kernel runs in blocks of 128 threads (one warpgroup) unless it says otherwise, and
//! writes thread `t`'s accumulator registers to `out[t]` (the host places them by
//! `cohort::raw::acc_coords`).

// Identical branches are the point of the divergent kernel: the same call at two call sites.
#![allow(clippy::if_same_then_else)]

use cohort::mma::{bf16, f16};
use cohort::prelude::*;
use cohort::tma::TensorMap;
use cohort::wgmma::{
    self, Accumulator, N64, N128, N256, NoSwizzle, Swizzle32B, Swizzle64B, Swizzle128B, Tile, Warpgroup,
};

cohort::wgmma_tile! {
    /// A's tile: 64 rows of up to 64 K.
    static WG_A: [bf16; 64 * 64];
    /// B's tile: up to 256 rows of 64 K, or 128 of 128.
    static WG_B: [bf16; 256 * 64];
    /// F16 A.
    static WG_A16: [f16; 64 * 64];
    /// F16 B.
    static WG_B16: [f16; 64 * 64];
}

cohort::async_barrier! {
    /// The TMA kernel's barrier.
    static WG_BAR;
}

/// A kernel: `a` (64 × K row-major) and `b` (N × K row-major, Bᵀ) stored by the threads into
/// tiles of swizzle `$sw`, then `K / 16` chained MMAs in one group: the accumulator starts at
/// `c0` everywhere, and the first MMA adds onto it when `accumulate != 0`, else ignores it
/// (`scale-d = 0`: the host passes NaN).
macro_rules! wgmma_kernel {
    ($(#[$m:meta])* $name:ident, $t:ty, $sa:ident, $sb:ident, $n:literal, $shape:ty, $sw:ty, $k:literal) => {
        $(#[$m])*
        // One warpgroup a block: `.maxntid 128` lets ptxas give the 128 (N = 256) accumulators
        // their registers even when the module is loaded for blocks of up to 512 threads (the
        // tests' `threads_per_block(512)`, which would hold every kernel to 128 registers).
        #[kernel(launch_bounds(128))]
        pub fn $name(a: &[$t], b: &[$t], c0: f32, accumulate: u32, mut out: DisjointSlice<[f32; $n / 2]>) {
            let block = cg::this_thread_block();
            let wg = Warpgroup::new(&block);
            let t = thread::thread_rank_in_block() as usize;
            let mut ta = Tile::<$t, 64, $k, $sw>::new($sa.get().as_slice().sub(0, 64 * $k));
            let mut tb = Tile::<$t, $n, $k, $sw>::new($sb.get().as_slice().sub(0, $n * $k));
            for e in (t..64 * $k).step_by(128) {
                ta.store(e / $k, e % $k, a[e]);
            }
            for e in (t..$n * $k).step_by(128) {
                tb.store(e / $k, e % $k, b[e]);
            }
            wgmma::sync_tile_stores(&block);
            let (acc, _tiles) = wg.mma(Accumulator::<$shape>::splat(c0), |mma| {
                let g = mma.issue((ta, tb), |tiles, ops| {
                    for kk in 0..$k / 16 {
                        ops.mma(tiles.a(0, 16 * kk), tiles.b(0, 16 * kk), kk > 0 || accumulate != 0);
                    }
                });
                mma.retire(g)
            });
            out.set(thread::index_1d(), acc.regs());
        }
    };
}

wgmma_kernel!(
    /// BF16, N = 64, no swizzle (core matrices), K = 64.
    wgmma_n64_none,
    bf16,
    WG_A,
    WG_B,
    64,
    N64,
    NoSwizzle,
    64
);
wgmma_kernel!(
    /// BF16, N = 128, 128-byte swizzle, K = 64.
    wgmma_n128_sw128,
    bf16,
    WG_A,
    WG_B,
    128,
    N128,
    Swizzle128B,
    64
);
wgmma_kernel!(
    /// BF16, N = 256, 128-byte swizzle, K = 64 (the GEMM's shape).
    wgmma_n256_sw128,
    bf16,
    WG_A,
    WG_B,
    256,
    N256,
    Swizzle128B,
    64
);
wgmma_kernel!(
    /// BF16, N = 256, no swizzle, K = 32.
    wgmma_n256_none,
    bf16,
    WG_A,
    WG_B,
    256,
    N256,
    NoSwizzle,
    32
);
wgmma_kernel!(
    /// BF16, N = 64, 64-byte swizzle, K = 64 (two atoms per row).
    wgmma_n64_sw64,
    bf16,
    WG_A,
    WG_B,
    64,
    N64,
    Swizzle64B,
    64
);
wgmma_kernel!(
    /// BF16, N = 128, 32-byte swizzle, K = 64 (four atoms per row).
    wgmma_n128_sw32,
    bf16,
    WG_A,
    WG_B,
    128,
    N128,
    Swizzle32B,
    64
);
wgmma_kernel!(
    /// F16, N = 64, 128-byte swizzle, K = 64.
    wgmma_f16_n64_sw128,
    f16,
    WG_A16,
    WG_B16,
    64,
    N64,
    Swizzle128B,
    64
);

/// TMA and MMA agree on the swizzle: A's box (64 × 64 at K `ka`, row `ra` of a larger matrix)
/// and B's (128 × 64 at K `kb`, row `rb`) land by TMA in 128-byte-swizzled tiles, which four
/// chained MMAs read (the first zero-initialising).
#[kernel(launch_bounds(128))]
pub fn wgmma_tma_sw128(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    ka: i32,
    ra: i32,
    kb: i32,
    rb: i32,
    mut out: DisjointSlice<[f32; 64]>,
) {
    let block = cg::this_thread_block();
    let wg = Warpgroup::new(&block);
    let mut ta = Tile::<bf16, 64, 64, Swizzle128B>::new(WG_A.get().as_slice());
    let mut tb = Tile::<bf16, 128, 64, Swizzle128B>::new(WG_B.get().as_slice().sub(0, 128 * 64));
    WG_BAR.scope(&block, |bar| {
        bar.tensor_load_tile(&mut ta, &a, [ka, ra]).wait();
        bar.tensor_load_tile(&mut tb, &b, [kb, rb]).wait();
    });
    let (acc, _) = wg.mma(Accumulator::<N128>::splat(f32::NAN), |mma| {
        let g = mma.issue((ta, tb), |tiles, ops| {
            for kk in 0..4 {
                ops.mma(tiles.a(0, 16 * kk), tiles.b(0, 16 * kk), kk > 0);
            }
        });
        mma.retire(g)
    });
    out.set(thread::index_1d(), acc.regs());
}

/// Misuses, each ending the launch with an `Err`: `what` = 0, a tile at a shared address that
/// is not 1024-byte aligned; 1, a descriptor of A's rows 8..72 of a 64-row tile; 2, a block of
/// 96 threads (not whole warpgroups: launch it so); 3, warps 0–2 at `issue` while warp 3 is at
/// another warpgroup collective (checked mode and the CPU device); 4, warp 3 never comes (the
/// CPU device only: on a GPU the check itself would wait for it).
#[kernel(launch_bounds(128))]
pub fn wgmma_misuse(what: u32, mut out: DisjointSlice<f32>) {
    let block = cg::this_thread_block();
    let wg = Warpgroup::new(&block);
    if what == 0 {
        let _ = Tile::<bf16, 8, 64, Swizzle128B>::new(WG_B.get().as_slice().sub(256, 8 * 64));
    }
    let ta = Tile::<bf16, 64, 64, Swizzle128B>::new(WG_A.get().as_slice());
    let tb = Tile::<bf16, 64, 64, Swizzle128B>::new(WG_B.get().as_slice().sub(0, 64 * 64));
    let warp = thread::warp_id();
    if what == 4 && warp == 3 {
        return;
    }
    let (acc, _) = wg.mma(Accumulator::<N64>::zeros(), |mma| {
        if what == 3 && warp == 3 {
            return None;
        }
        let g = mma.issue((ta, tb), |tiles, ops| {
            let r0 = if what == 1 { 8 } else { 0 };
            ops.mma(tiles.a(r0, 0), tiles.b(0, 0), false);
        });
        Some(mma.retire(g))
    });
    out.set(thread::index_1d(), acc.get(0));
}

cohort::tma_pipeline! {
    /// The register-split kernel's ring (one stage, never filled).
    static SPLIT_RING: [1];
}

/// A pipeline whose warpgroups split the registers (`SplitRegisters<40, 232>`: the producer
/// drops to 40, the consumer rises to 232) in a kernel compiled for **two** blocks of 256
/// threads per SM (`launch_bounds(256, 2)`: at most 128 registers per thread, so a block holds
/// 128 × 256 = 32768 where the split needs 128 × 40 + 128 × 232 = 34816): on a GPU the consumer
/// would wait forever for registers, and the launch must be refused. Blocks of 256 threads (a
/// producer and one consumer), 16 KiB + 1 KiB of dynamic shared memory; writes 1 to `out[t]`
/// (the CPU device, which has no register file to split, runs it).
#[kernel(launch_bounds(256, 2))]
pub fn wgmma_split_too_few_registers(mut out: DisjointSlice<f32>) {
    type T64 = Tile<bf16, 64, 64, Swizzle128B>;
    let block = cg::this_thread_block();
    SPLIT_RING.scope::<T64, T64, 1, wgmma::SplitRegisters<40, 232>>(&block, |_producer| {}, |_consumer| {});
    out.set(thread::index_1d(), 1.0);
}
