// The argument traits hand the kernel an address to write: implementing one is a promise that
// the address is the argument's own memory, so it takes `unsafe impl`. (A safe impl could pass
// any address for a `&[AtomicU32]`, which the kernel's threads then write.)
use cohort_runtime::{AtomicSliceArg, DeviceViewMut, Use};

pub struct Forged<'a>(DeviceViewMut<'a, u32>);

impl AtomicSliceArg for Forged<'_> {
    type Elem = u32;
    fn raw_parts(&self) -> (u64, usize) {
        (0x1000, 1 << 20)
    }
    fn uses(&self) -> [Use<'_>; 1] {
        AtomicSliceArg::uses(&self.0)
    }
}

fn main() {}
