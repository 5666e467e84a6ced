//! `cohort::matrix` (and the host's `as_matrix`/`as_matrix_mut`): every layout of a
//! `DisjointMatrix` writes each element by the one thread its layout names, none outside, with
//! `usize` and with `u32` offsets (through `set` and through `split!`'s full tiles); a matrix
//! whose offsets would not fit `u32` is refused before any write; `Matrix`'s branch-free reads,
//! windows and strips; and the classic kernels, whose outputs have `u32` offsets, at whole tiles
//! (every block on its unchecked path) and at ragged sizes (edge blocks checked) — each against
//! a CPU reference. (The `shapes_matrix_*` and `classic_shapes_*` tests keep their names.)
use cohort_kernels::classic as ck;
use cohort_runtime::LaunchConfig;
use cohort_test_kernels::matrix_u32 as k;
use cohort_test_kernels::shapes as sk;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("classic_shapes_u32_layouts_write_their_own_elements", u32_layouts),
        gpu_trial("classic_shapes_kernels_at_whole_and_ragged_sizes", classic_kernels),
        gpu_trial("classic_shapes_u32_matrix_too_large_is_refused", too_large),
        gpu_trial("shapes_matrix_layouts_write_their_own_elements", layouts),
        gpu_trial("shapes_matrix_reads_load_or_and_windows", reads),
    ]
}

fn launch(
    c: &Ctx,
    layout: usize,
    s: &cohort_runtime::Stream,
    cfg: LaunchConfig,
    m: cohort_runtime::MatrixMut<'_, u32>,
) -> TestResult {
    match layout {
        0 => k::u32_layout_cyclic::load(&c.tests).ctx("load")?.launch(s, cfg, m),
        1 => k::u32_layout_blocked::load(&c.tests).ctx("load")?.launch(s, cfg, m),
        2 => k::u32_layout_transposed::load(&c.tests).ctx("load")?.launch(s, cfg, m),
        _ => k::u32_layout_transposed_tiles::load(&c.tests).ctx("load")?.launch(s, cfg, m),
    }
    .ctx("launch")
}

fn u32_layouts(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    // Whole tiles (every thread's tile full: `split!`'s unchecked path) and ragged sizes (edge
    // tiles checked per element), with grids larger than the matrix: the extra blocks'
    // elements lie outside and are not written.
    let whole: [(u32, u32); 4] = [(4, 6), (6, 4), (6, 12), (6, 6)];
    let ragged: [(u32, u32); 4] = [(4, 6), (5, 5), (8, 8), (6, 5)];
    for (rows, cols, grids) in [(48usize, 96usize, whole), (37, 50, ragged)] {
        for (layout, grid) in grids.into_iter().enumerate() {
            let mut out = c.gpu.upload(&vec![u32::MAX; rows * cols + 40]).ctx("alloc")?;
            let m = out.as_matrix_mut(rows, cols).ctx("matrix")?;
            launch(c, layout, &s, LaunchConfig::new(grid, (8, 4)), m)?;
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
            let what = format!("u32 layout {layout}, {rows} × {cols}, grid {grid:?}: each element's writer");
            check_all(&what, &out.to_vec().ctx("read")?, &want)?;
        }
    }
    Ok(())
}

