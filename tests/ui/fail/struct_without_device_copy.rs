use cohort::prelude::*;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Plain {
    pub a: f32,
}

#[kernel]
pub fn bad(p: Plain) {
    let _ = p;
}

fn main() {}
