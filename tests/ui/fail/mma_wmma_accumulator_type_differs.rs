use cohort::mma::{Accumulator, MatrixA, MatrixB, RowMajor, bf16, f16, wmma};
use cohort::prelude::*;

// D in F16, C in F32: one accumulator type per `mma_sync`.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = wmma::Fragment::<MatrixA, 16, 16, 16, bf16, RowMajor>::new();
    let b = wmma::Fragment::<MatrixB, 16, 16, 16, bf16, RowMajor>::new();
    let c = wmma::Fragment::<Accumulator, 16, 16, 16, f32, RowMajor>::new();
    let mut d = wmma::Fragment::<Accumulator, 16, 16, 16, f16, RowMajor>::new();
    wmma::mma_sync(&warp, &mut d, &a, &b, &c);
    out.set(thread::index_1d(), 0.0);
}

fn main() {}
