//! Thread-block clusters (`cohort::cg::cluster`, issue 27): the cluster group's members and the
//! grid's cluster members for 1-D, 2-D and 3-D cluster shapes of 1 to 16 blocks, distributed
//! shared memory (remote loads, remote atomics in the Programming Guide's histogram, remote
//! writes through the disjoint scheme, a stencil whose halo comes from the neighbours), early
//! returns in a cluster kernel, and the launches that must be `Err`s. Every element is checked
//! against a CPU reference. On a GPU below sm_90 the cluster launches are `Err`s (checked) and
//! the rest is skipped.

use cohort_runtime::{Dim3, Error, LaunchConfig};
use cohort_test_kernels::cluster as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, each_thread, ensure, gpu_trial, rng};
use libtest_mimic::Trial;
use rand::Rng;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("cluster_members_1d", |c| members(c, &[Dim3::new(1, 1, 1), Dim3::new(2, 1, 1), Dim3::new(4, 1, 1)])),
        gpu_trial("cluster_members_8_and_16", |c| members(c, &[Dim3::new(8, 1, 1), Dim3::new(16, 1, 1)])),
        gpu_trial("cluster_members_2d_3d", |c| members(c, &[Dim3::new(2, 2, 1), Dim3::new(1, 2, 2), Dim3::new(2, 2, 2)])),
        gpu_trial("cluster_remote_loads", remote_loads),
        gpu_trial("cluster_remote_loads_with_early_returns", remote_loads_early_return),
        gpu_trial("cluster_histogram_remote_atomics", histogram),
        gpu_trial("cluster_remote_store_own", store_own),
        gpu_trial("cluster_stencil_halo_from_neighbours", stencil),
        gpu_trial("cluster_impossible_launches_are_errs", impossible),
        gpu_trial("cluster_bench_kernels_dynamic_shared", bench_kernels),
        gpu_trial("cluster_split_barrier_arrive_wait", split_sum),
        gpu_trial("cluster_split_barrier_misuse", split_misuse),
    ]
}

/// Whether this device runs cluster launches (sm_90, or the CPU device); where it does not, a
/// cluster launch must be an `Err` naming the missing clusters, which this checks.
fn has_clusters(c: &Ctx) -> Result<bool, String> {
    if c.gpu.info().cc() >= 90 && c.tests.arch() >= 90 {
        return Ok(true);
    }
    let kern = k::cluster_members::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<[u32; 24]>(64).ctx("alloc")?;
    let r = kern.launch(&s, LaunchConfig::new(2, 32).with_cluster(2), &mut out);
    match r {
        Err(Error::InvalidLaunch { reason, .. }) if reason.contains("clusters") => Ok(false),
        other => Err(format!("a cluster launch below sm_90: {other:?}")),
    }
}

fn members(c: &Ctx, clusters: &[Dim3]) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let kern = k::cluster_members::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    for &cl in clusters {
        let grid = Dim3::new(cl.x * 2, cl.y * 3, cl.z);
        let block = if cl.volume() >= 8 { Dim3::new(32, 1, 1) } else { Dim3::new(8, 4, 2) };
        let n = (grid.volume() * block.volume()) as usize;
        let mut out = c.gpu.upload(&vec![[u32::MAX; 24]; n]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new(grid, block).with_cluster(cl), &mut out).ctx("launch")?;
        let got = out.to_vec().ctx("read back")?;
        let mut want = vec![[0u32; 24]; n];
        let nc = Dim3::new(grid.x / cl.x, grid.y / cl.y, grid.z / cl.z);
        for (b, t) in each_thread(grid, block) {
            let rank = (b.linear_in(grid) * block.volume() + t.linear_in(block)) as usize;
            let bi = Dim3::new(b.x % cl.x, b.y % cl.y, b.z % cl.z);
            let ci = Dim3::new(b.x / cl.x, b.y / cl.y, b.z / cl.z);
            let block_rank = bi.linear_in(cl) as u32;
            let bt = block.volume() as u32;
            want[rank] = [
                block_rank,
                cl.volume() as u32,
                cl.x,
                cl.y,
                cl.z,
                bi.x,
                bi.y,
                bi.z,
                cl.x * block.x,
                cl.y * block.y,
                cl.z * block.z,
                block_rank * bt + t.linear_in(block) as u32,
                cl.volume() as u32 * bt,
                1,
                ci.linear_in(nc) as u32,
                nc.volume() as u32,
                nc.x,
                nc.y,
                nc.z,
                ci.x,
                ci.y,
                ci.z,
                0,
                0,
            ];
        }
        check_all(&format!("cluster {cl:?} of grid {grid:?}: every member"), &got, &want)?;
    }
    Ok(())
}

