//! `cohort::fp`: `#[kernel(contract)]` fuses `f32`/`f64` multiply-adds and nothing else
//! (`fp::fma` always), and the `fp::fast` intrinsics stay within CUDA's stated error bounds, on
//! the GPU and on the CPU device — each against a CPU reference. (The `shapes_*` names are
//! kept.)

use cohort_runtime::LaunchConfig;
use cohort_test_kernels::shapes as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("shapes_contract_fuses_f32_f64_only", contraction),
        gpu_trial("shapes_fast_intrinsics_within_cuda_bounds", fast_math),
        gpu_trial("shapes_fast_math_cpu_device_matches_gpu", fast_math_cpu_device),
    ]
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

/// Inputs spanning all of `f32` for [`fast_math_cpu_device`]: every special value first, then
/// random bit patterns (huge, subnormal, ±∞, NaN), angles in [-100π, 100π], `exp`'s range,
/// (0.5, 2), and magnitudes log-uniform over 2^-149 … 2^128 of either sign.
fn spanning_inputs(r: &mut rand::rngs::StdRng, n: usize, positive: bool) -> Vec<f32> {
    let mut v: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        -f32::from_bits(0x007f_ffff),
        f32::MAX,
        -f32::MAX,
        1e30,
        -1e30,
        1e7,
        100_000.0,
        -100_000.0,
        std::f32::consts::PI,
        -std::f32::consts::PI,
        2.0 * std::f32::consts::PI,
        100.0 * std::f32::consts::PI,
        -126.0,
        -126.5,
        -150.0,
        -252.5,
        127.9999,
        128.0,
        0.5,
        1.0,
        2.0,
        2f32.powi(126),
        2f32.powi(127),
        -2f32.powi(127),
        f32::from_bits(1 << 9), // 2^-140
    ];
    while v.len() < n {
        let x = match r.random_range(0..5) {
            0 => f32::from_bits(r.random()),
            1 => r.random_range(-100.0 * std::f32::consts::PI..100.0 * std::f32::consts::PI),
            2 => r.random_range(-160.0f32..130.0),
            3 => r.random_range(0.5f32..2.0),
            _ => {
                let m = 2f64.powf(r.random_range(-149.0..128.0)) as f32;
                if r.random() { -m } else { m }
            }
        };
        v.push(if positive && !x.is_nan() { x.abs() } else { x });
    }
    v.truncate(n);
    v
}

/// Distance in ulps on the ordered line of floats (`+0` and `-0` at the same place, `∞` one
/// step past `MAX`).
fn ulp_distance(a: f32, b: f32) -> f64 {
    let key = |v: f32| if v.is_sign_negative() { -(v.abs().to_bits() as i64) } else { v.to_bits() as i64 };
    (key(a) - key(b)).unsigned_abs() as f64
}

