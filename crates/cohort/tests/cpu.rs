//! `#[kernel]`s of the device library executed on the CPU device (issue 12): the kernel bodies
//! (`__cohort_kernel_<name>`, what `#[kernel]` emits on the host) run through
//! `cohort_cpu::launch`, and every element is checked against a CPU reference. The last
//! section runs the kernels' host entries (`__cohort_cpu_<entry>`, what the runtime's CPU
//! device launches) with parameter arrays built as the generated launchers build them.
//!
//! The kernels are the tour's and the test kernels' (copied here: `cohort-kernels` depends on
//! this crate, so it can't be a dev-dependency), plus the failure cases: a panic, a divergent
//! collective and a deadlock, each an `Err` naming where.

#![allow(clippy::needless_range_loop)]

use std::sync::atomic::AtomicU32 as StdAtomicU32;
use std::sync::atomic::Ordering::Relaxed as StdRelaxed;

use cohort::prelude::*;
use cohort_cpu::{CpuError, LaunchSpec, launch, launch_typed};

/// A buffer the kernel's threads write through per-thread views (`DisjointSlice`, `GridVec`),
/// as the runtime passes a device buffer: borrowed exclusively for the launch (`'a`), so
/// nothing else touches it meanwhile.
struct Ptr<'a, T>(*mut T, usize, core::marker::PhantomData<&'a mut [T]>);
// SAFETY: the pointer is only turned into `DisjointSlice`/`GridVec` views, whose element
// ownership rules keep the threads' writes disjoint.
unsafe impl<T: Send> Sync for Ptr<'_, T> {}

impl<'a, T> Ptr<'a, T> {
    fn of(v: &'a mut [T]) -> Self {
        Self(v.as_mut_ptr(), v.len(), core::marker::PhantomData)
    }
    /// The pointer (a method, so that closures capture the whole `Ptr`, which is `Sync`).
    fn get(&self) -> *mut T {
        self.0
    }
    /// A thread's view of the whole buffer.
    fn disjoint<K: cohort::slice::IndexKind>(&self) -> DisjointSlice<'a, T, K> {
        // SAFETY: `self.0` points at `self.1` elements borrowed exclusively for `'a`; every
        // thread's view hands it only the elements of its own index (the kernel's
        // `DisjointSlice` contract, as for a device buffer).
        unsafe { DisjointSlice::from_raw_parts(self.0, self.1) }
    }
}

/// Global-memory atomics (on the CPU device, host memory is the device's global memory).
fn atomics<T: Copy, S: cohort::atomic::Space>(init: &[T]) -> Vec<cohort::atomic::Atomic<T, S>> {
    // SAFETY: on the CPU device every atomic operation is a host atomic on the value's own
    // memory (a `Vec`'s element here), whatever its space.
    init.iter().map(|&v| unsafe { cohort::atomic::Atomic::new(v) }).collect()
}

fn data(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000).collect()
}

// --- Tour kernels -------------------------------------------------------------------------------

/// `out[i] = a[i] + b[i]`.
#[kernel]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = a[*i] + b[*i];
    }
}

/// What SAXPY needs of its element type.
pub trait Axpy: Copy + core::ops::Mul<Output = Self> + core::ops::Add<Output = Self> {}
impl Axpy for f32 {}
impl Axpy for f64 {}

/// `y[i] = a * x[i] + y[i]`.
#[kernel(instances(f32, f64))]
pub fn saxpy<T: Axpy>(a: T, x: &[T], mut y: DisjointSlice<T>) {
    let i = thread::index_1d();
    if let Some(yi) = y.get_mut(&i) {
        *yi = a * x[*i] + *yi;
    }
}

/// Sums `data` into `total[0]`: grid-stride loop, warp reduce, one atomic add per warp.
#[kernel]
pub fn sum_u32(data: &[u32], total: &[AtomicU64]) {
    let mut acc = 0u64;
    for i in thread::grid_stride(data.len()) {
        acc += data[*i] as u64;
    }
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let acc = cg::reduce(&warp, acc, cg::plus);
    if warp.thread_rank() == 0 {
        total[0].add(acc, Ordering::Relaxed);
    }
}

#[test]
fn tour_vector_add_and_saxpy_fast_path() {
    let n = 10_000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let mut out = vec![f32::NAN; n];
    let p = Ptr::of(&mut out);
    let blocks = n.div_ceil(256) as u32;
    launch_typed(&LaunchSpec::new(blocks, 256u32).fast_path(), &|| __cohort_kernel_vector_add(&a, &b, p.disjoint()))
        .unwrap();
    for i in 0..n {
        assert_eq!(out[i], a[i] + b[i], "vector_add element {i}");
    }

    let x: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
    let mut y: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let y0 = y.clone();
    let p = Ptr::of(&mut y);
    launch_typed(&LaunchSpec::new(blocks, 256u32).fast_path(), &|| __cohort_kernel_saxpy::<f64>(1.5, &x, p.disjoint()))
        .unwrap();
    for i in 0..n {
        assert_eq!(y[i], 1.5 * x[i] + y0[i], "saxpy element {i}");
    }
}

