//! Radix sort: `cohort::block::radix_sort_keys` / `radix_sort_pairs` (a tile in a kernel of
//! its own) and `Algorithms::radix_sort_keys` / `radix_sort_pairs` (device-wide), against a
//! stable CPU sort by the same bits, every element checked bit for bit (keys compared by
//! their twiddled bits, so `-0.0`, `+0.0` and NaN payloads must land exactly): random,
//! all-equal, sorted, reverse sorted, few distinct keys; empty, one element, sizes around
//! tiles; floats with NaN, ±0.0, ±inf; descending; bit ranges; pairs carrying the original
//! indices (stability).

use cohort::DeviceCopy;
use cohort_algorithms::{Algorithms, RadixBits, RadixKey, SortBuiltin, Temp};
use cohort_runtime::LaunchConfig;
use cohort_test_kernels::algorithms::{self as k, ITEMS};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("radix_sort_block_tiles", block_tiles),
        gpu_trial("radix_sort_keys_u32", keys_u32),
        gpu_trial("radix_sort_keys_all_types", keys_all_types),
        gpu_trial("radix_sort_floats_nan_zero_inf", floats_special),
        gpu_trial("radix_sort_pairs_stable", pairs_stable),
        gpu_trial("radix_sort_bit_ranges", bit_ranges),
        gpu_trial("radix_sort_many_streams", many_streams),
        gpu_trial("radix_sort_onesweep_look_back", onesweep_look_back),
        gpu_only_trial(
            "radix_sort_past_2_pow_32",
            "2^32 + 1 keys (34 GB of device memory); run with --include-ignored on a big GPU",
            past_2_pow_32,
        )
        .with_ignored_flag(true),
    ]
}

/// Elements per tile of the device sort (256 threads × 8 items).
const TILE: usize = 2048;

/// Sizes around tile boundaries, and several tiles per block on the GPU (1024 blocks at most).
fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 3, 31, TILE - 1, TILE, TILE + 1, 3 * TILE + 5];
    v.extend(c.pick(vec![1 << 16, (1 << 20) + 3, 1 << 22, 1100 * TILE + 7, (1 << 24) + 1], vec![]));
    v
}

/// The sort key of `k` under `bits`: bits `begin .. end` of the twiddled key.
fn digit_key<K: RadixKey>(k: K, bits: RadixBits) -> u64 {
    let (b, e) = bits.clamped::<K>();
    if b == e {
        return 0;
    }
    let mask = if e - b == 64 { u64::MAX } else { (1u64 << (e - b)) - 1 };
    (k.to_radix() >> b) & mask
}

/// The stable sort of `(key, value)` by `bits` (descending: reverse key order, ties in input
/// order).
fn reference<K: RadixKey, V: Copy>(keys: &[K], values: &[V], bits: RadixBits) -> (Vec<K>, Vec<V>) {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (digit_key(keys[a], bits), digit_key(keys[b], bits));
        if bits.descending { y.cmp(&x) } else { x.cmp(&y) }
    });
    (idx.iter().map(|&i| keys[i]).collect(), idx.iter().map(|&i| values[i]).collect())
}

/// Keys as their twiddled bits: a bit-exact comparison (`-0.0 != +0.0`, NaNs by payload).
fn radix_of<K: RadixKey>(v: &[K]) -> Vec<u64> {
    v.iter().map(|k| k.to_radix()).collect()
}

/// Distributions of `n` keys made from random `u64`s by `from`.
fn inputs<K: RadixKey>(r: &mut StdRng, n: usize, from: fn(u64) -> K) -> Vec<(&'static str, Vec<K>)> {
    let random: Vec<K> = (0..n).map(|_| from(r.random())).collect();
    let equal = vec![from(r.random()); n];
    let mut sorted = random.clone();
    sorted.sort_by_key(|k| k.to_radix());
    let mut reversed = sorted.clone();
    reversed.reverse();
    let pool: Vec<K> = (0..3).map(|_| from(r.random())).collect();
    let few: Vec<K> = (0..n).map(|_| pool[r.random_range(0..3)]).collect();
    vec![("random", random), ("all-equal", equal), ("sorted", sorted), ("reverse sorted", reversed), ("few distinct", few)]
}

