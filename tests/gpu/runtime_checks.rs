//! The runtime's own checks on a GPU: after a kernel fails, every later error names it (in a
//! child process: CUDA accepts no more work in a process after a kernel fails); errors keep
//! their driver cause; run-time PTX text. (Device views are `memory.rs`'s.)

use std::process::Command;
use std::time::Duration;

use cohort_kernels::{checks, tour};
use cohort_runtime::{DeviceBuffer, Error, Event, Gpu, LaunchConfig, StreamOptions};
use cohort_test_kernels::globals::POLY;
use cohort_test_kernels::streams::add_in_place;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_trial};
use libtest_mimic::Trial;

/// Set in the child process that runs [`CHILD_TRIAL`] (and only it).
const CHILD_VAR: &str = "COHORT_RUNTIME_CHECKS_CHILD";
/// The trial the child runs: it kills the process's CUDA, so it is listed only in the child.
const CHILD_TRIAL: &str = "runtime_checks_child_after_a_trap";

/// Why the trap tests are GPU-only.
const STICKY: &str = "a trap ends the process's CUDA context, so every later call names the kernel; a failed \
                      kernel on the CPU device is not sticky (launch_device_trap_is_an_error_naming_where checks it)";

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        gpu_only_trial("runtime_checks_errors_after_a_trap_name_the_trapped_kernel", STICKY, after_a_trap_in_child),
        gpu_trial("runtime_checks_out_of_memory_is_a_driver_error_with_its_source", out_of_memory),
        gpu_only_trial(
            "runtime_checks_cpu_device_beside_a_gpu",
            "the CPU device beside a GPU in one process (a GPU needed)",
            cpu_beside_gpu,
        ),
        gpu_trial("runtime_checks_ptx_text_is_loaded_and_a_nul_inside_refused", ptx_text),
        gpu_only_trial(
            "runtime_checks_cpu_and_gpu_handles_never_mix",
            "the CPU device beside a GPU in one process (a GPU needed)",
            cpu_and_gpu_handles_never_mix,
        ),
        gpu_trial("runtime_checks_handles_of_one_device_mix_freely", one_device_handles),
        gpu_trial("runtime_checks_ptx_with_unnumbered_site_markers_is_refused", unnumbered_sites),
        gpu_trial("runtime_checks_ptx_with_unapplied_launch_bounds_is_refused", unapplied_launch_bounds),
        gpu_trial("runtime_checks_stack_and_printf_fifo_limits", limits),
    ];
    if std::env::var_os(CHILD_VAR).is_some() {
        trials.push(gpu_only_trial(CHILD_TRIAL, STICKY, after_a_trap));
    }
    trials
}

fn after_a_trap_in_child(_: &Ctx) -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = cohort_tests::output_within(
        Command::new(exe).args(["--exact", CHILD_TRIAL, "--test-threads=1"]).env(CHILD_VAR, "1"),
        120,
    )?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure(out.status.success() && text.contains("1 passed"), || format!("child failed ({}):\n{text}", out.status))?;
    // The child's messages stay in its captured output: they quote launch configurations
    // ("block 128 failed: …"), which a summary that counts "N failed" would misread.
    Ok(())
}

/// `e` is [`Error::KernelFailed`] naming `checked_read` (the kernel that trapped), how it was
/// launched, where it panicked, and `during` (the call refused now).
fn names_the_trap(what: &str, e: &Error, during: Option<&str>) -> TestResult {
    let msg = e.to_string();
    println!("AFTER THE TRAP, {what}: {msg}");
    let Error::KernelFailed { kernel, config, panic, during: got, .. } = e else {
        return Err(format!("{what}: expected KernelFailed, got {e:?}"));
    };
    ensure(kernel.as_deref() == Some("checked_read"), || format!("{what}: names kernel {kernel:?}: {msg}"))?;
    ensure(*config == Some(LaunchConfig::new(1, 64)), || format!("{what}: configuration {config:?}: {msg}"))?;
    let panic = panic.as_deref().unwrap_or_default();
    ensure(panic.contains("checks.rs") && panic.contains("block (0,0,0)"), || format!("{what}: panic {panic:?}"))?;
    let as_expected = match (got.as_deref(), during) {
        (None, None) => true,
        (Some(got), Some(want)) => got.contains(want),
        _ => false,
    };
    ensure(as_expected, || format!("{what}: during {got:?}, expected {during:?}"))?;
    for needle in ["checked_read", "grid 1 x block 64", "panicked at", "restart the process"] {
        ensure(msg.contains(needle), || format!("{what}: the message does not mention `{needle}`: {msg}"))?;
    }
    Ok(())
}

