//! Managed memory (`ManagedBuffer`): the host reads and writes it in place only through views
//! the tracker gates — a read waits for the kernels writing it, a write for every kernel using
//! it — and kernels use it like device memory; prefetches and advice change no value; a
//! request past the device's free memory is refused. The Cooperative Groups blog's
//! managed-memory program (`sum_kernel_block`) runs as `cohort managed` does. On the CPU device
//! (host memory, work finished at enqueue) every value is checked the same way; graphs are
//! GPU-only.

use cohort_kernels::memory as seed;
use cohort_runtime::{Advice, Error, LaunchConfig, Location, ManagedBuffer, StreamOptions};
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("managed_host_view_waits_for_the_kernels", host_view_waits),
        gpu_trial("managed_kernels_copies_and_views", kernels_and_views),
        gpu_trial("managed_prefetch_and_advice_keep_the_values", prefetch_and_advice),
        gpu_trial("managed_more_than_the_device_has_is_refused", oversubscription),
        gpu_trial("managed_seed_program_sum_kernel_block", seed_program),
        gpu_only_trial(
            "managed_memory_is_not_captured",
            "CUDA graphs (Stream::capture), which the CPU device does not have",
            not_captured,
        ),
    ]
}

const N: usize = 1 << 16;
const SLOW_NS: u64 = 20_000_000;

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

/// A slow kernel writes the buffer; the host reads it at once through `as_slice`, which must
/// wait and see every value (never the zeros before). Then a slow kernel reads it and the host
/// writes it at once through `as_mut_slice`, which must wait for the reader (whose output
/// holds the old values).
fn host_view_waits(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let (write, read) = (k::slow_write::load(&c.tests).ctx("load")?, k::slow_read::load(&c.tests).ctx("load")?);
    let mut buf = ManagedBuffer::<u32>::new(&c.gpu, N).ctx("managed")?;
    check_all("a new managed buffer is zeroed", buf.as_slice().ctx("view")?, &vec![0u32; N])?;
    let ns = c.pick(SLOW_NS, 0);
    for round in 1..4u32 {
        write.launch(&s, cfg(N), &mut buf, round * 1000, ns).ctx("slow writer")?;
        let want: Vec<u32> = (0..N as u32).map(|i| round * 1000 + i).collect();
        check_all("the host view right after a slow writer", buf.as_slice().ctx("view")?, &want)?;
    }
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    read.launch(&s, cfg(N), &buf, &mut out, ns).ctx("slow reader")?;
    buf.as_mut_slice().ctx("mutable view")?.fill(7);
    let want: Vec<u32> = (0..N as u32).map(|i| (3000 + i) * 2 + 1).collect();
    check_all("the slow reader saw the values before the host's write", &out.to_vec().ctx("read")?, &want)?;
    check_all("the host's write", &buf.to_vec().ctx("read")?, &vec![7u32; N])?;
    ensure(buf.pending_accesses() <= 2, || format!("{} accesses listed", buf.pending_accesses()))
}

/// Host writes, then kernels read and write the buffer whole and through views, copies to and
/// from device memory on two streams.
fn kernels_and_views(c: &Ctx) -> TestResult {
    let (s1, s2) = (
        c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?,
        c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?,
    );
    let (copy, add) = (k::copy_u32::load(&c.tests).ctx("load")?, k::add_in_place::load(&c.tests).ctx("load")?);
    let mut rng = rng("managed_kernels");
    let data: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 30)).collect();
    let mut m = ManagedBuffer::from_slice(&c.gpu, &data).ctx("managed")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    copy.launch(&s1, cfg(N), &m, &mut out).ctx("kernel reads managed")?;
    check_all("a kernel read the host's writes", &out.to_vec().ctx("read")?, &data)?;
    add.launch(&s2, cfg(N), &mut m, 5).ctx("kernel writes managed on stream 2")?;
    add.launch(&s1, cfg(N / 2), m.slice_mut(N / 2..), 100).ctx("kernel writes a view on stream 1")?;
    let mut part = c.gpu.zeroed::<u32>(1000).ctx("alloc")?;
    copy.launch(&s2, cfg(1000), m.slice(10..1010), &mut part).ctx("kernel reads a view")?;
    let mut want: Vec<u32> = data.iter().map(|v| v + 5).collect();
    for v in &mut want[N / 2..] {
        *v += 100;
    }
    check_all("kernels wrote it in order", m.as_slice().ctx("view")?, &want)?;
    check_all("a view read after both writers", &part.to_vec().ctx("read")?, &want[10..1010])?;
    // Copies between managed and device memory, both ways, on two streams.
    let mut dev = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    s1.copy(&m, &mut dev).ctx("managed to device")?;
    s2.copy(&out, &mut m).ctx("device to managed")?;
    check_all("copy out of managed memory", &dev.to_vec().ctx("read")?, &want)?;
    check_all("copy into managed memory", m.as_slice().ctx("view")?, &data)?;
    s2.fill(&mut m, 0x0101_0101u32).ctx("fill")?;
    check_all("fill", &m.to_vec().ctx("read")?, &vec![0x0101_0101u32; N])?;
    let empty = ManagedBuffer::<u64>::new(&c.gpu, 0).ctx("empty")?;
    ensure(empty.is_empty() && empty.as_slice().ctx("view")?.is_empty(), || "an empty buffer".into())?;
    s1.synchronize().ctx("sync")?;
    s2.synchronize().ctx("sync")
}

