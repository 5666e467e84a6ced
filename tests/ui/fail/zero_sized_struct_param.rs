use cohort::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Empty {}

#[kernel]
pub fn k(a: u64, e: Empty, mut out: DisjointSlice<u64>) {
    let _ = (a, e);
    out.set(thread::index_1d(), 0);
}

fn main() {}
