//! `cohort bench interop`: host time per launch of one kernel (`saxpy_f32`, one block) on
//! cudarc's memory and stream, four ways: cudarc's own `launch_builder` on the kernel's PTX
//! entry (the plain cudarc launch, ordered by cudarc's events), Cohort's typed launch with the
//! cudarc slices as arguments (ordered by the same events, plus Cohort's checks), Cohort's typed
//! launch on Cohort buffers (on cudarc's stream, and on a Cohort stream of its own), and a raw
//! `cuLaunchKernel` (no ordering at all). Every variant's result is checked against the CPU after
//! its launches.

use std::sync::Arc;

use cohort_kernels::PTX;
use cohort_kernels::tour;
use cohort_runtime::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, LaunchConfig as CuConfig, PushKernelArg, sys,
};
use cohort_runtime::cudarc::nvrtc::Ptx;
use cohort_runtime::interop::{AsCohort, AsCohortMut};
use cohort_runtime::{Gpu, LaunchConfig};

use crate::timing::per_launch_ns;
use crate::util::{self, CliError, CliResult, Table};

/// `cohort bench interop`'s options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Launches timed per variant (at least 10000; the median is reported)
    #[arg(long, default_value = "40000", value_parser = util::parse_usize)]
    pub iters: usize,
}

const N: usize = 256;

fn driver(what: &str) -> impl Fn(cohort_runtime::cudarc::driver::DriverError) -> CliError + '_ {
    move |code| CliError::from(cohort_runtime::Error::Driver { what: what.into(), code })
}

