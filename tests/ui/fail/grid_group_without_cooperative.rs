use cohort::prelude::*;

#[kernel]
pub fn bad(grid: GridGroup) {
    grid.sync();
}

fn main() {}
