//! Stream-ordered allocation and memory pools (`Stream::alloc_zeroed`, `MemPool`): buffers
//! allocated and freed in stream order, under the tracker — every value checked.
//!
//! The hazards: a buffer read on another stream before its allocation (and zeroing) is done; a
//! free that the pool turns into a new allocation while another stream still reads or writes
//! the old one (aliasing). The tests leave windows for both (slow kernels on the other stream,
//! memory poisoned before reuse) and check what every buffer holds. On the CPU device, whose
//! streams run each operation when it is enqueued, the same values are checked without the
//! windows; what measures asynchrony (a drop that must not block) or needs graphs or two GPUs
//! is GPU-only.

use std::time::{Duration, Instant};

use cohort_runtime::{DeviceBuffer, Error, Gpu, LaunchConfig, MemPool, Stream, StreamOptions};
use cohort_test_kernels::memory as m;
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_trial, gpus_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("pools_alloc_launch_free_on_two_streams_never_alias", no_aliasing),
        gpu_trial("pools_another_stream_waits_for_the_allocation", read_on_another_stream),
        gpu_trial("pools_drop_while_another_stream_writes", drop_while_pending),
        gpu_trial("pools_threshold_usage_trim_and_empty_buffers", pool_attributes),
        gpu_only_trial(
            "pools_drop_does_not_wait_on_the_host",
            "measures that dropping a stream-ordered buffer returns while a kernel still uses it; the CPU device \
             finishes work at enqueue",
            drop_does_not_block,
        ),
        gpu_only_trial(
            "pools_graph_capture_rules",
            "CUDA graphs (Stream::capture), which the CPU device does not have",
            capture_rules,
        ),
        gpus_trial("pools_memory_stays_on_its_own_gpu", 2, other_gpu_refused),
    ]
}

const N: usize = 1 << 16;
/// How long the slow kernels wait on a GPU: long enough that an unordered reuse of the memory
/// would land while they still run.
const SLOW_NS: u64 = 5_000_000;

fn slow(c: &Ctx, ns: u64) -> u64 {
    c.pick(ns, 0)
}

fn non_blocking(gpu: &Gpu) -> Result<Stream, String> {
    gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

/// What `pattern(seed)` writes.
fn pattern(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| seed ^ i.wrapping_mul(0x9e37_79b9)).collect()
}

