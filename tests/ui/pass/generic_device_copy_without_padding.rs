//! A generic `#[derive(DeviceCopy)]` struct whose instantiation has no padding (`G<u64>`) is
//! accepted everywhere its bytes move: buffers, pinned memory, casts, kernel parameters, module
//! variables, shared memory, shuffles. (`G<u32>` is refused at each: `ui/fail/padding_generic_*`.)
use cohort::prelude::*;
use cohort_runtime::{Gpu, Module};

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct G<T> {
    pub a: T,
    pub b: u64,
}

/// No padding of its own, nor in its field when `T` has none.
#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct W<T> {
    pub inner: T,
}

cohort::constant! {
    pub static C: G<u64> = G { a: 1, b: 2 };
}

cohort::shared! {
    static S: [G<u64>; 32];
}

#[kernel]
pub fn k(v: G<u64>, s: &[G<u64>], mut out: DisjointSlice<G<u64>>) {
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let t = thread::thread_idx_x() as usize;
    let sh = S.get();
    sh.store(t % 32, s.first().copied().unwrap_or(v));
    let g = warp.shfl(sh.load(t % 32), 0);
    out.set(thread::index_1d(), g);
}

fn run(gpu: &Gpu, m: &Module) -> cohort_runtime::Result<()> {
    let s = gpu.upload(&[G { a: 1u64, b: 2 }])?;
    let mut out = gpu.zeroed::<G<u64>>(1)?;
    k::load(m)?.launch(gpu.stream(), (1u32, 1u32), G { a: 3, b: 4 }, &s, &mut out)?;
    let _ = gpu.pinned::<G<u64>>(4)?;
    let _ = out.cast::<u64>();
    let _ = cohort::slice::cast::<G<u64>, u32>(&[G { a: 1, b: 2 }]);
    let _ = m.constant(&C)?;
    let _ = cohort_runtime::AppendBuffer::<G<u64>>::new(gpu, 4)?;
    let _ = gpu.upload(&[W { inner: G { a: 1u64, b: 2 } }])?;
    Ok(())
}

fn main() {
    // Compiled (every instantiation above is checked), not run: the kernel has no PTX here.
    if std::env::var_os("COHORT_UI_NEVER_SET").is_some() {
        let gpu = Gpu::cpu().unwrap();
        let m = gpu.load(&cohort_kernels::PTX).unwrap();
        run(&gpu, &m).unwrap();
    }
}
