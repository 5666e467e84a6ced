use cohort::prelude::*;

#[kernel]
pub fn bad(p: *mut f32) {
    let _ = p;
}

fn main() {}
