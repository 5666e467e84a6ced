//! Example 02: 2-D indexing and a shared-memory tile (a matrix transpose).

use cohort::prelude::*;

cohort::shared! {
    /// One 32×32 tile of the input, padded to 33 columns so that reading a column of it does
    /// not hit one memory bank 32 times.
    static TILE: [[f32; 33]; 32];
}

/// `out = inputᵀ`, where `input` is `rows × cols` (row-major). Blocks of 32×32 threads: each
/// block reads one tile with coalesced reads, and writes it transposed with coalesced writes.
#[kernel]
pub fn transpose(
    shape: BlockShape<32, 32>, // the launcher refuses any other block shape
    input: &[f32],
    rows: u32,
    cols: u32,
    mut out: DisjointMatrix<f32, TransposedTiles<Cyclic>>, // block (bx, by) writes tile (bx, by)ᵀ
) {
    let Some(a) = Matrix::new(input, rows as usize, cols as usize) else { return };
    let (x, y) = (shape.x() as usize, shape.y() as usize); // threadIdx.x, threadIdx.y
    let row = thread::block_idx_y() as usize * 32 + y;
    let col = thread::block_idx_x() as usize * 32 + x;
    let tile = TILE.get();
    tile.store_at(y, x, a.get(row, col).copied().unwrap_or(0.0));
    sync_threads(); // the whole tile is in shared memory
    // This thread's element of `out` is (block_x * 32 + y, block_y * 32 + x) = input(row', col')
    // with row' = block_y * 32 + x, col' = block_x * 32 + y: tile[x][y].
    out.tile(&shape).set(0, 0, tile.load_at(x, y));
}
