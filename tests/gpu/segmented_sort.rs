//! The segmented sort (`Algorithms::segmented_sort_keys` / `segmented_sort_pairs`; CUB's
//! `DeviceSegmentedSort`), against a stable CPU sort of every segment on every element: segments
//! of random lengths (empty ones among them), one segment of everything, every element its own
//! segment, segments that do not cover the input (the rest copied unchanged), few distinct keys
//! (stability), floats with NaNs and ±0.0, descending and bit ranges, empty, one element; and
//! offsets that do not ascend (unspecified values, never a crash or a write outside the outputs).

use cohort_algorithms::{Algorithms, RadixBits, RadixKey, SortBuiltin, Temp};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_segmented_sort_keys_and_pairs", keys_and_pairs),
        gpu_trial("algorithms_segmented_sort_floats_and_bits", floats_and_bits),
        gpu_trial("algorithms_segmented_sort_hostile_offsets", hostile_offsets),
    ]
}

fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 33, 2047, 2048, 2049, 10_000];
    // The CPU device sorts ~10^4 keys a second here (two radix sorts a call): small sizes only.
    v.extend(c.pick(vec![100_003, (1 << 20) + 7, (1 << 22) + 3], vec![]));
    v
}

/// Offset patterns over `n` elements: `(name, offsets)`.
fn offset_patterns(r: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<u64>)> {
    let random = |r: &mut StdRng, max: usize| {
        let mut o = vec![0u64];
        let mut at = 0usize;
        while at < n {
            at = (at + r.random_range(0..=max)).min(n);
            o.push(at as u64);
        }
        o
    };
    let inner = if n >= 4 { vec![(n / 4) as u64, (n / 3) as u64, (n / 2) as u64, (3 * n / 4) as u64] } else { vec![0, n as u64] };
    vec![
        ("random lengths up to 40 (some empty)", random(r, 40)),
        ("random lengths up to 5000", random(r, 5000)),
        ("one segment", vec![0, n as u64]),
        ("every element its own", (0..=n as u64).collect()),
        ("not covering the input", inner),
        ("no segments", vec![0]),
    ]
}

/// The CPU's segmented sort of `keys` (with `values`): each segment stably by `key(x)` (the
/// radix order, complemented when descending), the rest unchanged.
fn reference<K: Copy, V: Copy>(keys: &[K], values: &[V], offsets: &[u64], rank: impl Fn(&K) -> u64) -> (Vec<K>, Vec<V>) {
    let (mut k, mut v) = (keys.to_vec(), values.to_vec());
    let n = keys.len() as u64;
    for w in offsets.windows(2) {
        let (b, e) = (w[0].min(n) as usize, w[1].min(n) as usize);
        if b < e {
            let mut seg: Vec<(K, V)> = keys[b..e].iter().copied().zip(values[b..e].iter().copied()).collect();
            seg.sort_by_key(|p| rank(&p.0));
            for (i, (x, y)) in seg.into_iter().enumerate() {
                k[b + i] = x;
                v[b + i] = y;
            }
        }
    }
    (k, v)
}

/// The radix rank of `x` by `bits` (the bits in range, complemented when descending).
fn rank_of<K: RadixKey>(x: &K, bits: RadixBits) -> u64 {
    let (b, e) = (bits.begin.min(64), bits.end.min(K::BITS).max(bits.begin.min(64)));
    let w = e - b;
    let d = if w == 0 { 0 } else { (x.to_radix() >> b) & (u64::MAX >> (64 - w)) };
    if bits.descending { !d } else { d }
}

