use cohort::prelude::*;

#[kernel]
pub async fn bad(x: u32) {
    let _ = x;
}

fn main() {}
