//! `cohort::wgmma` (issue 28: Hopper's warpgroup MMA, sm_90a): MMAs of N = 64, 128, 256 on
//! tiles of every swizzle (none, 32-, 64-, 128-byte) filled by threads, K chained over four MMAs,
//! zero-initialised through `scale-d` (onto NaN accumulators) or accumulating; TMA loads into
//! 128-byte-swizzled tiles feeding the MMAs (the layouts of the copy engine and of the
//! descriptors agree); the warp-specialized TMA GEMM (`cohort_kernels::gemm_hopper`) against a
//! reference; and the misuse that becomes an `Err` (tiles not 1024-byte aligned, descriptors
//! outside their tile, blocks that are not whole warpgroups, a warpgroup split across calls, a
//! map whose swizzle is not the tile's, shapes the GEMM refuses; on a GPU each in a child
//! process, as a failed check ends the CUDA context).
//!
//! Every element is checked against a CPU reference, on data that are small integers times 0.25
//! (every sum exact in `f32`, so equal bit for bit on any adder). On a GPU other than compute
//! capability 9.0 the kernels must be refused (`Error::NeedsArchSpecific`), which the tests check
//! instead.

use cohort::mma::{Half, bf16, f16};
use cohort::raw::acc_coords;
use cohort_kernels::gemm_hopper;
use cohort_runtime::tensor_map::{Swizzle, TensorMapSpec};
use cohort_runtime::{DeviceBuffer, Error, LaunchConfig, TensorMap};
use cohort_test_kernels::wgmma as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("wgmma_every_shape_and_swizzle_every_element", every_shape),
        gpu_trial("wgmma_tma_swizzled_tiles_feed_the_mma", tma_swizzled),
        gpu_trial("wgmma_gemm_hopper_every_element", gemm),
        gpu_trial("wgmma_gemm_hopper_refuses_shapes", gemm_shapes),
        gpu_trial("wgmma_misuse_is_an_error", misuse),
        gpu_trial("wgmma_register_split_that_cannot_fit_is_refused", split_too_few_registers),
    ]
}

/// A small integer times 0.25 in [-4, 4]: exact in BF16 and F16, products multiples of 1/16,
/// sums of a few hundred exact in `f32`.
fn quarter(r: &mut StdRng) -> f32 {
    r.random_range(-16i32..=16) as f32 * 0.25
}

/// Whether this device runs `wgmma` (the CPU device, a 9.0 GPU); otherwise checks that `res`,
/// the load of a wgmma kernel, is refused as `NeedsArchSpecific`.
fn runs_wgmma<T>(c: &Ctx, res: cohort_runtime::Result<T>) -> Result<Option<T>, String> {
    let cc = c.gpu.info().cc();
    match res {
        Ok(k) if c.is_cpu() || cc == 90 => Ok(Some(k)),
        Ok(_) => Err(format!("a wgmma kernel loaded on a device of compute capability {cc}")),
        Err(Error::NeedsArchSpecific { .. }) if !c.is_cpu() && cc != 90 => Ok(None),
        Err(e) => Err(format!("load: {e}")),
    }
}

/// `D[i][j] = c0 + Σ_k A[i][k] · B[j][k]` (`c0` ignored when not `accumulate`), A 64×K, B N×K.
fn reference(a: &[f32], b: &[f32], n: usize, k: usize, c0: f32, accumulate: bool) -> Vec<f32> {
    let mut d = vec![0f32; 64 * n];
    for i in 0..64 {
        for j in 0..n {
            let mut s = if accumulate { f64::from(c0) } else { 0.0 };
            for kk in 0..k {
                s += f64::from(a[i * k + kk]) * f64::from(b[j * k + kk]);
            }
            d[i * n + j] = s as f32;
        }
    }
    d
}

/// Places thread `t`'s accumulator registers (`out[t]`, one warpgroup) by their coordinates.
fn place<const R: usize>(out: &[[f32; R]], n: usize) -> Vec<f32> {
    let mut d = vec![f32::NAN; 64 * n];
    for (t, regs) in out.iter().enumerate() {
        for (i, &v) in regs.iter().enumerate() {
            let (r, col) = acc_coords((t / 32) as u32, (t % 32) as u32, i as u32);
            d[r as usize * n + col as usize] = v;
        }
    }
    d
}

