//! Tensor cores (`cohort::mma`): `mma.sync` on fragments built from global data, `ldmatrix`
//! from shared tiles, the WMMA layer, conversions, and divergent calls for checked mode.

// Identical branches are the point of the divergent kernels: the same call at two call sites.
#![allow(clippy::if_same_then_else)]

use cohort::mma::{self, AccElement, FragA, FragB, FragC, Half, MmaInput, bf16, f16, wmma};
use cohort::prelude::*;

/// The warp's rank in the grid (blocks of a multiple of 32 threads).
fn warp_rank() -> usize {
    thread::global_id() as usize / 32
}

/// Per warp `w`: `d = a · b + c` for the 16×16 row-major `a[256 w..]`, the 16×8 (K×N)
/// row-major `b[128 w..]` and the 16×8 row-major `c[128 w..]`, fragments built element by
/// element from their coordinates (`Fragment::from_fn`). Thread `t` writes its four elements of
/// D to `out[t]` (in element order: the host places them by `element_coords`).
#[kernel(instances(bf16, f16))]
pub fn mma_from_global<T: MmaInput<f32>>(a: &[T], b: &[T], c: &[f32], mut out: DisjointSlice<[f32; 4]>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let w = warp_rank();
    let fa = FragA::<T>::from_fn(|r, k| a[256 * w + 16 * r + k]);
    let fb = FragB::<T>::from_fn(|k, n| b[128 * w + 8 * k + n]);
    let fc = FragC::<f32>::from_fn(|r, n| c[128 * w + 8 * r + n]);
    let d = mma::mma_sync(&warp, &fa, &fb, &fc);
    out.set(&i, [d.get(0), d.get(1), d.get(2), d.get(3)]);
}

/// [`mma_from_global`] with F16 accumulators.
#[kernel]
pub fn mma_f16_accumulate(a: &[f16], b: &[f16], c: &[f16], mut out: DisjointSlice<[f16; 4]>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let w = warp_rank();
    let fa = FragA::<f16>::from_fn(|r, k| a[256 * w + 16 * r + k]);
    let fb = FragB::<f16>::from_fn(|k, n| b[128 * w + 8 * k + n]);
    let fc = FragC::<f16>::from_fn(|r, n| c[128 * w + 8 * r + n]);
    let d = mma::mma_sync(&warp, &fa, &fb, &fc);
    out.set(&i, [d.get(0), d.get(1), d.get(2), d.get(3)]);
}

cohort::shared! {
    /// Four warps' A blocks (16 rows each), at columns 8..24 of rows of 24 (48 bytes: rows
    /// stay 16-byte aligned, and the block is not at column 0).
    static LDM_A: [[bf16; 24]; 64];
    /// Four warps' B blocks, K×N (16 rows of 8 each).
    static LDM_B: [[bf16; 8]; 64];
    /// Four warps' Bᵀ blocks, N×K (8 rows of 16 each).
    static LDM_BT: [[bf16; 16]; 32];
}

/// (Blocks of 128 threads.) Per warp `w` of the grid, as [`mma_from_global`] (BF16), with the
/// fragments loaded by `ldmatrix` from shared tiles: A by `load_a` (`x4`), B by `load_b`
/// (`x2.trans` from K×N) and by `load_b_nk` (`x2` from N×K, `bt` holding Bᵀ). Thread `t`
/// writes `[D from load_b; D from load_b_nk]` to `out[t]` and the registers of its A, B and
/// Bᵀ-loaded fragments and of `ldmatrix_x4_trans` on the A block (for comparison with
/// `element_coords`) to `regs[t]`.
#[kernel]
pub fn mma_ldmatrix(
    a: &[bf16],
    b: &[bf16],
    bt: &[bf16],
    c: &[f32],
    mut out: DisjointSlice<[f32; 8]>,
    mut regs: DisjointSlice<[u32; 12]>,
) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let w = warp_rank();
    let wl = warp.meta_group_rank() as usize;
    let l = warp.thread_rank() as usize;
    let (sa, sb, sbt) = (LDM_A.get(), LDM_B.get(), LDM_BT.get());
    // Each lane copies its share of the warp's blocks into shared memory.
    for e in (l..256).step_by(32) {
        sa.store_at(16 * wl + e / 16, 8 + e % 16, a[256 * w + e]);
    }
    for e in (l..128).step_by(32) {
        sb.store_at(16 * wl + e / 8, e % 8, b[128 * w + e]);
        sbt.store_at(8 * wl + e / 16, e % 16, bt[128 * w + e]);
    }
    block.sync();
    let fa = mma::load_a(&warp, &sa, 16 * wl, 8);
    let fb = mma::load_b(&warp, &sb, 16 * wl, 0);
    let fbt = mma::load_b_nk(&warp, &sbt, 8 * wl, 0);
    let at = mma::ldmatrix_x4_trans(&warp, &sa, 16 * wl + l % 8 + 8 * (l / 16), 8 + 8 * ((l / 8) % 2));
    let fc = FragC::<f32>::from_fn(|r, n| c[128 * w + 8 * r + n]);
    let d1 = mma::mma_sync(&warp, &fa, &fb, &fc);
    let d2 = mma::mma_sync(&warp, &fa, &fbt, &fc);
    out.set(&i, [d1.get(0), d1.get(1), d1.get(2), d1.get(3), d2.get(0), d2.get(1), d2.get(2), d2.get(3)]);
    let (ra, rb, rbt) = (fa.regs(), fb.regs(), fbt.regs());
    regs.set(&i, [ra[0], ra[1], ra[2], ra[3], rb[0], rb[1], rbt[0], rbt[1], at[0], at[1], at[2], at[3]]);
}

