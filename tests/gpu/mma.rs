//! `cohort::mma` (issue 28): `mma.sync` m16n8k16 with BF16/F16 inputs and F32/F16 accumulators
//! on fragments built from their documented coordinates, `ldmatrix` (x4, x2, x2.trans,
//! x4.trans) from shared tiles against `element_coords`, the WMMA layer's GEMM (shared tiles,
//! B row- and column-major, global loads), the `cvt` conversions, and the misuse the safe API
//! turns into errors (an `ldmatrix` row outside its tile or misaligned; a divergent `mma_sync`
//! or `ldmatrix` in the checked-mode suite, `check.rs`). Every element is checked against a
//! CPU reference: data that are small integers times 0.25 (every sum exact in `f32`, so equal
//! bit for bit on any adder), and random data with a stated tolerance.
use cohort::mma::{
    Accumulator, FragA, FragB, FragC, Fragment, Half, M16N8K8, M16N8K32, MatrixA, MatrixB, MmaA, MmaB, MmaC, Operand,
    RowMajor, bf16, e4m3, e5m2, f16, tf32, wmma,
};
use cohort_runtime::{DeviceBuffer, LaunchConfig};
use cohort_test_kernels::mma as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("mma_sync_bf16_f32_every_element", |c| from_global::<bf16>(c, "mma_sync_bf16_f32_every_element")),
        gpu_trial("mma_sync_f16_f32_every_element", |c| from_global::<f16>(c, "mma_sync_f16_f32_every_element")),
        gpu_trial("mma_sync_f16_f16_every_element", f16_accumulate),
        gpu_trial("mma_ldmatrix_fragments_match_element_coords", ldmatrix),
        gpu_trial("mma_wmma_gemm_shared_col_major_and_global", wmma_gemm),
        gpu_trial("mma_half_conversions_round_to_nearest_even", conversions),
        gpu_trial("mma_ldmatrix_out_of_tile_or_misaligned_is_an_error", ldmatrix_misuse),
        gpu_trial("mma_divergent_mma_sync_is_an_error", diverge_mma_cpu),
        gpu_trial("mma_warp_tiles_load_what_ldmatrix_loads", warp_tiles),
        gpu_trial("mma_warp_tiles_misuse_is_an_error", warp_tiles_misuse),
        gpu_trial("mma_tile_copy_lands_the_window_in_the_padded_tile", tile_copy),
        gpu_trial("mma_tile_copy_misuse_is_an_error", tile_copy_misuse),
        gpu_trial("mma_async_tiles_copy_lands_window_k_and_none_past_the_last", async_tiles_copy),
        gpu_trial("mma_sync_tf32_every_element", tf32_mma),
        gpu_trial("mma_sync_int8_every_element_wrapping_and_satfinite", int8_mma),
        gpu_trial("mma_sync_fp8_every_element", fp8_mma),
        gpu_trial("mma_low_precision_conversions_match_the_host", low_precision_conversions),
        gpu_trial("mma_low_precision_types_as_arguments_and_elements", low_precision_arguments),
        gpu_trial("mma_stmatrix_stores_fragments_and_matrices", stmatrix),
        gpu_trial("mma_k8_k32_fragments_cover_their_operands_once", k8_k32_coords),
    ]
}

/// A small integer times 0.25 in [-4, 4] (exact in BF16 and F16; products are multiples of
/// 1/16 up to 16 in magnitude, so sums of a few hundred are exact in `f32`).
fn quarter(r: &mut StdRng) -> f32 {
    r.random_range(-16i32..=16) as f32 * 0.25
}

/// `d = a · b + c` for row-major `a` (m×k), `b` (k×n), `c` (m×n), in `f64`.
fn reference(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut d = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = f64::from(c[i * n + j]);
            for kk in 0..k {
                s += f64::from(a[i * k + kk]) * f64::from(b[kk * n + j]);
            }
            d[i * n + j] = s;
        }
    }
    d
}

/// `Σ |a| |b| + |c|` per element: the scale of the rounding error of an `f32` sum.
fn magnitude(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let abs = |v: &[f32]| v.iter().map(|x| x.abs()).collect::<Vec<f32>>();
    reference(&abs(a), &abs(b), &abs(c), m, n, k)
}

/// Places lane-ordered accumulator outputs (`[f32; 4]` per thread, one m16n8 tile per warp)
/// at their coordinates: warp `w`'s D is `d[128 w..]`, row-major 16×8.
fn place(out: &[[f32; 4]]) -> Vec<f32> {
    let mut d = vec![f32::NAN; out.len() * 4];
    for (t, v) in out.iter().enumerate() {
        let (w, lane) = (t / 32, (t % 32) as u32);
        for (i, &x) in v.iter().enumerate() {
            let (r, c) = FragC::<f32>::element_coords(lane, i);
            d[128 * w + 8 * r + c] = x;
        }
    }
    d
}

/// The instances of `mma_from_global`.
trait FromGlobal: Half + cohort::mma::MmaInput<f32> {
    fn launch(
        c: &Ctx,
        s: &cohort_runtime::Stream,
        bufs: (&DeviceBuffer<Self>, &DeviceBuffer<Self>, &DeviceBuffer<f32>),
        out: &mut DeviceBuffer<[f32; 4]>,
    ) -> TestResult;
}

macro_rules! from_global_instance {
    ($($t:ty),*) => {$(
        impl FromGlobal for $t {
            fn launch(
                c: &Ctx,
                s: &cohort_runtime::Stream,
                (a, b, cc): (&DeviceBuffer<Self>, &DeviceBuffer<Self>, &DeviceBuffer<f32>),
                out: &mut DeviceBuffer<[f32; 4]>,
            ) -> TestResult {
                let cfg = LaunchConfig::new(2, 128);
                k::mma_from_global::<$t>::load(&c.tests).ctx("load")?.launch(s, cfg, a, b, cc, out).ctx("launch")
            }
        }
    )*};
}
from_global_instance!(bf16, f16);

