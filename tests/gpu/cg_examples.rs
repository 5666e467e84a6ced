//! The Cooperative Groups chapter's examples, each with its known answer.

use cohort_runtime::LaunchConfig;
use cohort_test_kernels::cg_examples as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("cg_example_block_sum_with_thread_block_parameter", block_sum),
        gpu_trial("cg_example_leader_loads_shared_value", leader_load),
        gpu_trial("cg_example_tile4_hello", tile4_hello),
        gpu_trial("cg_example_first_warp_only", first_warp),
        gpu_trial("cg_example_aggregated_atomic_increment", aggregated_inc),
        gpu_trial("cg_example_odd_even_binary_partition", odd_even),
        gpu_trial("cg_example_memcpy_async_one_stage", |c| memcpy(c, false)),
        gpu_trial("cg_example_memcpy_async_two_stages_wait_prior", |c| memcpy(c, true)),
        gpu_trial("cg_example_block_reduce", block_reduce),
        gpu_trial("cg_example_tile8_inclusive_scan", tile8_scan),
        gpu_trial("cg_example_exclusive_scan_buffer_allocation", buffer_allocation),
    ]
}

fn block_sum(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_block_sum");
    let (blocks, block) = (6u32, 256u32);
    let data: Vec<i32> = (0..blocks * block).map(|_| r.random_range(-1000..1000)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![i32::MIN; blocks as usize]).ctx("alloc")?;
    k::example_block_sum::load(&c.tests).ctx("load")?.launch(&s, (blocks, block), &dd, &mut out).ctx("launch")?;
    let want: Vec<i32> = data.chunks(block as usize).map(|b| b.iter().sum()).collect();
    check_all("block sums", &out.to_vec().ctx("read")?, &want)
}

fn leader_load(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_leader_load");
    let (blocks, block) = (5u32, 96u32);
    let input: Vec<u32> = (0..blocks).map(|_| r.random_range(0..1 << 30)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let di = c.gpu.upload(&input).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![u32::MAX; (blocks * block) as usize]).ctx("alloc")?;
    k::example_leader_load::load(&c.tests).ctx("load")?.launch(&s, (blocks, block), &di, &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..blocks * block).map(|i| input[(i / block) as usize] + i % block).collect();
    check_all("leader's value + rank", &out.to_vec().ctx("read")?, &want)
}

fn tile4_hello(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::example_tile4_hello::load(&c.tests).ctx("load")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        kern.launch(&s, (1u32, 64u32))?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    let mut got: Vec<u32> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Hello from tile4 rank 0: "))
        .map(|n| n.trim().parse().map_err(|e| format!("bad line {n:?}: {e}")))
        .collect::<Result<_, _>>()?;
    got.sort_unstable();
    let want: Vec<u32> = (0..64).step_by(4).collect();
    ensure(got == want, || format!("printed block ranks {got:?}, want {want:?}\n{text}"))
}

fn first_warp(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_first_warp");
    let data: Vec<u32> = (0..32).map(|_| r.random_range(0..1000)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![u32::MAX; 128]).ctx("alloc")?;
    k::example_first_warp::load(&c.tests).ctx("load")?.launch(&s, (1u32, 128u32), &dd, &mut out).ctx("launch")?;
    let mut want = vec![u32::MAX; 128];
    let mut acc = 0;
    for (i, v) in data.iter().enumerate() {
        acc += v;
        want[i] = acc;
    }
    check_all("only warp 0 writes its prefix sums", &out.to_vec().ctx("read")?, &want)
}

fn aggregated_inc(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_aggregated_inc");
    let n = 100_003;
    let data: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let selected = data.iter().filter(|v| *v % 3 == 0).count() as u32;
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let kern = k::example_aggregated_inc::load(&c.tests).ctx("load")?;
    let mut results = Vec::new();
    for form in [0u32, 1] {
        let mut counter = c.gpu.zeroed::<u32>(2).ctx("alloc")?;
        let mut out = c.gpu.upload(&vec![0u32; n]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::for_elements(n, 256), &dd, form, &mut counter, &mut out).ctx("launch")?;
        let count = counter.to_vec().ctx("read")?[form as usize];
        ensure(count == selected, || format!("form {form}: counter {count}, want {selected}"))?;
        let got = out.to_vec().ctx("read")?;
        let mut slots: Vec<u32> = got.iter().zip(&data).filter(|(_, v)| *v % 3 == 0).map(|(s, _)| *s).collect();
        ensure(got.iter().zip(&data).all(|(s, v)| (v % 3 == 0) != (*s == u32::MAX)), || {
            format!("form {form}: a thread's slot does not match its selection")
        })?;
        slots.sort_unstable();
        ensure(slots.iter().enumerate().all(|(k, &s)| s == k as u32), || {
            format!("form {form}: slots are not 0..{selected} exactly once")
        })?;
        results.push(slots);
    }
    ensure(results[0] == results[1], || "the intrinsics and coalesced-group forms differ".into())
}

