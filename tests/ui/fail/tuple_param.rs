use cohort::prelude::*;

#[kernel]
pub fn bad(pair: (u32, f32)) {
    let _ = pair;
}

fn main() {}
