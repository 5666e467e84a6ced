use cohort::prelude::*;
use cohort::tma::TensorMap;

cohort::tma_tile! {
    static TILE: [f32; 64 * 64];
}
cohort::async_barrier! {
    static BAR;
}

// A tile load borrows its tile until the phase it completes on is waited for.
#[kernel]
pub fn k(src: TensorMap<f32, 2>, mut out: DisjointSlice<f32>) {
    let block = cg::this_thread_block();
    let mut tile = TILE.get().as_slice();
    let early = BAR.scope(&block, |bar| {
        let copy = bar.tensor_load(&mut tile, &src, [0, 0]);
        let early = tile.load(0);
        copy.wait();
        early
    });
    out.set(thread::index_1d(), early);
}

fn main() {}
