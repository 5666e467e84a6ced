// A view cannot outlive its buffer (dropping the buffer frees the memory, after waiting for
// the operations still using it).
use cohort_runtime::{DeviceView, Gpu};

fn dangling(gpu: &Gpu) -> cohort_runtime::Result<DeviceView<'static, f32>> {
    let buf = gpu.zeroed::<f32>(16)?;
    Ok(buf.slice(..))
}

fn main() {}
