//! The tour's SAXPY kernel on the CPU device, fast path, two ways, against parallel and
//! one-thread loops: `cargo run --release -p cohort --example cpu_saxpy [LOG2_N]` (default 24).
//!
//! - **body**: the kernel body (`__cohort_kernel_saxpy`) in a closure, arguments built once;
//! - **entry via fn pointer**: the host entry `#[kernel]` makes for the runtime
//!   (`__cohort_cpu_saxpy`), through a `CpuEntry`-typed pointer the compiler can't see through,
//!   as the runtime calls it: it reads the parameters once and runs the launch itself, the body
//!   inlined into the engine's thread loop;
//! - **parallel loop**: the same arithmetic over `available_parallelism` scoped threads, one
//!   contiguous chunk each (what rayon's `par_iter_mut().zip(..)` does for this memory-bound loop;
//!   `cohort-cpu`'s `cpu_bench` example measures rayon itself).
//!
//! Every variant is checked, every element, against `2 x + y0`. The per-thread overhead is
//! the time beyond the parallel loop's, divided by the number of CUDA threads.

#![allow(clippy::assign_op_pattern)] // written as the tour writes SAXPY

use std::ffi::c_void;
use std::time::Instant;

use cohort::prelude::*;
use cohort_cpu::{LaunchSpec, launch_typed};

/// `y[i] = a * x[i] + y[i]`.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    let i = thread::index_1d();
    if let Some(yi) = y.get_mut(&i) {
        *yi = a * x[*i] + *yi;
    }
}

/// `y`, borrowed exclusively for a launch, for each thread's `DisjointSlice` view.
struct Out<'a>(*mut f32, usize, core::marker::PhantomData<&'a mut [f32]>);
// SAFETY: only turned into `DisjointSlice` views, which keep the threads' writes disjoint.
unsafe impl Sync for Out<'_> {}

impl<'a> Out<'a> {
    fn view(&self) -> DisjointSlice<'a, f32> {
        // SAFETY: `self.1` elements borrowed exclusively for `'a`; each thread's view hands it
        // only its own element.
        unsafe { DisjointSlice::from_raw_parts(self.0, self.1) }
    }
}

/// A launch's parameter array, as the runtime builds it: one pointer per PTX parameter of the
/// entry (`a`, then `x`'s address and length, then `y`'s), each to a local of that type.
struct Params([*mut c_void; 5]);
// SAFETY: the launch's threads only read the array and the locals it points at, while `main`
// keeps them alive and waits for the launch.
unsafe impl Sync for Params {}

/// The type of the runtime's `CpuEntry` (`cohort_runtime::CpuEntry`).
type CpuEntry = unsafe fn(*const *mut c_void, &LaunchSpec) -> Result<(), cohort_cpu::CpuError>;

/// Best of `reps` runs of `run`, each on `y` reset to `y0` first (untimed); then checks every
/// element of `y` against `2 x + y0`.
fn measure(name: &str, reps: usize, x: &[f32], y0: &[f32], y: &mut [f32], mut run: impl FnMut(&mut [f32])) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..reps {
        y.copy_from_slice(y0);
        let t = Instant::now();
        run(y);
        best = best.min(t.elapsed().as_secs_f64());
    }
    for i in 0..y.len() {
        assert_eq!(y[i].to_bits(), (2.0 * x[i] + y0[i]).to_bits(), "{name}: element {i}");
    }
    best
}

fn main() {
    let log2: u32 = std::env::args().nth(1).map_or(24, |s| s.parse().expect("LOG2_N: an integer"));
    let n = 1usize << log2;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 777) as f32).collect();
    let mut y = y0.clone();
    let spec = LaunchSpec::new(n.div_ceil(256) as u32, 256u32).fast_path();
    let reps = 5;

    let body = measure("body", reps, &x, &y0, &mut y, |y| {
        let out = Out(y.as_mut_ptr(), y.len(), core::marker::PhantomData);
        launch_typed(&spec, &|| __cohort_kernel_saxpy(2.0, &x, out.view())).unwrap();
    });

    // The parameter array as the generated launcher builds it: `a`, `x` (address, length),
    // `y` (address, length).
    let params = |y: &mut [f32], run: &dyn Fn(&Params)| {
        let a = 2.0f32;
        let (x_ptr, x_len) = (x.as_ptr() as u64, x.len());
        let (y_ptr, y_len) = (y.as_mut_ptr() as u64, y.len());
        let p = Params([
            (&raw const a).cast_mut().cast::<c_void>(),
            (&raw const x_ptr).cast_mut().cast::<c_void>(),
            (&raw const x_len).cast_mut().cast::<c_void>(),
            (&raw const y_ptr).cast_mut().cast::<c_void>(),
            (&raw const y_len).cast_mut().cast::<c_void>(),
        ]);
        run(&p);
    };
    let entry_ptr = measure("entry via fn pointer", reps, &x, &y0, &mut y, |y| {
        let f: CpuEntry = std::hint::black_box(__cohort_cpu_saxpy as CpuEntry);
        params(y, &|p| {
            // SAFETY: `p` is `saxpy`'s parameter array, each pointer to a local of its PTX
            // parameter's type, alive until the launch returns; `x` and `y` live, `y` touched by
            // nothing else meanwhile; `spec` is a plain (non-cooperative) launch.
            unsafe { f(p.0.as_ptr(), &spec) }.unwrap();
        });
    });

    let par = measure("parallel loop", reps, &x, &y0, &mut y, |y| {
        let chunk = n.div_ceil(cores);
        std::thread::scope(|s| {
            for (ys, xs) in y.chunks_mut(chunk).zip(x.chunks(chunk)) {
                s.spawn(move || {
                    for (yi, xi) in ys.iter_mut().zip(xs) {
                        *yi = 2.0 * xi + *yi;
                    }
                });
            }
        });
    });
    let one = measure("one-thread loop", reps, &x, &y0, &mut y, |y| {
        for (yi, xi) in y.iter_mut().zip(&x) {
            *yi = 2.0 * xi + *yi;
        }
    });

    println!("SAXPY 2^{log2} f32 on {cores} cores, fast path (Mode::Loop), best of {reps}, every element checked:");
    let row = |name: &str, t: f64| {
        let over = (t - par).max(0.0) / n as f64 * 1e9;
        println!(
            "  {name:<24} {:>8.2} ms  {:>6.2} G elements/s  {:>5.2}x the parallel loop  {over:>5.2} ns/thread over it",
            t * 1e3,
            n as f64 / t / 1e9,
            par / t
        );
    };
    row("body (closure)", body);
    row("entry via fn pointer", entry_ptr);
    row("parallel loop", par);
    row("one-thread loop", one);
}
