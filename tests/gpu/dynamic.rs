//! `cohort::launch`: kernels that launch kernels (dynamic parallelism, CDP2), from the crate
//! `cohort-dynamic-kernels`, whose module is linked with the device runtime at load.

use std::sync::OnceLock;

use cohort_dynamic_kernels::{hello, reduce, stress};
use cohort_runtime::{LaunchConfig, Module};
use cohort_tests::{Context, Ctx, TestResult, ensure, gpu_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("launch_device_nested_hello_1_block", |c| nested_hello(c, 1)),
        gpu_trial("launch_device_nested_hello_2_blocks", |c| nested_hello(c, 2)),
        gpu_trial("launch_device_reduce_neighbored", |c| reduction(c, Reduction::Neighbored)),
        gpu_trial("launch_device_reduce_nested_fire_and_forget", |c| reduction(c, Reduction::Nested)),
        gpu_trial("launch_device_reduce_nested_tail", |c| reduction(c, Reduction::NestedTail)),
        gpu_trial("launch_device_reduce_nested2", |c| reduction(c, Reduction::Nested2)),
        gpu_trial("launch_device_many_threads_fire_and_forget", |c| many(c, 0)),
        gpu_trial("launch_device_many_threads_block_stream", |c| many(c, 1)),
        gpu_trial("launch_device_recursion_prints_every_block", recursion),
        gpu_trial("launch_device_typed_disjoint_slice_moves_into_tail", typed_tail),
        gpu_trial("launch_device_tail_launches_run_one_at_a_time", tails_in_order),
    ]
}

/// Pending device launches the tests allow (the reductions keep one per block of 2048 pending).
const PENDING: usize = 1 << 16;

