//! `cohort::thread` basics: indices, extents, ranks. (Block barriers are `sync.rs`'s.)

use cohort_kernels::checks;
use cohort_runtime::{Dim3, LaunchConfig};
use cohort_tests::{Context, Ctx, TestResult, check_all, each_thread, gpu_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("thread_indices_1d", |c| indices(c, Dim3::new(7, 1, 1), Dim3::new(96, 1, 1))),
        gpu_trial("thread_indices_2d", |c| indices(c, Dim3::new(5, 3, 1), Dim3::new(16, 6, 1))),
        gpu_trial("thread_indices_3d", |c| indices(c, Dim3::new(3, 2, 2), Dim3::new(8, 4, 3))),
        gpu_trial("thread_cluster_registers_without_clusters", cluster_registers),
    ]
}

fn indices(c: &Ctx, grid: Dim3, block: Dim3) -> TestResult {
    let k = checks::thread_indices::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let total = (grid.volume() * block.volume()) as usize;
    let mut out = c.gpu.upload(&vec![[u64::MAX; 16]; total]).ctx("alloc")?;
    k.launch(&s, LaunchConfig::new(grid, block), &mut out).ctx("launch")?;
    let got = out.to_vec().ctx("read back")?;
    let mut want = vec![[0u64; 16]; total];
    for (b, t) in each_thread(grid, block) {
        let in_block = t.linear_in(block);
        let rank = b.linear_in(grid) * block.volume() + in_block;
        want[rank as usize] = [
            t.x as u64,
            t.y as u64,
            t.z as u64,
            b.x as u64,
            b.y as u64,
            b.z as u64,
            block.x as u64,
            block.y as u64,
            block.z as u64,
            grid.x as u64,
            grid.y as u64,
            grid.z as u64,
            in_block % 32,
            in_block / 32,
            in_block,
            rank,
        ];
    }
    check_all("per-thread indices", &got, &want)
}

/// `raw::cluster_ctarank` / `cluster_nctarank` (`%cluster_ctarank`, `%cluster_nctarank`): a
/// launch without clusters makes every block a cluster of one — rank 0 of 1 — read from the
/// registers on sm_90 hardware, and so below sm_90 and on the CPU device. (Cluster launches,
/// where they differ, come with issue 27.)
fn cluster_registers(c: &Ctx) -> TestResult {
    let k = cohort_test_kernels::cluster::cluster_ranks::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, threads) = (5u32, 64u32);
    let n = (blocks * threads) as usize;
    let mut out = c.gpu.upload(&vec![[u32::MAX; 2]; n]).ctx("alloc")?;
    k.launch(&s, LaunchConfig::new(blocks, threads), &mut out).ctx("launch")?;
    check_all("every thread's cluster rank and cluster size", &out.to_vec().ctx("read back")?, &vec![[0u32, 1]; n])
}
