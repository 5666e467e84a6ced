//! The adversarial pass of issue 31: the safe API attacked as a hostile user would, in areas the
//! issue's ten holes did not name — kernels made by macros, generic kernels instantiated twice,
//! closures given to collectives (reading shared memory, calling collectives, panicking),
//! unwinding out of scopes that lend memory to the device, forgotten and dropped handles,
//! `Send`/`Sync` of every handle, handles shared between threads, child processes and stop
//! signals while kernels run, running out of memory midway, sizes that overflow, zero lengths,
//! re-entrance from host functions, handles dropped while their work is queued. Each test
//! checks every element against a CPU reference, or that the attempt is an `Err` (on a GPU,
//! attempts that end the CUDA context run in a child process). The table of attempts and
//! outcomes is in the note; compile-time attempts are `tests/ui/fail/hostile_*.rs`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cohort_runtime::{
    AppendBuffer, Error, Event, Gpu, GridVecBuffer, LaunchConfig, LoadOptions, ManagedBuffer, MemPool, Module,
    Pipeline, Stream, StreamOptions,
};
use cohort_test_kernels::hostile as k;
use cohort_tests::{
    Context, Ctx, TestResult, check_all, cpu_trial, ensure, gpu_only_trial, gpu_trial, gpu_trial_alone, rng,
};
use libtest_mimic::Trial;
use rand::Rng;

/// Set in a child process to the scenario it runs ([`child`]).
pub const CHILD_ENV: &str = "COHORT_HOSTILE_CHILD";

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("hostile_macro_generated_kernels_keep_their_own_shared_memory", macro_kernels),
        gpu_trial("hostile_generic_kernel_two_instances_of_one_size_run_their_own_entries", generic_instances),
        gpu_trial("hostile_closures_in_collectives_read_shared_memory_and_vote", closure_collectives),
        gpu_trial("hostile_block_collective_inside_a_block_collectives_op_is_an_error", |c| {
            failing(c, "nested-block", &["hostile.rs:"], &["a block-level collective", "inside the op"])
        }),
        gpu_trial("hostile_large_tile_collective_inside_a_large_tile_collectives_op_is_an_error", |c| {
            failing(c, "nested-large", &["hostile.rs:"], &["a block-level collective", "inside the op"])
        }),
        gpu_trial("hostile_collective_inside_a_scans_op_is_reported_as_divergent", |c| {
            failing(c, "vote-in-scan", &["hostile.rs:"], &["divergence", "hostile.rs:"])
        }),
        gpu_trial("hostile_panic_in_a_reduce_op_is_an_error_not_a_hang", |c| {
            failing(c, "panic-reduce", &["hostile.rs:"], &["the reduce op met the bad value"])
        }),
        gpu_trial("hostile_panic_in_a_block_scan_op_is_an_error_not_a_hang", |c| {
            failing(c, "panic-block-scan", &["hostile.rs:"], &["a warp panics in the block scan op"])
        }),
        gpu_trial("hostile_unwinding_out_of_registered_pinned_managed_pipeline_and_capture", unwinding),
        gpu_only_trial(
            "hostile_registered_scope_reports_a_kernel_that_failed_in_it",
            "on the CPU device a kernel's failure is its launch's Err and the scope's final wait cannot fail (the \
             runtime's unit test `registered_scope_reports_a_failed_wait` covers the scope's side there)",
            |c| failing(c, "registered-failed", &["hostile_maybe_fail"], &[]),
        ),
        gpu_trial("hostile_dropped_async_copy_waits_and_forgotten_guards_leak_only", forget_and_drop),
        gpu_trial("hostile_every_handle_is_send_and_sync_as_it_should_be", send_sync),
        gpu_only_trial(
            "hostile_graph_and_instance_shared_by_threads",
            "graphs are GPU-only (the CPU device refuses captures)",
            graph_threads,
        ),
        gpu_trial("hostile_module_dropped_while_its_kernel_runs", module_dropped),
        gpu_only_trial(
            "hostile_graph_outlives_its_module",
            "graphs are GPU-only (the CPU device refuses captures)",
            graph_outlives_module,
        ),
        gpu_trial("hostile_child_processes_spawned_while_kernels_run", spawn_while_launching),
        gpu_trial("hostile_stop_and_continue_signals_while_kernels_run", stop_signals),
        gpu_trial_alone("hostile_out_of_memory_midway_loses_nothing", out_of_memory),
        gpu_trial("hostile_sizes_that_overflow_are_errors", overflowing_sizes),
        gpu_trial("hostile_zero_lengths_everywhere", zero_lengths),
        gpu_trial("hostile_host_function_reentrancy_is_refused_not_a_deadlock", host_fn_reentrancy),
        gpu_trial("hostile_handles_dropped_while_their_work_is_queued", dropped_handles),
        gpu_trial("hostile_cfg_split_kernel_with_one_abi_and_two_bodies", split_body),
        cpu_trial("hostile_capture_stdout_inside_capture_stdout_is_an_error_not_a_hang", nested_capture),
    ]
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// Runs scenario `which` in this (child) process and returns its exit code.
pub fn child(which: &str) -> i32 {
    let r = match which {
        "capture-nested" => capture_nested_child(),
        "tiny-launch" => tiny_launch_child(),
        other => failing_child(other),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("hostile child `{which}` failed: {e}");
            1
        }
    }
}

/// Runs this test binary as a child with scenario `which`, killing it after `limit`: its exit
/// status (`None` when it had to be killed) and everything it printed.
fn run_child(which: &str, limit: Duration) -> Result<(Option<std::process::ExitStatus>, String), String> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let dir = std::env::temp_dir();
    let tag = format!("{}-{which}-{:?}", std::process::id(), std::thread::current().id());
    let (out_path, err_path) = (dir.join(format!("hostile-{tag}.out")), dir.join(format!("hostile-{tag}.err")));
    let mut child = Command::new(exe)
        .env(CHILD_ENV, which)
        .stdout(std::fs::File::create(&out_path).ctx("child stdout")?)
        .stderr(std::fs::File::create(&err_path).ctx("child stderr")?)
        .spawn()
        .ctx("spawn child")?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().ctx("wait for child")? {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    let _ = std::fs::remove_file(out_path);
    let _ = std::fs::remove_file(err_path);
    Ok((status, text))
}

