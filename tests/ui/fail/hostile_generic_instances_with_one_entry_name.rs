// Adversarial pass (issue 31): two instances of a generic kernel whose names would give one
// entry (`g_a_T`: `a::T` and `a_T`): a compile error, never one launcher running the other's
// entry.
use cohort::prelude::*;

pub mod a {
    pub type T = u32;
}
#[allow(non_camel_case_types)]
pub type a_T = u64;

#[kernel(instances(a::T, a_T))]
pub fn g<X: DeviceCopy>(x: X, mut out: DisjointSlice<X>) {
    out.set(thread::index_1d(), x);
}

fn main() {}