cohort::shared! {
    /// The block's 32×16 slice of A for one step of k.
    static WM_A: [[bf16; 16]; 32];
    /// The block's 16×32 slice of B (K×N) for one step of k.
    static WM_B: [[bf16; 32]; 16];
    /// The block's 32×16 slice of Bᵀ (N×K) for one step of k.
    static WM_BT: [[bf16; 16]; 32];
    /// The block's 32×32 tile of D.
    static WM_D: [[f32; 32]; 32];
}

/// (Blocks of 128 threads: 4 warps, 2×2 of 16×16.) `D = A · B + C` with the WMMA layer, for
/// row-major A (M×K), B (K×N), C (M×N), M and N multiples of 32, K of 16; each block computes
/// a 32×32 tile (a 1-D grid of `(M / 32) (N / 32)` blocks, block `b` at rows `32 (b / (N / 32))..`,
/// columns `32 (b % (N / 32))..`). `mode` 0: A and B through
/// shared tiles (B row-major); 1: B column-major (the tile holds Bᵀ, from `bt`, N×K); 2: A and
/// B loaded from global memory (`load_matrix_sync_global`). Each thread writes 8 elements of
/// D: row `t / 4` of the tile, columns `8 (t % 4)..`, to `out[block · 128 + t]`.
#[kernel]
pub fn wmma_gemm(a: &[bf16], b: &[bf16], bt: &[bf16], c: &[f32], dims: [u32; 4], mut out: DisjointSlice<[f32; 8]>) {
    let [_m, n, k, mode] = dims.map(|d| d as usize);
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let t = block.thread_rank() as usize;
    let wl = warp.meta_group_rank() as usize;
    let (wy, wx) = (wl / 2, wl % 2);
    let bi = thread::block_idx_x() as usize;
    let (r0, c0) = (32 * (bi / (n / 32)), 32 * (bi % (n / 32)));
    let (sa, sb, sbt, sd) = (WM_A.get(), WM_B.get(), WM_BT.get(), WM_D.get());
    let mut fc = wmma::Fragment::<mma::Accumulator, 16, 16, 16, f32, mma::RowMajor>::new();
    wmma::load_matrix_sync_global(&warp, &mut fc, c, n, r0 + 16 * wy, c0 + 16 * wx);
    let mut acc = fc;
    for k0 in (0..k).step_by(16) {
        // 512 elements of each slice, 4 per thread.
        for e in (t..512).step_by(128) {
            sa.store_at(e / 16, e % 16, a[(r0 + e / 16) * k + k0 + e % 16]);
            sb.store_at(e / 32, e % 32, b[(k0 + e / 32) * n + c0 + e % 32]);
            sbt.store_at(e / 16, e % 16, bt[(c0 + e / 16) * k + k0 + e % 16]);
        }
        block.sync();
        let mut fa = wmma::Fragment::<mma::MatrixA, 16, 16, 16, bf16, mma::RowMajor>::new();
        if mode == 2 {
            let mut fb = wmma::Fragment::<mma::MatrixB, 16, 16, 16, bf16, mma::RowMajor>::new();
            wmma::load_matrix_sync_global(&warp, &mut fa, a, k, r0 + 16 * wy, k0);
            wmma::load_matrix_sync_global(&warp, &mut fb, b, n, k0, c0 + 16 * wx);
            let prev = acc;
            wmma::mma_sync(&warp, &mut acc, &fa, &fb, &prev);
        } else {
            wmma::load_matrix_sync(&warp, &mut fa, &sa, 16 * wy, 0);
            if mode == 1 {
                let mut fb = wmma::Fragment::<mma::MatrixB, 16, 16, 16, bf16, mma::ColMajor>::new();
                wmma::load_matrix_sync(&warp, &mut fb, &sbt, 16 * wx, 0);
                let prev = acc;
                wmma::mma_sync(&warp, &mut acc, &fa, &fb, &prev);
            } else {
                let mut fb = wmma::Fragment::<mma::MatrixB, 16, 16, 16, bf16, mma::RowMajor>::new();
                wmma::load_matrix_sync(&warp, &mut fb, &sb, 0, 16 * wx);
                let prev = acc;
                wmma::mma_sync(&warp, &mut acc, &fa, &fb, &prev);
            }
        }
        block.sync();
    }
    wmma::store_matrix_sync(&warp, &acc, &sd, 16 * wy, 16 * wx);
    block.sync();
    let row = sd.load_row::<8>(t / 4, 8 * (t % 4));
    let i = thread::index_1d();
    out.set(&i, row);
}

