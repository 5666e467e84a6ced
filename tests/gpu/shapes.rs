//! Launch shapes (refused when they differ), matrix layouts (each element written by the one
//! thread its layout names, none outside), branch-free reads, contraction and the fast
//! intrinsics' error bounds, and the classic kernels at sizes that are not whole tiles — each
//! against a CPU reference.

use cohort_kernels::classic as ck;
use cohort_runtime::{Error, LaunchConfig};
use cohort_test_kernels::shapes as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("shapes_block_shape_is_checked_at_launch", block_shape),
        gpu_trial("shapes_matrix_layouts_write_their_own_elements", layouts),
        gpu_trial("shapes_matrix_reads_load_or_and_windows", reads),
        gpu_trial("shapes_contract_fuses_f32_f64_only", contraction),
        gpu_trial("shapes_fast_intrinsics_within_cuda_bounds", fast_math),
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

/// Who writes element `(r, c)` under each test layout (blocks of 8 × 4): the layout's
/// definition read backwards, `(by, bx, ty, tx, k, l)` (also `classic_shapes.rs`'s `u32` layouts).
pub(crate) fn writer(layout: usize, r: usize, c: usize) -> [usize; 6] {
    match layout {
        // Cyclic<2, 3>: tiles of 8 × 24; rows ty + 4k, columns tx + 8l.
        0 => [r / 8, c / 24, (r % 8) % 4, (c % 24) % 8, (r % 8) / 4, (c % 24) / 8],
        // Blocked<3, 2>: tiles of 12 × 16; rows 3ty + k, columns 2tx + l.
        1 => [r / 12, c / 16, (r % 12) / 3, (c % 16) / 2, (r % 12) % 3, (c % 16) % 2],
        // Transposed<Cyclic<2, 1>>: (r, c) is Cyclic<2, 1>'s (c, r); its k is this tile's l.
        2 => [c / 8, r / 8, (c % 8) % 4, r % 8, 0, (c % 8) / 4],
        // TransposedTiles<Blocked<2, 2>>: tiles of 8 × 16 at tile position (bx, by).
        _ => [c / 16, r / 8, (r % 8) / 2, (c % 16) / 2, (r % 8) % 2, c % 16 % 2],
    }
}

fn layouts(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let (rows, cols) = (37usize, 50usize);
    // Grids larger than the matrix: the extra blocks' elements lie outside and are not written.
    let grids: [(u32, u32); 4] = [(4, 6), (5, 5), (8, 8), (6, 5)];
    for (layout, grid) in grids.into_iter().enumerate() {
        let mut out = c.gpu.upload(&vec![u32::MAX; rows * cols + 40]).ctx("alloc")?;
        let cfg = LaunchConfig::new(grid, (8, 4));
        let m = out.as_matrix_mut(rows, cols).ctx("matrix")?;
        match layout {
            0 => k::layout_cyclic::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            1 => k::layout_blocked::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            2 => k::layout_transposed::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            _ => k::layout_transposed_tiles::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
        }
        .ctx("launch")?;
        let mut want = vec![u32::MAX; rows * cols + 40];
        for r in 0..rows {
            for col in 0..cols {
                let [by, bx, ty, tx, kk, l] = writer(layout, r, col);
                want[r * cols + col] = ((by as u32) << 24)
                    | ((bx as u32) << 16)
                    | ((ty as u32) << 12)
                    | ((tx as u32) << 6)
                    | ((kk as u32) << 3)
                    | l as u32;
            }
        }
        check_all(&format!("layout {layout}: each element's writer"), &out.to_vec().ctx("read")?, &want)?;
    }
    // A matrix larger than its buffer is refused on the host.
    let mut small = c.gpu.zeroed::<u32>(10).ctx("alloc")?;
    ensure(small.as_matrix_mut(4, 3).is_err() && small.as_matrix_mut(usize::MAX, 2).is_err(), || {
        "a matrix larger than its buffer was accepted".into()
    })
}

