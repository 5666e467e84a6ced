//! The classic kernels written the obvious way (`cohort_kernels::obvious`: plain slice and
//! shared-array indexing, `DisjointMatrix` element writes), at whole tiles and at ragged sizes,
//! every element against a CPU reference; elements past the matrix stay untouched.
use cohort_kernels::obvious as ok;
use cohort_runtime::LaunchConfig;
use cohort_tests::{Context, Ctx, TestResult, cpu_trial, ensure, gpu_trial, rng};

use crate::matrix::{check_matrix, check_sgemm, jacobi_reference, sgemm_reference, transpose_reference};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("obvious_transposes_match_the_cpu", transposes),
        gpu_trial("obvious_sgemms_match_the_cpu", sgemms),
        gpu_trial("obvious_jacobi_matches_the_cpu", jacobi),
        cpu_trial("obvious_out_of_bounds_read_is_an_error_naming_the_site", out_of_bounds),
    ]
}

fn transposes(c: &Ctx) -> TestResult {
    let mut r = rng("obvious_transposes");
    let s = c.gpu.new_stream().ctx("stream")?;
    for (rows, cols) in [(64usize, 96usize), (45, 77), (1, 33)] {
        let input: Vec<f32> = (0..rows * cols).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let din = c.gpu.upload(&input).ctx("up")?;
        let want = transpose_reference(&input, rows, cols);
        let cfg = LaunchConfig::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), (32, 8));
        for tiled in [false, true] {
            let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
            let m = out.as_matrix_mut(cols, rows).ctx("matrix")?;
            let (rr, cc) = (rows as u32, cols as u32);
            if tiled {
                ok::obvious_transpose_tiled::load(&c.module).ctx("load")?.launch(&s, cfg, &din, rr, cc, m)
            } else {
                ok::obvious_transpose_naive::load(&c.module).ctx("load")?.launch(&s, cfg, &din, rr, cc, m)
            }
            .ctx("launch")?;
            let got = out.to_vec().ctx("read")?;
            check_matrix(&format!("obvious transpose {rows} × {cols} (tiled: {tiled})"), &got, rows * cols, &want)?;
        }
    }
    Ok(())
}

fn sgemms(c: &Ctx) -> TestResult {
    let mut r = rng("obvious_sgemms");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Whole tiles of both kernels, ragged in every dimension, and tiny.
    for (m, n, kk) in [(256usize, 128usize, 96usize), (200, 136, 50), (33, 31, 7)] {
        let a: Vec<f32> = (0..m * kk).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..kk * n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let (da, db) = (c.gpu.upload(&a).ctx("up")?, c.gpu.upload(&b).ctx("up")?);
        let want = sgemm_reference(&a, &b, m, n, kk);
        for which in 0..2 {
            let mut out = c.gpu.upload(&vec![f32::NAN; m * n + 5]).ctx("alloc")?;
            let mm = out.as_matrix_mut(m, n).ctx("matrix")?;
            let (m32, n32, k32) = (m as u32, n as u32, kk as u32);
            match which {
                0 => {
                    let cfg = LaunchConfig::new((n.div_ceil(32) as u32, m.div_ceil(32) as u32), (32, 32));
                    ok::obvious_sgemm_tiled32::load(&c.module).ctx("load")?.launch(&s, cfg, &da, &db, m32, n32, k32, mm)
                }
                _ => {
                    let cfg = LaunchConfig::new((n.div_ceil(128) as u32, m.div_ceil(128) as u32), (16, 16));
                    ok::obvious_sgemm_128x128::load(&c.module).ctx("load")?.launch(&s, cfg, &da, &db, m32, n32, k32, mm)
                }
            }
            .ctx("launch")?;
            let got = out.to_vec().ctx("read")?;
            let name = ["obvious_sgemm_tiled32", "obvious_sgemm_128x128"][which];
            check_sgemm(&format!("{name} {m} × {n} × {kk}"), &got, m * n, &want)?;
        }
    }
    Ok(())
}

fn jacobi(c: &Ctx) -> TestResult {
    let mut r = rng("obvious_jacobi");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Whole tiles, ragged in rows, columns or both, a grid narrower than one tile, and (for the
    // column walk) heights that end inside a thread's eight rows.
    for (rows, cols) in [(64usize, 64usize), (50, 50), (40, 72), (72, 33), (3, 20), (129, 31), (1, 7)] {
        let u: Vec<f32> = (0..rows * cols).map(|_| r.random_range(0.0f32..1.0)).collect();
        let du = c.gpu.upload(&u).ctx("up")?;
        let want = jacobi_reference(&u, rows, cols);
        for walk in [false, true] {
            let cfg = LaunchConfig::new(
                (cols.div_ceil(32) as u32, rows.div_ceil(if walk { 64 } else { 32 }) as u32),
                (32, 8),
            );
            let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
            let o = out.as_matrix_mut(rows, cols).ctx("m")?;
            let (r32, c32) = (rows as u32, cols as u32);
            if walk {
                ok::obvious_jacobi_rows::load(&c.module).ctx("load")?.launch(&s, cfg, &du, r32, c32, o)
            } else {
                ok::obvious_jacobi::load(&c.module).ctx("load")?.launch(&s, cfg, &du, r32, c32, o)
            }
            .ctx("launch")?;
            let got = out.to_vec().ctx("read")?;
            let name = if walk { "obvious_jacobi_rows" } else { "obvious_jacobi" };
            check_matrix(&format!("{name} {rows} × {cols}"), &got, rows * cols, &want)?;
        }
    }
    Ok(())
}

/// The obvious code's safety: a transpose handed an input one element shorter than `rows ×
/// cols` reads out of bounds in its last thread, and the launch is an `Err` naming the kernel and
/// the line of `obvious.rs` (the slice's bounds check). It runs on the CPU device wherever the
/// tests run: on a GPU the same check traps, which ends the process's CUDA context, and that
/// mechanism is tested in a child process by `launch`'s `launch_device_trap_is_an_error_naming_where`.
fn out_of_bounds() -> TestResult {
    let gpu = cohort_runtime::Gpu::cpu().ctx("the CPU device")?;
    let module = gpu.load(&cohort_kernels::PTX).ctx("load")?;
    let (rows, cols) = (40usize, 40usize);
    let s = gpu.new_stream().ctx("stream")?;
    let input: Vec<f32> = (0..rows * cols - 1).map(|i| i as f32).collect();
    let din = gpu.upload(&input).ctx("up")?;
    let mut out = gpu.upload(&vec![f32::NAN; rows * cols]).ctx("alloc")?;
    let cfg = LaunchConfig::new((2u32, 2u32), (32, 8));
    for tiled in [false, true] {
        let m = out.as_matrix_mut(cols, rows).ctx("matrix")?;
        let (rr, cc) = (rows as u32, cols as u32);
        let r = if tiled {
            ok::obvious_transpose_tiled::load(&module).ctx("load")?.launch(&s, cfg, &din, rr, cc, m)
        } else {
            ok::obvious_transpose_naive::load(&module).ctx("load")?.launch(&s, cfg, &din, rr, cc, m)
        }
        .and_then(|()| s.synchronize());
        let name = if tiled { "obvious_transpose_tiled" } else { "obvious_transpose_naive" };
        let e = r.err().ok_or_else(|| format!("{name}: an out-of-bounds read did not fail the launch"))?;
        let msg = e.to_string();
        for needle in [name, "panicked at", "obvious.rs:"] {
            ensure(msg.contains(needle), || format!("{name}: the error does not mention `{needle}`: {msg}"))?;
        }
    }
    Ok(())
}
