//! Streams, pinned memory and asynchronous copies, as NVIDIA's "How to Overlap Data Transfers"
//! uses them: the article's three ways (sequential; per stream upload, kernel, download; all
//! uploads, all kernels, all downloads) on chunks of one pinned array, and
//! [`cohort_runtime::Pipeline`] on an input many times its staging, and from and into pinned
//! arrays many times its device chunks — each element checked against the CPU.

use cohort_kernels::overlap as k;
use cohort_runtime::{Error, LaunchConfig, Pipeline, Stream};
use cohort_tests::{Context, Ctx, TestResult, check_all_by, ensure, gpu_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("overlap_three_ways_on_4_and_8_streams", three_ways),
        gpu_trial("overlap_pipeline_input_larger_than_staging", pipeline),
        gpu_trial("overlap_pipeline_pinned_input_larger_than_device_chunks", pipeline_pinned),
    ]
}

/// Before each run: `(i % 1024) / 1024`, so that a chunk copied to the wrong place shows.
fn initial(i: usize) -> f32 {
    (i % 1024) as f32 / 1024.0
}

/// The CPU's evaluation of the kernel: `a + √(sin²x + cos²x)`, `x = i`.
fn cpu(a: f32, i: usize) -> f32 {
    let (s, c) = (i as u32 as f32).sin_cos();
    a + s.mul_add(s, c * c).sqrt()
}

fn close(g: &f32, w: &f32) -> bool {
    (g - w).abs() < 1e-5
}

#[derive(Clone, Copy, Debug)]
enum Way {
    Sequential,
    V1,
    V2,
}

fn three_ways(c: &Ctx) -> TestResult {
    let kern = k::overlap_add::load(&c.module).ctx("load")?;
    let n = c.pick(1usize << 22, 1 << 18);
    let init: Vec<f32> = (0..n).map(initial).collect();
    let want: Vec<f32> = (0..n).map(|i| cpu(init[i], i)).collect();
    let mut host = c.gpu.pinned_from(&init).ctx("pinned")?;
    let mut dev = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
    let streams: Vec<Stream> = (0..8).map(|_| c.gpu.new_stream()).collect::<Result<_, _>>().ctx("streams")?;
    let legacy = c.gpu.legacy_stream();
    for (way, count) in [(Way::Sequential, 1), (Way::V1, 4), (Way::V1, 8), (Way::V2, 4), (Way::V2, 8)] {
        host.as_mut_slice().ctx("host view")?.copy_from_slice(&init);
        let what = format!("{way:?} on {count} streams");
        let len = n / count;
        let chunk = |i: usize| i * len..(i + 1) * len;
        let cfg = LaunchConfig::for_elements(len, 256);
        match way {
            Way::Sequential => {
                legacy.copy(&host, &mut dev).ctx("H2D")?;
                kern.launch(&legacy, LaunchConfig::for_elements(n, 256), &mut dev, 0).ctx("kernel")?;
                legacy.copy(&dev, &mut host).ctx("D2H")?;
            }
            Way::V1 => {
                for (i, s) in streams.iter().take(count).enumerate() {
                    let r = chunk(i);
                    s.copy(host.slice(r.clone()), dev.slice_mut(r.clone())).ctx("H2D")?;
                    kern.launch(s, cfg, dev.slice_mut(r.clone()), r.start as u32).ctx("kernel")?;
                    s.copy(dev.slice(r.clone()), host.slice_mut(r)).ctx("D2H")?;
                }
            }
            Way::V2 => {
                for (i, s) in streams.iter().take(count).enumerate() {
                    s.copy(host.slice(chunk(i)), dev.slice_mut(chunk(i))).ctx("H2D")?;
                }
                for (i, s) in streams.iter().take(count).enumerate() {
                    kern.launch(s, cfg, dev.slice_mut(chunk(i)), chunk(i).start as u32).ctx("kernel")?;
                }
                for (i, s) in streams.iter().take(count).enumerate() {
                    s.copy(dev.slice(chunk(i)), host.slice_mut(chunk(i))).ctx("D2H")?;
                }
            }
        }
        // No synchronize: the host view waits for the downloads still writing the array.
        check_all_by(&what, host.as_slice().ctx("host view")?, &want, close)?;
        // The device copy too, read synchronously (it waits for the kernels on every stream).
        check_all_by(&format!("{what}, device copy"), &dev.to_vec().ctx("read")?, &want, close)?;
    }
    Ok(())
}