fn reads(c: &Ctx) -> TestResult {
    let mut r = rng("shapes_reads");
    let (rows, cols) = (9usize, 7usize);
    let data: Vec<f32> = (0..rows * cols + 3).map(|_| r.random_range(0.0f32..100.0)).collect();
    let at: Vec<[u32; 2]> = (0..3000).map(|_| [r.random_range(0..12), r.random_range(0..10)]).collect();
    let kern = k::matrix_reads::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dd, da) = (c.gpu.upload(&data).ctx("up")?, c.gpu.upload(&at).ctx("up")?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 4]; at.len()]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::for_elements(at.len(), 128), &dd, rows, cols, &da, &mut out).ctx("launch")?;
    let at_or = |r: usize, c: usize| if r < rows && c < cols { data[r * cols + c] } else { -1.0 };
    let want: Vec<[f32; 4]> = at
        .iter()
        .map(|&[r, c]| {
            let (r, c) = (r as usize, c as usize);
            let v = at_or(r, c);
            let (w, e) =
                if r < 4 && c < 4 { (data[(1 + r) * cols + 2 + c], at_or(7 + r, 5 + c)) } else { (-2.0, -2.0) };
            [v, v, w, e]
        })
        .collect();
    check_all("load_or, get, full and edge windows", &out.to_vec().ctx("read")?, &want)?;
    // A matrix its slice cannot hold is `None` (-3 everywhere).
    kern.launch(&s, LaunchConfig::for_elements(at.len(), 128), &dd, rows + 1, cols, &da, &mut out).ctx("launch")?;
    check_all("too small a slice", &out.to_vec().ctx("read")?, &vec![[-3.0; 4]; at.len()])
}

fn contraction(c: &Ctx) -> TestResult {
    let mut r = rng("shapes_contraction");
    let n = 50_000usize;
    let draw = |r: &mut rand::rngs::StdRng| (0..n).map(|_| r.random_range(-1e3f32..1e3)).collect::<Vec<f32>>();
    let (a, b, cc) = (draw(&mut r), draw(&mut r), draw(&mut r));
    let s = c.gpu.new_stream().ctx("stream")?;
    let (da, db, dc) = (c.gpu.upload(&a).ctx("up")?, c.gpu.upload(&b).ctx("up")?, c.gpu.upload(&cc).ctx("up")?);
    let mut fused = c.gpu.upload(&vec![[f32::NAN; 6]; n]).ctx("alloc")?;
    let mut wide = c.gpu.upload(&vec![[f64::NAN; 2]; n]).ctx("alloc")?;
    let mut ints = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
    let cfg = LaunchConfig::for_elements(n, 256);
    k::contracted::load(&c.tests)
        .ctx("load")?
        .launch(&s, cfg, &da, &db, &dc, &mut fused, &mut wide, &mut ints)
        .ctx("launch")?;
    let mut plain = c.gpu.upload(&vec![[f32::NAN; 7]; n]).ctx("alloc")?;
    k::uncontracted::load(&c.tests).ctx("load")?.launch(&s, cfg, &da, &db, &dc, &mut plain).ctx("launch")?;
    let want_fused: Vec<[f32; 6]> = (0..n)
        .map(|i| {
            let (x, y, z) = (a[i], b[i], cc[i]);
            let f = x.mul_add(y, z);
            let g = (-x).mul_add(y, z);
            [f, f, x.mul_add(y, -z), g, f, g]
        })
        .collect();
    let bits = |g: &[f32; 6], w: &[f32; 6]| g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits());
    check_all_by("contracted f32 forms (one rounding)", &fused.to_vec().ctx("read")?, &want_fused, bits)?;
    let want_wide: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            let (x, y, z) = (a[i] as f64, b[i] as f64, cc[i] as f64);
            [x.mul_add(y, z), (-x).mul_add(y, z)]
        })
        .collect();
    check_all("contracted f64 forms", &wide.to_vec().ctx("read")?, &want_wide)?;
    check_all(
        "integers through the rewrite",
        &ints.to_vec().ctx("read")?,
        &(0..n as u32).map(|i| 3 * i + 7).collect::<Vec<_>>(),
    )?;
    let want_plain: Vec<[f32; 7]> = (0..n)
        .map(|i| {
            let (x, y, z) = (a[i], b[i], cc[i]);
            [x * y + z, z + x * y, x * y - z, z - x * y, z + x * y, z - x * y, x.mul_add(y, z)]
        })
        .collect();
    let bits7 = |g: &[f32; 7], w: &[f32; 7]| g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits());
    check_all_by("without contract: two roundings; fp::fma one", &plain.to_vec().ctx("read")?, &want_plain, bits7)?;
    // The two must differ somewhere, or this test could not tell them apart.
    let differ = (0..n).filter(|&i| want_fused[i][0].to_bits() != want_plain[i][0].to_bits()).count();
    ensure(differ > n / 100, || format!("fused and unfused differ on only {differ} inputs"))
}

/// CUDA's ulp error (Programming Guide, "Mathematical Functions"): the distance in ulps between
/// the result and the correctly rounded one.
fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    // Distance on the ordered integer line of floats of one sign.
    let key = |v: f32| if v.is_sign_negative() { -(v.abs().to_bits() as i64) } else { v.to_bits() as i64 };
    (key(got) - key(w)).unsigned_abs() as f64
}

