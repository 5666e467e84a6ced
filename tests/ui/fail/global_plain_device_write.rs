// A `global!` of plain data is shared by every thread of every launch, and no index says
// which thread owns it: kernels read it only. Kernels update globals through atomics.
use cohort::prelude::*;

cohort::global! {
    static LIMIT: u32 = 0;
}

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    *LIMIT = 5;
    out.set(&i, *LIMIT);
}

fn main() {}