/// Rounds of: allocate on stream 1 (from the default pool and from a pool of our own that keeps
/// its memory, in turn), write a pattern on stream 1, read it slowly on stream 2, drop the
/// buffer. A later round's allocation from the same pool reuses the memory (checked on a GPU);
/// were the free not ordered after stream 2's read, that round's pattern would land while the
/// read still runs, and the reader's output would hold it.
fn no_aliasing(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(&c.gpu)?, non_blocking(&c.gpu)?);
    let (write, read) = (m::pattern::load(&c.tests).ctx("load")?, k::slow_read::load(&c.tests).ctx("load")?);
    let own = MemPool::new(&c.gpu).ctx("pool")?;
    own.set_release_threshold(u64::MAX).ctx("threshold")?;
    let rounds = c.pick(24u32, 6);
    // Allocated first: `zeroed` waits on the host, which would close the windows below.
    let mut outs: Vec<DeviceBuffer<u32>> =
        (0..rounds).map(|_| c.gpu.zeroed::<u32>(N)).collect::<Result<_, _>>().ctx("alloc outs")?;
    // The previous address from each pool (rounds alternate between them).
    let (mut last, mut reused) = ([0u64; 2], 0);
    for round in 0..rounds {
        let seed = 0x1000_0000 + round * 0x0101;
        // SAFETY: `pattern` writes every element before anything reads it.
        let mut buf =
            unsafe { if round % 2 == 0 { s1.alloc_uninit::<u32>(N) } else { own.alloc_uninit::<u32>(&s1, N) } }
                .ctx("stream-ordered allocation")?;
        let addr = buf.as_device_ptr().addr();
        let from = round as usize % 2;
        reused += usize::from(round >= 2 && addr == last[from]);
        last[from] = addr;
        write.launch(&s1, cfg(N), &mut buf, seed).ctx("pattern on stream 1")?;
        let out = &mut outs[round as usize];
        read.launch(&s2, cfg(N), &buf, out, slow(c, SLOW_NS)).ctx("slow read on stream 2")?;
        drop(buf);
    }
    s1.synchronize().ctx("sync")?;
    s2.synchronize().ctx("sync")?;
    for (round, out) in outs.iter().enumerate() {
        let want: Vec<u32> =
            pattern(0x1000_0000 + round as u32 * 0x0101, N).iter().map(|v| v.wrapping_mul(2).wrapping_add(1)).collect();
        check_all(
            &format!("round {round}: the slow reader saw its own round's pattern"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    // Same-size allocations on one stream, each freed before the next: the pool hands the
    // memory back (else the test would not have exercised reuse at all).
    ensure(c.is_cpu() || reused > 0, || format!("no allocation of {rounds} reused the previous one's memory"))
}

/// Memory poisoned, freed to the pool, then allocated again and zeroed on stream 1 behind a
/// slow kernel; stream 2 reads it at once. It must see zeros: the allocation (and its zeroing)
/// counts as a write on stream 1 that stream 2 waits for.
fn read_on_another_stream(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(&c.gpu)?, non_blocking(&c.gpu)?);
    let (busy, copy) = (k::slow_write::load(&c.tests).ctx("load")?, k::copy_u32::load(&c.tests).ctx("load")?);
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    pool.set_release_threshold(u64::MAX).ctx("threshold")?;
    for round in 0..3u32 {
        {
            let mut poison = pool.alloc_zeroed::<u32>(&s1, N).ctx("poison alloc")?;
            s1.fill(&mut poison, 0xdead_0000 + round).ctx("poison")?;
        }
        let mut other = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
        busy.launch(&s1, cfg(N), &mut other, round, slow(c, SLOW_NS)).ctx("keep stream 1 busy")?;
        let buf = pool.alloc_zeroed::<u32>(&s1, N).ctx("alloc_zeroed")?;
        let mut out = c.gpu.upload(&vec![7u32; N]).ctx("alloc out")?;
        copy.launch(&s2, cfg(N), &buf, &mut out).ctx("read on stream 2")?;
        check_all("stream 2 read the zeroed allocation", &out.to_vec().ctx("read")?, &vec![0u32; N])?;
        check_all("the host reads it too", &buf.to_vec().ctx("to_vec")?, &vec![0u32; N])?;
    }
    // The allocation itself is listed, as a write on its stream (before anything else uses it).
    // SAFETY: never read before written (it is dropped unread).
    let fresh = unsafe { s1.alloc_uninit::<u32>(N) }.ctx("alloc_uninit")?;
    ensure(fresh.pending_accesses() == 1, || {
        format!("{} accesses listed for a fresh allocation", fresh.pending_accesses())
    })?;
    drop(fresh);
    // Written on stream 2 right after the allocation on stream 1, read back by the host.
    let write = m::pattern::load(&c.tests).ctx("load")?;
    let mut other = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    busy.launch(&s1, cfg(N), &mut other, 5, slow(c, SLOW_NS)).ctx("keep stream 1 busy")?;
    let mut buf = s1.alloc_zeroed::<u32>(N).ctx("alloc_zeroed")?;
    write.launch(&s2, cfg(N), &mut buf, 42).ctx("write on stream 2")?;
    check_all("a write on stream 2 after the allocation on stream 1", &buf.to_vec().ctx("read")?, &pattern(42, N))?;
    s1.synchronize().ctx("sync")?;
    s2.synchronize().ctx("sync")
}

/// Stream 2 slowly writes a stream-ordered buffer of stream 1; the buffer is dropped at once,
/// and a new one allocated on stream 1 and written there. Were the free not ordered after
/// stream 2's write, the new buffer could be the same memory, and the slow writer (finishing
/// later) would overwrite it.
fn drop_while_pending(c: &Ctx) -> TestResult {
    let (s1, s2) = (non_blocking(&c.gpu)?, non_blocking(&c.gpu)?);
    let (slow_write, write) = (k::slow_write::load(&c.tests).ctx("load")?, m::pattern::load(&c.tests).ctx("load")?);
    for round in 0..4u32 {
        let mut old = s1.alloc_zeroed::<u32>(N).ctx("alloc")?;
        slow_write.launch(&s2, cfg(N), &mut old, 1000 + round, slow(c, SLOW_NS)).ctx("slow writer on stream 2")?;
        drop(old);
        // SAFETY: `pattern` writes every element before anything reads it.
        let mut new = unsafe { s1.alloc_uninit::<u32>(N) }.ctx("alloc")?;
        write.launch(&s1, cfg(N), &mut new, round).ctx("pattern on stream 1")?;
        s2.synchronize().ctx("sync the slow writer")?;
        check_all(
            "the new buffer after the old one's writer finished",
            &new.to_vec().ctx("read")?,
            &pattern(round, N),
        )?;
    }
    // A buffer read on the per-thread default stream of another thread, dropped here.
    let mut buf = s1.alloc_zeroed::<u32>(N).ctx("alloc")?;
    write.launch(&s1, cfg(N), &mut buf, 77).ctx("pattern")?;
    let copied = std::thread::scope(|t| {
        t.spawn(|| -> Result<Vec<u32>, String> {
            let pt = c.gpu.per_thread_stream();
            let copy = k::copy_u32::load(&c.tests).ctx("load")?;
            let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
            copy.launch(&pt, cfg(N), &buf, &mut out).ctx("read on a per-thread stream")?;
            out.to_vec().ctx("read")
        })
        .join()
        .map_err(|_| "the reading thread panicked".to_string())?
    })?;
    drop(buf);
    check_all("read on another thread's default stream", &copied, &pattern(77, N))?;
    s1.synchronize().ctx("sync")
}

/// A pool's release threshold, its used and reserved bytes, trimming; empty buffers.
fn pool_attributes(c: &Ctx) -> TestResult {
    let s = non_blocking(&c.gpu)?;
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    ensure(pool.release_threshold().ctx("threshold")? == 0, || "a new pool's threshold is not 0".into())?;
    pool.set_release_threshold(64 << 20).ctx("set threshold")?;
    ensure(pool.release_threshold().ctx("threshold")? == 64 << 20, || "the threshold did not stick".into())?;
    let bytes = 4 * N as u64;
    {
        let mut b = pool.alloc_zeroed::<u32>(&s, N).ctx("alloc")?;
        s.fill(&mut b, 3u32).ctx("fill")?;
        check_all("a pool buffer", &b.to_vec().ctx("read")?, &vec![3u32; N])?;
        let used = pool.used_bytes().ctx("used")?;
        ensure(used >= bytes, || format!("{used} B used with a {bytes} B buffer alive"))?;
        ensure(pool.reserved_bytes().ctx("reserved")? >= used, || "reserved < used".into())?;
    }
    s.synchronize().ctx("sync")?;
    ensure(pool.used_bytes().ctx("used")? == 0, || "memory still used after the buffer was freed".into())?;
    pool.trim_to(0).ctx("trim")?;
    ensure(pool.reserved_bytes().ctx("reserved")? == 0, || "memory still reserved after trim_to(0)".into())?;
    // The device's default pool, and empty buffers (nothing allocated, nothing to free).
    let default = MemPool::device_default(&c.gpu).ctx("default pool")?;
    default.release_threshold().ctx("default threshold")?;
    let empty = s.alloc_zeroed::<u32>(0).ctx("empty")?;
    ensure(empty.is_empty() && empty.to_vec().ctx("read")?.is_empty(), || "an empty buffer".into())?;
    let empty = pool.alloc_zeroed::<u64>(&s, 0).ctx("empty from a pool")?;
    ensure(empty.is_empty(), || "an empty pool buffer".into())?;
    let e = s.alloc_zeroed::<u64>(usize::MAX).err().ok_or("an allocation of usize::MAX elements succeeded")?;
    ensure(matches!(e, Error::Argument(_)), || format!("{e}"))
}

/// Dropping a stream-ordered buffer while a slow kernel still writes it returns at once (the
/// free is enqueued behind the kernel); dropping a `cuMemAlloc` buffer waits for the kernel.
fn drop_does_not_block(c: &Ctx) -> TestResult {
    let s = non_blocking(&c.gpu)?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let ns = 50_000_000u64;
    let mut warm = s.alloc_zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&s, cfg(N), &mut warm, 0, 0).ctx("warm up")?;
    drop(warm);
    s.synchronize().ctx("sync")?;
    let mut pooled = s.alloc_zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&s, cfg(N), &mut pooled, 1, ns).ctx("slow writer")?;
    let t = Instant::now();
    drop(pooled);
    let pooled_drop = t.elapsed();
    s.synchronize().ctx("sync")?;
    let mut plain = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    w.launch(&s, cfg(N), &mut plain, 1, ns).ctx("slow writer")?;
    let t = Instant::now();
    drop(plain);
    let plain_drop = t.elapsed();
    ensure(pooled_drop < Duration::from_nanos(ns / 5), || {
        format!("dropping a stream-ordered buffer took {pooled_drop:?} while a 50 ms kernel used it")
    })?;
    ensure(plain_drop >= Duration::from_nanos(ns / 2), || {
        format!("dropping a cuMemAlloc buffer took only {plain_drop:?} while a 50 ms kernel used it")
    })
}