/// Every advice and both prefetch directions, around kernels and host views: the values are
/// what they would be without them.
fn prefetch_and_advice(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let data: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut m = ManagedBuffer::from_slice(&c.gpu, &data).ctx("managed")?;
    for advice in [
        Advice::SetReadMostly,
        Advice::UnsetReadMostly,
        Advice::SetPreferredLocation(Location::Device),
        Advice::UnsetPreferredLocation,
        Advice::SetPreferredLocation(Location::Host),
        Advice::UnsetPreferredLocation,
        Advice::SetAccessedBy(Location::Device),
        Advice::UnsetAccessedBy(Location::Device),
        Advice::SetAccessedBy(Location::Host),
        Advice::UnsetAccessedBy(Location::Host),
        Advice::SetPreferredLocation(Location::Device),
    ] {
        m.advise(advice).ctx(&format!("{advice:?}"))?;
    }
    m.prefetch(&s, Location::Device).ctx("prefetch to the device")?;
    add.launch(&s, cfg(N), &mut m, 3).ctx("kernel")?;
    m.prefetch(&s, Location::Host).ctx("prefetch to the host")?;
    let want: Vec<u32> = data.iter().map(|v| v.wrapping_add(3)).collect();
    check_all("after prefetches and advice", m.as_slice().ctx("view")?, &want)?;
    m.advise(Advice::SetReadMostly).ctx("read mostly")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    k::copy_u32::load(&c.tests).ctx("load")?.launch(&s, cfg(N), &m, &mut out).ctx("read-mostly kernel")?;
    check_all("a kernel read a read-mostly buffer", &out.to_vec().ctx("read")?, &want)?;
    // A prefetch is a use of the buffer on its stream: listed, and waited for by a writer.
    ensure(m.pending_accesses() >= 1, || "the prefetch and the kernel are not listed".into())?;
    s.synchronize().ctx("sync")
}

/// A managed buffer larger than the device's free memory is refused before anything is
/// allocated (oversubscribing managed memory can hang a GPU); a small one is still fine after.
fn oversubscription(c: &Ctx) -> TestResult {
    let (free, total) = c.gpu.memory_info().ctx("memory_info")?;
    let r = ManagedBuffer::<u8>::new(&c.gpu, total.max(free) * 2);
    let e = r.err().ok_or("a managed buffer of twice the device's memory was allocated")?;
    ensure(matches!(&e, Error::OutOfMemory { what } if what.contains("oversubscribing")), || e.to_string())?;
    let e = ManagedBuffer::<u64>::new(&c.gpu, usize::MAX).err().ok_or("usize::MAX elements allocated")?;
    ensure(matches!(e, Error::Argument(_)), || e.to_string())?;
    let small = ManagedBuffer::<u32>::from_slice(&c.gpu, &[1, 2, 3]).ctx("a small buffer after the refusals")?;
    check_all("small", small.as_slice().ctx("view")?, &[1, 2, 3])
}

/// The blog's program: `n` ints of 1 in managed memory, written by the host; `sum_kernel_block`
/// with blocks of 256 and 256 ints of dynamic shared memory per block; the host reads the sum
/// in place. As `cohort managed` runs it, without and with prefetches.
fn seed_program(c: &Ctx) -> TestResult {
    let n: usize = c.pick(1 << 24, 1 << 16);
    let kernel = seed::sum_kernel_block::load(&c.module).ctx("load")?;
    let block = 256u32;
    let blocks = (n as u32).div_ceil(block);
    let config = LaunchConfig::new(blocks, block).with_shared_mem(block * 4);
    let mut sum = ManagedBuffer::<i32>::new(&c.gpu, 1).ctx("sum")?;
    let mut data = ManagedBuffer::<i32>::new(&c.gpu, n).ctx("data")?;
    for prefetch in [false, true] {
        data.as_mut_slice().ctx("host writes")?.fill(1);
        sum.as_mut_slice().ctx("host clears")?[0] = 0;
        if prefetch {
            data.prefetch(c.gpu.stream(), Location::Device).ctx("prefetch")?;
        }
        let input = data.slice(..).cast::<cohort::vec::i32x4>().ok_or("n is not a multiple of 4")?;
        kernel.launch(c.gpu.stream(), config, &mut sum, input).ctx("sum_kernel_block")?;
        if prefetch {
            sum.prefetch(c.gpu.stream(), Location::Host).ctx("prefetch")?;
        }
        let got = sum.as_slice().ctx("host reads the sum")?[0];
        ensure(got == n as i32, || format!("sum = {got}, expected {n} (prefetch: {prefetch})"))?;
    }
    Ok(())
}

/// Managed memory in a captured graph is refused (the host could use it during a replay).
fn not_captured(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let mut m = ManagedBuffer::<u32>::new(&c.gpu, 1024).ctx("managed")?;
    let r = s.capture(|s| add.launch(s, cfg(1024), &mut m, 1));
    let e = r.err().ok_or("managed memory was captured into a graph")?;
    ensure(matches!(&e, Error::Argument(m) if m.contains("managed")), || e.to_string())?;
    let r = s.capture(|s| m.prefetch(s, Location::Device));
    ensure(r.is_err(), || "a managed prefetch was captured into a graph".into())?;
    check_all("nothing ran", m.as_slice().ctx("view")?, &vec![0u32; 1024])
}
