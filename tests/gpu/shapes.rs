//! `cohort::shape`: a kernel's `BlockShape` is checked at launch (a launch whose block
//! differs is refused), and the classic kernels run right at sizes that are not whole tiles —
//! each against a CPU reference. (Matrix layouts and reads are `matrix.rs`'s, contraction and
//! the fast intrinsics `fp.rs`'s.)
use cohort_kernels::classic as ck;
use cohort_runtime::{Error, LaunchConfig};
use cohort_test_kernels::shapes as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("shapes_block_shape_is_checked_at_launch", block_shape),
        gpu_trial("shapes_classic_kernels_at_ragged_sizes", classic),
    ]
}

fn block_shape(c: &Ctx) -> TestResult {
    let kern = k::shaped_ranks::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let blocks = 5usize;
    let mut out = c.gpu.upload(&vec![u32::MAX; blocks * 128]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, (32, 4)), &mut out).ctx("launch 32×4")?;
    let want: Vec<u32> = (0..blocks * 128)
        .map(|i| {
            let t = (i % 128) as u32;
            ((t % 32) << 16) | ((t / 32) << 8) | t
        })
        .collect();
    check_all("x, y and rank of a 32×4 block", &out.to_vec().ctx("read")?, &want)?;
    // Every other shape is refused before launching, naming the kernel and both shapes — among
    // them shapes with the same thread count (a 1-D 128, 4×32, 32×2×2).
    for block in [(32u32, 8u32, 1u32), (128, 1, 1), (4, 32, 1), (32, 2, 2), (16, 4, 1)] {
        match kern.launch(&s, LaunchConfig::new(blocks as u32, block), &mut out) {
            Ok(()) => return Err(format!("launched a 32×4 kernel with {block:?}")),
            Err(e @ Error::BlockShape { .. }) => {
                let m = e.to_string();
                let asked = format!("{}×{}×{}", block.0, block.1, block.2);
                ensure(m.contains("shaped_ranks") && m.contains("32×4×1") && m.contains(&asked), || m.clone())?;
            }
            Err(e) => return Err(format!("{block:?}: expected Error::BlockShape, got {e}")),
        }
    }
    s.synchronize().ctx("sync")?;
    check_all("nothing written by refused launches", &out.to_vec().ctx("read")?, &want)
}

fn classic(c: &Ctx) -> TestResult {
    let mut r = rng("shapes_classic");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Transposes of a matrix that is not whole tiles: the edge tiles are partial.
    let (rows, cols) = (100usize, 70usize);
    let input: Vec<f32> = (0..rows * cols).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let din = c.gpu.upload(&input).ctx("up")?;
    let want = crate::matrix::transpose_reference(&input, rows, cols);
    let cfg = LaunchConfig::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), (32, 8));
    for tiled in [false, true] {
        let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
        let m = out.as_matrix_mut(cols, rows).ctx("matrix")?;
        if tiled {
            ck::transpose_tiled::load(&c.module).ctx("load")?.launch(&s, cfg, din.as_matrix(rows, cols).ctx("m")?, m)
        } else {
            ck::transpose_naive::load(&c.module).ctx("load")?.launch(&s, cfg, &din, rows as u32, cols as u32, m)
        }
        .ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        crate::matrix::check_matrix(&format!("transpose (tiled: {tiled})"), &got, rows * cols, &want)?;
    }
    // SGEMMs of sizes that are not whole tiles, against f64 dot products.
    let (m, n, kk) = (200usize, 136usize, 50usize);
    let a: Vec<f32> = (0..m * kk).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let b: Vec<f32> = (0..kk * n).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("up")?, c.gpu.upload(&b).ctx("up")?);
    let want = crate::matrix::sgemm_reference(&a, &b, m, n, kk);
    for big in [false, true] {
        let mut out = c.gpu.upload(&vec![f32::NAN; m * n]).ctx("alloc")?;
        let mm = out.as_matrix_mut(m, n).ctx("matrix")?;
        if big {
            let cfg = LaunchConfig::new((n.div_ceil(128) as u32, m.div_ceil(128) as u32), (16, 16));
            ck::sgemm_128x128::load(&c.module).ctx("load")?.launch(&s, cfg, &da, &db, m as u32, n as u32, kk as u32, mm)
        } else {
            let cfg = LaunchConfig::new((n.div_ceil(32) as u32, m.div_ceil(32) as u32), (32, 32));
            ck::sgemm_tiled32::load(&c.module).ctx("load")?.launch(&s, cfg, &da, &db, m as u32, n as u32, kk as u32, mm)
        }
        .ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        crate::matrix::check_sgemm(&format!("SGEMM (128×128: {big})"), &got, m * n, &want)?;
    }
    // One Jacobi step on a grid that is not whole blocks.
    let nn = 50usize;
    let u: Vec<f32> = (0..nn * nn).map(|_| r.random_range(0.0f32..1.0)).collect();
    let du = c.gpu.upload(&u).ctx("up")?;
    let mut out = c.gpu.upload(&vec![f32::NAN; nn * nn]).ctx("alloc")?;
    let cfg = LaunchConfig::new((nn.div_ceil(32) as u32, nn.div_ceil(8) as u32), (32, 8));
    ck::jacobi_step_select::load(&c.module)
        .ctx("load")?
        .launch(&s, cfg, du.as_matrix(nn, nn).ctx("m")?, out.as_matrix_mut(nn, nn).ctx("m")?)
        .ctx("launch")?;
    let mut want = u.clone();
    for y in 1..nn - 1 {
        for x in 1..nn - 1 {
            want[y * nn + x] =
                0.25 * (u[(y - 1) * nn + x] + u[(y + 1) * nn + x] + u[y * nn + x - 1] + u[y * nn + x + 1]);
        }
    }
    check_all("Jacobi step", &out.to_vec().ctx("read")?, &want)
}