fn block_tiles(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_block_tiles");
    let bs = 128usize;
    let tile = bs * ITEMS;
    let f32k = k::block_radix_sort_f32::load(&c.tests).ctx("load")?;
    let u32k = k::block_radix_sort_u32::load(&c.tests).ctx("load")?;
    let i64k = k::block_radix_sort_i64::load(&c.tests).ctx("load")?;
    let ranges = [
        RadixBits { begin: 0, end: 64, descending: false },
        RadixBits { begin: 0, end: 64, descending: true },
        RadixBits { begin: 3, end: 14, descending: false },
        RadixBits { begin: 5, end: 6, descending: true },
        RadixBits { begin: 7, end: 7, descending: false },
    ];
    macro_rules! run {
        ($kern:expr, $t:ty, $from:expr) => {
            for n in [1usize, 5, tile - 1, tile, tile + 1, 3 * tile + 7] {
                for (what, keys) in inputs::<$t>(&mut r, n, $from) {
                    for bits in ranges {
                        for pairs in [false, true] {
                            let values: Vec<u32> = (0..n as u32).collect();
                            let d_keys = c.gpu.upload(&keys).ctx("upload")?;
                            let d_values = c.gpu.upload(&values).ctx("upload")?;
                            let mut k_out = c.gpu.upload(&keys).ctx("alloc")?;
                            let mut v_out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
                            let tiles = n.div_ceil(tile);
                            let smem = tile * (size_of::<$t>() + 4);
                            let cfg = LaunchConfig::new(tiles.min(3) as u32, bs as u32).with_shared_mem(smem as u32);
                            $kern
                                .launch(
                                    c.gpu.stream(),
                                    cfg,
                                    &d_keys,
                                    &d_values,
                                    &mut k_out,
                                    &mut v_out,
                                    bits.begin,
                                    bits.end,
                                    bits.descending as u32,
                                    pairs as u32,
                                )
                                .ctx("launch")?;
                            let (got_k, got_v) = (k_out.to_vec().ctx("keys")?, v_out.to_vec().ctx("values")?);
                            let mut want_k = Vec::with_capacity(n);
                            let mut want_v = Vec::with_capacity(n);
                            for t in 0..tiles {
                                let span = t * tile..((t + 1) * tile).min(n);
                                let (wk, wv) = reference(&keys[span.clone()], &values[span], bits);
                                want_k.extend(wk);
                                want_v.extend(wv);
                            }
                            let label = format!(
                                "block radix sort {} ({what}, n = {n}, {bits:?}, pairs = {pairs})",
                                stringify!($t)
                            );
                            check_all(&format!("{label}: keys"), &radix_of(&got_k), &radix_of(&want_k))?;
                            if pairs {
                                check_all(&format!("{label}: values"), &got_v, &want_v)?;
                            } else {
                                check_all(&format!("{label}: values untouched"), &got_v, &vec![u32::MAX; n])?;
                            }
                        }
                    }
                }
            }
        };
    }
    run!(u32k, u32, |x| x as u32);
    run!(f32k, f32, special_f32);
    run!(i64k, i64, |x| x as i64);
    Ok(())
}

/// Mostly random floats, often a special value (NaNs of both signs and payloads, ±0.0, ±inf,
/// subnormals).
fn special_f32(x: u64) -> f32 {
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 2.0,
        -f32::MIN_POSITIVE / 2.0,
        1.0,
        -1.0,
    ];
    if x % 3 == 0 { specials[(x >> 8) as usize % specials.len()] } else { f32::from_bits((x >> 16) as u32) }
}

fn special_f64(x: u64) -> f64 {
    let specials = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE / 2.0,
        -1.5,
    ];
    if x % 3 == 0 { specials[(x >> 8) as usize % specials.len()] } else { f64::from_bits(x.rotate_left(17)) }
}

