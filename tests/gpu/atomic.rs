//! `cohort::atomic`: every operation for every type in global and shared memory, NaN in every
//! float CAS loop, message passing with fences; and the atomics tutorial's workloads (the race,
//! histograms, dot products). The mutex tests are `mutex.rs`'s.

use std::time::{Duration, Instant};

use cohort_host::corpus;
use cohort_host::reference::{dot_close, dot_inputs};
use cohort_kernels::atomics as wk;
use cohort_runtime::{DeviceBuffer, LaunchConfig};
use cohort_test_kernels::atomic_ops::{self as k, CELLS};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("atomic_int_ops_u32", |c| ints::<u32>(c, "u32")),
        gpu_trial("atomic_int_ops_i32", |c| ints::<i32>(c, "i32")),
        gpu_trial("atomic_int_ops_u64", |c| ints::<u64>(c, "u64")),
        gpu_trial("atomic_int_ops_i64", |c| ints::<i64>(c, "i64")),
        gpu_trial("atomic_float_ops_f32_with_nan", |c| floats::<f32>(c, "f32")),
        gpu_trial("atomic_float_ops_f64_with_nan", |c| floats::<f64>(c, "f64")),
        gpu_trial("atomic_forms_run", forms),
        gpu_trial("atomic_tutorial_race", race),
        gpu_trial("atomic_tutorial_histograms", histograms),
        gpu_trial("atomic_tutorial_dot_products", dots),
        gpu_trial("atomic_sign_views_reinterpret_the_same_bits", sign_views),
    ]
}

/// Tests whose kernels spin on other threads (run last: a hang there stops only them).
pub fn spinning_trials() -> Vec<Trial> {
    vec![
        gpu_trial("atomic_zz_message_passing_release_acquire_and_fences", message_passing),
    ]
}

/// Integers the tests can do arithmetic on, as the device does (wrapping).
trait Int: cohort::DeviceCopy + Default + Copy + Ord + std::fmt::Debug + std::hash::Hash + 'static {
    fn from_u64(v: u64) -> Self;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul3p1(self) -> Self;
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn inc(self, limit: Self) -> Self;
    fn dec(self, limit: Self) -> Self;
    fn zero() -> Self {
        Self::from_u64(0)
    }
}

macro_rules! int {
    ($($t:ty)*) => {$(
        impl Int for $t {
            fn from_u64(v: u64) -> Self { v as $t }
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            fn wsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn wmul3p1(self) -> Self { self.wrapping_mul(3).wrapping_add(1) }
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
            fn inc(self, limit: Self) -> Self { if self >= limit { 0 } else { self + 1 } }
            fn dec(self, limit: Self) -> Self { if self == 0 || self > limit { limit } else { self - 1 } }
        }
    )*};
}
int!(u32 i32 u64 i64);

/// The final cell values after every thread ran the script (order-independent by design).
fn int_finals<T: Int>(init: &[T], vals: &[T], limit: T) -> Vec<T> {
    let n = vals.len() as u64;
    let mut f = init.to_vec();
    f[0] = init[0].wadd(T::from_u64(n));
    f[1] = vals.iter().fold(init[1], |a, &v| a.wadd(v));
    f[2] = vals.iter().fold(init[2], |a, &v| a.wsub(v));
    f[3] = vals.iter().copied().fold(init[3], std::cmp::min);
    f[4] = vals.iter().copied().fold(init[4], std::cmp::max);
    f[5] = vals.iter().fold(init[5], |a, &v| a.and(v));
    f[6] = vals.iter().fold(init[6], |a, &v| a.or(v));
    f[7] = vals.iter().fold(init[7], |a, &v| a.xor(v));
    f[8] = (0..n).fold(init[8], |a, _| a.inc(limit));
    f[9] = (0..n).fold(init[9], |a, _| a.dec(limit));
    f[11] = init[11].wadd(T::from_u64(n));
    f[12] = (0..n).fold(init[12], |a, _| a.wmul3p1());
    f[13] = init[13].wadd(T::from_u64(n));
    f[14] = init[14].wadd(T::from_u64(n));
    f
}

