use cohort::prelude::*;

#[kernel(fast)]
pub fn bad(x: u32) {
    let _ = x;
}

fn main() {}
