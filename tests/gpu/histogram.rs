//! `cohort::block::BlockHistogram` and the device histograms (`Algorithms::histogram_even`,
//! `histogram_range`) against CPU references: every bin of every sample type, bins at the
//! edges (a sample equal to `upper` or below `lower` is not counted, nor a NaN), every even
//! binning mode (shift, 32- and 64-bit division, multiply-divide, float scale), sizes across
//! tile and grid boundaries, skewed and all-equal inputs, more bins than shared memory holds,
//! levels staged in shared memory or not, and the arguments refused.

use cohort_algorithms::{Algorithms, HistogramBuiltin};
use cohort_runtime::LaunchConfig;
use cohort_test_kernels::algorithms as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_block_histogram", block_histogram),
        gpu_trial("algorithms_histogram_even", histogram_even),
        gpu_trial("algorithms_histogram_range", histogram_range),
        gpu_trial("algorithms_histogram_errors", histogram_errors),
    ]
}

/// Sizes across the tiles (256 threads × 64 bytes), the grid (a few blocks per SM) and one
/// large size on the GPU.
fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 1000, 4095, 4096, 4097, 16 * 1024 + 3];
    v.extend(c.pick(vec![(3 << 20) + 7, 1 << 22], vec![70_001]));
    v
}

/// A value the histogram must leave alone past its bins.
const GUARD: u32 = 0xdead_beef;

/// The CPU's even histogram of integer samples: `⌊(x − lower) · bins / (upper − lower)⌋`
/// exactly (in `i128`), `GUARD`s after the bins.
fn even_ref_int(samples: &[i64], bins: usize, lower: i64, upper: i64, extra: usize) -> Vec<u32> {
    let mut h = vec![0u32; bins];
    for &x in samples {
        if x >= lower && x < upper {
            let b = (i128::from(x - lower) * bins as i128 / i128::from(upper - lower)) as usize;
            h[b] = h[b].wrapping_add(1);
        }
    }
    h.extend(std::iter::repeat_n(GUARD, extra));
    h
}

/// The CPU's even histogram of `f32` samples, as documented: `⌊(x − lower) · scale⌋` in
/// `f32` with `scale = bins / (upper − lower)` rounded once, at most the last bin.
fn even_ref_f32(samples: &[f32], bins: usize, lower: f32, upper: f32, extra: usize) -> Vec<u32> {
    let scale = bins as f32 / (upper - lower);
    let mut h = vec![0u32; bins];
    for &x in samples {
        if x >= lower && x < upper {
            let b = (((x - lower) * scale) as usize).min(bins - 1);
            h[b] += 1;
        }
    }
    h.extend(std::iter::repeat_n(GUARD, extra));
    h
}

/// The CPU's histogram over levels (`levels[i] <= x < levels[i + 1]`).
fn range_ref<L: PartialOrd + Copy>(samples: &[L], levels: &[L], extra: usize) -> Vec<u32> {
    let mut h = vec![0u32; levels.len() - 1];
    for &x in samples {
        for i in 0..levels.len() - 1 {
            if x >= levels[i] && x < levels[i + 1] {
                h[i] += 1;
                break;
            }
        }
    }
    h.extend(std::iter::repeat_n(GUARD, extra));
    h
}

/// A faster `range_ref` for many ascending levels (binary search).
fn range_ref_sorted<L: PartialOrd + Copy>(samples: &[L], levels: &[L], extra: usize) -> Vec<u32> {
    let mut h = vec![0u32; levels.len() - 1];
    for &x in samples {
        if x >= levels[0] && x < levels[levels.len() - 1] {
            let i = levels.partition_point(|l| *l <= x) - 1;
            h[i] += 1;
        }
    }
    h.extend(std::iter::repeat_n(GUARD, extra));
    h
}

/// Runs an even histogram of `samples` into `bins` bins (and 3 guard counts).
fn run_even<T: HistogramBuiltin>(
    c: &Ctx,
    a: &Algorithms,
    samples: &[T],
    bins: usize,
    lower: T::Level,
    upper: T::Level,
) -> Result<Vec<u32>, String> {
    let d = c.gpu.upload(samples).ctx("upload")?;
    let mut h = c.gpu.upload(&vec![GUARD; bins + 3]).ctx("alloc")?;
    a.histogram_even(c.gpu.stream(), &d, &mut h, bins + 1, lower, upper).ctx("histogram_even")?;
    h.to_vec().ctx("read")
}

