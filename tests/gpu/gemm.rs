//! `cohort_kernels::gemm` (issue 28): the Ampere-style tensor-core GEMM written with the safe API
//! (`mma.sync`, `ldmatrix`, a 4-stage `cp.async` pipeline of padded shared tiles, accumulators
//! stored through a `DisjointMatrix<_, Within<MmaWarps<..>>>`), BF16 and F16, every element of C
//! checked against a CPU reference: quarter-integer data (every sum exact in `f32`, so equal bit
//! for bit on any adder) and random data in [-1, 1] with a stated tolerance; and the shapes it
//! does not support refused with an `Err`, never a fault.
use cohort::mma::{bf16, f16};
use cohort_kernels::gemm::{self as g, host};
use cohort_runtime::{Error, LaunchConfig};
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("gemm_tn_bf16_every_element", |c| every_element::<bf16>(c, "gemm_tn_bf16_every_element")),
        gpu_trial("gemm_tn_f16_every_element", |c| every_element::<f16>(c, "gemm_tn_f16_every_element")),
        gpu_trial("gemm_unsupported_shape_is_an_error", unsupported),
        gpu_trial("gemm_misaligned_operands", misaligned),
    ]
}

/// A small integer times 0.25 in [-4, 4] (exact in BF16 and F16; products are multiples of
/// 1/16 of at most 16 in magnitude, so sums over K <= 4096 are exact in `f32`).
fn quarter(r: &mut StdRng) -> f32 {
    r.random_range(-16i32..=16) as f32 * 0.25
}

/// `C = A · Bᵀ` in `f64` (A m×k, B n×k, both row-major), and `Σ |a| |b|` per element.
fn reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0f64; m * n];
    let mut mag = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
            for (x, y) in ra.iter().zip(rb) {
                let p = f64::from(*x) * f64::from(*y);
                c[i * n + j] += p;
                mag[i * n + j] += p.abs();
            }
        }
    }
    (c, mag)
}

fn every_element<T: host::Gemm>(c: &Ctx, name: &str) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng(name);
    // The brief's sizes on the CPU device (a square one and a non-square one); larger on a GPU,
    // with several blocks each way and a K of many pipeline rounds.
    let shapes: Vec<(usize, usize, usize)> = if c.is_cpu() {
        vec![(256, 256, 128), (128, 384, 96)]
    } else {
        vec![(256, 256, 128), (128, 384, 96), (640, 384, 1056), (1024, 1024, 4096)]
    };
    for (m, n, k) in shapes {
        for random in [false, true] {
            let draw = |r: &mut StdRng| if random { r.random_range(-1.0f32..1.0) } else { quarter(r) };
            let a: Vec<T> = (0..m * k).map(|_| T::from_f32(draw(&mut r))).collect();
            let b: Vec<T> = (0..n * k).map(|_| T::from_f32(draw(&mut r))).collect();
            let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
            let (want, mag) = reference(&af, &bf, m, n, k);
            let (da, db) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?);
            let mut dc = c.gpu.upload(&vec![f32::NAN; m * n]).ctx("c")?;
            host::launch(&c.module, &s, (m, n, k), &da, &db, &mut dc).ctx("launch")?;
            let got = dc.to_vec().ctx("read")?;
            let what = format!(
                "{} GEMM {m}×{n}×{k}, {} data",
                std::any::type_name::<T>(),
                if random { "random" } else { "quarter-integer" }
            );
            if random {
                // An f32 sum of k products: each addition rounds by at most 2^-24 of the
                // running magnitude (the tensor cores' adder is at least as precise).
                let idx: Vec<usize> = (0..got.len()).collect();
                let tol = |i: usize| (k as f64 + 1.0) * f64::from(f32::EPSILON) * mag[i];
                check_all_by(&what, &idx, &idx, |&i, _| (f64::from(got[i]) - want[i]).abs() <= tol(i))?;
            } else {
                let want: Vec<f32> = want.iter().map(|&x| x as f32).collect();
                check_all(&what, &got, &want)?;
            }
        }
    }
    Ok(())
}

