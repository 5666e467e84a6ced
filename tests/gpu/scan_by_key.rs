//! The single-pass scan by key (`cohort::algorithms::scan_by_key_tile`; CUB's
//! `DeviceScan::InclusiveScanByKey` / `ExclusiveScanByKey`), built in and instantiated for a
//! user's key, value and operator, against a CPU reference on every element: random run lengths,
//! all keys equal (one segment across every tile: the longest look-back chains), all distinct
//! (every element a head), long runs across tiles, runs aligned to tiles, keys that come back
//! (`A A B B A A`: separate segments), NaN and ±0.0 keys, empty, one element, many streams.

use cohort_algorithms::{Algorithms, ByKeyBuiltin, Sum, Temp};
use cohort_runtime::DeviceBuffer;
use cohort_test_kernels::algorithms::{self as k, Affine, Sum3, Tri, compose, tri_mul};
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_scan_by_key_builtin", builtin),
        gpu_trial("algorithms_scan_by_key_user_types", user_types),
        gpu_trial("algorithms_scan_by_key_float_keys", float_keys),
        gpu_trial("algorithms_scan_by_key_many_streams", many_streams),
        gpu_trial("algorithms_scan_by_key_refusals", refusals),
    ]
}

/// Elements per tile of the scan by key (256 threads × 8 items).
const TILE: usize = 2048;

fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, TILE - 1, TILE, TILE + 1, 3 * TILE + 5, 40 * TILE + 3];
    v.extend(c.pick(vec![(1 << 20) + 7, (1 << 23) + 3], vec![]));
    v
}

/// The key patterns: `(name, key of element i)` for `n` elements.
fn patterns(r: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<u32>)> {
    let runs = |r: &mut StdRng, max: usize| {
        let mut keys = Vec::with_capacity(n);
        let mut k = 0u32;
        while keys.len() < n {
            let len = r.random_range(1..=max);
            k = k.wrapping_add(r.random_range(1..4));
            keys.extend(std::iter::repeat_n(k, len.min(n - keys.len())));
        }
        keys
    };
    vec![
        ("random runs of 1-8", runs(r, 8)),
        ("all equal", vec![7; n]),
        ("all distinct", (0..n as u32).collect()),
        ("long runs across tiles", runs(r, 3 * TILE)),
        ("runs aligned to tiles", (0..n).map(|i| (i / TILE) as u32).collect()),
        ("runs of 2 that come back (A A B B A A …)", (0..n).map(|i| ((i / 2) % 2) as u32).collect()),
    ]
}

/// The CPU's inclusive (`init: None`) or exclusive scan by key, then `guard`.
fn reference<K: PartialEq, T: Copy>(keys: &[K], input: &[T], init: Option<T>, guard: T, op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut want = Vec::with_capacity(input.len() + 1);
    let mut run: Option<T> = None;
    for (i, &x) in input.iter().enumerate() {
        if i == 0 || keys[i - 1] != keys[i] {
            run = None;
        }
        want.push(match init {
            Some(v) => run.map_or(v, |b| op(v, b)),
            None => run.map_or(x, |b| op(b, x)),
        });
        run = Some(run.map_or(x, |b| op(b, x)));
    }
    want.push(guard);
    want
}

/// Both built-in scans by key of `input`, checked element by element (and the guard after).
#[allow(clippy::too_many_arguments)]
fn check_builtin<K, T>(
    c: &Ctx,
    a: &Algorithms,
    temp: &mut Temp,
    what: &str,
    keys: &[K],
    input: &[T],
    guard: T,
    init: T,
    op: impl Fn(T, T) -> T + Copy,
    same: impl Fn(&T, &T) -> bool,
) -> TestResult
where
    K: cohort::DeviceCopy + PartialEq,
    T: ByKeyBuiltin<K, Sum> + std::fmt::Debug,
{
    let n = input.len();
    let s = c.gpu.stream();
    let (d_keys, d_in) = (c.gpu.upload(keys).ctx("upload")?, c.gpu.upload(input).ctx("upload")?);
    let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
    a.inclusive_scan_by_key(s, &d_keys, &d_in, &mut out, Sum, temp).ctx("inclusive scan by key")?;
    let want = reference(keys, input, None, guard, op);
    check_all_by(&format!("{what}: inclusive, n = {n}"), &out.to_vec().ctx("read")?, &want, &same)?;
    let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
    a.exclusive_scan_by_key(s, &d_keys, &d_in, &mut out, init, Sum, temp).ctx("exclusive scan by key")?;
    let want = reference(keys, input, Some(init), guard, op);
    check_all_by(&format!("{what}: exclusive, n = {n}"), &out.to_vec().ctx("read")?, &want, &same)
}

