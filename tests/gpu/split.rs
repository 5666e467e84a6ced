//! Split-phase barriers of the block and of the grid (`cohort::cg::split`, issue 27): several
//! phases of `barrier_arrive` → independent work → wait, every element checked against a CPU
//! reference (the work between arrival and wait included), on blocks with a partial last warp;
//! and their misuse, each an `Err` naming it (on a GPU in a child process: the report traps,
//! which ends the CUDA context).

use cohort_runtime::{Error, LaunchConfig};
use cohort_test_kernels::split as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("split_block_barrier_rounds", block_rounds),
        gpu_trial("split_grid_barrier_rounds", grid_rounds),
        gpu_trial("split_block_barrier_misuse_is_an_err", block_misuse),
        gpu_trial("split_grid_barrier_misuse_is_an_err", grid_misuse),
    ]
}

/// The kernels' round value (`value` in `kernels-gpu/test-kernels/src/split.rs`).
fn value(x: u32, r: u32) -> u32 {
    x.wrapping_mul(r + 1) ^ r.wrapping_mul(0x9e37_79b9)
}

/// `sum ^ own` of thread `i`, whose partner in round `r` is `partner(i, r)`.
fn rounds_reference(input: &[u32], rounds: u32, partner: impl Fn(usize, u32) -> usize) -> Vec<u32> {
    (0..input.len())
        .map(|i| {
            let (mut sum, mut own) = (0u32, 0u32);
            for r in 0..rounds {
                own = own.wrapping_mul(31).wrapping_add(value(input[i], r));
                sum = sum.wrapping_add(value(input[partner(i, r)], r).wrapping_mul(r + 1));
            }
            sum ^ own
        })
        .collect()
}

fn block_rounds(c: &Ctx) -> TestResult {
    let kern = k::block_split_rounds::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("split_block_barrier_rounds");
    for (blocks, threads, rounds) in [(c.pick(64, 3), 100u32, 5u32), (c.pick(48, 2), 512, 4), (c.pick(96, 4), 32, 9)] {
        let n = (blocks * threads) as usize;
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let din = c.gpu.upload(&input).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new(blocks, threads), &din, rounds, &mut out).ctx("launch")?;
        let t = threads as usize;
        let want = rounds_reference(&input, rounds, |i, r| i / t * t + (i % t + 1 + r as usize) % t);
        check_all(
            &format!("{blocks} blocks of {threads}, {rounds} split phases"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    Ok(())
}

fn grid_rounds(c: &Ctx) -> TestResult {
    let kern = k::grid_split_rounds::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("split_grid_barrier_rounds");
    for (blocks, threads, rounds) in [(c.pick(128, 6), 256u32, 6u32), (c.pick(40, 3), 96, 5)] {
        let n = (blocks * threads) as usize;
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let din = c.gpu.upload(&input).ctx("upload")?;
        let mut cells = c.gpu.zeroed::<u32>(2 * n).ctx("alloc")?;
        let mut out = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
        kern.launch_cooperative(&s, LaunchConfig::new(blocks, threads), &din, &mut cells, rounds, &mut out)
            .ctx("launch")?;
        let b = threads as usize;
        let want = rounds_reference(&input, rounds, |i, r| (i + b * (r as usize + 1) + 7) % n);
        check_all(
            &format!("{blocks} blocks of {threads}, {rounds} grid split phases"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    Ok(())
}

/// What a block misuse case's `Err` must say (mode of `block_split_misuse`).
fn block_needles(mode: u32) -> &'static [&'static str] {
    match mode {
        0 => &["a second thread_block.barrier_arrive()", "split.rs:"],
        1 => &["`sync_threads`", "a collective of the block while this thread has a split block arrival"],
        2 => &["dropped without waiting", "thread_block.barrier_arrive"],
        3 => &["left the kernel with a split block arrival"],
        4 => &["`reduce`", "a collective of the block while this thread has a split block arrival"],
        // A GPU's check says "divergence", the CPU device's scheduler "deadlock": both say this.
        5 => &["every thread of the block must reach the same barrier", "split.rs:"],
        6 => &["dropped without waiting"],
        _ => &["every thread of the block must reach the same barrier", "split.rs:"],
    }
}

/// What a grid misuse case's `Err` must say (mode of `grid_split_misuse`).
fn grid_needles(mode: u32) -> &'static [&'static str] {
    match mode {
        0 => &["a second grid.barrier_arrive()"],
        1 => &["grid.sync() while this thread has a split grid arrival"],
        2 => &["dropped without waiting", "grid.barrier_arrive"],
        3 => &["left the kernel with a split grid arrival"],
        // A GPU's check names the wait at the arrival's site; the CPU device the two arrivals.
        _ => &["divergence", "split.rs:"],
    }
}

const BLOCK_MODES: u32 = 8;
const GRID_MODES: u32 = 5;

/// The block modes whose "misuse" (a block collective between a split arrival and its wait) a
/// GPU runs correctly: its split waits use a barrier of their own (id 14), so nothing pairs
/// wrongly, and checked mode does not look (see `cohort::cg::split`); the CPU device reports
/// them, as CUDA leaves them undefined.
const GPU_ALLOWED_BLOCK_MODES: [u32; 2] = [1, 4];

fn block_misuse(c: &Ctx) -> TestResult {
    for mode in 0..BLOCK_MODES {
        if c.is_cpu() {
            misuse_case(&c.gpu, &c.tests, "block", mode)?;
        } else if GPU_ALLOWED_BLOCK_MODES.contains(&mode) {
            collective_in_window(c, mode)?;
        } else {
            crate::launch::run_child(&format!("split-misuse-block-{mode}"))?;
        }
    }
    control(c, "block")
}

/// On a GPU: `sync_threads()` (mode 1) or a block `reduce` (mode 4, each thread's global index
/// summed over its block) between the arrival and the wait complete with every element right.
fn collective_in_window(c: &Ctx, mode: u32) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, threads) = (4u32, 128u32);
    let mut out = c.gpu.zeroed::<u32>((blocks * threads) as usize).ctx("alloc")?;
    k::block_split_misuse::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(blocks, threads), mode, &mut out)
        .and_then(|()| s.synchronize())
        .ctx("a collective inside the split window")?;
    let t = threads as usize;
    let want: Vec<u32> = (0..(blocks * threads) as usize)
        .map(|i| if mode == 1 { 1 } else { (i / t * t..i / t * t + t).map(|j| j as u32).sum() })
        .collect();
    check_all(&format!("block mode {mode} on a GPU"), &out.to_vec().ctx("read")?, &want)
}