/// Conversions: `out[i] = [bf16::from_f32(x).to_f32(), f16::from_f32(x).to_f32()]` and the
/// bits of both, for `x = xs[i]` (the CPU device rounds as `cvt.rn` does).
#[kernel]
pub fn half_convert(xs: &[f32], mut out: DisjointSlice<[f32; 2]>, mut bits: DisjointSlice<[u16; 2]>) {
    let i = thread::index_1d();
    if let Some(&x) = xs.get(*i) {
        let (hb, hf) = (<bf16 as Half>::from_f32(x), <f16 as Half>::from_f32(x));
        out.set(&i, [hb.to_f32(), Half::to_f32(hf)]);
        bits.set(&i, [Half::to_bits(hb), Half::to_bits(hf)]);
    }
}

/// Lanes 0–15 and 16–31 of each warp call `mma_sync` at two different sites.
#[kernel]
pub fn diverge_mma(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let fa = FragA::<bf16>::splat(bf16::ONE);
    let fb = FragB::<bf16>::splat(bf16::ONE);
    let fc = FragC::<f32>::splat(0.0);
    let d = if warp.thread_rank() < 16 {
        mma::mma_sync(&warp, &fa, &fb, &fc) // the first site
    } else {
        mma::mma_sync(&warp, &fa, &fb, &fc) // the second site
    };
    out.set(&i, d.get(0) as u32);
}

cohort::shared! {
    static DIV_A: [[bf16; 16]; 16];
}

/// The even and odd lanes of each warp call `ldmatrix` at two different sites.
#[kernel]
pub fn diverge_ldmatrix(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let s = DIV_A.get();
    let l = warp.thread_rank() as usize;
    let r = if l % 2 == 0 {
        mma::ldmatrix_x1(&warp, &s, l % 16, 0) // the first site
    } else {
        mma::ldmatrix_x1(&warp, &s, l % 16, 8) // the second site
    };
    out.set(&i, r[0]);
}

/// An `ldmatrix` row outside its tile (lane 31 names row 16 of a 16-row tile): a panic at the
/// call, not a read of other shared memory.
#[kernel]
pub fn ldmatrix_out_of_tile(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let s = DIV_A.get();
    let l = warp.thread_rank() as usize;
    let r = mma::ldmatrix_x4(&warp, &s, l / 2 + l / 31, 8 * (l % 2));
    out.set(&i, r[0]);
}

/// An `ldmatrix` row that is not 16-byte aligned (column 4): a panic at the call.
#[kernel]
pub fn ldmatrix_misaligned(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let s = DIV_A.get();
    let l = warp.thread_rank() as usize;
    let r = mma::ldmatrix_x1(&warp, &s, l % 16, 4);
    out.set(&i, r[0]);
}

