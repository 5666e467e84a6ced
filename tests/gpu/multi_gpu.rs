//! Several GPUs (`cohort_runtime::Gpu::all`, peer access, peer copies, the cross-device
//! checks): the tests that need two GPUs report themselves ignored with the reason ("needs 2
//! GPUs (found 1)") on fewer; two contexts of one device (primary and isolated) are checked on
//! one. Every element is checked against a CPU reference.

use cohort_kernels::tour;
use cohort_runtime::{Error, Gpu, LaunchConfig};
use cohort_tests::{Context, TestResult, check_all, ensure, gpus_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpus_trial("multi_gpu_all_and_peer_access", 2, all_and_peer_access),
        gpus_trial("multi_gpu_peer_copy_round_trip_ordered", 2, peer_copy_round_trip),
        gpus_trial("multi_gpu_kernel_reads_peer_buffer", 2, kernel_reads_peer_buffer),
        gpus_trial("multi_gpu_module_stream_and_memory_mismatch", 2, mismatches),
        gpus_trial("multi_gpu_every_gpu_alternately_and_from_threads", 2, alternately_and_threads),
        gpus_trial("multi_gpu_two_contexts_of_one_device", 1, two_contexts_of_one_device),
        gpus_trial("multi_gpu_events_and_module_variables_stay_on_their_gpu", 2, events_and_variables),
    ]
}

