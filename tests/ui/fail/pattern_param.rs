use cohort::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct P {
    pub a: u32,
}

#[kernel]
pub fn bad(P { a }: P) {
    let _ = a;
}

fn main() {}