/// The device a child process uses: the tests' device, its test kernels loaded as the shared
/// context loads them.
fn child_ctx() -> Result<(Gpu, Module), String> {
    let gpu = match cohort_tests::test_device() {
        cohort_tests::TestDevice::Cpu(_) => Gpu::cpu(),
        _ => Gpu::from_env(),
    }
    .ctx("open the device")?;
    let tests = gpu
        .load_with(&cohort_test_kernels::PTX, LoadOptions::new().threads_per_block(512))
        .ctx("load the test kernels")?;
    Ok((gpu, tests))
}

/// A launch that must fail: on the CPU device (nothing is sticky) in this process, on a GPU (a
/// trap ends the CUDA context) in a child. The error must name `where_` (the kernel's source
/// file or its name) on a GPU, and say every one of `what` on the CPU device (a GPU's report
/// has the location, not the message).
fn failing(c: &Ctx, which: &str, where_: &[&str], what: &[&str]) -> TestResult {
    let msg = if c.is_cpu() {
        failing_scenario(&c.gpu, &c.tests, which)?
    } else {
        let (status, text) = run_child(which, Duration::from_secs(120))?;
        let Some(status) = status else {
            return Err(format!("`{which}`: the child hung (killed after 120 s):\n{text}"));
        };
        ensure(status.success(), || format!("`{which}`: child failed ({status}):\n{text}"))?;
        text.lines().find(|l| l.starts_with("HOSTILE ERROR: ")).map_or(text.clone(), str::to_string)
    };
    println!("{which}: {msg}");
    let needles = if c.is_cpu() { what } else { where_ };
    for n in needles {
        ensure(msg.contains(n), || format!("`{which}`: the error does not say `{n}`: {msg}"))?;
    }
    Ok(())
}

/// A [`failing`] scenario in a child process: prints the error it got.
fn failing_child(which: &str) -> Result<(), String> {
    let (gpu, tests) = child_ctx()?;
    let msg = failing_scenario(&gpu, &tests, which)?;
    println!("HOSTILE ERROR: {msg}");
    Ok(())
}

/// Runs a scenario that must end in an error: `Ok` holds the error's text, `Err` says what went
/// wrong instead (no error at all).
fn failing_scenario(gpu: &Gpu, tests: &Module, which: &str) -> Result<String, String> {
    let s = gpu.new_stream().ctx("stream")?;
    let n = 4 * 256;
    let vals: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
    let d = gpu.upload(&vals).ctx("upload")?;
    let mut out = gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let cfg = LaunchConfig::new(4u32, 256u32);
    let launched = match which {
        "nested-block" => k::hostile_nested_block_reduce::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "nested-large" => k::hostile_nested_large_tile_reduce::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "vote-in-scan" => k::hostile_vote_in_scan_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "panic-reduce" => k::hostile_panic_in_reduce_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, vals[37], &mut out))
            .and_then(|()| s.synchronize()),
        "panic-block-scan" => k::hostile_panic_in_block_scan_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, 3, &mut out))
            .and_then(|()| s.synchronize()),
        "registered-failed" => {
            // A kernel that fails while it writes registered host memory: the scope's final wait
            // sees the failure, and the scope must report it, not hand the memory back as if the
            // kernel had written it.
            let kern = k::hostile_maybe_fail::load(tests).ctx("load")?;
            let mut host = vec![0u32; n];
            match gpu.with_registered(&mut host, |reg| kern.launch(&s, cfg, 1, 5, reg.slice_mut(..))) {
                Ok(Ok(())) => return Err("the scope returned Ok after the kernel in it failed".into()),
                Ok(Err(e)) | Err(e) => Err(e),
            }
        }
        other => return Err(format!("unknown scenario {other}")),
    };
    match launched {
        Ok(()) => {
            let got = out.to_vec().ctx("read")?;
            Err(format!("`{which}`: no error; the kernel wrote {:?}…", &got[..8]))
        }
        Err(e) => Ok(e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Macro-generated and generic kernels

fn macro_kernels(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_macro_kernels");
    let (blocks, block) = (c.pick(96usize, 6), 256usize);
    let n = blocks * block;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let a = k::macro_a::hostile_macro_a::load(&c.tests).ctx("load a")?;
    let b = k::macro_b::hostile_macro_b::load(&c.tests).ctx("load b")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, c.gpu.new_stream().ctx("stream")?);
    let mut out_a = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let mut out_b = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    // Both at once on two streams: their shared arrays and collectives are their own.
    for _ in 0..3 {
        a.launch(&s1, LaunchConfig::new(blocks as u32, block as u32), &d, &mut out_a).ctx("launch a")?;
        b.launch(&s2, LaunchConfig::new(blocks as u32, block as u32), &d, &mut out_b).ctx("launch b")?;
    }
    let want = |extra: u32| -> Vec<u32> {
        (0..n)
            .map(|i| {
                let (base, t) = (i / block * block, i % block);
                let right = vals[base + (t + 1) % block];
                let tile = i / 32 * 32;
                let sum = vals[tile..tile + 32].iter().fold(0u32, |s, v| s.wrapping_add(*v));
                right.wrapping_add(sum).wrapping_add(extra)
            })
            .collect()
    };
    check_all("macro_a", &out_a.to_vec().ctx("read")?, &want(0))?;
    check_all("macro_b", &out_b.to_vec().ctx("read")?, &want(1_000_000))
}

fn generic_instances(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_generic_instances");
    let n = c.pick(100_000usize, 5000);
    let (au, bu): (Vec<u32>, Vec<u32>) = (0..n).map(|_| (r.random::<u32>(), r.random::<u32>())).unzip();
    let (af, bf): (Vec<f32>, Vec<f32>) =
        (0..n).map(|_| (r.random_range(-1e3f32..1e3), r.random_range(-1e3f32..1e3))).unzip();
    let ku = k::hostile_generic_add::<u32>::load(&c.tests).ctx("load u32")?;
    let kf = k::hostile_generic_add::<f32>::load(&c.tests).ctx("load f32")?;
    ensure(ku.function().name() != kf.function().name(), || "two instances share an entry".into())?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (da, db) = (c.gpu.upload(&au).ctx("upload")?, c.gpu.upload(&bu).ctx("upload")?);
    let (fa, fb) = (c.gpu.upload(&af).ctx("upload")?, c.gpu.upload(&bf).ctx("upload")?);
    let mut ou = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let mut of = c.gpu.upload(&vec![f32::NAN; n]).ctx("alloc")?;
    let cfg = LaunchConfig::for_elements(n, 256);
    ku.launch(&s, cfg, &da, &db, &mut ou).ctx("launch u32")?;
    kf.launch(&s, cfg, &fa, &fb, &mut of).ctx("launch f32")?;
    let want_u: Vec<u32> = au.iter().zip(&bu).map(|(a, b)| a.wrapping_add(*b)).collect();
    let want_f: Vec<u32> = af.iter().zip(&bf).map(|(a, b)| (a + b).to_bits()).collect();
    check_all("u32 instance: wrapping sums", &ou.to_vec().ctx("read")?, &want_u)?;
    let got_f: Vec<u32> = of.to_vec().ctx("read")?.iter().map(|v| v.to_bits()).collect();
    check_all("f32 instance: IEEE sums, bit for bit", &got_f, &want_f)
}

fn closure_collectives(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_closure_collectives");
    let (blocks, block) = (c.pick(64usize, 4), 256usize);
    let n = blocks * block;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let bias: u32 = r.random();
    let kern = k::hostile_closure_collectives::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut red = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    let mut bred = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    let mut scan = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, block as u32), &d, bias, &mut red, &mut bred, &mut scan)
        .ctx("launch")?;
    let sum = |r: std::ops::Range<usize>| vals[r].iter().fold(0u32, |s, v| s.wrapping_add(*v));
    let want_red: Vec<u32> =
        (0..n).map(|i| sum(i / 32 * 32..i / 32 * 32 + 32).wrapping_add(31u32.wrapping_mul(bias))).collect();
    let want_bred: Vec<u32> = (0..n)
        .map(|i| sum(i / block * block..i / block * block + block).wrapping_add((block as u32 - 1).wrapping_mul(bias)))
        .collect();
    let want_scan: Vec<u32> =
        (0..n).map(|i| sum(i / 32 * 32..i + 1).wrapping_add(((i % 32) as u32).wrapping_mul(bias))).collect();
    check_all("tile reduce with a closure reading shared memory and voting", &red.to_vec().ctx("read")?, &want_red)?;
    check_all("block reduce with a closure reading shared memory", &bred.to_vec().ctx("read")?, &want_bred)?;
    check_all("tile scan with a closure reading shared memory", &scan.to_vec().ctx("read")?, &want_scan)
}