/// Allocating on a capturing stream is refused (the graph would own the memory); a
/// stream-ordered buffer allocated before is used in the graph like any device buffer, and
/// survives being dropped by its owner while the graph keeps it.
fn capture_rules(c: &Ctx) -> TestResult {
    let s = non_blocking(&c.gpu)?;
    let write = m::pattern::load(&c.tests).ctx("load")?;
    let mut buf = s.alloc_zeroed::<u32>(N).ctx("alloc")?;
    let graph = s
        .capture(|s| {
            let refused = s.alloc_zeroed::<u32>(16);
            ensure(matches!(refused, Err(Error::Argument(_))), || format!("allocation while capturing: {refused:?}"))
                .map_err(Error::Argument)?;
            write.launch(s, cfg(N), &mut buf, 9)
        })
        .ctx("capture")?;
    let exec = graph.instantiate().ctx("instantiate")?;
    exec.launch(&s).ctx("replay")?;
    check_all("a replay wrote the stream-ordered buffer", &buf.to_vec().ctx("read")?, &pattern(9, N))?;
    let e = s.alloc_zeroed::<u32>(N).ctx("after the capture, allocation works again")?;
    drop(e);
    drop(buf);
    exec.launch(&s).ctx("replay after the owner dropped the buffer")?;
    s.synchronize().ctx("sync")
}

