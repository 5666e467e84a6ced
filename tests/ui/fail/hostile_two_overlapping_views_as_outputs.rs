// Adversarial pass (issue 31): one buffer given to a launch as two outputs through two views
// that overlap: each view borrows the buffer exclusively, so the second is a borrow error.
use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn two_outputs(mut a: DisjointSlice<u32>, mut b: DisjointSlice<u32>) {
    let i = thread::index_1d();
    a.set(&i, 1);
    b.set(&i, 2);
}

fn launch(m: &Module, s: &Stream, buf: &mut DeviceBuffer<u32>) -> cohort_runtime::Result<()> {
    let k = two_outputs::load(m)?;
    k.launch(s, (1u32, 32u32), buf.slice_mut(0..10), buf.slice_mut(5..15))
}

fn main() {}
