//! The host entries (`__cohort_cpu_<entry>`) the runtime's CPU device launches, with parameter arrays built as the generated launchers build them.

use super::*;
use super::{block::*, errors::*, grid::*, tour::*};

//
// What the runtime's CPU device launches: each kernel instance's host entry, called once per
// CUDA thread with a `cuLaunchKernel`-style parameter array. The arrays below are built as the
// generated launchers build them: a local per PTX parameter (a slice is its address as a `u64`
// and its length as a `usize`, a scalar is the value), and one pointer to each local, in the
// order of the PTX entry's parameters.

/// A launch's parameter array (`kernelParams`), shared by the threads that read it.
struct Params<const N: usize>([*mut core::ffi::c_void; N]);
// SAFETY: the pointed-to locals are only read, by the launch's threads, while the test that
// owns them waits for the launch.
unsafe impl<const N: usize> Sync for Params<N> {}

impl<const N: usize> Params<N> {
    /// The array as a host entry takes it (as the runtime passes it).
    fn get(&self) -> *const *mut core::ffi::c_void {
        self.0.as_ptr()
    }
}

/// One pointer per local, in order: what the generated launcher writes
/// (`(&raw const local).cast_mut().cast::<c_void>()`).
macro_rules! params {
    ($($local:expr),* $(,)?) => {
        Params([$((&raw const $local).cast_mut().cast::<core::ffi::c_void>()),*])
    };
}

/// A slice's PTX parameters as the launcher passes them (`SliceArg::raw_parts`): the address as
/// a `u64` (a device address is the host address on the CPU device) and the length.
fn raw_parts<T>(s: &[T]) -> (u64, usize) {
    (s.as_ptr() as u64, s.len())
}

/// The same for memory the kernel writes (`DisjointArg::raw_parts`): the address of memory
/// borrowed mutably for the launch.
fn raw_parts_mut<T>(s: &mut [T]) -> (u64, usize) {
    (s.as_mut_ptr() as u64, s.len())
}

#[test]
fn cpu_entry_scalar_slice_disjoint_fast_path_and_threads() {
    let n = 10_000usize;
    let blocks = n.div_ceil(256) as u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let mut out = vec![f32::NAN; n];
    let (a_ptr, a_len) = raw_parts(&a);
    let (b_ptr, b_len) = raw_parts(&b);
    let (out_ptr, out_len) = raw_parts_mut(&mut out);
    let p = params!(a_ptr, a_len, b_ptr, b_len, out_ptr, out_len);
    // SAFETY: `p` is `vector_add`'s parameter array (two slices, then a `DisjointSlice`), each
    // pointer to a local of its PTX parameter's type; the addresses are of live vectors (`out`
    // not otherwise touched until the launch returns); called inside a launch.
    unsafe { __cohort_cpu_vector_add(p.get(), &LaunchSpec::new(blocks, 256u32).fast_path()) }.unwrap();
    for i in 0..n {
        assert_eq!(out[i], a[i] + b[i], "vector_add element {i}");
    }

    // A generic kernel's instances, one entry each; f32 on the fast path, f64 with a context
    // per thread (the mode the runtime uses for kernels with collectives).
    let x: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
    let mut y: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y0 = y.clone();
    let alpha = 1.5f32;
    let (x_ptr, x_len) = raw_parts(&x);
    let (y_ptr, y_len) = raw_parts_mut(&mut y);
    let p = params!(alpha, x_ptr, x_len, y_ptr, y_len);
    // SAFETY: `saxpy::<f32>`'s parameters (an `f32`, a slice, a `DisjointSlice`), as above.
    unsafe { __cohort_cpu_saxpy_f32(p.get(), &LaunchSpec::new(blocks, 256u32).fast_path()) }.unwrap();
    for i in 0..n {
        assert_eq!(y[i], alpha * x[i] + y0[i], "saxpy_f32 element {i}");
    }

    let x: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
    let mut y: Vec<f64> = (0..n).map(|i| i as f64 * 0.25).collect();
    let y0 = y.clone();
    let alpha = -2.25f64;
    let (x_ptr, x_len) = raw_parts(&x);
    let (y_ptr, y_len) = raw_parts_mut(&mut y);
    let p = params!(alpha, x_ptr, x_len, y_ptr, y_len);
    // SAFETY: `saxpy::<f64>`'s parameters, as above.
    unsafe { __cohort_cpu_saxpy_f64(p.get(), &LaunchSpec::new(blocks, 256u32)) }.unwrap();
    for i in 0..n {
        assert_eq!(y[i], alpha * x[i] + y0[i], "saxpy_f64 element {i}");
    }
}

