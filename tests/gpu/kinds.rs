//! Parameter kinds through type aliases and named lifetimes: `#[kernel]` takes a parameter's
//! kind from its type (`cohort::abi::KernelParam` / `cohort_runtime::KernelArg`), so a kernel
//! written with aliases launches, tracks and checks its arguments as the same kernel spelled
//! out — each output element against a CPU reference.

use cohort_runtime::{AppendBuffer, LaunchConfig};
use cohort_test_kernels::kinds as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

use crate::matrix::writer;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("kinds_aliased_slices_values_and_appends", aliased_slices),
        gpu_trial("kinds_aliased_matrices", aliased_matrix),
        gpu_trial("kinds_named_lifetimes", named_lifetime),
    ]
}

fn aliased_slices(c: &Ctx) -> TestResult {
    // The same ABI record as the kernel spelled out: each parameter has the same kind.
    ensure(k::aliased_slices::ABI == k::spelled_slices::ABI, || {
        format!("ABI records differ: {:?} / {:?}", k::aliased_slices::ABI, k::spelled_slices::ABI)
    })?;
    let mut r = rng("kinds_aliased_slices");
    let n = 1000usize;
    let data: Vec<u32> = (0..n).map(|_| r.random_range(0..1_000_000)).collect();
    let factor = 7u32;
    let s = c.gpu.new_stream().ctx("stream")?;
    let input = c.gpu.upload(&data).ctx("upload")?;
    let aliased = k::aliased_slices::load(&c.tests).ctx("load")?;
    let spelled = k::spelled_slices::load(&c.tests).ctx("load")?;
    let blocks = n.div_ceil(128) as u32 + 1;
    let odd: Vec<u32> = data.iter().copied().filter(|v| v % 2 == 1).collect();
    for (name, aliased_kernel) in [("aliased", true), ("spelled", false)] {
        let mut out = c.gpu.upload(&vec![u32::MAX; n + 3]).ctx("alloc")?;
        let mut found = AppendBuffer::<u32>::new(&c.gpu, n).ctx("append")?;
        let mut counts = c.gpu.zeroed::<u32>(2).ctx("counts")?;
        let cfg = LaunchConfig::new(blocks, 128u32);
        let view = out.slice_mut(..n);
        if aliased_kernel {
            aliased.launch(&s, cfg, &input, view, &mut found, &mut counts, factor)
        } else {
            spelled.launch(&s, cfg, &input, view, &mut found, &mut counts, factor)
        }
        .ctx("launch")?;
        let mut want: Vec<u32> = data.iter().map(|v| v * factor + 1).collect();
        want.extend([u32::MAX; 3]);
        check_all(&format!("{name}: out"), &out.to_vec().ctx("read")?, &want)?;
        let mut got = found.to_vec().ctx("found")?;
        got.sort_unstable();
        let mut want_odd = odd.clone();
        want_odd.sort_unstable();
        check_all(&format!("{name}: appended odd values"), &got, &want_odd)?;
        let threads = blocks as usize * 128;
        check_all(&format!("{name}: counts"), &counts.to_vec().ctx("counts")?, &[n as u32, (threads - n) as u32])?;
    }
    Ok(())
}

fn aliased_matrix(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let (rows, cols) = (37usize, 50usize);
    let src_vals: Vec<u32> = (0..6).map(|i| 1000 * (i + 1)).collect();
    let src = c.gpu.upload(&src_vals).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![u32::MAX; rows * cols + 40]).ctx("alloc")?;
    let kern = k::aliased_matrix::load(&c.tests).ctx("load")?;
    let cfg = LaunchConfig::new((4u32, 6u32), (8u32, 4u32));
    let m = out.as_matrix_mut(rows, cols).ctx("matrix")?;
    kern.launch(&s, cfg, src.as_matrix(2, 3).ctx("src")?, m).ctx("launch")?;
    let mut want = vec![u32::MAX; rows * cols + 40];
    for r in 0..rows {
        for col in 0..cols {
            // Layout 0 of `shapes::writer` is `Cyclic<2, 3>`, the alias's layout.
            let [by, bx, ty, tx, kk, l] = writer(0, r, col);
            let code = ((by as u32) << 24)
                | ((bx as u32) << 16)
                | ((ty as u32) << 12)
                | ((tx as u32) << 6)
                | ((kk as u32) << 3)
                | l as u32;
            want[r * cols + col] = code.wrapping_add(src_vals[kk * 3 + l]);
        }
    }
    check_all("each element: its writer plus src(k, l)", &out.to_vec().ctx("read")?, &want)?;
    // The block shape of the `BlockShape` parameter is still enforced through the aliases.
    let m = out.as_matrix_mut(rows, cols).ctx("matrix")?;
    let bad = kern.launch(&s, LaunchConfig::new((4u32, 6u32), (4u32, 8u32)), src.as_matrix(2, 3).ctx("src")?, m);
    ensure(bad.is_err(), || "a launch with another block shape was accepted".into())
}

fn named_lifetime(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let data: Vec<u32> = (0..300u32).map(|i| i * 3).collect();
    let input = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![0u32; 300]).ctx("alloc")?;
    let cfg = LaunchConfig::new(3u32, 128u32);
    k::named_lifetime::load(&c.tests).ctx("load")?.launch(&s, cfg, &input, &mut out, 11).ctx("launch")?;
    let want: Vec<u32> = data.iter().map(|v| v + 11).collect();
    check_all("`'a`: out", &out.to_vec().ctx("read")?, &want)?;
    k::static_lifetime::load(&c.tests).ctx("load")?.launch(&s, cfg, &input, &mut out, 5).ctx("launch")?;
    let want: Vec<u32> = data.iter().map(|v| v + 5).collect();
    check_all("`'static`: out", &out.to_vec().ctx("read")?, &want)
}
