// `reduce_store_async` stores into an `Option<&mut T>` (the owner's element: `Some` only where
// the member holds it) or an atomic; a bare `&mut` that every member would have to hold is
// refused, and a `&T` cannot be written at all.
use cohort::prelude::*;

#[kernel]
pub fn k(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let tile = cohort::cg::tiled_partition::<8>(&cohort::cg::this_thread_block());
    let mut mine = 0u32;
    cohort::cg::reduce_store_async(&tile, &mut mine, vals[*i], cohort::cg::plus);
    cohort::cg::reduce_store_async(&tile, &vals[0], vals[*i], cohort::cg::plus);
    out.set(&i, mine);
}

fn main() {}