/// Cells 10 (swap) and 15 (load then store) end with whichever thread came last; `check_olds`
/// checks those. Every other cell's final value is determined.
fn check_finals<T: Int>(what: &str, got: &[T], want: &[T]) -> TestResult {
    let pick =
        |v: &[T]| -> Vec<T> { v.iter().enumerate().filter(|(k, _)| *k != 10 && *k != 15).map(|(_, x)| *x).collect() };
    check_all(what, &pick(got), &pick(want))
}

/// Checks the previous values each thread saw, where they are determined.
fn check_olds<T: Int>(what: &str, init: &[T], vals: &[T], olds: &[[T; CELLS]], fin: &[T]) -> TestResult {
    let n = vals.len() as u64;
    // fetch_add(1) and the CAS increment hand out init..init+n exactly once each.
    for cell in [0usize, 11, 14] {
        let mut got: Vec<T> = olds.iter().map(|o| o[cell]).collect();
        got.sort();
        let mut want: Vec<T> = (0..n).map(|k| init[cell].wadd(T::from_u64(k))).collect();
        want.sort();
        ensure(got == want, || format!("{what}: cell {cell}: previous values are not each of init..init+n once"))?;
    }
    // swap: the previous values plus the final value are the initial value plus every operand.
    let mut got: Vec<T> = olds.iter().map(|o| o[10]).collect();
    got.push(fin[10]);
    got.sort();
    let mut want: Vec<T> = vals.to_vec();
    want.push(init[10]);
    want.sort();
    ensure(got == want, || format!("{what}: swap lost or duplicated a value"))?;
    // fetch_update: the previous values are f^k(init) for k in 0..n, each once.
    let mut got: Vec<T> = olds.iter().map(|o| o[12]).collect();
    got.sort();
    let mut want = Vec::new();
    let mut x = init[12];
    for _ in 0..n {
        want.push(x);
        x = x.wmul3p1();
    }
    want.sort();
    ensure(got == want, || format!("{what}: fetch_update's previous values are not the chain f^k(init)"))?;
    // load/store: the final value is one of the operands.
    ensure(vals.contains(&fin[15]), || format!("{what}: the last store wrote {:?}, no thread's value", fin[15]))
}

fn ints<T: Int>(c: &Ctx, name: &str) -> TestResult
where
    k::int_ops<T>: IntLaunch<T>,
    k::int_ops_shared<T>: IntSharedLaunch<T>,
{
    let mut r = rng(&format!("atomic_int_ops_{name}"));
    let n = 64 * 128;
    let vals: Vec<T> = (0..n).map(|_| T::from_u64(r.random())).collect();
    let init: Vec<T> = (0..CELLS).map(|_| T::from_u64(r.random::<u64>() >> 1)).collect();
    let limit = T::from_u64(r.random_range(1000..100_000));
    let s = c.gpu.new_stream().ctx("stream")?;
    let dv = c.gpu.upload(&vals).ctx("upload")?;
    let mut cells = c.gpu.upload(&init).ctx("upload")?;
    let mut olds = c.gpu.upload(&vec![[T::zero(); CELLS]; n]).ctx("alloc")?;
    <k::int_ops<T> as IntLaunch<T>>::run(c, &s, &dv, limit, &mut cells, &mut olds).ctx("launch int_ops")?;
    let fin = cells.to_vec().ctx("read")?;
    let want = int_finals(&init, &vals, limit);
    check_finals(&format!("{name}: final values in global memory"), &fin, &want)?;
    check_olds(&format!("{name} global"), &init, &vals, &olds.to_vec().ctx("read")?, &fin)?;
    // Shared memory: each block of 128 threads on its own cells.
    let blocks = 8usize;
    let dv = c.gpu.upload(&vals[..blocks * 128]).ctx("upload")?;
    let dinit = c.gpu.upload(&init).ctx("upload")?;
    let mut olds = c.gpu.upload(&vec![[T::zero(); CELLS]; blocks * 128]).ctx("alloc")?;
    let mut finals = c.gpu.upload(&vec![[T::zero(); CELLS]; blocks]).ctx("alloc")?;
    <k::int_ops_shared<T> as IntSharedLaunch<T>>::run(c, &s, blocks as u32, &dv, limit, &dinit, &mut olds, &mut finals)
        .ctx("launch int_ops_shared")?;
    let finals = finals.to_vec().ctx("read")?;
    let olds = olds.to_vec().ctx("read")?;
    for b in 0..blocks {
        let v = &vals[b * 128..(b + 1) * 128];
        let want = int_finals(&init, v, limit);
        check_finals(&format!("{name}: block {b}: final values in shared memory"), &finals[b], &want)?;
        check_olds(&format!("{name} shared block {b}"), &init, v, &olds[b * 128..(b + 1) * 128], &finals[b])?;
    }
    Ok(())
}

