use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, Module, Stream};

// Without `dependent`, the entry does not wait for the kernel before it: a programmatic launch
// (which may begin before that kernel has finished) would race it, so there is no method for it.
#[kernel]
pub fn plain(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 1);
}

fn launch(m: &Module, s: &Stream, out: &mut DeviceBuffer<u32>) -> cohort_runtime::Result<()> {
    plain::load(m)?.launch_programmatic(s, (1u32, 32u32), out)
}

fn main() {}
