//! Device memory (the runtime's `memory`): asynchronous copies and fills, and views that copy
//! exactly their range — against CPU references. (The `streams_*` and `runtime_checks_*` names
//! are kept.)


use cohort_runtime::Error;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

use super::streams::{non_blocking, N};

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("streams_async_copies_and_fills_match_the_cpu", async_copies),
        gpu_trial("runtime_checks_views_copy_their_range", views_copy_their_range),
        gpu_trial("memory_split_views_are_disjoint_and_written_at_once", split_views),
    ]
}

fn async_copies(c: &Ctx) -> TestResult {
    let s = non_blocking(c)?;
    let s2 = non_blocking(c)?;
    let mut rng = rng("async_copies");
    let data: Vec<f32> = (0..N).map(|_| rng.random_range(-1e3..1e3)).collect();
    let host = c.gpu.pinned_from(&data).ctx("pinned")?;
    let mut dev = c.gpu.zeroed::<f32>(N).ctx("alloc")?;
    let mut dev2 = c.gpu.upload(&vec![-1.0f32; N]).ctx("alloc")?;
    let mut back = c.gpu.pinned::<f32>(N).ctx("pinned")?;
    // H2D whole, D2D a sub-range on another stream, D2H sub-ranges into a pinned sub-slice.
    s.copy(&host, &mut dev).ctx("h2d")?;
    s2.copy(dev.slice(100..N - 100), dev2.slice_mut(0..N - 200)).ctx("d2d")?;
    s.copy(dev2.slice(0..1000), back.slice_mut(5000..6000)).ctx("d2h part")?;
    s2.copy(host.slice(10..20), dev2.slice_mut(N - 10..)).ctx("h2d part")?;
    let mut want2: Vec<f32> = data[100..N - 100].to_vec();
    want2.extend_from_slice(&vec![-1.0; 190]);
    want2.extend_from_slice(&data[10..20]);
    check_all("d2d of a sub-range, h2d of a part", &dev2.to_vec().ctx("read")?, &want2)?;
    let mut want_back = vec![0.0f32; N];
    want_back[5000..6000].copy_from_slice(&want2[..1000]);
    check_all("d2h into a pinned sub-slice", back.as_slice().ctx("host view")?, &want_back)?;
    // Fills: 32-bit, 16-bit, bytes, on parts.
    let mut words = c.gpu.upload(&vec![0u32; N]).ctx("alloc")?;
    s.fill(&mut words, 0xdead_beef).ctx("fill u32")?;
    s2.fill(words.slice_mut(10..20), 7).ctx("fill part")?;
    let mut want = vec![0xdead_beefu32; N];
    want[10..20].fill(7);
    check_all("32-bit fills", &words.to_vec().ctx("read")?, &want)?;
    let mut floats = c.gpu.zeroed::<f32>(1000).ctx("alloc")?;
    s.fill(&mut floats, 1.5f32).ctx("fill f32")?;
    check_all("f32 fill", &floats.to_vec().ctx("read")?, &vec![1.5f32; 1000])?;
    let mut halves = c.gpu.zeroed::<u16>(1001).ctx("alloc")?;
    s.fill(&mut halves, 0xabcdu16).ctx("fill u16")?;
    check_all("u16 fill", &halves.to_vec().ctx("read")?, &vec![0xabcdu16; 1001])?;
    s.fill_bytes(words.slice_mut(..4), 0x5a).ctx("fill bytes")?;
    check_all("byte fill", &words.slice(..4).to_vec().ctx("read")?, &[0x5a5a_5a5au32; 4])?;
    // Wrong lengths and wide fills are errors, and change nothing.
    let e = s.copy(&host, dev2.slice_mut(..10)).err().ok_or("copy of unequal lengths accepted")?;
    ensure(matches!(e, Error::Argument(_)) && e.to_string().contains("65536"), || e.to_string())?;
    let mut wide = c.gpu.zeroed::<u64>(4).ctx("alloc")?;
    ensure(s.fill(&mut wide, 1u64).is_err(), || "8-byte fill accepted".into())?;
    ensure(s.fill(&mut back, 1.0f32).is_err(), || "fill of host memory accepted".into())?;
    check_all("after refused operations", &dev2.to_vec().ctx("read")?, &want2)?;
    s.synchronize().ctx("sync")?;
    s2.synchronize().ctx("sync")
}

