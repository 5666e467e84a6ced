use cohort::mma::{self, M16N8K8, M16N8K32, MmaA, MmaB, MmaC, tf32};
use cohort::prelude::*;

// A and B of m16n8k8 with an m16n8k32 accumulator: one instruction has one shape.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let a = MmaA::<M16N8K8, tf32>::splat(tf32::ONE);
    let b = MmaB::<M16N8K8, tf32>::splat(tf32::ONE);
    let c = MmaC::<M16N8K32, f32>::splat(0.0);
    let d = mma::mma_sync(&warp, &a, &b, &c);
    out.set(thread::index_1d(), d.get(0));
}

fn main() {}