/// A kernel of GPU 1, or a copy on GPU 1's stream, given GPU 0's stream-ordered buffer: refused
/// (peers have no access to pools), even with peer access on.
fn other_gpu_refused(gpus: &[Gpu]) -> TestResult {
    let (g0, g1) = (&gpus[0], &gpus[1]);
    if g1.can_access_peer(g0).ctx("can access peer")? {
        g1.enable_peer_access(g0).ctx("peer access")?;
    }
    let tests = g1.load(&cohort_test_kernels::PTX).ctx("load")?;
    let copy = k::copy_u32::load(&tests).ctx("load")?;
    let s0 = g0.new_stream().ctx("stream")?;
    let buf = s0.alloc_zeroed::<u32>(1024).ctx("alloc")?;
    let mut out = g1.zeroed::<u32>(1024).ctx("alloc")?;
    let e = copy.launch(g1.stream(), cfg(1024), &buf, &mut out).err().ok_or("GPU 1 launched on GPU 0's pool memory")?;
    ensure(matches!(&e, Error::CrossDevice { reason, .. } if reason.contains("pool")), || e.to_string())?;
    let e = g1.stream().copy(&buf, &mut out).err().ok_or("GPU 1 copied GPU 0's pool memory")?;
    ensure(matches!(&e, Error::CrossDevice { reason, .. } if reason.contains("pool")), || e.to_string())?;
    s0.synchronize().ctx("sync")
}
