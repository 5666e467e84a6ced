//! `cohort::slice`: the outputs that cannot alias — one writer per block or tile through
//! `leader_index`, slots claimed from an `AppendSlice`'s own counter — against CPU references.
//! (The `safety_*` names are kept.)

use cohort_runtime::LaunchConfig;
use cohort_test_kernels::safety as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("safety_block_and_tile_leaders_write_once", leaders),
        gpu_trial("safety_append_slice_claims_distinct_slots", compact),
        gpu_trial("slice_append_aggregated_and_reserved_chunks_claim_distinct_slots", compact_aggregated),
        gpu_trial("slice_last_index_holds_the_block_and_tile_totals", last_writers),
    ]
}

fn leaders(c: &Ctx) -> TestResult {
    let mut r = rng("safety_leaders");
    let kern = k::leaders::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, block) = (37usize, 128usize);
    let n = blocks * block - 5;
    let vals: Vec<u32> = (0..n).map(|_| r.random_range(0..1 << 20)).collect();
    let v = |i: usize| vals.get(i).copied().unwrap_or(0);
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut pb = c.gpu.upload(&vec![u32::MAX; blocks]).ctx("alloc")?;
    let mut p8 = c.gpu.upload(&vec![u32::MAX; blocks * block / 8]).ctx("alloc")?;
    let mut p64 = c.gpu.upload(&vec![u32::MAX; blocks * block / 64]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, block as u32), &d, &mut pb, &mut p8, &mut p64).ctx("launch")?;
    let sum = |lo: usize, len: usize| (lo..lo + len).map(v).fold(0u32, u32::wrapping_add);
    let want_b: Vec<u32> = (0..blocks).map(|b| (b as u32 * 1000).wrapping_add(sum(b * block, block))).collect();
    check_all("per block: the leader's write", &pb.to_vec().ctx("read")?, &want_b)?;
    let want8: Vec<u32> = (0..blocks * block / 8).map(|t| sum(t * 8, 8)).collect();
    check_all("per tile of 8", &p8.to_vec().ctx("read")?, &want8)?;
    let want64: Vec<u32> = (0..blocks * block / 64).map(|t| sum(t * 64, 64)).collect();
    check_all("per tile of 64", &p64.to_vec().ctx("read")?, &want64)
}

fn compact(c: &Ctx) -> TestResult {
    let mut r = rng("safety_compact");
    let kern = k::compact::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let n = 1 << 20;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut want: Vec<u32> = vals.iter().copied().filter(|v| v % 7 == 0).collect();
    want.sort_unstable();
    // Room for all: every multiple of 7 exactly once.
    let mut hits = cohort_runtime::AppendBuffer::<u32>::new(&c.gpu, want.len() + 100).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(264, 256), &d, 7u32, &mut hits).ctx("launch")?;
    let mut got = hits.to_vec().ctx("read")?;
    got.sort_unstable();
    check_all("compacted multiples of 7 (sorted)", &got, &want)?;
    // A second launch appends after the first; `clear` starts over.
    kern.launch(&s, LaunchConfig::new(264, 256), &d, 7u32, &mut hits).ctx("launch")?;
    ensure(hits.pushed().ctx("count")? == 2 * want.len() as u64, || "a second launch did not append".into())?;
    hits.clear().ctx("clear")?;
    // Too little room: the counter says how many were pushed, the slots hold distinct values.
    let mut small = cohort_runtime::AppendBuffer::<u32>::new(&c.gpu, 1000).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(264, 256), &d, 7u32, &mut small).ctx("launch")?;
    ensure(small.pushed().ctx("count")? == want.len() as u64, || "the counter does not count every push".into())?;
    let mut part = small.to_vec().ctx("read")?;
    ensure(part.len() == 1000, || format!("{} elements kept, capacity 1000", part.len()))?;
    part.sort_unstable();
    let mut pool = want.clone();
    for v in part {
        match pool.binary_search(&v) {
            Ok(at) => {
                pool.remove(at);
            }
            Err(_) => return Err(format!("{v} was kept but not pushed (or kept twice)")),
        }
    }
    Ok(())
}

