use cohort::mma::{Fragment, M16N8K32, MatrixB, RowMajor};
use cohort::prelude::*;

// `mma.sync`'s B is column-major (`.row.col`): a row-major B fragment does not exist.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let b = Fragment::<MatrixB, M16N8K32, i8, RowMajor>::splat(1);
    out.set(thread::index_1d(), b.get(0) as u32);
}

fn main() {}