// ---------------------------------------------------------------------------------------------
// Unwinding, forgetting, dropping

fn unwinding(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_unwinding");
    let n = c.pick(1usize << 22, 1 << 14);
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let dev = c.gpu.upload(&data).ctx("upload")?;

    // A panic in a `with_registered` scope right after a copy into the memory was enqueued:
    // the scope must wait for the copy before the memory is the caller's again.
    let mut host = vec![0u32; n];
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        c.gpu.with_registered(&mut host, |reg| {
            s.copy(&dev, reg).expect("copy into registered memory");
            panic!("hostile: unwinding out of with_registered");
        })
    }));
    ensure(unwound.is_err(), || "the panic did not unwind".into())?;
    check_all("registered memory after unwinding out of its scope", &host, &data)?;

    // A panic while the host holds a pinned buffer's slice, then a managed buffer's.
    let mut pinned = c.gpu.pinned::<u32>(n).ctx("pinned")?;
    let mut managed = ManagedBuffer::<u32>::new(&c.gpu, n).ctx("managed")?;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let v = pinned.as_mut_slice().expect("pinned view");
        v[0] = 1;
        let m = managed.as_mut_slice().expect("managed view");
        m[0] = 2;
        panic!("hostile: unwinding with host views");
    }));
    s.copy(&dev, &mut pinned).ctx("copy into pinned")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 11, &mut managed).ctx("launch on managed")?;
    check_all("pinned after unwinding", pinned.as_slice().ctx("pinned view")?, &data)?;
    let want: Vec<u32> = (0..n as u32).map(|i| 11u32.wrapping_add(i)).collect();
    check_all("managed after unwinding", managed.as_slice().ctx("managed view")?, &want)?;

    // A panic in a pipeline's kernel closure at chunk 2, then the same pipeline again.
    let chunk = n / 8;
    let mut pipe = Pipeline::<u32, u32>::new(&c.gpu, 2, chunk).ctx("pipeline")?;
    let mut output = vec![0u32; n];
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        pipe.run(&data, &mut output, |st, input, out, ch| {
            if ch.index == 2 {
                panic!("hostile: a pipeline closure panics");
            }
            st.copy(input, out)
        })
    }));
    ensure(unwound.is_err(), || "the pipeline's panic did not unwind".into())?;
    let mut output = vec![0u32; n];
    pipe.run(&data, &mut output, |st, input, out, _| st.copy(input, out)).ctx("pipeline again")?;
    check_all("pipeline after a panicking run", &output, &data)?;

    // A panic inside `capture_stdout`: standard output is restored, the next capture works.
    let unwound = catch_unwind(|| cohort_runtime::capture_stdout(|| panic!("hostile: panic in a capture")));
    ensure(unwound.is_err(), || "the capture's panic did not unwind".into())?;
    let ((), text) = cohort_runtime::capture_stdout(|| println!("after the panic")).ctx("capture")?;
    ensure(text.contains("after the panic"), || format!("capture after a panicking capture: {text:?}"))
}