/// Keeps `AccElement` in use for generic users (a compile check of the bounds a generic WMMA
/// kernel needs): `d = a · b + c` for any supported input and accumulator.
#[inline(always)]
pub fn generic_mma<T: MmaInput<C>, C: AccElement, P: cohort::cg::TileParent>(
    warp: &cohort::cg::ThreadBlockTile<32, P>,
    a: &FragA<T>,
    b: &FragB<T>,
    c: &FragC<C>,
) -> FragC<C> {
    mma::mma_sync(warp, a, b, c)
}

cohort::shared! {
    /// A 64 × 40 tile (rows of 80 bytes, as a GEMM's padded stage).
    static WT_TILE: [[bf16; 40]; 64];
}

/// (One warp.) `mma::WarpTiles` against the loaders it stands for, on the 32 × 32 block at
/// (16, 8) of a tile filled from `a` (64 × 40): thread `t` writes to `out[t]` the registers of
/// `WarpTiles::a(i, k)` (i, k < 2), `b_pair(j, k)` and `b_pair_trans(k, j)`, then those of
/// `load_a`, `load_b_nk_pair` and `load_b_pair` of the same blocks (48 words each).
#[kernel]
pub fn warp_tiles(a: &[bf16], mut out: DisjointSlice<[u32; 96]>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let l = warp.thread_rank() as usize;
    let tile = WT_TILE.get();
    for e in (l..64 * 40).step_by(32) {
        tile.store_at(e / 40, e % 40, a[e]);
    }
    block.sync();
    let ta = mma::WarpTiles::<bf16, 32, 32, mma::TilesA>::new(&tile, 16, 8);
    let tn = mma::WarpTiles::<bf16, 32, 32, mma::TilesBNk>::new(&tile, 16, 8);
    let tk = mma::WarpTiles::<bf16, 32, 32, mma::TilesBKn>::new(&tile, 16, 8);
    let mut r = [0u32; 96];
    let mut put = |at: usize, w: &[u32]| r[at..at + w.len()].copy_from_slice(w);
    for x in 0..2 {
        for k in 0..2 {
            let q = 4 * (2 * x + k);
            put(q, &ta.a(&warp, x, k).regs());
            let [b0, b1] = tn.b_pair(&warp, x, k);
            put(16 + q, &[b0.regs()[0], b0.regs()[1], b1.regs()[0], b1.regs()[1]]);
            let [c0, c1] = tk.b_pair_trans(&warp, k, x);
            put(32 + q, &[c0.regs()[0], c0.regs()[1], c1.regs()[0], c1.regs()[1]]);
            put(48 + q, &mma::load_a(&warp, &tile, 16 + 16 * x, 8 + 16 * k).regs());
            let [d0, d1] = mma::load_b_nk_pair(&warp, &tile, 16 + 16 * x, 8 + 16 * k);
            put(64 + q, &[d0.regs()[0], d0.regs()[1], d1.regs()[0], d1.regs()[1]]);
            let [e0, e1] = mma::load_b_pair(&warp, &tile, 16 + 16 * k, 8 + 16 * x);
            put(80 + q, &[e0.regs()[0], e0.regs()[1], e1.regs()[0], e1.regs()[1]]);
        }
    }
    out.set(&i, r);
}

/// (One warp.) `WarpTiles` misused: `which` 0, a block leaving the tile (rows 40..72 of 64); 1,
/// a block index past the block (`a(2, 0)` of a 32-row block); 2, a block at a column that is
/// not a multiple of 8. Each is a panic naming `WarpTiles`, never a read of other memory.
#[kernel]
pub fn warp_tiles_misuse(which: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let tile = WT_TILE.get();
    let w = which as usize;
    let (row0, col0, blk) = match w {
        0 => (40, 8, 0),
        1 => (16, 8, 2),
        _ => (16, 4, 0),
    };
    let ta = mma::WarpTiles::<bf16, 32, 32, mma::TilesA>::new(&tile, row0, col0);
    let r = ta.a(&warp, blk, 0).regs();
    out.set(&i, r[0]);
}

cohort::shared! {
    /// 48 rows of 24 (48 bytes): a padded tile for `memcpy_async_tile`.
    static TC_TILE: [[bf16; 24]; 48];
}

