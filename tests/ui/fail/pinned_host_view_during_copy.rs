// The host holds a view of a pinned buffer; enqueueing a copy into it would let the GPU write
// memory the host is reading: rejected by the borrow checker.
use cohort_runtime::{DeviceBuffer, PinnedBuffer, Stream};

fn overlap(s: &Stream, dev: &DeviceBuffer<f32>, host: &mut PinnedBuffer<f32>) -> cohort_runtime::Result<f32> {
    let view = host.as_slice()?;
    s.copy(dev, &mut *host)?;
    Ok(view[0])
}

fn main() {}