#[test]
fn cpu_entry_block_reduce_in_shared_memory() {
    let blocks = 37usize;
    let d = data(blocks * 256 - 100, 5);
    let mut sums = vec![[u32::MAX; 2]; blocks];
    let (d_ptr, d_len) = raw_parts(&d);
    let (s_ptr, s_len) = raw_parts_mut(&mut sums);
    let p = params!(d_ptr, d_len, s_ptr, s_len);
    // SAFETY: `block_sum`'s parameters (a slice, a per-block `DisjointSlice`), each pointer to a
    // local of its type, addresses of live vectors; called inside a launch.
    unsafe { __cohort_cpu_block_sum(p.get(), &LaunchSpec::new(blocks as u32, 256u32)) }.unwrap();
    for (b, s) in sums.iter().enumerate() {
        let part = &d[(b * 256).min(d.len())..((b + 1) * 256).min(d.len())];
        let want_sum: u32 = part.iter().sum();
        let want_odd = part.iter().filter(|&&v| v % 2 == 1).count() as u32;
        assert_eq!(*s, [want_sum, want_odd], "block {b}");
    }

    // Dynamic shared memory.
    let d = data(64 * 9, 13);
    let mut out = vec![0u32; d.len()];
    let (d_ptr, d_len) = raw_parts(&d);
    let (o_ptr, o_len) = raw_parts_mut(&mut out);
    let p = params!(d_ptr, d_len, o_ptr, o_len);
    // SAFETY: `reverse_blocks`'s parameters, as above.
    unsafe { __cohort_cpu_reverse_blocks(p.get(), &LaunchSpec::new(9u32, 64u32).dynamic_shared(64 * 4)) }.unwrap();
    for i in 0..d.len() {
        let (b, t) = (i / 64, i % 64);
        assert_eq!(out[i], d[b * 64 + 63 - t], "element {i}");
    }
}

#[test]
fn cpu_entry_cooperative_grid_sync_and_gridvec() {
    // `neighbour_sums(grid: GridGroup, data: &[u32], published: &[AtomicU64], out: DisjointSlice<u64>)`:
    // the grid group has no PTX parameter.
    let nb = 6usize;
    let d = data(5000, 17);
    let published = atomics::<u64, cohort::atomic::Global>(&[0; 6]);
    let mut out = vec![0u64; nb];
    let (d_ptr, d_len) = raw_parts(&d);
    let (pub_ptr, pub_len) = raw_parts(&published);
    let (o_ptr, o_len) = raw_parts_mut(&mut out);
    let p = params!(d_ptr, d_len, pub_ptr, pub_len, o_ptr, o_len);
    // SAFETY: `neighbour_sums`'s parameters, each pointer to a local of its type, addresses of
    // live vectors; called inside a cooperative launch, as its grid group requires.
    unsafe { __cohort_cpu_neighbour_sums(p.get(), &LaunchSpec::new(nb as u32, 128u32).cooperative()) }.unwrap();
    for b in 0..nb {
        let theirs = (b + 1) % nb;
        let want: u64 = d.iter().enumerate().filter(|(i, _)| i % nb == theirs).map(|(_, &v)| u64::from(v)).sum();
        assert_eq!(out[b], want, "block {b}");
    }

    // `jacobi_1d(grid, b: &[f32], x: GridVec<f32>, iters: u32)`: a `GridVec` is its address,
    // length and barrier word's address (`GridVecArg::raw_parts`), then a scalar.
    let n = 500usize;
    let bvec: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let mut x = vec![0f32; n];
    let mut barrier = [0u32];
    let iters = 25u32;
    let (b_ptr, b_len) = raw_parts(&bvec);
    let (x_ptr, x_len) = raw_parts_mut(&mut x);
    let (bar_ptr, _) = raw_parts_mut(&mut barrier);
    let p = params!(b_ptr, b_len, x_ptr, x_len, bar_ptr, iters);
    // SAFETY: `jacobi_1d`'s parameters, as above; `x` and `barrier` are not touched otherwise
    // until the launch returns, which is cooperative.
    unsafe { __cohort_cpu_jacobi_1d(p.get(), &LaunchSpec::new(4u32, 128u32).cooperative()) }.unwrap();
    let mut want = vec![0f32; n];
    for _ in 0..iters {
        let old = want.clone();
        for i in 0..n {
            let l = if i > 0 { old[i - 1] } else { 0.0 };
            let r = if i + 1 < n { old[i + 1] } else { 0.0 };
            want[i] = (l + r + bvec[i]) * 0.5;
        }
    }
    for i in 0..n {
        assert_eq!(x[i].to_bits(), want[i].to_bits(), "x[{i}]");
    }
}

