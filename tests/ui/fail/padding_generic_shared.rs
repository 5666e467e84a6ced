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

// A shared-memory array of `G<u32>`: stored and loaded as words.
cohort::shared! {
    static S: [G<u32>; 32];
}

#[kernel]
pub fn k(mut out: DisjointSlice<u64>) {
    let s = S.get();
    let t = thread::thread_idx_x() as usize;
    s.store(t % 32, G { a: 1, b: 2 });
    out.set(thread::index_1d(), s.load(t % 32).b);
}

fn run(gpu: &cohort_runtime::Gpu, m: &cohort_runtime::Module) -> cohort_runtime::Result<()> {
    let mut out = gpu.zeroed::<u64>(1)?;
    k::load(m)?.launch(gpu.stream(), (1u32, 1u32), &mut out)
}

fn main() {
    let _ = run as fn(&_, &_) -> _;
}
