use cohort::prelude::*;

#[kernel]
pub fn bad(x: &u32) {
    let _ = x;
}

fn main() {}