/// Shapes the kernel does not support: `host::launch` refuses them with `Error::Argument`
/// before launching; a direct launch whose grid leaves C is refused by the `Within` launch
/// check; and on the CPU device a direct launch of a shape whose strips are not whole (K not a
/// multiple of 32, A shorter than the grid) ends with the kernel's panic as the launch's `Err`.
/// Nothing is written outside C, and C is untouched by every refusal.
fn unsupported(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let up = |n: usize| c.gpu.upload(&vec![bf16::from_f32(1.0); n]);
    for (m, n, k) in [(128, 128, 48), (100, 128, 32), (128, 200, 32), (0, 128, 32), (128, 128, 0)] {
        let (a, b) = (up((m * k).max(1)).ctx("a")?, up((n * k).max(1)).ctx("b")?);
        let mut out = c.gpu.upload(&vec![7.0f32; (m * n).max(1)]).ctx("c")?;
        match host::launch(&c.module, &s, (m, n, k), &a, &b, &mut out) {
            Err(Error::Argument(msg)) => ensure(msg.contains("not supported"), || format!("{m}×{n}×{k}: {msg}"))?,
            other => return Err(format!("{m}×{n}×{k}: expected an argument error, got {other:?}")),
        }
        check_all(&format!("C after refusing {m}×{n}×{k}"), &out.to_vec().ctx("read")?, &vec![7.0f32; (m * n).max(1)])?;
    }
    // Buffers of the wrong size for the shape.
    let (a, b) = (up(128 * 32).ctx("a")?, up(128 * 32).ctx("b")?);
    let mut small = c.gpu.upload(&vec![7.0f32; 128 * 127]).ctx("c")?;
    ensure(matches!(host::launch(&c.module, &s, (128, 128, 32), &a, &b, &mut small), Err(Error::Argument(_))), || {
        "a C of 128 × 127 elements for 128 × 128 was accepted".into()
    })?;

    let kern = g::gemm_tn::<bf16>::load(&c.module).ctx("load")?;
    // A grid of 2 × 2 blocks over a 128 × 128 C: the `Within` layout's launch check refuses it.
    let mut out = c.gpu.upload(&vec![7.0f32; 128 * 128]).ctx("c")?;
    let cfg = host::config(256, 256);
    let res = kern.launch(&s, cfg, a.as_matrix(128, 32).ctx("a")?, b.as_matrix(128, 32).ctx("b")?, out.as_matrix_mut(128, 128).ctx("c")?);
    ensure(res.is_err(), || "a grid larger than C was launched".into())?;
    s.synchronize().ctx("sync after the refused launch")?;
    check_all("C after the refused grid", &out.to_vec().ctx("read")?, &vec![7.0f32; 128 * 128])?;
    // Too little dynamic shared memory for the stages: an `Err` naming `dynamic_array` (CPU
    // device: a GPU would trap, losing the context; the panic is the same code).
    if c.is_cpu() {
        let cfg = LaunchConfig::new(1, g::THREADS).with_shared_mem(1024);
        let res = kern
            .launch(&s, cfg, a.as_matrix(128, 32).ctx("a")?, b.as_matrix(128, 32).ctx("b")?, out.as_matrix_mut(128, 128).ctx("c")?)
            .and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains("dynamic_array"), || format!("too little shared memory: {e:?}"))?;
        // K = 48: A's and B's strips are not whole windows of 32: the kernel refuses.
        let (a48, b48) = (up(128 * 48).ctx("a")?, up(128 * 48).ctx("b")?);
        let res = kern
            .launch(&s, host::config(128, 128), a48.as_matrix(128, 48).ctx("a")?, b48.as_matrix(128, 48).ctx("b")?, out.as_matrix_mut(128, 128).ctx("c")?)
            .and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains("multiples of 128"), || format!("K = 48: {e:?}"))?;
        // A and B of different K.
        let res = kern
            .launch(&s, host::config(128, 128), a48.as_matrix(128, 48).ctx("a")?, b.as_matrix(128, 32).ctx("b")?, out.as_matrix_mut(128, 128).ctx("c")?)
            .and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains("differ in K"), || format!("K of 48 and 32: {e:?}"))?;
        check_all("C after the refused launches", &out.to_vec().ctx("read")?, &vec![7.0f32; 128 * 128])?;
    }
    // The kernel's own shapes still work after the refusals.
    let (a, b) = (c.gpu.upload(&vec![bf16::from_f32(0.5); 128 * 32]).ctx("a")?, c.gpu.upload(&vec![bf16::from_f32(2.0); 128 * 32]).ctx("b")?);
    let mut out = c.gpu.upload(&vec![f32::NAN; 128 * 128]).ctx("c")?;
    host::launch(&c.module, &s, (128, 128, 32), &a, &b, &mut out).ctx("launch after the refusals")?;
    check_all("C = 0.5 · 2 · 32", &out.to_vec().ctx("read")?, &vec![32.0f32; 128 * 128])?;
    Ok(())
}

