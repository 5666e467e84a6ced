//! The runtime's launch path: impossible configurations are `Err`s naming the kernel and the
//! limit (never a hang), cooperative checks, shared-memory opt-in, traps, helpers.

use cohort_kernels::{checks, tour};
use cohort_runtime::{Error, Gpu, LaunchConfig};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

/// Environment variable that makes the test binary run one child scenario and exit.
pub const CHILD_ENV: &str = "COHORT_TEST_CHILD";

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("launch_block_of_2048_threads_is_an_error", block_too_large),
        gpu_trial("launch_too_much_shared_memory_is_an_error", too_much_shared),
        gpu_trial("launch_bad_dimensions_are_errors", bad_dims),
        gpu_trial("launch_large_dynamic_shared_memory_opts_in", large_dynamic_shared),
        gpu_trial("launch_cooperative_grid_too_large_is_an_error", cooperative_too_large),
        gpu_trial("launch_cooperative_kernel_refuses_normal_launch", cooperative_needs_cooperative),
        gpu_trial("launch_unknown_kernel_is_an_error", unknown_kernel),
        gpu_trial("launch_config_helpers", config_helpers),
        gpu_trial("launch_many_streams", many_streams),
        gpu_trial("launch_device_trap_is_an_error_naming_where", trap),
        gpu_trial("launch_bounds_limit_the_block_and_reach_the_entry", launch_bounds),
        gpu_trial("launch_max_registers_caps_the_kernels_registers", max_registers),
    ]
}

fn expect_err(what: &str, r: Result<(), Error>, needles: &[&str]) -> Result<Error, String> {
    match r {
        Ok(()) => Err(format!("{what}: launched, expected an error")),
        Err(e) => {
            let msg = e.to_string();
            for n in needles {
                if !msg.contains(n) {
                    return Err(format!("{what}: error does not mention `{n}`: {msg}"));
                }
            }
            Ok(e)
        }
    }
}

fn block_too_large(c: &Ctx) -> TestResult {
    let k = tour::vector_add::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let a = c.gpu.upload(&[1.0f32; 64]).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(64).ctx("alloc")?;
    let e = expect_err("block 2048", k.launch(&s, (1u32, 2048u32), &a, &a, &mut out), &["vector_add", "2048", "1024"])?;
    ensure(matches!(e, Error::InvalidLaunch { .. }), || format!("wrong error kind: {e:?}"))?;
    // The stream is still usable.
    k.launch(&s, (1u32, 64u32), &a, &a, &mut out).ctx("launch after the refused one")?;
    check_all("after refusal", &out.to_vec().ctx("read")?, &[2.0f32; 64])
}

fn too_much_shared(c: &Ctx) -> TestResult {
    let k = checks::block_barrier_count::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    let limit = c.gpu.info().shared_per_block_optin.to_string();
    let cfg = LaunchConfig::new(1, 64).with_shared_mem(1 << 20);
    expect_err("1 MiB shared", k.launch(&s, cfg, &mut out), &["block_barrier_count", "shared memory", &limit])?;
    Ok(())
}

fn bad_dims(c: &Ctx) -> TestResult {
    let k = checks::block_barrier_count::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    expect_err("zero grid", k.launch(&s, (0u32, 64u32), &mut out), &["block_barrier_count", "0"])?;
    expect_err(
        "grid y too large",
        k.launch(&s, LaunchConfig::new((1, 70_000, 1), 32), &mut out),
        &["grid y", "65535"],
    )?;
    expect_err("block z too large", k.launch(&s, LaunchConfig::new(1, (1, 1, 128)), &mut out), &["block z", "64"])?;
    Ok(())
}

