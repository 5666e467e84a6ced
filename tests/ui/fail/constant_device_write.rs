// Constant memory is read-only on the device: no safe write through the handle.
use cohort::prelude::*;

cohort::constant! {
    static COEFFS: [f32; 4] = [0.0; 4];
}

#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    COEFFS[0] = 1.0;
    out.set(&i, COEFFS.load(0));
}

fn main() {}
