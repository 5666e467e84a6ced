use cohort::mma::{M16N8K16, MmaA, tf32};
use cohort::prelude::*;

// TF32 is an input of m16n8k8 only: an m16n8k16 TF32 fragment does not exist.
#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let a = MmaA::<M16N8K16, tf32>::splat(tf32::ONE);
    out.set(thread::index_1d(), a.get(0).to_f32());
}

fn main() {}