fn from_global<T: FromGlobal>(c: &Ctx, name: &str) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng(name);
    let warps = 8usize;
    for random in [false, true] {
        let draw = |r: &mut StdRng| if random { r.random_range(-1.0f32..1.0) } else { quarter(r) };
        let a: Vec<T> = (0..256 * warps).map(|_| T::from_f32(draw(&mut r))).collect();
        let b: Vec<T> = (0..128 * warps).map(|_| T::from_f32(draw(&mut r))).collect();
        let cc: Vec<f32> = (0..128 * warps).map(|_| draw(&mut r)).collect();
        let (da, db, dc) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?, c.gpu.upload(&cc).ctx("c")?);
        let mut out = c.gpu.upload(&vec![[f32::NAN; 4]; 32 * warps]).ctx("out")?;
        T::launch(c, &s, (&da, &db, &dc), &mut out)?;
        let got = place(&out.to_vec().ctx("read")?);
        let (mut want, mut mag) = (Vec::new(), Vec::new());
        for w in 0..warps {
            let af: Vec<f32> = a[256 * w..256 * (w + 1)].iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = b[128 * w..128 * (w + 1)].iter().map(|x| x.to_f32()).collect();
            let cw = &cc[128 * w..128 * (w + 1)];
            want.extend(reference(&af, &bf, cw, 16, 8, 16));
            mag.extend(magnitude(&af, &bf, cw, 16, 8, 16));
        }
        let what = format!("{name}: D of {warps} warps, {} data", if random { "random" } else { "quarter-integer" });
        if random {
            // An f32 sum of 17 terms: at most ~17 roundings of 2^-24 of the magnitude.
            let idx: Vec<usize> = (0..got.len()).collect();
            check_all_by(&what, &idx, &idx, |&i, _| (f64::from(got[i]) - want[i]).abs() <= 4e-6 * mag[i])?;
        } else {
            let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
            check_all(&what, &got, &want)?;
        }
    }
    Ok(())
}

fn f16_accumulate(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_sync_f16_f16_every_element");
    let warps = 4usize;
    let a: Vec<f16> = (0..256 * warps).map(|_| f16::from_f32(quarter(&mut r))).collect();
    let b: Vec<f16> = (0..128 * warps).map(|_| f16::from_f32(quarter(&mut r))).collect();
    let cc: Vec<f16> = (0..128 * warps).map(|_| f16::from_f32(quarter(&mut r))).collect();
    let (da, db, dc) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?, c.gpu.upload(&cc).ctx("c")?);
    let mut out = c.gpu.upload(&vec![[f16::NAN; 4]; 32 * warps]).ctx("out")?;
    k::mma_f16_accumulate::load(&c.tests).ctx("load")?.launch(&s, LaunchConfig::new(1, 128), &da, &db, &dc, &mut out).ctx("launch")?;
    let got: Vec<[f32; 4]> = out.to_vec().ctx("read")?.iter().map(|v| v.map(|h| h.to_f32())).collect();
    let got = place(&got);
    let mut want = Vec::new();
    for w in 0..warps {
        let f = |v: &[f16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
        // Sums of multiples of 1/16 below 2^6 in magnitude: exact in F16's 11 bits.
        want.extend(reference(&f(&a[256 * w..][..256]), &f(&b[128 * w..][..128]), &f(&cc[128 * w..][..128]), 16, 8, 16));
    }
    let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
    check_all("F16 accumulators: D of 4 warps", &got, &want)
}

fn ldmatrix(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_ldmatrix_fragments_match_element_coords");
    let (blocks, warps) = (2usize, 8usize);
    let a: Vec<bf16> = (0..256 * warps).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    let b: Vec<bf16> = (0..128 * warps).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    // Bᵀ (N×K) of each warp's B.
    let bt: Vec<bf16> = (0..128 * warps).map(|e| {
        let (w, n, kk) = (e / 128, (e % 128) / 16, e % 16);
        b[128 * w + 8 * kk + n]
    }).collect();
    let cc: Vec<f32> = (0..128 * warps).map(|_| quarter(&mut r)).collect();
    let up = |v: &Vec<bf16>| c.gpu.upload(v);
    let (da, db, dbt, dc) = (up(&a).ctx("a")?, up(&b).ctx("b")?, up(&bt).ctx("bt")?, c.gpu.upload(&cc).ctx("c")?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 8]; 32 * warps]).ctx("out")?;
    let mut regs = c.gpu.upload(&vec![[0xdead_beefu32; 12]; 32 * warps]).ctx("regs")?;
    k::mma_ldmatrix::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(blocks as u32, 128), &da, &db, &dbt, &dc, &mut out, &mut regs)
        .ctx("launch")?;
    let (out, regs) = (out.to_vec().ctx("read")?, regs.to_vec().ctx("read")?);
    // Registers: each 16-bit element against the matrices at `element_coords`.
    let bits = |v: bf16| u32::from(v.to_bits());
    let pack = |lo: bf16, hi: bf16| bits(lo) | bits(hi) << 16;
    let mut want_regs = Vec::new();
    for t in 0..32 * warps {
        let (w, l) = (t / 32, (t % 32) as u32);
        let ae = |i: usize| {
            let (row, col) = FragA::<bf16>::element_coords(l, i);
            a[256 * w + 16 * row + col]
        };
        let be = |i: usize| {
            let (kk, n) = FragB::<bf16>::element_coords(l, i);
            b[128 * w + 8 * kk + n]
        };
        // ldmatrix_x4_trans on the A block: matrix m at rows 8 (m / 2), columns 8 (m % 2);
        // lane l gets (row 2 (l % 4) + j, column l / 4) of each.
        let at = |m: usize| {
            let e = |j: usize| {
                let (row, col) = (8 * (m / 2) + 2 * (l as usize % 4) + j, 8 * (m % 2) + l as usize / 4);
                a[256 * w + 16 * row + col]
            };
            pack(e(0), e(1))
        };
        let rb = [pack(be(0), be(1)), pack(be(2), be(3))];
        want_regs.push([
            pack(ae(0), ae(1)),
            pack(ae(2), ae(3)),
            pack(ae(4), ae(5)),
            pack(ae(6), ae(7)),
            rb[0],
            rb[1],
            rb[0],
            rb[1],
            at(0),
            at(1),
            at(2),
            at(3),
        ]);
    }
    check_all("ldmatrix registers: A (x4), B (x2.trans), B from Bᵀ (x2), A (x4.trans)", &regs, &want_regs)?;
    let mut want = Vec::new();
    for w in 0..warps {
        let af: Vec<f32> = a[256 * w..][..256].iter().map(|x| x.to_f32()).collect();
        let bf: Vec<f32> = b[128 * w..][..128].iter().map(|x| x.to_f32()).collect();
        want.extend(reference(&af, &bf, &cc[128 * w..][..128], 16, 8, 16).into_iter().map(|x| x as f32));
    }
    let d1 = place(&out.iter().map(|v| [v[0], v[1], v[2], v[3]]).collect::<Vec<_>>());
    let d2 = place(&out.iter().map(|v| [v[4], v[5], v[6], v[7]]).collect::<Vec<_>>());
    check_all("D from ldmatrix fragments (B K×N)", &d1, &want)?;
    check_all("D from ldmatrix fragments (B from Bᵀ)", &d2, &want)
}

