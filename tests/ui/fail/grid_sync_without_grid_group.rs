use cohort::prelude::*;

#[kernel]
pub fn bad() {
    cg::this_grid().sync();
}

fn main() {}