/// Operands that are not where a device allocation starts: a C one or two elements into its
/// buffer (in one of the two its pairs of columns are not 8-byte aligned: the kernel's stores
/// take the checked path, one element at a time — a misaligned 8-byte store would fault on a
/// GPU, and fails the CPU device's alignment check) computes the same C and writes nothing
/// before it; an A one element in (its rows not 16-byte aligned for `cp.async`)
/// is refused with an `Err` (on the CPU device; a GPU traps).
fn misaligned(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("gemm_misaligned_operands");
    let (m, n, k) = (128usize, 256usize, 64usize);
    let a: Vec<bf16> = (0..m * k).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    let b: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(quarter(&mut r))).collect();
    let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
    let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
    let want: Vec<f32> = reference(&af, &bf, m, n, k).0.iter().map(|&x| x as f32).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("a")?, c.gpu.upload(&b).ctx("b")?);
    let kern = g::gemm_tn::<bf16>::load(&c.module).ctx("load")?;
    // One and two elements in: 4 bytes apart, so one of them is not 8-byte aligned whatever the
    // buffer's own alignment.
    for skip in [1usize, 2] {
        let mut big = c.gpu.upload(&vec![7.0f32; m * n + skip]).ctx("c")?;
        let out = big.slice_mut(skip..).into_matrix(m, n).ctx("c view")?;
        kern.launch(&s, host::config(m, n), da.as_matrix(m, k).ctx("a")?, db.as_matrix(n, k).ctx("b")?, out)
            .ctx("launch with C inside its buffer")?;
        let got = big.to_vec().ctx("read")?;
        ensure(got[..skip].iter().all(|&x| x == 7.0), || format!("elements before C written: {:?}", &got[..skip]))?;
        check_all(&format!("C {skip} elements into its buffer"), &got[skip..], &want)?;
    }
    if c.is_cpu() {
        let a1 = c.gpu.upload(&[&[bf16::ZERO][..], &a].concat()).ctx("a + 1")?;
        let mut out = c.gpu.upload(&vec![7.0f32; m * n]).ctx("c")?;
        let res = kern
            .launch(&s, host::config(m, n), a1.slice(1..).into_matrix(m, k).ctx("a view")?, db.as_matrix(n, k).ctx("b")?, out.as_matrix_mut(m, n).ctx("c")?)
            .and_then(|()| s.synchronize());
        let e = res.err().map(|e| e.to_string()).unwrap_or_default();
        ensure(e.contains("not 16-byte aligned"), || format!("A one element in: {e:?}"))?;
        check_all("C after the refused launch", &out.to_vec().ctx("read")?, &vec![7.0f32; m * n])?;
    }
    Ok(())
}
