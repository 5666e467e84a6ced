//! `Algorithms::segmented_reduce` and `arg_min` / `arg_max` against CPU references: segments
//! of length 0 and 1, runs of empty ones, lengths around the 4096-element chunks, one huge
//! segment, a mix of huge and tiny, elements outside every segment, offsets past the input,
//! offsets that do not ascend (no crash, nothing written past the segments); argmin/argmax
//! ties (the first position), NaNs (the first NaN wins), ±0, sizes across tiles and grids.

use cohort_algorithms::{Algorithms, ArgBuiltin, Max, Min, SegmentedBuiltin, Sum, Temp};
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_segmented_reduce", segmented_reduce),
        gpu_trial("algorithms_segmented_reduce_unsorted_offsets", segmented_unsorted),
        gpu_trial("algorithms_arg_min_max", arg_min_max),
    ]
}

/// Elements per chunk of the segmented reduce (4-byte elements).
const CHUNK: usize = 4096;

/// The CPU's segmented reduction, as documented (offsets clamped to `n`, a segment whose
/// end is before its start empty), then `guard`.
fn seg_ref<T: Copy>(input: &[T], offsets: &[u64], init: T, guard: T, op: impl Fn(T, T) -> T) -> Vec<T> {
    let n = input.len();
    let mut out: Vec<T> = offsets
        .windows(2)
        .map(|w| {
            let b = (w[0] as usize).min(n);
            let e = (w[1] as usize).min(n).max(b);
            input[b..e].iter().fold(init, |a, &x| op(a, x))
        })
        .collect();
    out.push(guard);
    out
}

/// Offsets of segments with these lengths, from `start`.
fn offsets_of(start: u64, lengths: &[usize]) -> Vec<u64> {
    let mut v = vec![start];
    for &l in lengths {
        v.push(v[v.len() - 1] + l as u64);
    }
    v
}

/// Segment layouts for `n` elements: (name, offsets).
fn layouts(r: &mut StdRng, n: usize) -> Vec<(String, Vec<u64>)> {
    let mut v = Vec::new();
    // Short random lengths, a third of them empty.
    let mut lens = Vec::new();
    let mut total = 0;
    while total < n {
        let l = if r.random_bool(0.3) { 0 } else { r.random_range(1..20usize).min(n - total) };
        lens.push(l);
        total += l;
    }
    v.push(("short (0..20)".into(), offsets_of(0, &lens)));
    // Lengths of 1.
    v.push(("length 1".into(), (0..=n as u64).collect()));
    // One segment of everything; with an empty segment on each side.
    v.push(("one huge".into(), vec![0, n as u64]));
    v.push(("empty, huge, empty".into(), vec![0, 0, n as u64, n as u64]));
    // Lengths around the chunks (and runs of empty segments inside a chunk).
    let mut lens = Vec::new();
    let mut total = 0;
    let pattern = [CHUNK - 1, 0, 0, 0, CHUNK, 1, CHUNK + 1, 2 * CHUNK + 5, 0, 3, 100, 5 * CHUNK];
    let mut k = 0;
    while total < n {
        let l = pattern[k % pattern.len()].min(n - total);
        lens.push(l);
        total += l;
        k += 1;
    }
    v.push(("around chunks".into(), offsets_of(0, &lens)));
    // A few huge segments among many tiny ones.
    let mut lens = Vec::new();
    let mut total = 0;
    while total < n {
        let l = if r.random_bool(0.01) { r.random_range(CHUNK..6 * CHUNK) } else { r.random_range(0..40) };
        let l = l.min(n - total);
        lens.push(l);
        total += l;
    }
    v.push(("huge among tiny".into(), offsets_of(0, &lens)));
    // Elements before the first and after the last segment; offsets past the input.
    if n > 20 {
        let a = n / 3;
        v.push(("elements outside".into(), vec![7, a as u64, (n - 5) as u64]));
        v.push(("past the input".into(), vec![a as u64, (n + 10) as u64, (n + 20) as u64, u64::MAX]));
    }
    v
}

fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 100, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17];
    v.extend(c.pick(vec![1_000_003, (3 << 20) + 7], vec![50_000]));
    v
}

/// Runs the segmented reduction and checks every segment (and that the element past them
/// is left alone).
#[allow(clippy::too_many_arguments)]
fn check_seg<T, Op: Copy>(
    c: &Ctx,
    a: &Algorithms,
    temp: &mut Temp,
    what: &str,
    input: &[T],
    offsets: &[u64],
    init: T,
    guard: T,
    op: Op,
    host: impl Fn(T, T) -> T,
    same: impl Fn(&T, &T) -> bool,
) -> TestResult
where
    T: SegmentedBuiltin<Op> + std::fmt::Debug,
{
    let m = offsets.len().saturating_sub(1);
    let d_in = c.gpu.upload(input).ctx("upload")?;
    let d_off = c.gpu.upload(offsets).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![guard; m + 1]).ctx("alloc")?;
    a.segmented_reduce(c.gpu.stream(), &d_in, &d_off, &mut out, init, op, temp).ctx("segmented_reduce")?;
    let want = seg_ref(input, offsets, init, guard, host);
    check_all_by(&format!("{what}: segmented reduce, n = {}, {m} segments", input.len()), &out.to_vec().ctx("read")?, &want, same)
}

fn same_bits_f32(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// `cohort_algorithms::Min` on `f32`: NaN wins, `-0.0` below `+0.0`.
fn min_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}

/// `cohort_algorithms::Max` on `f32`.
fn max_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() { b } else { a }
    } else {
        a.max(b)
    }
}

fn segmented_reduce(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_segmented_reduce");
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        let u: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let i: Vec<i32> = (0..n).map(|_| r.random()).collect();
        // Small integers: every f32 partial sum exact in any order.
        let f: Vec<f32> = (0..n).map(|_| r.random_range(-8i32..8) as f32).collect();
        let g: Vec<f32> = (0..n)
            .map(|_| match r.random_range(0..2000) {
                0 => f32::NAN,
                1 => -0.0,
                2 => 0.0,
                3 => f32::INFINITY,
                _ => r.random_range(-1e6f32..1e6),
            })
            .collect();
        let d: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
        let w: Vec<u64> = (0..n).map(|_| r.random::<u64>() >> 3).collect();
        for (name, offsets) in layouts(&mut r, n) {
            let what = |t: &str| format!("{t}, {name}");
            let eq = |x: &u32, y: &u32| x == y;
            check_seg(c, &a, &mut temp, &what("sum u32"), &u, &offsets, 3, 0xdead, Sum, u32::wrapping_add, eq)?;
            check_seg(c, &a, &mut temp, &what("max u32"), &u, &offsets, 0, 0xdead, Max, u32::max, eq)?;
            check_seg(c, &a, &mut temp, &what("min i32"), &i, &offsets, i32::MAX, -7, Min, i32::min, |x, y| x == y)?;
            check_seg(c, &a, &mut temp, &what("sum f32"), &f, &offsets, 0.5, -1.5, Sum, |x, y| x + y, same_bits_f32)?;
            check_seg(c, &a, &mut temp, &what("min f32"), &g, &offsets, f32::INFINITY, -1.5, Min, min_f32, same_bits_f32)?;
            check_seg(c, &a, &mut temp, &what("max f32"), &g, &offsets, f32::NEG_INFINITY, -1.5, Max, max_f32, same_bits_f32)?;
            check_seg(c, &a, &mut temp, &what("sum u64"), &w, &offsets, 1, 9, Sum, u64::wrapping_add, |x, y| x == y)?;
            let close = |x: &f64, y: &f64| (x - y).abs() <= 1e-9 * (1.0 + y.abs());
            check_seg(c, &a, &mut temp, &what("sum f64"), &d, &offsets, 0.25, -3.0, Sum, |x, y| x + y, close)?;
        }
    }
    // No segments; one offset; an output too short.
    let input = c.gpu.upload(&[1u32, 2, 3]).ctx("upload")?;
    let mut out = c.gpu.upload(&[7u32; 2]).ctx("alloc")?;
    let s = c.gpu.stream();
    for offsets in [vec![], vec![1u64]] {
        let d = if offsets.is_empty() { c.gpu.zeroed::<u64>(0) } else { c.gpu.upload(&offsets) }.ctx("upload")?;
        a.segmented_reduce(s, &input, &d, &mut out, 0, Sum, &mut temp).ctx("no segments")?;
    }
    check_all("no segments: nothing written", &out.to_vec().ctx("read")?, &[7, 7])?;
    let d = c.gpu.upload(&[0u64, 1, 2, 3]).ctx("upload")?;
    let r = a.segmented_reduce(s, &input, &d, &mut out, 0, Sum, &mut temp);
    ensure(r.is_err(), || "an output shorter than the segments: accepted".into())
}