#[test]
fn tour_sum_u32_warp_reduce_and_atomic() {
    let d = data(100_003, 7);
    let total = atomics::<u64, cohort::atomic::Global>(&[0]);
    launch(&LaunchSpec::new(13u32, 128u32), &|| __cohort_kernel_sum_u32(&d, &total)).unwrap();
    let want: u64 = d.iter().map(|&v| u64::from(v)).sum();
    assert_eq!(total[0].load(Ordering::Relaxed), want);
}

// --- Block: shared memory and barriers ---------------------------------------------------------

cohort::shared! {
    static PARTIAL: [u32; 256];
}

/// Each block sums its 256 elements with a shared-memory tree and `sync_threads`; also counts
/// its odd elements with `sync_threads_count`.
#[kernel]
pub fn block_sum(data: &[u32], mut sums: DisjointSlice<[u32; 2], PerBlock>) {
    let t = thread::thread_idx_x() as usize;
    let v = data.get(thread::global_id() as usize).copied().unwrap_or(0);
    let p = PARTIAL.get();
    p.store(t, v);
    let odd = cohort::sync::sync_threads_count(v % 2 == 1);
    let mut s = 128;
    while s > 0 {
        if t < s {
            p.store(t, p.load(t) + p.load(t + s));
        }
        sync_threads();
        s /= 2;
    }
    if let Some(leader) = cg::this_thread_block().leader_index() {
        sums.set(leader, [p.load(0), odd]);
    }
}

/// Reverses each block's elements through dynamic shared memory.
#[kernel]
pub fn reverse_blocks(data: &[u32], mut out: DisjointSlice<u32>) {
    let buf = cohort::shared::dynamic::<u32>();
    let t = thread::thread_idx_x() as usize;
    let n = thread::block_dim_x() as usize;
    let i = thread::index_1d();
    buf.store(t, data[*i]);
    sync_threads();
    out.set(&i, buf.load(n - 1 - t));
}

#[test]
fn block_reduce_shared_and_sync_threads() {
    let blocks = 37usize;
    let d = data(blocks * 256 - 100, 3);
    let mut sums = vec![[0u32; 2]; blocks];
    let p = Ptr::of(&mut sums);
    launch(&LaunchSpec::new(blocks as u32, 256u32), &|| __cohort_kernel_block_sum(&d, p.disjoint())).unwrap();
    for (b, s) in sums.iter().enumerate() {
        let part = &d[(b * 256).min(d.len())..((b + 1) * 256).min(d.len())];
        let want_sum: u32 = part.iter().sum();
        let want_odd = part.iter().filter(|&&v| v % 2 == 1).count() as u32;
        assert_eq!(*s, [want_sum, want_odd], "block {b}");
    }

    let d = data(64 * 9, 11);
    let mut out = vec![0u32; d.len()];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(9u32, 64u32).dynamic_shared(64 * 4), &|| __cohort_kernel_reverse_blocks(&d, p.disjoint()))
        .unwrap();
    for i in 0..d.len() {
        let (b, t) = (i / 64, i % 64);
        assert_eq!(out[i], d[b * 64 + 63 - t], "element {i}");
    }
}

// --- Warp: tiles, coalesced groups ---------------------------------------------------------------

/// Tile-of-16 collectives: shuffles, votes, ballot, reduce, scan.
#[kernel]
pub fn tile_ops(data: &[u32], mut out: DisjointSlice<[u32; 6]>) {
    let i = thread::index_1d();
    let v = data[*i];
    let t = cg::tiled_partition::<16>(&cg::this_thread_block());
    let r = t.thread_rank();
    let sh = t.shfl(v, (r + 3) % 16);
    let down = t.shfl_down(v, 1);
    let votes = u32::from(t.any(v % 7 == 0)) | u32::from(t.all(v < 990)) << 1;
    let ballot = t.ballot(v % 2 == 0);
    let sum = cg::reduce(&t, v, cg::plus);
    let scan = cg::inclusive_scan(&t, v, cg::plus);
    out.set(&i, [sh, down, votes, ballot, sum, scan]);
}

#[test]
fn tile_shuffles_votes_reduce_scan() {
    let n = 64 * 5;
    let d = data(n, 5);
    let mut out = vec![[0u32; 6]; n];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(5u32, 64u32), &|| __cohort_kernel_tile_ops(&d, p.disjoint())).unwrap();
    for i in 0..n {
        let base = i / 16 * 16;
        let tile = &d[base..base + 16];
        let r = i % 16;
        let down = if r + 1 < 16 { tile[r + 1] } else { tile[r] };
        let votes = u32::from(tile.iter().any(|v| v % 7 == 0)) | u32::from(tile.iter().all(|&v| v < 990)) << 1;
        let ballot = tile.iter().enumerate().filter(|(_, v)| *v % 2 == 0).map(|(k, _)| 1u32 << k).sum::<u32>();
        let sum: u32 = tile.iter().sum();
        let scan: u32 = tile[..=r].iter().sum();
        assert_eq!(out[i], [tile[(r + 3) % 16], down, votes, ballot, sum, scan], "thread {i}");
    }
}