// Forgetting views that have no `Drop` is the attempt itself.
#[allow(clippy::forget_non_drop)]
fn forget_and_drop(c: &Ctx) -> TestResult {
    let mut r = rng("hostile_forget_and_drop");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Device side: a `memcpy_async` whose handle is dropped instead of waited for.
    let threads = c.pick(64usize * 256, 4 * 256);
    let src: Vec<u32> = (0..4 * threads).map(|_| r.random()).collect();
    let d = c.gpu.upload(&src).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0u32; threads]).ctx("alloc")?;
    let kern = k::hostile_drop_async_copy::load(&c.tests).ctx("load")?;
    for round in 0..c.pick(20, 2) {
        kern.launch(&s, LaunchConfig::for_elements(threads, 256), &d, &mut out).ctx("launch")?;
        let want: Vec<u32> = src.chunks(4).map(|w| w.iter().fold(0u32, |a, v| a.wrapping_add(*v))).collect();
        check_all(
            &format!("round {round}: each thread's words after dropping its copy"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    // Host side: forgetting views, buffers, streams and events leaks them, nothing else.
    let n = 4096usize;
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let mut buf = c.gpu.upload(&data).ctx("upload")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    {
        let view = buf.slice_mut(..n / 2);
        std::mem::forget(view);
    }
    fill.launch(&s, LaunchConfig::for_elements(n / 2, 256), 3, buf.slice_mut(..n / 2)).ctx("launch after forget")?;
    let mut want = data.clone();
    for (i, w) in want[..n / 2].iter_mut().enumerate() {
        *w = 3 + i as u32;
    }
    check_all("a buffer after one of its views was forgotten", &buf.to_vec().ctx("read")?, &want)?;
    let mut pinned = c.gpu.pinned_from(&data).ctx("pinned")?;
    std::mem::forget(pinned.slice_mut(..));
    s.copy(&buf, &mut pinned).ctx("copy after forgetting a view")?;
    check_all("pinned after a forgotten view", pinned.as_slice().ctx("view")?, &want)?;
    // A buffer with a kernel still pending, forgotten: leaked, the kernel unaffected.
    let mut leaked = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 9, &mut leaked).ctx("launch")?;
    std::mem::forget(leaked);
    std::mem::forget(c.gpu.new_stream().ctx("stream")?);
    std::mem::forget(Event::new(&c.gpu).ctx("event")?);
    s.synchronize().ctx("synchronize after forgetting")
}

// ---------------------------------------------------------------------------------------------
// Send, Sync and threads

/// `T: Send + Sync`.
fn shared_between_threads<T: Send + Sync + ?Sized>() {}

/// Fails to compile (an ambiguous impl) when `T: Send`: a token that proves a thread owns
/// something must not move to another thread.
trait NotSend<A> {
    fn check() {}
}
impl<T: ?Sized> NotSend<()> for T {}
impl<T: ?Sized + Send> NotSend<u8> for T {}

/// Fails to compile when `T: Sync`.
trait NotSync<A> {
    fn check() {}
}
impl<T: ?Sized> NotSync<()> for T {}
impl<T: ?Sized + Sync> NotSync<u8> for T {}

fn send_sync(c: &Ctx) -> TestResult {
    use cohort_runtime::*;
    // Every runtime handle may be used from any thread (each is internally synchronized).
    shared_between_threads::<Gpu>();
    shared_between_threads::<Stream>();
    shared_between_threads::<Event>();
    shared_between_threads::<Module>();
    shared_between_threads::<Function>();
    shared_between_threads::<DeviceBuffer<u32>>();
    shared_between_threads::<DeviceView<'static, u32>>();
    shared_between_threads::<DeviceViewMut<'static, u32>>();
    shared_between_threads::<Graph>();
    shared_between_threads::<GraphExec>();
    shared_between_threads::<PinnedBuffer<u32>>();
    shared_between_threads::<PinnedView<'static, u32>>();
    shared_between_threads::<PinnedViewMut<'static, u32>>();
    shared_between_threads::<Registered<'static, u32>>();
    shared_between_threads::<ManagedBuffer<u32>>();
    shared_between_threads::<MemPool>();
    shared_between_threads::<AppendBuffer<u32>>();
    shared_between_threads::<GridVecBuffer<u32>>();
    shared_between_threads::<MultiGrid>();
    shared_between_threads::<MultiGridVecBuffer<u32>>();
    shared_between_threads::<Symbol<u32>>();
    shared_between_threads::<Pipeline<u32, u32>>();
    shared_between_threads::<MatrixMut<'static, u32>>();
    shared_between_threads::<MatrixRef<'static, u32>>();
    shared_between_threads::<k::hostile_fill>();
    // A communicator is used by one thread at a time (NCCL's rule): Send, not Sync.
    fn sendable<T: Send>() {}
    sendable::<nccl::Comm>();
    <nccl::Comm as NotSync<_>>::check();
    // Raw device pointers are for `unsafe` kernels only: neither.
    <DevicePtr<u32> as NotSend<_>>::check();
    <DevicePtrMut<u32> as NotSend<_>>::check();
    // What proves that a thread owns an element, or hands out such proofs, stays on its thread
    // (on the CPU device a kernel may use `std`: a `Send` token could cross to another kernel
    // thread through a `static Mutex`, and two threads would write one element).
    use cohort::cg::GridVec;
    use cohort::cg::{MultiGridIndex, MultiGridStride, MultiGridVec};
    use cohort::slice::{AppendSlice, DisjointSlice, ThreadIndex};
    use cohort::thread::GridStride;
    <ThreadIndex as NotSend<_>>::check();
    <ThreadIndex<cohort::slice::PerBlock> as NotSend<_>>::check();
    <GridStride as NotSend<_>>::check();
    <GridStride as NotSync<_>>::check();
    <MultiGridIndex as NotSend<_>>::check();
    <MultiGridIndex as NotSync<_>>::check();
    <MultiGridStride as NotSend<_>>::check();
    <MultiGridStride as NotSync<_>>::check();
    <DisjointSlice<'static, u32> as NotSend<_>>::check();
    <AppendSlice<'static, u32> as NotSend<_>>::check();
    <GridVec<'static, u32> as NotSend<_>>::check();
    <MultiGridVec<'static, u32> as NotSend<_>>::check();
    <cohort::mutex::MutexGuard<'static, cohort::atomic::Global> as NotSend<_>>::check();

    // And at run time: one launcher, one module, one event shared by 4 threads, each with its
    // own stream and output, one input buffer read by all.
    let n = c.pick(1usize << 18, 1 << 12);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let outs: Vec<Result<Vec<u32>, String>> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..4u32)
            .map(|t| {
                let (fill, gpu) = (&fill, &c.gpu);
                scope.spawn(move || -> Result<Vec<u32>, String> {
                    let s = gpu.new_stream().ctx("stream")?;
                    let mut out = gpu.zeroed::<u32>(n).ctx("alloc")?;
                    for round in 0..5 {
                        fill.launch(&s, LaunchConfig::for_elements(n, 256), 100 * t + round, &mut out).ctx("launch")?;
                    }
                    out.to_vec().ctx("read")
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    for (t, got) in outs.into_iter().enumerate() {
        let want: Vec<u32> = (0..n as u32).map(|i| (100 * t as u32 + 4).wrapping_add(i)).collect();
        check_all(&format!("thread {t}"), &got?, &want)?;
    }
    Ok(())
}

fn graph_threads(c: &Ctx) -> TestResult {
    let n = 1usize << 16;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut bufs: Vec<_> = (0..8).map(|_| c.gpu.zeroed::<u32>(n)).collect::<Result<_, _>>().ctx("alloc")?;
    let graph = s
        .capture(|s| {
            for (b, buf) in bufs.iter_mut().enumerate() {
                fill.launch(s, LaunchConfig::for_elements(n, 256), 1000 * b as u32, buf)?;
            }
            Ok(())
        })
        .ctx("capture")?;
    let exec = graph.instantiate().ctx("instantiate")?;
    // Eight threads instantiate the one graph and replay the one instance, each on its own
    // stream, at once: the driver forbids concurrent use of one graph (or instance), so the
    // handles must serialize it themselves.
    let results: Vec<TestResult> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (graph, exec, gpu) = (&graph, &exec, &c.gpu);
                scope.spawn(move || -> TestResult {
                    let st = gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
                    for _ in 0..20 {
                        let own = graph.instantiate().ctx("instantiate")?;
                        own.launch(&st).ctx("replay own instance")?;
                        exec.launch(&st).ctx("replay shared instance")?;
                        ensure(graph.node_count().ctx("count")? == 8, || "node count".into())?;
                    }
                    st.synchronize().ctx("synchronize")
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    for r in results {
        r?;
    }
    for (b, buf) in bufs.iter().enumerate() {
        let want: Vec<u32> = (0..n as u32).map(|i| (1000 * b as u32).wrapping_add(i)).collect();
        check_all(&format!("buffer {b} after concurrent replays"), &buf.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// A module of its own (so that dropping it unloads it): the test kernels again.
fn own_module(c: &Ctx) -> Result<Module, String> {
    c.gpu.load_with(&cohort_test_kernels::PTX, LoadOptions::new().threads_per_block(512)).ctx("load module")
}

fn module_dropped(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 16, 1 << 10);
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    {
        let module = own_module(c)?;
        let slow = k::hostile_slow::load(&module).ctx("load")?;
        // Runs for 300 ms on a GPU: the module and its launcher are gone long before it ends.
        slow.launch(&s, LaunchConfig::for_elements(n, 256), c.pick(300_000_000u64, 1_000_000), 21, &mut out)
            .ctx("launch")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 21u32.wrapping_add(i)).collect();
    check_all("written by a kernel whose module was dropped while it ran", &out.to_vec().ctx("read")?, &want)?;
    // The device is still healthy: the shared module's kernels run.
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    fill.launch(&s, LaunchConfig::for_elements(n, 256), 5, &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..n as u32).map(|i| 5u32.wrapping_add(i)).collect();
    check_all("after", &out.to_vec().ctx("read")?, &want)
}

fn graph_outlives_module(c: &Ctx) -> TestResult {
    let n = 1usize << 16;
    let s = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let exec = {
        let module = own_module(c)?;
        let fill = k::hostile_fill::load(&module).ctx("load")?;
        let graph = s.capture(|s| fill.launch(s, LaunchConfig::for_elements(n, 256), 77, &mut out)).ctx("capture")?;
        graph.instantiate().ctx("instantiate")?
        // The module, its launcher and the graph are dropped here; the instance stays.
    };
    out.fill_zero().ctx("zero")?;
    for _ in 0..3 {
        exec.launch(&s).ctx("replay after the module was dropped")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 77u32.wrapping_add(i)).collect();
    check_all("replayed from a dropped module", &out.to_vec().ctx("read")?, &want)
}

// ---------------------------------------------------------------------------------------------
// Processes and signals

/// A child process's launch on its own device (the CPU device, or the GPU).
fn tiny_launch_child() -> Result<(), String> {
    let (gpu, tests) = child_ctx()?;
    let fill = k::hostile_fill::load(&tests).ctx("load")?;
    let mut out = gpu.zeroed::<u32>(1000).ctx("alloc")?;
    fill.launch(gpu.stream(), LaunchConfig::for_elements(1000, 128), 17, &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..1000u32).map(|i| 17 + i).collect();
    check_all("child", &out.to_vec().ctx("read")?, &want)?;
    println!("CHILD OK");
    Ok(())
}

fn spawn_while_launching(c: &Ctx) -> TestResult {
    // There is no safe `fork` (std spawns children with fork+exec or posix_spawn; `pre_exec` is
    // `unsafe`): what safe code can do is start processes while kernels, pinned memory and
    // streams are in use, and have them use the device too.
    let n = c.pick(1usize << 20, 1 << 12);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let launched: TestResult = std::thread::scope(|scope| {
        let worker = scope.spawn(|| -> TestResult {
            let s = c.gpu.new_stream().ctx("stream")?;
            let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
            let mut host = c.gpu.pinned::<u32>(n).ctx("pinned")?;
            let mut round = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || round < 3 {
                fill.launch(&s, LaunchConfig::for_elements(n, 256), round, &mut out).ctx("launch")?;
                s.copy(&out, &mut host).ctx("copy")?;
                let want: Vec<u32> = (0..n as u32).map(|i| round.wrapping_add(i)).collect();
                check_all(&format!("round {round}"), host.as_slice().ctx("view")?, &want)?;
                round += 1;
            }
            Ok(())
        });
        let mut spawned = Ok(());
        for _ in 0..3 {
            match run_child("tiny-launch", Duration::from_secs(120)) {
                Ok((Some(st), text)) if st.success() && text.contains("CHILD OK") => {}
                Ok((st, text)) => {
                    spawned = Err(format!("child ({st:?}):\n{text}"));
                    break;
                }
                Err(e) => {
                    spawned = Err(e);
                    break;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let worked = worker.join().unwrap_or_else(|_| Err("the launching thread panicked".into()));
        spawned.and(worked)
    });
    launched
}

fn stop_signals(c: &Ctx) -> TestResult {
    // No safe API installs a signal handler; what safe code can do to its own process is have
    // another process stop and continue it (SIGSTOP/SIGCONT) while kernels run and the host
    // waits, which interrupts blocking calls on Linux.
    let pid = std::process::id().to_string();
    let script = "for i in 1 2 3 4 5 6 7 8; do kill -STOP $1; sleep 0.03; kill -CONT $1; sleep 0.03; done";
    let Ok(mut stopper) = Command::new("sh").args(["-c", script, "stopper", &pid]).spawn() else {
        println!("no `sh` here: not run");
        return Ok(());
    };
    let n = c.pick(1usize << 20, 1 << 14);
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, c.gpu.new_stream().ctx("stream")?);
    let mut a = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut b = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut host = c.gpu.pinned::<u32>(n).ctx("pinned")?;
    let started = Instant::now();
    let mut round = 0u32;
    while started.elapsed() < Duration::from_millis(700) || round < 5 {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), round, &mut a).ctx("launch")?;
        s2.copy(&a, &mut b).ctx("copy on another stream")?;
        s2.copy(&b, &mut host).ctx("copy to pinned")?;
        let want: Vec<u32> = (0..n as u32).map(|i| round.wrapping_add(i)).collect();
        check_all(&format!("round {round}"), host.as_slice().ctx("view")?, &want)?;
        round += 1;
    }
    let _ = stopper.wait();
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Memory exhaustion, sizes

/// The operations that allocate, each asked for `bytes` bytes: each must be an `Err` (or, on a
/// GPU with room, `Ok`) and never abort the process.
fn allocations(c: &Ctx, s: &Stream, pool: &MemPool, bytes: usize) -> Vec<(&'static str, Result<(), Error>)> {
    vec![
        ("Gpu::zeroed", c.gpu.zeroed::<u8>(bytes).map(drop)),
        ("Stream::alloc_zeroed", s.alloc_zeroed::<u8>(bytes).map(drop)),
        ("MemPool::alloc_zeroed", pool.alloc_zeroed::<u8>(s, bytes).map(drop)),
        ("ManagedBuffer::new", ManagedBuffer::<u8>::new(&c.gpu, bytes).map(drop)),
        ("Gpu::pinned", c.gpu.pinned::<u8>(bytes).map(drop)),
        ("AppendBuffer::new", AppendBuffer::<u8>::new(&c.gpu, bytes).map(drop)),
        ("GridVecBuffer::zeroed", GridVecBuffer::<u8>::zeroed(&c.gpu, bytes).map(drop)),
    ]
}

fn out_of_memory(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 20, 1 << 12);
    let s1 = c.gpu.new_stream().ctx("stream")?;
    let s2 = c.gpu.new_stream().ctx("stream")?;
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let mut a = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut b = pool.alloc_zeroed::<u32>(&s1, n).ctx("pool alloc")?;
    let used = pool.used_bytes().ctx("used")?;
    // Pending work on both buffers when the allocations fail.
    fill.launch(&s1, LaunchConfig::for_elements(n, 256), 1, &mut a).ctx("launch")?;
    fill.launch(&s2, LaunchConfig::for_elements(n, 256), 2, &mut b).ctx("launch")?;
    // More than any device has (1 PiB): refused everywhere, nothing half-made.
    for (what, r) in allocations(c, &s1, &pool, 1usize << 50) {
        match r {
            Err(e) => println!("{what} of 1 PiB: {e}"),
            Ok(()) => return Err(format!("{what} of 1 PiB succeeded")),
        }
    }
    ensure(pool.used_bytes().ctx("used")? == used, || "a refused pool allocation is counted as used".into())?;
    // On a GPU, also fill the memory for real, then work while nothing more fits.
    let mut hog = Vec::new();
    if !c.is_cpu() {
        while hog.len() < 1024 {
            match c.gpu.zeroed::<u8>(1 << 30) {
                Ok(h) => hog.push(h),
                Err(e) => {
                    println!("device full after {} GiB: {e}", hog.len());
                    break;
                }
            }
        }
        for (what, r) in allocations(c, &s1, &pool, 1 << 30) {
            println!("{what} of 1 GiB on a full device: {r:?}");
        }
    }
    // Whatever failed, the tracker orders the work on the live buffers across streams (on a
    // full device an operation may itself be refused: then it is tried again once memory is
    // back, and nothing it should have done may be missing).
    let copied = s2.copy(&a, &mut b);
    let launched = copied.as_ref().map_err(|_| ()).and_then(|()| {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 3, &mut a)
            .map_err(|e| println!("launch on a full device: {e}"))
    });
    if let Err(e) = &copied {
        println!("copy across streams on a full device: {e}");
    }
    drop(hog);
    if copied.is_err() {
        s2.copy(&a, &mut b).ctx("copy across streams after freeing")?;
    }
    if launched.is_err() {
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 3, &mut a).ctx("launch after freeing")?;
    }
    let want_b: Vec<u32> = (0..n as u32).map(|i| 1 + i).collect();
    let want_a: Vec<u32> = (0..n as u32).map(|i| 3 + i).collect();
    check_all("b (copied from a across streams)", &b.to_vec().ctx("read b")?, &want_b)?;
    check_all("a", &a.to_vec().ctx("read a")?, &want_a)?;
    // And once memory is back, every allocation works.
    for (what, r) in allocations(c, &s1, &pool, 1 << 20) {
        r.map_err(|e| format!("{what} of 1 MiB after freeing: {e}"))?;
    }
    drop(b);
    s1.synchronize().ctx("synchronize")?;
    ensure(pool.used_bytes().ctx("used")? <= used, || "pool bytes leaked".into())
}

fn overflowing_sizes(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let pool = MemPool::new(&c.gpu).ctx("pool")?;
    let refused = |what: &str, r: Result<(), Error>| -> TestResult {
        match r {
            Err(e) => {
                println!("{what}: {e}");
                Ok(())
            }
            Ok(()) => Err(format!("{what} succeeded")),
        }
    };
    let huge = usize::MAX / 4 + 1;
    refused("zeroed::<u64>(usize::MAX / 4 + 1)", c.gpu.zeroed::<u64>(huge).map(drop))?;
    refused("upload of ZSTs is fine, pinned::<u64> is not", c.gpu.pinned::<u64>(huge).map(drop))?;
    refused("ManagedBuffer::<u64>::new", ManagedBuffer::<u64>::new(&c.gpu, huge).map(drop))?;
    refused("Stream::alloc_zeroed::<u64>", s.alloc_zeroed::<u64>(huge).map(drop))?;
    refused("MemPool::alloc_zeroed::<u64>", pool.alloc_zeroed::<u64>(&s, huge).map(drop))?;
    refused("AppendBuffer::<u64>::new", AppendBuffer::<u64>::new(&c.gpu, usize::MAX).map(drop))?;
    refused("GridVecBuffer::<u64>::zeroed", GridVecBuffer::<u64>::zeroed(&c.gpu, usize::MAX).map(drop))?;
    let mut small = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    refused("as_matrix(usize::MAX, 3)", small.as_matrix(usize::MAX, 3).map(drop))?;
    refused("as_matrix_mut(3, usize::MAX)", small.as_matrix_mut(3, usize::MAX).map(drop))?;
    // Launch shapes past every limit: errors before anything runs.
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    let shapes: [(&str, LaunchConfig); 6] = [
        ("grid of u32::MAX^3 blocks", LaunchConfig::new((u32::MAX, u32::MAX, u32::MAX), 1u32)),
        ("grid of 0 blocks", LaunchConfig::new(0u32, 64u32)),
        ("block of 0 threads", LaunchConfig::new(1u32, (0u32, 1u32, 1u32))),
        ("block of u32::MAX threads", LaunchConfig::new(1u32, u32::MAX)),
        ("u32::MAX bytes of dynamic shared memory", LaunchConfig::new(1u32, 64u32).with_shared_mem(u32::MAX)),
        ("for_elements(usize::MAX)", LaunchConfig::for_elements(usize::MAX, 256)),
    ];
    for (what, cfg) in shapes {
        let t = Instant::now();
        refused(what, fill.launch(&s, cfg, 0, &mut small))?;
        ensure(t.elapsed() < Duration::from_secs(5), || format!("{what}: refused only after {:?}", t.elapsed()))?;
    }
    // A slice longer than 2^32 elements reaches the kernel whole (zero-sized elements: no memory).
    let len = (1usize << 32) + 7;
    let units = c.gpu.upload(&vec![(); len]).ctx("upload units")?;
    let mut seen = c.gpu.zeroed::<u64>(64).ctx("alloc")?;
    k::hostile_lengths::load(&c.tests).ctx("load")?.launch(&s, (1u32, 64u32), &units, &mut seen).ctx("launch")?;
    check_all("length seen by the kernel", &seen.to_vec().ctx("read")?, &[len as u64; 64])
}

fn zero_lengths(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
    // A zero-length output: every `set` is out of range, nothing written anywhere.
    let mut empty = c.gpu.zeroed::<u32>(0).ctx("alloc 0")?;
    fill.launch(&s, (4u32, 64u32), 1, &mut empty).ctx("launch into 0 elements")?;
    ensure(empty.to_vec().ctx("read")?.is_empty(), || "empty".into())?;
    // An empty view in the middle of a buffer: its neighbours untouched.
    let mut buf = c.gpu.upload(&[5u32; 16]).ctx("upload")?;
    fill.launch(&s, (1u32, 64u32), 1, buf.slice_mut(8..8)).ctx("launch into an empty view")?;
    check_all("neighbours of an empty view", &buf.to_vec().ctx("read")?, &[5u32; 16])?;
    // Copies and fills of nothing, casts of nothing.
    let mut other = c.gpu.zeroed::<u32>(0).ctx("alloc 0")?;
    s.copy(&empty, &mut other).ctx("copy 0 elements")?;
    s.fill(buf.slice_mut(3..3), 9u32).ctx("fill 0 elements")?;
    s.fill_bytes(&mut other, 0xff).ctx("fill_bytes 0 elements")?;
    ensure(empty.slice(..).cast::<u64>().is_some_and(|v| v.is_empty()), || "cast of nothing".into())?;
    let mut pinned = c.gpu.pinned::<u32>(0).ctx("pinned 0")?;
    s.copy(&empty, &mut pinned).ctx("copy into 0 pinned")?;
    ensure(pinned.as_slice().ctx("view")?.is_empty(), || "pinned".into())?;
    let mut managed = ManagedBuffer::<u32>::new(&c.gpu, 0).ctx("managed 0")?;
    fill.launch(&s, (1u32, 64u32), 1, &mut managed).ctx("launch into 0 managed")?;
    ensure(managed.as_mut_slice().ctx("view")?.is_empty(), || "managed".into())?;
    let mut nothing: Vec<u32> = Vec::new();
    c.gpu
        .with_registered(&mut nothing, |reg| s.copy(&empty, reg))
        .ctx("register nothing")?
        .ctx("copy into nothing registered")?;
    // An append buffer with no room: every push is counted, none kept.
    let mut hits = AppendBuffer::<u32>::new(&c.gpu, 0).ctx("append 0")?;
    k::hostile_push::load(&c.tests).ctx("load")?.launch(&s, (2u32, 64u32), 100, &mut hits).ctx("launch")?;
    ensure(hits.pushed().ctx("pushed")? == 100, || "pushes not counted".into())?;
    ensure(hits.to_vec().ctx("read")?.is_empty(), || "kept a push without room".into())?;
    check_all("untouched", &buf.to_vec().ctx("read")?, &[5u32; 16])
}

// ---------------------------------------------------------------------------------------------
// Re-entrance, dropped handles, split bodies

/// What a call inside a host function returned: its name and its error's text.
type Outcome = (&'static str, Result<(), String>);

fn host_fn_reentrancy(c: &Ctx) -> TestResult {
    let gpu = c.gpu.clone();
    let s = Arc::new(c.gpu.new_stream().ctx("stream")?);
    let other = c.gpu.new_stream().ctx("stream")?;
    let fill = Arc::new(k::hostile_fill::load(&c.tests).ctx("load")?);
    let mut moved = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    fill.launch(&s, (1u32, 256u32), 4, &mut moved).ctx("launch")?;
    let dropped_stream = c.gpu.new_stream().ctx("stream")?;
    let event = Event::new(&c.gpu).ctx("event")?;
    let seen: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let (s2, log) = (s.clone(), seen.clone());
    s.host_fn(move || {
        let mut out = match gpu.zeroed::<u32>(256) {
            Ok(b) => Some(b),
            Err(e) => {
                log.lock().unwrap().push(("Gpu::zeroed", Err(e.to_string())));
                None
            }
        };
        let note = |what: &'static str, r: cohort_runtime::Result<()>| {
            log.lock().unwrap().push((what, r.map_err(|e| e.to_string())));
        };
        note("Stream::synchronize (its own stream)", s2.synchronize());
        note("Stream::synchronize (another stream)", other.synchronize());
        if let Some(out) = out.as_mut() {
            note("launch", fill.launch(&other, (1u32, 256u32), 1, out));
        }
        note("DeviceBuffer::to_vec", moved.to_vec().map(drop));
        note("Event::record", event.record(&other));
        note("Event::synchronize", event.synchronize());
        note("Gpu::new_stream", gpu.new_stream().map(drop));
        note("Gpu::synchronize", gpu.synchronize());
        let mut v = vec![0u32; 16];
        note("Gpu::with_registered", gpu.with_registered(&mut v, |_| ()));
        // Dropped here, inside the host function: leaked, not freed (no CUDA call, no wait).
        drop(moved);
        drop(dropped_stream);
    })
    .ctx("host_fn")?;
    let t = Instant::now();
    s.synchronize().ctx("synchronize")?;
    ensure(t.elapsed() < Duration::from_secs(30), || "the host function deadlocked".into())?;
    let seen = seen.lock().unwrap();
    ensure(seen.len() >= 9, || format!("the host function ran {} of its calls", seen.len()))?;
    for (what, r) in seen.iter() {
        match r {
            Err(m) if m.contains("inside a host function") => println!("{what}: {m}"),
            other => return Err(format!("{what} inside a host function: {other:?}")),
        }
    }
    Ok(())
}

fn dropped_handles(c: &Ctx) -> TestResult {
    let n = c.pick(1usize << 16, 1 << 10);
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    // A stream dropped with a slow kernel queued on it.
    {
        let s2 = c.gpu.new_stream().ctx("stream")?;
        let slow = k::hostile_slow::load(&c.tests).ctx("load")?;
        slow.launch(&s2, LaunchConfig::for_elements(n, 256), c.pick(100_000_000u64, 1_000_000), 8, &mut out)
            .ctx("launch")?;
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 8 + i).collect();
    check_all("written on a dropped stream", &out.to_vec().ctx("read")?, &want)?;
    // Every handle of the device dropped while a buffer lives: the buffer still works.
    let kept = {
        let gpu = c.gpu.clone();
        let module = own_module(c)?;
        let fill = k::hostile_fill::load(&module).ctx("load")?;
        let s = gpu.new_stream().ctx("stream")?;
        let mut b = gpu.zeroed::<u32>(n).ctx("alloc")?;
        fill.launch(&s, LaunchConfig::for_elements(n, 256), 6, &mut b).ctx("launch")?;
        b
    };
    let want: Vec<u32> = (0..n as u32).map(|i| 6 + i).collect();
    check_all("a buffer whose device handles are gone", &kept.to_vec().ctx("read")?, &want)?;
    // An event recorded on a stream that is then dropped: other streams and the host can still
    // wait for it.
    let event = Event::new(&c.gpu).ctx("event")?;
    {
        let s1 = c.gpu.new_stream().ctx("stream")?;
        let fill = k::hostile_fill::load(&c.tests).ctx("load")?;
        fill.launch(&s1, LaunchConfig::for_elements(n, 256), 2, &mut out).ctx("launch")?;
        s1.record(&event).ctx("record")?;
    }
    let s3 = c.gpu.new_stream().ctx("stream")?;
    s3.wait(&event).ctx("wait for an event of a dropped stream")?;
    event.synchronize().ctx("host wait for it")?;
    s3.synchronize().ctx("synchronize")?;
    // Timing events that were never recorded, or cannot time: errors, not hangs.
    let (e1, e2) = (Event::new(&c.gpu).ctx("event")?, Event::new(&c.gpu).ctx("event")?);
    match e2.elapsed_ms_since(&e1) {
        Err(e) => println!("elapsed between unrecorded events: {e}"),
        Ok(ms) => println!("elapsed between unrecorded events: {ms} ms (accepted by this device)"),
    }
    let u = Event::untimed(&c.gpu).ctx("untimed")?;
    s3.record(&u).ctx("record")?;
    s3.record(&e1).ctx("record")?;
    ensure(e1.elapsed_ms_since(&u).is_err(), || "timing an untimed event".into())?;
    // Two handles of the CPU device (or two opens of one GPU): their streams and events mix.
    let again = if c.is_cpu() { Gpu::cpu() } else { Gpu::from_env() }.ctx("open again")?;
    let s4 = again.new_stream().ctx("stream")?;
    match s4.wait(&event) {
        Ok(()) => println!("a second handle's stream waits for the first's event"),
        Err(e) => println!("a second handle's stream and the first's event: {e}"),
    }
    let want: Vec<u32> = (0..n as u32).map(|i| 2 + i).collect();
    check_all("after the waits", &out.to_vec().ctx("read")?, &want)
}

fn split_body(c: &Ctx) -> TestResult {
    let kern = k::hostile_split_body::load(&c.tests).ctx("load (one ABI on both sides)")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    let r = kern.launch(&s, (2u32, 128u32), &mut out);
    if c.is_cpu() {
        // The CPU device runs the host body, on the fast path its PTX allowed: the barrier the
        // PTX does not have is an error, not a barrier that meets nobody.
        match r {
            Err(e) => {
                let msg = e.to_string();
                println!("{msg}");
                ensure(msg.contains("fast-path"), || format!("unexpected error: {msg}"))
            }
            Ok(()) => Err("a barrier ran on the fast path".into()),
        }
    } else {
        r.ctx("launch")?;
        let want: Vec<u32> = (0..256u32).map(|i| 7 + i).collect();
        check_all("device body", &out.to_vec().ctx("read")?, &want)
    }
}

// ---------------------------------------------------------------------------------------------
// Standard output captures

fn capture_nested_child() -> Result<(), String> {
    let r = cohort_runtime::capture_stdout(|| cohort_runtime::capture_stdout(|| println!("inner")));
    match r {
        Ok((Err(e), _)) => {
            eprintln!("NESTED CAPTURE REFUSED: {e}");
            Ok(())
        }
        Ok((Ok(_), _)) => Err("a capture inside a capture succeeded".into()),
        Err(e) => Err(format!("the outer capture failed: {e}")),
    }
}

fn nested_capture() -> TestResult {
    let (status, text) = run_child("capture-nested", Duration::from_secs(60))?;
    let Some(status) = status else {
        return Err(format!("capture_stdout inside capture_stdout hung (killed after 60 s):\n{text}"));
    };
    ensure(status.success() && text.contains("NESTED CAPTURE REFUSED"), || format!("child ({status}):\n{text}"))
}