/// A `u32`-offset matrix whose sides or element count don't fit `u32` is refused at launch
/// with an `Err` naming the kernel, the parameter and the shape, and nothing is written; one of
/// exactly `u32::MAX` elements is used whole. Run for each shape by one block of `Cyclic<2, 3>`
/// writers: what each thread sees and wrote.
fn too_large(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::u32_matrix_seen::load(&c.tests).ctx("load")?;
    let marks: Vec<u64> = (0..32u64).map(|i| 0xdead_0000 + i).collect();
    let mut seen = c.gpu.upload(&marks).ctx("alloc")?;
    // Small buffers first: sides past u32::MAX with no element (`as_matrix_mut` accepts them
    // for any buffer), then a small matrix for comparison.
    let mut small = c.gpu.upload(&[7u8; 15]).ctx("alloc")?;
    for (rows, cols) in [(1usize << 32, 0usize), (0, 1 << 32), (1 << 33, 0)] {
        let m = small.as_matrix_mut(rows, cols).ctx("matrix")?;
        let r = kern.launch(&s, LaunchConfig::new(1u32, (8, 4)), m, &mut seen);
        let e = expect_err(&format!("a {rows} × {cols} matrix with u32 offsets"), r)?;
        let text = e.to_string();
        ensure(
            text.contains("u32_matrix_seen") && text.contains("`out`") && text.contains(&format!("{rows} x {cols}")),
            || format!("the refusal names the kernel, the parameter and the shape: {text}"),
        )?;
        check_all(&format!("{rows} × {cols}: `seen` after the refusal"), &seen.to_vec().ctx("read")?, &marks)?;
        check_all(&format!("{rows} × {cols}: the buffer after the refusal"), &small.to_vec().ctx("read")?, &[7u8; 15])?;
    }
    let m = small.as_matrix_mut(3, 5).ctx("matrix")?;
    kern.launch(&s, LaunchConfig::new(1u32, (8, 4)), m, &mut seen).ctx("launch 3 × 5")?;
    check_all("3 × 5: rows, cols and writes each thread saw", &seen.to_vec().ctx("read")?, &seen_by_block0(3, 5))?;
    check_all("3 × 5: the buffer after", &small.to_vec().ctx("read")?, &[1u8; 15])?;
    if c.is_cpu() {
        // The 4 GiB case needs 4 GiB of host memory on the CPU device: GPU only.
        return Ok(());
    }
    // A 4 GiB buffer: 65536 × 65536 (2^32 elements, one past u32 offsets) is refused;
    // 65535 × 65537 (u32::MAX elements) is used whole.
    let mut big = c.gpu.zeroed::<u8>(1 << 32).ctx("alloc 4 GiB")?;
    let m = big.as_matrix_mut(1 << 16, 1 << 16).ctx("matrix")?;
    expect_err(
        "a 65536 × 65536 matrix with u32 offsets",
        kern.launch(&s, LaunchConfig::new(1u32, (8, 4)), m, &mut seen),
    )?;
    let (rows, cols) = (65535, 65537);
    let m = big.as_matrix_mut(rows, cols).ctx("matrix")?;
    kern.launch(&s, LaunchConfig::new(1u32, (8, 4)), m, &mut seen).ctx("launch")?;
    check_all(
        &format!("{rows} × {cols}: rows, cols and writes each thread saw"),
        &seen.to_vec().ctx("read")?,
        &seen_by_block0(rows, cols),
    )
}

/// The error `r` must be, or a failure saying `what` was accepted.
fn expect_err<T>(what: &str, r: cohort_runtime::Result<T>) -> Result<cohort_runtime::Error, String> {
    match r {
        Ok(_) => Err(format!("{what} was accepted")),
        Err(e) => Ok(e),
    }
}

/// What `u32_matrix_seen`'s block 0 reports for a `rows × cols` matrix: 0 × 0 and no write
/// past `u32` offsets, else the shape and how many of each thread's elements (rows `ty + 4k`,
/// columns `tx + 8l`) lie inside.
fn seen_by_block0(rows: usize, cols: usize) -> Vec<u64> {
    let fits = rows <= u32::MAX as usize
        && cols <= u32::MAX as usize
        && rows.checked_mul(cols).is_some_and(|n| n <= u32::MAX as usize);
    let (rows, cols) = if fits { (rows, cols) } else { (0, 0) };
    (0..32)
        .map(|t| {
            let (tx, ty) = (t % 8, t / 8);
            let wrote = (0..2).filter(|k| ty + 4 * k < rows).count() * (0..3).filter(|l| tx + 8 * l < cols).count();
            ((rows as u64) << 40) | ((cols as u64) << 8) | wrote as u64
        })
        .collect()
}