fn wmma_gemm(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_wmma_gemm_shared_col_major_and_global");
    let kern = k::wmma_gemm::load(&c.tests).ctx("load")?;
    let (m, n, kk) = (64usize, 96usize, 48usize);
    for random in [false, true] {
        let draw = |r: &mut StdRng| if random { r.random_range(-1.0f32..1.0) } else { quarter(r) };
        let a: Vec<bf16> = (0..m * kk).map(|_| bf16::from_f32(draw(&mut r))).collect();
        let b: Vec<bf16> = (0..kk * n).map(|_| bf16::from_f32(draw(&mut r))).collect();
        let bt: Vec<bf16> = (0..n * kk).map(|e| b[(e % kk) * n + e / kk]).collect();
        let cc: Vec<f32> = (0..m * n).map(|_| draw(&mut r)).collect();
        let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
        let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
        let want = reference(&af, &bf, &cc, m, n, kk);
        let mag = magnitude(&af, &bf, &cc, m, n, kk);
        let up = |v: &Vec<bf16>| c.gpu.upload(v);
        let (da, db, dbt, dc) = (up(&a).ctx("a")?, up(&b).ctx("b")?, up(&bt).ctx("bt")?, c.gpu.upload(&cc).ctx("c")?);
        let blocks = (m / 32) * (n / 32);
        for mode in 0..3u32 {
            let mut out = c.gpu.upload(&vec![[f32::NAN; 8]; blocks * 128]).ctx("out")?;
            let dims = [m as u32, n as u32, kk as u32, mode];
            kern.launch(&s, LaunchConfig::new(blocks as u32, 128), &da, &db, &dbt, &dc, dims, &mut out).ctx("launch")?;
            let out = out.to_vec().ctx("read")?;
            let mut got = vec![f32::NAN; m * n];
            for (g, row) in out.iter().enumerate() {
                let (bi, t) = (g / 128, g % 128);
                let (r0, c0) = (32 * (bi / (n / 32)), 32 * (bi % (n / 32)));
                for (j, &x) in row.iter().enumerate() {
                    got[(r0 + t / 4) * n + c0 + 8 * (t % 4) + j] = x;
                }
            }
            let what = format!(
                "WMMA GEMM {m}×{n}×{kk}, mode {mode} (0 shared, 1 B column-major, 2 global), {} data",
                if random { "random" } else { "quarter-integer" }
            );
            if random {
                // f32 sums of 49 terms: at most ~49 roundings of 2^-24 of the magnitude.
                let idx: Vec<usize> = (0..got.len()).collect();
                check_all_by(&what, &idx, &idx, |&i, _| (f64::from(got[i]) - want[i]).abs() <= 1e-5 * mag[i])?;
            } else {
                let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
                check_all(&what, &got, &want)?;
            }
        }
    }
    // The accumulator's coordinates cover the 16×16 tile once.
    let mut seen = vec![0u32; 256];
    for lane in 0..32 {
        for i in 0..8 {
            let (row, col) = wmma::accumulator_coords(lane, i);
            seen[16 * row + col] += 1;
        }
    }
    ensure(seen.iter().all(|&x| x == 1), || format!("accumulator coordinates: {seen:?}"))
}

fn conversions(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_half_conversions_round_to_nearest_even");
    // Ties (halfway between two BF16 / F16), values near overflow, subnormals, and random ones.
    let mut xs: Vec<f32> = vec![
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        -2.5,
        65504.0,
        65520.0,
        1e-7,
        -3e-39,
        3.0e38,
        f32::INFINITY,
        0.1,
    ];
    xs.extend((0..500).map(|_| f32::from_bits(r.random::<u32>() & 0xbfff_ffff)));
    xs.extend((0..500).map(|_| r.random_range(-70000.0f32..70000.0)));
    let dx = c.gpu.upload(&xs).ctx("xs")?;
    let mut out = c.gpu.upload(&vec![[f32::NAN; 2]; xs.len()]).ctx("out")?;
    let mut bits = c.gpu.upload(&vec![[0u16; 2]; xs.len()]).ctx("bits")?;
    let cfg = LaunchConfig::new(xs.len().div_ceil(128) as u32, 128);
    k::half_convert::load(&c.tests).ctx("load")?.launch(&s, cfg, &dx, &mut out, &mut bits).ctx("launch")?;
    let want_bits: Vec<[u16; 2]> = xs
        .iter()
        .map(|&x| [bf16::from_f32(x).to_bits(), f16::from_f32(x).to_bits()])
        .collect();
    // The inputs hold no NaN (bit 30 cleared), where encodings may differ.
    check_all("bf16 / f16 bits of cvt.rn", &bits.to_vec().ctx("read")?, &want_bits)?;
    let want: Vec<[f32; 2]> =
        xs.iter().map(|&x| [bf16::from_f32(x).to_f32(), f16::from_f32(x).to_f32()]).collect();
    check_all("bf16 / f16 values back in f32", &out.to_vec().ctx("read")?, &want)?;
    // Round to nearest even, checked on the ties: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
    ensure(want_bits[0][0] == 0x3f80 && want_bits[1][0] == 0x3f82, || format!("bf16 ties: {:?}", &want_bits[..2]))
}

