//! Interop with cudarc (`cohort_runtime::interop`): Cohort kernels on cudarc slices and streams,
//! Cohort buffers lent to cudarc, every value checked against a CPU reference — and the ordering
//! across the boundary: a slow writer or reader on one side is never overtaken by the other side
//! on another stream, cudarc's free of a slice waits for a Cohort launch still using it, and
//! captures neither side knows are refused.
//!
//! GPU-only: cudarc needs a CUDA driver and a GPU; the CPU device has no cudarc side (what can
//! be checked without one is in `cohort-runtime`'s `interop` unit tests).

use std::sync::Arc;

use cohort_runtime::cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig as CuConfig, PushKernelArg,
};
use cohort_runtime::cudarc::nvrtc::Ptx;
use cohort_runtime::interop::{AsCohort, AsCohortMut};
use cohort_runtime::{Error, Gpu, LaunchConfig, Module, Stream, StreamOptions};
use cohort_test_kernels::streams as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

const WHY: &str = "cudarc needs a CUDA driver and a GPU; the CPU device has no cudarc side";

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_only_trial("interop_cohort_kernels_on_cudarc_slices_and_views", WHY, kernels_on_cudarc_slices),
        gpu_only_trial("interop_cohort_and_cudarc_streams_order_each_other", WHY, streams_order_each_other),
        gpu_only_trial("interop_a_cohort_read_keeps_cudarc_s_earlier_reader", WHY, cumulative_reads),
        gpu_only_trial("interop_cudarc_frees_a_slice_after_the_cohort_launch", WHY, free_after_launch),
        gpu_only_trial("interop_single_stream_cudarc_is_ordered_through_its_stream", WHY, single_stream_mode),
        gpu_only_trial("interop_cohort_buffers_lent_to_cudarc", WHY, lent_to_cudarc),
        gpu_only_trial("interop_streams_handed_across_and_foreign_captures", WHY, streams_and_captures),
        gpu_only_trial("interop_refusals", WHY, refusals),
    ]
}

const N: usize = 1 << 16;
/// Long enough that an unordered reader or writer on another stream overtakes the slow kernel.
const SLOW_NS: u64 = 20_000_000;

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

