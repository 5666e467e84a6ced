// `#[kernel]` leaves parameters made on the device out of the launchers' arguments, which it sees
// from the names `GridGroup`, `MultiGridGroup` and `BlockShape`: a value type of one of those
// names is refused, rather than silently passed nothing (or zeros).
use cohort::prelude::*;

mod mine {
    #[repr(C)]
    #[derive(Clone, Copy, cohort::DeviceCopy)]
    pub struct BlockShape {
        pub x: u32,
    }
}

#[kernel]
pub fn bad(shape: mine::BlockShape, mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = shape.x;
    }
}

fn main() {}