/// The classic kernels (`cohort_kernels::classic`) at whole tiles and at ragged sizes, every
/// element against a CPU reference; past-the-matrix elements stay untouched.
fn classic_kernels(c: &Ctx) -> TestResult {
    let mut r = rng("classic_shapes");
    let s = c.gpu.new_stream().ctx("stream")?;
    for (rows, cols) in [(64usize, 96usize), (45, 77)] {
        let input: Vec<f32> = (0..rows * cols).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let din = c.gpu.upload(&input).ctx("up")?;
        let want = transpose_reference(&input, rows, cols);
        let cfg = LaunchConfig::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), (32, 8));
        for tiled in [false, true] {
            let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
            let m = out.as_matrix_mut(cols, rows).ctx("matrix")?;
            let (rr, cc) = (rows as u32, cols as u32);
            if tiled {
                ck::transpose_tiled::load(&c.module).ctx("load")?.launch(
                    &s,
                    cfg,
                    din.as_matrix(rows, cols).ctx("m")?,
                    m,
                )
            } else {
                ck::transpose_naive::load(&c.module).ctx("load")?.launch(&s, cfg, &din, rr, cc, m)
            }
            .ctx("launch")?;
            let got = out.to_vec().ctx("read")?;
            check_matrix(&format!("transpose {rows} × {cols} (tiled: {tiled})"), &got, rows * cols, &want)?;
        }
    }
    // Strips: both inside (256 × 128 × 96), A's at the bottom edge while B's is inside
    // (200 × 128 × 64: both read checked), both at edges, and tiny.
    for (m, n, kk) in [(256usize, 128usize, 96usize), (200, 128, 64), (200, 136, 50), (33, 31, 7)] {
        let a: Vec<f32> = (0..m * kk).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..kk * n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        let (da, db) = (c.gpu.upload(&a).ctx("up")?, c.gpu.upload(&b).ctx("up")?);
        let want = sgemm_reference(&a, &b, m, n, kk);
        for which in 0..2 {
            let mut out = c.gpu.upload(&vec![f32::NAN; m * n + 5]).ctx("alloc")?;
            let mm = out.as_matrix_mut(m, n).ctx("matrix")?;
            let (m32, n32, k32) = (m as u32, n as u32, kk as u32);
            let cfg32 = LaunchConfig::new((n.div_ceil(32) as u32, m.div_ceil(32) as u32), (32, 32));
            match which {
                0 => ck::sgemm_tiled32::load(&c.module).ctx("load")?.launch(&s, cfg32, &da, &db, m32, n32, k32, mm),
                _ => {
                    let cfg = LaunchConfig::new((n.div_ceil(128) as u32, m.div_ceil(128) as u32), (16, 16));
                    ck::sgemm_128x128::load(&c.module).ctx("load")?.launch(&s, cfg, &da, &db, m32, n32, k32, mm)
                }
            }
            .ctx("launch")?;
            let got = out.to_vec().ctx("read")?;
            let name = ["sgemm_tiled32", "sgemm_128x128"][which];
            check_sgemm(&format!("{name} {m} × {n} × {kk}"), &got, m * n, &want)?;
        }
    }
    // Square and not, whole blocks and not (the boundary is the grid's own rows and columns).
    for (rows, cols) in [(64usize, 64usize), (50, 50), (40, 72), (72, 33)] {
        let u: Vec<f32> = (0..rows * cols).map(|_| r.random_range(0.0f32..1.0)).collect();
        let du = c.gpu.upload(&u).ctx("up")?;
        let cfg = LaunchConfig::new((cols.div_ceil(32) as u32, rows.div_ceil(8) as u32), (32, 8));
        let want = jacobi_reference(&u, rows, cols);
        // `load_or` reads, any grid: every point.
        let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
        let (g, o) = (du.as_matrix(rows, cols).ctx("m")?, out.as_matrix_mut(rows, cols).ctx("m")?);
        ck::jacobi_step_select::load(&c.module).ctx("load")?.launch(&s, cfg, g, o).ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        check_matrix(&format!("jacobi_step_select {rows} × {cols}"), &got, rows * cols, &want)?;
        // `Point` reads into a `Within` output: a grid that overhangs the matrix (or is 3-D) is
        // refused, naming the kernel, the parameter and the grid, and writes nothing; the grid of
        // whole blocks inside it writes exactly their points.
        let point = ck::jacobi_step::load(&c.module).ctx("load")?;
        let whole = rows % 8 == 0 && cols % 32 == 0;
        let inside = LaunchConfig::new(((cols / 32) as u32, (rows / 8) as u32), (32, 8));
        let deep = LaunchConfig::new(((cols / 32) as u32, (rows / 8) as u32, 2), (32, 8));
        let mut out = c.gpu.upload(&vec![f32::NAN; rows * cols + 5]).ctx("alloc")?;
        for (bad, what) in [(cfg, "an overhanging"), (deep, "a 3-D")] {
            if bad == cfg && whole {
                continue;
            }
            let (g, o) = (du.as_matrix(rows, cols).ctx("m")?, out.as_matrix_mut(rows, cols).ctx("m")?);
            match point.launch(&s, bad, g, o) {
                Err(e)
                    if ["jacobi_step", "`out", "Within", &format!("{}×{}×{}", bad.grid.x, bad.grid.y, bad.grid.z)]
                        .iter()
                        .all(|w| e.to_string().contains(w)) => {}
                other => return Err(format!("{what} grid {bad:?} for a {rows} × {cols} `Within` output: {other:?}")),
            }
        }
        let (g, o) = (du.as_matrix(rows, cols).ctx("m")?, out.as_matrix_mut(rows, cols).ctx("m")?);
        point.launch(&s, inside, g, o).ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        let (hr, hc) = (rows / 8 * 8, cols / 32 * 32);
        for r in 0..rows {
            for col in 0..cols {
                let (v, i) = (got[r * cols + col], r * cols + col);
                let ok = if r < hr && col < hc { v == want[i] } else { v.is_nan() };
                ensure(ok, || {
                    format!("jacobi_step {rows} × {cols}, grid {hc} × {hr} points: ({r}, {col}) = {v}, CPU {}", want[i])
                })?;
            }
        }
        ensure(got[rows * cols..].iter().all(|v| v.is_nan()), || "jacobi_step wrote past the grid".into())?;
    }
    // A read-only `Matrix` parameter: its shape is checked on the host, never in the kernel.
    let small = c.gpu.upload(&[1.0f32; 12]).ctx("up")?;
    let empty = c.gpu.zeroed::<f32>(0).ctx("alloc")?;
    ensure(small.as_matrix(4, 4).is_err(), || "a 4 × 4 matrix fit 12 elements".into())?;
    ensure(small.as_matrix(3, 4).is_ok(), || "a 3 × 4 matrix did not fit 12 elements".into())?;
    ensure(empty.as_matrix(0, 0).is_err(), || "an empty buffer became a matrix".into())?;
    ensure(small.slice(..0).into_matrix(0, 5).is_err(), || "an empty view became a matrix".into())?;
    // 2^32 × 0: no element, but a side `u32` offsets can't hold: refused at launch, naming
    // the kernel and the parameter.
    let mut out = c.gpu.zeroed::<f32>(4).ctx("alloc")?;
    let huge = small.as_matrix(1 << 32, 0).ctx("m")?;
    let e = ck::jacobi_step_select::load(&c.module).ctx("load")?.launch(
        &s,
        LaunchConfig::new((1, 1), (32, 8)),
        huge,
        out.as_matrix_mut(2, 2).ctx("m")?,
    );
    match e {
        Err(e) if e.to_string().contains("jacobi_step_select") && e.to_string().contains("`g`") => {}
        other => return Err(format!("a 2^32 × 0 `Matrix<f32, u32>` was not refused: {other:?}")),
    }
    Ok(())
}