fn cu_cfg(n: usize) -> CuConfig {
    CuConfig { grid_dim: (n.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// A cudarc context on the tests' GPU (its own `Arc`, so its cudarc mode is this test's), a
/// Cohort `Gpu` on it, and the test kernels loaded there.
fn setup(c: &Ctx) -> Result<(Arc<CudaContext>, Gpu, Module), String> {
    let ctx = CudaContext::new(c.gpu.info().ordinal).map_err(|e| format!("cudarc context: {e:?}"))?;
    let gpu = Gpu::from_cudarc(&ctx).ctx("Gpu::from_cudarc")?;
    let m = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    Ok((ctx, gpu, m))
}

fn cu<T>(r: Result<T, cohort_runtime::cudarc::driver::DriverError>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e:?}"))
}

/// A test kernel as cudarc sees it: the same PTX entry, loaded through cudarc.
fn cudarc_function(ctx: &Arc<CudaContext>, gpu: &Gpu, name: &str) -> Result<CudaFunction, String> {
    let cc = gpu.info().cc();
    let m = cohort_test_kernels::PTX.select(cc).ok_or("no PTX for this GPU")?;
    let module = cu(ctx.load_module(Ptx::from_src(m.text())), "cudarc load_module")?;
    cu(module.load_function(name), "cudarc load_function")
}

/// A slow writer launched by cudarc (its own ordering: the slice's events).
fn cudarc_slow_write(
    cs: &Arc<CudaStream>,
    f: &CudaFunction,
    out: &mut CudaSlice<u32>,
    base: u32,
    ns: u64,
) -> Result<(), String> {
    let n = out.len();
    let mut b = cs.launch_builder(f);
    b.arg(out).arg(&n).arg(&base).arg(&ns);
    // SAFETY: `slow_write(out: DisjointSlice<u32>, base: u32, ns: u64)` takes exactly these
    // parameters (a slice is its address and length), and writes only `out`'s `n` elements.
    cu(unsafe { b.launch(cu_cfg(n)) }.map(|_| ()), "cudarc launch")
}

fn non_blocking(gpu: &Gpu) -> Result<Stream, String> {
    gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")
}

/// Cohort kernels with cudarc slices and views as arguments, beside Cohort buffers, on a
/// Cohort stream that is cudarc's stream.
fn kernels_on_cudarc_slices(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let cs = cu(ctx.new_stream(), "cudarc stream")?;
    let s = gpu.cudarc_stream(&cs).ctx("cudarc_stream")?;
    let (copy, add) = (k::copy_u32::load(&m).ctx("load")?, k::add_in_place::load(&m).ctx("load")?);
    let mut rng = rng("interop_kernels");
    let input: Vec<u32> = (0..N).map(|_| rng.random_range(0..1 << 30)).collect();
    let x = cu(cs.clone_htod(&input), "htod")?;
    let mut y = cu(cs.alloc_zeros::<u32>(N), "alloc")?;
    copy.launch(&s, cfg(N), x.cohort(), y.cohort_mut()).ctx("copy")?;
    add.launch(&s, cfg(N), y.cohort_mut(), 3).ctx("add")?;
    add.launch(&s, cfg(100), y.slice_mut(10..110).cohort_mut(), 1000).ctx("add on a view")?;
    let mut want: Vec<u32> = input.iter().map(|v| v + 3).collect();
    want[10..110].iter_mut().for_each(|v| *v += 1000);
    check_all("cudarc reads what the Cohort kernels wrote", &cu(cs.clone_dtoh(&y), "dtoh")?, &want)?;
    // A cudarc view read, a Cohort buffer written, in one launch.
    let mut buf = gpu.zeroed::<u32>(1000).ctx("alloc")?;
    copy.launch(&s, cfg(1000), y.slice(5000..6000).cohort(), &mut buf).ctx("copy a view")?;
    check_all("a cudarc view into a Cohort buffer", &buf.to_vec().ctx("read")?, &want[5000..6000])?;
    // A Cohort buffer read, a cudarc slice written.
    copy.launch(&s, cfg(1000), &buf, y.slice_mut(0..1000).cohort_mut()).ctx("copy back")?;
    want.copy_within(5000..6000, 0);
    check_all("a Cohort buffer into a cudarc view", &cu(cs.clone_dtoh(&y), "dtoh")?, &want)
}

/// A slow Cohort writer of a cudarc slice on one stream, a cudarc reader on another; a slow
/// Cohort reader, then a cudarc writer on another stream; a slow cudarc writer, then a Cohort
/// reader on another stream.
fn streams_order_each_other(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let cs = cu(ctx.new_stream(), "cudarc stream")?;
    let (s1, s2) = (non_blocking(&gpu)?, non_blocking(&gpu)?);
    let w = k::slow_write::load(&m).ctx("load")?;
    let r = k::slow_read::load(&m).ctx("load")?;
    let copy = k::copy_u32::load(&m).ctx("load")?;
    // Cohort writes (slowly) on s1, cudarc reads on its stream.
    let mut y = cu(cs.alloc_zeros::<u32>(N), "alloc")?;
    w.launch(&s1, cfg(N), y.cohort_mut(), 7, SLOW_NS).ctx("slow writer")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 7 + i).collect();
    check_all("cudarc's read waits for the Cohort writer", &cu(cs.clone_dtoh(&y), "dtoh")?, &want)?;
    // Cohort reads (slowly) on s1, cudarc overwrites on its stream.
    let mut out = gpu.zeroed::<u32>(N).ctx("alloc")?;
    r.launch(&s1, cfg(N), y.cohort(), &mut out, SLOW_NS).ctx("slow reader")?;
    let zeros = vec![0u32; N];
    cu(cs.memcpy_htod(&zeros, &mut y), "htod")?;
    let want_out: Vec<u32> = want.iter().map(|v| v * 2 + 1).collect();
    check_all("the Cohort reader saw the values before cudarc's write", &out.to_vec().ctx("read")?, &want_out)?;
    check_all("cudarc's write happened", &cu(cs.clone_dtoh(&y), "dtoh")?, &zeros)?;
    // cudarc writes (slowly) on its stream, Cohort reads on s2.
    let f = cudarc_function(&ctx, &gpu, k::slow_write::NAME)?;
    cudarc_slow_write(&cs, &f, &mut y, 11, SLOW_NS)?;
    copy.launch(&s2, cfg(N), y.cohort(), &mut out).ctx("reader")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 11 + i).collect();
    check_all("the Cohort reader on another stream waits for cudarc's writer", &out.to_vec().ctx("read")?, &want)?;
    // And cudarc's next writer waits for that read (recorded into the slice's read event).
    w.launch(&s1, cfg(N), &mut out, 0, SLOW_NS).ctx("slow writer of out")?;
    copy.launch(&s2, cfg(N), &out, y.cohort_mut()).ctx("copy into y after the slow writer")?;
    let want: Vec<u32> = (0..N as u32).collect();
    check_all("cudarc sees the Cohort chain's result", &cu(cs.clone_dtoh(&y), "dtoh")?, &want)
}