fn expect_err<T>(what: &str, r: cohort_runtime::Result<T>) -> Result<Error, String> {
    r.err().ok_or_else(|| format!("{what}: succeeded after the trap"))
}

/// In the child: a kernel traps on one stream while another kernel is launched on a second
/// stream (whose earlier work had finished). The wait that sees the failure names the kernel
/// that trapped (not the last one launched); every later call is refused naming it too: the
/// next launch, synchronizations, copies, allocations, new streams and new contexts.
fn after_a_trap(c: &Ctx) -> TestResult {
    let trap = checks::checked_read::load(&c.module).ctx("load checked_read")?;
    let add = tour::vector_add::load(&c.module).ctx("load vector_add")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, c.gpu.new_stream().ctx("stream")?);
    let a = c.gpu.upload(&[1.0f32; 256]).ctx("upload")?;
    let mut sum = c.gpu.zeroed::<f32>(256).ctx("alloc")?;
    // Work on s2 that finishes: not a suspect afterwards.
    add.launch(&s2, LaunchConfig::for_elements(256, 128), &a, &a, &mut sum).ctx("launch before the trap")?;
    s2.synchronize().ctx("sync before the trap")?;
    let data = c.gpu.upload(&[7u32; 10]).ctx("upload")?;
    let mut out = c.gpu.zeroed::<u32>(64).ctx("alloc")?;
    trap.launch(&s1, (1u32, 64u32), &data, 1000, &mut out).ctx("launch the trapping kernel")?;
    std::thread::sleep(Duration::from_millis(200));
    // The driver still accepts this launch (measured: driver 580); it never runs.
    let late = add.launch(&s2, (2u32, 128u32), &a, &a, &mut sum);
    println!("AFTER THE TRAP, a launch before any wait: {late:?}");
    match late {
        // The first wait reports the failure, naming the kernel that trapped, not the last one
        // launched (on the stream waited for, at that).
        Ok(()) => {
            let e = expect_err("the first wait", s2.synchronize())?;
            names_the_trap("the first wait", &e, None)?;
            let Error::KernelFailed { unfinished, .. } = e else { unreachable!() };
            ensure(unfinished == 2, || format!("the first wait: {unfinished} unfinished launches, expected 2"))?;
            ensure(e.to_string().contains("first of 2 launches not yet waited for"), || {
                format!("the first wait: {e}")
            })?;
        }
        Err(e) => names_the_trap("a launch before any wait", &e, Some("launching kernel `vector_add`"))?,
    }
    // Now the failure is known: the next launch is refused naming the kernel that trapped.
    let e = expect_err("the next launch", add.launch(&s2, (3u32, 128u32), &a, &a, &mut sum))?;
    names_the_trap("the next launch", &e, Some("launching kernel `vector_add` with grid 3 x block 128"))?;
    let e = expect_err("synchronizing the other stream", s2.synchronize())?;
    names_the_trap("synchronizing the other stream", &e, Some("synchronizing a stream"))?;
    let e = expect_err("synchronizing the stream", s1.synchronize())?;
    names_the_trap("synchronizing the stream", &e, Some("synchronizing a stream"))?;
    let e = expect_err("synchronizing the device", c.gpu.synchronize())?;
    names_the_trap("synchronizing the device", &e, Some("synchronizing the device"))?;
    let e = expect_err("reading back", out.to_vec())?;
    names_the_trap("reading back", &e, Some("copying device memory to the host"))?;
    let e = expect_err("writing", out.copy_from(&[0; 64]))?;
    names_the_trap("writing", &e, Some("copying host memory to the device"))?;
    let e = expect_err("allocating", DeviceBuffer::<u32>::zeroed(&c.gpu, 1024))?;
    names_the_trap("allocating", &e, Some("allocating 4096 B of device memory"))?;
    let e = expect_err("a new stream", c.gpu.new_stream())?;
    names_the_trap("a new stream", &e, Some("creating a stream"))?;
    let dev = c.gpu.info().ordinal; // COHORT_DEVICE's
    let e = expect_err("a new isolated context", Gpu::isolated(dev))?;
    names_the_trap("a new isolated context", &e, Some(&format!("creating a context on device {dev}")))?;
    // The primary context still exists (the shared `Ctx` holds it): retaining it may succeed,
    // using it does not.
    let e = expect_err("the primary context again", Gpu::new(dev).and_then(|g| g.zeroed::<u32>(4)))?;
    names_the_trap("the primary context again", &e, Some(""))?;
    Ok(())
}