fn builtin(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_scan_by_key_builtin");
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (name, keys) in patterns(&mut r, n) {
            let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
            let what = format!("u32 keys, sum u32 ({name})");
            check_builtin(c, &a, &mut temp, &what, &keys, &input, 0xdead_beef, 5, u32::wrapping_add, u32::eq)?;
            // u64 keys (the same runs, high bits set) and 8-byte values: wide status slots.
            let keys64: Vec<u64> = keys.iter().map(|&x| u64::from(x) << 32 | 1).collect();
            let input64: Vec<u64> = (0..n).map(|_| r.random()).collect();
            let what = format!("u64 keys, sum u64 ({name})");
            check_builtin(c, &a, &mut temp, &what, &keys64, &input64, 0xdead, 9, u64::wrapping_add, u64::eq)?;
            // f32 values that sum exactly (small integers), NaN and -0.0 among them.
            let floats: Vec<f32> = (0..n)
                .map(|_| match r.random_range(0..200) {
                    0 => f32::NAN,
                    1 => -0.0,
                    _ => r.random_range(-64..64) as f32,
                })
                .collect();
            let same = |x: &f32, y: &f32| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
            let what = format!("u32 keys, sum f32 ({name})");
            check_builtin(c, &a, &mut temp, &what, &keys, &floats, 1e30, -0.0, |x, y| x + y, same)?;
        }
    }
    Ok(())
}

