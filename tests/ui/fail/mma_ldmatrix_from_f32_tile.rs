use cohort::mma;
use cohort::prelude::*;

cohort::shared! {
    static TILE: [[f32; 16]; 16];
}

// `ldmatrix` moves 16-bit elements: a tile of `f32` cannot be its source.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let r = mma::ldmatrix_x1(&warp, &TILE.get(), 0, 0);
    out.set(thread::index_1d(), r[0]);
}

fn main() {}
