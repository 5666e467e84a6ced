// One cudarc slice as a kernel's input and its output in one launch: a race inside the kernel,
// rejected by the borrow checker (`.cohort()` borrows the slice, `.cohort_mut()` borrows it
// mutably), as for a DeviceBuffer.
use cohort_runtime::cudarc::driver::CudaSlice;
use cohort_runtime::interop::{AsCohort, AsCohortMut};
use cohort_runtime::{DisjointArg, SliceArg};

fn launch(_input: impl SliceArg<f32>, _output: impl DisjointArg<f32>) {}

fn race(x: &mut CudaSlice<f32>) {
    launch(x.cohort(), x.cohort_mut());
}

fn main() {}