#[allow(clippy::too_many_arguments)]
fn check<K>(c: &Ctx, a: &Algorithms, temp: &mut Temp, what: &str, keys: &[K], offsets: &[u64], bits: RadixBits, same: impl Fn(&K, &K) -> bool) -> TestResult
where
    K: SortBuiltin + std::fmt::Debug,
{
    let n = keys.len();
    let s = c.gpu.stream();
    let values: Vec<u32> = (0..n as u32).collect();
    let (want_k, want_v) = reference(keys, &values, offsets, |x| rank_of(x, bits));
    let d_keys = c.gpu.upload(keys).ctx("upload")?;
    let d_off = c.gpu.upload(offsets).ctx("upload")?;
    let mut out = c.gpu.upload(keys).ctx("upload")?;
    a.segmented_sort_keys(s, &d_keys, &mut out, &d_off, bits, temp).ctx("segmented sort keys")?;
    cohort_tests::check_all_by(&format!("{what}: keys, n = {n}"), &out.to_vec().ctx("read")?, &want_k, &same)?;
    let d_vals = c.gpu.upload(&values).ctx("upload")?;
    let mut out_k = c.gpu.upload(keys).ctx("upload")?;
    let mut out_v = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
    a.segmented_sort_pairs(s, &d_keys, &mut out_k, &d_vals, &mut out_v, &d_off, bits, temp).ctx("segmented sort pairs")?;
    cohort_tests::check_all_by(&format!("{what}: pairs' keys, n = {n}"), &out_k.to_vec().ctx("read")?, &want_k, &same)?;
    check_all(&format!("{what}: pairs' values (stable), n = {n}"), &out_v.to_vec().ctx("read")?, &want_v)
}

fn keys_and_pairs(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_segmented_sort_keys_and_pairs");
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (name, offsets) in offset_patterns(&mut r, n) {
            let keys: Vec<u32> = (0..n).map(|_| r.random()).collect();
            check(c, &a, &mut temp, &format!("u32 keys, {name}"), &keys, &offsets, RadixBits::all::<u32>(), u32::eq)?;
            let few: Vec<u64> = (0..n).map(|_| r.random_range(0..4u64) << 40).collect();
            check(c, &a, &mut temp, &format!("u64 keys of 4 values, {name}"), &few, &offsets, RadixBits::all::<u64>(), u64::eq)?;
        }
    }
    Ok(())
}

fn floats_and_bits(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_segmented_sort_floats_and_bits");
    let mut temp = Temp::new(&c.gpu);
    let specials = [f32::NAN, -f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY];
    let same = |x: &f32, y: &f32| x.to_bits() == y.to_bits();
    for n in [1usize, 100, 5000, c.pick(1 << 20, 50_000)] {
        let keys: Vec<f32> = (0..n)
            .map(|_| if r.random_range(0..8) == 0 { specials[r.random_range(0..specials.len())] } else { r.random_range(-100.0..100.0) })
            .collect();
        let offsets: Vec<u64> = (0..=n.div_ceil(37)).map(|i| (i * 37).min(n) as u64).collect();
        for bits in [RadixBits::all::<f32>(), RadixBits { descending: true, ..RadixBits::all::<f32>() }] {
            check(c, &a, &mut temp, &format!("f32 keys, descending {}", bits.descending), &keys, &offsets, bits, same)?;
        }
        let ints: Vec<i64> = (0..n).map(|_| r.random_range(-1000..1000)).collect();
        let bits = RadixBits { begin: 4, end: 9, descending: false };
        check(c, &a, &mut temp, "i64 keys by bits 4..9", &ints, &offsets, bits, i64::eq)?;
    }
    Ok(())
}

/// Offsets that do not ascend, that pass the end, that repeat: the call returns, the outputs
/// hold some permutation's values, and a proper sort afterwards on the same storage is right.
fn hostile_offsets(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_segmented_sort_hostile_offsets");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let n = 5000;
    let keys: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d_keys = c.gpu.upload(&keys).ctx("upload")?;
    for offsets in [
        vec![4000u64, 10, 3000, 0, u64::MAX, 7],
        vec![u64::MAX, u64::MAX],
        (0..100).map(|_| r.random_range(0..2 * n as u64)).collect(),
    ] {
        let d_off = c.gpu.upload(&offsets).ctx("upload")?;
        let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
        a.segmented_sort_keys(s, &d_keys, &mut out, &d_off, RadixBits::all::<u32>(), &mut temp).ctx("hostile offsets")?;
        let got = out.to_vec().ctx("read")?;
        let set: std::collections::HashSet<u32> = keys.iter().copied().collect();
        ensure(got.iter().all(|x| set.contains(x)), || "an output key that is no input key".into())?;
    }
    let offsets: Vec<u64> = vec![0, 1000, 1000, 4321, n as u64];
    check(c, &a, &mut temp, "after hostile offsets", &keys, &offsets, RadixBits::all::<u32>(), u32::eq)
}