/// cudarc keeps one read event per slice: a slow cudarc reader on one stream, then a Cohort
/// reader on another, then a cudarc writer on a third. The writer waits only for the last
/// recorded read; Cohort's read waited for the earlier reader first, so the slow reader still
/// sees the old values.
fn cumulative_reads(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let (cs1, cs3) = (cu(ctx.new_stream(), "stream")?, cu(ctx.new_stream(), "stream")?);
    let s2 = non_blocking(&gpu)?;
    let copy = k::copy_u32::load(&m).ctx("load")?;
    let slow_read = cudarc_function(&ctx, &gpu, k::slow_read::NAME)?;
    let input: Vec<u32> = (0..N as u32).map(|i| i * 3).collect();
    let x = cu(cs1.clone_htod(&input), "htod")?;
    cu(cs1.synchronize(), "sync")?;
    let mut slow_out = cu(cs1.alloc_zeros::<u32>(N), "alloc")?;
    let (n, ns) = (N, SLOW_NS);
    let mut b = cs1.launch_builder(&slow_read);
    b.arg(&x).arg(&n).arg(&mut slow_out).arg(&n).arg(&ns);
    // SAFETY: `slow_read(a: &[u32], out: DisjointSlice<u32>, ns: u64)`: these parameters.
    cu(unsafe { b.launch(cu_cfg(N)) }, "cudarc slow reader")?;
    let mut out = gpu.zeroed::<u32>(N).ctx("alloc")?;
    let mut x = x;
    copy.launch(&s2, cfg(N), x.cohort(), &mut out).ctx("Cohort reader")?;
    cu(cs3.memset_zeros(&mut x), "cudarc writer")?;
    let want: Vec<u32> = input.iter().map(|v| v * 2 + 1).collect();
    check_all(
        "the slow cudarc reader saw the values before the write",
        &cu(cs1.clone_dtoh(&slow_out), "dtoh")?,
        &want,
    )?;
    check_all("the Cohort reader too", &out.to_vec().ctx("read")?, &input)?;
    check_all("and the write happened", &cu(cs3.clone_dtoh(&x), "dtoh")?, &vec![0u32; N])
}

/// Dropping a cudarc slice while a slow Cohort launch on another stream writes it: cudarc's
/// free waits for the launch, so the next allocation (likely the same memory) stays zero.
fn free_after_launch(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let cs = cu(ctx.new_stream(), "cudarc stream")?;
    let s1 = non_blocking(&gpu)?;
    let w = k::slow_write::load(&m).ctx("load")?;
    for round in 0..3 {
        let mut z = cu(cs.alloc_zeros::<u32>(N), "alloc")?;
        cu(cs.synchronize(), "sync")?;
        w.launch(&s1, cfg(N), z.cohort_mut(), 1 + round, SLOW_NS).ctx("slow writer")?;
        drop(z);
        let fresh = cu(cs.alloc_zeros::<u32>(N), "alloc")?;
        check_all("memory freed after the writer, then zeroed", &cu(cs.clone_dtoh(&fresh), "dtoh")?, &vec![0u32; N])?;
        s1.synchronize().ctx("sync")?;
    }
    Ok(())
}

/// cudarc in single-stream mode (no `new_stream` on this context: no events recorded) with its
/// slices on the default (legacy) stream, and Cohort on a non-blocking stream, which the legacy
/// stream does not wait for by itself: Cohort orders its launch after the slice's stream and the
/// slice's stream after the launch.
fn single_stream_mode(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    ensure(!ctx.is_managing_stream_synchronization(), || "a fresh context is in single-stream mode".into())?;
    let ds = ctx.default_stream();
    let s1 = non_blocking(&gpu)?;
    let w = k::slow_write::load(&m).ctx("load")?;
    let r = k::slow_read::load(&m).ctx("load")?;
    let mut y = cu(ds.alloc_zeros::<u32>(N), "alloc")?;
    w.launch(&s1, cfg(N), y.cohort_mut(), 5, SLOW_NS).ctx("slow writer")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 5 + i).collect();
    check_all("cudarc on its stream reads after the Cohort writer", &cu(ds.clone_dtoh(&y), "dtoh")?, &want)?;
    let mut out = gpu.zeroed::<u32>(N).ctx("alloc")?;
    r.launch(&s1, cfg(N), y.cohort(), &mut out, SLOW_NS).ctx("slow reader")?;
    cu(ds.memset_zeros(&mut y), "cudarc writer")?;
    let want2: Vec<u32> = want.iter().map(|v| v * 2 + 1).collect();
    check_all("the Cohort reader saw the values before cudarc's write", &out.to_vec().ctx("read")?, &want2)?;
    // Freed on its stream, which waited for the launch.
    w.launch(&s1, cfg(N), y.cohort_mut(), 9, SLOW_NS).ctx("slow writer")?;
    drop(y);
    let fresh = cu(ds.alloc_zeros::<u32>(N), "alloc")?;
    check_all("freed after the Cohort writer", &cu(ds.clone_dtoh(&fresh), "dtoh")?, &vec![0u32; N])?;
    ensure(!ctx.is_managing_stream_synchronization(), || "Cohort's launches left cudarc's mode alone".into())
}