fn user_types(c: &Ctx) -> TestResult {
    let affine = k::affine_by_key3::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let tri = k::tri_by_key::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_scan_by_key_user_types");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (name, keys) in patterns(&mut r, n) {
            // 12-byte keys: equal exactly when the runs' keys are (each field from it).
            let keys3: Vec<Sum3> = keys.iter().map(|&x| Sum3 { a: x, b: x ^ 0x5555, c: x.wrapping_mul(3) }).collect();
            let input: Vec<Affine> = (0..n).map(|_| Affine { a: r.random::<u32>() | 1, b: r.random() }).collect();
            let (d_keys, d_in) = (c.gpu.upload(&keys3).ctx("upload")?, c.gpu.upload(&input).ctx("upload")?);
            let guard = Affine { a: 0xdead, b: 0xbeef };
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            cohort_algorithms::inclusive_scan_by_key(&affine, s, &d_keys, &d_in, &mut out, &mut temp)
                .ctx("inclusive scan by key")?;
            let want = reference(&keys3, &input, None, guard, compose);
            check_all(&format!("affine by 12-byte keys, inclusive ({name}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
            let start = Affine { a: 3, b: 1 };
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            cohort_algorithms::exclusive_scan_by_key(&affine, s, &d_keys, &d_in, &mut out, start, &mut temp)
                .ctx("exclusive scan by key")?;
            let want = reference(&keys3, &input, Some(start), guard, compose);
            check_all(&format!("affine by 12-byte keys, exclusive ({name}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;

            // 24-byte values (the widest), a non-commutative product.
            let mats: Vec<Tri> = (0..n).map(|_| Tri { a: r.random::<u64>() | 1, b: r.random(), c: r.random::<u64>() | 1 }).collect();
            let (d_keys, d_in) = (c.gpu.upload(&keys).ctx("upload")?, c.gpu.upload(&mats).ctx("upload")?);
            let guard = Tri { a: 0xdead, b: 0xbeef, c: 0xf00d };
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            cohort_algorithms::inclusive_scan_by_key(&tri, s, &d_keys, &d_in, &mut out, &mut temp)
                .ctx("inclusive scan by key")?;
            let want = reference(&keys, &mats, None, guard, tri_mul);
            check_all(&format!("24-byte matrices, inclusive ({name}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
            let start = Tri { a: 2, b: 7, c: 3 };
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            cohort_algorithms::exclusive_scan_by_key(&tri, s, &d_keys, &d_in, &mut out, start, &mut temp)
                .ctx("exclusive scan by key")?;
            let want = reference(&keys, &mats, Some(start), guard, tri_mul);
            check_all(&format!("24-byte matrices, exclusive ({name}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
        }
    }
    Ok(())
}

/// `f32` keys compared by `==`: a NaN is never equal to the key before it (each NaN starts a
/// segment), and `-0.0 == 0.0` (one segment).
fn float_keys(c: &Ctx) -> TestResult {
    let kern = k::sum_by_f32_key::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_scan_by_key_float_keys");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    for n in [1, 5, TILE + 3, c.pick(100 * TILE + 9, 7 * TILE + 9)] {
        let keys: Vec<f32> = (0..n)
            .map(|i| match (i / 3) % 5 {
                0 => f32::NAN,
                1 => 0.0,
                2 => -0.0,
                3 => f32::INFINITY,
                _ => r.random_range(0..2) as f32,
            })
            .collect();
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let (d_keys, d_in) = (c.gpu.upload(&keys).ctx("upload")?, c.gpu.upload(&input).ctx("upload")?);
        let mut out = c.gpu.upload(&vec![0xdead_u32; n + 1]).ctx("alloc")?;
        cohort_algorithms::inclusive_scan_by_key(&kern, s, &d_keys, &d_in, &mut out, &mut temp).ctx("scan")?;
        let want = reference(&keys, &input, None, 0xdead, u32::wrapping_add);
        check_all(&format!("u32 sums by f32 keys (NaN, ±0.0), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// Scans by key on many streams at once (their look-backs share the GPU; each has its own
/// storage).
fn many_streams(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_scan_by_key_many_streams");
    let n = c.pick(3 << 20, 40 * TILE + 3);
    let jobs_n = c.pick(16, 4);
    let mut jobs = Vec::new();
    let mut inputs = Vec::new();
    for _ in 0..jobs_n {
        let keys: Vec<u32> = (0..n).map(|i| (i / r.random_range(1..5000)) as u32).collect();
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let stream = c.gpu.new_stream().ctx("stream")?;
        let d_keys = c.gpu.upload(&keys).ctx("upload")?;
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let out: DeviceBuffer<u32> = c.gpu.zeroed(n).ctx("alloc")?;
        jobs.push((stream, d_keys, d_in, out, Temp::new(&c.gpu)));
        inputs.push((keys, input));
    }
    // Every scan enqueued before any is waited for.
    for (stream, d_keys, d_in, out, temp) in &mut jobs {
        a.inclusive_scan_by_key(stream, d_keys, d_in, out, Sum, temp).ctx("scan")?;
    }
    for ((_, _, _, out, _), (keys, input)) in jobs.iter().zip(&inputs) {
        let mut want = reference(keys, input, None, 0, u32::wrapping_add);
        want.pop();
        check_all("a scan by key among many streams", &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// Keys and values of different lengths, or a short output: `Err`s, nothing launched.
fn refusals(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let keys = c.gpu.upload(&[1u32, 1, 2]).ctx("upload")?;
    let input = c.gpu.upload(&[1u32, 2]).ctx("upload")?;
    let mut out = c.gpu.upload(&[9u32; 4]).ctx("upload")?;
    let e = a.inclusive_scan_by_key(s, &keys, &input, &mut out, Sum, &mut temp);
    ensure(e.is_err(), || format!("3 keys for 2 values: {e:?}"))?;
    let input = c.gpu.upload(&[1u32, 2, 3]).ctx("upload")?;
    let mut short = c.gpu.upload(&[9u32; 2]).ctx("upload")?;
    let e = a.exclusive_scan_by_key(s, &keys, &input, &mut short, 0, Sum, &mut temp);
    ensure(e.is_err(), || format!("an output of 2 for 3 values: {e:?}"))?;
    check_all("untouched output", &short.to_vec().ctx("read")?, &[9, 9])?;
    a.inclusive_scan_by_key(s, &keys, &input, &mut out, Sum, &mut temp).ctx("scan")?;
    check_all("a scan after the refusals", &out.to_vec().ctx("read")?, &[1, 3, 3, 9])
}
