//! `cohort::cg::AsyncBarrier` (CUDA's `cuda::barrier`, PTX `mbarrier`): phases and their
//! parities, `arrive_and_drop`, copies completing on a phase (`memcpy_async` with `cp.async`,
//! the sm_90 bulk copy), and the misuse that types cannot see, each an `Err` naming its call.

use cohort_runtime::{Error, Gpu, LaunchConfig, Module};
use cohort_test_kernels::async_barrier as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("async_barrier_phases_exchange", exchange),
        gpu_trial("async_barrier_arrive_and_drop", drop_out),
        gpu_trial("async_barrier_memcpy_async_tails", |c| stream(c, false)),
        gpu_trial("async_barrier_bulk_copy_tails", |c| stream(c, true)),
        gpu_trial("async_barrier_misuse_is_an_err", misuse),
    ]
}

fn data(test: &str, n: usize) -> Vec<u32> {
    let mut r = rng(test);
    (0..n).map(|_| r.random::<u32>() | 1).collect()
}

/// Every thread's sum over `rounds` exchanges with its right neighbour (two phases a round).
fn exchange(c: &Ctx) -> TestResult {
    let (blocks, threads, rounds) = (3usize, 256usize, 5u32);
    let d = data("async_barrier_phases_exchange", blocks * threads);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&d).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0xdead_beefu32; d.len()]).ctx("alloc")?;
    k::barrier_exchange::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(blocks as u32, threads as u32), &dd, rounds, &mut out)
        .ctx("launch")?;
    let want: Vec<u32> = (0..d.len())
        .map(|g| {
            let (b, t) = (g / threads, g % threads);
            let nb = b * threads + (t + 1) % threads;
            (0..rounds).fold(0u32, |s, r| s.wrapping_add(d[nb].wrapping_mul(r + 1).wrapping_add(r)))
        })
        .collect();
    check_all("exchanged sums", &out.to_vec().ctx("read")?, &want)
}

/// Odd threads leave after the first phase; the even ones go on with half the count.
fn drop_out(c: &Ctx) -> TestResult {
    let (blocks, threads, rounds) = (2usize, 128usize, 4u32);
    let d = data("async_barrier_arrive_and_drop", blocks * threads);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&d).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0xdead_beefu32; d.len()]).ctx("alloc")?;
    k::barrier_drop::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(blocks as u32, threads as u32), &dd, rounds, &mut out)
        .ctx("launch")?;
    let want: Vec<u32> = (0..d.len())
        .map(|g| {
            let (b, t) = (g / threads, g % threads);
            let first = d[b * threads + (t + 1) % threads];
            if t % 2 == 1 {
                return first;
            }
            let v2 = d[b * threads + (t + 2) % threads];
            (0..rounds).fold(first, |s, r| s.wrapping_add(v2.wrapping_add(r)))
        })
        .collect();
    check_all("sums with half the threads dropped", &out.to_vec().ctx("read")?, &want)
}

