use cohort::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
pub struct NoRepr {
    pub a: f32,
    pub b: u8,
}

fn main() {}
