// An asynchronous copy needs pinned memory: from a `Vec` the host could free or change the
// memory while the copy runs. (Pageable copies are the synchronous `copy_from`.)
use cohort_runtime::{DeviceBuffer, Stream};

fn copy(s: &Stream, data: &Vec<f32>, dev: &mut DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    s.copy(data, dev)
}

fn main() {}
