use cohort::prelude::*;

#[kernel]
pub fn bad(x: impl Copy) {
    let _ = x;
}

fn main() {}