/// Launches `int_ops::<T>` (a trait so one test function serves every instance).
trait IntLaunch<T: Int> {
    fn run(
        c: &Ctx,
        s: &cohort_runtime::Stream,
        vals: &DeviceBuffer<T>,
        limit: T,
        cells: &mut DeviceBuffer<T>,
        olds: &mut DeviceBuffer<[T; CELLS]>,
    ) -> cohort_runtime::Result<()>;
}
/// Launches `int_ops_shared::<T>`.
trait IntSharedLaunch<T: Int> {
    #[allow(clippy::too_many_arguments)]
    fn run(
        c: &Ctx,
        s: &cohort_runtime::Stream,
        blocks: u32,
        vals: &DeviceBuffer<T>,
        limit: T,
        init: &DeviceBuffer<T>,
        olds: &mut DeviceBuffer<[T; CELLS]>,
        finals: &mut DeviceBuffer<[T; CELLS]>,
    ) -> cohort_runtime::Result<()>;
}

macro_rules! int_launch {
    ($($t:ty)*) => {$(
        impl IntLaunch<$t> for k::int_ops<$t> {
            fn run(c: &Ctx, s: &cohort_runtime::Stream, vals: &DeviceBuffer<$t>, limit: $t, cells: &mut DeviceBuffer<$t>, olds: &mut DeviceBuffer<[$t; CELLS]>) -> cohort_runtime::Result<()> {
                k::int_ops::<$t>::load(&c.tests)?.launch(s, LaunchConfig::for_elements(vals.len(), 128), vals, limit, cells, olds)
            }
        }
        impl IntSharedLaunch<$t> for k::int_ops_shared<$t> {
            fn run(c: &Ctx, s: &cohort_runtime::Stream, blocks: u32, vals: &DeviceBuffer<$t>, limit: $t, init: &DeviceBuffer<$t>, olds: &mut DeviceBuffer<[$t; CELLS]>, finals: &mut DeviceBuffer<[$t; CELLS]>) -> cohort_runtime::Result<()> {
                let cfg = LaunchConfig::new(blocks, 128).with_shared_mem((CELLS * size_of::<$t>()) as u32);
                k::int_ops_shared::<$t>::load(&c.tests)?.launch(s, cfg, vals, limit, init, olds, finals)
            }
        }
    )*};
}
int_launch!(u32 i32 u64 i64);