/// `out[i] = Σ_r (r + 1) · input[thread t of block r of i's cluster]`, for the threads with
/// `t < live`; `u32::MAX` (untouched) for the others.
fn remote_sum_reference(input: &[u32], blocks: usize, threads: usize, cluster: usize, live: usize) -> Vec<u32> {
    let mut want = vec![u32::MAX; blocks * threads];
    for b in 0..blocks {
        let first = b / cluster * cluster;
        for t in 0..live {
            let mut sum = 0u32;
            for r in 0..cluster {
                sum = sum.wrapping_add((r as u32 + 1).wrapping_mul(input[(first + r) * threads + t]));
            }
            want[b * threads + t] = sum;
        }
    }
    want
}

fn remote_sum(c: &Ctx, cluster: u32, blocks: u32, threads: u32, live: u32) -> TestResult {
    let kern = k::cluster_remote_sum::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let n = (blocks * threads) as usize;
    let mut r = rng("cluster_remote_sum");
    let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let din = c.gpu.upload(&input).ctx("upload")?;
    let mut out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let cfg = LaunchConfig::new(blocks, threads).with_cluster(cluster);
    kern.launch(&s, cfg, &din, live, &mut out).ctx("launch")?;
    let want = remote_sum_reference(&input, blocks as usize, threads as usize, cluster as usize, live as usize);
    check_all(&format!("clusters of {cluster}, {live} of {threads} threads live"), &out.to_vec().ctx("read")?, &want)
}

fn remote_loads(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    for cluster in [1u32, 2, 4, 8, 16] {
        remote_sum(c, cluster, cluster * c.pick(8, 2), 128, 128)?;
    }
    Ok(())
}

/// Threads that return before the cluster sync (a whole warp and part of one): the sync lets
/// them through, the remaining threads' remote loads are right, and the launch ends.
fn remote_loads_early_return(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    for (cluster, live) in [(2u32, 100u32), (4, 33), (8, 1)] {
        remote_sum(c, cluster, cluster * 2, 128, live)?;
    }
    Ok(())
}