/// An `ldmatrix` whose rows leave the tile, or are misaligned: the launch ends with an `Err`
/// naming the check, never a read of other memory.
fn ldmatrix_misuse(c: &Ctx) -> TestResult {
    if !c.is_cpu() {
        // On a GPU the panic traps and ends the context: checked by the CPU device here, and
        // on a GPU by `mma_ldmatrix_misuse` in the hostile suite's child processes (not yet).
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    for (which, needle) in [(0, "ldmatrix row out of the tile"), (1, "ldmatrix row address not 16-byte aligned")] {
        let mut out = c.gpu.upload(&vec![0u32; 64]).ctx("out")?;
        let cfg = LaunchConfig::new(2, 32);
        let res = if which == 0 {
            k::ldmatrix_out_of_tile::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out)
        } else {
            k::ldmatrix_misaligned::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out)
        };
        let e = match res.and_then(|()| s.synchronize()) {
            Ok(()) => return Err(format!("case {which}: the kernel completed")),
            Err(e) => e.to_string(),
        };
        ensure(e.contains(needle) && e.contains("mma.rs:"), || format!("case {which}: {e}"))?;
    }
    Ok(())
}

/// A warp split across two `mma_sync` calls, and half a warp at an `ldmatrix`: on the CPU device
/// an `Err` naming the instruction (`divergence: `); on a GPU the checked-mode suite covers it
/// (`check_divergent_mma_sync_is_an_error`, run in a child process).
fn diverge_mma_cpu(c: &Ctx) -> TestResult {
    if !c.is_cpu() {
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    for which in 0..2 {
        let mut out = c.gpu.upload(&vec![0u32; 256]).ctx("out")?;
        let cfg = LaunchConfig::new(2, 128);
        let res = if which == 0 {
            k::diverge_mma::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out)
        } else {
            k::diverge_ldmatrix::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out)
        };
        let e = match res.and_then(|()| s.synchronize()) {
            Ok(()) => return Err(format!("case {which}: the divergent kernel completed")),
            Err(e) => e.to_string(),
        };
        let op = if which == 0 { "`mma_sync`" } else { "`ldmatrix`" };
        ensure(e.contains("divergence: ") && e.contains(op) && e.contains("mma.rs:"), || format!("case {which}: {e}"))?;
    }
    Ok(())
}

/// `mma::WarpTiles` (one lane pointer, blocks by index) loads exactly what `load_a`,
/// `load_b_nk_pair` and `load_b_pair` (checked against `element_coords` above) load from the same
/// blocks: A, B stored N×K and B stored K×N, on a tile of distinct values.
fn warp_tiles(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let a: Vec<bf16> = (0..64 * 40).map(|e| bf16::from_f32(e as f32)).collect();
    let da = c.gpu.upload(&a).ctx("a")?;
    let mut out = c.gpu.upload(&vec![[0u32; 96]; 32]).ctx("out")?;
    k::warp_tiles::load(&c.tests).ctx("load")?.launch(&s, LaunchConfig::new(1, 32), &da, &mut out).ctx("launch")?;
    let out = out.to_vec().ctx("read")?;
    for (lane, r) in out.iter().enumerate() {
        ensure(r[..48] == r[48..], || format!("lane {lane}: WarpTiles {:?}, ldmatrix {:?}", &r[..48], &r[48..]))?;
        // Distinct, non-zero data went through (every element is e < 2560, exact in BF16).
        ensure(r[..48].iter().all(|&w| w != 0) || lane == 0, || format!("lane {lane}: zero registers {:?}", &r[..48]))?;
    }
    Ok(())
}

/// A `WarpTiles` block leaving its tile, a block index past it, or a misaligned column: the
/// launch ends with an `Err` naming `WarpTiles` (the CPU device; a GPU would trap, as for
/// `mma_ldmatrix_out_of_tile_or_misaligned_is_an_error`).
fn warp_tiles_misuse(c: &Ctx) -> TestResult {
    if !c.is_cpu() {
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::warp_tiles_misuse::load(&c.tests).ctx("load")?;
    for which in 0..3u32 {
        let mut out = c.gpu.upload(&[0u32; 32]).ctx("out")?;
        let res = kern.launch(&s, LaunchConfig::new(1, 32), which, &mut out).and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains("WarpTiles"), || format!("case {which}: {e:?}"))?;
    }
    Ok(())
}

/// The expected 48 × 24 tile after `tile_copy` of the 32 × 16 window at (`r0`, `c0`) of the
/// 64 × 40 `a` into rows `row0 ..`: the window there, `-1` elsewhere.
fn tile_copy_want(a: &[bf16], r0: usize, c0: usize, row0: usize) -> Vec<[bf16; 24]> {
    (0..48)
        .map(|r| {
            std::array::from_fn(|cc| {
                if (row0..row0 + 32).contains(&r) && cc < 16 {
                    a[(r0 + r - row0) * 40 + c0 + cc]
                } else {
                    bf16::NEG_ONE
                }
            })
        })
        .collect()
}

/// `cg::memcpy_async_tile`: a 32 × 16 window of a 64 × 40 matrix (rows of 80 bytes) lands in
/// rows `row0 ..`, columns 0..16 of a padded 48 × 24 shared tile, and nothing else of the tile
/// changes; at several windows and rows, in two blocks.
fn tile_copy(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let a: Vec<bf16> = (0..64 * 40).map(|e| bf16::from_f32((e % 1999) as f32 + 0.5)).collect();
    let da = c.gpu.upload(&a).ctx("a")?;
    let kern = k::tile_copy::load(&c.tests).ctx("load")?;
    for (r0, c0, row0) in [(0usize, 0usize, 0usize), (32, 24, 16), (7, 8, 5), (13, 16, 0)] {
        let mut out = c.gpu.upload(&vec![[bf16::ZERO; 24]; 128]).ctx("out")?;
        let at = [r0 as u32, c0 as u32, row0 as u32];
        kern.launch(&s, LaunchConfig::new(2, 64), da.as_matrix(64, 40).ctx("a")?, at, 0u32, &mut out).ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        let want = tile_copy_want(&a, r0, c0, row0);
        for b in 0..2 {
            check_all(&format!("tile of block {b}, window ({r0}, {c0}) at row {row0}"), &got[64 * b..64 * b + 48], &want)?;
        }
    }
    Ok(())
}