fn block_histogram(c: &Ctx) -> TestResult {
    let f = k::block_histogram_mod::load(&c.tests).ctx("load")?;
    let mut r = rng("algorithms_block_histogram");
    let bs = 128usize;
    // (samples, modulus, bins, copies, blocks): one copy per warp, fewer, a single one;
    // samples in bins past `bins` (not counted); all in one bin.
    for (n, modulus, bins, copies, blocks) in [
        (1usize, 7u32, 7usize, 4usize, 1usize),
        (5000, 300, 256, 4, 3),
        (5000, 256, 256, 2, 5),
        (777, 40, 37, 1, 2),
        (10_000, 1, 16, 4, 4),
    ] {
        let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let d = c.gpu.upload(&data).ctx("upload")?;
        let mut hist = c.gpu.upload(&vec![0u32; bins + 1]).ctx("alloc")?;
        let mut probe = c.gpu.upload(&vec![GUARD; blocks]).ctx("alloc")?;
        let counters = cohort::block::BlockHistogram::counters(bins, copies);
        let cfg = LaunchConfig::new(blocks as u32, bs as u32).with_shared_mem((4 * counters) as u32);
        f.launch(c.gpu.stream(), cfg, &d, modulus, bins as u32, counters as u32, hist.slice_mut(..bins), &mut probe)
            .ctx("launch")?;
        let mut want = vec![0u32; bins + 1];
        let mut want_probe = vec![0u32; blocks];
        let total = blocks * bs;
        for (i, &x) in data.iter().enumerate() {
            let b = (x % modulus) as usize;
            let block = (i % total) / bs;
            if b < bins {
                want[b] += 1;
                if b == block % bins {
                    want_probe[block] += 1;
                }
            }
        }
        let what = format!("block histogram, n = {n}, {bins} bins mod {modulus}, {copies} copies, {blocks} blocks");
        check_all(&what, &hist.to_vec().ctx("read")?, &want)?;
        check_all(&format!("{what}: counts()"), &probe.to_vec().ctx("read")?, &want_probe)?;
    }
    // Too few counters for the bins (no room for the spare): the kernel panics, an `Err` (on
    // the CPU device; a GPU trap would end this process's context, so not there).
    if c.is_cpu() {
        let d = c.gpu.upload(&[1u32; 100]).ctx("upload")?;
        let mut hist = c.gpu.zeroed::<u32>(16).ctx("alloc")?;
        let mut probe = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
        let cfg = LaunchConfig::new(1, bs as u32).with_shared_mem(4 * 16);
        let s = c.gpu.new_stream().ctx("stream")?;
        let r = f.launch(&s, cfg, &d, 16, 16, 16, hist.slice_mut(..), &mut probe).and_then(|()| s.synchronize());
        let e = r.err().ok_or("16 counters for 16 bins were accepted")?;
        ensure(e.to_string().contains("fewer than bins + 1 counters"), || format!("unexpected error: {e}"))?;
    }
    Ok(())
}

