//! `cohort::block` (the block layer) and `cohort_algorithms` (device reduce, single-pass scan
//! with decoupled look-back), built in and instantiated for a user's type, against CPU
//! references on random and adversarial inputs: empty, one element, sizes around tile
//! boundaries, all-equal values, NaNs and −0.0, many streams at once.

use cohort_algorithms::{Algorithms, Builtin, LessThan, Max, Min, SelectBuiltin, Sum, Temp};
use cohort_runtime::{DeviceBuffer, LaunchConfig};
use cohort_test_kernels::algorithms::{self as k, Affine, ITEMS, Mat2, Sum3, compose, mat_mul, sum3};
use cohort_tests::{Context, Ctx, TestResult, check_all, check_all_by, ensure, gpu_only_trial, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_block_tile_scan_and_reduce", block_tile_scan),
        gpu_trial("algorithms_block_exchange_copy", block_exchange_copy),
        gpu_trial("algorithms_block_coalesced_copy", block_coalesced_copy),
        gpu_trial("algorithms_scan_builtin", scan_builtin),
        gpu_trial("algorithms_reduce_builtin", reduce_builtin),
        gpu_trial("algorithms_user_type_scan", user_type_scan),
        gpu_trial("algorithms_reduce_elements_straddling_vectors", reduce_straddling),
        gpu_trial("algorithms_scan_wide_slots", scan_wide_slots),
        gpu_trial("algorithms_scan_many_streams", scan_many_streams),
        gpu_trial("algorithms_select_partition", select_partition),
        gpu_trial("algorithms_unique_and_run_length", unique_and_run_length),
        gpu_only_trial(
            "algorithms_scan_past_2_pow_32",
            "2^32 + 1 elements (34 GB of device memory); run with --include-ignored on a big GPU",
            scan_past_2_pow_32,
        )
        .with_ignored_flag(true),
    ]
}

/// Elements per tile of the device scan and reduce (256 threads × 16 items).
const TILE: usize = 4096;

/// Sizes around tile boundaries (and the reduce's one-block / multi-block switch at 8 tiles).
fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, TILE - 1, TILE, TILE + 1, 2 * TILE + 17, 7 * TILE + 1, 8 * TILE, 9 * TILE + 3];
    v.extend(c.pick(vec![33 * TILE + 5, 1 << 20, (1 << 24) + 7], vec![33 * TILE + 5]));
    v
}

fn block_tile_scan(c: &Ctx) -> TestResult {
    let mut r = rng("algorithms_block_tile_scan");
    let f = k::block_tile_scan::load(&c.tests).ctx("load")?;
    let bs = 128usize;
    let tile = bs * ITEMS;
    for n in [1usize, 5, tile - 1, tile, tile + 1, 3 * tile + 7, 10 * tile + 100] {
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let tiles = n.div_ceil(tile);
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let mut scan = c.gpu.upload(&vec![0xdead_beef_u32; n]).ctx("alloc")?;
        let mut sums = c.gpu.upload(&vec![0xdead_beef_u32; tiles * bs]).ctx("alloc")?;
        // Fewer blocks than tiles: the grid-stride over tiles.
        let cfg = LaunchConfig::new(tiles.min(3) as u32, bs as u32).with_shared_mem((tile * 4) as u32);
        f.launch(c.gpu.stream(), cfg, &d_in, &mut scan, &mut sums).ctx("launch")?;
        let (got, got_sums) = (scan.to_vec().ctx("scan")?, sums.to_vec().ctx("sums")?);
        let mut want = vec![0u32; n];
        let mut want_sums = vec![0xdead_beef_u32; tiles * bs];
        for t in 0..tiles {
            let mut acc = 0u32;
            for i in t * tile..((t + 1) * tile).min(n) {
                acc = acc.wrapping_add(input[i]);
                want[i] = acc;
            }
            want_sums[t * bs] = acc;
        }
        check_all(&format!("block tile scan, n = {n}"), &got, &want)?;
        check_all(&format!("block reduce_items, n = {n}"), &got_sums, &want_sums)?;
    }
    Ok(())
}