fn grid_misuse(c: &Ctx) -> TestResult {
    for mode in 0..GRID_MODES {
        if c.is_cpu() {
            misuse_case(&c.gpu, &c.tests, "grid", mode)?;
        } else {
            crate::launch::run_child(&format!("split-misuse-grid-{mode}"))?;
        }
    }
    control(c, "grid")
}

/// The misuse kernels' control mode runs and writes every element.
fn control(c: &Ctx, group: &str) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, threads) = (4u32, 128u32);
    let mut out = c.gpu.zeroed::<u32>((blocks * threads) as usize).ctx("alloc")?;
    let cfg = LaunchConfig::new(blocks, threads);
    if group == "block" {
        k::block_split_misuse::load(&c.tests).ctx("load")?.launch(&s, cfg, BLOCK_MODES, &mut out).ctx("control")?;
    } else {
        k::grid_split_misuse::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, GRID_MODES, &mut out).ctx("control")?;
    }
    check_all(&format!("{group} control"), &out.to_vec().ctx("read")?, &vec![1u32; (blocks * threads) as usize])
}

/// Misuse case `mode` of `group`: an `Err` that names it and the kernel.
fn misuse_case(gpu: &cohort_runtime::Gpu, tests: &cohort_runtime::Module, group: &str, mode: u32) -> TestResult {
    let s = gpu.new_stream().ctx("stream")?;
    let (blocks, threads) = (4u32, 128u32);
    let mut out = gpu.zeroed::<u32>((blocks * threads) as usize).ctx("alloc")?;
    let cfg = LaunchConfig::new(blocks, threads);
    let (r, kernel, needles): (Result<(), Error>, _, _) = if group == "block" {
        let kern = k::block_split_misuse::load(tests).ctx("load")?;
        (kern.launch(&s, cfg, mode, &mut out), "block_split_misuse", block_needles(mode))
    } else {
        let kern = k::grid_split_misuse::load(tests).ctx("load")?;
        (kern.launch_cooperative(&s, cfg, mode, &mut out), "grid_split_misuse", grid_needles(mode))
    };
    let e = r.and_then(|()| s.synchronize()).err().ok_or_else(|| format!("{group} mode {mode}: the misuse did not fail"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED ({group} split misuse {mode}): {msg}");
    for want in needles.iter().chain(&[kernel]) {
        ensure(msg.contains(want), || format!("{group} mode {mode}: the error does not say `{want}`: {msg}"))?;
    }
    Ok(())
}

/// A misuse case in a context of its own; for the child scenarios of `launch.rs`
/// (`split-misuse-<block|grid>-<mode>`).
pub fn misuse_child(which: &str) -> Result<(), String> {
    let rest = which.trim_start_matches("split-misuse-");
    let (group, mode) = rest.split_once('-').ok_or_else(|| format!("{which}: no mode"))?;
    let mode: u32 = mode.parse().map_err(|e| format!("{which}: {e}"))?;
    let gpu = cohort_runtime::Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    misuse_case(&gpu, &tests, group, mode)
}