fn odd_even(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_odd_even");
    let n = 4 * 128;
    let data: Vec<u32> =
        (0..n).map(|i| if i / 32 == 5 { 2 * r.random_range(0..100) } else { r.random_range(0..1000) }).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![[u32::MAX; 5]; n]).ctx("alloc")?;
    k::example_odd_even::load(&c.tests).ctx("load")?.launch(&s, (4u32, 128u32), &dd, &mut out).ctx("launch")?;
    let want: Vec<[u32; 5]> = (0..n)
        .map(|i| {
            let base = i / 32 * 32;
            let odd = |j: usize| data[j] & 1 == 1;
            let mine: Vec<usize> = (base..base + 32).filter(|&j| odd(j) == odd(i)).collect();
            let rank = mine.iter().position(|&j| j == i).unwrap() as u32;
            let split = mine.len() < 32;
            [
                mine.len() as u32,
                rank,
                if split { odd(i) as u32 } else { 0 },
                if split { 2 } else { 1 },
                mine.iter().map(|&j| data[j]).sum(),
            ]
        })
        .collect();
    check_all("odd/even partitions: size, rank, meta rank, meta size, sum", &out.to_vec().ctx("read")?, &want)
}

fn memcpy(c: &Ctx, two_stage: bool) -> TestResult {
    let mut r = rng(if two_stage { "cg_example_memcpy_two" } else { "cg_example_memcpy_one" });
    let blocks = 4usize;
    let n = blocks * 16 * 1024;
    let data: Vec<i32> = (0..n).map(|_| r.random_range(-1 << 20..1 << 20)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![i32::MIN; n]).ctx("alloc")?;
    let cfg = LaunchConfig::new(blocks as u32, 96);
    if two_stage {
        k::example_memcpy_two_stage::load(&c.tests).ctx("load")?.launch(&s, cfg, &dd, &mut out).ctx("launch")?;
    } else {
        k::example_memcpy_one_stage::load(&c.tests).ctx("load")?.launch(&s, cfg, &dd, &mut out).ctx("launch")?;
    }
    let want: Vec<i32> = data.iter().map(|v| 2 * v + 1).collect();
    check_all("16K ints per block through 128 ints of shared memory", &out.to_vec().ctx("read")?, &want)
}

fn block_reduce(c: &Ctx) -> TestResult {
    let mut r = rng("cg_example_block_reduce");
    let (blocks, per_block) = (7usize, 10_000usize);
    let data: Vec<i32> = (0..blocks * per_block).map(|_| r.random_range(-1000..1000)).collect();
    let s = c.gpu.new_stream().ctx("stream")?;
    let dd = c.gpu.upload(&data).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![i32::MIN; blocks]).ctx("alloc")?;
    k::example_block_reduce::load(&c.tests)
        .ctx("load")?
        .launch(&s, (blocks as u32, 256u32), &dd, per_block as u32, &mut out)
        .ctx("launch")?;
    let want: Vec<i32> = data.chunks(per_block).map(|b| b.iter().sum()).collect();
    check_all("per-block totals", &out.to_vec().ctx("read")?, &want)
}

fn tile8_scan(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::example_tile8_scan::load(&c.tests).ctx("load")?;
    let mut out = c.gpu.upload(&vec![u32::MAX; 128]).ctx("alloc")?;
    let (res, text) = cohort_runtime::capture_stdout(|| {
        kern.launch(&s, (2u32, 64u32), &mut out)?;
        s.synchronize()
    })
    .ctx("capture")?;
    res.ctx("launch")?;
    let seq = [0u32, 1, 3, 6, 10, 15, 21, 28];
    let mut lines: Vec<&str> = text.lines().filter(|l| l.contains(": ")).collect();
    lines.sort_unstable();
    let want_lines: Vec<String> = seq.iter().enumerate().map(|(k, v)| format!("{k}: {v}")).collect();
    ensure(lines == want_lines.iter().map(String::as_str).collect::<Vec<_>>(), || format!("printed:\n{text}"))?;
    check_all("0 1 3 6 10 15 21 28 in every tile of 8", &out.to_vec().ctx("read")?, &seq.repeat(16))
}

fn buffer_allocation(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, block) = (3usize, 256usize);
    let mut out = c.gpu.upload(&vec![-1i32; blocks * 2048]).ctx("alloc")?;
    let mut used = c.gpu.upload(&vec![-1i32; blocks]).ctx("alloc")?;
    k::example_buffer_allocation::load(&c.tests)
        .ctx("load")?
        .launch(&s, (blocks as u32, block as u32), &mut out, &mut used)
        .ctx("launch")?;
    let per_block = block / 2 * 3;
    check_all("slots used per block", &used.to_vec().ctx("read")?, &vec![per_block as i32; blocks])?;
    let got = out.to_vec().ctx("read")?;
    // Tiles allocate in whatever order they reach the atomic, but each tile's pattern is
    // {0, 0, 1, 0, 0, 1, …} (rank 0 needs 1 slot, rank 1 needs 2): so is the whole buffer.
    for b in 0..blocks {
        let buf = &got[b * 2048..b * 2048 + per_block];
        let want: Vec<i32> = [0, 0, 1].repeat(block / 2);
        check_all(&format!("block {b}: buffer"), buf, &want)?;
    }
    Ok(())
}
