use cohort::prelude::*;

// A zero-sized parameter has no PTX parameter: `out` would receive `b`'s bytes.
#[kernel]
pub fn k(a: u64, z: [u32; 0], b: u64, mut out: DisjointSlice<u64>) {
    let _ = (a, z, b);
    out.set(thread::index_1d(), 0);
}

fn main() {}
