//! `cohort::launch`: kernels that launch kernels (dynamic parallelism, CDP2), from the crate
//! `cohort-dynamic-kernels`, whose module is linked with the device runtime at load.

use std::sync::OnceLock;

use cohort_dynamic_kernels::{hello, reduce, stress};
use cohort_runtime::{LaunchConfig, Module};
use cohort_tests::{Context, Ctx, TestResult, check_all, cpu_trial, ensure, gpu_only_trial, gpu_trial};
use libtest_mimic::Trial;

/// Why these tests are GPU-only.
const DEVICE_LAUNCH: &str = "graph capture, which the CPU device does not do";

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("launch_device_nested_hello_1_block", |c| nested_hello(c, 1)),
        gpu_trial("launch_device_nested_hello_2_blocks", |c| nested_hello(c, 2)),
        gpu_trial("launch_device_nested_hello_whole_while_another_thread_prints", nested_hello_while_printing),
        gpu_trial("launch_device_reduce_neighbored", |c| reduction(c, Reduction::Neighbored)),
        gpu_trial("launch_device_reduce_nested_fire_and_forget", |c| reduction(c, Reduction::Nested)),
        gpu_trial("launch_device_reduce_nested_tail", |c| reduction(c, Reduction::NestedTail)),
        gpu_trial("launch_device_reduce_nested2", |c| reduction(c, Reduction::Nested2)),
        gpu_trial("launch_device_many_threads_fire_and_forget", |c| many(c, 0)),
        gpu_trial("launch_device_many_threads_block_stream", |c| many(c, 1)),
        gpu_trial("launch_device_recursion_prints_every_block", recursion),
        gpu_trial("launch_device_typed_disjoint_slice_moves_into_tail", typed_tail),
        gpu_trial("launch_device_tail_launches_run_one_at_a_time", tails_in_order),
        gpu_trial("launch_device_tail_launches_run_in_launch_order_after_the_others", tail_order),
        gpu_trial("launch_device_endless_recursion_is_refused_not_a_hang", depth_limit),
        gpu_trial("launch_device_runaway_tree_ends_at_the_budget", runaway),
        gpu_trial("launch_device_stack_memory_is_not_global", local_refused),
        gpu_trial("launch_device_past_the_budget_is_refused_not_a_hang", |c| past_budget(c, 1, false)),
        gpu_trial("launch_device_budget_is_per_host_launch_across_streams", |c| past_budget(c, 2, false)),
        gpu_trial("launch_device_budget_is_per_context_across_modules", |c| past_budget(c, 2, true)),
        gpu_only_trial("launch_device_kernels_are_not_captured_into_graphs", DEVICE_LAUNCH, not_captured),
        cpu_trial("launch_device_cpu_child_panic_fails_the_host_launch", child_panic),
    ]
}

/// Pending device launches the tests allow (the reductions keep one per block of 2048 pending).
const PENDING: usize = 1 << 16;

/// The pending-launch limit, and so the launch budget, of the tests' device: smaller on the CPU
/// device, where every test's launches stay well below it and the budget tests reach it
/// sooner (each child grid there costs microseconds, not nanoseconds).
fn pending(c: &Ctx) -> usize {
    c.pick(PENDING, 1 << 12)
}

