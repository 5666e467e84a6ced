//! `invoke_one`, `invoke_one_broadcast`, `reduce_update_async`, `reduce_store_async` on tiles
//! (8, 16, 32, 64, dynamic 4), coalesced groups and the block, against CPU references.

use cohort_test_kernels::invoke as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![gpu_trial("invoke_one_and_broadcast_every_group", invoke_groups), gpu_trial("reduce_async_every_group", reduce_async)]
}

const BLOCKS: usize = 4;
const BLOCK: usize = 192;

/// The global index of the coalesced group leader of thread `i`: the lowest lane of its warp
/// with the same `pred & 1`.
fn coalesced_leader(pred: &[u32], i: usize) -> usize {
    let base = i - i % 32;
    (base..base + 32).find(|&j| pred[j] & 1 == pred[i] & 1).unwrap()
}

fn invoke_groups(c: &Ctx) -> TestResult {
    let mut r = rng("invoke_one_groups");
    let n = BLOCKS * BLOCK;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let pred: Vec<u32> = (0..n).map(|_| r.random_range(0..4)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let (dv, dp) = (c.gpu.upload(&vals).ctx("upload")?, c.gpu.upload(&pred).ctx("upload")?);
    let mut hits = c.gpu.upload(&[0u32; 4]).ctx("alloc")?;
    let mut out = c.gpu.upload(&vec![[u32::MAX; 13]; n]).ctx("alloc")?;
    k::invoke_one_groups::load(&c.tests)
        .ctx("load")?
        .launch(&s, (BLOCKS as u32, BLOCK as u32), &dv, &dp, &mut hits, &mut out)
        .ctx("launch")?;
    let want: Vec<[u32; 13]> = (0..n)
        .map(|i| {
            let l = i % BLOCK;
            let (t8, t32, t64, t4) = (i - i % 8, i - i % 32, i - i % 64, i - i % 4);
            let lead = coalesced_leader(&pred, i);
            [
                (l % 8 == 0) as u32,
                (l == 0) as u32,
                (l % 64 == 0) as u32,
                vals[t8],
                t8 as u32,
                t32 as u32,
                vals[t32],
                vals[t64],
                t64 as u32,
                7,
                lead as u32,
                (lead == i) as u32,
                vals[t4],
            ]
        })
        .collect();
    check_all("per-thread results", &out.to_vec().ctx("read")?, &want)?;
    let groups = (0..n / 32)
        .map(|w| {
            let odd = pred[w * 32..w * 32 + 32].iter().filter(|p| *p & 1 == 1).count();
            1 + (odd != 0 && odd != 32) as u32
        })
        .sum::<u32>();
    let want_hits = [(n / 8) as u32, BLOCKS as u32, (n / 64) as u32, groups];
    check_all("calls per group kind", &hits.to_vec().ctx("read")?, &want_hits)
}

fn reduce_async(c: &Ctx) -> TestResult {
    let mut r = rng("reduce_async_groups");
    let n = BLOCKS * BLOCK;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let fvals: Vec<f32> = (0..n).map(|_| r.random_range(0..1000) as f32 - 500.0).collect();
    let pred: Vec<u32> = (0..n).map(|_| r.random_range(0..4)).collect();
    let init: Vec<u32> = (0..6 + BLOCKS).map(|_| r.random()).collect();
    let finit = [r.random_range(0..1000) as f32, -1.0e6f32];
    let winit = [r.random_range(0..1i64 << 40)];
    let s = c.gpu.new_stream().ctx("stream")?;
    let dv = c.gpu.upload(&vals).ctx("upload")?;
    let df = c.gpu.upload(&fvals).ctx("upload")?;
    let dp = c.gpu.upload(&pred).ctx("upload")?;
    let mut cells = c.gpu.upload(&init).ctx("upload")?;
    let mut fcells = c.gpu.upload(&finit).ctx("upload")?;
    let mut wide = c.gpu.upload(&winit).ctx("upload")?;
    let mut t8 = c.gpu.upload(&vec![u32::MAX; n / 8]).ctx("alloc")?;
    let mut t64 = c.gpu.upload(&vec![u32::MAX; n / 64]).ctx("alloc")?;
    k::reduce_async_groups::load(&c.tests)
        .ctx("load")?
        .launch(
            &s,
            (BLOCKS as u32, BLOCK as u32),
            &dv,
            &df,
            &dp,
            &mut cells,
            &mut fcells,
            &mut wide,
            &mut t8,
            &mut t64,
        )
        .ctx("launch")?;
    let sum = |it: &mut dyn Iterator<Item = u32>| it.fold(0u32, |a, b| a.wrapping_add(b));
    let mut want = vec![
        init[0].wrapping_add(sum(&mut vals.iter().copied())),
        init[1].max(*vals.iter().max().unwrap()),
        vals.iter().fold(init[2], |a, b| a ^ b),
        vals.iter().fold(init[3], |a, b| a.wrapping_mul(b | 1)),
        init[4].min(*vals.iter().min().unwrap()),
        init[5].wrapping_add(sum(&mut vals.iter().zip(&pred).filter(|(_, p)| *p & 1 == 1).map(|(v, _)| *v))),
    ];
    want.extend(vals.chunks(BLOCK).map(|b| sum(&mut b.iter().copied())));
    check_all("atomic cells", &cells.to_vec().ctx("read")?, &want)?;
    let want8: Vec<u32> = vals.chunks(8).map(|t| sum(&mut t.iter().copied())).collect();
    check_all("per-tile-8 sums (reduce_store_async through &mut)", &t8.to_vec().ctx("read")?, &want8)?;
    let want64: Vec<u32> = vals.chunks(64).map(|t| *t.iter().max().unwrap()).collect();
    check_all("per-tile-64 maxima (reduce_store_async through &mut)", &t64.to_vec().ctx("read")?, &want64)?;
    let fwant = [finit[0] + fvals.iter().sum::<f32>(), fvals.iter().copied().fold(finit[1], f32::max)];
    check_all("f32 cells", &fcells.to_vec().ctx("read")?, &fwant)?;
    let wwant = [vals.iter().map(|&v| v as i64 - (1 << 31)).fold(winit[0], i64::min)];
    let got = wide.to_vec().ctx("read")?;
    ensure(got == wwant, || format!("i64 cell: got {got:?}, want {wwant:?}"))
}
