use cohort::mma::bf16;
use cohort::prelude::*;
use cohort::wgmma::{Accumulator, N64, Swizzle128B, Tile, Warpgroup};

cohort::wgmma_tile! {
    static A: [bf16; 64 * 64];
    static B: [bf16; 64 * 64];
}

// A group holds its tiles until it is retired: a tile cannot be written while an MMA reads it.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let block = cg::this_thread_block();
    let wg = Warpgroup::new(&block);
    let mut ta = Tile::<bf16, 64, 64, Swizzle128B>::new(A.get().as_slice());
    let tb = Tile::<bf16, 64, 64, Swizzle128B>::new(B.get().as_slice());
    let (acc, ()) = wg.mma(Accumulator::<N64>::zeros(), |mma| {
        let g = mma.issue((ta, tb), |t, ops| ops.mma(t.a(0, 0), t.b(0, 0), false));
        ta.store(0, 0, bf16::from_f32(1.0));
        let _ = mma.retire(g);
    });
    out.set(thread::index_1d(), acc.get(0));
}

fn main() {}