fn large_dynamic_shared(c: &Ctx) -> TestResult {
    let k = checks::block_barrier_count::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let bytes = (c.gpu.info().shared_per_block_optin - k.function().attributes().static_shared_bytes).min(100 * 1024);
    ensure(bytes > 48 * 1024, || format!("device opt-in limit too small to test ({bytes} B)"))?;
    let mut out = c.gpu.upload(&[u32::MAX; 256]).ctx("alloc")?;
    k.launch(&s, LaunchConfig::new(2, 128).with_shared_mem(bytes), &mut out).ctx("launch with > 48 KiB")?;
    let want = [(0..128).filter(|t| t % 3 == 0).count() as u32; 256];
    check_all("barrier count with large dynamic smem", &out.to_vec().ctx("read")?, &want)
}

fn cooperative_too_large(c: &Ctx) -> TestResult {
    let k = tour::neighbour_sums::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let per_sm = k.function().max_active_blocks_per_sm(256, 0).ctx("occupancy")?;
    let max = per_sm * c.gpu.info().sms;
    let data = c.gpu.upload(&[1u32; 1024]).ctx("upload")?;
    let mut published = c.gpu.zeroed::<u64>(max as usize + 1).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u64>(max as usize + 1).ctx("alloc")?;
    let r = k.launch_cooperative(&s, LaunchConfig::new(max + 1, 256), &data, &mut published, &mut out);
    let e = expect_err("grid of max + 1 blocks", r, &["neighbour_sums", &(max + 1).to_string(), &max.to_string()])?;
    ensure(matches!(e, Error::CooperativeTooLarge { .. }), || format!("wrong error kind: {e:?}"))?;
    // Exactly the maximum runs (and finishes: grid sync does not hang).
    k.launch_cooperative(&s, LaunchConfig::new(max, 256), &data, &mut published, &mut out).ctx("grid of max blocks")?;
    s.synchronize().ctx("sync")
}

fn cooperative_needs_cooperative(c: &Ctx) -> TestResult {
    let k = tour::neighbour_sums::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    ensure(k.function().is_cooperative(), || "neighbour_sums not marked cooperative".into())?;
    // SAFETY: no parameters are read: the launch is refused before reaching the driver.
    let r = unsafe { k.function().launch_raw(&s, LaunchConfig::new(1, 32), &mut []) };
    expect_err("normal launch of a grid-sync kernel", r, &["neighbour_sums", "launch_cooperative"])?;
    Ok(())
}

fn unknown_kernel(c: &Ctx) -> TestResult {
    match c.module.function("no_such_kernel", false) {
        Err(Error::KernelNotFound { name, .. }) if name == "no_such_kernel" => Ok(()),
        other => Err(format!("expected KernelNotFound, got {other:?}")),
    }
}

fn config_helpers(c: &Ctx) -> TestResult {
    let k = tour::vector_add::load(&c.module).ctx("load")?;
    let cfg = LaunchConfig::for_elements(1000, 256);
    ensure(cfg.grid.x == 4 && cfg.block.x == 256, || format!("for_elements: {cfg}"))?;
    let cfg = LaunchConfig::for_2d(100, 30, (16, 16));
    ensure((cfg.grid.x, cfg.grid.y, cfg.block.x, cfg.block.y) == (7, 2, 16, 16), || format!("for_2d: {cfg}"))?;
    let (_, block) = k.function().suggested_block_size(0).ctx("suggested")?;
    ensure((32..=1024).contains(&block) && block % 32 == 0, || format!("suggested block {block}"))?;
    let occ = k.function().config_for_elements(1 << 20).ctx("occupancy config")?;
    ensure(occ.total_threads() >= 1 << 20, || format!("occupancy config {occ}"))?;
    let p = k.function().persistent_config(256, 0).ctx("persistent")?;
    ensure(p.grid.x % c.gpu.info().sms == 0 && p.grid.x >= c.gpu.info().sms, || format!("persistent {p}"))
}

