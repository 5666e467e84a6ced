//! Kernels of the stream tests (`tests/gpu/streams.rs`): a writer slow enough that a reader on
//! another stream would overtake it if nothing ordered them, and small readers and updaters.

use cohort::prelude::*;

/// Waits about `ns` nanoseconds, then writes `base + i` to element `i`: a slow writer.
#[kernel]
pub fn slow_write(mut out: DisjointSlice<u32>, base: u32, ns: u64) {
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
    let i = thread::index_1d();
    let v = base.wrapping_add(*i as u32);
    out.set(&i, v);
}

/// `out[i] = a[i]`: a reader.
#[kernel]
pub fn copy_u32(a: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v);
    }
}

/// Waits about `ns` nanoseconds, then `out[i] = a[i] * 2 + 1`: a slow reader (a writer of `a`
/// on another stream must wait for it).
#[kernel]
pub fn slow_read(a: &[u32], mut out: DisjointSlice<u32>, ns: u64) {
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
    let i = thread::index_1d();
    if let Some(&v) = a.get(*i) {
        out.set(&i, v.wrapping_mul(2).wrapping_add(1));
    }
}

/// `a[i] += k`, in place.
#[kernel]
pub fn add_in_place(mut a: DisjointSlice<u32>, k: u32) {
    let i = thread::index_1d();
    if let Some(v) = a.get_mut(&i) {
        *v = v.wrapping_add(k);
    }
}

/// Does nothing: for launch-rate measurements that must not touch memory.
#[kernel]
pub fn touch(mut a: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if *i == usize::MAX {
        a.set(&i, 0);
    }
}