/// `cg::AsyncTiles::copy(k)` (the GEMM's fill): window `k` of a 32-row strip of a 64 × 40
/// matrix (five 32 × 8 windows along K) lands in rows `row0 ..`, columns 0..8 of the padded
/// tile and nothing else changes; `k` past the last window copies nothing and says so; the
/// strip counts its windows (`windows() == 5`). In two blocks.
fn async_tiles_copy(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let a: Vec<bf16> = (0..64 * 40).map(|e| bf16::from_f32((e % 1999) as f32 + 0.5)).collect();
    let da = c.gpu.upload(&a).ctx("a")?;
    let kern = k::async_tiles_copy::load(&c.tests).ctx("load")?;
    for (r0, k, row0) in [(0usize, 0usize, 0usize), (32, 4, 16), (7, 2, 5), (13, 1, 0), (0, 5, 0), (32, 7, 16)] {
        let mut out = c.gpu.upload(&vec![[bf16::ZERO; 24]; 128]).ctx("out")?;
        let mut res = c.gpu.upload(&[[9u32; 2]; 2]).ctx("res")?;
        let at = [r0 as u32, k as u32, row0 as u32];
        kern.launch(&s, LaunchConfig::new(2, 64), da.as_matrix(64, 40).ctx("a")?, at, &mut out, &mut res)
            .ctx("launch")?;
        let (got, res) = (out.to_vec().ctx("read")?, res.to_vec().ctx("read res")?);
        let want: Vec<[bf16; 24]> = (0..48)
            .map(|r| {
                std::array::from_fn(|cc| {
                    if k < 5 && (row0..row0 + 32).contains(&r) && cc < 8 {
                        a[(r0 + r - row0) * 40 + 8 * k + cc]
                    } else {
                        bf16::NEG_ONE
                    }
                })
            })
            .collect();
        for b in 0..2 {
            check_all(&format!("tile of block {b}, window {k} of row {r0} at row {row0}"), &got[64 * b..64 * b + 48], &want)?;
            ensure(res[b] == [u32::from(k < 5), 5], || format!("block {b}, window {k}: [copied, windows] = {:?}", res[b]))?;
        }
    }
    Ok(())
}

/// `memcpy_async_tile` misused: a window whose rows are not 16-byte aligned (column 4, 8 bytes),
/// rows past the tile (row 20 of 48 for 32 rows), a source in a thread's own memory (not
/// global): each an `Err` of the launch naming the check (the CPU device; on a GPU the panic
/// traps and the context is lost).
fn tile_copy_misuse(c: &Ctx) -> TestResult {
    if !c.is_cpu() {
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    let a = vec![bf16::ONE; 64 * 40];
    let da = c.gpu.upload(&a).ctx("a")?;
    let kern = k::tile_copy::load(&c.tests).ctx("load")?;
    for (at, local, needle) in [
        ([0u32, 4, 0], 0u32, "not 16-byte aligned"),
        ([0, 0, 20], 0, "rows outside the tile"),
        ([0, 0, 0], 1, "memcpy_async_tile"),
    ] {
        let mut out = c.gpu.upload(&vec![[bf16::ZERO; 24]; 64]).ctx("out")?;
        let res = kern
            .launch(&s, LaunchConfig::new(1, 64), da.as_matrix(64, 40).ctx("a")?, at, local, &mut out)
            .and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains(needle), || format!("{at:?}, local {local}: {e:?}"))?;
    }
    Ok(())
}

/// Places lane-ordered m16n8 accumulator outputs (four per thread, one tile per warp) at their
/// coordinates (any shape's: m16n8k8's and m16n8k32's are m16n8k16's): warp `w`'s D is
/// `d[128 w..]`, row-major 16×8.
fn place_any<T: Copy>(out: &[[T; 4]], fill: T) -> Vec<T> {
    let mut d = vec![fill; out.len() * 4];
    for (t, v) in out.iter().enumerate() {
        let (w, lane) = (t / 32, (t % 32) as u32);
        for (i, &x) in v.iter().enumerate() {
            let (r, c) = MmaC::<M16N8K32, i32>::element_coords(lane, i);
            d[128 * w + 8 * r + c] = x;
        }
    }
    d
}

/// `reference` for integers: `c + a · b` exactly.
fn int_reference(a: &[i64], b: &[i64], c: &[i64], m: usize, n: usize, k: usize) -> Vec<i64> {
    (0..m * n).map(|e| c[e] + (0..k).map(|kk| a[(e / n) * k + kk] * b[kk * n + e % n]).sum::<i64>()).collect()
}

