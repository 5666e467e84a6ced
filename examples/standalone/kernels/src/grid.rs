//! Example 06: a cooperative kernel with grid-wide synchronization.

use cohort::cg::GridScratch;
use cohort::prelude::*;

/// `out[i] = x[i] - mean(x)` in one launch: every thread sums its share, a grid-wide reduction
/// (one grid barrier inside, on the scratch's own word) gives every thread the total, then each
/// writes its elements. `scratch` needs two elements per block.
#[kernel(cooperative)]
pub fn subtract_mean(grid: GridGroup, x: &[f32], scratch: GridVec<f64>, mut out: DisjointSlice<f32>) {
    let mut scratch = GridScratch::new(&grid, scratch);
    let mut acc = 0.0f64;
    for i in thread::grid_stride(x.len()) {
        acc += x[*i] as f64;
    }
    let total = cg::reduce_grid(&grid, acc, cg::plus, &mut scratch); // every thread of the grid waits here
    let mean = (total / x.len() as f64) as f32;
    for i in thread::grid_stride(x.len()) {
        if let Some(o) = out.get_mut(&i) {
            *o = x[*i] - mean;
        }
    }
}