/// A scalar of a `DeviceCopy` struct (8-byte aligned fields).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
pub struct Line {
    /// Slope.
    pub a: f64,
    /// Offset.
    pub b: f64,
}

/// Raw-pointer parameters (`unsafe` kernel), a struct scalar, and an `AppendSlice`: writes
/// `line(src[i])` to `dst[n - 1 - i]` and appends every `i` whose value is negative.
///
/// # Safety
/// `src` and `dst` point at `n` elements each, `dst` written by nothing else.
#[kernel]
pub unsafe fn mirror_line(src: *const f64, dst: *mut f64, n: u32, line: Line, negatives: AppendSlice<u32>) {
    let i = thread::global_id() as u32;
    if i < n {
        // SAFETY: `i < n`, the caller's contract; each thread writes its own element.
        let y = unsafe { line.a * *src.add(i as usize) + line.b };
        // SAFETY: as above: `n - 1 - i` is this thread's element alone.
        unsafe { *dst.add((n - 1 - i) as usize) = y };
        if y < 0.0 {
            let _ = negatives.push(i);
        }
    }
}

#[test]
fn cpu_entry_raw_pointers_struct_scalar_and_append() {
    let n = 3000usize;
    let src: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut dst = vec![f64::NAN; n];
    let mut hits = vec![u32::MAX; n];
    let mut counter = [0u64];
    let line = Line { a: 2.0, b: -0.5 };
    let len = n as u32;
    // `DevicePtr`/`DevicePtrMut` are their addresses; an `AppendBuffer` is its address,
    // capacity and counter's address (`AppendArg::raw_parts`).
    let (src_ptr, _) = raw_parts(&src);
    let (dst_ptr, _) = raw_parts_mut(&mut dst);
    let (hits_ptr, hits_len) = raw_parts_mut(&mut hits);
    let (counter_ptr, _) = raw_parts_mut(&mut counter);
    let p = params!(src_ptr, dst_ptr, len, line, hits_ptr, hits_len, counter_ptr);
    // SAFETY: `mirror_line`'s parameters, each pointer to a local of its type; `src` and `dst`
    // hold `n` elements (its contract), `dst`, `hits` and `counter` are not touched otherwise
    // until the launch returns; called inside a launch.
    unsafe { __cohort_cpu_mirror_line(p.get(), &LaunchSpec::new(n.div_ceil(128) as u32, 128u32).fast_path()) }.unwrap();
    let mut want_hits = Vec::new();
    for i in 0..n {
        let y = line.a * src[i] + line.b;
        assert_eq!(dst[n - 1 - i].to_bits(), y.to_bits(), "dst[{}]", n - 1 - i);
        if y < 0.0 {
            want_hits.push(i as u32);
        }
    }
    let count = counter[0] as usize;
    assert_eq!(count, want_hits.len());
    let mut got = hits[..count].to_vec();
    got.sort_unstable();
    assert_eq!(got, want_hits);
    assert!(hits[count..].iter().all(|&h| h == u32::MAX), "nothing written past the count");
}

#[test]
fn cpu_entry_kernel_panic_is_an_err_with_file_line_block_thread() {
    // `panics` above, through its host entry: the same `Err`, the kernel's own line.
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    let (o_ptr, o_len) = raw_parts(&out);
    let p = params!(o_ptr, o_len);
    // SAFETY: `panics`'s parameters (one slice of atomics), as above; called inside a launch.
    let err = unsafe { __cohort_cpu_panics(p.get(), &LaunchSpec::new(3u32, 32u32)) }.unwrap_err();
    let CpuError::Panic { block, thread, location, message } = &err else { panic!("{err}") };
    assert_eq!((*block, *thread), (cohort_cpu::Dim3::new(1, 0, 0), cohort_cpu::Dim3::new(5, 0, 0)), "{err}");
    let (file, line, _) = location.clone().unwrap();
    assert!(file.ends_with("tests/cpu/errors.rs"), "{err}");
    assert_eq!(line, PANIC_LINE.load(StdRelaxed), "{err}");
    assert_eq!(message, "boom 7");
}