fn pipeline(c: &Ctx) -> TestResult {
    let kern = k::overlap_add_to::load(&c.module).ctx("load")?;
    // 64 Mi floats and a ragged tail, through 4 streams × 2 slots of 4 MiB: 65 chunks, each
    // staging slot reused eight times (on the CPU device, chunks of 16 Ki floats: the same
    // 65 chunks, 1/64 of the data).
    let chunk = c.pick(1usize << 20, 1 << 14);
    let n = 64 * chunk + 12_345;
    let input: Vec<f32> = (0..n).map(|i| initial(i) - 0.5).collect();
    let mut output = vec![f32::NAN; n];
    let mut pipe = Pipeline::<f32, f32>::new(&c.gpu, 4, chunk).ctx("pipeline")?;
    ensure(pipe.device_bytes() == 4 * chunk * 8, || format!("device bytes {}", pipe.device_bytes()))?;
    let mut seen = Vec::new();
    let mut reports = Vec::new();
    let stats = pipe
        .run_with_progress(
            &input,
            &mut output,
            |s, i, o, ch| {
                seen.push(ch);
                if i.len() != ch.len || o.len() != ch.len {
                    return Err(Error::Argument(format!("views of {} and {} for {ch:?}", i.len(), o.len())));
                }
                kern.launch(s, LaunchConfig::for_elements(ch.len, 256), i, o, ch.start as u32)
            },
            |done, total| reports.push((done, total)),
        )
        .ctx("run")?;
    let chunks = n.div_ceil(chunk);
    ensure(stats.chunks == chunks && stats.elements == n, || format!("{stats:?}, expected {chunks} chunks"))?;
    for (k, ch) in seen.iter().enumerate() {
        let len = chunk.min(n - k * chunk);
        ensure(ch.index == k && ch.start == k * chunk && ch.len == len, || format!("chunk {k} given as {ch:?}"))?;
    }
    ensure(seen.len() == chunks, || format!("the kernel closure ran {} times for {chunks} chunks", seen.len()))?;
    // Progress: once per chunk, increasing, ending at the total.
    let increasing = reports.windows(2).all(|w| w[0].0 < w[1].0);
    ensure(reports.len() == chunks && increasing && reports.last() == Some(&(n, n)), || {
        format!("{} progress reports, first {:?}, last {:?}", reports.len(), reports.first(), reports.last())
    })?;
    let want: Vec<f32> = (0..n).map(|i| cpu(input[i], i)).collect();
    check_all_by("pipeline output", &output, &want, close)?;

    // A second run through the same staging, shorter than one round of slots, gives the same.
    let m = 3 * chunk + 7;
    let mut again = vec![f32::NAN; m];
    pipe.run(&input[..m], &mut again, |s, i, o, ch| {
        kern.launch(s, LaunchConfig::for_elements(ch.len, 256), i, o, ch.start as u32)
    })
    .ctx("second run")?;
    check_all_by("second, short run", &again, &want[..m], close)?;

    // Lengths that differ are refused before anything runs.
    match pipe.run(&input[..10], &mut again[..9], |_, _, _, _| Ok(())) {
        Err(Error::Argument(_)) => Ok(()),
        other => Err(format!("input 10, output 9: expected Error::Argument, got {other:?}")),
    }
}