/// m16n8k8 TF32: A and B given as `f32` and rounded to TF32 on the device (A with values that
/// TF32 rounds, ties included, among exact ones), C `f32`; every element of D against the exact
/// product of the host-rounded inputs (sums exact in `f32`: equal bit for bit).
fn tf32_mma(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_sync_tf32_every_element");
    let warps = 4usize;
    // A quarter-integer, sometimes plus 2^-12 or 2^-13 of it (below TF32's 10 bits: rounded
    // away, the 2^-11 tie up): the inputs differ from their TF32 values.
    let draw = |r: &mut StdRng| {
        let q = quarter(r);
        match r.random_range(0..4) {
            0 => q * (1.0 + 2f32.powi(-11)),
            1 => q * (1.0 + 2f32.powi(-13)),
            _ => q,
        }
    };
    let a: Vec<f32> = (0..128 * warps).map(|_| draw(&mut r)).collect();
    // B exact (quarter-integers): with A's 11 significant bits every sum stays exact in f32.
    let b: Vec<f32> = (0..64 * warps).map(|_| quarter(&mut r)).collect();
    let cc: Vec<f32> = (0..128 * warps).map(|_| quarter(&mut r)).collect();
    let (da, db, dc) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?, c.gpu.upload(&cc).ctx("c")?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 4]; 32 * warps]).ctx("out")?;
    k::mma_tf32_from_global::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(1, 32 * warps as u32), &da, &db, &dc, &mut out)
        .ctx("launch")?;
    let got = place_any(&out.to_vec().ctx("read")?, f32::NAN);
    let tf = |v: &[f32]| v.iter().map(|&x| tf32::from_f32(x).to_f32()).collect::<Vec<f32>>();
    let mut want = Vec::new();
    for w in 0..warps {
        want.extend(reference(&tf(&a[128 * w..][..128]), &tf(&b[64 * w..][..64]), &cc[128 * w..][..128], 16, 8, 8));
    }
    ensure(tf(&a).iter().zip(&a).any(|(t, x)| t != x), || "no input was rounded: the test proves nothing".into())?;
    let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
    check_all("TF32: D of 4 warps", &got, &want)
}

/// m16n8k32 with S8/U8 inputs, all four pairs, wrapping and `.satfinite`: full-range inputs
/// and accumulators near `i32`'s ends (so that sums overflow), every element of D against the
/// exact sum wrapped or clamped.
fn int8_mma(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_sync_int8_every_element_wrapping_and_satfinite");
    let warps = 4usize;
    let a8: Vec<u8> = (0..512 * warps).map(|_| r.random()).collect();
    let b8: Vec<u8> = (0..256 * warps).map(|_| r.random()).collect();
    // Half the accumulators within 2^20 of i32's ends: 32 products reach ±2^19.
    let cc: Vec<i32> = (0..128 * warps)
        .map(|e| match e % 4 {
            0 => i32::MAX - r.random_range(0..1 << 20),
            1 => i32::MIN + r.random_range(0..1 << 20),
            _ => r.random_range(-(1 << 20)..1 << 20),
        })
        .collect();
    let dc = c.gpu.upload(&cc).ctx("c")?;
    let cfg = LaunchConfig::new(1, 32 * warps as u32);
    let signed = |v: &[u8]| -> Vec<i8> { v.iter().map(|&x| x as i8).collect() };
    let (sa, sb) = (signed(&a8), signed(&b8));
    for (name, a_signed, b_signed) in [("S8 × S8", true, true), ("S8 × U8", true, false), ("U8 × S8", false, true), ("U8 × U8", false, false)] {
        for sat in [0u32, 1] {
            let mut out = c.gpu.upload(&vec![[0i32; 4]; 32 * warps]).ctx("out")?;
            let (da8, db8) = (c.gpu.upload(&a8).ctx("a")?, c.gpu.upload(&b8).ctx("b")?);
            let (das, dbs) = (c.gpu.upload(&sa).ctx("a")?, c.gpu.upload(&sb).ctx("b")?);
            match (a_signed, b_signed) {
                (true, true) => k::mma_s8_s8::load(&c.tests).ctx("load")?.launch(&s, cfg, &das, &dbs, &dc, sat, &mut out),
                (true, false) => k::mma_s8_u8::load(&c.tests).ctx("load")?.launch(&s, cfg, &das, &db8, &dc, sat, &mut out),
                (false, true) => k::mma_u8_s8::load(&c.tests).ctx("load")?.launch(&s, cfg, &da8, &dbs, &dc, sat, &mut out),
                (false, false) => k::mma_u8_u8::load(&c.tests).ctx("load")?.launch(&s, cfg, &da8, &db8, &dc, sat, &mut out),
            }
            .ctx("launch")?;
            let got = place_any(&out.to_vec().ctx("read")?, 0);
            let val = |v: &[u8], sgn: bool| v.iter().map(|&x| if sgn { i64::from(x as i8) } else { i64::from(x) }).collect::<Vec<i64>>();
            let mut want = Vec::new();
            for w in 0..warps {
                let exact = int_reference(
                    &val(&a8[512 * w..][..512], a_signed),
                    &val(&b8[256 * w..][..256], b_signed),
                    &cc[128 * w..][..128].iter().map(|&x| i64::from(x)).collect::<Vec<i64>>(),
                    16,
                    8,
                    32,
                );
                want.extend(exact.iter().map(|&x| {
                    if sat != 0 { x.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 } else { x as i32 }
                }));
            }
            check_all(&format!("{name}, {}: D of 4 warps", if sat != 0 { "satfinite" } else { "wrapping" }), &got, &want)?;
        }
    }
    Ok(())
}

