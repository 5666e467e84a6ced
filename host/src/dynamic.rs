//! `cohort dynamic`: kernels that launch kernels (CDP2), the dynamic-parallelism article's
//! workloads, each checked: the nested hello world (every printed line compared with the
//! expected set), the recursive reductions of 2^20 ints, and launches from many threads,
//! including more than the launch budget allows (refused with an `Err` on the device, counted
//! here: never a hang).

use cohort_dynamic_kernels::{hello, reduce, stress};
use cohort_runtime::{DeviceBuffer, Gpu, LaunchConfig, Module};

use crate::util::{self, CliError, CliResult};

/// The pending-launch limit `cohort dynamic` and `cohort bench dynamic` (both sides) set (the
/// reductions keep up to one launch per block of 2048 pending, and the launch-cost rows make up
/// to 16384).
pub const PENDING: usize = 1 << 16;

/// `cohort dynamic`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which workload
    #[arg(value_enum, default_value = "all")]
    pub workload: Workload,
}

/// Which workloads to run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// The nested hello world, grids of 1 and 2 blocks of 8 threads.
    Hello,
    /// The four reductions.
    Reduce,
    /// Many launching threads, within and past the launch budget.
    Stress,
    /// All of the above.
    All,
}

/// Runs the chosen workloads.
pub fn run(args: Args) -> CliResult {
    let which = args.workload;
    let gpu = util::gpu()?;
    gpu.set_pending_launch_limit(PENDING)?;
    let m = gpu.load(&cohort_dynamic_kernels::PTX)?;
    println!("{} (sm_{}), pending-launch limit {PENDING}", gpu.info().name, gpu.info().cc());
    if matches!(which, Workload::Hello | Workload::All) {
        for blocks in [1, 2] {
            nested_hello(&gpu, &m, blocks)?;
        }
    }
    if matches!(which, Workload::Reduce | Workload::All) {
        reductions(&gpu, &m)?;
    }
    if matches!(which, Workload::Stress | Workload::All) {
        stress_launches(&gpu, &m)?;
    }
    Ok(())
}

fn nested_hello(gpu: &Gpu, m: &Module, blocks: u32) -> CliResult {
    let k = hello::nested_hello::load(m)?;
    let s = gpu.new_stream()?;
    println!("nested hello world, grid {blocks} × 8, recursion to depth 3:");
    let (res, text) = cohort_runtime::capture_stdout(|| {
        k.launch(&s, (blocks, 8u32), 0u32)?;
        s.synchronize()
    })
    .map_err(|e| CliError::Failed(format!("capturing the kernels' printf output: {e}")))?;
    res?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    for l in &lines {
        println!("  {l}");
    }
    let mut got: Vec<&str> = lines.clone();
    got.sort_unstable();
    let want = cohort_host::reference::nested_hello_lines(blocks);
    if got != want {
        return Err(CliError::Failed(format!(
            "nested hello ({blocks} blocks): {} lines printed, {} expected, or different ones",
            got.len(),
            want.len()
        )));
    }
    println!("  ok: all {} lines as expected", want.len());
    Ok(())
}

fn reductions(gpu: &Gpu, m: &Module) -> CliResult {
    const N: usize = 1 << 20;
    const B: u32 = 512;
    let blocks = (N / B as usize) as u32;
    let host: Vec<i32> = (0..N as u32).map(|i| (i % 11) as i32 - 5).collect();
    let want: i64 = host.iter().map(|&v| i64::from(v)).sum();
    let s = gpu.new_stream()?;
    let full = LaunchConfig::new(blocks, B);
    for name in ["neighbored", "nested (fire-and-forget)", "nested (tail launches)", "nested 2"] {
        let mut data = gpu.upload(&host)?;
        let mut out: DeviceBuffer<i32> = gpu.zeroed(blocks as usize)?;
        let (d, p) = (data.as_device_ptr_mut(), out.as_device_ptr_mut());
        let t = std::time::Instant::now();
        // SAFETY: `data` holds blocks × B ints and `out` one per block, live until the
        // synchronize below and touched by nothing else; B is a power of two.
        unsafe {
            match name {
                "neighbored" => reduce::reduce_neighbored::load(m)?.launch(&s, full, d, p),
                "nested (fire-and-forget)" => reduce::reduce_nested::load(m)?.launch(&s, full, d, p, B),
                "nested (tail launches)" => reduce::reduce_nested_tail::load(m)?.launch(&s, full, d, p, B),
                _ => reduce::reduce_nested2::load(m)?.launch(&s, LaunchConfig::new(blocks, B / 2), d, p, B / 2, B),
            }
        }?;
        s.synchronize()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let sum: i64 = out.to_vec()?.iter().map(|&v| i64::from(v)).sum();
        let ok = if sum == want { "ok" } else { "WRONG" };
        println!("reduce {N} ints, block {B}, {name:<26} sum {sum:>8} (expected {want}) {ok}  {ms:.3} ms (first run)");
        if sum != want {
            return Err(CliError::Failed(format!("reduction `{name}` summed to {sum}, expected {want}")));
        }
    }
    Ok(())
}

fn stress_launches(gpu: &Gpu, m: &Module) -> CliResult {
    let k = stress::launch_many::load(m)?;
    let s = gpu.new_stream()?;
    // (blocks, threads, launches per thread): within the budget, then 16 × past it.
    for (blocks, threads, per) in [(64u32, 128u32, 2u32), (4096, 256, 1)] {
        let mut counts = gpu.upload(&[0u32; 3])?;
        let t = std::time::Instant::now();
        k.launch(&s, (blocks, threads), &mut counts, per, 32u32, 0u32)?;
        s.synchronize()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let [ran, ok, refused] = <[u32; 3]>::try_from(counts.to_vec()?).expect("3 counts");
        let total = blocks * threads * per;
        let expected_ok = total.min(PENDING as u32);
        println!(
            "{blocks} × {threads} threads × {per} fire-and-forget launches = {total}: {ok} accepted, {refused} refused \
             (budget {PENDING}), {ran} child threads ran, {ms:.1} ms"
        );
        if ok != expected_ok || ok + refused != total || ran != ok * 32 {
            return Err(CliError::Failed(format!(
                "expected {expected_ok} accepted and {} refused launches, {} child threads; got {ok}, {refused}, {ran}",
                total - expected_ok,
                expected_ok * 32
            )));
        }
    }
    Ok(())
}