fn out_of_memory(c: &Ctx) -> TestResult {
    let too_much = c.gpu.info().total_memory * 2;
    let e = expect_err("allocating twice the device's memory", c.gpu.zeroed::<u8>(too_much))?;
    // One error on both devices (a GPU's CUDA_ERROR_OUT_OF_MEMORY, the CPU device's refusal),
    // naming the allocation's size.
    let Error::OutOfMemory { what } = &e else { return Err(format!("expected Error::OutOfMemory, got {e:?}")) };
    ensure(what.contains(&too_much.to_string()), || format!("{e} does not name the {too_much} B asked for"))?;
    ensure(e.to_string().contains("out of device memory"), || e.to_string())?;
    // Not a sticky failure: the device still works.
    let a = c.gpu.upload(&[2.0f32; 100]).ctx("upload after the refusal")?;
    check_all("after an out-of-memory error", &a.to_vec().ctx("read")?, &[2.0f32; 100])
}

fn ptx_text(c: &Ctx) -> TestResult {
    let cc = c.gpu.info().cc();
    let m = cohort_kernels::PTX.select(cc).ok_or("no module for this device")?;
    ensure(m.as_c_str().to_bytes().len() == m.text().len(), || "the C string is not the text".into())?;
    let module = c.gpu.load_ptx_text("runtime_checks", m.text()).ctx("load the text")?;
    let add = tour::vector_add::load(&module).ctx("load vector_add from the text")?;
    let a = c.gpu.upload(&[1.5f32; 300]).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(300).ctx("alloc")?;
    add.launch(c.gpu.stream(), LaunchConfig::for_elements(300, 128), &a, &a, &mut out).ctx("launch")?;
    check_all("vector_add from run-time text", &out.to_vec().ctx("read")?, &[3.0f32; 300])?;
    let cut = format!("{}\0{}", &m.text()[..100], &m.text()[100..]);
    match c.gpu.load_ptx_text("runtime_checks_nul", &cut) {
        Err(Error::Argument(msg)) if msg.contains("NUL at byte 100") => Ok(()),
        other => Err(format!("PTX text with a NUL inside: {other:?}")),
    }
}

/// Checked-mode PTX whose call-site markers were not numbered (built outside cohort-build) is
/// refused at load with an `Err` that says how to fix it; numbered, the same text loads.
fn unnumbered_sites(c: &Ctx) -> TestResult {
    // A checked kernel's shape: a marker (as `cohort::raw::site_marker` emits it) whose number
    // a check would compare.
    let unnumbered = format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry site_probe(.param .u64 out)\n{{\n\t.reg \
         .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\tmov.u32 %r1, 0; {}\n\tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 \
         %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}}\n",
        cohort::raw::SITE_MARKER_UNNUMBERED
    );
    match c.gpu.load_ptx_text("runtime_checks_unnumbered", &unnumbered) {
        Err(e @ Error::UnnumberedSiteMarkers { .. }) => {
            let msg = e.to_string();
            ensure(msg.contains("cohort-build") && msg.contains("runtime_checks_unnumbered"), || msg.clone())?;
        }
        other => return Err(format!("PTX with an unnumbered marker: {other:?}")),
    }
    let (numbered, n) = cohort_build::number_site_markers(&unnumbered)?;
    ensure(n == 1 && numbered.contains("mov.u32 %r1, 1; // cohort-site=1"), || numbered.clone())?;
    c.gpu.load_ptx_text("runtime_checks_numbered", &numbered).ctx("load the numbered text")?;
    Ok(())
}

