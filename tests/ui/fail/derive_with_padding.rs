use cohort::prelude::*;

// 3 bytes of padding after `tag`: shuffles and copies move whole words.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Tagged {
    pub tag: u8,
    pub value: u32,
}

fn main() {}