/// (Blocks of 64.) `cg::memcpy_async_tile` of the 32 × 16 window at (`r0`, `c0`) of `a` into
/// rows `row0 ..` of a 48 × 24 shared tile first filled with `-1`, then the tile's rows to
/// `out[64 b ..]` (block b; rows 48..64 zeros). `local` copies from a thread's own array instead
/// (not global memory: an `Err`).
#[kernel]
pub fn tile_copy(
    shape: BlockShape<64>,
    a: Matrix<bf16, u32>,
    at: [u32; 3],
    local: u32,
    mut out: DisjointSlice<[bf16; 24]>,
) {
    let block = cg::this_thread_block();
    let t = shape.rank() as usize;
    let tile = TC_TILE.get();
    for e in (t..48 * 24).step_by(64) {
        tile.store_at(e / 24, e % 24, bf16::NEG_ONE);
    }
    block.sync();
    let [r0, c0, row0] = at;
    let own = [bf16::ONE; 32 * 40];
    let src = if local != 0 { Matrix::<bf16, u32>::new(&own, 32, 40).unwrap_or(a) } else { a };
    let cohort::matrix::Split::Full(w) = src.window::<32, 16>(r0, c0).split() else {
        panic!("tile_copy: the window leaves the matrix")
    };
    cg::memcpy_async_tile(&shape, &tile, row0 as usize, &w);
    cg::commit_async_copies();
    cg::wait_prior::<0>(&block);
    // Thread t < 48 writes row t of the tile, the others zeros (`out[64 b + t]`).
    let row: [bf16; 24] = core::array::from_fn(|c| if t < 48 { tile.load_at(t, c) } else { bf16::ZERO });
    out.set(thread::index_1d(), row);
}

/// (Blocks of 64.) `cg::AsyncTiles::copy` of window `at[1]` of the 32-row strip of `a` at row
/// `at[0]` (windows of 32 × 8 along K) into rows `at[2] ..` of a 48 × 24 shared tile first
/// filled with `-1`, then the tile's rows to `out[64 b ..]` as `tile_copy`, and thread 0's
/// `[copied, windows]` to `res[b]`.
#[kernel]
pub fn async_tiles_copy(
    shape: BlockShape<64>,
    a: Matrix<bf16, u32>,
    at: [u32; 3],
    mut out: DisjointSlice<[bf16; 24]>,
    mut res: DisjointSlice<[u32; 2], PerBlock>,
) {
    let block = cg::this_thread_block();
    let t = shape.rank() as usize;
    let tile = TC_TILE.get();
    for e in (t..48 * 24).step_by(64) {
        tile.store_at(e / 24, e % 24, bf16::NEG_ONE);
    }
    block.sync();
    let [r0, k, row0] = at;
    let cohort::matrix::Split::Full(strip) = a.row_strip::<32, 8>(r0).split() else {
        panic!("async_tiles_copy: the strip leaves the matrix")
    };
    let tiles = cg::AsyncTiles::new(strip);
    let copied = tiles.copy(&shape, &tile, row0 as usize, k);
    cg::commit_async_copies();
    cg::wait_prior::<0>(&block);
    let row: [bf16; 24] = core::array::from_fn(|c| if t < 48 { tile.load_at(t, c) } else { bf16::ZERO });
    out.set(thread::index_1d(), row);
    if let Some(b) = block.leader_index() {
        res.set(b, [u32::from(copied), tiles.windows()]);
    }
}

/// Per warp `w`: `d = a · b + c` for the 16×8 row-major `a[128 w..]` and 8×8 (K×N) `b[64 w..]`,
/// both rounded to TF32 here (`tf32::from_f32`), and the 16×8 `c[128 w..]`; thread `t` writes
/// its four elements of D to `out[t]`.
#[kernel]
pub fn mma_tf32_from_global(a: &[f32], b: &[f32], c: &[f32], mut out: DisjointSlice<[f32; 4]>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let w = warp_rank();
    let fa = mma::MmaA::<mma::M16N8K8, mma::tf32>::from_fn(|r, k| mma::tf32::from_f32(a[128 * w + 8 * r + k]));
    let fb = mma::MmaB::<mma::M16N8K8, mma::tf32>::from_fn(|k, n| mma::tf32::from_f32(b[64 * w + 8 * k + n]));
    let fc = mma::MmaC::<mma::M16N8K8, f32>::from_fn(|r, n| c[128 * w + 8 * r + n]);
    let d = mma::mma_sync(&warp, &fa, &fb, &fc);
    out.set(&i, [d.get(0), d.get(1), d.get(2), d.get(3)]);
}