pub fn run(args: Args) -> CliResult {
    let Args { iters } = args;
    if iters < 10_000 {
        return Err(CliError::Usage("--iters must be at least 10000".into()));
    }
    let any = util::gpu()?;
    if any.is_cpu() {
        return Err(CliError::Usage("`bench interop` needs a GPU: cudarc has no CPU device".into()));
    }
    let ctx = CudaContext::new(any.info().ordinal).map_err(driver("creating a cudarc context"))?;
    let gpu = Gpu::from_cudarc(&ctx)?;
    println!("{}", gpu.info());
    let cs: Arc<CudaStream> = ctx.new_stream().map_err(driver("creating a cudarc stream"))?;
    let stream = gpu.cudarc_stream(&cs)?;
    let module = gpu.load(&PTX)?;
    let saxpy = tour::saxpy::<f32>::load(&module)?;
    let ptx = PTX.select(gpu.info().cc()).ok_or_else(|| CliError::Usage("no PTX for this GPU".into()))?;
    let cu_module = ctx.load_module(Ptx::from_src(ptx.text())).map_err(driver("loading the PTX through cudarc"))?;
    let cu_saxpy = cu_module.load_function(tour::saxpy::<f32>::NAME).map_err(driver("cudarc load_function"))?;

    let xs: Vec<f32> = (0..N).map(|i| (i % 5) as f32).collect();
    let x: CudaSlice<f32> = cs.clone_htod(&xs).map_err(driver("copying to the GPU"))?;
    let zeros = vec![0.0f32; N];
    let mut y_cudarc = cs.clone_htod(&zeros).map_err(driver("copying to the GPU"))?;
    let mut y_interop = cs.clone_htod(&zeros).map_err(driver("copying to the GPU"))?;
    let x_cohort = gpu.upload(&xs)?;
    let mut y_cohort = gpu.zeroed::<f32>(N)?;
    let mut y_raw = gpu.zeroed::<f32>(N)?;
    let (a, n) = (1.0f32, N);
    let cfg = LaunchConfig::new(1, N as u32);
    let cu_cfg = CuConfig { grid_dim: (1, 1, 1), block_dim: (N as u32, 1, 1), shared_mem_bytes: 0 };
    let raw_stream = cs.cu_stream();
    let (x_ptr, y_ptr) = (x_cohort.as_device_ptr().addr(), y_raw.as_device_ptr_mut().addr());
    let raw_fn = saxpy.function().cu_function();
    ctx.bind_to_thread().map_err(driver("binding the context"))?;

    // A Cohort stream of its own (not cudarc's): its operations skip the capture query that a
    // stream cudarc holds needs.
    let own = gpu.new_stream_with(cohort_runtime::StreamOptions::new().non_blocking(true))?;
    let mut y_own = gpu.zeroed::<f32>(N)?;
    let names = [
        "cudarc launch_builder, cudarc slices",
        "Cohort typed launch, cudarc slices (.cohort())",
        "Cohort typed launch, Cohort buffers",
        "Cohort typed launch, Cohort buffers, Cohort's own stream",
        "raw cuLaunchKernel, no ordering",
    ];
    let sync_cs = || cs.synchronize().map_err(driver("synchronizing"));
    let sync_own = || -> CliResult { Ok(own.synchronize()?) };
    let mut times: [Vec<f64>; 5] = Default::default();
    let rounds = 4;
    for _ in 0..rounds {
        let per = iters / rounds;
        times[0].extend(per_launch_ns(per, &sync_cs, || {
            let mut b = cs.launch_builder(&cu_saxpy);
            b.arg(&a).arg(&x).arg(&n).arg(&mut y_cudarc).arg(&n);
            // SAFETY: `saxpy_f32(a: f32, x: &[f32], y: DisjointSlice<f32>)` takes exactly these
            // parameters (a slice is its address and its length); one block of `N` threads
            // touches the `N` elements of each.
            unsafe { b.launch(cu_cfg) }.map(|_| ()).map_err(driver("cudarc launch"))
        })?);
        times[1].extend(per_launch_ns(per, &sync_cs, || {
            Ok(saxpy.launch(&stream, cfg, a, x.cohort(), y_interop.cohort_mut())?)
        })?);
        times[2]
            .extend(per_launch_ns(per, &sync_cs, || Ok(saxpy.launch(&stream, cfg, a, &x_cohort, &mut y_cohort)?))?);
        times[3].extend(per_launch_ns(per, &sync_own, || Ok(saxpy.launch(&own, cfg, a, &x_cohort, &mut y_own)?))?);
        ctx.bind_to_thread().map_err(driver("binding the context"))?;
        times[4].extend(per_launch_ns(per, &sync_cs, || {
            let mut p: [*mut std::ffi::c_void; 5] = [
                (&raw const a).cast_mut().cast(),
                (&raw const x_ptr).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
                (&raw const y_ptr).cast_mut().cast(),
                (&raw const n).cast_mut().cast(),
            ];
            // SAFETY: a live kernel of the current context (`cs` binds it below), the parameters
            // of `saxpy_f32`, buffers of `N` elements that nothing else uses meanwhile.
            unsafe {
                sys::cuLaunchKernel(
                    raw_fn,
                    1,
                    1,
                    1,
                    N as u32,
                    1,
                    1,
                    0,
                    raw_stream,
                    p.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(driver("cuLaunchKernel"))
        })?);
    }
    // Every variant's result: y = launches * a * x, exactly (small integers in f32).
    let results = [
        cs.clone_dtoh(&y_cudarc).map_err(driver("copying back"))?,
        cs.clone_dtoh(&y_interop).map_err(driver("copying back"))?,
        y_cohort.to_vec()?,
        y_own.to_vec()?,
        y_raw.to_vec()?,
    ];
    // Every launch timed is one launch made.
    let counts = times.each_ref().map(Vec::len);
    for ((name, got), count) in names.iter().zip(&results).zip(counts) {
        let want: Vec<f32> = xs.iter().map(|x| count as f32 * a * x).collect();
        if let Some(i) = (0..N).find(|&i| got[i] != want[i]) {
            return Err(CliError::Usage(format!(
                "{name}: y[{i}] = {} after {count} launches, expected {}",
                got[i], want[i]
            )));
        }
    }
    println!(
        "\nhost time per launch of saxpy_f32 (1 block of {N}), {iters} launches each on one cudarc stream, median [p10, \
         p90] in ns; every result checked:\n"
    );
    let base = util::median(&mut times[0].clone());
    let mut t = Table::new(&["launch", "ns per launch", "vs cudarc"]).numeric(1..3);
    for (name, v) in names.iter().zip(times.iter_mut()) {
        let m = util::median(v);
        t.row(vec![
            name.to_string(),
            format!("{m:.0} [{:.0}, {:.0}]", util::quantile(v, 0.1), util::quantile(v, 0.9)),
            format!("{:+.0} ns", m - base),
        ]);
    }
    t.print();
    Ok(())
}