/// After a branch, the lanes that took it form a coalesced group.
#[kernel]
pub fn coalesced(data: &[u32], mut out: DisjointSlice<[u32; 3]>) {
    let i = thread::index_1d();
    let v = data[*i];
    if v % 3 == 0 {
        let g = cg::coalesced_threads();
        let s = cg::reduce(&g, v, cg::plus);
        out.set(&i, [g.thread_rank(), g.num_threads(), s]);
    } else {
        out.set(&i, [u32::MAX, 0, 0]);
    }
}

#[test]
fn coalesced_group_after_divergence() {
    let n = 96 * 4;
    let d = data(n, 1);
    let mut out = vec![[0u32; 3]; n];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(4u32, 96u32), &|| __cohort_kernel_coalesced(&d, p.disjoint())).unwrap();
    for i in 0..n {
        let warp = &d[i / 32 * 32..i / 32 * 32 + 32];
        let lane = i % 32;
        let want = if d[i] % 3 == 0 {
            let rank = warp[..lane].iter().filter(|v| *v % 3 == 0).count() as u32;
            let num = warp.iter().filter(|v| *v % 3 == 0).count() as u32;
            let sum = warp.iter().filter(|v| *v % 3 == 0).sum();
            [rank, num, sum]
        } else {
            [u32::MAX, 0, 0]
        };
        assert_eq!(out[i], want, "thread {i}");
    }
}

// --- Grid sync, GridVec ------------------------------------------------------------------------

/// The tour's cooperative kernel: block sums published, read by the neighbour after grid sync.
#[kernel(cooperative)]
pub fn neighbour_sums(grid: GridGroup, data: &[u32], published: &[AtomicU64], mut out: DisjointSlice<u64>) {
    let block = cg::this_thread_block();
    let b = grid.block_rank() as usize;
    let nb = grid.num_blocks() as usize;
    let mut acc = 0u64;
    let mut i = b + nb * block.thread_rank() as usize;
    while i < data.len() {
        acc += data[i] as u64;
        i += nb * block.num_threads() as usize;
    }
    let acc = cg::reduce(&block, acc, cg::plus);
    if block.thread_rank() == 0 {
        published[b].store(acc, Ordering::Relaxed);
    }
    grid.sync();
    if block.thread_rank() == 0 {
        let theirs = published[(b + 1) % nb].load(Ordering::Relaxed);
        // SAFETY: only thread 0 of block b writes element b.
        unsafe { *out.get_unchecked_mut(b) = theirs };
    }
}

/// 1-D Jacobi sweeps `x[i] = (x[i-1] + x[i+1] + b[i]) / 2` on a `GridVec` (publish, read the
/// neighbours, reclaim, write: no `unsafe`).
#[kernel(cooperative)]
pub fn jacobi_1d(grid: GridGroup, b: &[f32], mut x: GridVec<f32>, iters: u32) {
    let i = thread::index_1d();
    let n = x.len();
    for _ in 0..iters {
        let all = x.publish(&grid);
        let v = if *i < n {
            let l = if *i > 0 { all[*i - 1] } else { 0.0 };
            let r = if *i + 1 < n { all[*i + 1] } else { 0.0 };
            (l + r + b[*i]) * 0.5
        } else {
            0.0
        };
        x = all.reclaim(&grid);
        x.set(&i, v);
    }
}

#[test]
fn grid_sync_neighbour_sums_and_gridvec_jacobi() {
    let nb = 6usize;
    let d = data(5000, 9);
    let published = atomics::<u64, cohort::atomic::Global>(&[0; 6]);
    let mut out = vec![0u64; nb];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(nb as u32, 128u32).cooperative(), &|| {
        // SAFETY: the launch is cooperative.
        let grid = unsafe { GridGroup::new_unchecked() };
        __cohort_kernel_neighbour_sums(grid, &d, &published, p.disjoint())
    })
    .unwrap();
    for b in 0..nb {
        let theirs = (b + 1) % nb;
        let want: u64 = d.iter().enumerate().filter(|(i, _)| i % nb == theirs).map(|(_, &v)| u64::from(v)).sum();
        assert_eq!(out[b], want, "block {b}");
    }

    let n = 500usize;
    let bvec: Vec<f32> = (0..n).map(|i| (i % 17) as f32 - 8.0).collect();
    let mut x = vec![0f32; n];
    let mut barrier = 0u32;
    let (px, pb) = (Ptr::of(&mut x), Ptr::of(core::slice::from_mut(&mut barrier)));
    let iters = 20;
    launch(&LaunchSpec::new(4u32, 128u32).cooperative(), &|| {
        // SAFETY: the launch is cooperative.
        let grid = unsafe { GridGroup::new_unchecked() };
        // SAFETY: `x` (`n` elements) and `barrier` are borrowed exclusively for the launch
        // (`Ptr`); the vector's phases keep the threads' accesses apart.
        let x = unsafe { GridVec::from_raw_parts(px.get(), n, pb.get()) };
        __cohort_kernel_jacobi_1d(grid, &bvec, x, iters)
    })
    .unwrap();
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

