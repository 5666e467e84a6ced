use cohort::prelude::*;

// `G<T>`'s padding depends on `T`: `G<u64>` has none, `G<u32>` has 4 bytes after `a` (uninitialized
// memory, which would cross to the device or be read as another type). `#[derive(DeviceCopy)]`
// cannot see it at the (generic) definition: each use of `G<u32>` where bytes move is refused.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct G<T> {
    pub a: T,
    pub b: u64,
}

// `cast` reads the padding of each `G<u32>` as part of a `u32`.
fn words(s: &[G<u32>]) -> Option<&[u32]> {
    cohort::slice::cast(s)
}

fn main() {
    let _ = words(&[G { a: 1, b: 2 }]);
}