/// Cohort buffers lent to cudarc: cudarc reads them after Cohort's writers, Cohort reads what
/// cudarc wrote (on the lent stream, and on another cudarc stream inside the scope), a panic in
/// the scope gives the buffer back.
fn lent_to_cudarc(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let (s1, s2) = (non_blocking(&gpu)?, non_blocking(&gpu)?);
    let other = cu(ctx.new_stream(), "cudarc stream")?;
    let w = k::slow_write::load(&m).ctx("load")?;
    let copy = k::copy_u32::load(&m).ctx("load")?;
    let f = cudarc_function(&ctx, &gpu, k::slow_write::NAME)?;
    let mut buf = gpu.zeroed::<u32>(N).ctx("alloc")?;
    // A slow Cohort writer on s1, then cudarc reads the buffer on s2's handle.
    w.launch(&s1, cfg(N), &mut buf, 3, SLOW_NS).ctx("slow writer")?;
    let got = buf
        .with_cudarc(&s2, |v, cs| cs.clone_dtoh(&v).and_then(|h| cs.synchronize().map(|()| h)))
        .ctx("with_cudarc")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 3 + i).collect();
    check_all("cudarc reads the buffer after the Cohort writer", &cu(got, "dtoh")?, &want)?;
    // Again, read by cudarc on another of its streams inside the scope.
    w.launch(&s1, cfg(N), &mut buf, 4, SLOW_NS).ctx("slow writer")?;
    let mut copied = cu(other.alloc_zeros::<u32>(N), "alloc")?;
    let r = buf.with_cudarc(&s2, |v, _| other.memcpy_dtod(&v, &mut copied)).ctx("with_cudarc")?;
    cu(r, "dtod")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 4 + i).collect();
    check_all("cudarc's other stream waited for the Cohort writer", &cu(other.clone_dtoh(&copied), "dtoh")?, &want)?;
    // cudarc writes slowly into the lent buffer (on the lent stream), Cohort reads on s1.
    let mut out = gpu.zeroed::<u32>(N).ctx("alloc")?;
    let r = buf
        .with_cudarc_mut(&s2, |mut v, cs| {
            let n = v.len();
            let (base, ns) = (21u32, SLOW_NS);
            let mut b = cs.launch_builder(&f);
            b.arg(&mut v).arg(&n).arg(&base).arg(&ns);
            // SAFETY: `slow_write`'s parameters, and it writes only the view's `n` elements.
            unsafe { b.launch(cu_cfg(n)) }.map(|_| ())
        })
        .ctx("with_cudarc_mut")?;
    cu(r, "cudarc launch")?;
    copy.launch(&s1, cfg(N), &buf, &mut out).ctx("reader")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 21 + i).collect();
    check_all("Cohort reads what cudarc wrote on the lent stream", &out.to_vec().ctx("read")?, &want)?;
    // cudarc writes slowly on another of its streams inside the scope; the buffer's next reader
    // and its host read wait for it.
    let r = buf
        .slice_mut(..)
        .with_cudarc_mut(&s2, |mut v, _| {
            let n = v.len();
            let (base, ns) = (31u32, SLOW_NS);
            let mut b = other.launch_builder(&f);
            b.arg(&mut v).arg(&n).arg(&base).arg(&ns);
            // SAFETY: as above.
            unsafe { b.launch(cu_cfg(n)) }.map(|_| ())
        })
        .ctx("with_cudarc_mut")?;
    cu(r, "cudarc launch")?;
    let want: Vec<u32> = (0..N as u32).map(|i| 31 + i).collect();
    check_all("the host read waits for cudarc's other stream", &buf.to_vec().ctx("read")?, &want)?;
    // A panic in the scope: the buffer is given back, still ordered and usable.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = buf.with_cudarc_mut(&s2, |_, _| -> () { panic!("inside the scope") });
    }));
    ensure(caught.is_err(), || "the panic came through".into())?;
    copy.launch(&s1, cfg(N), &buf, &mut out).ctx("reader after the panic")?;
    check_all("after a panic in the scope", &out.to_vec().ctx("read")?, &want)
}