/// PTX whose launch-bounds markers were not applied (built outside cohort-build) is refused at
/// load with an `Err` that says how to fix it; applied, the same text loads and the entry's
/// limit is its bound on either device.
fn unapplied_launch_bounds(c: &Ctx) -> TestResult {
    let unapplied = format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n\n.visible .entry bounds_probe(\n\t.param .u64 out\n)\n{{\n\t\
         .reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\t{}64 0 0\n\tmov.u32 %r1, 7;\n\tld.param.u64 %rd1, [out];\n\t\
         cvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}}\n",
        cohort::raw::LAUNCH_BOUNDS_MARKER
    );
    match c.gpu.load_ptx_text("runtime_checks_unbounded", &unapplied) {
        Err(e @ Error::UnappliedLaunchBounds { .. }) => {
            let msg = e.to_string();
            ensure(msg.contains("cohort-build") && msg.contains("runtime_checks_unbounded"), || msg.clone())?;
        }
        other => return Err(format!("PTX with an unapplied launch-bounds marker: {other:?}")),
    }
    let (applied, n) = cohort_build::apply_launch_bounds(&unapplied)?;
    ensure(n == 1 && applied.contains(")\n.maxntid 64, 1, 1\n{"), || applied.clone())?;
    let m = c.gpu.load_ptx_text("runtime_checks_bounded", &applied).ctx("load the applied text")?;
    let f = m.function("bounds_probe", false).ctx("bounds_probe")?;
    let limit = f.attributes().max_threads_per_block;
    ensure(limit == 64, || format!("the entry's limit is {limit} threads, not its .maxntid 64"))
}

