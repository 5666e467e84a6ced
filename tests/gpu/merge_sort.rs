//! The merge sort with a comparator (`cohort::algorithms::merge_sort_tiles`, `merge_partition`,
//! `merge_tiles`; CUB's `DeviceMergeSort`), built in (`u32`/`u64` keys by `<`) and instantiated
//! for a user's key type, value type and comparator, against a stable CPU sort on every
//! element: random keys, few distinct keys (stability), all equal, sorted, reverse sorted,
//! NaNs and ±0.0 in a float order, empty, one element, sizes around tiles and with odd and
//! even numbers of merge passes; and comparators that are not orders (never a crash, a hang or
//! a write outside the buffers).

use std::cmp::Ordering;

use cohort_algorithms::{Algorithms, MergeBuiltin, Temp};
use cohort_test_kernels::algorithms::{self as k, Pt, Sum3, Tri, pt_less, sum3_a_less};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;
use rand::rngs::StdRng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("algorithms_merge_sort_builtin", builtin),
        gpu_trial("algorithms_merge_sort_user_types", user_types),
        gpu_trial("algorithms_merge_sort_hostile_comparators", hostile),
        gpu_trial("algorithms_merge_sort_refusals", refusals),
    ]
}

/// Keys per tile of `u32` keys with `u32` values (256 threads × 8 items).
const TILE: usize = tile::<u32, u32>();

/// Keys per tile of keys `K` with values `V`.
const fn tile<K, V>() -> usize {
    cohort::algorithms::MERGE_BLOCK as usize * cohort::algorithms::merge_items::<K, V>()
}

/// Around the tiles of every key and value type the built-in sorts use (each is its own size).
fn sizes(c: &Ctx) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 7, 31];
    for t in [tile::<u32, u32>(), tile::<u32, u64>(), tile::<u64, u64>()] {
        v.extend([t - 1, t, t + 1, 2 * t, 3 * t + 5]);
    }
    v.extend([8 * TILE, 17 * TILE + 3]);
    v.extend(c.pick(vec![(1 << 20) + 7, (1 << 23) + 3], vec![]));
    v
}

/// The key patterns: `(name, keys)` of `n` keys from `gen` (a random key).
fn patterns<K: Copy + Ord>(r: &mut StdRng, n: usize, make: impl Fn(&mut StdRng) -> K) -> Vec<(&'static str, Vec<K>)> {
    let random: Vec<K> = (0..n).map(|_| make(r)).collect();
    let few: Vec<K> = {
        let pool: Vec<K> = (0..5).map(|_| make(r)).collect();
        (0..n).map(|_| pool[r.random_range(0..pool.len())]).collect()
    };
    let mut sorted = random.clone();
    sorted.sort();
    let mut reverse = sorted.clone();
    reverse.reverse();
    let one = make(r);
    vec![("random", random), ("5 distinct", few), ("all equal", vec![one; n]), ("sorted", sorted), ("reverse sorted", reverse)]
}

/// The stable CPU order of `less`.
fn order<K>(less: impl Fn(&K, &K) -> bool) -> impl Fn(&K, &K) -> Ordering {
    move |a, b| {
        if less(a, b) {
            Ordering::Less
        } else if less(b, a) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }
}