/// m16n8k32 with FP8 inputs (sm_89+; the sm_80 module refuses it with an `Err`), all four
/// pairs: inputs multiples of 1/2 in [-2, 2] (exact in both formats), accumulators multiples of
/// 1/4 in [-8, 8]; every sum is a multiple of 1/4 below 2^8 in magnitude (exact in 11 bits,
/// within any accumulation width): D equal bit for bit to the exact product.
fn fp8_mma(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_sync_fp8_every_element");
    let warps = 4usize;
    let half = |r: &mut StdRng| r.random_range(-4i32..=4) as f32 * 0.5;
    let af: Vec<f32> = (0..512 * warps).map(|_| half(&mut r)).collect();
    let bf: Vec<f32> = (0..256 * warps).map(|_| half(&mut r)).collect();
    let cc: Vec<f32> = (0..128 * warps).map(|_| r.random_range(-32i32..=32) as f32 * 0.25).collect();
    let (a4, a5): (Vec<e4m3>, Vec<e5m2>) = (af.iter().map(|&x| e4m3::from_f32(x)).collect(), af.iter().map(|&x| e5m2::from_f32(x)).collect());
    let (b4, b5): (Vec<e4m3>, Vec<e5m2>) = (bf.iter().map(|&x| e4m3::from_f32(x)).collect(), bf.iter().map(|&x| e5m2::from_f32(x)).collect());
    ensure(a4.iter().zip(&af).all(|(v, &x)| v.to_f32() == x) && b5.iter().zip(&bf).all(|(v, &x)| v.to_f32() == x), || {
        "the inputs are not exact in FP8".into()
    })?;
    let (da4, da5, db4, db5) = (
        c.gpu.upload(&a4).ctx("a")?,
        c.gpu.upload(&a5).ctx("a")?,
        c.gpu.upload(&b4).ctx("b")?,
        c.gpu.upload(&b5).ctx("b")?,
    );
    let dc = c.gpu.upload(&cc).ctx("c")?;
    let cfg = LaunchConfig::new(1, 32 * warps as u32);
    let mut want = Vec::new();
    for w in 0..warps {
        want.extend(reference(&af[512 * w..][..512], &bf[256 * w..][..256], &cc[128 * w..][..128], 16, 8, 32));
    }
    let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
    let below_sm89 = !c.is_cpu() && (c.gpu.info().cc() < 89 || c.tests.arch() < 89);
    for (name, which) in [("E4M3 × E4M3", 0), ("E4M3 × E5M2", 1), ("E5M2 × E4M3", 2), ("E5M2 × E5M2", 3)] {
        let mut out = c.gpu.upload(&vec![[f32::NAN; 4]; 32 * warps]).ctx("out")?;
        let res = match which {
            0 => k::mma_e4m3_e4m3::load(&c.tests).ctx("load")?.launch(&s, cfg, &da4, &db4, &dc, &mut out),
            1 => k::mma_e4m3_e5m2::load(&c.tests).ctx("load")?.launch(&s, cfg, &da4, &db5, &dc, &mut out),
            2 => k::mma_e5m2_e4m3::load(&c.tests).ctx("load")?.launch(&s, cfg, &da5, &db4, &dc, &mut out),
            _ => k::mma_e5m2_e5m2::load(&c.tests).ctx("load")?.launch(&s, cfg, &da5, &db5, &dc, &mut out),
        }
        .and_then(|()| s.synchronize());
        if below_sm89 {
            let e = res.err().map(|e| e.to_string()).unwrap_or_default();
            return ensure(e.contains("sm_89"), || format!("{name} below sm_89: {e:?}"));
        }
        res.ctx("launch")?;
        let got = place_any(&out.to_vec().ctx("read")?, f32::NAN);
        check_all(&format!("{name}: D of 4 warps"), &got, &want)?;
    }
    Ok(())
}

/// The device's conversions to FP8 (`cvt.rn.satfinite`) and TF32 (`cvt.rna`) against the
/// host's, bit for bit (a NaN only as a NaN), on ties of every kind, saturation, infinities,
/// subnormals and random values; and the decoding of every FP8 code.
fn low_precision_conversions(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_low_precision_conversions_match_the_host");
    let mut x: Vec<f32> = vec![
        0.0, -0.0, 1.0, -1.0, 448.0, 464.0, 465.0, 480.0, 1e6, -1e6, 57344.0, 61440.0, 61441.0, 1e30,
        f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE, 1e-40, 2f32.powi(-10), 2f32.powi(-17),
        1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11), -(1.0 + 2f32.powi(-11)), 1.0625, 1.1875, 1.125, 1.375,
    ];
    // Every FP8 midpoint and its neighbours, of both formats.
    for b in 0u8..0x7b {
        for (lo, hi) in [(e4m3::from_bits(b).to_f32(), e4m3::from_bits(b + 1).to_f32()), (e5m2::from_bits(b).to_f32(), e5m2::from_bits(b + 1).to_f32())] {
            let mid = ((f64::from(lo) + f64::from(hi)) / 2.0) as f32;
            x.extend([mid, -mid, f32::from_bits(mid.to_bits() + 1), f32::from_bits(mid.to_bits().saturating_sub(1))]);
        }
    }
    while x.len() < 4096 {
        x.push(f32::from_bits(r.random::<u32>()));
    }
    let dx = c.gpu.upload(&x).ctx("x")?;
    let mut out = c.gpu.upload(&vec![[0u32; 4]; x.len()]).ctx("out")?;
    k::low_precision_conversions::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::for_elements(x.len(), 256), &dx, &mut out)
        .ctx("launch")?;
    let got = out.to_vec().ctx("read")?;
    let same = |g: u32, w: u32, as_f32: bool| if as_f32 && f32::from_bits(w).is_nan() { f32::from_bits(g).is_nan() } else { g == w };
    for (t, (&v, g)) in x.iter().zip(&got).enumerate() {
        let code = (t % 256) as u8;
        let (e4, e5) = (e4m3::from_f32(v), e5m2::from_f32(v));
        let fp8_ok = if v.is_nan() {
            e4m3::from_bits(g[0] as u8).is_nan() && e5m2::from_bits((g[0] >> 8) as u8).is_nan()
        } else {
            g[0] == u32::from(e4.to_bits()) | u32::from(e5.to_bits()) << 8
        };
        ensure(fp8_ok, || format!("{v:e} ({:#x}) to FP8: device {:#06x}, host e4m3 {:#x} e5m2 {:#x}", v.to_bits(), g[0], e4.to_bits(), e5.to_bits()))?;
        let t32 = tf32::from_f32(v).to_bits();
        ensure(same(g[1], t32, true), || format!("{v:e} ({:#x}) to TF32: device {:#x}, host {t32:#x}", v.to_bits(), g[1]))?;
        let (d4, d5) = (e4m3::from_bits(code).to_f32().to_bits(), e5m2::from_bits(code).to_f32().to_bits());
        ensure(same(g[2], d4, true) && same(g[3], d5, true), || {
            format!("code {code:#x}: device e4m3 {:#x} e5m2 {:#x}, host {d4:#x} {d5:#x}", g[2], g[3])
        })?;
    }
    Ok(())
}