fn block_exchange_copy(c: &Ctx) -> TestResult {
    let mut r = rng("algorithms_block_exchange_copy");
    let f = k::block_tile_copy::load(&c.tests).ctx("load")?;
    let bs = 64usize;
    let tile = bs * ITEMS;
    for n in [1usize, tile - 3, tile, 5 * tile + 9] {
        let input: Vec<u64> = (0..n).map(|_| r.random()).collect();
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let mut out = c.gpu.zeroed::<u64>(n).ctx("alloc")?;
        let cfg = LaunchConfig::new(n.div_ceil(tile).min(2) as u32, bs as u32).with_shared_mem((tile * 8) as u32);
        f.launch(c.gpu.stream(), cfg, &d_in, &mut out).ctx("launch")?;
        check_all(&format!("blocked → striped copy, n = {n}"), &out.to_vec().ctx("out")?, &input)?;
    }
    Ok(())
}

/// The coalesced blocked load and store (warp exchange through shared memory) copy every
/// element to where it was: whole and partial tiles, several tiles a block, items of 4, 8 and
/// 12 bytes, a block too large for the staging (per-thread path), and warps that call them
/// diverged (per-thread path).
fn block_coalesced_copy(c: &Ctx) -> TestResult {
    let mut r = rng("algorithms_block_coalesced_copy");
    let (f32s, f64s, f3) = (
        k::block_coalesced_copy_u32::load(&c.tests).ctx("load")?,
        k::block_coalesced_copy_u64::load(&c.tests).ctx("load")?,
        k::block_coalesced_copy_sum3::load(&c.tests).ctx("load")?,
    );
    for (bs, split) in [(256u32, 0u32), (256, 1), (128, 0), (512, 0)] {
        for tiles_x in [(0usize, 1usize), (1, 0), (1, 7), (3, 0), (5, 9)] {
            // u32, 16 a thread
            let tile = bs as usize * 16;
            let n = tiles_x.0 * tile + tiles_x.1;
            let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
            let d_in = c.gpu.upload(&input).ctx("upload")?;
            let mut out = c.gpu.upload(&vec![0x5a5a_5a5a_u32; n]).ctx("alloc")?;
            let cfg = LaunchConfig::new(n.div_ceil(tile).clamp(1, 2) as u32, bs);
            f32s.launch(c.gpu.stream(), cfg, &d_in, &mut out, split).ctx("launch")?;
            check_all(&format!("u32 copy, block {bs}, split {split}, n = {n}"), &out.to_vec().ctx("out")?, &input)?;
            // u64, 8 a thread
            let tile = bs as usize * 8;
            let n = tiles_x.0 * tile + tiles_x.1;
            let input: Vec<u64> = (0..n).map(|_| r.random()).collect();
            let d_in = c.gpu.upload(&input).ctx("upload")?;
            let mut out = c.gpu.upload(&vec![0x5a5a_5a5a_5a5a_5a5a_u64; n]).ctx("alloc")?;
            let cfg = LaunchConfig::new(n.div_ceil(tile).clamp(1, 2) as u32, bs);
            f64s.launch(c.gpu.stream(), cfg, &d_in, &mut out, split).ctx("launch")?;
            check_all(&format!("u64 copy, block {bs}, split {split}, n = {n}"), &out.to_vec().ctx("out")?, &input)?;
            // Sum3 (12 bytes), 4 a thread
            let tile = bs as usize * 4;
            let n = tiles_x.0 * tile + tiles_x.1;
            let input: Vec<Sum3> = (0..n).map(|_| Sum3 { a: r.random(), b: r.random(), c: r.random() }).collect();
            let d_in = c.gpu.upload(&input).ctx("upload")?;
            let mut out = c.gpu.upload(&vec![Sum3 { a: 7, b: 7, c: 7 }; n]).ctx("alloc")?;
            let cfg = LaunchConfig::new(n.div_ceil(tile).clamp(1, 2) as u32, bs);
            f3.launch(c.gpu.stream(), cfg, &d_in, &mut out, split).ctx("launch")?;
            check_all(&format!("Sum3 copy, block {bs}, split {split}, n = {n}"), &out.to_vec().ctx("out")?, &input)?;
        }
    }
    Ok(())
}

