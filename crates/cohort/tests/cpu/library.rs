//! More of the device library: `memcpy_async`, partitions, `match_any`, large tiles, random schedules, 3-D indices, shared-memory races and misuse.

use super::block::*;
use super::*;

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
    assert!(file.ends_with("tests/cpu/library.rs"), "{err}");
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
