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

// A `DisjointSlice` parameter of `G<u32>`: the kernel writes values whose padding the host
// reads back.
#[kernel]
pub fn k(mut out: DisjointSlice<G<u32>>) {
    out.set(thread::index_1d(), G { a: 1, b: 2 });
}

fn run(gpu: &cohort_runtime::Gpu, m: &cohort_runtime::Module) -> cohort_runtime::Result<()> {
    let mut out = gpu.zeroed::<G<u32>>(1)?;
    k::load(m)?.launch(gpu.stream(), (1u32, 1u32), &mut out)
}

fn main() {
    let _ = run as fn(&_, &_) -> _;
}
