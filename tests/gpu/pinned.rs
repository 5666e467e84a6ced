//! Pinned and registered host memory (the runtime's `pinned`): the host never sees a pinned
//! buffer before the copy into it has finished, kernels read and write pinned memory in place
//! (zero-copy), and registered host memory works as pinned — against CPU references. (The
//! `streams_*` names are kept.)

use cohort_runtime::PinnedOptions;
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

use super::streams::{non_blocking, cfg, slow, N, SLOW_NS};

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("streams_pinned_read_after_async_copy_sees_the_data", pinned_read_after_copy),
        gpu_trial("streams_zero_copy_kernels_on_pinned_memory", zero_copy),
        gpu_trial("streams_registered_host_memory", registered),
    ]
}

/// The host reads a pinned buffer right after enqueueing a copy into it (and a slow kernel
/// before the copy): `as_slice` waits, so it sees the copied data, never the old contents.
fn pinned_read_after_copy(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut dev = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    let mut host = c.gpu.pinned::<u32>(N).ctx("pinned")?;
    host.as_mut_slice().ctx("host")?.fill(u32::MAX);
    for round in 1..4u32 {
        w.launch(&s, cfg(N), &mut dev, round * 77, slow(c, SLOW_NS)).ctx("writer")?;
        s.copy(&dev, &mut host).ctx("d2h")?;
        let want: Vec<u32> = (0..N as u32).map(|i| round * 77 + i).collect();
        check_all("pinned buffer read right after the copy", host.as_slice().ctx("host view")?, &want)?;
    }
    // Per chunk: each view waits for its own copy only.
    let s2 = non_blocking(c)?;
    w.launch(&s, cfg(N), &mut dev, 9, slow(c, SLOW_NS)).ctx("writer")?;
    {
        let mut chunks = host.chunks_mut(N / 4);
        for (i, ch) in chunks.iter_mut().enumerate() {
            let st = if i % 2 == 0 { &s } else { &s2 };
            st.copy(dev.slice(i * N / 4..(i + 1) * N / 4), ch).ctx("d2h chunk")?;
        }
        for (i, ch) in chunks.iter().enumerate() {
            let want: Vec<u32> = (0..(N / 4) as u32).map(|j| 9 + (i * N / 4) as u32 + j).collect();
            check_all("pinned chunk", ch.as_slice().ctx("chunk view")?, &want)?;
        }
    }
    // Write-combined memory works the same (only slower for the CPU to read).
    let mut wc =
        cohort_runtime::PinnedBuffer::<u32>::with_options(&c.gpu, N, PinnedOptions::new().write_combined(true))
            .ctx("write-combined")?;
    s.copy(&dev, &mut wc).ctx("d2h wc")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 9 + i).collect();
    check_all("write-combined pinned buffer", wc.as_slice().ctx("wc view")?, &want)
}

/// Kernels read and write pinned host memory directly (mapped), ordered like device memory.
fn zero_copy(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let s2 = non_blocking(c)?;
    let r = k::copy_u32::load(&c.tests).ctx("load")?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let input: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let src = c.gpu.pinned_from(&input).ctx("pinned")?;
    let mut dst = c.gpu.pinned::<u32>(N).ctx("pinned")?;
    r.launch(&s, cfg(N), &src, &mut dst).ctx("zero-copy kernel")?;
    check_all("a kernel read and wrote host memory", dst.as_slice().ctx("view")?, &input)?;
    // A slow kernel writes pinned memory on one stream; a copy out of it on another waits.
    w.launch(&s, cfg(N), &mut dst, 4, slow(c, SLOW_NS)).ctx("slow zero-copy writer")?;
    let mut dev = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    s2.copy(&dst, &mut dev).ctx("h2d")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 4 + i).collect();
    check_all("copy after a zero-copy writer", &dev.to_vec().ctx("read")?, &want)
}

fn registered(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let add = k::add_in_place::load(&c.tests).ctx("load")?;
    let w = k::slow_write::load(&c.tests).ctx("load")?;
    let mut rng = rng("registered");
    let mut data: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 30)).collect();
    let orig = data.clone();
    let mut dev = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    c.gpu
        .with_registered(&mut data, |reg| -> TestResult {
            s.copy(&*reg, &mut dev).ctx("h2d from registered")?;
            add.launch(&s, cfg(N), &mut dev, 5).ctx("add")?;
            s.copy(&dev, &mut *reg).ctx("d2h into registered")?;
            let want: Vec<u32> = orig.iter().map(|v| v + 5).collect();
            check_all("registered memory after the round trip", reg.as_slice().ctx("view")?, &want)?;
            // A copy still pending when the scope ends: the scope waits for it.
            w.launch(&s, cfg(N), &mut dev, 11, slow(c, SLOW_NS)).ctx("writer")?;
            s.copy(&dev, reg.slice_mut(..)).ctx("d2h")
        })
        .ctx("scope")??;
    let want: Vec<u32> = (0..N as u32).map(|i| 11 + i).collect();
    check_all("the caller's memory after the scope", &data, &want)
}
