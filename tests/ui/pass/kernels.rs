//! Every accepted parameter kind, and launches with the right arguments.
#![no_std]
extern crate std;

use cohort::prelude::*;
use cohort_runtime::{DeviceBuffer, LaunchConfig, Module, Stream};

#[repr(C)]
#[derive(Clone, Copy, DeviceCopy)]
pub struct Params {
    pub a: f32,
    pub n: u32,
}

#[kernel]
pub fn all_kinds(p: Params, x: &[f32], counts: &[AtomicU32], mut out: DisjointSlice<f32>, k: u64) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = x[*i] * p.a + k as f32;
    }
    counts[0].fetch_add(1, Ordering::Relaxed);
}

/// # Safety
/// `p` must point at `n` floats.
#[kernel]
pub unsafe fn raw(p: *mut f32, q: *const f32, n: u32) {
    let _ = (p, q, n);
}

#[kernel(cooperative)]
pub fn coop(grid: GridGroup, x: &[u32]) {
    let _ = x;
    grid.sync();
}

#[kernel(instances(f32, (f64)))]
pub fn generic<T: Copy + DeviceCopy>(v: T, mut out: DisjointSlice<T>) {
    out.set(thread::index_1d(), v);
}

#[kernel(instances((u32, 4), (u64, 8)))]
pub fn two_params<T: DeviceCopy, const N: usize>(v: [T; N], mut out: DisjointSlice<[T; N]>) {
    out.set(thread::index_1d(), v);
}

/// One writer per block and per tile, 16-byte vectors.
#[kernel]
pub fn leaders(x: &[cohort::vec::f32x4], mut per_block: DisjointSlice<f32, PerBlock>, mut per_tile: DisjointSlice<f32, PerTile<32>>) {
    let block = cg::this_thread_block();
    let v = x.first().map_or(0.0, |q| q.x);
    if let Some(b) = block.leader_index() {
        per_block.set(b, v);
    }
    if let Some(t) = cg::tiled_partition::<32>(&block).leader_index() {
        per_tile[t] = v;
    }
}

/// Slots claimed from the output's own counter.
#[kernel]
pub fn compact(x: &[u32], hits: AppendSlice<u32>) {
    for i in thread::grid_stride(x.len()) {
        if x[*i] % 2 == 0 {
            let _ = hits.push(x[*i]);
        }
    }
}

#[allow(dead_code)]
fn compact_launch(m: &Module, s: &Stream, x: &DeviceBuffer<u32>, hits: &mut cohort_runtime::AppendBuffer<u32>) -> cohort_runtime::Result<()> {
    compact::load(m)?.launch(s, (1u32, 32u32), x, hits)
}

#[allow(dead_code)]
fn launches(m: &Module, s: &Stream, x: &DeviceBuffer<f32>, c: &mut DeviceBuffer<u32>, o: &mut DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    all_kinds::load(m)?.launch(s, (1u32, 32u32), Params { a: 1.0, n: 3 }, x, &mut *c, &mut *o, 7)?;
    all_kinds::load(m)?.launch(s, LaunchConfig::new(1, 32), Params { a: 1.0, n: 3 }, x.slice(1..), c.slice_mut(..), o.slice_mut(2..), 7)?;
    // SAFETY: not run; this file only has to compile.
    unsafe { raw::load(m)?.launch(s, (1u32, 32u32), o.as_device_ptr_mut(), x.as_device_ptr(), 3)? };
    coop::load(m)?.launch_cooperative(s, (1u32, 32u32), &*c)?;
    generic::<f32>::load(m)?.launch(s, (1u32, 32u32), 1.0f32, &mut *o)?;
    let _: &str = generic::<f64>::NAME;
    let _: &str = two_params::<u64, 8>::NAME;
    Ok(())
}

/// A dependent kernel (`launch_programmatic`), using the device side of programmatic launches.
#[kernel(dependent)]
pub fn dependent_step(a: &[f32], mut out: DisjointSlice<f32>) {
    cohort::launch::launch_dependents();
    cohort::launch::wait_for_prior_grid();
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v + 1.0);
    }
}

/// A generic dependent kernel: one `launch_programmatic` per instance.
#[kernel(dependent, instances(f32, u32))]
pub fn dependent_copy<T: DeviceCopy>(a: &[T], mut out: DisjointSlice<T>) {
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v);
    }
}

#[allow(dead_code)]
fn programmatic(m: &Module, s: &Stream, x: &DeviceBuffer<f32>, o: &mut DeviceBuffer<f32>) -> cohort_runtime::Result<()> {
    dependent_step::load(m)?.launch(s, (1u32, 32u32), x, &mut *o)?;
    dependent_step::load(m)?.launch_programmatic(s, (1u32, 32u32), x, &mut *o)?;
    dependent_copy::<f32>::load(m)?.launch_programmatic(s, LaunchConfig::new(1, 32), x.slice(..), o.slice_mut(..))?;
    let mut managed = cohort_runtime::ManagedBuffer::<f32>::new(&cohort_runtime::Gpu::cpu()?, 32)?;
    dependent_step::load(m)?.launch_programmatic(s, (1u32, 32u32), &managed, o.slice_mut(..))?;
    dependent_step::load(m)?.launch(s, (1u32, 32u32), x, &mut managed)?;
    let pooled = s.alloc_zeroed::<f32>(32)?;
    dependent_step::load(m)?.launch(s, (1u32, 32u32), &pooled, &mut *o)?;
    Ok(())
}

fn main() {
    assert!(dependent_step::DEPENDENT && !coop::DEPENDENT);
    assert_eq!(generic::<f32>::NAME, "generic_f32");
    assert_eq!(two_params::<u32, 4>::NAME, "two_params_u32_4");
    assert!(coop::COOPERATIVE);
}