#[test]
fn grid_too_large_for_cooperative_launch_is_refused() {
    let blocks = cohort_cpu::max_coresident_blocks(1024) + 1;
    let r = launch(&LaunchSpec::new(blocks as u32, 1024u32).cooperative(), &|| {
        // SAFETY: never runs (the launch is refused).
        unsafe { GridGroup::new_unchecked() }.sync()
    });
    assert!(r.is_err(), "{r:?}");
}

// --- Atomics, mutex ----------------------------------------------------------------------------

/// Atomics of every type: integer add/min/max/and/or/xor/inc/dec/CAS, float add and min/max.
#[kernel]
pub fn atomic_mix(
    u: &[AtomicU32],
    s: &[AtomicI32],
    w: &[AtomicU64],
    l: &[AtomicI64],
    f: &[AtomicF32],
    d: &[AtomicF64],
) {
    let id = thread::global_id() as u32;
    u[0].fetch_add(1, Ordering::Relaxed);
    u[1].fetch_max(id, Ordering::Relaxed);
    u[2].fetch_min(id + 5, Ordering::Relaxed);
    u[3].fetch_or(1 << (id % 32), Ordering::Relaxed);
    u[4].fetch_xor(id, Ordering::Relaxed);
    u[5].fetch_inc(9, Ordering::Relaxed);
    u[6].fetch_and(!(1 << (id % 31)), Ordering::Relaxed);
    let _ = u[7].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(x + 2));
    u[8].fetch_dec(1000, Ordering::Relaxed);
    s[0].fetch_add(-(id as i32), Ordering::Relaxed);
    s[1].fetch_min(-(id as i32), Ordering::Relaxed);
    s[2].fetch_max(id as i32 - 500, Ordering::Relaxed);
    w[0].fetch_add(u64::from(id) * 1_000_000_007, Ordering::Relaxed);
    w[1].fetch_max(u64::from(id) << 33, Ordering::Relaxed);
    l[0].fetch_sub(i64::from(id) << 31, Ordering::Relaxed);
    l[1].fetch_min(-(i64::from(id) << 40), Ordering::Relaxed);
    f[0].fetch_add(0.5, Ordering::Relaxed);
    f[1].fetch_max(id as f32, Ordering::Relaxed);
    f[2].fetch_min(if id == 3 { f32::NAN } else { id as f32 + 1.0 }, Ordering::Relaxed);
    d[0].fetch_add(0.25, Ordering::Relaxed);
    d[1].fetch_max_nan(if id == 7 { f64::NAN } else { f64::from(id) }, Ordering::Relaxed);
}

#[test]
fn atomics_of_several_types() {
    use cohort::atomic::Global;
    let n = 1000u32;
    let u = atomics::<u32, Global>(&[0, 0, u32::MAX, 0, 0, 0, u32::MAX, 0, 0]);
    let s = atomics::<i32, Global>(&[0, 0, i32::MIN]);
    let w = atomics::<u64, Global>(&[0, 0]);
    let l = atomics::<i64, Global>(&[0, 0]);
    let f = atomics::<f32, Global>(&[0.0, f32::MIN, f32::MAX]);
    let d = atomics::<f64, Global>(&[0.0, 0.0]);
    launch(&LaunchSpec::new(n / 100, 100u32), &|| __cohort_kernel_atomic_mix(&u, &s, &w, &l, &f, &d)).unwrap();
    let ids = 0..n;
    let get = |a: &cohort::atomic::AtomicU32| a.load(Ordering::Relaxed);
    assert_eq!(get(&u[0]), n);
    assert_eq!(get(&u[1]), n - 1);
    assert_eq!(get(&u[2]), 5);
    assert_eq!(get(&u[3]), u32::MAX);
    assert_eq!(get(&u[4]), ids.clone().fold(0, |a, i| a ^ i));
    // atomicInc with limit 9 wraps to 0 after 9: 1000 increments from 0 leave 1000 % 10.
    assert_eq!(get(&u[5]), n % 10);
    assert_eq!(get(&u[6]), 1 << 31);
    assert_eq!(get(&u[7]), 2 * n);
    // atomicDec with limit 1000 from 0: 0 -> 1000 -> 999 -> … ; after 1000 decrements: 1.
    assert_eq!(get(&u[8]), 1);
    assert_eq!(s[0].load(Ordering::Relaxed), -(ids.clone().sum::<u32>() as i32));
    assert_eq!(s[1].load(Ordering::Relaxed), -(n as i32 - 1));
    assert_eq!(s[2].load(Ordering::Relaxed), n as i32 - 1 - 500);
    assert_eq!(w[0].load(Ordering::Relaxed), ids.clone().map(|i| u64::from(i) * 1_000_000_007).sum::<u64>());
    assert_eq!(w[1].load(Ordering::Relaxed), u64::from(n - 1) << 33);
    assert_eq!(l[0].load(Ordering::Relaxed), -ids.clone().map(|i| i64::from(i) << 31).sum::<i64>());
    assert_eq!(l[1].load(Ordering::Relaxed), -(i64::from(n - 1) << 40));
    assert_eq!(f[0].load(Ordering::Relaxed), 0.5 * n as f32);
    assert_eq!(f[1].load(Ordering::Relaxed), (n - 1) as f32);
    // `fetch_min` ignores NaN (fmin): the smallest number wins.
    assert_eq!(f[2].load(Ordering::Relaxed), 1.0);
    assert_eq!(d[0].load(Ordering::Relaxed), 0.25 * f64::from(n));
    // `fetch_max_nan` propagates NaN.
    assert!(d[1].load(Ordering::Relaxed).is_nan());
}

