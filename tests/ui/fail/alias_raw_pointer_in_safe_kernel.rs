// A raw pointer makes a kernel `unsafe` also when it comes through an alias.
use cohort::prelude::*;

pub type Out = *mut f32;

#[kernel]
pub fn bad(p: Out) {
    let _ = p;
}

fn main() {}
