//! `cohort bench launch`: host time per launch, typed launcher vs raw `cuLaunchKernel`.

use std::time::Instant;

use cohort_kernels::PTX;
use cohort_kernels::checks;
use cohort_runtime::{Gpu, LaunchConfig, cudarc::driver::sys};

use crate::timing;
use crate::util::{self, CliError, CliResult, Table};

/// Per-launch host time of `launch` ([`timing::per_launch_ns`]), after a batch of untimed
/// launches.
fn per_launch_ns(
    gpu: &Gpu,
    iters: usize,
    mut launch: impl FnMut() -> cohort_runtime::Result<()>,
) -> cohort_runtime::Result<Vec<f64>> {
    for _ in 0..timing::LAUNCH_BATCH {
        launch()?;
    }
    gpu.stream().synchronize()?;
    timing::per_launch_ns(iters, &|| gpu.stream().synchronize(), launch)
}

/// `cohort bench launch`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Launches timed per kind (at least 10000; the median is reported)
    #[arg(long, default_value = "100000", value_parser = util::parse_usize)]
    pub iters: usize,
}

pub fn run(args: Args) -> CliResult {
    let Args { iters } = args;
    if iters < 10_000 {
        return Err(CliError::Usage("--iters must be at least 10000".into()));
    }
    let gpu = util::gpu()?;
    println!("{}", gpu.info());
    let module = gpu.load(&PTX)?;
    let empty = checks::empty::load(&module)?;
    let empty_args = checks::empty_args::load(&module)?;
    let a = gpu.upload(&[1.0f32; 256])?;
    let mut out = gpu.zeroed::<f32>(256)?;
    let cfg = LaunchConfig::new(1, 32);
    let stream = gpu.stream().cu_stream();

    let raw = |f: sys::CUfunction, params: &mut [*mut std::ffi::c_void]| -> cohort_runtime::Result<()> {
        // SAFETY: `f` is a live kernel of the current context and `params` matches its
        // signature (both benchmarks below pass exactly the kernel's parameters).
        unsafe { sys::cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(|code| cohort_runtime::Error::Driver { what: "cuLaunchKernel".into(), code })
    };
    gpu.cuda_context()
        .expect("a GPU (benchmarks need one)")
        .bind_to_thread()
        .map_err(|code| cohort_runtime::Error::Driver { what: "bind".into(), code })?;

    let mut rows = Vec::new();
    // Alternate the two so drift (clocks, other load) hits both alike.
    let mut typed0 = Vec::new();
    let mut raw0 = Vec::new();
    let mut typed3 = Vec::new();
    let mut raw3 = Vec::new();
    let rounds = 4;
    for _ in 0..rounds {
        typed0.extend(per_launch_ns(&gpu, iters / rounds, || empty.launch(gpu.stream(), cfg))?);
        raw0.extend(per_launch_ns(&gpu, iters / rounds, || raw(empty.function().cu_function(), &mut []))?);
        typed3.extend(per_launch_ns(&gpu, iters / rounds, || empty_args.launch(gpu.stream(), cfg, &a, 256, &mut out))?);
        let (ptr_a, len_a, n, ptr_o, len_o) =
            (a.as_device_ptr().addr(), a.len(), 256u32, out.as_device_ptr_mut().addr(), out.len());
        raw3.extend(per_launch_ns(&gpu, iters / rounds, || {
            let mut p: [*mut std::ffi::c_void; 5] = [
                (&raw const ptr_a).cast_mut().cast(),
                (&raw const len_a).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
                (&raw const ptr_o).cast_mut().cast(),
                (&raw const len_o).cast_mut().cast(),
            ];
            raw(empty_args.function().cu_function(), &mut p)
        })?);
    }
    for (name, typed, raw) in
        [("empty()", &mut typed0, &mut raw0), ("empty_args(&[f32], u32, DisjointSlice<f32>)", &mut typed3, &mut raw3)]
    {
        let (mt, mr) = (util::median(typed), util::median(raw));
        rows.push((
            name,
            mt,
            util::quantile(typed, 0.1),
            util::quantile(typed, 0.9),
            mr,
            util::quantile(raw, 0.1),
            util::quantile(raw, 0.9),
        ));
    }
    println!("\nhost time per launch, {iters} launches each (1 block of 32 threads), median [p10, p90] in ns:\n");
    let mut t = Table::new(&["kernel", "typed launch", "raw cuLaunchKernel", "typed - raw"]).numeric(1..4);
    for (name, mt, t10, t90, mr, r10, r90) in rows {
        t.row(vec![
            name.to_string(),
            format!("{mt:.0} [{t10:.0}, {t90:.0}]"),
            format!("{mr:.0} [{r10:.0}, {r90:.0}]"),
            format!("{:+.0} ns ({:.3} us)", mt - mr, (mt - mr) / 1000.0),
        ]);
    }
    t.print();
    graphs(&gpu, &empty_args, &a, &mut out)?;
    Ok(())
}

/// Launch rate of `K` small kernels: typed launches one by one vs one replay of a graph
/// captured from the same launches (median of rounds; each round ends with a synchronize).
fn graphs(
    gpu: &Gpu,
    kernel: &checks::empty_args,
    a: &cohort_runtime::DeviceBuffer<f32>,
    out: &mut cohort_runtime::DeviceBuffer<f32>,
) -> CliResult {
    const K: usize = 200;
    const ROUNDS: usize = 50;
    let s = gpu.new_stream_with(cohort_runtime::StreamOptions::new().non_blocking(true))?;
    let cfg = LaunchConfig::new(1, 32);
    let graph = s.capture(|s| {
        for _ in 0..K {
            kernel.launch(s, cfg, a, 256, &mut *out)?;
        }
        Ok(())
    })?;
    let exec = graph.instantiate()?;
    let (mut one_by_one, mut replayed) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS + 2 {
        let t = Instant::now();
        for _ in 0..K {
            kernel.launch(&s, cfg, a, 256, &mut *out)?;
        }
        s.synchronize()?;
        let direct = t.elapsed().as_nanos() as f64 / K as f64;
        let t = Instant::now();
        exec.launch(&s)?;
        s.synchronize()?;
        let graph = t.elapsed().as_nanos() as f64 / K as f64;
        if round >= 2 {
            one_by_one.push(direct);
            replayed.push(graph);
        }
    }
    let (d, g) = (util::median(&mut one_by_one), util::median(&mut replayed));
    println!(
        "\n{K} launches of empty_args, then a synchronize, median of {ROUNDS} rounds: typed launches {:.2} us per \
         kernel, one graph replay {:.2} us per kernel ({:.2}x the launch rate)",
        d / 1000.0,
        g / 1000.0,
        d / g
    );
    Ok(())
}
