//! The runtime's stream-order tracker (`track`): a reader on one stream never overtakes a
//! writer on another, a writer never overtakes a reader, disjoint ranges of one buffer do
//! overlap, and a buffer is not freed while work on it is pending — every result against a CPU
//! reference. (The `streams_*` names are kept.)
//!
//! On the CPU device, whose streams run each piece of work when it is enqueued, the ordering
//! holds by construction: the tests check every value there, and those that measure asynchrony
//! itself (overlap, a free waiting for a kernel) are GPU-only.

use std::time::{Duration, Instant};
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_only_trial_alone, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

use super::streams::{non_blocking, cfg, slow, N, SLOW_NS};

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("streams_reader_on_another_stream_waits_for_the_writer", read_after_write),
        gpu_trial("streams_writer_on_another_stream_waits_for_the_reader", write_after_read),
        gpu_only_trial_alone(
            "streams_disjoint_ranges_overlap",
            "measures that two kernels on two streams overlap in time; the CPU device runs work at enqueue, one launch at a time",
            disjoint_ranges_overlap,
        ),
        gpu_only_trial(
            "streams_free_waits_for_pending_work",
            "measures that dropping a buffer waits for a kernel still running; the CPU device finishes work at enqueue",
            free_waits,
        ),
    ]
}

/// The race: a `DisjointSlice` writer on stream 1, a reader of the same buffer on
/// stream 2 launched right after. The reader must see every written element.
fn read_after_write(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    let (w, r) = (k::slow_write::load(&c.tests).ctx("load")?, k::copy_u32::load(&c.tests).ctx("load")?);
    let mut buf = c.gpu.upload(&vec![u32::MAX; N]).ctx("alloc")?;
    let mut out = c.gpu.upload(&vec![7u32; N]).ctx("alloc")?;
    for round in 0..3u32 {
        let base = 1000 * (round + 1);
        w.launch(&s1, cfg(N), &mut buf, base, slow(c, SLOW_NS)).ctx("writer")?;
        r.launch(&s2, cfg(N), &buf, &mut out).ctx("reader")?;
        s2.synchronize().ctx("sync")?;
        let want: Vec<u32> = (0..N as u32).map(|i| base + i).collect();
        check_all("the reader on stream 2 sees the writer's values", &out.to_vec().ctx("read")?, &want)?;
    }
    // A view of part of the buffer, read while a writer of the whole buffer runs.
    w.launch(&s1, cfg(N), &mut buf, 5, slow(c, SLOW_NS)).ctx("writer")?;
    let mut part = c.gpu.upload(&vec![0u32; 100]).ctx("alloc")?;
    r.launch(&s2, cfg(100), buf.slice(500..600), &mut part).ctx("reader of a view")?;
    check_all("a view read on stream 2", &part.to_vec().ctx("read")?, &(505..605).collect::<Vec<u32>>())
}

/// A slow reader on stream 1, then a writer of its input on stream 2: the writer must wait.
fn write_after_read(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    let reader = k::slow_read::load(&c.tests).ctx("load")?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let mut rng = rng("write_after_read");
    let input: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 20)).collect();
    let mut buf = c.gpu.upload(&input).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    reader.launch(&s1, cfg(N), &buf, &mut out, slow(c, SLOW_NS)).ctx("reader")?;
    add.launch(&s2, cfg(N), &mut buf, 3).ctx("writer")?;
    let want: Vec<u32> = input.iter().map(|v| v * 2 + 1).collect();
    check_all("the slow reader saw the values before the write", &out.to_vec().ctx("read")?, &want)?;
    let want: Vec<u32> = input.iter().map(|v| v + 3).collect();
    check_all("the write happened", &buf.to_vec().ctx("read")?, &want)
}

/// Two slow writers of the two halves of one buffer, on two streams, overlap (the record is
/// per byte range): together they take about as long as one. It has the GPU to itself: another
/// test's kernels holding every SM made the two writers run one after the other once (100 ms).
fn disjoint_ranges_overlap(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut buf = c.gpu.upload(&vec![0u32; 2 * N]).ctx("alloc")?;
    // Warm up (module, first launch).
    w.launch(&s1, cfg(N), buf.slice_mut(..N), 0, 0).ctx("warm")?;
    s1.synchronize().ctx("sync")?;
    let ns = 50_000_000u64;
    let t = Instant::now();
    w.launch(&s1, cfg(N), buf.slice_mut(..N), 1, ns).ctx("writer 1")?;
    w.launch(&s2, cfg(N), buf.slice_mut(N..), 2, ns).ctx("writer 2")?;
    s1.synchronize().ctx("sync")?;
    s2.synchronize().ctx("sync")?;
    let both = t.elapsed();
    let got = buf.to_vec().ctx("read")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 1 + i).chain((0..N as u32).map(|i| 2 + i)).collect();
    check_all("both halves", &got, &want)?;
    ensure(both < Duration::from_nanos(ns * 3 / 2), || {
        format!("two 50 ms writers of disjoint halves took {both:?}: they were serialized")
    })?;
    // The same two writers on the *same* half are serialized, in launch order.
    let t = Instant::now();
    w.launch(&s1, cfg(N), buf.slice_mut(..N), 10, ns).ctx("writer 1")?;
    w.launch(&s2, cfg(N), buf.slice_mut(..N), 20, ns).ctx("writer 2")?;
    s2.synchronize().ctx("sync")?;
    let serial = t.elapsed();
    ensure(serial >= Duration::from_nanos(ns * 2), || format!("overlapping writers took {serial:?} (< 100 ms)"))?;
    let want: Vec<u32> = (0..N as u32).map(|i| 20 + i).collect();
    check_all("the second writer wrote last", &buf.slice(..N).to_vec().ctx("read")?, &want)
}

/// Dropping a buffer (device or pinned) while a kernel or a copy still uses it waits for them.
fn free_waits(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut buf = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&s, cfg(N), &mut buf, 1, SLOW_NS).ctx("writer")?;
    let t = Instant::now();
    drop(buf);
    ensure(t.elapsed() >= Duration::from_nanos(SLOW_NS / 2), || format!("freed after {:?}", t.elapsed()))?;
    let mut dev = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let mut host = c.gpu.pinned::<u32>(N).ctx("pinned")?;
    // From the launch: the copy may return only once the kernel is done (the driver makes some
    // device-to-host copies synchronous), so the free is timed from before the kernel started.
    let t0 = Instant::now();
    w.launch(&s, cfg(N), &mut dev, 1, SLOW_NS).ctx("writer")?;
    s.copy(&dev, &mut host).ctx("d2h")?;
    let copied = t0.elapsed();
    let t = Instant::now();
    drop(host);
    ensure(t0.elapsed() >= Duration::from_nanos(SLOW_NS / 2), || {
        format!(
            "pinned freed {:?} after the kernel's launch (the copy returned after {copied:?}, the free took {:?})",
            t0.elapsed(),
            t.elapsed()
        )
    })?;
    s.synchronize().ctx("sync")
}
