use cohort::mma::bf16;
use cohort::prelude::*;
use cohort::wgmma::{Accumulator, N64, Swizzle128B, Tile, Warpgroup};

cohort::wgmma_tile! {
    static A: [bf16; 64 * 64];
    static B: [bf16; 64 * 64];
}

// The accumulator belongs to the MMA scope until every MMA has completed (`wgmma.wait_group 0`
// at its end): it cannot be read while an MMA may still write it.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let block = cg::this_thread_block();
    let wg = Warpgroup::new(&block);
    let ta = Tile::<bf16, 64, 64, Swizzle128B>::new(A.get().as_slice());
    let tb = Tile::<bf16, 64, 64, Swizzle128B>::new(B.get().as_slice());
    let acc = Accumulator::<N64>::zeros();
    let (_acc, x) = wg.mma(acc, |mma| {
        let g = mma.issue((ta, tb), |t, ops| ops.mma(t.a(0, 0), t.b(0, 0), false));
        let x = acc.get(0);
        let _ = mma.retire(g);
        x
    });
    out.set(thread::index_1d(), x);
}

fn main() {}
