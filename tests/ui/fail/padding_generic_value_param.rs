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

// A by-value parameter of `G<u32>`: its bytes are the launch's parameter buffer.
#[kernel]
pub fn k(g: G<u32>, mut out: DisjointSlice<u64>) {
    out.set(thread::index_1d(), g.b);
}

fn run(gpu: &cohort_runtime::Gpu, m: &cohort_runtime::Module) -> cohort_runtime::Result<()> {
    let mut out = gpu.zeroed::<u64>(1)?;
    k::load(m)?.launch(gpu.stream(), (1u32, 1u32), G { a: 1u32, b: 2 }, &mut out)
}

fn main() {
    let _ = run as fn(&_, &_) -> _;
}