/// Streams handed across: a Cohort stream's cudarc handle outlives the stream and stays valid;
/// a capture cudarc begins on a stream Cohort holds refuses Cohort's work until it ends; the
/// default stream is the legacy stream.
fn streams_and_captures(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let add = k::add_in_place::load(&m).ctx("load")?;
    let s = non_blocking(&gpu)?;
    let mut buf = gpu.upload(&vec![1u32; N]).ctx("alloc")?;
    add.launch(&s, cfg(N), &mut buf, 1).ctx("add")?;
    let handle = s.cudarc().ctx("Stream::cudarc")?;
    drop(s);
    let mut y = cu(handle.alloc_zeros::<u32>(N), "alloc on the handle of a dropped stream")?;
    cu(handle.memcpy_htod(&vec![5u32; N], &mut y), "htod")?;
    check_all("the handle outlived the Cohort stream", &cu(handle.clone_dtoh(&y), "dtoh")?, &vec![5u32; N])?;
    // A cudarc capture on a stream Cohort holds.
    let cs = cu(ctx.new_stream(), "cudarc stream")?;
    let s = gpu.cudarc_stream(&cs).ctx("cudarc_stream")?;
    cu(
        cs.begin_capture(cohort_runtime::cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "begin",
    )?;
    let refused = add.launch(&s, cfg(N), &mut buf, 1);
    let _ = cs.end_capture(
        cohort_runtime::cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
    );
    match refused {
        Err(Error::Argument(msg)) if msg.contains("Cohort did not begin") => {}
        other => return Err(format!("a launch into cudarc's capture: {other:?}")),
    }
    add.launch(&s, cfg(N), &mut buf, 1).ctx("after the capture ended")?;
    check_all("only the launches outside the capture ran", &buf.to_vec().ctx("read")?, &vec![3u32; N])?;
    // cudarc's default stream is Cohort's legacy stream.
    let legacy = gpu.cudarc_stream(&ctx.default_stream()).ctx("default stream")?;
    add.launch(&legacy, cfg(N), &mut buf, 1).ctx("on the legacy stream")?;
    check_all("on the legacy stream", &buf.to_vec().ctx("read")?, &vec![4u32; N])
}

/// What interop refuses: another context's memory, cudarc memory in a Cohort capture, the
/// per-thread stream.
fn refusals(c: &Ctx) -> TestResult {
    let (ctx, gpu, m) = setup(c)?;
    let add = k::add_in_place::load(&m).ctx("load")?;
    let s = non_blocking(&gpu)?;
    // Memory of a context of its own (non-primary).
    let other = cu(CudaContext::new_non_primary(gpu.info().ordinal, 0), "non-primary context")?;
    let os = cu(other.new_stream(), "stream")?;
    let mut foreign = cu(os.alloc_zeros::<u32>(N), "alloc")?;
    match add.launch(&s, cfg(N), foreign.cohort_mut(), 1) {
        Err(Error::CrossDevice { .. }) => {}
        other => return Err(format!("another context's memory: {other:?}")),
    }
    ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
    // cudarc memory in a Cohort capture.
    let cs = cu(ctx.new_stream(), "cudarc stream")?;
    let mut y = cu(cs.alloc_zeros::<u32>(N), "alloc")?;
    let captured = s.capture(|s| add.launch(s, cfg(N), y.cohort_mut(), 1));
    match captured {
        Err(Error::Argument(msg)) if msg.contains("cannot be captured into a Cohort graph") => {}
        other => return Err(format!("cudarc memory in a capture: {:?}", other.map(|_| "a graph"))),
    }
    // The per-thread default stream.
    match add.launch(&gpu.per_thread_stream(), cfg(N), y.cohort_mut(), 1) {
        Err(Error::Argument(msg)) if msg.contains("per-thread") => {}
        other => return Err(format!("the per-thread stream: {other:?}")),
    }
    let mut buf = gpu.zeroed::<u32>(N).ctx("alloc")?;
    match buf.with_cudarc_mut(&gpu.per_thread_stream(), |_, _| ()) {
        Err(Error::Argument(msg)) if msg.contains("per-thread") => {}
        other => return Err(format!("lending on the per-thread stream: {other:?}")),
    }
    check_all("nothing ran", &cu(cs.clone_dtoh(&y), "dtoh")?, &vec![0u32; N])
}