/// Sorts `keys` (and indices as values when `pairs`) on the device and checks them against
/// the reference.
fn check_sort<K: SortBuiltin + std::fmt::Debug>(
    c: &Ctx,
    a: &Algorithms,
    temp: &mut Temp,
    what: &str,
    keys: &[K],
    bits: RadixBits,
    pairs: bool,
) -> TestResult {
    let n = keys.len();
    let mut d_keys = c.gpu.upload(keys).ctx("upload")?;
    let label = format!("{what} ({}, n = {n}, {bits:?})", std::any::type_name::<K>());
    if pairs {
        let values: Vec<u32> = (0..n as u32).collect();
        let mut d_values = c.gpu.upload(&values).ctx("upload")?;
        a.radix_sort_pairs(c.gpu.stream(), &mut d_keys, &mut d_values, bits, temp).ctx("sort pairs")?;
        let (wk, wv) = reference(keys, &values, bits);
        check_all(&format!("{label}: keys"), &radix_of(&d_keys.to_vec().ctx("keys")?), &radix_of(&wk))?;
        check_all(&format!("{label}: values (original indices: stable)"), &d_values.to_vec().ctx("values")?, &wv)
    } else {
        a.radix_sort_keys(c.gpu.stream(), &mut d_keys, bits, temp).ctx("sort keys")?;
        let (wk, _) = reference(keys, &vec![(); n], bits);
        check_all(&format!("{label}: keys"), &radix_of(&d_keys.to_vec().ctx("keys")?), &radix_of(&wk))
    }
}

fn keys_u32(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_keys_u32");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (what, keys) in inputs::<u32>(&mut r, n, |x| x as u32) {
            check_sort(c, &a, &mut temp, what, &keys, RadixBits::all::<u32>(), false)?;
            check_sort(c, &a, &mut temp, what, &keys, RadixBits::all_descending::<u32>(), false)?;
        }
    }
    Ok(())
}

fn keys_all_types(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_keys_all_types");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    // On the CPU device two tiles (two blocks) at most: the u32 tests cover more tiles.
    for n in [0, 1, TILE + 1, c.pick((1 << 20) + 5, 17)] {
        for desc in [false, true] {
            let bits = |b: u32| RadixBits { begin: 0, end: b, descending: desc };
            for (what, keys) in inputs::<u64>(&mut r, n, |x| x) {
                check_sort(c, &a, &mut temp, what, &keys, bits(64), false)?;
            }
            for (what, keys) in inputs::<i32>(&mut r, n, |x| x as i32) {
                check_sort(c, &a, &mut temp, what, &keys, bits(32), false)?;
            }
            for (what, keys) in inputs::<i64>(&mut r, n, |x| x as i64) {
                check_sort(c, &a, &mut temp, what, &keys, bits(64), false)?;
            }
            for (what, keys) in inputs::<f32>(&mut r, n, special_f32) {
                check_sort(c, &a, &mut temp, what, &keys, bits(32), false)?;
            }
            for (what, keys) in inputs::<f64>(&mut r, n, special_f64) {
                check_sort(c, &a, &mut temp, what, &keys, bits(64), false)?;
            }
        }
    }
    Ok(())
}

fn floats_special(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    // Every special value many times, in an order that is not sorted; the documented order.
    let n = 3 * TILE + 1;
    let keys: Vec<f32> = (0..n as u64).map(|i| special_f32(i.wrapping_mul(0x9e37_79b9))).collect();
    check_sort(c, &a, &mut temp, "special floats", &keys, RadixBits::all::<f32>(), true)?;
    check_sort(c, &a, &mut temp, "special floats", &keys, RadixBits::all_descending::<f32>(), true)?;
    let mut d = c.gpu.upload(&[f32::NAN, 1.0, -0.0, f32::NEG_INFINITY, 0.0, -f32::NAN, f32::INFINITY, -1.0]).ctx("up")?;
    a.radix_sort_keys(c.gpu.stream(), &mut d, RadixBits::all::<f32>(), &mut temp).ctx("sort")?;
    let got: Vec<u32> = d.to_vec().ctx("keys")?.iter().map(|x| x.to_bits()).collect();
    let want: Vec<u32> = [-f32::NAN, f32::NEG_INFINITY, -1.0, -0.0, 0.0, 1.0, f32::INFINITY, f32::NAN]
        .iter()
        .map(|x| x.to_bits())
        .collect();
    check_all("the documented float order (-NaN < -inf < -1 < -0.0 < +0.0 < 1 < inf < NaN)", &got, &want)
}