fn pattern(test: &str, n: usize) -> Vec<f32> {
    let mut r = rng(test);
    (0..n).map(|_| r.random_range(-1000.0f32..1000.0)).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn all_and_peer_access(gpus: &[Gpu]) -> TestResult {
    let n = Gpu::count().ctx("count")?;
    ensure(gpus.len() == n, || format!("Gpu::all gave {} GPUs of {n}", gpus.len()))?;
    for (i, g) in gpus.iter().enumerate() {
        ensure(g.info().ordinal == i, || format!("Gpu::all()[{i}] is device {}", g.info().ordinal))?;
        ensure(!g.can_access_peer(g).ctx("can_access_peer")?, || "a device is not its own peer".into())?;
        ensure(g.peer_access_enabled(g), || "a context always reaches its own memory".into())?;
        match g.enable_peer_access(g) {
            Err(Error::PeerAccessUnsupported { device, peer }) if device == i && peer == i => {}
            r => return Err(format!("enable_peer_access to itself: {r:?}")),
        }
    }
    let (a, b) = (&gpus[0], &gpus[1]);
    // Fresh `Gpu`s: nothing recorded for them yet, whatever the driver's primary contexts hold.
    ensure(!b.peer_access_enabled(a), || "peer access recorded before being enabled".into())?;
    if b.can_access_peer(a).ctx("can_access_peer")? {
        b.enable_peer_access(a).ctx("enable")?;
        b.enable_peer_access(a).ctx("enable again (idempotent)")?;
        ensure(b.peer_access_enabled(a), || "enabled 1 -> 0 not recorded".into())?;
        ensure(!a.peer_access_enabled(b), || "peer access is one direction".into())?;
        // Another `Gpu` of the same device shares the context, and so the record.
        let b2 = Gpu::new(1).ctx("Gpu::new(1)")?;
        ensure(b2.same_context(b), || "two Gpu::new(1) share the primary context".into())?;
        ensure(b2.peer_access_enabled(a), || "the record is by context".into())?;
        b2.enable_peer_access(a).ctx("enable on a second handle")?;
    } else {
        match b.enable_peer_access(a) {
            Err(Error::PeerAccessUnsupported { .. }) => {}
            r => return Err(format!("enable without a peer path: {r:?}")),
        }
    }
    Ok(())
}

/// A kernel on A writes x; a copy on a stream of B moves it to B (waiting for A's stream);
/// a kernel on another stream of B reads it (waiting for the copy); a copy on a stream of A
/// brings the result back. No peer access is needed for any of it.
fn peer_copy_round_trip(gpus: &[Gpu]) -> TestResult {
    let (a, b) = (&gpus[0], &gpus[1]);
    let n = (1 << 22) + 17;
    let (x, y) = (pattern("multi_gpu_x", n), pattern("multi_gpu_y", n));
    let (ma, mb) = (a.load(&cohort_kernels::PTX).ctx("load on A")?, b.load(&cohort_kernels::PTX).ctx("load on B")?);
    let (ka, kb) = (tour::vector_add::load(&ma).ctx("kernel A")?, tour::vector_add::load(&mb).ctx("kernel B")?);
    let cfg = LaunchConfig::for_elements(n, 256);
    let (sa, sb1, sb2) = (a.new_stream().ctx("stream")?, b.new_stream().ctx("stream")?, b.new_stream().ctx("stream")?);
    // On A: xa = x + y (so that the copy must wait for a kernel of the other device).
    let (x_a, y_a) = (a.upload(&x).ctx("upload")?, a.upload(&y).ctx("upload")?);
    let mut xa = a.upload(&vec![f32::NAN; n]).ctx("upload")?;
    ka.launch(&sa, cfg, &x_a, &y_a, &mut xa).ctx("launch on A")?;
    // A -> B on a stream of B.
    let mut xb = b.upload(&vec![f32::NAN; n]).ctx("upload")?;
    sb1.copy(&xa, &mut xb).ctx("copy A -> B")?;
    // On B, another stream: out = xb + y.
    let y_b = b.upload(&y).ctx("upload")?;
    let mut outb = b.upload(&vec![f32::NAN; n]).ctx("upload")?;
    kb.launch(&sb2, cfg, &xb, &y_b, &mut outb).ctx("launch on B")?;
    // B -> A on a stream of A.
    let mut back = a.upload(&vec![f32::NAN; n]).ctx("upload")?;
    sa.copy(&outb, &mut back).ctx("copy B -> A")?;
    let first: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    let want: Vec<f32> = first.iter().zip(&y).map(|(p, q)| p + q).collect();
    check_all("x + y on B (bits)", &bits(&xb.to_vec().ctx("read B")?), &bits(&first))?;
    check_all("(x + y) + y back on A (bits)", &bits(&back.to_vec().ctx("read A")?), &bits(&want))?;
    // A sub-range of A's buffer into B, on a stream of the source's device this time.
    let mut part = b.upload(&vec![0.0f32; 1000]).ctx("upload")?;
    sa.copy(back.slice(5000..6000), &mut part).ctx("copy a slice A -> B")?;
    check_all("slice", &bits(&part.to_vec().ctx("read")?), &bits(&want[5000..6000]))
}

/// A kernel on B given A's buffer: refused without peer access, correct with it (reading
/// and writing A's memory).
fn kernel_reads_peer_buffer(gpus: &[Gpu]) -> TestResult {
    let (a, b) = (&gpus[0], &gpus[1]);
    let n = 1_000_003;
    let (x, y) = (pattern("multi_gpu_peer_x", n), pattern("multi_gpu_peer_y", n));
    let mb = b.load(&cohort_kernels::PTX).ctx("load on B")?;
    let kb = tour::vector_add::load(&mb).ctx("kernel")?;
    let cfg = LaunchConfig::for_elements(n, 256);
    let sb = b.new_stream().ctx("stream")?;
    let x_a = a.upload(&x).ctx("upload")?;
    let y_b = b.upload(&y).ctx("upload")?;
    let mut out_b = b.upload(&vec![f32::NAN; n]).ctx("upload")?;
    match kb.launch(&sb, cfg, &x_a, &y_b, &mut out_b) {
        Err(Error::CrossDevice { what, device: 1, other: 0, reason }) => {
            ensure(what.contains("vector_add") && reason.contains("enable_peer_access"), || {
                format!("the error names the kernel and the fix: {what}: {reason}")
            })?;
        }
        r => return Err(format!("a kernel on device 1 given device 0's buffer without peer access: {r:?}")),
    }
    if !b.can_access_peer(a).ctx("can_access_peer")? {
        eprintln!("multi_gpu_kernel_reads_peer_buffer: device 1 cannot access device 0; only the refusal checked");
        return Ok(());
    }
    b.enable_peer_access(a).ctx("enable 1 -> 0")?;
    kb.launch(&sb, cfg, &x_a, &y_b, &mut out_b).ctx("launch with peer access")?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    check_all("B reads A (bits)", &bits(&out_b.to_vec().ctx("read")?), &bits(&want))?;
    // B writes A's memory; the host read on A waits for B's stream.
    let mut out_a = a.upload(&vec![f32::NAN; n]).ctx("upload")?;
    kb.launch(&sb, cfg, &x_a, &y_b, &mut out_a).ctx("launch writing A")?;
    check_all("B writes A (bits)", &bits(&out_a.to_vec().ctx("read")?), &bits(&want))
}

fn mismatches(gpus: &[Gpu]) -> TestResult {
    let (a, b) = (&gpus[0], &gpus[1]);
    let ma = a.load(&cohort_kernels::PTX).ctx("load on A")?;
    let ka = tour::vector_add::load(&ma).ctx("kernel")?;
    let sb = b.new_stream().ctx("stream")?;
    let x = a.upload(&[1.0f32; 64]).ctx("upload")?;
    let mut out = a.upload(&[0.0f32; 64]).ctx("upload")?;
    match ka.launch(&sb, LaunchConfig::for_elements(64, 64), &x, &x, &mut out) {
        Err(Error::CrossDevice { what, device: 0, other: 1, .. }) if what.contains("vector_add") => {}
        r => return Err(format!("a module of device 0 launched on a stream of device 1: {r:?}")),
    }
    match sb.fill(&mut out, 2.0f32) {
        Err(Error::CrossDevice { device: 1, other: 0, .. }) => {}
        r => return Err(format!("a fill of device 0's buffer on a stream of device 1: {r:?}")),
    }
    let pinned = a.pinned_from(&[3.0f32; 64]).ctx("pinned")?;
    match sb.copy(&pinned, &mut out) {
        Err(Error::CrossDevice { what, device: 1, other: 0, .. }) if what == "copy" => {}
        r => return Err(format!("device 0's pinned memory copied on a stream of device 1: {r:?}")),
    }
    let ev = cohort_runtime::Event::new(a).ctx("event")?;
    match ev.record(&sb) {
        Err(Error::CrossDevice { device: 0, other: 1, .. }) => {}
        r => return Err(format!("device 0's event recorded on a stream of device 1: {r:?}")),
    }
    // A graph captured on device 0 replayed on a stream of device 1.
    let cap = a.new_stream_with(cohort_runtime::StreamOptions::new().non_blocking(true)).ctx("stream")?;
    let mut other = a.upload(&[0.0f32; 64]).ctx("upload")?;
    let graph = cap
        .capture(|s| ka.launch(s, LaunchConfig::for_elements(64, 64), &x, &x, &mut other))
        .ctx("capture")?
        .instantiate()
        .ctx("instantiate")?;
    match graph.launch(&sb) {
        Err(Error::CrossDevice { device: 0, other: 1, .. }) => {}
        r => return Err(format!("device 0's graph replayed on a stream of device 1: {r:?}")),
    }
    b.synchronize().ctx("sync")?;
    check_all("graph output untouched", &other.to_vec().ctx("read")?, &[0.0f32; 64])?;
    // Nothing was enqueued: the buffer is as uploaded.
    check_all("untouched", &out.to_vec().ctx("read")?, &[0.0f32; 64])
}

/// `vector_add` on every GPU: interleaved from one thread (each call binds its own context),
/// then each GPU from a thread of its own, the `Gpu`s shared by reference.
fn alternately_and_threads(gpus: &[Gpu]) -> TestResult {
    let n = 300_007;
    let (x, y) = (pattern("multi_gpu_alt_x", n), pattern("multi_gpu_alt_y", n));
    let want: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    let cfg = LaunchConfig::for_elements(n, 256);
    let run = |g: &Gpu, k: &tour::vector_add, round: usize| -> TestResult {
        let (dx, dy) = (g.upload(&x).ctx("upload")?, g.upload(&y).ctx("upload")?);
        let mut out = g.upload(&vec![f32::NAN; n]).ctx("upload")?;
        k.launch(g.stream(), cfg, &dx, &dy, &mut out).ctx("launch")?;
        let what = format!("device {} round {round}", g.info().ordinal);
        check_all(&what, &bits(&out.to_vec().ctx("read")?), &bits(&want))
    };
    let kernels = gpus
        .iter()
        .map(|g| g.load(&cohort_kernels::PTX).and_then(|m| tour::vector_add::load(&m)))
        .collect::<Result<Vec<_>, _>>()
        .ctx("load on every GPU")?;
    for round in 0..3 {
        for (g, k) in gpus.iter().zip(&kernels) {
            run(g, k, round)?;
        }
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = gpus.iter().zip(&kernels).map(|(g, k)| s.spawn(move || run(g, k, 99))).collect();
        handles.into_iter().try_for_each(|h| h.join().map_err(|_| "a thread panicked".to_string())?)
    })
}