/// The built-in sort of `keys` (alone, and with their indices as values) against a stable CPU
/// sort.
fn check_builtin<K>(c: &Ctx, a: &Algorithms, temp: &mut Temp, what: &str, keys: &[K]) -> TestResult
where
    K: MergeBuiltin + Ord + std::fmt::Debug,
{
    let n = keys.len();
    let s = c.gpu.stream();
    let mut want: Vec<(K, u32)> = keys.iter().copied().zip(0..).collect();
    want.sort_by_key(|x| x.0);
    let want_keys: Vec<K> = want.iter().map(|p| p.0).collect();
    let mut d = c.gpu.upload(keys).ctx("upload")?;
    a.merge_sort_keys(s, &mut d, temp).ctx("merge sort keys")?;
    check_all(&format!("{what}: keys, n = {n}"), &d.to_vec().ctx("read")?, &want_keys)?;
    let mut d = c.gpu.upload(keys).ctx("upload")?;
    let mut v = c.gpu.upload(&(0..n as u32).collect::<Vec<_>>()).ctx("upload")?;
    a.merge_sort_pairs(s, &mut d, &mut v, temp).ctx("merge sort pairs")?;
    check_all(&format!("{what}: pairs' keys, n = {n}"), &d.to_vec().ctx("read")?, &want_keys)?;
    let want_values: Vec<u32> = want.iter().map(|p| p.1).collect();
    check_all(&format!("{what}: pairs' values (stable), n = {n}"), &v.to_vec().ctx("read")?, &want_values)?;
    // 8-byte values.
    let mut d = c.gpu.upload(keys).ctx("upload")?;
    let mut v = c.gpu.upload(&(0..n as u64).map(|i| i << 32 | 5).collect::<Vec<_>>()).ctx("upload")?;
    a.merge_sort_pairs(s, &mut d, &mut v, temp).ctx("merge sort pairs")?;
    let want_values: Vec<u64> = want.iter().map(|p| u64::from(p.1) << 32 | 5).collect();
    check_all(&format!("{what}: 8-byte values (stable), n = {n}"), &v.to_vec().ctx("read")?, &want_values)
}

fn builtin(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_merge_sort_builtin");
    let mut temp = Temp::new(&c.gpu);
    for n in sizes(c) {
        for (name, keys) in patterns(&mut r, n, |r| r.random::<u32>()) {
            check_builtin(c, &a, &mut temp, &format!("u32 keys ({name})"), &keys)?;
        }
        for (name, keys) in patterns(&mut r, n, |r| r.random::<u64>()) {
            check_builtin(c, &a, &mut temp, &format!("u64 keys ({name})"), &keys)?;
        }
    }
    Ok(())
}

fn user_types(c: &Ctx) -> TestResult {
    let pts = k::pt_sort::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let wide = k::wide_sort::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let mut r = rng("algorithms_merge_sort_user_types");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let specials = [f32::NAN, -f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, 1.0];
    for n in sizes(c) {
        // Points: few distinct y (ties broken by x, then by position), NaNs and ±0.0.
        let keys: Vec<Pt> = (0..n)
            .map(|_| {
                let x = if r.random_range(0..10) == 0 { specials[r.random_range(0..specials.len())] } else { r.random_range(0..50) as f32 };
                let y = if r.random_range(0..10) == 0 { specials[r.random_range(0..specials.len())] } else { r.random_range(0..5) as f32 };
                Pt { x, y }
            })
            .collect();
        let mut want: Vec<(Pt, u32)> = keys.iter().copied().zip(0..).collect();
        let ord = order(pt_less);
        want.sort_by(|x, y| ord(&x.0, &y.0));
        let mut d = c.gpu.upload(&keys).ctx("upload")?;
        let mut v = c.gpu.upload(&(0..n as u32).collect::<Vec<_>>()).ctx("upload")?;
        cohort_algorithms::merge_sort_pairs(&pts, s, &mut d, &mut v, &mut temp).ctx("sort points")?;
        let bits = |p: &[Pt]| p.iter().map(|q| (q.x.to_bits(), q.y.to_bits())).collect::<Vec<_>>();
        let want_keys: Vec<Pt> = want.iter().map(|p| p.0).collect();
        check_all(&format!("points, n = {n}"), &bits(&d.to_vec().ctx("read")?), &bits(&want_keys))?;
        check_all(
            &format!("points' values (stable), n = {n}"),
            &v.to_vec().ctx("read")?,
            &want.iter().map(|p| p.1).collect::<Vec<_>>(),
        )?;
        let mut d = c.gpu.upload(&keys).ctx("upload")?;
        cohort_algorithms::merge_sort_keys(&pts, s, &mut d, &mut temp).ctx("sort points")?;
        check_all(&format!("points alone, n = {n}"), &bits(&d.to_vec().ctx("read")?), &bits(&want_keys))?;

        // 12-byte keys ordered by one field, 24-byte values: 5 items a thread.
        let keys: Vec<Sum3> = (0..n).map(|_| Sum3 { a: r.random_range(0..100), b: r.random(), c: r.random() }).collect();
        let values: Vec<Tri> = (0..n as u64).map(|i| Tri { a: i, b: !i, c: i * 3 }).collect();
        let mut want: Vec<(Sum3, Tri)> = keys.iter().copied().zip(values.iter().copied()).collect();
        want.sort_by(|x, y| order(sum3_a_less)(&x.0, &y.0));
        let mut d = c.gpu.upload(&keys).ctx("upload")?;
        let mut v = c.gpu.upload(&values).ctx("upload")?;
        cohort_algorithms::merge_sort_pairs(&wide, s, &mut d, &mut v, &mut temp).ctx("sort wide pairs")?;
        check_all(
            &format!("12-byte keys by one field, n = {n}"),
            &d.to_vec().ctx("read")?,
            &want.iter().map(|p| p.0).collect::<Vec<_>>(),
        )?;
        check_all(
            &format!("24-byte values (stable), n = {n}"),
            &v.to_vec().ctx("read")?,
            &want.iter().map(|p| p.1).collect::<Vec<_>>(),
        )?;
    }
    Ok(())
}

