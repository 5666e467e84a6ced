//! `cohort::mutex`: a lock on global and shared memory guards a read-modify-write that every
//! thread makes, against CPU references. (The `atomic_*` names are kept; the spinning test runs
//! last, as `atomic.rs`'s.)

use std::time::Duration;
use cohort_kernels::atomics as wk;
use cohort_test_kernels::atomic_ops as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, gpu_trial};
use libtest_mimic::Trial;

use super::atomic::sync_within;

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("atomic_tutorial_mutex_add_one", mutex_add_one),
    ]
}

/// Tests whose kernels spin on other threads (run last: a hang there stops only them).
pub fn spinning_trials() -> Vec<Trial> {
    vec![
        gpu_trial("atomic_zz_mutex_global_and_shared", mutexes),
    ]
}

fn mutex_add_one(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut lock = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    let mut x = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
    wk::mutex_add_one::load(&c.module).ctx("load")?.launch(&s, (10u32, 16u32), &mut lock, &mut x).ctx("launch")?;
    check_all("mutex add_one", &x.to_vec().ctx("read")?, &[160])
}

fn mutexes(c: &Ctx) -> TestResult {
    let s = c.gpu.new_stream().ctx("stream")?;
    let kern = k::mutex_counters::load(&c.tests).ctx("load")?;
    for spin in [0u32, 1] {
        let (blocks, threads) = (64u32, 128u32);
        let mut lock = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
        let mut counter = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
        let mut held = c.gpu.upload(&[1u32]).ctx("alloc")?;
        let mut tries = c.gpu.zeroed::<u32>(1).ctx("alloc")?;
        let mut per_block = c.gpu.zeroed::<u32>(blocks as usize).ctx("alloc")?;
        kern.launch(&s, (blocks, threads), spin, &mut lock, &mut counter, &mut held, &mut tries, &mut per_block)
            .ctx("launch")?;
        sync_within(&s, &c.gpu, Duration::from_secs(30))?;
        let what = if spin == 1 { "lock_spin" } else { "lock (backoff)" };
        check_all(&format!("{what}: global counter"), &counter.to_vec().ctx("read")?, &[blocks * threads])?;
        check_all(&format!("{what}: lock free afterwards"), &lock.to_vec().ctx("read")?, &[0])?;
        check_all(&format!("{what}: try_lock on a held mutex never succeeds"), &tries.to_vec().ctx("read")?, &[0])?;
        check_all(
            &format!("{what}: shared-memory mutex counters"),
            &per_block.to_vec().ctx("read")?,
            &vec![threads; blocks as usize],
        )?;
    }
    Ok(())
}