/// Waits at most `limit` for the stream: a CAS loop that never ends must fail the test, not
/// hang it.
pub(crate) fn sync_within(s: &cohort_runtime::Stream, gpu: &cohort_runtime::Gpu, limit: Duration) -> TestResult {
    let e = cohort_runtime::Event::new(gpu).ctx("event")?;
    e.record(s).ctx("record")?;
    let start = Instant::now();
    while !e.is_complete().ctx("query")? {
        if start.elapsed() > limit {
            // A kernel that never ends keeps the GPU busy for every later test: stop here.
            eprintln!("FATAL: a kernel did not finish within {limit:?} (a spin or CAS loop does not terminate)");
            std::process::exit(3);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

trait Float: cohort::DeviceCopy + Default + Copy + PartialOrd + std::fmt::Debug + 'static {
    const NAN: Self;
    fn from_i32(v: i32) -> Self;
    fn add(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn is_nan(self) -> bool;
    fn bits(self) -> u64;
    fn fmin(self, o: Self) -> Self;
    fn fmax(self, o: Self) -> Self;
}
macro_rules! float {
    ($($t:ty)*) => {$(
        impl Float for $t {
            const NAN: Self = <$t>::NAN;
            fn from_i32(v: i32) -> Self { v as $t }
            fn add(self, o: Self) -> Self { self + o }
            fn neg(self) -> Self { -self }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            fn bits(self) -> u64 { self.to_bits() as u64 }
            fn fmin(self, o: Self) -> Self { self.min(o) }
            fn fmax(self, o: Self) -> Self { self.max(o) }
        }
    )*};
}
float!(f32 f64);

trait FloatLaunch<T: cohort::DeviceCopy> {
    fn run(
        c: &Ctx,
        s: &cohort_runtime::Stream,
        v: &DeviceBuffer<T>,
        nv: &DeviceBuffer<T>,
        cells: &mut DeviceBuffer<T>,
        olds: &mut DeviceBuffer<[T; 12]>,
    ) -> cohort_runtime::Result<()>;
}
macro_rules! float_launch {
    ($($t:ty)*) => {$(
        impl FloatLaunch<$t> for k::float_ops<$t> {
            fn run(c: &Ctx, s: &cohort_runtime::Stream, v: &DeviceBuffer<$t>, nv: &DeviceBuffer<$t>, cells: &mut DeviceBuffer<$t>, olds: &mut DeviceBuffer<[$t; 12]>) -> cohort_runtime::Result<()> {
                k::float_ops::<$t>::load(&c.tests)?.launch(s, LaunchConfig::for_elements(v.len(), 128), v, nv, cells, olds)
            }
        }
    )*};
}
float_launch!(f32 f64);

fn floats<T: Float>(c: &Ctx, name: &str) -> TestResult
where
    k::float_ops<T>: FloatLaunch<T>,
{
    let mut r = rng(&format!("atomic_float_ops_{name}"));
    let n = 32 * 128;
    // Small integers: every sum is exact, whatever the order.
    let vals: Vec<T> = (0..n).map(|_| T::from_i32(r.random_range(-1000..1000))).collect();
    let nan_vals: Vec<T> =
        (0..n).map(|i| if i % 97 == 5 { T::NAN } else { T::from_i32(r.random_range(-1_000_000..1_000_000)) }).collect();
    let mut init: Vec<T> = (0..12).map(|_| T::from_i32(r.random_range(-100..100))).collect();
    init[8] = T::NAN; // fetch_update(identity) on a NaN
    init[9] = T::NAN; // nanmin starting from NaN
    init[10] = T::NAN; // max with NaN propagation starting from NaN
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dv, dn) = (c.gpu.upload(&vals).ctx("upload")?, c.gpu.upload(&nan_vals).ctx("upload")?);
    let mut cells = c.gpu.upload(&init).ctx("upload")?;
    let mut olds = c.gpu.upload(&vec![[T::default(); 12]; n]).ctx("alloc")?;
    <k::float_ops<T> as FloatLaunch<T>>::run(c, &s, &dv, &dn, &mut cells, &mut olds).ctx("launch")?;
    sync_within(&s, &c.gpu, Duration::from_secs(20))?;
    let fin = cells.to_vec().ctx("read")?;
    let sum = |init: T| vals.iter().fold(init, |a, &v| a.add(v));
    let neg = |init: T| vals.iter().fold(init, |a, &v| a.add(v.neg()));
    let finite: Vec<T> = nan_vals.iter().copied().filter(|v| !v.is_nan()).collect();
    let min = |init: T| finite.iter().fold(init, |a, &v| a.fmin(v));
    let max = |init: T| finite.iter().fold(init, |a, &v| a.fmax(v));
    let checks: [(usize, &str, bool); 11] = [
        (0, "fetch_add", fin[0].bits() == sum(init[0]).bits()),
        (1, "fetch_sub", fin[1].bits() == neg(init[1]).bits()),
        (2, "fetch_min ignores NaN", fin[2].bits() == min(init[2]).bits()),
        (3, "fetch_max ignores NaN", fin[3].bits() == max(init[3]).bits()),
        (4, "fetch_min_nan propagates NaN", fin[4].is_nan()),
        (5, "fetch_max_nan propagates NaN", fin[5].is_nan()),
        (7, "CAS-loop add", fin[7].bits() == sum(init[7]).bits()),
        (8, "fetch_update on NaN leaves it", fin[8].is_nan()),
        (9, "fetch_min from NaN", fin[9].bits() == finite.iter().copied().fold(finite[0], |a, v| a.fmin(v)).bits()),
        (10, "fetch_max_nan from NaN stays NaN", fin[10].is_nan()),
        (11, "red.add", fin[11].bits() == sum(init[11]).bits()),
    ];
    for (cell, what, ok) in checks {
        ensure(ok, || format!("{name}: {what}: cell {cell} = {:?}", fin[cell]))?;
    }
    // swap: previous values and the final one are the initial value and every operand.
    let olds = olds.to_vec().ctx("read")?;
    let mut got: Vec<u64> = olds.iter().map(|o| o[6].bits()).chain([fin[6].bits()]).collect();
    got.sort_unstable();
    let mut want: Vec<u64> = vals.iter().map(|v| v.bits()).chain([init[6].bits()]).collect();
    want.sort_unstable();
    ensure(got == want, || format!("{name}: swap lost or duplicated a value"))
}

fn message_passing(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::message_passing::load(&c.tests).ctx("load")?;
    let pairs = 32usize;
    for mode in [0u32, 1, 2] {
        let mut data = c.gpu.zeroed::<u32>(pairs * 64).ctx("alloc")?;
        let mut flags = c.gpu.zeroed::<u32>(pairs).ctx("alloc")?;
        for round in 1..=20u32 {
            let mut seen = c.gpu.upload(&vec![u32::MAX; pairs * 64]).ctx("alloc")?;
            kern.launch_cooperative(
                &s,
                LaunchConfig::new(2 * pairs as u32, 64),
                mode,
                round,
                &mut data,
                &mut flags,
                &mut seen,
            )
            .ctx("launch")?;
            let want: Vec<u32> = (0..pairs * 64).map(|i| round * 1000 + (i % 64) as u32).collect();
            check_all(
                &format!("mode {mode}, round {round}: consumers see the producers' data"),
                &seen.to_vec().ctx("read")?,
                &want,
            )?;
        }
    }
    Ok(())
}

fn forms(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut cells = c.gpu.zeroed::<u32>(8).ctx("alloc")?;
    let mut wide = c.gpu.upload(&[0u64, u64::MAX]).ctx("alloc")?;
    let mut floats = c.gpu.zeroed::<f32>(2).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    k::atomic_forms::load(&c.tests)
        .ctx("load")?
        .launch(&s, (2u32, 128u32), &mut cells, &mut wide, &mut floats, &mut out)
        .ctx("launch")?;
    let cells = cells.to_vec().ctx("read")?;
    check_all("one increment per thread on cells 0-5", &cells[..6], &[256; 6])?;
    check_all("floats", &floats.to_vec().ctx("read")?, &[256.0, 256.0])
}

fn race(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut x = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    wk::race_increment::load(&c.module).ctx("load")?.launch(&s, (10u32, 16u32), &mut x).ctx("launch")?;
    let racy = x.to_vec().ctx("read")?[0];
    ensure((1..=160).contains(&racy), || format!("non-atomic increments gave {racy}, outside 1..=160"))?;
    x.fill_zero().ctx("clear")?;
    wk::atomic_increment::load(&c.module).ctx("load")?.launch(&s, (10u32, 16u32), &mut x).ctx("launch")?;
    check_all("atomic increments", &x.to_vec().ctx("read")?, &[160])
}

fn histograms(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    // (1/16 of the sizes on the CPU device.)
    let (big_mib, uni_mib) = c.pick((64, 16), (4, 1));
    let big = corpus::text_like(big_mib << 20, 7);
    let uni = corpus::uniform(uni_mib << 20, 8);
    let (big_name, uni_name) = (format!("text-like {big_mib} MiB"), format!("uniform {uni_mib} MiB"));
    for (name, text) in [("Alice", corpus::ALICE), (&big_name[..], &big[..]), (&uni_name[..], &uni[..])] {
        let want: Vec<u32> = corpus::histogram_1t(text).iter().map(|&v| v as u32).collect();
        // Misaligned start too (the library kernel's head path).
        for offset in [0usize, 3] {
            let dt = c.gpu.upload(&text[offset..]).ctx("upload")?;
            let want: Vec<u32> = if offset == 0 {
                want.clone()
            } else {
                corpus::histogram_1t(&text[offset..]).iter().map(|&v| v as u32).collect()
            };
            let mut bins = c.gpu.zeroed::<u32>(128).ctx("alloc")?;
            let cfg = LaunchConfig::new(264, 256);
            wk::histogram_global::load(&c.module).ctx("load")?.launch(&s, cfg, &dt, &mut bins).ctx("launch")?;
            check_all(&format!("{name}+{offset}: global atomics"), &bins.to_vec().ctx("read")?, &want)?;
            bins.fill_zero().ctx("clear")?;
            wk::histogram_shared::load(&c.module).ctx("load")?.launch(&s, cfg, &dt, &mut bins).ctx("launch")?;
            check_all(&format!("{name}+{offset}: shared privatized"), &bins.to_vec().ctx("read")?, &want)?;
            for copies in [1u32, 3, 4, 8] {
                bins.fill_zero().ctx("clear")?;
                let cfg = cfg.with_shared_mem(8 * copies * 129 * 4);
                wk::histogram_lib::load(&c.module)
                    .ctx("load")?
                    .launch(&s, cfg, &dt, copies, &mut bins)
                    .ctx("launch")?;
                check_all(
                    &format!("{name}+{offset}: Cohort's, {copies} copies per warp"),
                    &bins.to_vec().ctx("read")?,
                    &want,
                )?;
            }
        }
    }
    Ok(())
}

fn dots(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let d = dot_inputs(c.pick(10_000_000, 1_000_003));
    let (da, db) = (c.gpu.upload(&d.a).ctx("upload")?, c.gpu.upload(&d.b).ctx("upload")?);
    let mut partial = c.gpu.zeroed::<f32>(640).ctx("alloc")?;
    wk::dot_partial::load(&c.module).ctx("load")?.launch(&s, (640u32, 256u32), &da, &db, &mut partial).ctx("launch")?;
    let p: f64 = partial.to_vec().ctx("read")?.iter().map(|&v| v as f64).sum();
    let (ok, bound) = dot_close(p, &d, 640 * 256, 640);
    ensure(ok, || format!("partial dot {p} vs float64 {} (bound {bound:e})", d.exact))?;
    let mut lock = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    let mut out = c.gpu.zeroed::<f32>(1).ctx("alloc")?;
    wk::dot_mutex::load(&c.module)
        .ctx("load")?
        .launch(&s, (640u32, 256u32), &mut lock, &da, &db, &mut out)
        .ctx("launch")?;
    let m = out.to_vec().ctx("read")?[0] as f64;
    let (ok, bound) = dot_close(m, &d, 640 * 256, 640);
    ensure(ok, || format!("mutex dot {m} vs float64 {} (bound {bound:e})", d.exact))
}

/// Atomics seen with the other signedness (`atomic::flip_sign`, `as_unsigned`, `as_signed`),
/// as CUDA C++ casts `int*` to `unsigned*` for `atomicInc`: each operation interprets the bits
/// as its view's type (an unsigned max keeps -7, a signed min reaches -999, `atomicInc` wraps).
fn sign_views(c: &Ctx) -> TestResult {
    let n = 1000u32; // exactly: 8 blocks of 125 threads
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut signed = c.gpu.upload(&[0i32, -7]).ctx("upload")?;
    let mut unsigned = c.gpu.upload(&[0u32, 1000]).ctx("upload")?;
    let kk = k::sign_views::load(&c.tests).ctx("load")?;
    kk.launch(&s, LaunchConfig::new(8, n / 8), &mut signed, &mut unsigned, 16).ctx("launch")?;
    // atomicInc with limit 16 cycles through 0..=16: 1000 increments from 0 end at 1000 % 17.
    check_all("signed", &signed.to_vec().ctx("read")?, &[1000 % 17, -7])?;
    check_all("unsigned", &unsigned.to_vec().ctx("read")?, &[(-999i32) as u32, 0])?;
    let mut wide = c.gpu.upload(&[-3i64, 5]).ctx("upload")?;
    let kw = k::sign_views_64::load(&c.tests).ctx("load")?;
    kw.launch(&s, LaunchConfig::new(8, n / 8), &mut wide).ctx("launch")?;
    check_all("wide", &wide.to_vec().ctx("read")?, &[-3i64, -999])
}