/// How a GPU result `g` compares with the CPU device's `c` against a bound: the difference
/// measured as the bound is (`abs`, `rel` or `ulp`), divided by the bound (≤ 1 passes). NaN
/// against NaN, and equal values (zeros of either sign, infinities) are 0; NaN against a
/// number is infinite. For a relative bound an infinity counts as 2^128 (the next value past
/// `MAX`), so that overflow at the edge of the range is measured, not refused.
fn measured(g: f32, c: f32, unit: &str, bound: f64) -> f64 {
    if g.is_nan() || c.is_nan() {
        return if g.is_nan() && c.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if g == c {
        return 0.0;
    }
    let wide = |v: f32| if v.is_infinite() { 2f64.powi(128).copysign(f64::from(v)) } else { f64::from(v) };
    let (gd, cd) = (wide(g), wide(c));
    let diff = match unit {
        "ulp" => ulp_distance(g, c),
        "abs" if g.is_finite() && c.is_finite() => (gd - cd).abs(),
        "rel" if c != 0.0 => ((gd - cd) / cd).abs(),
        _ => f64::INFINITY,
    };
    diff / bound
}

/// `fp::fast` on the GPU against the CPU device's emulation (`cohort::fp::fast` called on the
/// host computes what the CPU device computes), over a million inputs spanning all of `f32`,
/// within the bounds the `fp::fast` docs state. Prints, per function, the largest difference
/// seen (in the bound's unit and as a fraction of the bound) and its input. On the CPU device
/// the two are the same computation (the test then checks only that it runs).
fn fast_math_cpu_device(c: &Ctx) -> TestResult {
    use cohort::fp::fast;
    let mut r = rng("shapes_fast_math_cpu_device");
    let n = c.pick(1 << 20, 1 << 14);
    let x = spanning_inputs(&mut r, n, false);
    let y = spanning_inputs(&mut r, n, false);
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dx, dy) = (c.gpu.upload(&x).ctx("up")?, c.gpu.upload(&y).ctx("up")?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 10]; n]).ctx("alloc")?;
    k::fast_math::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::for_elements(n, 256), &dx, &dy, &mut out)
        .ctx("launch")?;
    let got = out.to_vec().ctx("read")?;
    let names = ["sin", "cos", "exp", "exp2", "ln", "log2", "powf", "div", "rsqrt", "sqrt"];
    // (largest measured / bound, its raw difference, x, y)
    let mut worst = [(0.0f64, 0.0f64, 0.0f32, 0.0f32); 10];
    let mut failures: Vec<String> = Vec::new();
    for i in 0..n {
        let (xv, yv) = (x[i], y[i]);
        let cpu = [
            fast::sin(xv),
            fast::cos(xv),
            fast::exp(xv),
            fast::exp2(xv),
            fast::ln(yv),
            fast::log2(yv),
            fast::powf(yv, xv),
            fast::div(xv, yv),
            fast::rsqrt(yv),
            fast::sqrt(yv),
        ];
        let unit_interval = yv > 0.5 && yv < 2.0;
        // log2's bound at y, as an absolute error of log2 y (for powf's exponent).
        let log2_abs =
            if unit_interval { 2f64.powf(-21.8) } else { 2f64.powf(-21.6) * f64::from(fast::log2(yv)).abs() };
        let exponent = f64::from(xv) * f64::from(fast::log2(yv));
        let ulp_of =
            |v: f64| if v.is_finite() && v != 0.0 { 2f64.powi(v.abs().log2().floor() as i32 - 23) } else { 0.0 };
        let powf_rel = (2f64.powf(f64::from(xv).abs() * log2_abs + ulp_of(exponent)) - 1.0) + 3.0 * 2f64.powi(-23);
        let subnormal_exp = |v: f32| v != 0.0 && v.abs() < f32::MIN_POSITIVE;
        // A zero or subnormal power on either side is measured in ulps (a relative bound
        // means nothing at 0).
        let tiny = |v: f32| v.abs() < f32::MIN_POSITIVE;
        let tiny_powf = !cpu[6].is_nan() && (tiny(cpu[6]) || tiny(got[i][6]));
        let bounds: [(&str, f64); 10] = [
            ("abs", 2f64.powf(-19.5)),
            ("abs", 2f64.powf(-19.5)),
            ("ulp", if subnormal_exp(cpu[2]) { 4.0 } else { 3.0 }),
            ("ulp", if subnormal_exp(cpu[3]) { 4.0 } else { 3.0 }),
            if unit_interval { ("abs", 2f64.powf(-21.9)) } else { ("rel", 2f64.powf(-21.1)) },
            if unit_interval { ("abs", 2f64.powf(-21.8)) } else { ("rel", 2f64.powf(-21.6)) },
            if tiny_powf { ("ulp", 4.0 + powf_rel * 2f64.powi(23)) } else { ("rel", powf_rel) },
            ("ulp", 4.0),
            ("rel", 2f64.powf(-22.3)),
            ("rel", 2f64.powf(-22.4)),
        ];
        for j in 0..10 {
            let (unit, bound) = bounds[j];
            let m = measured(got[i][j], cpu[j], unit, bound);
            if m > worst[j].0 || (m.is_nan() && !worst[j].0.is_nan()) {
                worst[j] = (m, m * bound, xv, yv);
            }
            if (m > 1.0 || m.is_nan()) && failures.len() < 20 {
                failures.push(format!(
                    "{}: x = {xv:e} ({:#010x}), y = {yv:e} ({:#010x}): GPU {:e} ({:#010x}), CPU device {:e} ({:#010x}), \
                     bound {bound:e} {unit}",
                    names[j],
                    xv.to_bits(),
                    yv.to_bits(),
                    got[i][j],
                    got[i][j].to_bits(),
                    cpu[j],
                    cpu[j].to_bits()
                ));
            }
        }
    }
    println!("fp::fast, GPU vs CPU device over {n} inputs: largest difference (unit, fraction of the bound, at x, y)");
    for j in 0..10 {
        let (m, raw, xv, yv) = worst[j];
        println!(
            "  {:>5}: {raw:.3e} {} = {m:.3} of the bound, at x = {xv:e}, y = {yv:e}",
            names[j],
            bounds_unit(j, yv)
        );
    }
    ensure(failures.is_empty(), || format!("outside the stated bounds:\n{}", failures.join("\n")))
}

/// The unit printed for function `j` (as [`fast_math_cpu_device`] measures it at `y`).
fn bounds_unit(j: usize, y: f32) -> &'static str {
    match j {
        0 | 1 => "abs",
        2 | 3 | 7 => "ulp",
        4 | 5 if y > 0.5 && y < 2.0 => "abs",
        _ => "rel",
    }
}
