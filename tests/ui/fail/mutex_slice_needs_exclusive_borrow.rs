// `&[Mutex]` is written by the kernel's threads: a shared `&DeviceBuffer<u32>` is refused, and the
// error points at what to pass (`&mut buffer`), not at another impl.
use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn lock_count(locks: &[Mutex]) {
    let _g = locks[0].lock();
}

fn launch(m: &Module, s: &Stream, locks: &DeviceBuffer<u32>) -> cohort_runtime::Result<()> {
    lock_count::load(m)?.launch(s, (1u32, 32u32), locks)
}
fn main() {}