/// Every thread takes the mutex and does a non-atomic read-modify-write under it.
#[kernel]
pub fn mutex_add_one(mutex: &[Mutex], x: &[AtomicU32], spin: u32) {
    let _guard = if spin != 0 { mutex[0].lock_spin() } else { mutex[0].lock() };
    let v = x[0].load(Ordering::Relaxed);
    // Let the other threads of the block run while the lock is held.
    cohort::raw::nanosleep(100);
    x[0].store(v + 1, Ordering::Relaxed);
}

#[test]
fn mutex_serializes_threads() {
    for spin in [0, 1] {
        // SAFETY: on the CPU device the mutex's word is host memory, used atomically.
        let m = vec![unsafe { Mutex::new() }];
        let x = atomics::<u32, cohort::atomic::Global>(&[0]);
        launch(&LaunchSpec::new(8u32, 64u32), &|| __cohort_kernel_mutex_add_one(&m, &x, spin)).unwrap();
        assert_eq!(x[0].load(Ordering::Relaxed), 8 * 64, "spin {spin}");
    }
}

// --- printf ------------------------------------------------------------------------------------

/// Prints one line from each of the first `lines` threads (the tour's `hello`).
#[kernel]
pub fn hello(lines: u32, tag: f32) {
    let id = thread::global_id();
    if id < lines as u64 {
        printf!(
            "hello from thread %u of block %u: tag %.2f, id %llu, %d %5s|%-4x|%c %p\n",
            thread::thread_idx_x(),
            thread::block_idx_x(),
            tag,
            id,
            -(id as i32),
            c"ab",
            255u32,
            'Z',
            core::ptr::null::<i32>()
        );
    }
}

