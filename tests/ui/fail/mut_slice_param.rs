use cohort::prelude::*;

#[kernel]
pub fn bad(out: &mut [f32]) {
    out[0] = 1.0;
}

fn main() {}