/// The m16n8k32 A and B fragments of warp `w`: the 16×32 row-major `a[512 w..]` and the 32×8
/// (K×N) row-major `b[256 w..]`.
#[inline(always)]
fn k32_inputs<TA: mma::Byte8, TB: mma::Byte8>(
    a: &[TA],
    b: &[TB],
) -> (mma::MmaA<mma::M16N8K32, TA>, mma::MmaB<mma::M16N8K32, TB>) {
    let w = warp_rank();
    (
        mma::MmaA::<mma::M16N8K32, TA>::from_fn(|r, k| a[512 * w + 32 * r + k]),
        mma::MmaB::<mma::M16N8K32, TB>::from_fn(|k, n| b[256 * w + 8 * k + n]),
    )
}

macro_rules! int8_kernels {
    ($($(#[$m:meta])* $name:ident: $ta:ty, $tb:ty;)*) => {$(
        $(#[$m])*
        ///
        /// Per warp `w`: `d = a · b + c` (m16n8k32, `i32` accumulators `c[128 w..]`), wrapping,
        /// or with `.satfinite` when `sat` is not 0; thread `t` writes its elements of D to
        /// `out[t]`.
        #[kernel]
        pub fn $name(a: &[$ta], b: &[$tb], c: &[i32], sat: u32, mut out: DisjointSlice<[i32; 4]>) {
            let i = thread::index_1d();
            let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
            let w = warp_rank();
            let (fa, fb) = k32_inputs(a, b);
            let fc = mma::MmaC::<mma::M16N8K32, i32>::from_fn(|r, n| c[128 * w + 8 * r + n]);
            // `sat` is the same in every lane: the warp takes one branch, converged.
            let d = if sat != 0 { mma::mma_sync_satfinite(&warp, &fa, &fb, &fc) } else { mma::mma_sync(&warp, &fa, &fb, &fc) };
            out.set(&i, [d.get(0), d.get(1), d.get(2), d.get(3)]);
        }
    )*};
}

int8_kernels! {
    /// S8 × S8.
    mma_s8_s8: i8, i8;
    /// S8 × U8.
    mma_s8_u8: i8, u8;
    /// U8 × S8.
    mma_u8_s8: u8, i8;
    /// U8 × U8.
    mma_u8_u8: u8, u8;
}

macro_rules! fp8_kernels {
    ($($(#[$m:meta])* $name:ident: $ta:ty, $tb:ty;)*) => {$(
        $(#[$m])*
        ///
        /// Per warp `w`: `d = a · b + c` (m16n8k32, `f32` accumulators `c[128 w..]`; sm_89+);
        /// thread `t` writes its elements of D to `out[t]`.
        #[kernel]
        pub fn $name(a: &[$ta], b: &[$tb], c: &[f32], mut out: DisjointSlice<[f32; 4]>) {
            let i = thread::index_1d();
            let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
            let w = warp_rank();
            let (fa, fb) = k32_inputs(a, b);
            let fc = mma::MmaC::<mma::M16N8K32, f32>::from_fn(|r, n| c[128 * w + 8 * r + n]);
            let d = mma::mma_sync(&warp, &fa, &fb, &fc);
            out.set(&i, [d.get(0), d.get(1), d.get(2), d.get(3)]);
        }
    )*};
}

fp8_kernels! {
    /// E4M3 × E4M3.
    mma_e4m3_e4m3: mma::e4m3, mma::e4m3;
    /// E4M3 × E5M2.
    mma_e4m3_e5m2: mma::e4m3, mma::e5m2;
    /// E5M2 × E4M3.
    mma_e5m2_e4m3: mma::e5m2, mma::e4m3;
    /// E5M2 × E5M2.
    mma_e5m2_e5m2: mma::e5m2, mma::e5m2;
}

/// Thread `t`: `x[t]` converted on the device — `[e4m3 bits | e5m2 bits << 8, tf32 bits]` —
/// and the FP8 codes `t % 256` decoded: `[e4m3 value bits, e5m2 value bits]`.
#[kernel]
pub fn low_precision_conversions(x: &[f32], mut out: DisjointSlice<[u32; 4]>) {
    let i = thread::index_1d();
    let t = thread::global_id() as usize;
    let Some(&v) = x.get(t) else { return };
    let code = (t % 256) as u8;
    out.set(
        &i,
        [
            u32::from(mma::e4m3::from_f32(v).to_bits()) | u32::from(mma::e5m2::from_f32(v).to_bits()) << 8,
            mma::tf32::from_f32(v).to_bits(),
            mma::e4m3::from_bits(code).to_f32().to_bits(),
            mma::e5m2::from_bits(code).to_f32().to_bits(),
        ],
    );
}

/// The low-precision types as kernel arguments by value and buffer elements: thread 0 writes
/// `[a, b, t, s[0], s[1]]`'s bits.
#[kernel]
pub fn low_precision_arguments(
    a: mma::e4m3,
    b: mma::e5m2,
    t: mma::tf32,
    s: &[mma::e4m3],
    mut out: DisjointSlice<[u32; 5], PerBlock>,
) {
    let block = cg::this_thread_block();
    if let Some(bi) = block.leader_index() {
        let s0 = s.first().map_or(0, |v| u32::from(v.to_bits()));
        let s1 = s.get(1).map_or(0, |v| u32::from(v.to_bits()));
        out.set(bi, [u32::from(a.to_bits()), u32::from(b.to_bits()), t.to_bits(), s0, s1]);
    }
}

cohort::shared! {
    /// 48 rows of 24 F16 (48 bytes): `stmatrix`'s target.
    static STM_TILE: [[f16; 24]; 48];
    /// The same in BF16.
    static STM_TILE_BF16: [[bf16; 24]; 48];
}

/// (One block of 64.) `stmatrix` (sm_90): the tiles first filled with `-1`; then warp 0:
/// - `which == 0`: `store_c_stmatrix` of the 16×8 `f32` accumulator `c[..128]` as F16 to the
///   block at (`at[0]`, `at[1]`) of the F16 tile, and as BF16 to the BF16 tile;
/// - `which == 1` / `2`: `stmatrix_x4` / `stmatrix_x4_trans` of lane `l`'s words `m`
///   (`0x1000 m + 0x40 l + 2j` in half `j`) to the F16 tile, matrix `m` at rows
///   `at[0] + 8 (m % 2) ..`, column `at[1] + 8 (m / 2)`;
/// then thread `t < 48` writes row `t` of both tiles' bits to `out[t]` as `[f16 row, bf16 row]`.
#[kernel]
pub fn stmatrix_store(
    shape: BlockShape<64>,
    c: &[f32],
    at: [u32; 2],
    which: u32,
    mut out: DisjointSlice<[[u16; 24]; 2]>,
) {
    let block = cg::this_thread_block();
    let warp = cg::tiled_partition::<32>(&block);
    let t = shape.rank() as usize;
    let (tile, tile_b) = (STM_TILE.get(), STM_TILE_BF16.get());
    for e in (t..48 * 24).step_by(64) {
        tile.store_at(e / 24, e % 24, f16::NEG_ONE);
        tile_b.store_at(e / 24, e % 24, bf16::NEG_ONE);
    }
    block.sync();
    // Warp 0 only: the same in all its lanes, so it stays converged.
    if t < 32 {
        let l = t;
        let (row0, col0) = (at[0] as usize, at[1] as usize);
        if which == 0 {
            let fc = FragC::<f32>::from_fn(|r, n| c[8 * r + n]);
            mma::store_c_stmatrix(&warp, &fc, &tile, row0, col0);
            mma::store_c_stmatrix(&warp, &fc, &tile_b, row0, col0);
        } else {
            let regs: [u32; 4] = core::array::from_fn(|m| {
                let v = |j: usize| (0x1000 * m + 0x40 * l + 2 * j) as u32;
                v(0) | v(1) << 16
            });
            let (r, cc) = (row0 + 8 * ((l / 8) % 2) + l % 8, col0 + 8 * (l / 16));
            if which == 1 {
                mma::stmatrix_x4(&warp, &tile, r, cc, regs);
            } else {
                mma::stmatrix_x4_trans(&warp, &tile, r, cc, regs);
            }
        }
    }
    block.sync();
    let row = |k: usize| -> [[u16; 24]; 2] {
        if k < 48 {
            [
                core::array::from_fn(|j| tile.load_at(k, j).to_bits()),
                core::array::from_fn(|j| tile_b.load_at(k, j).to_bits()),
            ]
        } else {
            [[0; 24]; 2]
        }
    };
    out.set(thread::index_1d(), row(t));
}
