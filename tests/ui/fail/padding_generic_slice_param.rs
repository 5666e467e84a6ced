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

// A slice parameter of `G<u32>`.
#[kernel]
pub fn k(s: &[G<u32>], mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    let b = s.get(*i).map_or(0, |g| g.b);
    out.set(&i, b);
}

fn run(gpu: &cohort_runtime::Gpu, m: &cohort_runtime::Module) -> cohort_runtime::Result<()> {
    let s = gpu.upload(&[G { a: 1u32, b: 2 }])?;
    let mut out = gpu.zeroed::<u64>(1)?;
    k::load(m)?.launch(gpu.stream(), (1u32, 1u32), &s, &mut out)
}

fn main() {
    let _ = run as fn(&_, &_) -> _;
}