/// The device-launching module, loaded (linked with libcudadevrt) once, after the pending-launch
/// limit is raised.
fn module(c: &Ctx) -> Result<&'static Module, String> {
    static M: OnceLock<Result<Module, String>> = OnceLock::new();
    M.get_or_init(|| {
        c.gpu.set_pending_launch_limit(pending(c)).map_err(|e| format!("pending-launch limit: {e}"))?;
        c.gpu.load(&cohort_dynamic_kernels::PTX).map_err(|e| format!("load: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn nested_hello(c: &Ctx, blocks: u32) -> TestResult {
    let text = nested_hello_text(c, blocks)?;
    let mut got = nested_hello_kernel_lines(&text);
    let want = cohort_host::reference::nested_hello_lines(blocks);
    got.sort_unstable();
    eprintln!("{}", text.lines().filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n"));
    ensure(got == want, || format!("printf output:\n{}\nexpected:\n{}", got.join("\n"), want.join("\n")))
}

/// The nested hello's lines in captured text, each taken from where it begins: what other
/// threads print meanwhile lands in a capture too (the harness's `test name ... ` can come
/// before a kernel line on the same line), and a kernel line is whole after it (issue 31 item 8:
/// such a glued line was once dropped by a `starts_with` filter, and read as a lost line).
fn nested_hello_kernel_lines(text: &str) -> Vec<&str> {
    const STARTS: [&str; 3] = ["Recursion=", "-------> ", "launch failed at depth"];
    text.lines().filter_map(|l| STARTS.iter().filter_map(|m| l.find(m)).min().map(|i| &l[i..])).collect()
}

/// The nested hello of `blocks` blocks, its standard output captured.
fn nested_hello_text(c: &Ctx, blocks: u32) -> Result<String, String> {
    let m = module(c)?;
    let k = hello::nested_hello::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        k.launch(&s, (blocks, 8u32), 0u32)?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    Ok(text)
}

/// Issue 31 item 8: while another thread prints half lines, as the test harness does (`test
/// name ... `, then `ok` in a second write), every kernel line is captured whole and none is
/// lost, wherever the other thread's text falls (a capture takes it in too: `capture_stdout`
/// does not hold Rust's `stdout()` lock while its closure waits, which could deadlock).
fn nested_hello_while_printing(c: &Ctx) -> TestResult {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    const ROUNDS: usize = 20;
    let want = cohort_host::reference::nested_hello_lines(2);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let noise = scope.spawn(|| {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                {
                    let mut out = std::io::stdout().lock();
                    let _ = write!(out, "test noise-{n} ... ");
                    let _ = out.flush();
                }
                std::thread::sleep(std::time::Duration::from_micros(500));
                println!("ok");
                n += 1;
            }
            n
        });
        let result = (0..ROUNDS).try_for_each(|round| {
            let text = nested_hello_text(c, 2)?;
            let mut got = nested_hello_kernel_lines(&text);
            got.sort_unstable();
            ensure(got == want, || {
                format!(
                    "round {round}: the captured kernel lines are not the kernels' lines:\n{}\nexpected:\n{}",
                    got.join("\n"),
                    want.join("\n")
                )
            })
        });
        stop.store(true, Ordering::Relaxed);
        let lines = noise.join().map_err(|_| "the printing thread panicked".to_string())?;
        eprintln!("{ROUNDS} captures while another thread printed {lines} lines");
        result
    })
}

#[derive(Clone, Copy, Debug)]
enum Reduction {
    Neighbored,
    Nested,
    NestedTail,
    Nested2,
}

fn reduction(c: &Ctx, which: Reduction) -> TestResult {
    const BLOCK: u32 = 512;
    let n: usize = c.pick(1 << 20, 1 << 16);
    let blocks = (n / BLOCK as usize) as u32;
    let m = module(c)?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut data = c.gpu.upload(&vec![1i32; n]).ctx("upload")?;
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
    ensure(sum == n as i64, || format!("{which:?}: sum {sum}, expected {n}; partials {:?}", &parts[..8]))?;
    // Every block's partial: BLOCK ones.
    check_all("partials", &parts, &vec![BLOCK as i32; blocks as usize])
}

fn many(c: &Ctx, mode: u32) -> TestResult {
    let (blocks, threads, per_thread, child_threads) = (c.pick(64u32, 16), c.pick(128u32, 64), 2u32, 32u32);
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
    ensure(refused == 0, || format!("{refused} of {total} launches refused under a limit of {}", pending(c)))?;
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
    // A line may follow other output of the process written meanwhile without a newline (fd 1
    // is the process's, see `capture_stdout`): take each kernel line from its "level ".
    let mut got: Vec<&str> = text.lines().filter_map(|l| l.find("level ").map(|i| &l[i..])).collect();
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

/// Aborts the process (a failure, with the reason) if `f` runs longer than `secs`: a hang
/// must fail the suite, not stall it.
fn within<T>(secs: u64, what: &'static str, f: impl FnOnce() -> T) -> T {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(secs));
        if !flag.load(std::sync::atomic::Ordering::SeqCst) {
            eprintln!("FAILED: {what} did not finish within {secs} s (a hang); aborting");
            std::process::abort();
        }
    });
    let r = f();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    r
}

