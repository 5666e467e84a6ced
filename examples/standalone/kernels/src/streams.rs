//! Example 07: the kernel that example 07 runs on each chunk, each on its own stream.

use cohort::prelude::*;

/// `a[i] = a[i] * factor + 1` for every element of the chunk `a`.
#[kernel]
pub fn scale_add_one(mut a: DisjointSlice<f32>, factor: f32) {
    let i = thread::index_1d();
    if let Some(v) = a.get_mut(&i) {
        *v = *v * factor + 1.0;
    }
}
