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

// A module variable of `G<u32>`: `set` and `get` copy its bytes between host and device.
cohort::constant! {
    pub static C: G<u32> = G { a: 1, b: 2 };
}

fn run(m: &cohort_runtime::Module) -> cohort_runtime::Result<()> {
    let _ = m.constant(&C)?;
    Ok(())
}

fn main() {
    let _ = run as fn(&_) -> _;
}