/// The CPU's exclusive scan of `input` from `init` with `op`, then `guard` (the element past the
/// input that a scan must leave alone).
fn exclusive_reference<T: Copy>(input: &[T], init: T, guard: T, op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut want = Vec::with_capacity(input.len() + 1);
    let mut acc = init;
    for &x in input {
        want.push(acc);
        acc = op(acc, x);
    }
    want.push(guard);
    want
}

/// The CPU's inclusive scan of `input` with `op`, then `guard`.
fn inclusive_reference<T: Copy>(input: &[T], guard: T, op: impl Fn(T, T) -> T) -> Vec<T> {
    let mut want: Vec<T> = Vec::with_capacity(input.len() + 1);
    for (i, &x) in input.iter().enumerate() {
        want.push(if i == 0 { x } else { op(want[i - 1], x) });
    }
    want.push(guard);
    want
}

/// The scans of `input` with `op`, checked against the CPU (`same` compares elements).
#[allow(clippy::too_many_arguments)]
fn check_scans<T, Op: Copy>(
    c: &Ctx,
    a: &Algorithms,
    what: &str,
    input: &[T],
    init: T,
    op: Op,
    host: impl Fn(T, T) -> T,
    same: impl Fn(&T, &T) -> bool,
) -> TestResult
where
    T: Builtin<Op> + std::fmt::Debug + PartialEq,
{
    let n = input.len();
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let d_in = c.gpu.upload(input).ctx("upload")?;
    // One element more than the input, as a guard the scan must not write.
    let mut out = c.gpu.upload(&vec![init; n + 1]).ctx("alloc")?;
    a.exclusive_scan(s, &d_in, &mut out, init, op, &mut temp).ctx("exclusive scan")?;
    let got = out.to_vec().ctx("read")?;
    let want = exclusive_reference(input, init, init, &host);
    check_all_by(&format!("{what}: exclusive scan, n = {n}"), &got, &want, &same)?;
    let mut out = c.gpu.upload(&vec![init; n + 1]).ctx("alloc")?;
    a.inclusive_scan(s, &d_in, &mut out, op, &mut temp).ctx("inclusive scan")?;
    let got = out.to_vec().ctx("read")?;
    let want = inclusive_reference(input, init, &host);
    check_all_by(&format!("{what}: inclusive scan, n = {n}"), &got, &want, &same)
}

/// Floats compared bit for bit where the operator is exact (min, max), NaN equal to NaN.
fn same_bits_f32(a: &f32, b: &f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn min_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}

fn max_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a == b {
        if a.is_sign_negative() { b } else { a }
    } else {
        a.max(b)
    }
}

/// Random floats with NaNs, ±0.0 and infinities mixed in (rarely, so prefixes vary).
fn adversarial_f32(r: &mut impl Rng, n: usize, nan_rate: f64) -> Vec<f32> {
    (0..n)
        .map(|_| match r.random_range(0..1000) {
            0 => -0.0,
            1 => 0.0,
            2 => f32::INFINITY,
            3 => f32::NEG_INFINITY,
            _ if r.random_bool(nan_rate) => f32::NAN,
            _ => r.random_range(-1e6f32..1e6),
        })
        .collect()
}

