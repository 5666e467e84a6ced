use cohort::prelude::*;

// A `MultiGridVec` is written only at the thread's own elements: a plain number is refused.
#[kernel(multi_grid)]
pub fn bad(multi: MultiGridGroup, mut v: MultiGridVec<u32>) {
    v.set(&7usize, 1);
    let _ = v.publish(&multi);
}

fn main() {}
