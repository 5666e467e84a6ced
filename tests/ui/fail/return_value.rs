use cohort::prelude::*;

#[kernel]
pub fn bad(x: u32) -> u32 {
    x
}

fn main() {}