fn scan_builtin(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_scan_builtin");
    for n in sizes(c) {
        let u: Vec<u32> = (0..n).map(|_| r.random()).collect();
        check_scans(c, &a, "sum u32", &u, 7, Sum, u32::wrapping_add, |x, y| x == y)?;
        let equal = vec![3u32; n];
        check_scans(c, &a, "sum u32 all equal", &equal, 0, Sum, u32::wrapping_add, |x, y| x == y)?;
        let w: Vec<u64> = (0..n).map(|_| r.random::<u64>() >> 3).collect();
        check_scans(c, &a, "sum u64", &w, 0, Sum, u64::wrapping_add, |x, y| x == y)?;
        let i: Vec<i32> = (0..n).map(|_| r.random()).collect();
        check_scans(c, &a, "min i32", &i, i32::MAX, Min, |x: i32, y| x.min(y), |x, y| x == y)?;
        let f = adversarial_f32(&mut r, n, 0.0);
        check_scans(c, &a, "max f32 (±0, ±inf)", &f, f32::NEG_INFINITY, Max, max_f32, same_bits_f32)?;
        check_scans(c, &a, "min f32 (±0, ±inf)", &f, f32::INFINITY, Min, min_f32, same_bits_f32)?;
        let f = adversarial_f32(&mut r, n, 0.0001);
        check_scans(c, &a, "max f32 with NaNs", &f, f32::NEG_INFINITY, Max, max_f32, same_bits_f32)?;
        // Sums of floats: small integers, so every partial sum is exact in any order.
        let f: Vec<f32> = (0..n).map(|_| r.random_range(-8i32..8) as f32).collect();
        check_scans(c, &a, "sum f32 (exact)", &f, 0.5, Sum, |x, y| x + y, same_bits_f32)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn check_reduce<T, Op: Copy>(
    c: &Ctx,
    a: &Algorithms,
    what: &str,
    input: &[T],
    init: T,
    op: Op,
    want: T,
    same: impl Fn(&T, &T) -> bool,
) -> TestResult
where
    T: Builtin<Op> + std::fmt::Debug + PartialEq,
{
    let mut temp = Temp::new(&c.gpu);
    let d_in = c.gpu.upload(input).ctx("upload")?;
    let mut out = c.gpu.upload(&[init, init]).ctx("alloc")?;
    a.reduce(c.gpu.stream(), &d_in, &mut out, init, op, &mut temp).ctx("reduce")?;
    let got = out.to_vec().ctx("read")?;
    check_all_by(&format!("{what}: reduce, n = {}", input.len()), &got, &[want, init], same)
}

fn reduce_builtin(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_reduce_builtin");
    for n in sizes(c) {
        let u: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let want = u.iter().fold(5u32, |x, &y| x.wrapping_add(y));
        check_reduce(c, &a, "sum u32", &u, 5, Sum, want, |x, y| x == y)?;
        let want = u.iter().fold(u32::MAX, |x, &y| x.min(y));
        check_reduce(c, &a, "min u32", &u, u32::MAX, Min, want, |x, y| x == y)?;
        let i: Vec<i64> = (0..n).map(|_| r.random::<i64>() >> 4).collect();
        let want = i.iter().fold(-3i64, |x, &y| x.wrapping_add(y));
        check_reduce(c, &a, "sum i64", &i, -3, Sum, want, |x, y| x == y)?;
        let f = adversarial_f32(&mut r, n, 0.0);
        let want = f.iter().fold(f32::NEG_INFINITY, |x, &y| max_f32(x, y));
        check_reduce(c, &a, "max f32 (±0, ±inf)", &f, f32::NEG_INFINITY, Max, want, same_bits_f32)?;
        // Only zeros of both signs: the minimum is −0.0 wherever it is.
        let z: Vec<f32> = (0..n).map(|k| if k % 97 == 50 { -0.0 } else { 0.0 }).collect();
        let want = z.iter().fold(0.0f32, |x, &y| min_f32(x, y));
        check_reduce(c, &a, "min f32 of ±0", &z, 0.0, Min, want, same_bits_f32)?;
        let f = adversarial_f32(&mut r, n, 0.001);
        let want = f.iter().fold(f32::INFINITY, |x, &y| min_f32(x, y));
        check_reduce(c, &a, "min f32 with NaNs", &f, f32::INFINITY, Min, want, same_bits_f32)?;
        let d: Vec<f64> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
        let want: f64 = d.iter().sum::<f64>() + 0.25;
        let tol = 1e-12 * (n as f64).max(1.0);
        check_reduce(c, &a, "sum f64", &d, 0.25, Sum, want, |x, y| (x - y).abs() <= tol)?;
    }
    Ok(())
}

fn user_type_scan(c: &Ctx) -> TestResult {
    let kern = k::affine::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_user_type_scan");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let id = Affine { a: 1, b: 0 };
    for n in sizes(c) {
        let input: Vec<Affine> = (0..n).map(|_| Affine { a: r.random::<u32>() | 1, b: r.random() }).collect();
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let guard = Affine { a: 0xdead, b: 0xbeef };
        let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
        cohort_algorithms::inclusive_scan(&kern, s, &d_in, &mut out, &mut temp).ctx("inclusive scan")?;
        let want = inclusive_reference(&input, guard, compose);
        check_all(&format!("affine inclusive scan, n = {n}"), &out.to_vec().ctx("read")?, &want)?;
        let start = Affine { a: 3, b: 1 };
        let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
        cohort_algorithms::exclusive_scan(&kern, s, &d_in, &mut out, start, &mut temp).ctx("exclusive scan")?;
        let want = exclusive_reference(&input, start, guard, compose);
        check_all(&format!("affine exclusive scan, n = {n}"), &out.to_vec().ctx("read")?, &want)?;
        // A reduction needs a commutative op (full tiles are read vector-striped); a partial
        // single tile is read blocked and combined in order, so it is exact even for this op.
        if n < TILE {
            let mut one = c.gpu.upload(&[guard]).ctx("alloc")?;
            cohort_algorithms::reduce(&kern, s, &d_in, &mut one, id, &mut temp).ctx("reduce")?;
            let want = input.iter().fold(id, |x, &y| compose(x, y));
            check_all(&format!("affine reduce, n = {n}"), &one.to_vec().ctx("read")?, &[want])?;
        }
    }
    Ok(())
}

/// A reduction of 12-byte elements (which straddle the 16-byte vectors full tiles are read
/// as) over many full tiles: every field's sum exact. The vector path once put elements
/// together from parts of different ones (an argmax over 2^23 elements returned a value as an
/// index's high word on an H200); such types take the blocked path.
fn reduce_straddling(c: &Ctx) -> TestResult {
    let kern = k::sum3::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_reduce_elements_straddling_vectors");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    for n in [TILE, 5 * TILE + 7, c.pick(300 * TILE + 1, 20 * TILE + 1)] {
        // Each field in its own range, so a word moved to another field changes a sum.
        let input: Vec<Sum3> = (0..n)
            .map(|_| Sum3 { a: r.random_range(1..1000), b: r.random_range(1 << 20..1 << 21), c: r.random::<u32>() | 1 })
            .collect();
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let mut one = c.gpu.upload(&[Sum3 { a: 7, b: 7, c: 7 }]).ctx("alloc")?;
        cohort_algorithms::reduce(&kern, s, &d_in, &mut one, Sum3::default(), &mut temp).ctx("reduce")?;
        let want = input.iter().fold(Sum3::default(), |x, &y| sum3(x, y));
        check_all(&format!("12-byte triples: reduce, n = {n}"), &one.to_vec().ctx("read")?, &[want])?;
    }
    Ok(())
}

/// The look-back's wide status slots (a flag word, the aggregate's words, the inclusive
/// prefix's words) at the widest value a scan takes, 32 bytes, with a non-commutative op,
/// over many tiles, several times: a tile that reads a neighbour's aggregate must never get
/// its inclusive prefix instead (or a mix). (On the CPU device the look-back pauses where
/// that race bites; the old one-set-of-words protocol fails `algorithms_scan_builtin` and
/// `algorithms_user_type_scan` there every run, but not this test: a GPU check of 32-byte
/// slots, not a CPU reproducer.)
fn scan_wide_slots(c: &Ctx) -> TestResult {
    let kern = k::mat2::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_scan_wide_slots");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let rounds = c.pick(8, 3);
    let n = c.pick(300 * TILE + 11, 24 * TILE + 11);
    for round in 0..rounds {
        let input: Vec<Mat2> =
            (0..n).map(|_| Mat2 { a: r.random::<u64>() | 1, b: r.random(), c: r.random(), d: r.random() }).collect();
        let d_in = c.gpu.upload(&input).ctx("upload")?;
        let guard = Mat2 { a: 0xdead, b: 0xbeef, c: 0xdead, d: 0xbeef };
        let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
        cohort_algorithms::inclusive_scan(&kern, s, &d_in, &mut out, &mut temp).ctx("inclusive scan")?;
        let want = inclusive_reference(&input, guard, mat_mul);
        check_all(&format!("2×2 u64 matrices: inclusive scan, round {round}, n = {n}"), &out.to_vec().ctx("read")?, &want)?;
        let start = Mat2 { a: 3, b: 1, c: 4, d: 1 };
        let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
        cohort_algorithms::exclusive_scan(&kern, s, &d_in, &mut out, start, &mut temp).ctx("exclusive scan")?;
        let want = exclusive_reference(&input, start, guard, mat_mul);
        check_all(&format!("2×2 u64 matrices: exclusive scan, round {round}, n = {n}"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

fn scan_many_streams(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_scan_many_streams");
    let n = c.pick(3 << 20, 40 * TILE + 3);
    let k = c.pick(16, 4);
    let inputs: Vec<Vec<u32>> = (0..k).map(|_| (0..n).map(|_| r.random_range(0..1000)).collect()).collect();
    let mut jobs = Vec::new();
    for input in &inputs {
        let stream = c.gpu.new_stream().ctx("stream")?;
        let d_in = c.gpu.upload(input).ctx("upload")?;
        let out: DeviceBuffer<u32> = c.gpu.zeroed(n).ctx("alloc")?;
        jobs.push((stream, d_in, out, Temp::new(&c.gpu)));
    }
    // Every scan enqueued before any is waited for: they run concurrently on the GPU.
    for (stream, d_in, out, temp) in &mut jobs {
        a.exclusive_scan(stream, d_in, out, 0, Sum, temp).ctx("scan")?;
    }
    for ((_, _, out, _), input) in jobs.iter().zip(&inputs) {
        let want: Vec<u32> = input
            .iter()
            .scan(0u32, |acc, &x| {
                let e = *acc;
                *acc += x;
                Some(e)
            })
            .collect();
        check_all("a scan among many streams", &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

fn scan_past_2_pow_32(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let n = (1usize << 32) + 1;
    // Values whose running sum wraps, pattern known without storing a reference.
    let input: Vec<u32> = (0..n).map(|i| (i as u32).wrapping_mul(2_654_435_761) >> 20).collect();
    let d_in = c.gpu.upload(&input).ctx("upload")?;
    let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    let mut temp = Temp::new(&c.gpu);
    a.inclusive_scan(c.gpu.stream(), &d_in, &mut out, Sum, &mut temp).ctx("scan")?;
    let got = out.to_vec().ctx("read")?;
    let mut acc = 0u32;
    for (i, (&x, &g)) in input.iter().zip(&got).enumerate() {
        acc = acc.wrapping_add(x);
        ensure(g == acc, || format!("element {i}: got {g}, want {acc}"))?;
    }
    let mut sum = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    a.reduce(c.gpu.stream(), &d_in, &mut sum, 0, Sum, &mut temp).ctx("reduce")?;
    ensure(sum.to_vec().ctx("read")?[0] == acc, || "reduce of 2^32 + 1 elements".into())
}

/// Sizes around the select tiles (4096 four-byte items, 2048 eight-byte ones).
fn select_sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 33, 2047, 2048, 2049, 4095, 4096, 4097, 3 * 4096 + 5, 17 * 4096 + 1];
    v.extend(c.pick(vec![1 << 20, (1 << 22) + 3], vec![40 * 4096 + 7]));
    v
}

/// `select_if`, `partition_if` and `select_flagged` of `input` against the CPU: the selected
/// elements in order, the rejected ones reversed after them, the count, and the output past
/// what the operation writes untouched.
#[allow(clippy::too_many_arguments)]
fn check_select<T>(
    c: &Ctx,
    a: &Algorithms,
    what: &str,
    input: &[T],
    threshold: T,
    flags: &[u8],
    guard: T,
    same: impl Fn(&T, &T) -> bool + Copy,
) -> TestResult
where
    T: SelectBuiltin + PartialOrd + std::fmt::Debug,
{
    let (n, s) = (input.len(), c.gpu.stream());
    let mut temp = Temp::new(&c.gpu);
    let d_in = c.gpu.upload(input).ctx("upload")?;
    let d_flags = c.gpu.upload(flags).ctx("upload flags")?;
    let mut count = c.gpu.upload(&[u64::MAX, u64::MAX]).ctx("alloc")?;
    let selected: Vec<T> = input.iter().copied().filter(|x| *x < threshold).collect();
    // Rejected: not `x < threshold` (NaNs included).
    let rejected: Vec<T> = input.iter().copied().filter(|x| x.partial_cmp(&threshold) != Some(std::cmp::Ordering::Less)).collect();
    // Select-if: the selected ones, then the guard untouched.
    let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
    a.select_if(s, &d_in, LessThan(threshold), &mut out, &mut count, &mut temp).ctx("select_if")?;
    let mut want = selected.clone();
    want.resize(n + 1, guard);
    check_all_by(&format!("{what}: select_if, n = {n}"), &out.to_vec().ctx("read")?, &want, same)?;
    check_all(&format!("{what}: select_if count, n = {n}"), &count.to_vec().ctx("read")?, &[selected.len() as u64, u64::MAX])?;
    // Partition-if: selected in order, rejected reversed; every element written.
    let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
    a.partition_if(s, &d_in, LessThan(threshold), &mut out, &mut count, &mut temp).ctx("partition_if")?;
    let mut want = selected.clone();
    want.extend(rejected.iter().rev());
    want.push(guard);
    check_all_by(&format!("{what}: partition_if, n = {n}"), &out.to_vec().ctx("read")?, &want, same)?;
    check_all(&format!("{what}: partition_if count, n = {n}"), &count.to_vec().ctx("read")?, &[selected.len() as u64, u64::MAX])?;
    // Select-flagged.
    let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
    a.select_flagged(s, &d_in, &d_flags, &mut out, &mut count, &mut temp).ctx("select_flagged")?;
    let mut want: Vec<T> = input.iter().zip(flags).filter(|(_, f)| **f != 0).map(|(x, _)| *x).collect();
    let k = want.len() as u64;
    want.resize(n + 1, guard);
    check_all_by(&format!("{what}: select_flagged, n = {n}"), &out.to_vec().ctx("read")?, &want, same)?;
    check_all(&format!("{what}: select_flagged count, n = {n}"), &count.to_vec().ctx("read")?, &[k, u64::MAX])
}

fn select_partition(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_select_partition");
    for n in select_sizes(c) {
        let u: Vec<u32> = (0..n).map(|_| r.random_range(0..u32::MAX)).collect();
        let flags: Vec<u8> = (0..n).map(|_| if r.random_bool(0.5) { r.random_range(1..=255) } else { 0 }).collect();
        check_select(c, &a, "u32 half", &u, 1 << 31, &flags, 0xdead_beef, |x, y| x == y)?;
        check_select(c, &a, "u32 all selected", &u, u32::MAX, &vec![1; n], 0xdead_beef, |x, y| x == y)?;
        check_select(c, &a, "u32 none selected", &u, 0, &vec![0; n], 0xdead_beef, |x, y| x == y)?;
        check_select(c, &a, "u32 all equal", &vec![7u32; n], 8, &flags, 0xdead_beef, |x, y| x == y)?;
        let w: Vec<u64> = (0..n).map(|_| r.random()).collect();
        check_select(c, &a, "u64 half", &w, 1 << 63, &flags, 0xdead_beef_0bad_f00d, |x, y| x == y)?;
        let f = adversarial_f32(&mut r, n, 0.01);
        check_select(c, &a, "f32 with NaNs", &f, 0.0, &flags, 1234.5, same_bits_f32)?;
    }
    Ok(())
}

fn unique_and_run_length(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_unique_and_run_length");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    for n in select_sizes(c) {
        // Runs of 1 to 12 equal values; a few long runs crossing tiles; all equal.
        let mut runs: Vec<u32> = Vec::with_capacity(n);
        while runs.len() < n {
            let v = r.random_range(0..4u32);
            let len = if r.random_bool(0.01) { r.random_range(1..10_000) } else { r.random_range(1..13) };
            runs.extend(std::iter::repeat_n(v, len.min(n - runs.len())));
        }
        for (what, input) in [("runs", runs), ("all equal", vec![5u32; n]), ("all distinct", (0..n as u32).collect())] {
            let d_in = c.gpu.upload(&input).ctx("upload")?;
            let mut heads: Vec<u32> = Vec::new();
            let mut lens: Vec<u32> = Vec::new();
            for (i, &x) in input.iter().enumerate() {
                if i == 0 || input[i - 1] != x {
                    heads.push(x);
                    lens.push(0);
                }
                *lens.last_mut().expect("a run") += 1;
            }
            let guard = 0xdead_beef_u32;
            let mut count = c.gpu.upload(&[u64::MAX]).ctx("alloc")?;
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            a.unique(s, &d_in, &mut out, &mut count, &mut temp).ctx("unique")?;
            let mut want = heads.clone();
            want.resize(n + 1, guard);
            check_all(&format!("unique ({what}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
            check_all(&format!("unique count ({what}), n = {n}"), &count.to_vec().ctx("read")?, &[heads.len() as u64])?;
            let mut out = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            let mut lengths = c.gpu.upload(&vec![guard; n + 1]).ctx("alloc")?;
            a.run_length_encode(s, &d_in, &mut out, &mut lengths, &mut count, &mut temp).ctx("rle")?;
            check_all(&format!("rle values ({what}), n = {n}"), &out.to_vec().ctx("read")?, &want)?;
            let mut want_lens = lens.clone();
            want_lens.resize(n + 1, guard);
            check_all(&format!("rle lengths ({what}), n = {n}"), &lengths.to_vec().ctx("read")?, &want_lens)?;
            check_all(&format!("rle count ({what}), n = {n}"), &count.to_vec().ctx("read")?, &[heads.len() as u64])?;
        }
        // Floats: NaN never equals itself (a run of its own), -0.0 continues a run of 0.0.
        let f: Vec<f32> = (0..n)
            .map(|i| match (i / 3) % 5 {
                0 => 0.0,
                1 => -0.0,
                2 => f32::NAN,
                3 => 1.5,
                _ => -2.0,
            })
            .collect();
        let d_in = c.gpu.upload(&f).ctx("upload")?;
        let want: Vec<f32> = f.iter().enumerate().filter(|&(i, x)| i == 0 || f[i - 1] != *x).map(|(_, x)| *x).collect();
        let mut count = c.gpu.upload(&[u64::MAX]).ctx("alloc")?;
        let mut out = c.gpu.upload(&vec![7.0f32; n]).ctx("alloc")?;
        a.unique(s, &d_in, &mut out, &mut count, &mut temp).ctx("unique f32")?;
        let got = out.to_vec().ctx("read")?;
        check_all_by(&format!("unique f32 (NaN, ±0), n = {n}"), &got[..want.len()], &want, same_bits_f32)?;
        check_all(&format!("unique f32 count, n = {n}"), &count.to_vec().ctx("read")?, &[want.len() as u64])?;
    }
    Ok(())
}