fn fast_math(c: &Ctx) -> TestResult {
    let mut r = rng("shapes_fast_math");
    let n = 100_000usize;
    let pi = std::f32::consts::PI;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-pi..pi)).collect();
    let y: Vec<f32> =
        (0..n).map(|_| if r.random() { r.random_range(0.5f32..2.0) } else { r.random_range(1e-3f32..1e4) }).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dx, dy) = (c.gpu.upload(&x).ctx("up")?, c.gpu.upload(&y).ctx("up")?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 10]; n]).ctx("alloc")?;
    k::fast_math::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::for_elements(n, 256), &dx, &dy, &mut out)
        .ctx("launch")?;
    let got = out.to_vec().ctx("read")?;
    let mut worst = [0.0f64; 10];
    for i in 0..n {
        let (xv, yv) = (x[i] as f64, y[i] as f64);
        let g = got[i];
        let in_unit = (0.5..=2.0).contains(&yv);
        // (name, error, bound) per CUDA's Programming Guide, "Intrinsic Functions".
        let checks = [
            ("__sinf abs", (g[0] as f64 - xv.sin()).abs(), 2f64.powf(-21.41)),
            ("__cosf abs", (g[1] as f64 - xv.cos()).abs(), 2f64.powf(-21.19)),
            ("__expf ulp", ulps(g[2], xv.exp()), 2.0 + (1.173 * xv).abs().floor()),
            ("exp2 ulp", ulps(g[3], xv.exp2()), 2.0),
            if in_unit {
                ("__logf abs", (g[4] as f64 - yv.ln()).abs(), 2f64.powf(-21.41))
            } else {
                ("__logf ulp", ulps(g[4], yv.ln()), 3.0)
            },
            if in_unit {
                ("__log2f abs", (g[5] as f64 - yv.log2()).abs(), 2f64.powf(-22.0))
            } else {
                ("__log2f ulp", ulps(g[5], yv.log2()), 2.0)
            },
            // __powf has no bound of its own: exp2(y·log2 x) with both errors, relative.
            ("__powf rel", ((g[6] as f64 - yv.powf(xv)) / yv.powf(xv)).abs(), 1e-4),
            ("__fdividef ulp", ulps(g[7], xv / yv), 2.0),
            ("rsqrtf ulp", ulps(g[8], 1.0 / yv.sqrt()), 2.0),
            ("sqrt.approx ulp", ulps(g[9], yv.sqrt()), 2.0),
        ];
        for (j, (name, err, bound)) in checks.iter().enumerate() {
            worst[j] = worst[j].max(*err / bound);
            if err.is_nan() || err > bound {
                return Err(format!("{name}: x = {}, y = {}: error {err:e} above CUDA's bound {bound:e}", x[i], y[i]));
            }
        }
    }
    eprintln!("worst error / bound: {worst:.3?}");
    Ok(())
}

fn classic(c: &Ctx) -> TestResult {
    let mut r = rng("shapes_classic");
    let s = c.gpu.new_stream().ctx("stream")?;
    // Transposes of a matrix that is not whole tiles: the edge tiles are partial.
    let (rows, cols) = (100usize, 70usize);
    let input: Vec<f32> = (0..rows * cols).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let din = c.gpu.upload(&input).ctx("up")?;
    let want: Vec<f32> = (0..cols * rows).map(|i| input[(i % rows) * cols + i / rows]).collect();
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
        check_all(&format!("transpose (tiled: {tiled})"), &got[..rows * cols], &want)?;
        ensure(got[rows * cols..].iter().all(|v| v.is_nan()), || "wrote past the matrix".into())?;
    }
    // SGEMMs of sizes that are not whole tiles, against f64 dot products.
    let (m, n, kk) = (200usize, 136usize, 50usize);
    let a: Vec<f32> = (0..m * kk).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let b: Vec<f32> = (0..kk * n).map(|_| r.random_range(-1.0f32..1.0)).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("up")?, c.gpu.upload(&b).ctx("up")?);
    let want: Vec<f64> =
        (0..m * n).map(|i| (0..kk).map(|q| a[(i / n) * kk + q] as f64 * b[q * n + i % n] as f64).sum()).collect();
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
        check_all_by(
            &format!("SGEMM (128×128: {big})"),
            &got,
            &want.iter().map(|&w| w as f32).collect::<Vec<_>>(),
            |g, w| (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
        )?;
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