/// Runs `hello` in a child process (this test binary, filtered to `printf_child`) and checks
/// its stdout, line by line, against what the GPU's `printf` prints (`%n`, which would write
/// through its argument, is refused at compile time by `printf!`; a null `%p` prints as the C
/// library prints it).
#[test]
fn printf_prints_the_gpus_format() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "printf_child", "--nocapture", "--test-threads=1"])
        .env("COHORT_PRINTF_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // (The harness prints `test printf_child ... ` before the kernel's first line.)
    let mut lines: Vec<&str> = text.lines().filter_map(|l| l.find("hello from").map(|at| &l[at..])).collect();
    lines.sort_unstable();
    let mut want: Vec<String> = (0..6u32)
        .map(|id| {
            format!(
                "hello from thread {} of block {}: tag 2.50, id {id}, {} {:>5}|{:<4x}|Z (nil)",
                id % 4,
                id / 4,
                -(id as i32),
                "ab",
                255
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want, "stdout:\n{text}");
}

#[test]
fn printf_child() {
    if std::env::var_os("COHORT_PRINTF_CHILD").is_none() {
        return;
    }
    launch(&LaunchSpec::new(3u32, 4u32), &|| __cohort_kernel_hello(6, 2.5)).unwrap();
}

// --- Errors with sites -------------------------------------------------------------------------

static PANIC_LINE: StdAtomicU32 = StdAtomicU32::new(0);

/// Thread 5 of block 1 panics.
#[kernel]
pub fn panics(out: &[AtomicU32]) {
    if thread::thread_idx_x() == 5 && thread::block_idx_x() == 1 {
        PANIC_LINE.store(line!() + 1, StdRelaxed);
        panic!("boom {}", 7);
    }
    out[0].add(1, Ordering::Relaxed);
}

#[test]
fn kernel_panic_is_an_err_with_file_line_block_thread() {
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    let err = launch(&LaunchSpec::new(3u32, 32u32), &|| __cohort_kernel_panics(&out)).unwrap_err();
    let CpuError::Panic { block, thread, location, message } = &err else { panic!("{err}") };
    assert_eq!((*block, *thread), (cohort_cpu::Dim3::new(1, 0, 0), cohort_cpu::Dim3::new(5, 0, 0)), "{err}");
    let (file, line, _) = location.clone().unwrap();
    assert!(file.ends_with("tests/cpu.rs"), "{err}");
    assert_eq!(line, PANIC_LINE.load(StdRelaxed), "{err}");
    assert_eq!(message, "boom 7");
}

/// Half a tile reaches a reduce over the whole tile.
#[kernel]
pub fn divergent_reduce(out: &[AtomicU32]) {
    let t = cg::tiled_partition::<32>(&cg::this_thread_block());
    if t.thread_rank() < 16 {
        let s = cg::reduce(&t, 1u32, cg::plus);
        out[0].add(s, Ordering::Relaxed);
    }
}

#[test]
fn divergent_collective_is_an_err_with_site_and_lanes() {
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    let err = launch(&LaunchSpec::new(1u32, 32u32), &|| __cohort_kernel_divergent_reduce(&out)).unwrap_err();
    let CpuError::WarpDivergence { mask, arrived, site, .. } = &err else { panic!("{err}") };
    assert_eq!((*mask, *arrived), (u32::MAX, 0xffff), "{err}");
    assert!(site.file().ends_with("tests/cpu.rs"), "the site is the kernel's line: {err}");
}

/// Two halves of a block at two different `sync_threads`.
#[allow(clippy::if_same_then_else)]
#[kernel]
pub fn two_barriers(out: &[AtomicU32]) {
    if thread::thread_idx_x() < 32 {
        sync_threads();
    } else {
        sync_threads();
    }
    out[0].add(1, Ordering::Relaxed);
}

#[test]
fn deadlock_at_two_barriers_is_an_err_naming_both() {
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    let err = launch(&LaunchSpec::new(2u32, 64u32), &|| __cohort_kernel_two_barriers(&out)).unwrap_err();
    let CpuError::BarrierMismatch { first, second, .. } = &err else { panic!("{err}") };
    for at in [first, second] {
        assert!(at.site.file().ends_with("tests/cpu.rs"), "{err}");
    }
    assert_ne!(first.site.line(), second.site.line(), "{err}");
}

/// Two divergent shuffles written inside one `macro_rules!` body: both calls have the
/// macro's invocation as their `Location::caller()`.
macro_rules! split_shfl {
    ($warp:expr, $v:expr) => {
        if $warp.thread_rank() < 16 { $warp.shfl($v, 0) } else { $warp.shfl($v, 31) }
    };
}

/// Lanes 0–15 and 16–31 of each warp shuffle at two calls of one macro expansion.
#[kernel]
pub fn macro_shfl(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let warp = cg::tiled_partition::<32>(&cg::this_thread_block());
    let r = split_shfl!(warp, *i as u32);
    out.set(i, r);
}

/// A divergent `sync_threads_count` behind a `#[track_caller]` helper: both calls have the
/// helper's caller as their location.
#[track_caller]
fn split_count(hi: bool) -> u32 {
    if hi { cohort::sync::sync_threads_count(true) } else { cohort::sync::sync_threads_count(false) }
}

/// Warp 0 and the other warps at two calls of one `#[track_caller]` helper.
#[kernel]
pub fn helper_count(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let n = split_count(thread::warp_id() == 0);
    out.set(i, n);
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the CPU device tells two calls of one source location apart only in builds with debug assertions"
)]
fn calls_inside_one_macro_or_helper_are_told_apart() {
    if !cfg!(debug_assertions) {
        // Run anyway by `--include-ignored` (the GPU bundle's runner): nothing to check here.
        eprintln!("skipped: the CPU device tells two calls of one source location apart only with debug assertions");
        return;
    }
    let mut v = vec![0u32; 64];
    let p = Ptr::of(&mut v);
    let err = launch(&LaunchSpec::new(1u32, 64u32), &|| __cohort_kernel_macro_shfl(p.disjoint())).unwrap_err();
    let CpuError::WarpDivergence { site, elsewhere, .. } = &err else { panic!("{err}") };
    assert!(matches!(elsewhere, cohort_cpu::Elsewhere::SameSite { .. }), "{err}");
    assert!(site.file().ends_with("tests/cpu.rs"), "{err}");
    assert!(err.to_string().contains("macro expansion or `#[track_caller]` helper"), "{err}");
    let err = launch(&LaunchSpec::new(1u32, 64u32), &|| __cohort_kernel_helper_count(p.disjoint())).unwrap_err();
    let CpuError::BarrierMismatch { first, second, .. } = &err else { panic!("{err}") };
    assert_eq!(first.site, second.site, "{err}");
    assert!(err.to_string().contains("macro expansion or `#[track_caller]` helper"), "{err}");
}

// --- More of the device library ----------------------------------------------------------------

cohort::shared! {
    static STAGE: [u32; 128];
}

/// Stages the block's 128 elements with `memcpy_async`, reads them reversed, then labeled
/// partitions, `match_any` and a 64-thread (large) tile reduce.
#[kernel]
pub fn staged(data: &[u32], mut out: DisjointSlice<[u32; 4]>) {
    let block = cg::this_thread_block();
    let mut dst = STAGE.get().as_slice();
    let b = thread::block_idx_x() as usize;
    cg::memcpy_async(&block, &mut dst, &data[b * 128..(b + 1) * 128]).wait(&block);
    let t = thread::thread_idx_x() as usize;
    let v = dst.load(127 - t);
    let warp = cg::tiled_partition::<32>(&block);
    let part = cg::labeled_partition(&warp, v % 4);
    let psum = cg::reduce(&part, v, cg::plus);
    let same = warp.match_any(v % 4);
    let big = cg::tiled_partition::<64>(&block);
    let bsum = cg::reduce(&big, v, cg::plus);
    out.set(thread::index_1d(), [v, psum, same, bsum]);
}

#[test]
fn memcpy_async_partitions_match_and_large_tiles() {
    let blocks = 5;
    let d = data(blocks * 128, 21);
    let mut out = vec![[0u32; 4]; d.len()];
    let p = Ptr::of(&mut out);
    // `cp.async` reads global memory only: the source must be the device's (as the runtime's
    // buffers are, registered when allocated).
    cohort_cpu::register_global(d.as_ptr() as usize, size_of_val(&d[..]));
    let r = launch(&LaunchSpec::new(blocks as u32, 128u32), &|| __cohort_kernel_staged(&d, p.disjoint()));
    cohort_cpu::unregister_global(d.as_ptr() as usize);
    r.unwrap();
    let vals: Vec<u32> = (0..d.len()).map(|i| d[i / 128 * 128 + 127 - i % 128]).collect();
    for i in 0..d.len() {
        let v = vals[i];
        let warp = &vals[i / 32 * 32..i / 32 * 32 + 32];
        let psum = warp.iter().filter(|w| *w % 4 == v % 4).sum();
        let same = warp.iter().enumerate().filter(|(_, w)| *w % 4 == v % 4).map(|(k, _)| 1u32 << k).sum();
        let bsum = vals[i / 64 * 64..i / 64 * 64 + 64].iter().sum();
        assert_eq!(out[i], [v, psum, same, bsum], "thread {i}");
    }
}

static LOCAL_COPY_LINE: StdAtomicU32 = StdAtomicU32::new(0);

/// `memcpy_async` from the thread's own array (local memory on a GPU, where `cp.async` would
/// fault): a panic at the call site, before anything is copied.
#[kernel]
pub fn memcpy_from_local(mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let mut dst = STAGE.get().as_slice();
    let local = [thread::thread_idx_x(); 8];
    LOCAL_COPY_LINE.store(line!() + 1, StdRelaxed);
    cg::memcpy_async(&block, &mut dst, &local[..]).wait(&block);
    out.set(thread::index_1d(), dst.load(0));
}

#[test]
fn memcpy_async_from_outside_global_memory_is_an_err_at_the_call_site() {
    let mut out = vec![0u32; 32];
    let p = Ptr::of(&mut out);
    let err = launch(&LaunchSpec::new(1u32, 32u32), &|| __cohort_kernel_memcpy_from_local(p.disjoint())).unwrap_err();
    let CpuError::Panic { location, message, .. } = &err else { panic!("{err}") };
    let (file, line, _) = location.clone().unwrap();
    assert!(file.ends_with("tests/cpu.rs"), "{err}");
    assert_eq!(line, LOCAL_COPY_LINE.load(StdRelaxed), "{err}");
    assert!(message.contains("memcpy_async") && message.contains("not in global memory"), "{err}");
    assert_eq!(out, vec![0; 32], "nothing was written");
    // Host memory that is not the device's (a `Vec` the runtime did not allocate) is refused
    // too; registered as the device's, the same source copies.
    let d = data(128, 3);
    let mut out = vec![[0u32; 4]; 128];
    let p = Ptr::of(&mut out);
    let spec = LaunchSpec::new(1u32, 128u32);
    let err = launch(&spec, &|| __cohort_kernel_staged(&d, p.disjoint())).unwrap_err();
    assert!(err.to_string().contains("not in global memory"), "{err}");
    cohort_cpu::register_global(d.as_ptr() as usize, size_of_val(&d[..]));
    let r = launch(&spec, &|| __cohort_kernel_staged(&d, p.disjoint()));
    cohort_cpu::unregister_global(d.as_ptr() as usize);
    r.unwrap();
    assert!((0..128).all(|i| out[i][0] == d[127 - i]));
}

#[test]
fn random_schedules_give_the_same_results() {
    let blocks = 8usize;
    let d = data(blocks * 256, 4);
    for seed in [1, 2, 3] {
        let mut sums = vec![[0u32; 2]; blocks];
        let p = Ptr::of(&mut sums);
        launch(&LaunchSpec::new(blocks as u32, 256u32).random_schedule(seed), &|| {
            __cohort_kernel_block_sum(&d, p.disjoint())
        })
        .unwrap();
        for (b, s) in sums.iter().enumerate() {
            let part = &d[b * 256..(b + 1) * 256];
            assert_eq!(*s, [part.iter().sum(), part.iter().filter(|&&v| v % 2 == 1).count() as u32], "seed {seed}");
        }
    }
}

/// Writes each thread's `threadIdx` and `blockIdx` (3-D launch).
#[kernel]
pub fn indices_3d(mut out: DisjointSlice<[u32; 6]>) {
    let (t, b) = (thread::thread_idx(), thread::block_idx());
    let (bd, gd) = (thread::block_dim(), thread::grid_dim());
    let block_rank = (b.z * gd.y + b.y) * gd.x + b.x;
    let rank = (t.z * bd.y + t.y) * bd.x + t.x;
    // SAFETY: `block_rank * threads + rank` is this thread's own element.
    unsafe {
        *out.get_unchecked_mut((block_rank * bd.x * bd.y * bd.z + rank) as usize) = [t.x, t.y, t.z, b.x, b.y, b.z]
    };
}

#[test]
fn indices_of_a_3d_launch() {
    let (g, b) = ((2u32, 3u32, 2u32), (4u32, 3u32, 5u32));
    let n = (2 * 3 * 2 * 4 * 3 * 5) as usize;
    let mut out = vec![[u32::MAX; 6]; n];
    let p = Ptr::of(&mut out);
    launch_typed(&LaunchSpec::new(g, b).fast_path(), &|| __cohort_kernel_indices_3d(p.disjoint())).unwrap();
    let mut i = 0;
    for (bz, by, bx) in (0..2).flat_map(|z| (0..3).flat_map(move |y| (0..2).map(move |x| (z, y, x)))) {
        for (tz, ty, tx) in (0..5).flat_map(|z| (0..3).flat_map(move |y| (0..4).map(move |x| (z, y, x)))) {
            assert_eq!(out[i], [tx, ty, tz, bx, by, bz], "element {i}");
            i += 1;
        }
    }
}

cohort::shared! {
    static CELL: [u32; 1];
}

/// Every thread stores to the same shared cell with no barrier in between: a race.
#[kernel]
pub fn shared_race(out: &[AtomicU32]) {
    let c = CELL.get();
    c.store(0, thread::thread_idx_x());
    sync_threads();
    if thread::thread_idx_x() == 0 {
        out[0].store(c.load(0), Ordering::Relaxed);
    }
}

#[test]
fn shared_memory_race_is_an_err_with_race_check() {
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    launch(&LaunchSpec::new(1u32, 64u32), &|| __cohort_kernel_shared_race(&out)).unwrap();
    let err = launch(&LaunchSpec::new(1u32, 64u32).race_check(), &|| __cohort_kernel_shared_race(&out)).unwrap_err();
    assert!(matches!(err, CpuError::SharedRace { .. }), "{err}");
}

cohort::shared! {
    static COUNTER: [u32; 1];
}

/// Where `keep_shared_atomic` leaves its block's shared-memory atomic: host-only code can keep
/// the `&'static` that `atomic` returns past its block.
static KEPT: std::sync::Mutex<Option<&'static cohort::atomic::Atomic<u32, cohort::atomic::Shared>>> =
    std::sync::Mutex::new(None);

/// Counts the block's threads in shared memory (legitimately) and keeps the atomic.
#[kernel]
pub fn keep_shared_atomic(out: &[AtomicU32]) {
    let counter = COUNTER.get();
    if thread::thread_idx_x() == 0 {
        counter.store(0, 0);
    }
    sync_threads();
    let a = counter.atomic(0);
    a.add(1, Ordering::Relaxed);
    sync_threads();
    if thread::thread_idx_x() == 0 {
        out[0].store(a.load(Ordering::Relaxed), Ordering::Relaxed);
        *KEPT.lock().unwrap() = Some(a);
    }
}

/// Uses the atomic a block of an earlier launch kept.
#[kernel]
pub fn use_kept_shared_atomic(out: &[AtomicU32]) {
    if let Some(a) = *KEPT.lock().unwrap() {
        out[0].store(a.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// A shared-memory atomic kept past its block (its window freed, or another block's) is a
/// misuse `Err` when used, not a use after free; inside its block it works.
#[test]
fn a_shared_atomic_kept_past_its_block_is_an_err() {
    let out = atomics::<u32, cohort::atomic::Global>(&[0]);
    launch(&LaunchSpec::new(1u32, 64u32), &|| __cohort_kernel_keep_shared_atomic(&out)).unwrap();
    assert_eq!(out[0].load(Ordering::Relaxed), 64);
    assert!(KEPT.lock().unwrap().is_some());
    let err = launch(&LaunchSpec::new(1u32, 32u32), &|| __cohort_kernel_use_kept_shared_atomic(&out)).unwrap_err();
    match &err {
        CpuError::Misuse { op, reason, .. } => {
            assert_eq!(*op, "shared-memory atomic");
            assert!(reason.contains("outside the block"), "{reason}");
        }
        other => panic!("expected a misuse, got {other}"),
    }
    // Nothing was written through it.
    assert_eq!(out[0].load(Ordering::Relaxed), 64);
}

#[test]
fn a_collective_on_the_fast_path_is_an_err() {
    let d = data(256, 0);
    let mut sums = vec![[0u32; 2]; 1];
    let p = Ptr::of(&mut sums);
    let err = launch(&LaunchSpec::new(1u32, 256u32).fast_path(), &|| __cohort_kernel_block_sum(&d, p.disjoint()))
        .unwrap_err();
    assert!(matches!(err, CpuError::Misuse { .. }), "{err}");
}

// --- The host entries (`__cohort_cpu_<entry>`) -------------------------------------------------
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
    assert!(file.ends_with("tests/cpu.rs"), "{err}");
    assert_eq!(line, PANIC_LINE.load(StdRelaxed), "{err}");
    assert_eq!(message, "boom 7");
}
