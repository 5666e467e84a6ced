// Registered host memory is usable only inside its scope: a view of it cannot escape (the
// scope unregisters the memory and gives it back to the caller when it ends).
use cohort_runtime::{Gpu, PinnedView};

fn escape<'a>(gpu: &Gpu, data: &'a mut [u32]) -> Option<PinnedView<'a, u32>> {
    let mut keep = None;
    gpu.with_registered(data, |reg| keep = Some(reg.slice(..))).ok()?;
    keep
}

fn main() {}