/// Who writes element `(r, c)` under each test layout (blocks of 8 × 4): the layout's
/// definition read backwards, `(by, bx, ty, tx, k, l)` (also the `u32` layouts above).
/// `A · B` (`A` is `m × k`, `B` is `k × n`, row-major) in `f64`, rounded to `f32`.
pub(crate) fn sgemm_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    (0..m * n).map(|i| (0..k).map(|q| a[(i / n) * k + q] as f64 * b[q * n + i % n] as f64).sum::<f64>() as f32).collect()
}

/// `inputᵀ` of a row-major `rows × cols` `input`.
pub(crate) fn transpose_reference(input: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..cols * rows).map(|i| input[(i % rows) * cols + i / rows]).collect()
}

/// A matrix output: its first `n` elements exactly `want`, and the NaNs the test put past the
/// matrix untouched.
pub(crate) fn check_matrix(what: &str, got: &[f32], n: usize, want: &[f32]) -> TestResult {
    check_all(what, &got[..n], want)?;
    untouched_past(what, got, n)
}

/// An SGEMM's output: its first `n` elements against `want` (relative 1e-4), and the NaNs the
/// test put past the matrix untouched.
pub(crate) fn check_sgemm(what: &str, got: &[f32], n: usize, want: &[f32]) -> TestResult {
    check_all_by(what, &got[..n], want, |g, w| (g - w).abs() <= 1e-4 * (1.0 + w.abs()))?;
    untouched_past(what, got, n)
}

/// The NaNs a test put past the first `n` elements are still NaN.
fn untouched_past(what: &str, got: &[f32], n: usize) -> TestResult {
    ensure(got[n..].iter().all(|v| v.is_nan()), || format!("{what}: wrote past the matrix"))
}

/// One Jacobi step of `u` (`rows × cols`): each inner point the mean of its four neighbours,
/// the border kept.
pub(crate) fn jacobi_reference(u: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut want = u.to_vec();
    for y in 1..rows - 1 {
        for x in 1..cols - 1 {
            want[y * cols + x] =
                0.25 * (u[(y - 1) * cols + x] + u[(y + 1) * cols + x] + u[y * cols + x - 1] + u[y * cols + x + 1]);
        }
    }
    want
}

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
            0 => sk::layout_cyclic::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            1 => sk::layout_blocked::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            2 => sk::layout_transposed::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
            _ => sk::layout_transposed_tiles::load(&c.tests).ctx("load")?.launch(&s, cfg, m),
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
    let kern = sk::matrix_reads::load(&c.tests).ctx("load")?;
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
