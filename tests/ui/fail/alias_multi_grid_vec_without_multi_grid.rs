// A `MultiGridVec` needs `#[kernel(multi_grid)]`, also when it comes through an alias.
use cohort::prelude::*;

pub type Shared<'a> = MultiGridVec<'a, f32>;

#[kernel(cooperative)]
pub fn bad(grid: GridGroup, v: Shared) {
    grid.sync();
    let _ = v.len();
}

fn main() {}
