use cohort::prelude::*;

#[kernel]
pub fn bad(out: &mut u32) {
    *out = 1;
}

fn main() {}
