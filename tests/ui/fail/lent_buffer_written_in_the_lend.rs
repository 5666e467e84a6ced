// While a buffer is lent to cudarc (read), Cohort cannot write it: the lend holds a shared
// borrow for the whole closure.
use cohort_runtime::{DeviceBuffer, Stream};

fn overwrite(s: &Stream, buf: &mut DeviceBuffer<f32>) {
    let _ = buf.with_cudarc(s, |_view, _| buf.fill_zero());
}

fn main() {}
