use cohort::mma;
use cohort::prelude::*;

cohort::shared! {
    static TILE: [[f32; 8]; 16];
}

// `stmatrix` stores 16-bit elements: a tile of `f32` cannot be its target.
#[kernel]
pub fn k() {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    mma::stmatrix_x1(&warp, &TILE.get(), 0, 0, [0]);
}

fn main() {}