/// `push_aggregated` (one atomic per group of lanes) and `reserve(2)` chunks: every multiple of 7
/// lands exactly once (chunks: it and its successor, in consecutive slots); with too little
/// room the counter still counts every slot asked for and the kept slots hold distinct pushes.
fn compact_aggregated(c: &Ctx) -> TestResult {
    let mut r = rng("slice_compact_aggregated");
    let kern = k::compact_aggregated::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let n = 1 << 18;
    let vals: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut want: Vec<u32> = vals.iter().copied().filter(|v| v % 7 == 0).collect();
    want.sort_unstable();
    let mut hits = cohort_runtime::AppendBuffer::<u32>::new(&c.gpu, 2 * want.len() + 64).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(96, 256), &d, 7u32, 0u32, &mut hits).ctx("launch aggregated")?;
    ensure(hits.pushed().ctx("count")? == want.len() as u64, || "aggregated: count".into())?;
    let mut got = hits.to_vec().ctx("read")?;
    got.sort_unstable();
    check_all("aggregated pushes (sorted)", &got, &want)?;
    hits.clear().ctx("clear")?;
    kern.launch(&s, LaunchConfig::new(96, 256), &d, 7u32, 1u32, &mut hits).ctx("launch chunks")?;
    let got = hits.to_vec().ctx("read")?;
    ensure(got.len() == 2 * want.len(), || format!("chunks: {} slots for {} values", got.len(), want.len()))?;
    // Each chunk is two consecutive slots starting at an even position: (v, v + 1).
    let mut firsts: Vec<u32> = Vec::with_capacity(want.len());
    for (j, pair) in got.chunks(2).enumerate() {
        ensure(pair[1] == pair[0].wrapping_add(1), || format!("chunk {j}: {pair:?} is not (v, v + 1)"))?;
        firsts.push(pair[0]);
    }
    firsts.sort_unstable();
    check_all("chunk values (sorted)", &firsts, &want)?;
    // Too little room: 1001 slots for 2 per value; the last chunk that straddles the end keeps
    // its first slot only.
    let mut small = cohort_runtime::AppendBuffer::<u32>::new(&c.gpu, 1001).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(96, 256), &d, 7u32, 1u32, &mut small).ctx("launch small")?;
    ensure(small.pushed().ctx("count")? == 2 * want.len() as u64, || "small: the counter counts every slot".into())?;
    let part = small.to_vec().ctx("read")?;
    ensure(part.len() == 1001, || format!("{} kept", part.len()))?;
    let mut kept: Vec<u32> = part.chunks(2).map(|p| p[0]).collect();
    kept.sort_unstable();
    kept.dedup();
    ensure(kept.len() == 501 && kept.iter().all(|v| want.binary_search(v).is_ok()), || "small: kept values".into())
}

/// `last_index`: the block's last thread writes the block total (xor its rank, which must be
/// `block - 1`), each tile of 32's last member the tile's inclusive-scan total.
fn last_writers(c: &Ctx) -> TestResult {
    let mut r = rng("slice_last_writers");
    let kern = k::last_writers::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, block) = (29usize, 96usize);
    let n = blocks * block - 7;
    let vals: Vec<u32> = (0..n).map(|_| r.random_range(0..1 << 24)).collect();
    let v = |i: usize| vals.get(i).copied().unwrap_or(0);
    let d = c.gpu.upload(&vals).ctx("upload")?;
    let mut pb = c.gpu.upload(&vec![u32::MAX; blocks]).ctx("alloc")?;
    let mut pt = c.gpu.upload(&vec![u32::MAX; blocks * block / 32]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, block as u32), &d, &mut pb, &mut pt).ctx("launch")?;
    let sum = |lo: usize, len: usize| (lo..lo + len).map(v).fold(0u32, u32::wrapping_add);
    let want_b: Vec<u32> = (0..blocks).map(|b| sum(b * block, block) ^ (block as u32 - 1)).collect();
    check_all("per block, by its last thread", &pb.to_vec().ctx("read")?, &want_b)?;
    let want_t: Vec<u32> = (0..blocks * block / 32).map(|t| sum(t * 32, 32)).collect();
    check_all("per tile of 32, by its last member", &pt.to_vec().ctx("read")?, &want_t)
}
