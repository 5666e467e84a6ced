//! The Tensor Memory Accelerator (`cohort::tma`): tile loads into shared memory completing on
//! an asynchronous barrier (out-of-bounds boxes filled), tile stores of the boxes a block owns,
//! a load → transpose → store round trip, a 3-D load, and the misuse checked at the call.

use cohort::cg;
use cohort::prelude::*;
use cohort::tma::{TensorMap, TensorMapMut};

cohort::async_barrier! {
    static BAR;
}

cohort::tma_tile! {
    /// One 64 × 64 box of `f32` (and 32 more, for the misaligned case).
    static TILE: [f32; 64 * 64 + 32];
    /// The transposed box.
    static OUT: [f32; 64 * 64];
    /// One 16 × 4 × 4 box of `u32`.
    static TILE3: [u32; 256];
}

/// Each block loads the 64 × 64 box of `src` at `(64 · bx + dx, 64 · by + dy)` and writes it
/// to its 64 × 64 place of `out`, a `(64 · gy) × (64 · gx)` row-major matrix: the elements of
/// boxes outside the matrix are what the map fills them with.
#[kernel]
pub fn tma_load_tiles(src: TensorMap<f32, 2>, dx: i32, dy: i32, mut out: DisjointSlice<f32>) {
    let tb = cg::this_thread_block();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let (bx, by) = (thread::block_idx_x() as usize, thread::block_idx_y() as usize);
    let width = 64 * thread::grid_dim_x() as usize;
    let mut tile = TILE.get().as_slice().sub(0, 64 * 64);
    BAR.scope(&tb, |bar| {
        bar.tensor_load(&mut tile, &src, [64 * bx as i32 + dx, 64 * by as i32 + dy]).wait();
        let mut i = t;
        while i < 64 * 64 {
            let (r, c) = (i / 64, i % 64);
            // SAFETY: element (64·by + r, 64·bx + c) is this thread's alone (its stripe of its
            // block's 64 × 64 place).
            unsafe { *out.get_unchecked_mut((64 * by + r) * width + 64 * bx + c) = tile.load(i) };
            i += n;
        }
    });
}

/// Transposes `src` (`rows × cols`, row-major, dims `[cols, rows]`) into `dst` (`cols × rows`,
/// dims `[rows, cols]`) scaled by `factor`, one 64 × 64 box at a time: each block takes the
/// boxes of `dst` it owns, loads the box of `src` at the swapped coordinates, transposes it in
/// shared memory and stores it.
#[kernel]
pub fn tma_transpose(src: TensorMap<f32, 2>, dst: TensorMapMut<f32, 2>, factor: f32) {
    let tb = cg::this_thread_block();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let mut tile = TILE.get().as_slice().sub(0, 64 * 64);
    let out = OUT.get().as_slice();
    BAR.scope(&tb, |bar| {
        let mut k = 0;
        while let Some([x, y]) = dst.owned_box(k) {
            // Box (x, y) of `dst` (x: a row of `src`, y: a column) is box (y, x) of `src`.
            bar.tensor_load(&mut tile, &src, [y, x]).wait();
            let mut i = t;
            while i < 64 * 64 {
                let (r, c) = (i / 64, i % 64);
                out.store(c * 64 + r, tile.load(i) * factor);
                i += n;
            }
            dst.store_owned(&tb, &out, k);
            k += 1;
        }
    });
}

/// Each block stores, into every box of `dst` it owns, `seed + y · 1024 + x` at element
/// `(y, x)` of the matrix (row y, column x).
#[kernel]
pub fn tma_store_owned(dst: TensorMapMut<f32, 2>, seed: f32) {
    let tb = cg::this_thread_block();
    let (t, n) = (tb.thread_rank() as usize, tb.num_threads() as usize);
    let out = OUT.get().as_slice();
    let mut k = 0;
    while let Some([x0, y0]) = dst.owned_box(k) {
        let mut i = t;
        while i < 64 * 64 {
            let (r, c) = ((i / 64) as i32, (i % 64) as i32);
            out.store(i, seed + ((y0 + r) * 1024 + x0 + c) as f32);
            i += n;
        }
        dst.store_owned(&tb, &out, k);
        k += 1;
    }
}

/// Each block loads the 16 × 4 × 4 box of `src` at `(16 · bx, 4 · by, 4 · bz)` and writes it
/// to its place of `out`, a dense `(4 · gz) × (4 · gy) × (16 · gx)` array.
#[kernel]
pub fn tma_load_3d(src: TensorMap<u32, 3>, mut out: DisjointSlice<u32>) {
    let tb = cg::this_thread_block();
    let t = tb.thread_rank() as usize;
    let (bx, by, bz) = (thread::block_idx_x() as usize, thread::block_idx_y() as usize, thread::block_idx_z() as usize);
    let (w, h) = (16 * thread::grid_dim_x() as usize, 4 * thread::grid_dim_y() as usize);
    let mut tile = TILE3.get().as_slice();
    BAR.scope(&tb, |bar| {
        bar.tensor_load(&mut tile, &src, [16 * bx as i32, 4 * by as i32, 4 * bz as i32]).wait();
        if t < 256 {
            let (z, y, x) = (t / 64, (t / 16) % 4, t % 16);
            // SAFETY: element (4·bz + z, 4·by + y, 16·bx + x) is this thread's alone.
            unsafe { *out.get_unchecked_mut(((4 * bz + z) * h + 4 * by + y) * w + 16 * bx + x) = tile.load(t) };
        }
    });
}

/// The misuse checked at the call: `which` 1, a tile smaller than the box; 2, a tile not
/// 128-byte aligned; 3, other coordinates in thread 37 than in the rest (only thread 0's copy
/// is made); 4, an innermost coordinate at 12 bytes (the hardware traps on it); 0, none
/// (`out[g] = element g of the box at (0, 0)`).
#[kernel]
pub fn tma_misuse(which: u32, src: TensorMap<f32, 2>, mut out: DisjointSlice<f32>) {
    let tb = cg::this_thread_block();
    let t = tb.thread_rank() as usize;
    let whole = TILE.get().as_slice();
    let mut tile = match which {
        1 => whole.sub(0, 64 * 63),
        2 => whole.sub(4, 64 * 64),
        _ => whole.sub(0, 64 * 64),
    };
    let v = BAR.scope(&tb, |bar| {
        let y = i32::from(which == 3 && t == 37);
        let x = if which == 4 { 3 } else { 0 };
        bar.tensor_load(&mut tile, &src, [x, y]).wait();
        tile.load(t)
    });
    let g = thread::index_1d();
    out.set(&g, v);
}
