// A Cohort buffer lent to cudarc is cudarc's only for the closure: the view cannot leave it (the
// scope then records cudarc's work and gives the memory back; a kept view would be untracked).
use cohort_runtime::cudarc::driver::CudaView;
use cohort_runtime::{DeviceBuffer, Stream};

fn escape<'a>(s: &Stream, buf: &'a DeviceBuffer<f32>) -> CudaView<'a, f32> {
    buf.with_cudarc(s, |view, _| view).unwrap()
}

fn main() {}