fn pairs_stable(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_pairs_stable");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (what, keys) in inputs::<u32>(&mut r, n, |x| x as u32) {
            check_sort(c, &a, &mut temp, what, &keys, RadixBits::all::<u32>(), true)?;
            check_sort(c, &a, &mut temp, what, &keys, RadixBits::all_descending::<u32>(), true)?;
        }
    }
    // 8-byte values with 8-byte keys (another downsweep kernel).
    for n in [1, TILE + 3, c.pick(1 << 20, 2 * TILE + 9)] {
        for (what, keys) in inputs::<u64>(&mut r, n, |x| x % 1000) {
            let values: Vec<u64> = (0..n as u64).map(|i| i * 0x1_0000_0001).collect();
            let mut d_keys = c.gpu.upload(&keys).ctx("upload")?;
            let mut d_values = c.gpu.upload(&values).ctx("upload")?;
            a.radix_sort_pairs(c.gpu.stream(), &mut d_keys, &mut d_values, RadixBits::all::<u64>(), &mut temp)
                .ctx("sort")?;
            let (wk, wv) = reference(&keys, &values, RadixBits::all::<u64>());
            check_all(&format!("u64 pairs, {what}, n = {n}: keys"), &d_keys.to_vec().ctx("keys")?, &wk)?;
            check_all(&format!("u64 pairs, {what}, n = {n}: values"), &d_values.to_vec().ctx("values")?, &wv)?;
        }
    }
    // Values of another width are an `Err`, not a launch.
    #[derive(Clone, Copy, DeviceCopy)]
    #[repr(C)]
    struct Three([u8; 3]);
    let mut d_keys = c.gpu.upload(&[3u32, 1, 2]).ctx("upload")?;
    let mut d_values = c.gpu.upload(&[Three([0; 3]); 3]).ctx("upload")?;
    let e = a.radix_sort_pairs(c.gpu.stream(), &mut d_keys, &mut d_values, RadixBits::all::<u32>(), &mut temp);
    ensure(e.is_err(), || "3-byte values were accepted".into())?;
    let mut short = c.gpu.upload(&[0u32; 2]).ctx("upload")?;
    let e = a.radix_sort_pairs(c.gpu.stream(), &mut d_keys, &mut short, RadixBits::all::<u32>(), &mut temp);
    ensure(e.is_err(), || "fewer values than keys were accepted".into())
}

fn bit_ranges(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_bit_ranges");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    let n = c.pick(1 << 20, 3 * TILE + 17);
    let keys: Vec<u32> = (0..n).map(|_| r.random()).collect();
    // One pass (odd: the copy back), two, a partial last pass, a range past the key's width,
    // an empty one, one bit.
    for (begin, end) in [(0, 8), (0, 16), (4, 20), (3, 29), (16, 99), (8, 8), (12, 3), (31, 32)] {
        for desc in [false, true] {
            let bits = RadixBits { begin, end, descending: desc };
            check_sort(c, &a, &mut temp, "bit range", &keys, bits, false)?;
            check_sort(c, &a, &mut temp, "bit range", &keys, bits, true)?;
        }
    }
    let keys: Vec<i64> = (0..n).map(|_| r.random()).collect();
    check_sort(c, &a, &mut temp, "i64 bit range", &keys, RadixBits { begin: 40, end: 64, descending: true }, true)
}