fn many_streams(c: &Ctx) -> TestResult {
    let mut r = rng("launch_many_streams");
    let k = tour::vector_add::load(&c.module).ctx("load")?;
    let n = c.pick(300_000, 100_003);
    let streams: Vec<_> = (0..4).map(|_| c.gpu.new_stream()).collect::<Result<_, _>>().ctx("streams")?;
    let mut jobs = Vec::new();
    for s in &streams {
        let a: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
        let b: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
        let (da, db) = (c.gpu.upload(&a).ctx("upload")?, c.gpu.upload(&b).ctx("upload")?);
        let mut out = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
        k.launch(s, LaunchConfig::for_elements(n, 256), &da, &db, &mut out).ctx("launch")?;
        jobs.push((a, b, out));
    }
    for s in &streams {
        s.synchronize().ctx("sync")?;
    }
    for (a, b, out) in jobs {
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        check_all("per-stream result", &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// A kernel that panics: on a GPU it traps, which ends the process's CUDA context, so it runs
/// in a child process ([`trap_scenario`]); on the CPU device, in this one ([`panic_on_cpu`]).
fn trap(c: &Ctx) -> TestResult {
    if c.is_cpu() { panic_on_cpu(c) } else { trap_in_child() }
}

/// On the CPU device a kernel panic is an `Err` from the launch itself (accepted from the next
/// synchronize too, as on a GPU) naming the kernel and where it panicked: file and line, block
/// and thread. It is not sticky: the same device computes correctly right after.
fn panic_on_cpu(c: &Ctx) -> TestResult {
    let k = checks::checked_read::load(&c.module).ctx("load kernel")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let data = c.gpu.upload(&[7u32; 10]).ctx("upload")?;
    let mut out = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    let r = k.launch(&s, (1u32, 64u32), &data, 1000, &mut out).and_then(|()| s.synchronize());
    let e = r.err().ok_or("an out-of-bounds read in a kernel did not fail")?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED: {msg}");
    ensure(matches!(e, Error::CpuKernel { .. } | Error::KernelFailed { .. }), || {
        format!("expected CpuKernel (or KernelFailed), got {e:?}")
    })?;
    for needle in ["checked_read", "panicked at", "checks.rs:", "block (0,0,0)", "thread ("] {
        ensure(msg.contains(needle), || format!("the error does not mention `{needle}`: {msg}"))?;
    }
    vector_add_check(&c.gpu).ctx("the CPU device right after the panic")?;
    println!("RECOVERED: the CPU device computes after a kernel panic");
    Ok(())
}

fn trap_in_child() -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = cohort_tests::output_within(std::process::Command::new(exe).env(CHILD_ENV, "trap"), 120)?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure(out.status.success(), || format!("child failed ({}):\n{text}", out.status))?;
    ensure(text.contains("ERROR AS RETURNED"), || format!("child did not report the error:\n{text}"))?;
    ensure(text.contains("RECOVERED") || text.contains("NOT RECOVERABLE IN-PROCESS"), || {
        format!("child did not finish:\n{text}")
    })?;
    println!(
        "{}",
        text.lines()
            .filter(|l| l.contains("RECOVER") || l.contains("context after") || l.contains("ERROR AS RETURNED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}

/// Runs child scenario `which` of this test binary in a process of its own (a GPU trap ends the
/// process's CUDA context), within 120 s: an `Err` with its output if it failed; else its output,
/// whose `ERROR AS RETURNED` lines (the errors the scenario checked) are printed.
pub fn run_child(which: &str) -> Result<String, String> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = cohort_tests::output_within(std::process::Command::new(exe).env(CHILD_ENV, which), 120)?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure(out.status.success(), || format!("child `{which}` failed ({}):\n{text}", out.status))?;
    println!("{}", text.lines().filter(|l| l.contains("ERROR AS RETURNED")).collect::<Vec<_>>().join("\n"));
    Ok(text)
}

/// Runs a child scenario; returns the exit status.
pub fn child(which: &str) -> i32 {
    let r = match which {
        "trap" => trap_scenario(),
        "leaks" => crate::streams::leak_scenario(),
        "mg-skip" | "mg-phase" => crate::multi_grid::child(which),
        "memcpy-local" | "memcpy-constant" => crate::shared::memcpy_child(which),
        w if w.starts_with("barrier-misuse-") => crate::async_barrier::misuse_child(w),
        w if w.starts_with("tma-misuse-") => crate::tma::misuse_child(w),
        w if w.starts_with("wgmma-misuse-") => crate::wgmma::misuse_child(w),
        w if w.starts_with("cluster-split-misuse-") => crate::cluster::split_misuse_child(w),
        w if w.starts_with("split-misuse-") => crate::split::misuse_child(w),
        other => Err(format!("unknown child scenario {other}")),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("child scenario `{which}` failed: {e}");
            1
        }
    }
}

/// A kernel panics (index out of bounds) in a context of its own: the error names the kernel
/// and where it panicked; then the process makes a fresh context and computes correctly.
fn trap_scenario() -> Result<(), String> {
    {
        let gpu = Gpu::isolated_from_env().ctx("isolated context")?; // COHORT_DEVICE's
        let module = gpu.load(&cohort_kernels::PTX).ctx("load")?;
        let k = checks::checked_read::load(&module).ctx("load kernel")?;
        let data = gpu.upload(&[7u32; 10]).ctx("upload")?;
        let mut out = gpu.zeroed::<u32>(64).ctx("alloc")?;
        k.launch(gpu.stream(), (1u32, 64u32), &data, 1000, &mut out).ctx("launch")?;
        match gpu.stream().synchronize() {
            Ok(()) => return Err("an out-of-bounds read in a kernel did not fail".into()),
            Err(e) => {
                let msg = e.to_string();
                println!("ERROR AS RETURNED: {msg}");
                if !matches!(e, Error::KernelFailed { .. }) {
                    return Err(format!("expected KernelFailed, got {e:?}"));
                }
                for needle in ["checked_read", "panicked at", "checks.rs", "block (0,0,0)"] {
                    if !msg.contains(needle) {
                        return Err(format!("error does not mention `{needle}`: {msg}"));
                    }
                }
            }
        }
        // The dead context reports errors, not hangs or crashes.
        if out.to_vec().is_ok() {
            return Err("reading from the failed context succeeded".into());
        }
    }
    // Whether CUDA lets this process compute again: try a fresh context of each kind.
    let mut last = String::new();
    for (what, make) in [("isolated", Gpu::isolated as fn(usize) -> cohort_runtime::Result<Gpu>), ("primary", Gpu::new)]
    {
        match make(0).and_then(|gpu| vector_add_check(&gpu)) {
            Ok(()) => {
                println!("RECOVERED with a fresh {what} context");
                return Ok(());
            }
            Err(e) => {
                println!("a fresh {what} context after the trap: {e}");
                last = e.to_string();
            }
        }
    }
    // CUDA documents these errors as leaving the process unable to use the device; what
    // matters is that every call says so as an `Err` instead of hanging or crashing.
    println!("NOT RECOVERABLE IN-PROCESS: {last}");
    Ok(())
}

fn vector_add_check(gpu: &Gpu) -> cohort_runtime::Result<()> {
    let module = gpu.load(&cohort_kernels::PTX)?;
    let k = tour::vector_add::load(&module)?;
    let a: Vec<f32> = (0..5000).map(|i| i as f32 * 0.5).collect();
    let da = gpu.upload(&a)?;
    let mut out = gpu.zeroed::<f32>(5000)?;
    k.launch(gpu.stream(), LaunchConfig::for_elements(5000, 256), &da, &da, &mut out)?;
    let want: Vec<f32> = a.iter().map(|x| x + x).collect();
    if out.to_vec()? != want {
        return Err(Error::Argument("wrong result after recovery".into()));
    }
    Ok(())
}

/// The PTX header of entry `name`: from its `.entry` line to the `{` that opens its body.
fn entry_header(ptx: &str, name: &str) -> Option<String> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let end = start + ptx[start..].find("\n{")?;
    Some(ptx[start..end].to_owned())
}

/// `#[kernel(launch_bounds(128, 4))]`: the entry carries `.maxntid 128, 1, 1` and
/// `.minnctapersm 4`, the kernel's limit is 128 threads on both devices, 128 runs, 129 is an
/// `Err` naming the kernel, the limit and why.
fn launch_bounds(c: &Ctx) -> TestResult {
    let k = checks::bounded_saxpy::load(&c.module).ctx("load")?;
    let header = entry_header(c.module.ptx().text(), "bounded_saxpy").ok_or("no bounded_saxpy entry")?;
    ensure(header.contains(".maxntid 128, 1, 1") && header.contains(".minnctapersm 4"), || header.clone())?;
    ensure(!header.contains(".maxnreg"), || header.clone())?;
    let limit = k.function().attributes().max_threads_per_block;
    ensure(limit == 128, || format!("the kernel's limit is {limit} threads, not its bound of 128"))?;
    let n = 1000usize;
    let mut r = rng("launch_bounds");
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-8i32..8) as f32 * 0.25).collect();
    let y0: Vec<f32> = (0..n).map(|_| r.random_range(-8i32..8) as f32 * 0.5).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let xd = c.gpu.upload(&x).ctx("upload")?;
    let mut yd = c.gpu.upload(&y0).ctx("upload")?;
    let e = expect_err(
        "a block of 129 threads",
        k.launch(&s, (8u32, 129u32), 3.0, &xd, &mut yd),
        &["bounded_saxpy", "129", "128", "launch bounds"],
    )?;
    ensure(matches!(e, Error::InvalidLaunch { .. }), || format!("wrong error kind: {e:?}"))?;
    // Nothing ran: y is as uploaded; then the bound itself runs.
    check_all("y after the refused launch", &yd.to_vec().ctx("read")?, &y0)?;
    k.launch(&s, (8u32, 128u32), 3.0, &xd, &mut yd).ctx("launch at the bound")?;
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| 3.0 * x + y).collect();
    check_all("saxpy", &yd.to_vec().ctx("read")?, &want)
}

