//! `cohort::sync`: block barriers (`sync_threads_count`), against a CPU reference.

use cohort_kernels::checks;
use cohort_tests::{Context, Ctx, TestResult, check_all, gpu_trial};
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("sync_threads_count", sync_threads_count),
    ]
}

fn sync_threads_count(c: &Ctx) -> TestResult {
    let k = checks::block_barrier_count::load(&c.module).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, threads) = (5u32, 200u32);
    let mut out = c.gpu.upload(&vec![u32::MAX; (blocks * threads) as usize]).ctx("alloc")?;
    k.launch(&s, (blocks, threads), &mut out).ctx("launch")?;
    let want = vec![(0..threads).filter(|t| t % 3 == 0).count() as u32; (blocks * threads) as usize];
    check_all("__syncthreads_count", &out.to_vec().ctx("read")?, &want)
}