fn pipeline_pinned(c: &Ctx) -> TestResult {
    let kern = k::overlap_add_to::load(&c.module).ctx("load")?;
    // 16 Mi floats and a ragged tail through 3 streams of 1 Mi-element device chunks (12 MiB
    // on the device for 64 MiB each way): 17 chunks, each stream's chunks reused five or six
    // times, straight from and into pinned memory (on the CPU device, chunks of 16 Ki floats:
    // the same 17 chunks).
    let chunk = c.pick(1usize << 20, 1 << 14);
    let n = 16 * chunk + 4_321;
    let host: Vec<f32> = (0..n).map(|i| initial(i) - 0.25).collect();
    let want: Vec<f32> = (0..n).map(|i| cpu(host[i], i)).collect();
    // The input arrives from the device on another stream, not waited for: the run must wait
    // for that copy (stream-ordered tracking), not read the zeros there now.
    let mut input = c.gpu.pinned::<f32>(n).ctx("pinned input")?;
    let source = c.gpu.upload(&host).ctx("upload")?;
    let producer = c.gpu.new_stream().ctx("stream")?;
    producer.copy(&source, &mut input).ctx("D2H of the input")?;
    let mut output = c.gpu.pinned::<f32>(n).ctx("pinned output")?;
    output.as_mut_slice().ctx("output view")?.fill(f32::NAN);
    let mut pipe = Pipeline::<f32, f32>::new(&c.gpu, 3, chunk).ctx("pipeline")?;
    let mut seen = Vec::new();
    let mut reports = Vec::new();
    let stats = pipe
        .run_pinned_with_progress(
            &input,
            &mut output,
            |s, i, o, ch| {
                seen.push(ch);
                if i.len() != ch.len || o.len() != ch.len {
                    return Err(Error::Argument(format!("views of {} and {} for {ch:?}", i.len(), o.len())));
                }
                kern.launch(s, LaunchConfig::for_elements(ch.len, 256), i, o, ch.start as u32)
            },
            |done, total| reports.push((done, total)),
        )
        .ctx("run_pinned")?;
    let chunks = n.div_ceil(chunk);
    ensure(stats.chunks == chunks && stats.elements == n, || format!("{stats:?}, expected {chunks} chunks"))?;
    ensure(stats.host_copy.is_zero(), || format!("run_pinned copied on the host: {stats:?}"))?;
    for (k, ch) in seen.iter().enumerate() {
        let len = chunk.min(n - k * chunk);
        ensure(ch.index == k && ch.start == k * chunk && ch.len == len, || format!("chunk {k} given as {ch:?}"))?;
    }
    ensure(seen.len() == chunks, || format!("the kernel closure ran {} times for {chunks} chunks", seen.len()))?;
    let increasing = reports.windows(2).all(|w| w[0].0 < w[1].0);
    ensure(reports.len() == chunks && increasing && reports.last() == Some(&(n, n)), || {
        format!("{} progress reports, first {:?}, last {:?}", reports.len(), reports.first(), reports.last())
    })?;
    check_all_by("run_pinned output", output.as_slice().ctx("output view")?, &want, close)?;
    check_all_by("run_pinned input, unchanged", input.as_slice().ctx("input view")?, &host, |g, w| g == w)?;

    // The same pipeline then stages pageable arrays (allocating its staging now), and streams
    // pinned ones again, shorter than one round of streams: the same results.
    let m = 5 * chunk + 3;
    let mut staged = vec![f32::NAN; m];
    pipe.run(&host[..m], &mut staged, |s, i, o, ch| {
        kern.launch(s, LaunchConfig::for_elements(ch.len, 256), i, o, ch.start as u32)
    })
    .ctx("staged run after run_pinned")?;
    check_all_by("staged run after run_pinned", &staged, &want[..m], close)?;
    let short_in = c.gpu.pinned_from(&host[..m]).ctx("pinned")?;
    let mut short_out = c.gpu.pinned::<f32>(m).ctx("pinned")?;
    pipe.run_pinned(&short_in, &mut short_out, |s, i, o, ch| {
        kern.launch(s, LaunchConfig::for_elements(ch.len, 256), i, o, ch.start as u32)
    })
    .ctx("second run_pinned")?;
    check_all_by("second, short run_pinned", short_out.as_slice().ctx("view")?, &want[..m], close)?;

    // Lengths that differ are refused before anything runs.
    match pipe.run_pinned(&short_in, &mut output, |_, _, _, _| Ok(())) {
        Err(Error::Argument(_)) => Ok(()),
        other => Err(format!("input {m}, output {n}: expected Error::Argument, got {other:?}")),
    }
}