/// The device-launching module, loaded (linked with libcudadevrt) once, after the pending-launch
/// limit is raised.
fn module(c: &Ctx) -> Result<&'static Module, String> {
    static M: OnceLock<Result<Module, String>> = OnceLock::new();
    M.get_or_init(|| {
        c.gpu.set_pending_launch_limit(PENDING).map_err(|e| format!("pending-launch limit: {e}"))?;
        c.gpu.load(&cohort_dynamic_kernels::PTX).map_err(|e| format!("load: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn nested_hello(c: &Ctx, blocks: u32) -> TestResult {
    let m = module(c)?;
    let k = hello::nested_hello::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        k.launch(&s, (blocks, 8u32), 0u32)?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    let mut got: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Recursion=") || l.starts_with("-------> ") || l.contains("failed"))
        .collect();
    let mut want = Vec::new();
    for depth in 0..4u32 {
        let threads = 8 >> depth;
        let blocks_here = if depth == 0 { blocks } else { 1 };
        for parent in 0..blocks {
            if depth > 0 {
                want.push(format!("-------> nested execution depth: {depth}"));
            }
            if depth > 0 || parent == 0 {
                for b in 0..blocks_here {
                    for t in 0..threads {
                        want.push(format!("Recursion={depth}: Hello World from thread {t} block {b}"));
                    }
                }
            }
        }
    }
    got.sort_unstable();
    want.sort_unstable();
    eprintln!("{}", text.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n"));
    ensure(got == want, || format!("printf output:\n{}\nexpected:\n{}", got.join("\n"), want.join("\n")))
}

#[derive(Clone, Copy, Debug)]
enum Reduction {
    Neighbored,
    Nested,
    NestedTail,
    Nested2,
}

fn reduction(c: &Ctx, which: Reduction) -> TestResult {
    const N: usize = 1 << 20;
    const BLOCK: u32 = 512;
    let blocks = (N / BLOCK as usize) as u32;
    let m = module(c)?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut data = c.gpu.upload(&vec![1i32; N]).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0i32; blocks as usize]).ctx("upload")?;
    let (d, o) = (data.as_device_ptr_mut(), out.as_device_ptr_mut());
    let t0 = std::time::Instant::now();
    // SAFETY: `data` holds blocks * BLOCK ints and `out` one per block, both live until the
    // synchronize below and touched by nothing else; BLOCK is a power of two.
    unsafe {
        match which {
            Reduction::Neighbored => {
                reduce::reduce_neighbored::load(m).ctx("load")?.launch(&s, LaunchConfig::new(blocks, BLOCK), d, o)
            }
            Reduction::Nested => {
                reduce::reduce_nested::load(m).ctx("load")?.launch(&s, LaunchConfig::new(blocks, BLOCK), d, o, BLOCK)
            }
            Reduction::NestedTail => reduce::reduce_nested_tail::load(m).ctx("load")?.launch(
                &s,
                LaunchConfig::new(blocks, BLOCK),
                d,
                o,
                BLOCK,
            ),
            Reduction::Nested2 => reduce::reduce_nested2::load(m).ctx("load")?.launch(
                &s,
                LaunchConfig::new(blocks, BLOCK / 2),
                d,
                o,
                BLOCK / 2,
                BLOCK,
            ),
        }
    }
    .ctx("launch")?;
    s.synchronize().ctx("synchronize")?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let parts = out.to_vec().ctx("download")?;
    let sum: i64 = parts.iter().map(|&v| i64::from(v)).sum();
    eprintln!("reduce {which:?}: sum {sum} in {ms:.3} ms (first launch, includes JIT warm-up)");
    ensure(sum == N as i64, || format!("{which:?}: sum {sum}, expected {N}; partials {:?}", &parts[..8]))
}

fn many(c: &Ctx, mode: u32) -> TestResult {
    let (blocks, threads, per_thread, child_threads) = (64u32, 128u32, 2u32, 32u32);
    let m = module(c)?;
    let k = stress::launch_many::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut counts = c.gpu.upload(&[0u32; 3]).ctx("upload")?;
    k.launch(&s, (blocks, threads), &mut counts, per_thread, child_threads, mode).ctx("launch")?;
    s.synchronize().ctx("synchronize")?;
    let [ran, ok, refused] = <[u32; 3]>::try_from(counts.to_vec().ctx("download")?).expect("3 counts");
    let total = blocks * threads * per_thread;
    eprintln!("mode {mode}: {total} launches: {ok} accepted, {refused} refused, {ran} child threads ran");
    ensure(ok + refused == total, || format!("{ok} + {refused} != {total}"))?;
    ensure(refused == 0, || format!("{refused} of {total} launches refused under a limit of {PENDING}"))?;
    ensure(ran == ok * child_threads, || format!("{ran} child threads ran, expected {}", ok * child_threads))
}

fn recursion(c: &Ctx) -> TestResult {
    let (blocks, levels) = (4u32, 5u32);
    let m = module(c)?;
    let k = stress::recurse::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut counts = c.gpu.upload(&[0u32; 3]).ctx("upload")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        k.launch(&s, (blocks, 32u32), &mut counts, 0u32, levels)?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    let counts = counts.to_vec().ctx("download")?;
    // Level L has blocks^(L+1) blocks: every block of level L launches a grid of `blocks`.
    let want_blocks: u32 = (0..levels).map(|l| blocks.pow(l + 1)).sum();
    let mut got: Vec<&str> = text.lines().filter(|l| l.starts_with("level ")).collect();
    let mut want: Vec<String> = (0..levels)
        .flat_map(|l| (0..blocks.pow(l + 1)).map(move |i| format!("level {l} block {}", i % blocks)))
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    ensure(counts[2] == 0, || format!("{} launches refused", counts[2]))?;
    ensure(counts[0] == want_blocks, || format!("{} blocks ran, expected {want_blocks}", counts[0]))?;
    ensure(got == want, || format!("{} lines printed, expected {}", got.len(), want.len()))
}

fn typed_tail(c: &Ctx) -> TestResult {
    const N: usize = 10_000;
    let m = module(c)?;
    let k = stress::scale_then_tail::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let host: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
    let data = c.gpu.upload(&host).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0u32; N]).ctx("upload")?;
    let mut status = c.gpu.upload(&[0u32]).ctx("upload")?;
    let cfg = LaunchConfig::new(N.div_ceil(256) as u32, 256);
    k.launch(&s, cfg, &data, &mut out, 3u32, &mut status).ctx("launch")?;
    let got = out.to_vec().ctx("download")?;
    let st = status.to_vec().ctx("download")?;
    ensure(st[0] == 1, || format!("tail launch status {}", st[0]))?;
    for (i, (&g, &h)) in got.iter().zip(&host).enumerate() {
        ensure(g == h.wrapping_mul(3), || {
            format!("out[{i}] = {g}, expected {} (the tail child's)", h.wrapping_mul(3))
        })?;
    }
    Ok(())
}

fn tails_in_order(c: &Ctx) -> TestResult {
    let m = module(c)?;
    let k = stress::tails_in_order::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut counts = c.gpu.upload(&[0u32; 3]).ctx("upload")?;
    let (blocks, threads) = (8u32, 128u32);
    k.launch(&s, (blocks, threads), &mut counts).ctx("launch")?;
    s.synchronize().ctx("synchronize")?;
    let v = counts.to_vec().ctx("download")?;
    eprintln!("tails: {} increments seen, {} children ran, {} refused", v[0], v[1], v[2]);
    ensure(v[2] == 0, || format!("{} tail launches refused", v[2]))?;
    ensure(v[1] == blocks * threads, || format!("{} tail children ran", v[1]))?;
    ensure(v[0] == v[1], || format!("{} of {} non-atomic increments survived: tail launches overlapped", v[0], v[1]))
}
