// Adversarial pass (issue 31): a kernel named as another kernel's instance entry (`g_u32`):
// a compile error, never two launchers of one entry with different parameters.
use cohort::prelude::*;

#[kernel(instances(u32))]
pub fn g<X: DeviceCopy>(x: X, mut out: DisjointSlice<X>) {
    out.set(thread::index_1d(), x);
}

#[kernel]
pub fn g_u32(x: u64, mut out: DisjointSlice<u64>) {
    out.set(thread::index_1d(), x);
}

fn main() {}
