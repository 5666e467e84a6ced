//! `cohort::global`: constant memory and module globals set and read by the host through typed
//! handles (`Module::constant`, `Module::global`), against CPU references. (Their stream
//! ordering and refusals are `symbol.rs`'s.)
//!
//! Module variables are shared by every user of a module, so each test loads a module of its
//! own (the shared `Ctx` modules are used by tests running in parallel).

use cohort_runtime::{LaunchConfig, Module, Stream, StreamOptions};
use cohort_test_kernels::globals::{self as k, Affine, CONV_RADIUS};
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("globals_constant_polynomial_and_convolution", constants),
        gpu_trial("globals_device_counter_and_histogram", counters),
        gpu_trial("globals_host_set_global_read_by_kernel", host_set_global),
    ]
}

/// A sleep long enough that an unordered host write or read would overtake the kernel.
pub(crate) const SLOW_NS: u64 = 20_000_000;

pub(crate) fn own_module(c: &Ctx) -> Result<Module, String> {
    c.gpu.load(&cohort_test_kernels::PTX).ctx("load a module of this test's own")
}

pub(crate) fn non_blocking(c: &Ctx) -> Result<Stream, String> {
    c.gpu.new_stream_with(StreamOptions::new().non_blocking(true)).ctx("stream")
}

pub(crate) fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_elements(n, 256)
}

/// Horner, as the kernel computes it (separate multiply and add, no FMA: bit for bit).
pub(crate) fn horner(coeffs: &[f32; 8], v: f32) -> f32 {
    coeffs.iter().rev().fold(0.0f32, |p, &c| p * v + c)
}

fn conv(taps: &[f32; 2 * CONV_RADIUS + 1], x: &[f32]) -> Vec<f32> {
    (0..x.len())
        .map(|i| {
            let mut s = 0.0f32;
            for (k, &t) in taps.iter().enumerate() {
                let j = i + k;
                if j >= CONV_RADIUS && j - CONV_RADIUS < x.len() {
                    s += t * x[j - CONV_RADIUS];
                }
            }
            s
        })
        .collect()
}