fn histogram(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let kern = k::cluster_histogram::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("cluster_histogram");
    let n = c.pick(1 << 20, 1 << 14);
    let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let din = c.gpu.upload(&input).ctx("upload")?;
    for (cluster, nbins) in [(1u32, 1024u32), (2, 2048), (4, 1024), (8, 8192), (16, 4096)] {
        let mut want = vec![0u32; nbins as usize];
        for &v in &input {
            want[(v % nbins) as usize] += 1;
        }
        let mut bins = c.gpu.zeroed::<u32>(nbins as usize).ctx("alloc")?;
        let cfg = LaunchConfig::new(cluster * c.pick(16, 2), 256).with_cluster(cluster);
        kern.launch(&s, cfg, &din, nbins, &mut bins).ctx("launch")?;
        check_all(&format!("{nbins} bins in clusters of {cluster}"), &bins.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

fn store_own(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let kern = k::cluster_store_own::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    for cluster in [1u32, 2, 4, 8] {
        let blocks = cluster * 2;
        let n = (blocks * 256) as usize;
        let mut out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new(blocks, 256).with_cluster(cluster), &mut out).ctx("launch")?;
        // Block `b` (rank `r` in its cluster) holds, in part `w` (of 256 / cluster), what block
        // `w` wrote: 1000·w + 100·r + j.
        let part = 256 / cluster;
        let mut want = vec![0u32; n];
        for b in 0..blocks {
            let r = b % cluster;
            for t in 0..256 {
                want[(b * 256 + t) as usize] = if t < part * cluster {
                    let (w, j) = (t / part, t % part);
                    1000 * w + 100 * r + j
                } else {
                    u32::MAX
                };
            }
        }
        let got = out.to_vec().ctx("read")?;
        // Past the parts (256 not a multiple of the cluster) nobody writes: garbage, skipped.
        let keep = |v: &[u32]| -> Vec<u32> {
            v.iter().enumerate().map(|(i, &x)| if (i % 256) as u32 >= part * cluster { 0 } else { x }).collect()
        };
        check_all(&format!("remote stores in clusters of {cluster}"), &keep(&got), &keep(&want))?;
    }
    Ok(())
}

fn stencil(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let kern = k::cluster_stencil::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("cluster_stencil");
    for cluster in [1u32, 2, 4, 8] {
        let (blocks, threads) = (cluster * c.pick(16, 2), 128u32);
        let n = (blocks * threads) as usize;
        let input: Vec<u32> = (0..n).map(|_| r.random_range(0..1 << 20)).collect();
        let din = c.gpu.upload(&input).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
        kern.launch(&s, LaunchConfig::new(blocks, threads).with_cluster(cluster), &din, &mut out).ctx("launch")?;
        let want: Vec<u32> = (0..n)
            .map(|i| {
                let l = if i > 0 { input[i - 1] } else { 0 };
                let rr = if i + 1 < n { input[i + 1] } else { 0 };
                l + 2 * input[i] + rr
            })
            .collect();
        check_all(&format!("stencil in clusters of {cluster}"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

fn expect_invalid(what: &str, r: Result<(), Error>, needles: &[&str]) -> TestResult {
    match r {
        Ok(()) => Err(format!("{what}: launched, expected an error")),
        Err(e @ Error::InvalidLaunch { .. }) => {
            let msg = e.to_string();
            for n in needles {
                ensure(msg.contains(n), || format!("{what}: the error does not mention `{n}`: {msg}"))?;
            }
            Ok(())
        }
        Err(e) => Err(format!("{what}: wrong error kind: {e:?}")),
    }
}

/// Each limit of a cluster launch, as an `Err` naming the kernel, the cluster and the limit;
/// the stream stays usable.
fn impossible(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    let plain = k::not_a_cluster_kernel::load(&c.tests).ctx("load")?;
    let mut out = c.gpu.zeroed::<u32>(64 * 32).ctx("alloc")?;
    expect_invalid(
        "a kernel without #[kernel(cluster)] in clusters of 2",
        plain.launch(&s, LaunchConfig::new(4, 32).with_cluster(2), &mut out),
        &["not_a_cluster_kernel", "(2,1,1)", "#[kernel(cluster)]"],
    )?;
    let kern = k::cluster_members::load(&c.tests).ctx("load")?;
    let mut out = c.gpu.zeroed::<[u32; 24]>(64 * 32).ctx("alloc")?;
    expect_invalid(
        "a cluster that does not divide the grid",
        kern.launch(&s, LaunchConfig::new(6, 32).with_cluster(4), &mut out),
        &["cluster_members", "x = 4", "x = 6"],
    )?;
    expect_invalid(
        "a cluster of 32 blocks",
        kern.launch(&s, LaunchConfig::new(32, 32).with_cluster(32), &mut out),
        &["cluster_members", "32 blocks", "16"],
    )?;
    expect_invalid(
        "a cluster dimension of 0",
        kern.launch(&s, LaunchConfig::new(4, 32).with_cluster((2, 0, 1)), &mut out),
        &["cluster_members", "0"],
    )?;
    // Still usable: a good launch after the refused ones, every element checked.
    kern.launch(&s, LaunchConfig::new(2, 32).with_cluster(2), &mut out).ctx("launch after the refusals")?;
    let got = out.to_vec().ctx("read")?;
    let ranks: Vec<u32> = got[..64].iter().map(|m| m[0]).collect();
    let want: Vec<u32> = (0..64).map(|i| i / 32).collect();
    check_all("block ranks after the refusals", &ranks, &want)
}

/// The kernels of `cohort bench clusters` (`cohort_kernels::clusters`) at small sizes: the
/// Programming Guide's histogram over dynamic shared memory (remote atomics through
/// `map_shared_rank_slice`) in clusters of 1-8 and without clusters, the cluster reduction and
/// the stencil with its halo from neighbour blocks, every element against the CPU.
fn bench_kernels(c: &Ctx) -> TestResult {
    use cohort_kernels::clusters as b;
    if !has_clusters(c)? {
        return Ok(());
    }
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut r = rng("cluster_bench_kernels");
    let n = c.pick(1 << 20, 3 * 4096 + 77);
    let raw: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let hist = b::cluster_hist::load(&c.module).ctx("load")?;
    let block_hist = b::block_hist::load(&c.module).ctx("load")?;
    for nbins in [1024usize, 4096] {
        let input: Vec<u32> = raw.iter().map(|v| v % (nbins as u32 + nbins as u32 / 8)).collect();
        let mut want = vec![0u32; nbins];
        for &v in &input {
            want[(v as usize).min(nbins - 1)] += 1;
        }
        let din = c.gpu.upload(&input).ctx("upload")?;
        for cs in [0u32, 1, 2, 4, 8] {
            let mut bins = c.gpu.zeroed::<u32>(nbins).ctx("alloc")?;
            let per_block = nbins / cs.max(1) as usize;
            let cfg = LaunchConfig::new(8 * c.pick(4, 1), 512).with_shared_mem((per_block * 4) as u32);
            if cs == 0 {
                block_hist.launch(&s, cfg, &din, nbins as u32, &mut bins).ctx("launch")?;
            } else {
                hist.launch(&s, cfg.with_cluster(cs), &din, nbins as u32, &mut bins).ctx("launch")?;
            }
            check_all(&format!("histogram of {nbins} bins, clusters of {cs}"), &bins.to_vec().ctx("read")?, &want)?;
        }
    }
    let din = c.gpu.upload(&raw).ctx("upload")?;
    let sum = b::cluster_sum::load(&c.module).ctx("load")?;
    let want = raw.iter().fold(0u32, |a, &v| a.wrapping_add(v));
    for cs in [1u32, 2, 4, 8] {
        let mut out = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
        sum.launch(&s, LaunchConfig::new(8 * c.pick(4, 1), 512).with_cluster(cs), &din, &mut out).ctx("launch")?;
        check_all(&format!("cluster sum, clusters of {cs}"), &out.to_vec().ctx("read")?, &[want])?;
    }
    let stencil = b::cluster_stencil3::load(&c.module).ctx("load")?;
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let l = if i > 0 { raw[i - 1] } else { 0 };
            let rr = if i + 1 < n { raw[i + 1] } else { 0 };
            l.wrapping_add(raw[i].wrapping_mul(2)).wrapping_add(rr)
        })
        .collect();
    let blocks = (n.div_ceil(512).div_ceil(8) * 8) as u32;
    for cs in [1u32, 2, 4, 8] {
        let mut out = c.gpu.zeroed::<u32>(n).ctx("alloc")?;
        stencil.launch(&s, LaunchConfig::new(blocks, 512).with_cluster(cs), &din, &mut out).ctx("launch")?;
        check_all(&format!("stencil, clusters of {cs}"), &out.to_vec().ctx("read")?, &want)?;
    }
    Ok(())
}

/// The split barrier: the three ways to wait, and threads that return between arrival and wait
/// (their token's drop waits), in clusters of 1, 2, 4 and 8.
fn split_sum(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    let kern = k::cluster_split_sum::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let threads = 128u32;
    for (cluster, mode, live) in [(1u32, 0u32, 128u32), (2, 0, 128), (4, 1, 128), (8, 2, 128), (2, 0, 40), (4, 1, 97)] {
        let blocks = cluster * c.pick(4, 2);
        let n = (blocks * threads) as usize;
        let mut r = rng("cluster_split_sum");
        let input: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let din = c.gpu.upload(&input).ctx("upload")?;
        let mut out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
        let cfg = LaunchConfig::new(blocks, threads).with_cluster(cluster);
        kern.launch(&s, cfg, &din, mode, live, &mut out).ctx("launch")?;
        let mut want = remote_sum_reference(&input, blocks as usize, threads as usize, cluster as usize, live as usize);
        for (i, w) in want.iter_mut().enumerate() {
            if (i as u32 % threads) < live {
                *w = w.wrapping_add((i as u32 % threads).wrapping_mul(3));
            }
        }
        check_all(
            &format!("split barrier, clusters of {cluster}, wait mode {mode}, {live} of {threads} threads live"),
            &out.to_vec().ctx("read")?,
            &want,
        )?;
    }
    Ok(())
}

/// A `cluster.sync()` or a second arrival between an arrival and its wait ends the launch with
/// a panic naming it; a forgotten token is waited for by the exit protocol (the launch ends).
fn split_misuse(c: &Ctx) -> TestResult {
    if !has_clusters(c)? {
        return Ok(());
    }
    for mode in 0..2u32 {
        if c.is_cpu() {
            split_misuse_case(&c.gpu, &c.tests, mode)?;
        } else {
            // On a GPU the report traps, which ends the CUDA context: each case in a child process.
            crate::launch::run_child(&format!("cluster-split-misuse-{mode}"))?;
        }
    }
    let kern = k::cluster_split_misuse::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.zeroed::<u32>(256).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(4, 64).with_cluster(2), 2u32, &mut out).ctx("forgotten token")?;
    check_all("forgotten token: every thread finished", &out.to_vec().ctx("read")?, &vec![1u32; 256])
}

/// Mode 0, `cluster.sync()` inside a split arrival's window; 1, a second `barrier_arrive` there:
/// an `Err` naming the misuse, the kernel and the call in `cluster.rs`.
fn split_misuse_case(gpu: &cohort_runtime::Gpu, tests: &cohort_runtime::Module, mode: u32) -> TestResult {
    let needle = if mode == 0 {
        "cluster.sync() while this thread has a split cluster arrival"
    } else {
        "a second cluster.barrier_arrive()"
    };
    let kern = k::cluster_split_misuse::load(tests).ctx("load")?;
    let s = gpu.new_stream().ctx("stream")?;
    let mut out = gpu.zeroed::<u32>(256).ctx("alloc")?;
    let r = kern.launch(&s, LaunchConfig::new(4, 64).with_cluster(2), mode, &mut out).and_then(|()| s.synchronize());
    let e = r.err().ok_or_else(|| format!("mode {mode}: the misuse did not fail the launch"))?;
    let msg = e.to_string();
    println!("ERROR AS RETURNED (split misuse {mode}): {msg}");
    for want in [needle, "cluster_split_misuse", "cluster.rs:"] {
        ensure(msg.contains(want), || format!("mode {mode}: the error does not say `{want}`: {msg}"))?;
    }
    Ok(())
}

/// A split-misuse case in a context of its own; for the child scenarios of `launch.rs`.
pub fn split_misuse_child(which: &str) -> Result<(), String> {
    let mode: u32 = which.trim_start_matches("cluster-split-misuse-").parse().map_err(|e| format!("{which}: {e}"))?;
    let gpu = cohort_runtime::Gpu::isolated_from_env().ctx("isolated context")?;
    let tests = gpu.load(&cohort_test_kernels::PTX).ctx("load")?;
    split_misuse_case(&gpu, &tests, mode)
}