/// 4096 × 256 threads each make one fire-and-forget launch: 2^20, sixteen times the budget
/// (the pending-launch limit). Exactly the budget is accepted and the rest refused as `Err`s —
/// the device runtime itself would make the launching threads wait for slots and never finish.
/// With `launches` host launches on as many streams, each gets the whole budget (they run one
/// after another) — also when every other one is of a second module loaded in the same
/// context through a second `Gpu` (`two_modules`): the limit is the context's.
fn past_budget(c: &Ctx, launches: usize, two_modules: bool) -> TestResult {
    let (blocks, threads, child_threads) = (c.pick(4096u32, 64), 256u32, 32u32);
    let m = module(c)?;
    let first = stress::launch_many::load(m).ctx("load")?;
    let second = if two_modules {
        let other =
            if c.is_cpu() { cohort_runtime::Gpu::cpu() } else { cohort_runtime::Gpu::new(c.gpu.info().ordinal) }
                .ctx("second Gpu")?;
        let m2 = other.load(&cohort_dynamic_kernels::PTX).ctx("second load")?;
        Some(stress::launch_many::load(&m2).ctx("load")?)
    } else {
        None
    };
    let streams: Vec<_> = (0..launches).map(|_| c.gpu.new_stream()).collect::<Result<_, _>>().ctx("stream")?;
    let mut counts: Vec<_> = (0..launches).map(|_| c.gpu.upload(&[0u32; 3])).collect::<Result<_, _>>().ctx("upload")?;
    within(120, "launches past the budget", || -> TestResult {
        for (i, (s, counts)) in streams.iter().zip(&mut counts).enumerate() {
            let k = if i % 2 == 1 { second.as_ref().unwrap_or(&first) } else { &first };
            k.launch(s, (blocks, threads), counts, 1u32, child_threads, 0u32).ctx("launch")?;
        }
        for s in &streams {
            s.synchronize().ctx("synchronize")?;
        }
        Ok(())
    })?;
    let total = blocks * threads;
    let budget = pending(c) as u32;
    for counts in &counts {
        let [ran, ok, refused] = <[u32; 3]>::try_from(counts.to_vec().ctx("download")?).expect("3 counts");
        eprintln!("{total} launches: {ok} accepted, {refused} refused, {ran} child threads ran");
        ensure(ok == budget, || format!("{ok} launches accepted, expected exactly the budget {budget}"))?;
        ensure(refused == total - budget, || format!("{refused} refused, expected {}", total - budget))?;
        ensure(ran == ok * child_threads, || format!("{ran} child threads ran, expected {}", ok * child_threads))?;
    }
    Ok(())
}