/// Offsets that do not ascend: the call succeeds (values unspecified), writes nothing past
/// the segments, and the segments it can see are right where they are well formed.
fn segmented_unsorted(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_segmented_reduce_unsorted_offsets");
    let mut temp = Temp::new(&c.gpu);
    let n = c.pick(200_000, 30_000);
    let input: Vec<u32> = (0..n).map(|_| r.random_range(0..1000)).collect();
    let d_in = c.gpu.upload(&input).ctx("upload")?;
    for round in 0..4 {
        let m = [5usize, 100, 3000, 20_000][round];
        let offsets: Vec<u64> = (0..=m).map(|_| r.random_range(0..n as u64 + 100)).collect();
        let d_off = c.gpu.upload(&offsets).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![u32::MAX; m + 5]).ctx("alloc")?;
        a.segmented_reduce(c.gpu.stream(), &d_in, &d_off, &mut out, 0, Sum, &mut temp).ctx("segmented_reduce")?;
        let got = out.to_vec().ctx("read")?;
        check_all(&format!("unsorted offsets ({m} segments): past the segments"), &got[m..], &[u32::MAX; 5])?;
        // Empty segments (end before start included) are the fix-up's: always `init`.
        for s in 0..m {
            let b = (offsets[s] as usize).min(n);
            let e = (offsets[s + 1] as usize).min(n);
            ensure(e > b || got[s] == 0, || format!("unsorted offsets: empty segment {s} holds {}", got[s]))?;
        }
    }
    Ok(())
}

/// The CPU's argmin / argmax as documented: NaN better than any number, `-0.0 < +0.0`, the
/// first of equals.
fn arg_ref<T: Copy>(input: &[T], better: impl Fn(T, T) -> bool) -> (u64, T) {
    let mut best = 0;
    for (k, &x) in input.iter().enumerate().skip(1) {
        if better(x, input[best]) {
            best = k;
        }
    }
    (best as u64, input[best])
}