fn histogram_even(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_histogram_even");
    for n in sizes(c) {
        // u8: every value its own bin (shift by 0); 7 bins of [3, 250) (multiply-divide);
        // 13 bins of width 5 over [0, 65) (32-bit division); everything in one bin.
        let u: Vec<u8> = (0..n).map(|_| r.random()).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        for (bins, lo, hi) in [(256usize, 0i64, 256i64), (7, 3, 250), (13, 0, 65), (1, -5, 1000)] {
            let want = even_ref_int(&wide, bins, lo, hi, 3);
            let got = run_even(c, &a, &u, bins, lo, hi)?;
            check_all(&format!("u8 even, n = {n}, {bins} bins of [{lo}, {hi})"), &got, &want)?;
        }
        let same = vec![200u8; n];
        let want = even_ref_int(&vec![200; n], 256, 0, 256, 3);
        check_all(&format!("u8 all equal, n = {n}"), &run_even(c, &a, &same, 256, 0, 256)?, &want)?;
        // u16: 1000 bins of [-100, 60000) (multiply-divide), 64 of [0, 65536) (shift 10).
        let u: Vec<u16> = (0..n).map(|_| r.random()).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        for (bins, lo, hi) in [(1000usize, -100i64, 60_000i64), (64, 0, 65_536)] {
            let want = even_ref_int(&wide, bins, lo, hi, 3);
            check_all(&format!("u16 even, n = {n}, {bins} bins"), &run_even(c, &a, &u, bins, lo, hi)?, &want)?;
        }
        // u32: the bench's case (256 bins of [0, 2^24), a shift; most samples above), 300 of
        // [0, 2^32) (multiply-divide), 3 of width 2^31 + 1 (64-bit division: the range
        // exceeds 2^32), and more bins than shared memory holds (global atomics).
        let u: Vec<u32> = (0..n).map(|i| if i % 2 == 0 { r.random::<u32>() >> 8 } else { r.random() }).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        for (bins, lo, hi) in [(256usize, 0i64, 1i64 << 24), (300, 0, 1 << 32), (3, 0, 3 * ((1 << 31) + 1))] {
            let want = even_ref_int(&wide, bins, lo, hi, 3);
            check_all(&format!("u32 even, n = {n}, {bins} bins of [{lo}, {hi})"), &run_even(c, &a, &u, bins, lo, hi)?, &want)?;
        }
        let small: Vec<u32> = (0..n).map(|_| r.random_range(0..25_000)).collect();
        let wide: Vec<i64> = small.iter().map(|&x| i64::from(x)).collect();
        let want = even_ref_int(&wide, 20_000, 0, 20_000, 3);
        check_all(&format!("u32 even, n = {n}, 20000 bins (global)"), &run_even(c, &a, &small, 20_000, 0, 20_000)?, &want)?;
        // i32: 100 bins of width 20 over [-1000, 1000), samples on both sides and on the edges.
        let edges = [-1001, -1000, -999, 0, 999, 1000, 1001, i32::MIN, i32::MAX];
        let u: Vec<i32> =
            (0..n).map(|i| if i % 5 == 0 { edges[i / 5 % edges.len()] } else { r.random_range(-1500..1500) }).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        for (bins, lo, hi) in [(100usize, -1000i64, 1000i64), (7, i64::from(i32::MIN), i64::from(i32::MAX) + 1)] {
            let want = even_ref_int(&wide, bins, lo, hi, 3);
            check_all(&format!("i32 even, n = {n}, {bins} bins of [{lo}, {hi})"), &run_even(c, &a, &u, bins, lo, hi)?, &want)?;
        }
        // f32: 64 bins of [-1, 3) (scale 16), 10 of [0.1, 0.7) (an inexact scale); NaNs, ±inf,
        // ±0, the bounds and the float just below `upper`.
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, -1.0, 3.0, 0.1, 0.7, 3.0f32.next_down(), 0.7f32.next_down()];
        let f: Vec<f32> = (0..n)
            .map(|i| if i % 7 == 0 { specials[i / 7 % specials.len()] } else { r.random_range(-2.0f32..4.0) })
            .collect();
        for (bins, lo, hi) in [(64usize, -1.0f32, 3.0f32), (10, 0.1, 0.7)] {
            let want = even_ref_f32(&f, bins, lo, hi, 3);
            let got = run_even(c, &a, &f, bins, lo, hi)?;
            check_all(&format!("f32 even, n = {n}, {bins} bins of [{lo}, {hi})"), &got, &want)?;
        }
    }
    Ok(())
}

