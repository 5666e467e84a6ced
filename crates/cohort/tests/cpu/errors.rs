//! Failures with their sites: a panic, a divergent collective, a deadlock, and calls inside one macro or `#[track_caller]` helper told apart.

use super::*;

pub(crate) static PANIC_LINE: StdAtomicU32 = StdAtomicU32::new(0);

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
    assert!(file.ends_with("tests/cpu/errors.rs"), "{err}");
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
    assert!(site.file().ends_with("tests/cpu/errors.rs"), "the site is the kernel's line: {err}");
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
        assert!(at.site.file().ends_with("tests/cpu/errors.rs"), "{err}");
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
    assert!(site.file().ends_with("tests/cpu/errors.rs"), "{err}");
    assert!(err.to_string().contains("macro expansion or `#[track_caller]` helper"), "{err}");
    let err = launch(&LaunchSpec::new(1u32, 64u32), &|| __cohort_kernel_helper_count(p.disjoint())).unwrap_err();
    let CpuError::BarrierMismatch { first, second, .. } = &err else { panic!("{err}") };
    assert_eq!(first.site, second.site, "{err}");
    assert!(err.to_string().contains("macro expansion or `#[track_caller]` helper"), "{err}");
}
