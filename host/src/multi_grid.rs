//! `cohort multi-grid`: a Jacobi solver whose cooperative kernel runs on every GPU at once and
//! synchronizes across them with the multi-grid barrier, beside the same kernel on one GPU,
//! both checked against the CPU.
//!
//! The system `A x = b` is generated: a 2-D grid of `side × side` unknowns, each coupled to its
//! four neighbours with random weights in [-1, -0.25), the diagonal one more than the sum of
//! their magnitudes (strictly diagonally dominant, so Jacobi converges); `b` random in [-1, 1).
//! The off-diagonal entries are in CSR (`row_ptr`, `cols`, `vals`), replicated on every GPU.
//! [`jacobi_multi`](cohort_kernels::multi::jacobi_multi) runs `--sweeps` sweeps: each thread of
//! each grid updates its rows (a grid-stride loop over every grid) from its GPU's replica of the
//! iterate, and writes the new values to every GPU's replica of the next one
//! ([`MultiGridVecBuffer`]); two multi-grid phase barriers per sweep. The result must equal the
//! CPU's sweeps (same operations in the same order) to the last bit, and every replica must
//! agree; the residual `‖b − A x‖∞` is reported.

use std::time::Instant;

use cohort_kernels::PTX;
use cohort_kernels::multi::jacobi_multi;
use cohort_runtime::{Gpu, LaunchConfig, MultiGrid, MultiGridVecBuffer};

use cohort_host::reference::JacobiSystem as System;

use crate::util::{self, CliError, CliResult, Table};

/// `cohort multi-grid` options.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Unknowns per side of the 2-D grid (side² rows)
    #[arg(long, default_value = "4096", value_parser = crate::util::parse_positive)]
    pub side: usize,
    /// Jacobi sweeps (rounded up to an even number)
    #[arg(long, default_value = "100", value_parser = crate::util::parse_positive)]
    pub sweeps: usize,
    /// Timed solves per GPU count (the median is reported)
    #[arg(long, default_value = "5", value_parser = crate::util::parse_positive)]
    pub reps: usize,
}

/// Solves on `gpus` `reps` times; returns the median milliseconds and the solution.
pub fn solve(gpus: &[Gpu], sys: &System, pairs: u32, reps: usize) -> CliResult<(f64, Vec<f32>)> {
    let group = MultiGrid::new(gpus)?;
    let modules = gpus.iter().map(|g| g.load(&PTX)).collect::<cohort_runtime::Result<Vec<_>>>()?;
    let kernels = modules.iter().map(jacobi_multi::load).collect::<cohort_runtime::Result<Vec<_>>>()?;
    // As many blocks of 256 as every GPU holds at once.
    let per_sm = kernels
        .iter()
        .map(|k| k.function().max_active_blocks_per_sm(256, 0))
        .collect::<cohort_runtime::Result<Vec<_>>>()?;
    let per_sm = per_sm.into_iter().min().unwrap_or(1).max(1);
    let sms = gpus.iter().map(|g| g.info().sms).min().unwrap_or(1);
    let cfg = LaunchConfig::new(per_sm * sms, 256);
    let mut parts = Vec::new();
    for g in gpus {
        parts.push((
            g.upload(&sys.row_ptr)?,
            g.upload(&sys.cols)?,
            g.upload(&sys.vals)?,
            g.upload(&sys.diag)?,
            g.upload(&sys.b)?,
        ));
    }
    let n = sys.len();
    let mut x = MultiGridVecBuffer::<f32>::new(&group, n)?;
    let mut y = MultiGridVecBuffer::<f32>::new(&group, n)?;
    let zeros = vec![0.0f32; n];
    let mut times = Vec::new();
    for rep in 0..=reps {
        x.copy_from(&zeros)?;
        y.copy_from(&zeros)?;
        let t = Instant::now();
        let mut launch = group.launch(cfg);
        for ((k, g), (rp, c, v, d, b)) in kernels.iter().zip(gpus).zip(&parts) {
            k.add_to(&mut launch, g.stream(), rp, c, v, d, b, &mut x, &mut y, pairs)?;
        }
        launch.submit()?;
        for g in gpus {
            g.stream().synchronize()?;
        }
        if rep > 0 {
            times.push(t.elapsed().as_secs_f64() * 1e3); // the first is a warm-up
        }
    }
    let result = x.to_vec()?;
    for (r, replica) in x.replicas().iter().enumerate().skip(1) {
        if replica.to_vec()? != result {
            return Err(CliError::Failed(format!("GPU {r}'s replica of the solution differs from GPU 0's")));
        }
    }
    Ok((util::median(&mut times), result))
}

pub fn run(args: Args) -> CliResult {
    let gpus = Gpu::all()?;
    for g in &gpus {
        println!("{}", g.info());
    }
    let pairs = args.sweeps.div_ceil(2) as u32;
    let sys = System::generate(args.side, 11);
    println!(
        "Jacobi, {}×{} grid: {} unknowns, {} off-diagonal entries, {} sweeps; median of {} solves",
        args.side,
        args.side,
        sys.len(),
        sys.vals.len(),
        2 * pairs,
        args.reps
    );
    let cpu = sys.solve_cpu(2 * pairs as usize);
    let mut counts = vec![1];
    if gpus.len() > 1 {
        counts.push(gpus.len());
    }
    let mut t =
        Table::new(&["GPUs", "ms per solve", "µs per sweep", "speedup", "residual ‖b−Ax‖∞", "vs CPU"]).numeric(0..5);
    let mut one = None;
    for &n in &counts {
        let (ms, x) = solve(&gpus[..n], &sys, pairs, args.reps)?;
        let differ = x.iter().zip(&cpu).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        if differ > 0 {
            let i = x.iter().zip(&cpu).position(|(a, b)| a.to_bits() != b.to_bits()).unwrap_or(0);
            return Err(CliError::Failed(format!(
                "{n} GPU(s): {differ} of {} unknowns differ from the CPU's sweeps; first at {i}: {} vs {}",
                x.len(),
                x[i],
                cpu[i]
            )));
        }
        let base = *one.get_or_insert(ms);
        t.row(vec![
            n.to_string(),
            format!("{ms:.2}"),
            format!("{:.1}", ms * 1e3 / (2 * pairs) as f64),
            format!("{:.2}×", base / ms),
            format!("{:.3e}", sys.residual(&x)),
            "bit-identical".into(),
        ]);
    }
    t.print();
    Ok(())
}
