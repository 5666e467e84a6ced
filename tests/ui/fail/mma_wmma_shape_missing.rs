use cohort::mma::{MatrixA, RowMajor, bf16, wmma};
use cohort::prelude::*;

// Only 16×16×16 WMMA fragments exist (so far): 32×8×16 is a compile error, not a wrong load.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let a = wmma::Fragment::<MatrixA, 32, 8, 16, bf16, RowMajor>::new();
    let _ = a;
    out.set(thread::index_1d(), 0.0);
}

fn main() {}
