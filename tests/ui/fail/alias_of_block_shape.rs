// A `BlockShape` is made on the device (the launchers take no argument for it), which
// `#[kernel]` sees only from its name: through an alias it is refused, with what to write.
use cohort::prelude::*;

pub type Warp = BlockShape<32>;

#[kernel]
pub fn bad(shape: Warp, mut out: DisjointSlice<u32>) {
    let _ = shape;
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 1;
    }
}

fn main() {}
