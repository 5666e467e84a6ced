use cohort::mma::{ColMajor, Fragment, M16N8K16, MatrixA, bf16};
use cohort::prelude::*;

// m16n8k16 takes A row-major only: a column-major A fragment does not exist.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let a = Fragment::<MatrixA, M16N8K16, bf16, ColMajor>::splat(bf16::ONE);
    out.set(thread::index_1d(), a.get(0).to_f32());
}

fn main() {}