macro_rules! shape_case {
    ($c:expr, $s:expr, $kern:ident, $t:ty, $n:literal, $k:literal, $what:literal) => {{
        let Some(kern) = runs_wgmma($c, k::$kern::load(&$c.tests))? else { return Ok(()) };
        let mut r = rng($what);
        for accumulate in [0u32, 1] {
            let a: Vec<$t> = (0..64 * $k).map(|_| <$t>::from_f32(quarter(&mut r))).collect();
            let b: Vec<$t> = (0..$n * $k).map(|_| <$t>::from_f32(quarter(&mut r))).collect();
            let c0 = if accumulate == 0 { f32::NAN } else { quarter(&mut r) };
            let (da, db) = ($c.gpu.upload(&a).ctx("a")?, $c.gpu.upload(&b).ctx("b")?);
            let mut out = $c.gpu.upload(&vec![[f32::NAN; $n / 2]; 128]).ctx("out")?;
            kern.launch($s, LaunchConfig::new(1, 128), &da, &db, c0, accumulate, &mut out).ctx("launch")?;
            let got = place(&out.to_vec().ctx("read")?, $n);
            let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
            let want = reference(&af, &bf, $n, $k, c0, accumulate != 0);
            check_all(&format!("{} (accumulate {accumulate})", $what), &got, &want)?;
        }
    }};
}

fn every_shape(c: &Ctx) -> TestResult {
    let s = &c.gpu.new_stream().ctx("stream")?;
    shape_case!(c, s, wgmma_n64_none, bf16, 64, 64, "m64n64k16 bf16, no swizzle, K 64");
    shape_case!(c, s, wgmma_n128_sw128, bf16, 128, 64, "m64n128k16 bf16, 128-byte swizzle, K 64");
    shape_case!(c, s, wgmma_n256_sw128, bf16, 256, 64, "m64n256k16 bf16, 128-byte swizzle, K 64");
    shape_case!(c, s, wgmma_n256_none, bf16, 256, 32, "m64n256k16 bf16, no swizzle, K 32");
    shape_case!(c, s, wgmma_n64_sw64, bf16, 64, 64, "m64n64k16 bf16, 64-byte swizzle, K 64");
    shape_case!(c, s, wgmma_n128_sw32, bf16, 128, 64, "m64n128k16 bf16, 32-byte swizzle, K 64");
    shape_case!(c, s, wgmma_f16_n64_sw128, f16, 64, 64, "m64n64k16 f16, 128-byte swizzle, K 64");
    Ok(())
}

/// A 128-byte-swizzled map of a `rows × cols` BF16 matrix in boxes of `box_rows × 64`.
fn map<'a>(
    buf: &'a DeviceBuffer<bf16>,
    rows: usize,
    cols: usize,
    box_rows: u32,
    swizzle: Swizzle,
) -> Result<TensorMap<'a, bf16, 2>, String> {
    TensorMap::new(buf, TensorMapSpec::new([cols as u64, rows as u64], [64, box_rows]).swizzle(swizzle)).ctx("map")
}

/// A 128 × 128 A and a 256 × 128 B; the boxes at (K 64, row 64) of A and (K 64, row 128) of B
/// land by TMA in 128-byte-swizzled tiles; four chained MMAs read them (m64n128k16).
fn tma_swizzled(c: &Ctx) -> TestResult {
    let Some(kern) = runs_wgmma(c, k::wgmma_tma_sw128::load(&c.tests))? else { return Ok(()) };
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("wgmma_tma_swizzled_tiles_feed_the_mma");
    let (ar, br, cols) = (128usize, 256usize, 128usize);
    let a: Vec<bf16> = (0..ar * cols).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    let b: Vec<bf16> = (0..br * cols).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?);
    let (ma, mb) = (map(&da, ar, cols, 64, Swizzle::B128)?, map(&db, br, cols, 128, Swizzle::B128)?);
    let mut out = c.gpu.upload(&vec![[f32::NAN; 64]; 128]).ctx("out")?;
    let (ka, ra, kb, rb) = (64usize, 64usize, 64usize, 128usize);
    kern.launch(&s, LaunchConfig::new(1, 128), &ma, &mb, ka as i32, ra as i32, kb as i32, rb as i32, &mut out)
        .ctx("launch")?;
    let got = place(&out.to_vec().ctx("read")?, 128);
    let af: Vec<f32> = (0..64 * 64).map(|e| a[(ra + e / 64) * cols + ka + e % 64].to_f32()).collect();
    let bf: Vec<f32> = (0..128 * 64).map(|e| b[(rb + e / 64) * cols + kb + e % 64].to_f32()).collect();
    check_all("TMA (128-byte swizzle) → wgmma m64n128k16", &got, &reference(&af, &bf, 128, 64, 0.0, false))
}