/// `f32` order for argmin (`max == false`) / argmax.
fn better_f32(a: f32, b: f32, max: bool) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, false) => true,
        (_, true) => false,
        _ => {
            let key = |x: f32| {
                let bits = x.to_bits();
                if bits >> 31 != 0 { !bits } else { bits | 1 << 31 }
            };
            if max { key(a) > key(b) } else { key(a) < key(b) }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_arg<T>(
    c: &Ctx,
    a: &Algorithms,
    temp: &mut Temp,
    what: &str,
    input: &[T],
    max: bool,
    better: impl Fn(T, T) -> bool,
    same: impl Fn(&T, &T) -> bool,
) -> TestResult
where
    T: ArgBuiltin + std::fmt::Debug,
{
    let d = c.gpu.upload(input).ctx("upload")?;
    let mut index = c.gpu.upload(&[u64::MAX, 77]).ctx("alloc")?;
    let mut value = c.gpu.upload(&[input[0], input[0]]).ctx("alloc")?;
    let s = c.gpu.stream();
    if max {
        a.arg_max(s, &d, &mut index, &mut value, temp).ctx("arg_max")?;
    } else {
        a.arg_min(s, &d, &mut index, &mut value, temp).ctx("arg_min")?;
    }
    let (wi, wv) = arg_ref(input, better);
    let which = if max { "argmax" } else { "argmin" };
    let what = format!("{what}: {which}, n = {}", input.len());
    check_all(&format!("{what}: index"), &index.to_vec().ctx("read")?, &[wi, 77])?;
    check_all_by(&format!("{what}: value"), &value.to_vec().ctx("read")?[..1], &[wv], same)
}

fn arg_min_max(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_arg_min_max");
    let mut temp = Temp::new(&c.gpu);
    let mut ns = vec![1usize, 2, 31, 1000, 4095, 4096, 4097, 2 * 4096 * 1024 + 3];
    ns.extend(c.pick(vec![(3 << 20) + 7, 1 << 24], vec![100_003]));
    if c.is_cpu() {
        ns.retain(|&n| n < 1 << 20);
    }
    for n in ns {
        // Few distinct values: many ties, the first position must win.
        let u: Vec<u32> = (0..n).map(|_| r.random_range(0..50)).collect();
        for max in [false, true] {
            let b = move |x: u32, y: u32| if max { x > y } else { x < y };
            check_arg(c, &a, &mut temp, "u32 ties", &u, max, b, |x, y| x == y)?;
        }
        let i: Vec<i64> = (0..n).map(|_| r.random::<i64>() >> 20).collect();
        for max in [false, true] {
            let b = move |x: i64, y: i64| if max { x > y } else { x < y };
            check_arg(c, &a, &mut temp, "i64", &i, max, b, |x, y| x == y)?;
        }
        // The extreme at the very end; all equal.
        let mut e: Vec<i32> = (0..n).map(|_| r.random_range(-100..100)).collect();
        e[n - 1] = i32::MIN;
        check_arg(c, &a, &mut temp, "i32, min last", &e, false, |x, y| x < y, |x, y| x == y)?;
        let same = vec![5u32; n];
        check_arg(c, &a, &mut temp, "u32 all equal", &same, true, |x, y| x > y, |x, y| x == y)?;
        // Floats: ±0 only (argmin: the first -0.0; argmax: the first +0.0), with rare NaNs
        // (the first NaN), and without.
        let z: Vec<f32> = (0..n).map(|k| if k % 37 == 20 { -0.0 } else { 0.0 }).collect();
        for max in [false, true] {
            check_arg(c, &a, &mut temp, "f32 ±0", &z, max, move |x, y| better_f32(x, y, max), |x, y| x.to_bits() == y.to_bits())?;
        }
        let f: Vec<f32> = (0..n).map(|_| r.random_range(-1e3f32..1e3)).collect();
        let mut g = f.clone();
        if n > 10 {
            g[n / 2] = f32::NAN;
            g[n / 2 + 3] = -f32::NAN;
        }
        let bits = |x: &f32, y: &f32| x.to_bits() == y.to_bits();
        for max in [false, true] {
            check_arg(c, &a, &mut temp, "f32", &f, max, move |x, y| better_f32(x, y, max), bits)?;
            check_arg(c, &a, &mut temp, "f32 with NaNs", &g, max, move |x, y| better_f32(x, y, max), bits)?;
        }
        let d: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
        check_arg(c, &a, &mut temp, "f64", &d, true, |x, y| x > y, |x, y| x == y)?;
    }
    let empty = c.gpu.zeroed::<u32>(0).ctx("alloc")?;
    let mut index = c.gpu.zeroed::<u64>(1).ctx("alloc")?;
    let mut value = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    let r = a.arg_min(c.gpu.stream(), &empty, &mut index, &mut value, &mut temp);
    ensure(r.is_err(), || "argmin of an empty input: accepted".into())
}
