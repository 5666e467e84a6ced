use cohort::prelude::*;

#[kernel(cooperative)]
pub fn bad(grid: GridGroup, v: MultiGridVec<f32>) {
    grid.sync();
    let _ = v.len();
}

fn main() {}