/// `e4m3`, `e5m2` and `tf32` as kernel arguments by value and as buffer elements reach the
/// kernel bit for bit.
fn low_precision_arguments(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let buf = c.gpu.upload(&[e4m3::from_bits(0x5a), e4m3::from_bits(0xa5)]).ctx("buf")?;
    let mut out = c.gpu.upload(&[[0u32; 5]; 2]).ctx("out")?;
    let (a, b, t) = (e4m3::from_f32(-3.5), e5m2::from_f32(0.375), tf32::from_f32(1.0 + 2f32.powi(-9)));
    k::low_precision_arguments::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new(2, 32), a, b, t, &buf, &mut out)
        .ctx("launch")?;
    let want = [u32::from(a.to_bits()), u32::from(b.to_bits()), t.to_bits(), 0x5a, 0xa5];
    ensure(a.to_bits() == 0xc6 && b.to_bits() == 0x36, || format!("host conversions: {:#x} {:#x}", a.to_bits(), b.to_bits()))?;
    check_all("[a, b, t, buf[0], buf[1]] per block", &out.to_vec().ctx("read")?, &[want, want])
}

/// `stmatrix` (sm_90; the CPU device too): `store_c_stmatrix` puts an `f32` accumulator's
/// elements, rounded to F16 and to BF16, at their places of a 16×8 block of a padded tile and
/// nothing else; `stmatrix_x4` and `.trans` put each lane's words where the PTX ISA says.
fn stmatrix(c: &Ctx) -> TestResult {
    if !c.is_cpu() && (c.gpu.info().cc() < 90 || c.tests.arch() < 90) {
        return Ok(()); // sm_90 only: below, the instruction does not exist (a trap).
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("mma_stmatrix_stores_fragments_and_matrices");
    let cc: Vec<f32> = (0..128).map(|_| r.random_range(-100.0f32..100.0)).collect();
    let dc = c.gpu.upload(&cc).ctx("c")?;
    let kern = k::stmatrix_store::load(&c.tests).ctx("load")?;
    let (neg_h, neg_b) = (f16::NEG_ONE.to_bits(), bf16::NEG_ONE.to_bits());
    for (which, row0, col0) in [(0u32, 0usize, 0usize), (0, 32, 16), (0, 5, 8), (1, 0, 0), (1, 16, 8), (2, 0, 0), (2, 13, 8)] {
        let mut out = c.gpu.upload(&vec![[[0u16; 24]; 2]; 64]).ctx("out")?;
        kern.launch(&s, LaunchConfig::new(1, 64), &dc, [row0 as u32, col0 as u32], which, &mut out).ctx("launch")?;
        let got = out.to_vec().ctx("read")?;
        let mut want = vec![[[neg_h; 24], [neg_b; 24]]; 48];
        if which == 0 {
            for rr in 0..16 {
                for n in 0..8 {
                    want[row0 + rr][0][col0 + n] = f16::from_f32(cc[8 * rr + n]).to_bits();
                    want[row0 + rr][1][col0 + n] = bf16::from_f32(cc[8 * rr + n]).to_bits();
                }
            }
        } else {
            for l in 0..32usize {
                for m in 0..4usize {
                    for j in 0..2usize {
                        let v = (0x1000 * m + 0x40 * l + 2 * j) as u16;
                        let (rb, cb) = (row0 + 8 * (m % 2), col0 + 8 * (m / 2));
                        let (rr, cl) = if which == 2 { (2 * (l % 4) + j, l / 4) } else { (l / 4, 2 * (l % 4) + j) };
                        want[rb + rr][0][cb + cl] = v;
                    }
                }
            }
        }
        check_all(&format!("stmatrix case {which} at ({row0}, {col0}): [F16 tile row, BF16 tile row]"), &got[..48], &want)?;
    }
    Ok(())
}

/// The new shapes' fragments: each operand's elements over the 32 lanes are every element of
/// the operand once (`element_coords`), and `from_fn` / `get` / `set` agree with it.
fn k8_k32_coords(_: &Ctx) -> TestResult {
    fn once<Op: Operand<S, T, L>, S, T, L>(what: &str) -> TestResult {
        let mut seen = vec![0u32; Op::ROWS * Op::COLS];
        for lane in 0..32u32 {
            for i in 0..Fragment::<Op, S, T, L>::LEN {
                let (r, c) = Fragment::<Op, S, T, L>::element_coords(lane, i);
                ensure(r < Op::ROWS && c < Op::COLS, || format!("{what}: lane {lane} element {i} at ({r}, {c})"))?;
                seen[r * Op::COLS + c] += 1;
            }
        }
        ensure(seen.iter().all(|&n| n == 1), || format!("{what}: not every element once: {seen:?}"))
    }
    once::<MatrixA, M16N8K8, tf32, RowMajor>("A m16n8k8 tf32")?;
    once::<MatrixB, M16N8K8, tf32, cohort::mma::ColMajor>("B m16n8k8 tf32")?;
    once::<Accumulator, M16N8K8, f32, RowMajor>("C m16n8k8")?;
    once::<MatrixA, M16N8K32, i8, RowMajor>("A m16n8k32 s8")?;
    once::<MatrixB, M16N8K32, e4m3, cohort::mma::ColMajor>("B m16n8k32 e4m3")?;
    once::<Accumulator, M16N8K32, i32, RowMajor>("C m16n8k32 s32")?;
    // Element i of an 8-bit fragment is byte i % 4 of register i / 4.
    let mut a = MmaA::<M16N8K32, u8>::splat(0);
    for i in 0..16 {
        a.set(i, i as u8 + 1);
    }
    ensure(a.regs() == [0x0403_0201, 0x0807_0605, 0x0c0b_0a09, 0x100f_0e0d], || format!("{:x?}", a.regs()))?;
    ensure((0..16).all(|i| a.get(i) == i as u8 + 1), || "get disagrees with set".into())?;
    let b = MmaB::<M16N8K8, tf32>::from_regs([1f32.to_bits() | 0x1fff, 2f32.to_bits()]);
    ensure(b.get(0) == tf32::ONE && b.get(1).to_f32() == 2.0, || "a TF32 element is its register, truncated".into())
}