fn histogram_range(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_histogram_range");
    let s = c.gpu.stream();
    for n in sizes(c) {
        // u8 with uneven levels (an empty bin [10, 10) included).
        let u: Vec<u8> = (0..n).map(|_| r.random()).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        let levels: Vec<i64> = vec![0, 10, 10, 11, 50, 200, 256];
        let d = c.gpu.upload(&u).ctx("upload")?;
        let dl = c.gpu.upload(&levels).ctx("upload")?;
        let mut h = c.gpu.upload(&vec![GUARD; levels.len() + 2]).ctx("alloc")?;
        a.histogram_range(s, &d, &mut h, &dl).ctx("histogram_range")?;
        check_all(&format!("u8 range, n = {n}"), &h.to_vec().ctx("read")?, &range_ref(&wide, &levels, 3))?;
        // f32 with NaNs and infinities among the samples, levels from -inf.
        let f: Vec<f32> = (0..n)
            .map(|i| match i % 50 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => 2.5,
                _ => r.random_range(-10.0f32..10.0),
            })
            .collect();
        let levels: Vec<f32> = vec![f32::NEG_INFINITY, -5.0, -0.0, 0.5, 2.5, 9.0];
        let d = c.gpu.upload(&f).ctx("upload")?;
        let dl = c.gpu.upload(&levels).ctx("upload")?;
        let mut h = c.gpu.upload(&vec![GUARD; levels.len() + 2]).ctx("alloc")?;
        a.histogram_range(s, &d, &mut h, &dl).ctx("histogram_range")?;
        check_all(&format!("f32 range, n = {n}"), &h.to_vec().ctx("read")?, &range_ref(&f, &levels, 3))?;
        // i32 with many levels: staged with 8 / 1 counter copies, not staged, global atomics.
        let u: Vec<i32> = (0..n).map(|_| r.random_range(-5000..60_000)).collect();
        let wide: Vec<i64> = u.iter().map(|&x| i64::from(x)).collect();
        for count in [1000usize, 2900, 10_000, 20_000] {
            let levels: Vec<i64> = (0..count as i64).map(|i| i * 3 - 7).collect();
            let d = c.gpu.upload(&u).ctx("upload")?;
            let dl = c.gpu.upload(&levels).ctx("upload")?;
            let mut h = c.gpu.upload(&vec![GUARD; count + 2]).ctx("alloc")?;
            a.histogram_range(s, &d, &mut h, &dl).ctx("histogram_range")?;
            let want = range_ref_sorted(&wide, &levels, 3);
            check_all(&format!("i32 range, n = {n}, {count} levels"), &h.to_vec().ctx("read")?, &want)?;
        }
        // f32 with 5000 levels (staged, one copy of the counters).
        let levels: Vec<f32> = (0..5000).map(|i| i as f32 * 0.004 - 10.0).collect();
        let d = c.gpu.upload(&f).ctx("upload")?;
        let dl = c.gpu.upload(&levels).ctx("upload")?;
        let mut h = c.gpu.upload(&vec![GUARD; 5002]).ctx("alloc")?;
        a.histogram_range(s, &d, &mut h, &dl).ctx("histogram_range")?;
        check_all(&format!("f32 range, n = {n}, 5000 levels"), &h.to_vec().ctx("read")?, &range_ref_sorted(&f, &levels, 3))?;
    }
    // Levels that do not ascend: some bins, never out of bounds; every count lands in a bin.
    let u: Vec<u32> = (0..10_000).map(|_| r.random_range(0..100)).collect();
    let levels: Vec<i64> = vec![0, 90, 10, 50, 20, 100];
    let d = c.gpu.upload(&u).ctx("upload")?;
    let dl = c.gpu.upload(&levels).ctx("upload")?;
    let mut h = c.gpu.upload(&[GUARD; 8]).ctx("alloc")?;
    a.histogram_range(s, &d, &mut h, &dl).ctx("histogram_range")?;
    let got = h.to_vec().ctx("read")?;
    ensure(got[5..] == [GUARD; 3], || format!("unsorted levels: the guards changed: {got:?}"))?;
    ensure(got[..5].iter().map(|&x| u64::from(x)).sum::<u64>() == 10_000, || {
        format!("unsorted levels: {got:?} does not count every sample in [0, 100) once")
    })
}

fn histogram_errors(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let s = c.gpu.stream();
    let d = c.gpu.upload(&[1u32, 2, 3]).ctx("upload")?;
    let mut h = c.gpu.upload(&[GUARD; 4]).ctx("alloc")?;
    let refused = |r: cohort_runtime::Result<()>, what: &str| ensure(r.is_err(), || format!("{what}: accepted"));
    refused(a.histogram_even(s, &d, &mut h, 1, 0, 10), "one level")?;
    refused(a.histogram_even(s, &d, &mut h, 0, 0, 10), "no level")?;
    refused(a.histogram_even(s, &d, &mut h, 6, 0, 10), "more bins than counts")?;
    refused(a.histogram_even(s, &d, &mut h, 3, 10, 10), "lower == upper")?;
    refused(a.histogram_even(s, &d, &mut h, 3, 10, 0), "lower > upper")?;
    refused(a.histogram_even(s, &d, &mut h, 5, i64::MIN, i64::MAX), "a range times the bins past 2^64")?;
    let f = c.gpu.upload(&[1.0f32]).ctx("upload")?;
    refused(a.histogram_even(s, &f, &mut h, 3, 0.0, f32::INFINITY), "infinite upper")?;
    refused(a.histogram_even(s, &f, &mut h, 3, f32::NAN, 1.0), "NaN lower")?;
    refused(a.histogram_even(s, &f, &mut h, 3, -3e38, 3e38), "a float range that overflows")?;
    let one = c.gpu.upload(&[0i64]).ctx("upload")?;
    refused(a.histogram_range(s, &d, &mut h, &one), "one range level")?;
    let many = c.gpu.upload(&[0i64; 9]).ctx("upload")?;
    refused(a.histogram_range(s, &d, &mut h, &many), "more range bins than counts")?;
    check_all("the refused calls left the histogram alone", &h.to_vec().ctx("read")?, &[GUARD; 4])
}