/// A device-launching kernel's launch inside a graph capture is an `Err` naming it (a replay
/// would not get a fresh launch budget in order); a kernel that does not launch is captured.
fn not_captured(c: &Ctx) -> TestResult {
    let m = module(c)?;
    let k = stress::launch_many::load(m).ctx("load")?;
    let plain = stress::bump::load(m).ctx("load")?;
    // Non-blocking: a capture on a blocking stream would make other tests' legacy-stream work
    // fail (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) while it lasts.
    let s = c.gpu.new_stream_with(cohort_runtime::StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut counts = c.gpu.upload(&[0u32; 3]).ctx("upload")?;
    let err = s.capture(|s| k.launch(s, (1u32, 32u32), &mut counts, 1u32, 32u32, 0u32)).err();
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    ensure(msg.contains("launch_many") && msg.contains("graph"), || format!("capture gave: {msg:?}"))?;
    let graph = s.capture(|s| plain.launch(s, (2u32, 32u32), &mut counts)).ctx("capture bump")?;
    let exec = graph.instantiate().ctx("instantiate")?;
    exec.launch(&s).ctx("replay")?;
    exec.launch(&s).ctx("replay")?;
    s.synchronize().ctx("synchronize")?;
    let v = counts.to_vec().ctx("download")?;
    ensure(v[0] == 128, || format!("two replays of 64 bumps gave {}", v[0]))
}

/// A fire-and-forget child completes before any tail launch of its parent grid, and the tails
/// run one after another in launch order (those of one thread: the order is defined).
fn tail_order(c: &Ctx) -> TestResult {
    let n = 16u32;
    let m = module(c)?;
    let k = stress::tail_order::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut log = c.gpu.upload(&vec![0u32; n as usize + 3]).ctx("upload")?;
    k.launch(&s, (2u32, 64u32), &mut log, n).ctx("launch")?;
    let got = log.to_vec().ctx("download")?;
    let mut want = vec![n + 1, 100];
    want.extend(0..n);
    want.push(0);
    check_all("log (count, values…, refused)", &got, &want)
}

/// A recursion with no end of its own (each grid launches itself one level deeper) is refused,
/// not a hang: on the CPU device `NoParameterBuffer` at the nesting limit (24); a GPU's device
/// runtime nests fire-and-forget grids deeper, and the chain ends at the nesting limit or at
/// the launch budget. One grid per level, and the host launch returns.
fn depth_limit(c: &Ctx) -> TestResult {
    let m = module(c)?;
    let k = stress::dive::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut depths = c.gpu.upload(&[0u32; 3]).ctx("upload")?;
    k.launch(&s, (1u32, 1u32), &mut depths, 0u32).ctx("launch")?;
    s.synchronize().ctx("synchronize")?;
    let [deepest, grids, code] = <[u32; 3]>::try_from(depths.to_vec().ctx("download")?).expect("3 values");
    eprintln!("deepest grid {deepest}, {grids} grids, refusal code {code}");
    let refused = cohort::launch::LaunchError::NoParameterBuffer.code();
    let spent = cohort::launch::LaunchError::BudgetSpent.code();
    ensure(grids == deepest + 1, || format!("{grids} grids ran for depths 0..={deepest}"))?;
    if c.is_cpu() {
        let limit = cohort::__cpu::MAX_DEPTH;
        ensure(code == refused, || {
            format!("the recursion ended with code {code}, expected NoParameterBuffer ({refused})")
        })?;
        ensure(deepest == limit, || format!("deepest grid {deepest}, expected the nesting limit {limit}"))
    } else {
        // The device runtime nests fire-and-forget grids past 24 levels (measured on an H200,
        // CUDA 13.0: the chain ran until the budget was spent), so the chain ends at whichever
        // comes first: a refused launch slot at the nesting limit, or the launch budget.
        let budget = pending(c) as u32;
        ensure((code == refused && (16..=24).contains(&deepest)) || (code == spent && grids == budget + 1), || {
            format!("the recursion ended with code {code} at depth {deepest} after {grids} grids")
        })
    }
}

/// A launch tree that grows without end (every grid launches two copies of itself) makes
/// exactly the budget (the pending-launch limit) of launches: the rest are refused as
/// `BudgetSpent` (or at the nesting limit), and the host launch returns instead of exhausting
/// memory or hanging.
fn runaway(c: &Ctx) -> TestResult {
    let m = module(c)?;
    let k = stress::fan::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut counts = c.gpu.upload(&[0u32; 4]).ctx("upload")?;
    within(120, "a runaway launch tree", || k.launch(&s, (1u32, 1u32), &mut counts).and_then(|()| s.synchronize()))
        .ctx("launch")?;
    let [ran, ok, spent, other] = <[u32; 4]>::try_from(counts.to_vec().ctx("download")?).expect("4 counts");
    eprintln!("runaway tree: {ran} grids ran, {ok} launches accepted, {spent} refused as BudgetSpent, {other} else");
    let budget = pending(c) as u32;
    ensure(ok == budget, || format!("{ok} launches accepted, expected exactly the budget {budget}"))?;
    ensure(ran == ok + 1, || format!("{ran} grids ran, expected the {ok} accepted and the host's"))?;
    // Each grid tries two launches.
    ensure(spent > 0 && ok + spent + other == 2 * ran, || format!("{ok} + {spent} + {other} != 2 × {ran}"))
}

/// A slice of the parent thread's stack (local memory: a child can't see it, and on the CPU
/// device it is gone when a tail child runs) is refused as `NotGlobalMemory`.
fn local_refused(c: &Ctx) -> TestResult {
    let m = module(c)?;
    let k = stress::pass_local::load(m).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut status = c.gpu.upload(&[0u32; 2]).ctx("upload")?;
    k.launch(&s, (1u32, 32u32), &mut status).ctx("launch")?;
    let got = status.to_vec().ctx("download")?;
    let want = cohort::launch::LaunchError::NotGlobalMemory { param: 0 }.code();
    check_all("status (launch code, child's sum)", &got, &[want, 0])
}

/// On the CPU device, a child grid that panics makes the host's launch of its parent an `Err`
/// naming the child kernel, where it was launched from and where it panicked (run on the CPU
/// device on every machine: on a GPU the panic would end the context).
fn child_panic() -> TestResult {
    let cpu = cohort_runtime::Gpu::cpu().ctx("CPU device")?;
    let m = cpu.load(&cohort_dynamic_kernels::PTX).ctx("load")?;
    let k = stress::launch_panicking::load(&m).ctx("load")?;
    let s = cpu.new_stream().ctx("stream")?;
    let mut counts = cpu.upload(&[0u32; 3]).ctx("upload")?;
    let err = k.launch(&s, (2u32, 32u32), &mut counts, 8u32, 5u32).err().ok_or("the launch succeeded")?;
    let msg = err.to_string();
    eprintln!("{msg}");
    for want in
        ["launch_panicking", "child kernel `panics_at`", "stress.rs", "child thread 5 gives up", "thread (5,0,0)"]
    {
        ensure(msg.contains(want), || format!("the error does not name {want:?}: {msg}"))?;
    }
    ensure(matches!(err, cohort_runtime::Error::CpuKernel { .. }), || format!("not a CpuKernel error: {err:?}"))?;
    // The parent grid ran to completion; the host launch still works afterwards.
    let got = counts.to_vec().ctx("download")?;
    ensure(got[0] == 64 && got[2] == 0, || format!("counts {got:?}"))?;
    let mut fresh = cpu.upload(&[0u32; 3]).ctx("upload")?;
    let err = k.launch(&s, (1u32, 32u32), &mut fresh, 8u32, 99u32).err();
    ensure(err.is_none(), || format!("a launch with no panicking child failed: {err:?}"))?;
    check_all("counts with no panic", &fresh.to_vec().ctx("download")?, &[32, 8, 0])
}