/// Two contexts of one device (primary and isolated) follow the same rules as two GPUs:
/// runs on one GPU. A kernel of one given the other's buffer, or launched on its stream, is
/// refused; copies between them are peer copies, ordered and checked.
fn two_contexts_of_one_device(gpus: &[Gpu]) -> TestResult {
    let p = &gpus[0];
    let iso = Gpu::isolated(p.info().ordinal).ctx("isolated")?;
    ensure(!iso.same_context(p), || "an isolated Gpu has a context of its own".into())?;
    ensure(Gpu::new(0).ctx("Gpu::new")?.same_context(p), || "primary contexts are shared".into())?;
    let n = 200_003;
    let (x, y) = (pattern("multi_gpu_ctx_x", n), pattern("multi_gpu_ctx_y", n));
    let cfg = LaunchConfig::for_elements(n, 256);
    let k = tour::vector_add::load(&iso.load(&cohort_kernels::PTX).ctx("load")?).ctx("kernel")?;
    let x_p = p.upload(&x).ctx("upload")?;
    let y_i = iso.upload(&y).ctx("upload")?;
    let mut out_i = iso.upload(&vec![f32::NAN; n]).ctx("upload")?;
    match k.launch(iso.stream(), cfg, &x_p, &y_i, &mut out_i) {
        Err(e @ Error::CrossDevice { .. }) => {
            ensure(e.to_string().contains("another context"), || format!("the error says why: {e}"))?
        }
        r => return Err(format!("a kernel given another context's buffer: {r:?}")),
    }
    match k.launch(p.stream(), cfg, &y_i, &y_i, &mut out_i) {
        Err(Error::CrossDevice { .. }) => {}
        r => return Err(format!("a kernel launched on another context's stream: {r:?}")),
    }
    // Primary -> isolated on a stream of the isolated context, then the kernel on another of
    // its streams reads the copy (the tracker orders it).
    let mut x_i = iso.upload(&vec![f32::NAN; n]).ctx("upload")?;
    let (s1, s2) = (iso.new_stream().ctx("stream")?, iso.new_stream().ctx("stream")?);
    s1.copy(&x_p, &mut x_i).ctx("copy primary -> isolated")?;
    k.launch(&s2, cfg, &x_i, &y_i, &mut out_i).ctx("launch")?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    // Isolated -> primary on the primary's stream.
    let mut back = p.upload(&vec![f32::NAN; n]).ctx("upload")?;
    p.stream().copy(&out_i, &mut back).ctx("copy isolated -> primary")?;
    check_all("through two contexts (bits)", &bits(&back.to_vec().ctx("read")?), &bits(&want))
}