/// The CPU device and a GPU in one process, on one thread: their memory does not mix (launches
/// and copies are `CrossDevice`), and using the CPU device between a GPU launch and a host read
/// of its output does not make the read skip the wait (the driver seam follows the thread's
/// current device: a GPU event asked of the CPU device would answer "done").
fn cpu_beside_gpu(c: &Ctx) -> TestResult {
    let cpu = Gpu::cpu().ctx("CPU device")?;
    let cpu_module = cpu.load(&cohort_test_kernels::PTX).ctx("load on the CPU device")?;
    let w_gpu = cohort_test_kernels::streams::slow_write::load(&c.tests).ctx("load")?;
    let w_cpu = cohort_test_kernels::streams::slow_write::load(&cpu_module).ctx("load")?;
    let n = 1 << 16;
    let cfg = LaunchConfig::for_elements(n, 256);
    // A slow GPU writer on the per-thread default stream (its accesses are tracked by events).
    let mut on_gpu = c.gpu.upload(&vec![7u32; n]).ctx("upload")?;
    let per_thread = c.gpu.per_thread_stream();
    w_gpu.launch(&per_thread, cfg, &mut on_gpu, 1000, 200_000_000).ctx("slow GPU writer")?;
    // Meanwhile the CPU device works on this thread.
    let mut on_cpu = cpu.upload(&vec![5u32; n]).ctx("CPU upload")?;
    w_cpu.launch(cpu.stream(), cfg, &mut on_cpu, 2000, 0).ctx("CPU writer")?;
    check_all(
        "CPU device output",
        &on_cpu.to_vec().ctx("read")?,
        &(0..n as u32).map(|i| 2000 + i).collect::<Vec<_>>(),
    )?;
    // The host read of the GPU buffer waits for the slow writer.
    check_all(
        "GPU output read after CPU work",
        &on_gpu.to_vec().ctx("read")?,
        &(0..n as u32).map(|i| 1000 + i).collect::<Vec<_>>(),
    )?;
    // Mixing is refused, both ways, and nothing is written.
    let e = w_gpu.launch(c.gpu.stream(), cfg, &mut on_cpu, 1, 0);
    ensure(matches!(e, Err(Error::CrossDevice { .. })), || format!("GPU kernel on CPU memory: {e:?}"))?;
    let e = w_cpu.launch(cpu.stream(), cfg, &mut on_gpu, 1, 0);
    ensure(matches!(e, Err(Error::CrossDevice { .. })), || format!("CPU kernel on GPU memory: {e:?}"))?;
    let e = w_cpu.launch(c.gpu.stream(), cfg, &mut on_cpu, 1, 0);
    ensure(matches!(e, Err(Error::CrossDevice { .. })), || format!("CPU module on a GPU stream: {e:?}"))?;
    let e = c.gpu.stream().copy(&on_cpu, &mut on_gpu);
    ensure(matches!(e, Err(Error::CrossDevice { .. })), || format!("copy CPU -> GPU: {e:?}"))?;
    let e = cpu.stream().copy(&on_gpu, &mut on_cpu);
    ensure(matches!(e, Err(Error::CrossDevice { .. })), || format!("copy GPU -> CPU: {e:?}"))?;
    check_all(
        "CPU memory after the refusals",
        &on_cpu.to_vec().ctx("read")?,
        &(0..n as u32).map(|i| 2000 + i).collect::<Vec<_>>(),
    )?;
    check_all(
        "GPU memory after the refusals",
        &on_gpu.to_vec().ctx("read")?,
        &(0..n as u32).map(|i| 1000 + i).collect::<Vec<_>>(),
    )
}