/// Each misuse ends the launch with an `Err` naming it and its call in the test kernels'
/// `wgmma.rs`: 0, a tile not 1024-byte aligned; 1, a descriptor outside its tile; 2, a block of
/// 96 threads; 3, a warp of the warpgroup at another wgmma call (checked mode, the test kernels'
/// build, and the CPU device); 4, a warp that never comes (the CPU device only: on a GPU the
/// check itself would wait for it); 5, an unswizzled map loaded into a 128-byte-swizzled tile.
/// On a GPU each report traps, ending the CUDA context: each case runs in a child process.
fn misuse(c: &Ctx) -> TestResult {
    if runs_wgmma(c, k::wgmma_misuse::load(&c.tests))?.is_none() {
        return Ok(());
    }
    for which in 0..=5u32 {
        if c.is_cpu() {
            misuse_case(&c.gpu, &c.tests, which)?;
        } else if which != 4 {
            crate::launch::run_child(&format!("wgmma-misuse-{which}"))?;
        }
    }
    Ok(())
}

fn misuse_case(gpu: &cohort_runtime::Gpu, tests: &cohort_runtime::Module, which: u32) -> TestResult {
    let s = gpu.new_stream().ctx("stream")?;
    let res = if which == 5 {
        let kern = k::wgmma_tma_sw128::load(tests).ctx("load")?;
        let a = gpu.upload(&vec![bf16::from_f32(1.0); 128 * 128]).ctx("a")?;
        let b = gpu.upload(&vec![bf16::from_f32(1.0); 256 * 128]).ctx("b")?;
        let (ma, mb) = (map(&a, 128, 128, 64, Swizzle::None)?, map(&b, 256, 128, 128, Swizzle::B128)?);
        let mut out = gpu.upload(&vec![[0f32; 64]; 128]).ctx("out")?;
        kern.launch(&s, LaunchConfig::new(1, 128), &ma, &mb, 0, 0, 0, 0, &mut out).and_then(|()| s.synchronize())
    } else {
        let kern = k::wgmma_misuse::load(tests).ctx("load")?;
        let mut out = gpu.upload(&vec![0f32; 128]).ctx("out")?;
        let threads = if which == 2 { 96 } else { 128 };
        kern.launch(&s, LaunchConfig::new(1, threads), which, &mut out).and_then(|()| s.synchronize())
    };
    let e = res.err().ok_or_else(|| format!("misuse {which}: the kernel completed"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED (wgmma misuse {which}): {msg}");
    let what: &[&str] = match which {
        0 => &["not 1024-byte aligned", "wgmma.rs:"],
        1 => &["outside the tile", "wgmma.rs:"],
        2 => &["multiple of 128", "wgmma.rs:"],
        3 => &["warpgroup collective", "wgmma.rs:"],
        4 => &["deadlock"],
        _ => &["swizzle", "wgmma.rs:"],
    };
    for needle in what {
        ensure(msg.contains(needle), || format!("misuse {which}: the error does not mention `{needle}`: {msg}"))?;
    }
    Ok(())
}

/// A pipeline that splits its registers (`SplitRegisters<40, 232>`) in a kernel compiled for two
/// blocks per SM (`launch_bounds(256, 2)`, at most 128 registers per thread): on a GPU its
/// consumer warpgroup would wait forever in `setmaxnreg.inc` (the block's registers cannot hold
/// the split), so the launch is an `Err` naming the kernel and what the split needs, and
/// nothing runs (the output keeps its values); the CPU device, which has no register file, runs
/// it. The kernel's registers are read back from the driver: the test fails if ptxas gave it
/// enough for the split (then the test would prove nothing).
fn split_too_few_registers(c: &Ctx) -> TestResult {
    let Some(kern) = runs_wgmma(c, k::wgmma_split_too_few_registers::load(&c.tests))? else {
        return Ok(());
    };
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.upload(&vec![-1f32; 256]).ctx("out")?;
    let cfg = LaunchConfig::new(1, 256).with_shared_mem(16 * 1024 + 1024);
    let res = kern.launch(&s, cfg, &mut out).and_then(|()| s.synchronize());
    if c.is_cpu() {
        res.ctx("launch on the CPU device")?;
        return check_all("the CPU device runs the split", &out.to_vec().ctx("read")?, &vec![1f32; 256]);
    }
    let regs = kern.function().attributes().registers;
    ensure(regs * 256 < 128 * 40 + 128 * 232, || {
        format!("ptxas gave the kernel {regs} registers per thread: enough for the split, the test proves nothing")
    })?;
    let e = res.err().ok_or("the launch of a register split that cannot fit was not refused")?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED (register split): {msg}");
    ensure(matches!(e, Error::InvalidLaunch { .. }), || format!("not an InvalidLaunch: {msg}"))?;
    for needle in ["wgmma_split_too_few_registers", "setmaxnreg", "232", "launch_bounds(256, 1)"] {
        ensure(msg.contains(needle), || format!("the error does not mention `{needle}`: {msg}"))?;
    }
    check_all("nothing ran", &out.to_vec().ctx("read")?, &vec![-1f32; 256])
}

/// A misuse case in a context of its own (a GPU trap ends the context); for the child
/// scenarios of `launch.rs`.
pub fn misuse_child(which: &str) -> Result<(), String> {
    let n: u32 = which.trim_start_matches("wgmma-misuse-").parse().map_err(|e| format!("{which}: {e}"))?;
    let gpu = cohort_runtime::Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    misuse_case(&gpu, &tests, n)
}

/// `C = A · Bᵀ` by the Hopper GEMM against a reference, every element (quarter-integer data:
/// exact). The CPU device runs a 256 × 512 × 384 product (six stages through a ring of four).
fn gemm(c: &Ctx) -> TestResult {
    let (m, n, kk) = c.pick((512, 1024, 1024), (256, 512, 384));
    let Some(kern) = runs_wgmma(c, <bf16 as gemm_hopper::host::Gemm>::load(&c.module))? else { return Ok(()) };
    gemm_with::<bf16>(c, &kern, m, n, kk)?;
    let kern16 = <f16 as gemm_hopper::host::Gemm>::load(&c.module).ctx("load f16")?;
    gemm_with::<f16>(c, &kern16, m, n, kk)
}

fn gemm_with<T: gemm_hopper::host::Gemm + Half>(
    c: &Ctx,
    kern: &T::Kernel,
    m: usize,
    n: usize,
    kk: usize,
) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("wgmma_gemm_hopper_every_element");
    let a: Vec<T> = (0..m * kk).map(|_| T::from_f32(quarter(&mut r))).collect();
    let b: Vec<T> = (0..n * kk).map(|_| T::from_f32(quarter(&mut r))).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?);
    let mut dc = c.gpu.upload(&vec![f32::NAN; m * n]).ctx("c")?;
    gemm_hopper::host::launch_loaded::<T>(kern, &s, (m, n, kk), &da, &db, &mut dc).ctx("launch")?;
    s.synchronize().ctx("sync")?;
    let got = dc.to_vec().ctx("read")?;
    let (af, bf): (Vec<f32>, Vec<f32>) = (a.iter().map(|x| x.to_f32()).collect(), b.iter().map(|x| x.to_f32()).collect());
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f64;
            for x in 0..kk {
                acc += f64::from(af[i * kk + x]) * f64::from(bf[j * kk + x]);
            }
            want[i * n + j] = acc as f32;
        }
    }
    check_all(&format!("gemm_hopper {m} × {n} × {kk} ({})", std::any::type_name::<T>()), &got, &want)
}