/// Comparators that are not strict weak orders: the sort returns (`Ok`), writes only the
/// buffers it was given (the buffers around them keep their guards), and a proper sort on the
/// same storage afterwards is right.
fn hostile(c: &Ctx) -> TestResult {
    let odd = k::hostile_sort::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let always = k::always_less_sort::Kernels::load(&c.tests).ctx("load the user's kernels")?;
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let mut r = rng("algorithms_merge_sort_hostile_comparators");
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    for n in [1, 2, 33, TILE + 1, 5 * TILE + 3, c.pick(300 * TILE + 7, 20 * TILE + 7)] {
        let keys: Vec<u32> = (0..n).map(|_| r.random()).collect();
        // Guards: buffers allocated around the sorted ones (every write of the kernels is
        // bounds-checked against the buffers they are given).
        let before = c.gpu.upload(&vec![0xdead_beef_u32; 4096]).ctx("upload")?;
        let mut d = c.gpu.upload(&keys).ctx("upload")?;
        let mut v = c.gpu.upload(&(0..n as u32).collect::<Vec<_>>()).ctx("upload")?;
        let after = c.gpu.upload(&vec![0xdead_beef_u32; 4096]).ctx("upload")?;
        cohort_algorithms::merge_sort_pairs(&odd, s, &mut d, &mut v, &mut temp).ctx("symmetric comparator")?;
        cohort_algorithms::merge_sort_keys(&always, s, &mut d, &mut temp).ctx("always-less comparator")?;
        cohort_algorithms::merge_sort_pairs(&always, s, &mut d, &mut v, &mut temp).ctx("always-less comparator")?;
        ensure(d.to_vec().ctx("read")?.len() == n, || "length".into())?;
        check_all("guard before", &before.to_vec().ctx("read")?, &vec![0xdead_beef; 4096])?;
        check_all("guard after", &after.to_vec().ctx("read")?, &vec![0xdead_beef; 4096])?;
        // The same temporary storage serves a proper sort next.
        let mut d = c.gpu.upload(&keys).ctx("upload")?;
        a.merge_sort_keys(s, &mut d, &mut temp).ctx("merge sort")?;
        let mut want = keys.clone();
        want.sort_unstable();
        check_all(&format!("a sort after hostile ones, n = {n}"), &d.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// Values of another length, or a built-in value width that is neither 4 nor 8 bytes: `Err`s,
/// the buffers untouched.
fn refusals(c: &Ctx) -> TestResult {
    let a = Algorithms::load(&c.gpu).ctx("load the algorithms")?;
    let s = c.gpu.stream();
    let mut temp = Temp::new(&c.gpu);
    let mut keys = c.gpu.upload(&[3u32, 1, 2]).ctx("upload")?;
    let mut two = c.gpu.upload(&[7u32, 8]).ctx("upload")?;
    let e = a.merge_sort_pairs(s, &mut keys, &mut two, &mut temp);
    ensure(e.is_err(), || format!("2 values for 3 keys: {e:?}"))?;
    let mut bytes = c.gpu.upload(&[1u8, 2, 3]).ctx("upload")?;
    let e = a.merge_sort_pairs(s, &mut keys, &mut bytes, &mut temp);
    ensure(e.is_err(), || format!("1-byte values: {e:?}"))?;
    check_all("untouched keys", &keys.to_vec().ctx("read")?, &[3, 1, 2])?;
    check_all("untouched values", &two.to_vec().ctx("read")?, &[7, 8])
}