fn constants(c: &Ctx) -> TestResult {
    let mut r = rng("globals_constant_polynomial_and_convolution");
    let m = own_module(c)?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let n = 100_003;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-2.0f32..2.0)).collect();
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
    let poly = k::poly_eval::load(&m).ctx("load")?;
    let poly_sym = m.constant(&k::POLY).ctx("constant POLY")?;
    ensure(poly_sym.name() == "POLY" && poly_sym.is_constant(), || format!("{poly_sym:?}"))?;

    // The initializer (1 + x) is in place after load, before any host write.
    let init = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    ensure(poly_sym.get().ctx("get")? == init, || "POLY's initial value".into())?;
    poly.launch(&s, cfg(n), &dx, 0, &mut out).ctx("launch")?;
    let want: Vec<f32> = x.iter().map(|&v| horner(&init, v)).collect();
    check_all("the polynomial of the initial coefficients", &out.to_vec().ctx("read")?, &want)?;

    // Three rounds of new coefficients, each set between launches on one stream.
    for round in 0..3 {
        let coeffs: [f32; 8] = std::array::from_fn(|_| r.random_range(-1.0f32..1.0));
        poly_sym.set(&s, &coeffs).ctx("set")?;
        poly.launch(&s, cfg(n), &dx, 0, &mut out).ctx("launch")?;
        let want: Vec<f32> = x.iter().map(|&v| horner(&coeffs, v)).collect();
        check_all(
            &format!("round {round}: the polynomial of the coefficients set"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
        ensure(poly_sym.get().ctx("get")? == coeffs, || format!("round {round}: POLY reads back"))?;
    }

    // A 1-D convolution with its taps in constant memory (read through `Deref`).
    let taps: [f32; 2 * CONV_RADIUS + 1] = std::array::from_fn(|_| r.random_range(-1.0f32..1.0));
    m.constant(&k::CONV_TAPS).ctx("constant CONV_TAPS")?.set(&s, &taps).ctx("set")?;
    k::conv1d::load(&m).ctx("load")?.launch(&s, cfg(n), &dx, &mut out).ctx("launch")?;
    check_all("the convolution", &out.to_vec().ctx("read")?, &conv(&taps, &x))?;

    // A struct (`get`), and pieces of 16 and 2 bytes from their initializers.
    let map = Affine { a: r.random_range(-3.0f32..3.0), b: r.random_range(-3.0f32..3.0) };
    let aff = m.constant(&k::AFFINE).ctx("constant AFFINE")?;
    ensure(aff.get().ctx("get")? == Affine { a: 1.0, b: 0.0 }, || "AFFINE's initial value".into())?;
    aff.set(&s, &map).ctx("set")?;
    k::affine::load(&m).ctx("load")?.launch(&s, cfg(n), &dx, &mut out).ctx("launch")?;
    let want: Vec<f32> = x.iter().map(|&v| map.a * v + map.b).collect();
    check_all("the affine map", &out.to_vec().ctx("read")?, &want)?;

    let mut w = c.gpu.zeroed::<u32>(1000).ctx("alloc")?;
    k::wide_and_halves::load(&m).ctx("load")?.launch(&s, cfg(1000), &mut w).ctx("launch")?;
    let (wide, halves) = ([[1u32, 2, 3, 4], [5, 6, 7, 8]], [7u32, 8, 9]);
    let want: Vec<u32> = (0..1000).map(|i| wide[i / 4 % 2][i % 4] + halves[i % 3]).collect();
    check_all("16-byte and 2-byte constants", &w.to_vec().ctx("read")?, &want)
}

fn counters(c: &Ctx) -> TestResult {
    let mut r = rng("globals_device_counter_and_histogram");
    let m = own_module(c)?;
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    let n = 1 << 20;
    let x: Vec<f32> = (0..n).map(|_| r.random::<f32>()).collect();
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let count = k::count_above::load(&m).ctx("load")?;
    let above = m.global(&k::ABOVE).ctx("global ABOVE")?;
    ensure(above.get().ctx("get")? == 0, || "ABOVE starts at its initializer, 0".into())?;
    let (t1, t2) = (0.25f32, 0.75f32);
    let want = |t: f32| x.iter().filter(|&&v| v > t).count() as u32;
    // Two launches on two streams update the counter concurrently (atomics), then the host
    // reads it: `get` waits for both.
    count.launch(&s1, cfg(n), &dx, t1, 0).ctx("launch")?;
    count.launch(&s2, cfg(n), &dx, t2, 0).ctx("launch")?;
    let got = above.get().ctx("get")?;
    ensure(got == want(t1) + want(t2), || format!("ABOVE = {got}, want {} + {}", want(t1), want(t2)))?;
    // Set from the host, then counted on: the kernel adds to the value set.
    above.set(&s1, &1000).ctx("set")?;
    count.launch(&s2, cfg(n), &dx, t1, 0).ctx("launch")?;
    let got = above.get().ctx("get")?;
    ensure(got == 1000 + want(t1), || format!("ABOVE = {got} after set(1000), want {}", 1000 + want(t1)))?;

    // A histogram in a global array of atomics, from two streams.
    let h = k::histogram16::load(&m).ctx("load")?;
    let bins = m.global(&k::BINS).ctx("global BINS")?;
    let a: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let b: Vec<u32> = (0..n / 3).map(|_| r.random()).collect();
    let (da, db) = (c.gpu.upload(&a).ctx("upload")?, c.gpu.upload(&b).ctx("upload")?);
    let start: [u32; 16] = std::array::from_fn(|i| i as u32 * 10);
    bins.set(&s1, &start).ctx("set")?;
    h.launch(&s1, cfg(a.len()), &da).ctx("launch")?;
    h.launch(&s2, cfg(b.len()), &db).ctx("launch")?;
    let mut want_bins = start;
    for v in a.iter().chain(&b) {
        want_bins[(v % 16) as usize] += 1;
    }
    check_all("the histogram in a global", &bins.get().ctx("get")?, &want_bins)
}

fn host_set_global(c: &Ctx) -> TestResult {
    let mut r = rng("globals_host_set_global_read_by_kernel");
    let m = own_module(c)?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let n = 65_537;
    let x: Vec<f32> = (0..n).map(|_| r.random_range(-100.0f32..100.0)).collect();
    let dx = c.gpu.upload(&x).ctx("upload")?;
    let mut out = c.gpu.zeroed::<f32>(n).ctx("alloc")?;
    let add = k::add_offsets::load(&m).ctx("load")?;
    let offsets = m.global(&k::OFFSETS).ctx("global OFFSETS")?;
    for round in 0..3 {
        let o: [f32; 4] = std::array::from_fn(|_| r.random_range(-10.0f32..10.0));
        offsets.set(&s, &o).ctx("set")?;
        add.launch(&s, cfg(n), &dx, &mut out).ctx("launch")?;
        let want: Vec<f32> = x.iter().enumerate().map(|(i, &v)| v + o[i % 4]).collect();
        check_all(&format!("round {round}: x + OFFSETS"), &out.to_vec().ctx("read")?, &want)?;
        ensure(offsets.get().ctx("get")? == o, || "OFFSETS reads back".into())?;
    }
    // A global nobody set: its initializer, seen by the kernel and by the host.
    let seven = m.global(&k::SEVEN).ctx("global SEVEN")?;
    let mut o = c.gpu.zeroed::<u64>(300).ctx("alloc")?;
    k::read_seven::load(&m).ctx("load")?.launch(&s, cfg(300), &mut o).ctx("launch")?;
    check_all("SEVEN in a kernel", &o.to_vec().ctx("read")?, &[7u64; 300])?;
    ensure(seven.get().ctx("get")? == 7, || "SEVEN on the host".into())
}
