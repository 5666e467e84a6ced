// A read-only view (`slice(..)`) cannot be a slice of atomics; the error lists the arguments that can
// (`&mut DeviceBuffer<T>`, `slice_mut(..)`).
use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

#[kernel]
pub fn total(sum: &[AtomicF32]) {
    sum[0].fetch_add(1.0, Ordering::Relaxed);
}

fn launch(m: &Module, s: &Stream, sum: &DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    total::load(m)?.launch(s, (1u32, 32u32), sum.slice(..))
}
fn main() {}