/// Streams through shared memory in chunks with a tail, each chunk read after its phase:
/// `memcpy_async` on sizes and offsets of every alignment, the bulk copy on 16-byte multiples.
fn stream(c: &Ctx, bulk: bool) -> TestResult {
    let cases: &[(usize, usize)] = if bulk { &[(1024, 96), (512, 256), (64, 1024)] } else { &[(1000, 96), (777, 100), (515, 1024)] };
    for &(per_block, chunk) in cases {
        let blocks = 3usize;
        let d = data(if bulk { "async_barrier_bulk_copy_tails" } else { "async_barrier_memcpy_async_tails" }, blocks * per_block);
        let s = c.gpu.new_stream().ctx("stream")?;
        let dd = c.gpu.upload(&d).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![0xdead_beefu32; d.len()]).ctx("alloc")?;
        k::barrier_stream::load(&c.tests)
            .ctx("load")?
            .launch(
                &s,
                LaunchConfig::new(blocks as u32, 128),
                &dd,
                per_block as u32,
                chunk as u32,
                u32::from(bulk),
                &mut out,
            )
            .ctx("launch")?;
        let want: Vec<u32> = d.iter().map(|&x| x.wrapping_mul(3).wrapping_add(1)).collect();
        check_all(&format!("streamed {per_block} per block in chunks of {chunk}"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// Each misuse (1: a forgotten token then a second arrival; 2: a nested scope of the same
/// barrier; 3: an arrival after `arrive_and_drop`; 4: a bulk copy of 12 bytes; 5: half the
/// block returned before the scope, which must not hang; 6 and 7: a thread whose bulk copy or
/// `memcpy_async` names another destination or source than thread 0's; 8: a thread at its own
/// `sync_threads()` while the others are at a bulk copy) is an `Err` naming it and its call
/// site in `async_barrier.rs`; the same kernel without misuse runs. On a GPU the report traps,
/// which ends the CUDA context: each case runs in a child process.
fn misuse(c: &Ctx) -> TestResult {
    misuse_case(&c.gpu, &c.tests, 0)?;
    for which in 1..=8u32 {
        if c.is_cpu() {
            misuse_case(&c.gpu, &c.tests, which)?;
            misuse_case(&c.gpu, &c.tests, 0).ctx("the CPU device right after the misuse")?;
        } else {
            crate::launch::run_child(&format!("barrier-misuse-{which}"))?;
        }
    }
    Ok(())
}

fn misuse_case(gpu: &Gpu, tests: &Module, which: u32) -> TestResult {
    let s = gpu.new_stream().ctx("stream")?;
    let dd = gpu.upload(&[7u32; 64]).ctx("upload")?;
    let mut out = gpu.upload(&[0u32; 64]).ctx("alloc")?;
    let kern = k::barrier_misuse::load(tests).ctx("load")?;
    let r = kern.launch(&s, LaunchConfig::new(1, 64), which, &dd, &mut out).and_then(|()| s.synchronize());
    if which == 0 {
        r.ctx("the kernel without misuse")?;
        return check_all("without misuse", &out.to_vec().ctx("read")?, &[1u32; 64]);
    }
    let e = r.err().ok_or_else(|| format!("misuse {which} did not fail"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED (misuse {which}): {msg}");
    ensure(matches!(e, Error::CpuKernel { .. } | Error::KernelFailed { .. }), || {
        format!("misuse {which}: expected CpuKernel or KernelFailed, got {e:?}")
    })?;
    let what = match which {
        1 => "arrived on the asynchronous barrier again before waiting",
        2 => "again while",
        3 => "after `arrive_and_drop`",
        4 => "not a multiple of 16 bytes",
        6 | 7 => "thread 37 of the block passed other arguments",
        // A GPU in checked mode: thread 37's block check sees the copy's call (`divergence: …`);
        // the CPU device: the two barriers' instructions (`deadlock in block 0: …`).
        8 => "must reach the same barrier",
        // The CPU device refuses a block barrier that a thread exited before (the scope's);
        // a GPU lets exited threads through it, and the scope counts them.
        _ if matches!(e, Error::CpuKernel { .. }) => "has exited",
        _ => "32 thread(s) of the block returned from the kernel before",
    };
    for needle in ["barrier_misuse", what, "async_barrier.rs:"] {
        ensure(msg.contains(needle), || format!("misuse {which}: the error does not mention `{needle}`: {msg}"))?;
    }
    Ok(())
}

/// A misuse case in a context of its own (a GPU trap ends the context); for the child
/// scenarios of `launch.rs`.
pub fn misuse_child(which: &str) -> Result<(), String> {
    let n: u32 = which.trim_start_matches("barrier-misuse-").parse().map_err(|e| format!("{which}: {e}"))?;
    let gpu = Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    misuse_case(&gpu, &tests, n)
}
