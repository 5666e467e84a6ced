//! The tour kernels, one per parameter kind, on random data of awkward sizes.

use cohort_kernels::tour::{self, Affine};
use cohort_runtime::LaunchConfig;
use cohort_tests::{Context, Ctx, TestResult, check_all, check_close, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("tour_vector_add", vector_add),
        gpu_trial("tour_vector_add_empty", vector_add_empty),
        gpu_trial("tour_saxpy_f32", saxpy_f32),
        gpu_trial("tour_saxpy_f64", saxpy_f64),
        gpu_trial("tour_sum_u32_grid_stride_atomic", sum_u32),
        gpu_trial("tour_affine_struct_param", affine),
        gpu_trial("tour_scale_in_place_raw_pointer", scale_in_place),
        gpu_trial("tour_neighbour_sums_grid_sync", neighbour_sums),
    ]
}

fn vector_add(c: &Ctx) -> TestResult {
    let mut r = rng("tour_vector_add");
    let n = 1_000_003;
    let a: Vec<f32> = (0..n).map(|_| r.random_range(-100.0..100.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.random_range(-100.0..100.0)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (da, db) = (c.gpu.upload(&a).ctx("upload")?, c.gpu.upload(&b).ctx("upload")?);
    let mut out = c.gpu.upload(&vec![f32::NAN; n]).ctx("upload")?;
    let k = tour::vector_add::load(&c.module).ctx("load")?;
    k.launch(&s, LaunchConfig::for_elements(n, 128), &da, &db, &mut out).ctx("launch")?;
    let want: Vec<u32> = a.iter().zip(&b).map(|(x, y)| (x + y).to_bits()).collect();
    let got: Vec<u32> = out.to_vec().ctx("read")?.iter().map(|v| v.to_bits()).collect();
    check_all("a + b (bits)", &got, &want)?;
    // A shorter output than the inputs: threads past its end write nothing.
    let mut short = c.gpu.upload(&vec![f32::NAN; 1000]).ctx("upload")?;
    k.launch(&s, LaunchConfig::for_elements(n, 256), &da, &db, &mut short).ctx("launch")?;
    check_all(
        "short output",
        &short.to_vec().ctx("read")?.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        &want[..1000],
    )
}

fn vector_add_empty(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let e = c.gpu.upload::<f32>(&[]).ctx("upload")?;
    let mut out = c.gpu.upload::<f32>(&[]).ctx("upload")?;
    let k = tour::vector_add::load(&c.module).ctx("load")?;
    k.launch(&s, (4u32, 64u32), &e, &e, &mut out).ctx("launch")?;
    s.synchronize().ctx("sync")?;
    ensure(out.to_vec().ctx("read")?.is_empty(), || "empty output grew".into())
}

fn saxpy_f32(c: &Ctx) -> TestResult {
    let mut r = rng("tour_saxpy_f32");
    let n = 777_777;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let a: f32 = r.random_range(-3.0..3.0);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut dy = c.gpu.upload(&y).ctx("upload")?;
    let k = tour::saxpy::<f32>::load(&c.module).ctx("load")?;
    k.launch(&s, LaunchConfig::for_elements(n, 256), a, &dx, &mut dy).ctx("launch")?;
    let got: Vec<f64> = dy.to_vec().ctx("read")?.iter().map(|&v| v as f64).collect();
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a as f64 * x as f64 + y as f64).collect();
    check_close("a*x + y", &got, &want, 1e-6)
}

fn saxpy_f64(c: &Ctx) -> TestResult {
    let mut r = rng("tour_saxpy_f64");
    let n = 500_001;
    let x: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let y: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let a: f64 = r.random_range(-3.0..3.0);
    let s = c.gpu.new_stream().ctx("stream")?;
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut dy = c.gpu.upload(&y).ctx("upload")?;
    let k = tour::saxpy::<f64>::load(&c.module).ctx("load")?;
    k.launch(&s, LaunchConfig::for_elements(n, 512), a, &dx, &mut dy).ctx("launch")?;
    let want: Vec<f64> = x.iter().zip(&y).map(|(&x, &y)| a.mul_add(x, y)).collect();
    check_close("a*x + y", &dy.to_vec().ctx("read")?, &want, 1e-15)
}

fn sum_u32(c: &Ctx) -> TestResult {
    let mut r = rng("tour_sum_u32");
    let s = c.gpu.new_stream().ctx("stream")?;
    let k = tour::sum_u32::load(&c.module).ctx("load")?;
    for n in [1usize, 31, 4097, 3_000_017] {
        let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let want: u64 = data.iter().map(|&v| v as u64).sum();
        let dd = c.gpu.upload(&data).ctx("upload")?;
        let mut total = c.gpu.upload(&[0u64]).ctx("upload")?;
        let cfg = k.function().persistent_config(256, 0).ctx("config")?;
        k.launch(&s, cfg, &dd, &mut total).ctx("launch")?;
        let got = total.to_vec().ctx("read")?[0];
        ensure(got == want, || format!("n = {n}: sum {got}, expected {want}"))?;
    }
    Ok(())
}

fn affine(c: &Ctx) -> TestResult {
    let mut r = rng("tour_affine");
    let n = 100_000;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-2.0..2.0)).collect();
    let p = Affine { scale: r.random_range(0.5..2.0), shift: r.random_range(-1.0..1.0), limit: 0.75 };
    let s = c.gpu.new_stream().ctx("stream")?;
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut dy = c.gpu.upload(&vec![f32::NAN; n]).ctx("upload")?;
    let k = tour::affine::load(&c.module).ctx("load")?;
    k.launch(&s, LaunchConfig::for_elements(n, 256), p, &dx, &mut dy).ctx("launch")?;
    let want: Vec<f64> = x
        .iter()
        .map(|&x| {
            let v = p.scale * x + p.shift;
            (if v as f64 > p.limit { p.limit as f32 } else { v }) as f64
        })
        .collect();
    let got: Vec<f64> = dy.to_vec().ctx("read")?.iter().map(|&v| v as f64).collect();
    check_close("min(scale*x + shift, limit)", &got, &want, 1e-6)
}