/// A module variable of GPU 0 set on a stream of GPU 1, events of two GPUs timed against each
/// other, and (without peer access) a kernel of GPU 1 given GPU 0's memory are
/// `Error::CrossDevice`; a stream of GPU 1 waiting for GPU 0's event is allowed (CUDA orders
/// across devices) and orders the work.
fn events_and_variables(gpus: &[Gpu]) -> TestResult {
    let (a, b) = (&gpus[0], &gpus[1]);
    let ma = a.load(&cohort_test_kernels::PTX).ctx("load on A")?;
    let poly = ma.constant(&cohort_test_kernels::globals::POLY).ctx("POLY")?;
    let (sa, sb) = (a.new_stream().ctx("stream")?, b.new_stream().ctx("stream")?);
    match poly.set(&sb, &[3.0f32; 8]) {
        Err(Error::CrossDevice { device: 0, other: 1, .. }) => {}
        r => return Err(format!("device 0's module variable set on a stream of device 1: {r:?}")),
    }
    ensure(poly.get().ctx("get")? == [1.0f32, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], || "the variable changed".into())?;
    let (ea, eb) = (cohort_runtime::Event::new(a).ctx("event")?, cohort_runtime::Event::new(b).ctx("event")?);
    ea.record(&sa).ctx("record")?;
    eb.record(&sb).ctx("record")?;
    ea.synchronize().ctx("sync")?;
    eb.synchronize().ctx("sync")?;
    match eb.elapsed_ms_since(&ea) {
        Err(e @ Error::CrossDevice { device: 1, other: 0, .. }) => {
            let m = e.to_string();
            ensure(m.contains("GPU 1") && m.contains("GPU 0"), || format!("the error names both GPUs: {m}"))?;
        }
        r => return Err(format!("events of two GPUs timed: {r:?}")),
    }
    // B waits for A's event: a slow writer on A, then a copy on B of its output.
    let n = 1 << 20;
    let w = cohort_test_kernels::streams::slow_write::load(&ma).ctx("load")?;
    let mut xa = a.zeroed::<u32>(n).ctx("alloc")?;
    let mut xb = b.zeroed::<u32>(n).ctx("alloc")?;
    w.launch(&sa, LaunchConfig::for_elements(n, 256), &mut xa, 17, 20_000_000).ctx("slow writer")?;
    ea.record(&sa).ctx("record")?;
    sb.wait(&ea).ctx("a stream of device 1 waiting for device 0's event")?;
    sb.copy(&xa, &mut xb).ctx("peer copy")?;
    check_all("copied after the wait", &xb.to_vec().ctx("read")?, &(0..n as u32).map(|i| 17 + i).collect::<Vec<_>>())?;
    // Without peer access, a kernel of B given A's memory is refused.
    if !b.peer_access_enabled(a) {
        let mb = b.load(&cohort_test_kernels::PTX).ctx("load on B")?;
        let add = cohort_test_kernels::streams::add_in_place::load(&mb).ctx("load")?;
        match add.launch(&sb, LaunchConfig::for_elements(n, 256), &mut xa, 1) {
            Err(Error::CrossDevice { device: 1, other: 0, .. }) => {}
            r => return Err(format!("a kernel of device 1 given device 0's memory without peer access: {r:?}")),
        }
    }
    Ok(())
}