fn views_copy_their_range(c: &Ctx) -> TestResult {
    let data: Vec<u32> = (0..100).collect();
    let mut buf = c.gpu.upload(&data).ctx("upload")?;
    check_all("slice(10..20)", &buf.slice(10..20).to_vec().ctx("read")?, &data[10..20])?;
    check_all("slice(..=4)", &buf.slice(..=4).to_vec().ctx("read")?, &data[..=4])?;
    check_all("slice(95..)", &buf.slice(95..).to_vec().ctx("read")?, &data[95..])?;
    ensure(buf.slice(100..).is_empty(), || "slice(100..) is not empty".into())?;
    buf.slice_mut(50..=51).copy_from(&[7, 7]).ctx("write a view")?;
    let mut want = data.clone();
    want[50..=51].copy_from_slice(&[7, 7]);
    check_all("after writing a view", &buf.to_vec().ctx("read")?, &want)
}

/// `split_at_mut` / `chunks_mut` / views of views: each part is written by its own kernel on its
/// own stream, and every element holds its part's pattern (no part wrote past its end, no
/// write was lost). Each part is its own tracked range (the runtime's `track` orders only
/// overlapping ranges).
fn split_views(c: &Ctx) -> TestResult {
    use cohort_test_kernels::memory::pattern;
    let k = pattern::load(&c.tests).ctx("load")?;
    let n = 10_000usize;
    let mid = 3_333usize;
    let want_of = |seed: u32, i: usize| seed ^ (i as u32).wrapping_mul(0x9e37_79b9);
    let mut buf = c.gpu.upload(&vec![0xdead_beefu32; n]).ctx("upload")?;
    let (s1, s2) = (non_blocking(c)?, non_blocking(c)?);
    {
        let (mut lo, mut hi) = buf.split_at_mut(mid);
        ensure(lo.len() == mid && hi.len() == n - mid, || format!("halves of {} and {}", lo.len(), hi.len()))?;
        k.launch(&s1, cohort_runtime::LaunchConfig::for_elements(mid, 128), &mut lo, 1).ctx("low half")?;
        k.launch(&s2, cohort_runtime::LaunchConfig::for_elements(n - mid, 128), &mut hi, 2).ctx("high half")?;
    }
    let got = buf.to_vec().ctx("read")?;
    let want: Vec<u32> = (0..n).map(|i| if i < mid { want_of(1, i) } else { want_of(2, i - mid) }).collect();
    check_all("two halves", &got, &want)?;
    // Chunks of 999 (the last shorter), each on alternating streams; then a view of a view.
    for (j, mut part) in buf.chunks_mut(999).into_iter().enumerate() {
        let s = if j % 2 == 0 { &s1 } else { &s2 };
        let len = part.len();
        k.launch(s, cohort_runtime::LaunchConfig::for_elements(len, 128), &mut part, 10 + j as u32).ctx("chunk")?;
    }
    let got = buf.to_vec().ctx("read")?;
    let want: Vec<u32> = (0..n).map(|i| want_of(10 + (i / 999) as u32, i % 999)).collect();
    check_all("chunks of 999", &got, &want)?;
    {
        let mut whole = buf.as_view_mut();
        let mut inner = whole.slice_mut(100..200);
        let (mut a, _) = inner.slice_mut(..).split_at_mut(40);
        k.launch(&s1, cohort_runtime::LaunchConfig::for_elements(40, 64), &mut a, 99).ctx("view of a view")?;
    }
    let got = buf.to_vec().ctx("read")?;
    let mut want2 = want;
    for (i, w) in want2[100..140].iter_mut().enumerate() {
        *w = want_of(99, i);
    }
    check_all("view of a view", &got, &want2)?;
    let (r1, r2) = buf.split_at(5);
    check_all("split_at", &[r1.to_vec().ctx("read")?, r2.slice(..3).to_vec().ctx("read")?].concat(), &want2[..8])
}
