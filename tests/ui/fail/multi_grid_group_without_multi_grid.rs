use cohort::prelude::*;

#[kernel(cooperative)]
pub fn bad(multi: MultiGridGroup) {
    multi.sync();
}

fn main() {}