/// The Onesweep passes' look-back across many tiles, where it is longest and most uneven: all
/// keys equal (one digit gets every key: each tile's count of it is the tile's length, and
/// every other digit's is zero), sorted and reverse sorted (each tile a few digits), few
/// distinct keys, random; sizes around the pass kernel's tile (`ONESWEEP_BLOCK *
/// ONESWEEP_ITEMS`) and many tiles; pairs carrying indices (stability across tiles), u32 and
/// u64 keys, ascending and descending.
fn onesweep_look_back(c: &Ctx) -> TestResult {
    use cohort::algorithms::{ONESWEEP_BLOCK, ONESWEEP_ITEMS};
    let tile = ONESWEEP_BLOCK as usize * ONESWEEP_ITEMS;
    let mut r = rng("radix_sort_onesweep_look_back");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let mut temp = Temp::new(&c.gpu);
    let mut ns = vec![tile - 1, tile, tile + 1, 9 * tile + 17];
    ns.extend(c.pick(vec![1000 * tile + 1, (1 << 23) + 5], vec![]));
    for n in ns {
        for desc in [false, true] {
            for (what, keys) in inputs::<u32>(&mut r, n, |x| x as u32) {
                check_sort(c, &a, &mut temp, what, &keys, RadixBits { begin: 0, end: 32, descending: desc }, true)?;
            }
        }
        for (what, keys) in inputs::<u64>(&mut r, n, |x| x) {
            check_sort(c, &a, &mut temp, what, &keys, RadixBits::all::<u64>(), true)?;
        }
    }
    Ok(())
}

/// Sorts on several streams at once, each with its own temporary storage.
fn many_streams(c: &Ctx) -> TestResult {
    let mut r = rng("radix_sort_many_streams");
    let a = Algorithms::load(&c.gpu).ctx("load")?;
    let n = c.pick(1 << 20, 2 * TILE + 3);
    let streams: Vec<_> = (0..4).map(|_| c.gpu.new_stream()).collect::<Result<_, _>>().ctx("streams")?;
    let inputs: Vec<Vec<u32>> = (0..4).map(|_| (0..n).map(|_| r.random()).collect()).collect();
    let mut bufs = Vec::new();
    let mut temps: Vec<Temp> = (0..4).map(|_| Temp::new(&c.gpu)).collect();
    for (i, s) in streams.iter().enumerate() {
        let mut d = c.gpu.upload(&inputs[i]).ctx("upload")?;
        a.radix_sort_keys(s, &mut d, RadixBits::all::<u32>(), &mut temps[i]).ctx("sort")?;
        bufs.push(d);
    }
    for (i, d) in bufs.iter().enumerate() {
        let mut want = inputs[i].clone();
        want.sort_unstable();
        check_all(&format!("stream {i}"), &d.to_vec().ctx("keys")?, &want)?;
    }
    Ok(())
}

/// 2^32 + 1 `u32` keys of 1024 values: every output position past 2^32 is reached; checked by
/// counting (the sorted output is each key as many times as it occurs, in order), and a
/// descending sort of the result.
fn past_2_pow_32(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let n = (1usize << 32) + 1;
    let key = |i: usize| (i as u32).wrapping_mul(2_654_435_761) >> 22;
    let mut counts = vec![0u64; 1024];
    let input: Vec<u32> = (0..n)
        .map(|i| {
            let k = key(i);
            counts[k as usize] += 1;
            k
        })
        .collect();
    let mut d = c.gpu.upload(&input).ctx("upload")?;
    drop(input);
    let mut temp = Temp::new(&c.gpu);
    for desc in [false, true] {
        let bits = RadixBits { begin: 0, end: 32, descending: desc };
        a.radix_sort_keys(c.gpu.stream(), &mut d, bits, &mut temp).ctx("sort")?;
        let got = d.to_vec().ctx("read")?;
        let mut i = 0usize;
        let order: Vec<usize> = if desc { (0..1024).rev().collect() } else { (0..1024).collect() };
        for k in order {
            for _ in 0..counts[k] {
                ensure(got[i] == k as u32, || format!("descending = {desc}: element {i} is {}, want {k}", got[i]))?;
                i += 1;
            }
        }
        ensure(i == n, || format!("{i} elements checked of {n}"))?;
    }
    Ok(())
}