fn scale_in_place(c: &Ctx) -> TestResult {
    let mut r = rng("tour_scale_in_place");
    let n = 65_537;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-2.0..2.0)).collect();
    let f: f32 = r.random_range(1.5..2.5);
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut dx = c.gpu.upload(&x).ctx("upload")?;
    let k = tour::scale_in_place::load(&c.module).ctx("load")?;
    let ptr = dx.as_device_ptr_mut();
    // SAFETY: `ptr` is `n` f32 of `dx`, used by nothing else during the launch.
    unsafe { k.launch(&s, LaunchConfig::for_elements(n, 256), ptr, n as u32, f) }.ctx("launch")?;
    let want: Vec<u32> = x.iter().map(|v| (v * f).to_bits()).collect();
    check_all("x * f (bits)", &dx.to_vec().ctx("read")?.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), &want)
}

fn neighbour_sums(c: &Ctx) -> TestResult {
    let mut r = rng("tour_neighbour_sums");
    let s = c.gpu.new_stream().ctx("stream")?;
    let k = tour::neighbour_sums::load(&c.module).ctx("load")?;
    let full = k.function().persistent_config(128, 0).ctx("config")?;
    for blocks in [1u32, 2, 7, full.grid.x] {
        let n = 200_003;
        let data: Vec<u32> = (0..n).map(|_| r.random_range(0..1 << 24)).collect();
        let dd = c.gpu.upload(&data).ctx("upload")?;
        let nb = blocks as usize;
        let mut published = c.gpu.zeroed::<u64>(nb).ctx("alloc")?;
        let mut out = c.gpu.upload(&vec![u64::MAX; nb]).ctx("alloc")?;
        k.launch_cooperative(&s, LaunchConfig::new(blocks, 128), &dd, &mut published, &mut out).ctx("launch")?;
        let mut sums = vec![0u64; nb];
        for (i, &v) in data.iter().enumerate() {
            sums[i % nb] += v as u64;
        }
        let want: Vec<u64> = (0..nb).map(|b| sums[(b + 1) % nb]).collect();
        check_all(&format!("{blocks} blocks: sum of the next block"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}
