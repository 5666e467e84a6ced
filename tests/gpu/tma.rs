//! `cohort::tma` (the Tensor Memory Accelerator, sm_90): tensor maps as kernel parameters, tile
//! loads completing on an asynchronous barrier (boxes reaching outside the matrix filled with
//! zeros or NaN), stores of the boxes a block owns (into a pitched matrix whose padding stays
//! untouched), a load → transpose → store round trip, a 3-D load, and the misuse: refused maps
//! (`Err`) and tiles that are not the map's box (an `Err` naming the call).

use cohort_runtime::tensor_map::{OobFill, TensorMapSpec};
use cohort_runtime::{DeviceBuffer, Error, Gpu, LaunchConfig, Module, TensorMap, TensorMapMut};
use cohort_test_kernels::tma as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("tma_load_2d_tiles_zero_fill", |c| load_2d(c, OobFill::Zero)),
        gpu_trial("tma_load_2d_tiles_nan_fill", |c| load_2d(c, OobFill::Nan)),
        gpu_trial("tma_store_owned_boxes_pitched", store_owned),
        gpu_trial("tma_transpose_round_trip", transpose),
        gpu_trial("tma_load_3d_tiles", load_3d),
        gpu_trial("tma_refused_maps_are_errs", refused),
        gpu_trial("tma_tile_misuse_is_an_err", misuse),
    ]
}

fn matrix(test: &str, n: usize) -> Vec<f32> {
    let mut r = rng(test);
    (0..n).map(|_| r.random_range(1.0f32..1000.0)).collect()
}

const SENTINEL: f32 = -1234.5;

/// 64 × 64 boxes over a 150 × 200 matrix (neither a multiple of 64), the grid covering it, at
/// offsets that put boxes partly and wholly outside it (negative coordinates included).
fn load_2d(c: &Ctx, fill: OobFill) -> TestResult {
    let (rows, cols) = (150usize, 200usize);
    let name = if fill == OobFill::Zero { "tma_load_2d_tiles_zero_fill" } else { "tma_load_2d_tiles_nan_fill" };
    let m = matrix(name, rows * cols);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dm = c.gpu.upload(&m).ctx("upload")?;
    let map = TensorMap::<f32, 2>::new(&dm, TensorMapSpec::new([cols as u64, rows as u64], [64, 64]).oob_fill(fill))
        .ctx("map")?;
    let (gx, gy) = (cols.div_ceil(64), rows.div_ceil(64));
    let (w, h) = (64 * gx, 64 * gy);
    let kern = k::tma_load_tiles::load(&c.tests).ctx("load")?;
    // Innermost offsets at multiples of 16 bytes (4 `f32`s): another traps on the GPU (the
    // misuse test checks that it is refused).
    for (dx, dy) in [(0i32, 0i32), (-8, 5), (100, -64), (-300, 0), (4, -3)] {
        let mut out = c.gpu.upload(&vec![SENTINEL; w * h]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new((gx as u32, gy as u32), 128), &map, dx, dy, &mut out).ctx("launch")?;
        let want: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as i64 + i64::from(dx), (i / w) as i64 + i64::from(dy));
                if (0..cols as i64).contains(&x) && (0..rows as i64).contains(&y) {
                    m[y as usize * cols + x as usize]
                } else if fill == OobFill::Zero {
                    0.0
                } else {
                    f32::NAN
                }
            })
            .collect();
        check_all_by(&format!("boxes at offset ({dx}, {dy})"), &out.to_vec().ctx("read")?, &want, |g, w| {
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
        })?;
    }
    Ok(())
}