/// Every pairing of a GPU's handles with the CPU device's — a module variable set on the other's
/// stream, a stream waiting for the other's event, an event recorded on or timed against the
/// other's, memory filled, copied or launched on the other's stream, a kernel or a graph on the
/// other's stream — is an `Error::CrossDevice` naming both devices, before anything reaches a
/// driver (the driver seam would send one device's handle to the other's driver: a crash, a
/// hang, or a wait that silently orders nothing). Nothing changes, and each device works on.
fn cpu_and_gpu_handles_never_mix(c: &Ctx) -> TestResult {
    let cpu = Gpu::cpu().ctx("CPU device")?;
    let gpu_name = format!("GPU {}", c.gpu.info().ordinal);
    let mixed = |what: &str, r: Result<(), Error>| -> TestResult {
        match r {
            Err(e @ Error::CrossDevice { .. }) => {
                let m = e.to_string();
                ensure(m.contains("the CPU device") && m.contains(&gpu_name), || {
                    format!("{what}: the error names both devices: {m}")
                })
            }
            other => Err(format!("{what}: expected Error::CrossDevice, got {other:?}")),
        }
    };
    let (mg, mc) = (
        c.gpu.load(&cohort_test_kernels::PTX).ctx("load on the GPU")?,
        cpu.load(&cohort_test_kernels::PTX).ctx("load on the CPU device")?,
    );
    let (sg, sc) = (c.gpu.new_stream().ctx("stream")?, cpu.new_stream().ctx("stream")?);
    // Module variables.
    let (pg, pc) = (mg.constant(&POLY).ctx("POLY")?, mc.constant(&POLY).ctx("POLY")?);
    let init = [1.0f32, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let new = [0.5f32, -2.0, 3.0, 0.25, 0.0, 1.0, 7.0, -1.5];
    mixed("a GPU module variable set on a CPU-device stream", pg.set(&sc, &new))?;
    mixed("a CPU-device module variable set on a GPU stream", pc.set(&sg, &new))?;
    ensure(pg.get().ctx("get")? == init && pc.get().ctx("get")? == init, || "a refused set changed a variable".into())?;
    // Events.
    let (eg, ec) = (Event::new(&c.gpu).ctx("event")?, Event::new(&cpu).ctx("event")?);
    let (eg2, ec2) = (Event::new(&c.gpu).ctx("event")?, Event::new(&cpu).ctx("event")?);
    for (e, s) in [(&eg, &sg), (&eg2, &sg)] {
        e.record(s).ctx("record")?;
    }
    for (e, s) in [(&ec, &sc), (&ec2, &sc)] {
        e.record(s).ctx("record")?;
    }
    eg2.synchronize().ctx("sync")?;
    mixed("a GPU stream waiting for a CPU-device event", sg.wait(&ec))?;
    mixed("a CPU-device stream waiting for a GPU event", sc.wait(&eg))?;
    mixed("a GPU event recorded on a CPU-device stream", eg.record(&sc))?;
    mixed("a CPU-device event recorded on a GPU stream", ec.record(&sg))?;
    mixed("a GPU event timed against a CPU-device event", eg2.elapsed_ms_since(&ec).map(drop))?;
    mixed("a CPU-device event timed against a GPU event", ec2.elapsed_ms_since(&eg).map(drop))?;
    // Memory, kernels and graphs.
    let data: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
    let cfg = LaunchConfig::for_elements(data.len(), 256);
    let (mut bg, mut bc) = (c.gpu.upload(&data).ctx("upload")?, cpu.upload(&data).ctx("upload")?);
    mixed("a fill of CPU-device memory on a GPU stream", sg.fill(&mut bc, 1u32))?;
    mixed("a fill of GPU memory on a CPU-device stream", sc.fill(&mut bg, 1u32))?;
    let (hg, hc) = (c.gpu.pinned_from(&data).ctx("pinned")?, cpu.pinned_from(&data).ctx("pinned")?);
    mixed("CPU-device pinned memory copied on a GPU stream", sg.copy(&hc, &mut bg))?;
    mixed("GPU pinned memory copied on a CPU-device stream", sc.copy(&hg, &mut bc))?;
    let (ag, ac) = (add_in_place::load(&mg).ctx("load")?, add_in_place::load(&mc).ctx("load")?);
    mixed("a GPU kernel on a CPU-device stream", ag.launch(&sc, cfg, &mut bg, 1))?;
    mixed("a CPU-device kernel on a GPU stream", ac.launch(&sg, cfg, &mut bc, 1))?;
    mixed("a GPU kernel given CPU-device memory", ag.launch(&sg, cfg, &mut bc, 1))?;
    let cap = c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut gb = c.gpu.upload(&data).ctx("upload")?;
    let exec = cap.capture(|s| ag.launch(s, cfg, &mut gb, 1)).ctx("capture")?.instantiate().ctx("instantiate")?;
    mixed("a GPU graph replayed on a CPU-device stream", exec.launch(&sc))?;
    // Nothing ran or changed; each device works on by itself.
    for (what, got) in [("GPU buffer", bg.to_vec()), ("CPU-device buffer", bc.to_vec()), ("graph buffer", gb.to_vec())]
    {
        check_all(&format!("{what} after the refusals"), &got.ctx("read")?, &data)?;
    }
    pg.set(&sg, &new).ctx("set on the GPU")?;
    pc.set(&sc, &new).ctx("set on the CPU device")?;
    ensure(pg.get().ctx("get")? == new && pc.get().ctx("get")? == new, || "the variables after their own sets".into())?;
    ag.launch(&sg, cfg, &mut bg, 2).ctx("GPU kernel")?;
    ac.launch(&sc, cfg, &mut bc, 3).ctx("CPU-device kernel")?;
    sg.wait(&eg).ctx("GPU wait")?;
    sc.wait(&ec).ctx("CPU-device wait")?;
    eg2.elapsed_ms_since(&eg).ctx("GPU timing")?;
    ec2.elapsed_ms_since(&ec).ctx("CPU-device timing")?;
    check_all(
        "GPU kernel after the refusals",
        &bg.to_vec().ctx("read")?,
        &data.iter().map(|v| v + 2).collect::<Vec<_>>(),
    )?;
    check_all(
        "CPU kernel after the refusals",
        &bc.to_vec().ctx("read")?,
        &data.iter().map(|v| v + 3).collect::<Vec<_>>(),
    )
}

/// Two handles of one device (two `Gpu`s of one primary context, or two `Gpu::cpu()` on the
/// CPU device) are one device: their modules, variables, streams, events and memory mix freely.
fn one_device_handles(c: &Ctx) -> TestResult {
    let other = if c.is_cpu() { Gpu::cpu() } else { Gpu::new(c.gpu.info().ordinal) }.ctx("a second handle")?;
    ensure(other.same_context(&c.gpu), || "two handles of one device share its context".into())?;
    let m = c.gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    let poly = m.constant(&POLY).ctx("POLY")?;
    let (s1, s2) = (c.gpu.new_stream().ctx("stream")?, other.new_stream().ctx("stream")?);
    let vals = [3.0f32, 0.5, -1.0, 2.0, 0.0, 0.0, 1.0, 4.0];
    poly.set(&s2, &vals).ctx("a variable set on the other handle's stream")?;
    ensure(poly.get().ctx("get")? == vals, || "the variable after the set".into())?;
    let (e1, e2) = (Event::new(&c.gpu).ctx("event")?, Event::new(&other).ctx("event")?);
    e1.record(&s2).ctx("record on the other handle's stream")?;
    s1.wait(&e1).ctx("wait")?;
    e2.record(&s1).ctx("record")?;
    s2.wait(&e2).ctx("wait")?;
    e2.synchronize().ctx("sync")?;
    e2.elapsed_ms_since(&e1).ctx("timing events of two handles")?;
    let add = add_in_place::load(&m).ctx("load")?;
    let data: Vec<u32> = (0..10_000u32).map(|i| i * 7).collect();
    let a = c.gpu.upload(&data).ctx("upload")?;
    let mut b = other.upload(&vec![0u32; data.len()]).ctx("upload")?;
    s2.copy(&a, &mut b).ctx("copy")?;
    add.launch(&s2, LaunchConfig::for_elements(data.len(), 256), &mut b, 9).ctx("launch on the other handle")?;
    check_all(
        "through two handles of one device",
        &b.to_vec().ctx("read")?,
        &data.iter().map(|v| v + 9).collect::<Vec<_>>(),
    )
}

/// `set_stack_size` / `stack_size` and `set_printf_fifo_size` / `printf_fifo_size` round-trip
/// (the driver may round up); the stack size is put back. CUDA takes a printf FIFO size only
/// before the context's first printing kernel: in this process one may have run already, so a
/// refusal is accepted if it is `CUDA_ERROR_INVALID_VALUE` naming the limit.
fn limits(c: &Ctx) -> TestResult {
    let before = c.gpu.stack_size().ctx("stack size")?;
    c.gpu.set_stack_size(4096).ctx("set the stack size")?;
    let now = c.gpu.stack_size().ctx("stack size")?;
    ensure((4096..4096 + 1024).contains(&now), || format!("stack size {now} after asking for 4096"))?;
    c.gpu.set_stack_size(before).ctx("restore the stack size")?;
    ensure(c.gpu.stack_size().ctx("stack size")? == before, || "the stack size was not restored".into())?;
    match c.gpu.set_printf_fifo_size(3 << 20) {
        Ok(()) => {
            let fifo = c.gpu.printf_fifo_size().ctx("printf FIFO size")?;
            ensure(fifo >= 3 << 20, || format!("printf FIFO {fifo} after asking for 3 MiB"))
        }
        Err(e @ Error::Driver { .. }) if !c.is_cpu() => {
            let msg = e.to_string();
            ensure(msg.contains("printf FIFO") && msg.contains("INVALID_VALUE"), || msg.clone())
        }
        Err(e) => Err(format!("setting the printf FIFO size: {e}")),
    }
}
