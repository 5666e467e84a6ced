use cohort::mma::bf16;
use cohort::prelude::*;
use cohort::wgmma::{Accumulator, N64, Swizzle128B, Tile, Warpgroup};

cohort::wgmma_tile! {
    static A: [bf16; 64 * 64];
    static B: [bf16; 64 * 64];
    static C: [bf16; 64 * 64];
    static D: [bf16; 64 * 64];
}

// A descriptor is made from a group's own tiles and used only in that group (the group's
// brand): one kept for another group, whose tiles the first does not hold, does not compile.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let block = cg::this_thread_block();
    let wg = Warpgroup::new(&block);
    let ta = Tile::<bf16, 64, 64, Swizzle128B>::new(A.get().as_slice());
    let tb = Tile::<bf16, 64, 64, Swizzle128B>::new(B.get().as_slice());
    let tc = Tile::<bf16, 64, 64, Swizzle128B>::new(C.get().as_slice());
    let td = Tile::<bf16, 64, 64, Swizzle128B>::new(D.get().as_slice());
    let (acc, ()) = wg.mma(Accumulator::<N64>::zeros(), |mma| {
        let mut kept = None;
        let g = mma.issue((ta, tb), |t, ops| {
            kept = Some(t.a(0, 0));
            ops.mma(t.a(0, 0), t.b(0, 0), false);
        });
        let first = mma.retire(g);
        drop(first);
        let h = mma.issue((tc, td), |t, ops| ops.mma(kept.unwrap(), t.b(0, 0), true));
        let _ = mma.retire(h);
    });
    out.set(thread::index_1d(), acc.get(0));
}

fn main() {}