/// A 130 × 100 matrix in rows of 112 (a pitch): 6 boxes of 64 × 64, stored by 4 blocks (two
/// own two boxes) and by 9 (three own none). Every element of the matrix is written once; the
/// padding columns are not.
fn store_owned(c: &Ctx) -> TestResult {
    let (rows, cols, pitch) = (130usize, 100usize, 112usize);
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::tma_store_owned::load(&c.tests).ctx("load")?;
    for (blocks, seed) in [(4u32, 0.5f32), (9, 7.25)] {
        let mut dm = c.gpu.upload(&vec![SENTINEL; rows * pitch]).ctx("upload")?;
        {
            let spec = TensorMapSpec::new([cols as u64, rows as u64], [64, 64]).strides(&[(pitch * 4) as u64]);
            let mut map = TensorMapMut::<f32, 2>::new(&mut dm, spec).ctx("map")?;
            kern.launch(&s, LaunchConfig::new(blocks, 128), &mut map, seed).ctx("launch")?;
        }
        let want: Vec<f32> = (0..rows * pitch)
            .map(|i| {
                let (y, x) = (i / pitch, i % pitch);
                if x < cols { seed + (y * 1024 + x) as f32 } else { SENTINEL }
            })
            .collect();
        check_all(&format!("boxes stored by {blocks} blocks"), &dm.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// A 200 × 132 matrix transposed (and scaled) box by box by 5 blocks.
fn transpose(c: &Ctx) -> TestResult {
    let (rows, cols, factor) = (200usize, 132usize, 1.5f32);
    let m = matrix("tma_transpose_round_trip", rows * cols);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dm = c.gpu.upload(&m).ctx("upload")?;
    let mut dt = c.gpu.upload(&vec![SENTINEL; rows * cols]).ctx("alloc")?;
    {
        let src = TensorMap::<f32, 2>::new(&dm, TensorMapSpec::new([cols as u64, rows as u64], [64, 64])).ctx("src")?;
        let mut dst =
            TensorMapMut::<f32, 2>::new(&mut dt, TensorMapSpec::new([rows as u64, cols as u64], [64, 64])).ctx("dst")?;
        k::tma_transpose::load(&c.tests)
            .ctx("load")?
            .launch(&s, LaunchConfig::new(5, 256), &src, &mut dst, factor)
            .ctx("launch")?;
    }
    let want: Vec<f32> = (0..rows * cols).map(|i| m[(i % rows) * cols + i / rows] * factor).collect();
    check_all("transposed", &dt.to_vec().ctx("read")?, &want)
}

/// 16 × 4 × 4 boxes of a 7 × 9 × 40 `u32` array (no dimension a multiple of its box).
fn load_3d(c: &Ctx) -> TestResult {
    let (d0, d1, d2) = (40usize, 9usize, 7usize);
    let mut r = rng("tma_load_3d_tiles");
    let a: Vec<u32> = (0..d0 * d1 * d2).map(|_| r.random::<u32>() | 1).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let da = c.gpu.upload(&a).ctx("upload")?;
    let map = TensorMap::<u32, 3>::new(&da, TensorMapSpec::new([d0 as u64, d1 as u64, d2 as u64], [16, 4, 4]))
        .ctx("map")?;
    let (gx, gy, gz) = (d0.div_ceil(16), d1.div_ceil(4), d2.div_ceil(4));
    let (w, h, dpt) = (16 * gx, 4 * gy, 4 * gz);
    let mut out = c.gpu.upload(&vec![0xdead_beefu32; w * h * dpt]).ctx("alloc")?;
    k::tma_load_3d::load(&c.tests)
        .ctx("load")?
        .launch(&s, LaunchConfig::new((gx as u32, gy as u32, gz as u32), 256), &map, &mut out)
        .ctx("launch")?;
    let want: Vec<u32> = (0..w * h * dpt)
        .map(|i| {
            let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
            if x < d0 && y < d1 && z < d2 { a[(z * d1 + y) * d0 + x] } else { 0 }
        })
        .collect();
    check_all("3-D boxes", &out.to_vec().ctx("read")?, &want)
}

/// Maps the host refuses, each an `Err` naming the field: one that overruns its buffer, a
/// store map whose rows overlap (two blocks' boxes would share elements), a swizzled store map,
/// a swizzled box whose rows exceed the span, element strides, a box whose rows are not 16-byte
/// multiples.
fn refused(c: &Ctx) -> TestResult {
    let mut b = c.gpu.upload(&vec![1.0f32; 64 * 64]).ctx("upload")?;
    let field = |r: cohort_runtime::Result<()>, want: &str| -> TestResult {
        let e = r.err().ok_or_else(|| format!("a map breaking `{want}` was accepted"))?;
        println!("ERROR AS RETURNED: {e}");
        ensure(matches!(e, Error::Argument(_)) && e.to_string().contains(want), || format!("expected `{want}`: {e}"))
    };
    field(TensorMap::<f32, 2>::new(&b, TensorMapSpec::new([64, 65], [64, 64])).map(drop), "globalDim")?;
    field(
        TensorMapMut::<f32, 2>::new(&mut b, TensorMapSpec::new([64, 32], [16, 16]).strides(&[128])).map(drop),
        "must not overlap",
    )?;
    // The same overlapping strides are fine for loads (nothing is written).
    TensorMap::<f32, 2>::new(&b, TensorMapSpec::new([64, 32], [16, 16]).strides(&[128])).ctx("overlapping loads")?;
    // Swizzled load maps are taken (they load into `wgmma::Tile`s of their swizzle), but not
    // swizzled store maps, nor a box whose rows exceed the swizzle's span.
    TensorMap::<f32, 2>::new(
        &b,
        TensorMapSpec::new([64, 64], [32, 32]).swizzle(cohort_runtime::tensor_map::Swizzle::B128),
    )
    .ctx("a swizzled load map")?;
    field(
        TensorMapMut::<f32, 2>::new(
            &mut b,
            TensorMapSpec::new([64, 64], [32, 32]).swizzle(cohort_runtime::tensor_map::Swizzle::B128),
        )
        .map(drop),
        "swizzle",
    )?;
    field(
        TensorMap::<f32, 2>::new(
            &b,
            TensorMapSpec::new([64, 64], [64, 32]).swizzle(cohort_runtime::tensor_map::Swizzle::B128),
        )
        .map(drop),
        "swizzle",
    )?;
    field(
        TensorMap::<f32, 2>::new(&b, TensorMapSpec::new([64, 64], [32, 32]).element_strides([1, 2])).map(drop),
        "elementStrides[1]",
    )?;
    field(TensorMap::<f32, 2>::new(&b, TensorMapSpec::new([64, 64], [3, 32])).map(drop), "boxDim[0]")?;
    Ok(())
}

/// A tile smaller than the box (1), one not 128-byte aligned (2), coordinates that differ in
/// one thread (3), an innermost coordinate at 12 bytes (4): an `Err` naming the kernel,
/// the rule and the call in `tma.rs`; the same kernel with a right tile runs. On a GPU the
/// report traps, which ends the CUDA context: each case runs in a child process.
fn misuse(c: &Ctx) -> TestResult {
    misuse_case(&c.gpu, &c.tests, 0)?;
    for which in 1..=4u32 {
        if c.is_cpu() {
            misuse_case(&c.gpu, &c.tests, which)?;
            misuse_case(&c.gpu, &c.tests, 0).ctx("the CPU device right after the misuse")?;
        } else {
            crate::launch::run_child(&format!("tma-misuse-{which}"))?;
        }
    }
    Ok(())
}

fn misuse_case(gpu: &Gpu, tests: &Module, which: u32) -> TestResult {
    let s = gpu.new_stream().ctx("stream")?;
    let m: Vec<f32> = (0..64 * 64).map(|i| i as f32 + 0.5).collect();
    let dm: DeviceBuffer<f32> = gpu.upload(&m).ctx("upload")?;
    let map = TensorMap::<f32, 2>::new(&dm, TensorMapSpec::new([64, 64], [64, 64])).ctx("map")?;
    let mut out = gpu.upload(&[0f32; 128]).ctx("alloc")?;
    let kern = k::tma_misuse::load(tests).ctx("load")?;
    let r = kern.launch(&s, LaunchConfig::new(1, 128), which, &map, &mut out).and_then(|()| s.synchronize());
    if which == 0 {
        r.ctx("the kernel without misuse")?;
        return check_all("without misuse", &out.to_vec().ctx("read")?, &m[..128]);
    }
    let e = r.err().ok_or_else(|| format!("misuse {which} did not fail"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED (misuse {which}): {msg}");
    ensure(matches!(e, Error::CpuKernel { .. } | Error::KernelFailed { .. }), || {
        format!("misuse {which}: expected CpuKernel or KernelFailed, got {e:?}")
    })?;
    let what = match which {
        1 => "is not the tensor map's box",
        2 => "is not 128-byte aligned",
        3 => "thread 37 of the block passed other arguments",
        _ => "the innermost coordinate (3) is not at a multiple of 16 bytes",
    };
    for needle in ["tma_misuse", what, "tma.rs:"] {
        ensure(msg.contains(needle), || format!("misuse {which}: the error does not mention `{needle}`: {msg}"))?;
    }
    Ok(())
}

/// A misuse case in a context of its own (a GPU trap ends the context); for the child
/// scenarios of `launch.rs`.
pub fn misuse_child(which: &str) -> Result<(), String> {
    let n: u32 = which.trim_start_matches("tma-misuse-").parse().map_err(|e| format!("{which}: {e}"))?;
    let gpu = Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    misuse_case(&gpu, &tests, n)
}
