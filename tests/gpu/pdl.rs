//! Programmatic dependent launch (`#[kernel(dependent)]`, `launch_programmatic`): a chain of
//! kernels each of which may begin before the one ahead of it has finished computes exactly
//! what the plain chain computes, even behind a predecessor that releases it at once
//! (`launch_dependents`) and then writes slowly; a kernel not declared `dependent` cannot be
//! launched programmatically (no method: `tests/ui/fail/programmatic_launch_needs_dependent.rs`;
//! through the runtime: an `Err`). On the CPU device a programmatic launch is a launch in stream
//! order, and the same values are checked.

use cohort_runtime::{Error, LaunchConfig, StreamOptions};
use cohort_test_kernels::memory as m;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("pdl_chain_equals_the_plain_chain", chain),
        gpu_trial("pdl_dependent_waits_for_a_slow_predecessor", slow_predecessor),
        gpu_trial("pdl_refused_for_a_kernel_without_the_wait", refused),
    ]
}

const N: usize = 1 << 15;

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

/// `x → x * 3 + k` for `k` in `ks`, ping-ponging between two buffers: programmatic, plain, and
/// on the CPU.
fn chain(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let dep = m::pdl_step::load(&c.tests).ctx("load")?;
    let plain = m::pdl_step_plain::load(&c.tests).ctx("load")?;
    // Overlapped on a GPU whose module has the wait (sm_90 PTX); in stream order otherwise.
    ensure(dep.function().overlaps_when_programmatic() == (!c.is_cpu() && c.tests.arch() >= 90), || {
        format!("overlaps_when_programmatic on sm_{}", c.tests.arch())
    })?;
    ensure(!plain.function().overlaps_when_programmatic(), || "a plain kernel would overlap".into())?;
    let mut rng = rng("pdl_chain");
    let input: Vec<u32> = (0..N).map(|_| rng.random()).collect();
    let steps = c.pick(400u32, 40);
    let mut want = input.clone();
    for k in 0..steps {
        for v in &mut want {
            *v = v.wrapping_mul(3).wrapping_add(k);
        }
    }
    let run = |programmatic: bool| -> Result<Vec<u32>, String> {
        let mut a = c.gpu.upload(&input).ctx("upload")?;
        let mut b = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
        for k in 0..steps {
            let (src, dst) = if k % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
            if programmatic {
                dep.launch_programmatic(&s, cfg(N), src, dst, k).ctx("launch_programmatic")?;
            } else {
                plain.launch(&s, cfg(N), src, dst, k).ctx("launch")?;
            }
        }
        let last = if steps % 2 == 1 { &b } else { &a };
        last.to_vec().ctx("read")
    };
    check_all("the programmatic chain", &run(true)?, &want)?;
    check_all("the plain chain", &run(false)?, &want)?;
    // Mixed: plain and programmatic launches of the dependent kernel, one after the other.
    let mut a = c.gpu.upload(&input).ctx("upload")?;
    let mut b = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    for k in 0..steps {
        let (src, dst) = if k % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        if k % 3 == 0 {
            dep.launch(&s, cfg(N), src, dst, k).ctx("launch")?;
        } else {
            dep.launch_programmatic(&s, cfg(N), src, dst, k).ctx("launch_programmatic")?;
        }
    }
    let last = if steps % 2 == 1 { &b } else { &a };
    check_all("the mixed chain", &last.to_vec().ctx("read")?, &want)
}

/// A predecessor that lets its dependent be scheduled first thing, then sleeps and writes;
/// the dependent, launched programmatically right after it, copies what it wrote. It must see
/// every value: its entry waits for the predecessor to complete.
fn slow_predecessor(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let produce = m::pdl_slow_produce::load(&c.tests).ctx("load")?;
    let step = m::pdl_step::load(&c.tests).ctx("load")?;
    let mut mid = c.gpu.upload(&vec![u32::MAX; N]).ctx("upload")?;
    let mut out = c.gpu.zeroed::<u32>(N).ctx("alloc")?;
    for round in 0..4u32 {
        let base = 1000 * (round + 1);
        produce.launch_programmatic(&s, cfg(N), &mut mid, base, c.pick(5_000_000, 0)).ctx("producer")?;
        step.launch_programmatic(&s, cfg(N), &mid, &mut out, round).ctx("dependent")?;
        let want: Vec<u32> = (0..N as u32).map(|i| (base + i).wrapping_mul(3).wrapping_add(round)).collect();
        check_all("the dependent read the slow predecessor's output", &out.to_vec().ctx("read")?, &want)?;
    }
    s.synchronize().ctx("sync")
}

/// The runtime refuses a programmatic launch of a kernel whose entry does not wait (here
/// through the hidden call the generated methods make: `launch_programmatic` itself exists only
/// on `dependent` kernels), and nothing runs.
fn refused(c: &Ctx) -> TestResult {
    let plain = m::pdl_step_plain::load(&c.tests).ctx("load")?;
    let a = c.gpu.upload(&vec![5u32; 256]).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![9u32; 256]).ctx("upload")?;
    let (pa, la) = (a.as_device_ptr().addr(), a.len());
    let (po, lo) = (out.as_device_ptr_mut().addr(), out.len());
    let k = 1u32;
    let mut params: [*mut std::ffi::c_void; 5] = [
        (&raw const pa).cast_mut().cast(),
        (&raw const la).cast_mut().cast(),
        (&raw const po).cast_mut().cast(),
        (&raw const lo).cast_mut().cast(),
        (&raw const k).cast_mut().cast(),
    ];
    // SAFETY: the parameters are the entry's (two slices as address and length, a u32); the
    // buffers outlive the call. The call is expected to refuse before launching.
    let r = unsafe { plain.function().launch_programmatic_tracked(c.gpu.stream(), cfg(256), &mut params, &[]) };
    let e = r.err().ok_or("a kernel without the wait was launched programmatically")?;
    ensure(matches!(&e, Error::Argument(m) if m.contains("dependent")), || e.to_string())?;
    check_all("nothing ran", &out.to_vec().ctx("read")?, &vec![9u32; 256])
}
