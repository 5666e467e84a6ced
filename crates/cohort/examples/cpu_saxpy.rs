//! The tour's SAXPY kernel body on the CPU device, fast path, against a plain loop:
//! `cargo run --release -p cohort --example cpu_saxpy`.

#![allow(clippy::assign_op_pattern)] // written as the tour writes SAXPY

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

fn main() {
    let n = 1usize << 24;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; n];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let out = Out(y.as_mut_ptr(), n, core::marker::PhantomData);
        let t = Instant::now();
        launch_typed(&LaunchSpec::new((n / 256) as u32, 256u32).fast_path(), &|| {
            __cohort_kernel_saxpy(2.0, &x, out.view())
        })
        .unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let mut best_loop = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for (yi, xi) in y.iter_mut().zip(&x) {
            *yi = 2.0 * xi + *yi;
        }
        best_loop = best_loop.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&y);
    println!(
        "SAXPY 2^24 f32: CPU device (fast path, kernel body) {:.1} ms = {:.2} G elements/s; one-thread loop {:.1} ms",
        best * 1e3,
        n as f64 / best / 1e9,
        best_loop * 1e3
    );
}
