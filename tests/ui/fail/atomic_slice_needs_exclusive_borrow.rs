use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn count(c: &[AtomicU32]) {
    c[0].fetch_add(1, Ordering::Relaxed);
}

fn launch(m: &Module, s: &Stream, c: &DeviceBuffer<u32>) -> cohort_runtime::Result<()> {
    count::load(m)?.launch(s, (1u32, 32u32), c)
}

fn main() {}