/// `#[kernel(max_registers(24))]`: the entry carries `.maxnreg 24`; on a GPU the kernel uses at
/// most 24 registers per thread (ptxas gives it 32 without the cap); its results are every
/// element's.
fn max_registers(c: &Ctx) -> TestResult {
    let k = checks::capped_polynomials::load(&c.module).ctx("load")?;
    let header = entry_header(c.module.ptx().text(), "capped_polynomials").ok_or("no capped_polynomials entry")?;
    ensure(header.contains(".maxnreg 24") && !header.contains(".maxntid"), || header.clone())?;
    let regs = k.function().attributes().registers;
    ensure(regs <= 24, || format!("{regs} registers per thread under a cap of 24"))?;
    let n = 777usize;
    let mut r = rng("max_registers");
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-4i32..4) as f32 * 0.125).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let xd = c.gpu.upload(&x).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
    k.launch(&s, LaunchConfig::for_elements(n, 128), &xd, &mut out).ctx("launch")?;
    let want: Vec<f32> = x
        .iter()
        .map(|&v| {
            let (mut acc, mut p) = ([0.0f32; 16], 1.0f32);
            for _ in 0..8 {
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = *a * v + p * (k as f32 + 1.0);
                }
                p = p * 0.5 + v;
            }
            acc.iter().enumerate().map(|(k, a)| a * (k as f32 - 7.5)).fold(0.0, |s, t| s + t)
        })
        .collect();
    let got = out.to_vec().ctx("read")?;
    // The GPU may contract a * v + b into one fma where the reference rounds twice.
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        ensure((g - w).abs() <= 1e-3 * w.abs().max(1.0), || format!("element {i}: {g}, expected {w}"))?;
    }
    ensure(want.iter().any(|w| *w != 0.0), || "the reference is all zeros".into())
}
