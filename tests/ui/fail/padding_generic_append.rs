use cohort::prelude::*;

// `G<T>`'s padding depends on `T`: `G<u64>` has none, `G<u32>` has 4 bytes after `a` (uninitialized
// memory, which would cross to the device or be read as another type). `#[derive(DeviceCopy)]`
// cannot see it at the (generic) definition: each use of `G<u32>` where bytes move is refused.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct G<T> {
    pub a: T,
    pub b: u64,
}

// An `AppendBuffer` of `G<u32>`: read back byte for byte.
fn main() {
    if let Ok(gpu) = cohort_runtime::Gpu::cpu() {
        let _ = cohort_runtime::AppendBuffer::<G<u32>>::new(&gpu, 4);
    }
}