/// Shapes the GEMM does not take are `Err`s before any launch.
fn gemm_shapes(c: &Ctx) -> TestResult {
    for (m, n, kk) in [(0, 256, 64), (100, 256, 64), (128, 200, 64), (128, 256, 32), (128, 256, 0)] {
        ensure(gemm_hopper::host::check_shape(m, n, kk).is_some(), || format!("{m} × {n} × {kk} accepted"))?;
    }
    ensure(gemm_hopper::host::check_shape(128, 256, 64).is_none(), || "128 × 256 × 64 refused".into())?;
    let Some(kern) = runs_wgmma(c, <bf16 as gemm_hopper::host::Gemm>::load(&c.module))? else { return Ok(()) };
    let s = c.gpu.new_stream().ctx("stream")?;
    let a = c.gpu.upload(&vec![bf16::from_f32(1.0); 128 * 64]).ctx("a")?;
    let b = c.gpu.upload(&vec![bf16::from_f32(1.0); 256 * 64]).ctx("b")?;
    let mut cc = c.gpu.upload(&vec![0f32; 128 * 256]).ctx("c")?;
    // A buffer of the wrong size, and a shape not of whole tiles.
    for shape in [(128, 256, 128), (64, 256, 64)] {
        let res = gemm_hopper::host::launch_loaded::<bf16>(&kern, &s, shape, &a, &b, &mut cc);
        ensure(matches!(res, Err(Error::Argument(_))), || format!("{shape:?}: {res:?}"))?;
    }
    Ok(())
}
