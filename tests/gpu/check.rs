//! Checked mode (`cohort::check`; the test kernels are built with it): each collective that only
//! part of its group reaches ends the launch with an `Err` naming the collective and the call
//! site, never wrong values or a hang. A failed check kills the process's CUDA context, so on a
//! GPU each case runs in a child process; on the CPU device (whose engine finds the same
//! divergence without checked mode, and whose failures are not sticky) in this one. Converged
//! controls run in the shared one.

use std::process::Command;

use cohort_runtime::LaunchConfig;
use cohort_test_kernels::check as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_trial};
use libtest_mimic::Trial;

/// Set in a child process to the case it runs.
const CHILD_VAR: &str = "COHORT_CHECK_CHILD";

/// A case: its name, what its error must say on a GPU (checked mode) and on the CPU device.
type Case = (&'static str, &'static [&'static [&'static str]], &'static [&'static [&'static str]]);

/// (case, what the error must say on a GPU, on the CPU device: each inner list is
/// alternatives, one of which must appear — the collective, the kernel source line of a call
/// site, the lanes or the other barrier; which half of a split group reports first is up to the
/// hardware, or the CPU device's schedule). Checked mode names the collective the user called
/// and says `divergence: `; the CPU device names the primitive it waits in (`shfl_xor` for a
/// reduce, `sync_threads` for a publish), at the user's call site, and calls threads at
/// different barriers a deadlock, naming both sites.
const CASES: [Case; 5] = [
    (
        "shfl",
        &[&["`shfl`"], &["check.rs:14:", "check.rs:16:"], &["group of lanes 0xffffffff"], &["divergence: "]],
        &[&["`shfl_idx`"], &["check.rs:14:", "check.rs:16:"], &["group of lanes 0xffffffff"], &["divergence: "]],
    ),
    (
        "reduce",
        &[&["`reduce`"], &["check.rs:27:"], &["lanes 0x55555555", "lanes 0xaaaaaaaa"], &["divergence: "]],
        &[&["`reduce`", "`shfl_xor`"], &["check.rs:27:"], &["lanes 0x55555555", "lanes 0xaaaaaaaa"], &["divergence: "]],
    ),
    (
        "sync_count",
        &[&["`sync_threads_count`"], &["check.rs:36:", "check.rs:38:"], &["another barrier"], &["divergence: "]],
        &[&["`sync_threads_count`"], &["check.rs:36:"], &["check.rs:38:"], &["deadlock in block"]],
    ),
    (
        "grid_skip",
        &[&["`grid.sync`"], &["check.rs:48:"], &["not every one of the 4 blocks"], &["divergence: "]],
        &[&["grid sync ("], &["check.rs:48:"], &["has exited"], &["deadlock"]],
    ),
    (
        "publish",
        &[&["`GridVec::publish`"], &["check.rs:80:", "check.rs:82:"], &["another barrier"], &["divergence: "]],
        &[&["`GridVec::publish`", "`sync_threads`"], &["check.rs:80:"], &["check.rs:82:"], &["deadlock in block"]],
    ),
];

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![gpu_trial("check_converged_collectives_are_not_reported", controls)];
    trials.push(gpu_trial("check_divergent_shfl_is_an_error", |c| in_child(c, 0)));
    trials.push(gpu_trial("check_divergent_reduce_is_an_error", |c| in_child(c, 1)));
    trials.push(gpu_trial("check_divergent_sync_threads_count_is_an_error", |c| in_child(c, 2)));
    trials.push(gpu_trial("check_skipped_grid_sync_is_an_error_not_a_hang", |c| in_child(c, 3)));
    trials.push(gpu_trial("check_grid_vec_published_divergently_is_an_error", |c| in_child(c, 4)));
    if std::env::var_os(CHILD_VAR).is_some() {
        trials.push(gpu_trial("check_child", |c| child(c, &std::env::var(CHILD_VAR).unwrap_or_default())));
    }
    trials
}

/// Runs case `case` in a child process (a failed check ends a GPU's CUDA context) or, on the CPU
/// device (where a failed check is an `Err` from the launch and nothing is sticky), in this one,
/// and checks the words of its error.
fn in_child(c: &Ctx, case: usize) -> TestResult {
    let (name, gpu_needles, cpu_needles) = CASES[case];
    let needles = if c.is_cpu() { cpu_needles } else { gpu_needles };
    let line = if c.is_cpu() {
        let line = divergent(c, name)?;
        println!("CHECKED MODE ERROR: {line}");
        line
    } else {
        let exe = std::env::current_exe().ctx("current_exe")?;
        let out = Command::new(exe)
            .args(["--exact", "check_child", "--test-threads=1"])
            .env(CHILD_VAR, name)
            .output()
            .ctx("spawn child")?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        // libtest may print the test's name on the same line before it.
        let marker = "CHECKED MODE ERROR: ";
        let line = text.lines().find_map(|l| l.find(marker).map(|at| &l[at + marker.len()..])).unwrap_or("");
        ensure(out.status.success() && !line.is_empty(), || format!("child `{name}` ({}):\n{text}", out.status))?;
        line.to_string()
    };
    for any_of in needles {
        ensure(any_of.iter().any(|n| line.contains(n)), || {
            format!("`{name}`: the error says none of {any_of:?}: {line}")
        })?;
    }
    Ok(())
}

/// In the child process: runs one divergent kernel; passes when its launch ends in the `Err`
/// that checked mode makes, printing it on one line for the parent.
fn child(c: &Ctx, case: &str) -> TestResult {
    let line = divergent(c, case)?;
    println!("CHECKED MODE ERROR: {line}");
    Ok(())
}

/// Runs one divergent kernel: its error (from the launch or the synchronize after it) on one
/// line, or a failure when it completes.
fn divergent(c: &Ctx, case: &str) -> Result<String, String> {
    let s = c.gpu.new_stream().ctx("stream")?;
    let mut out = c.gpu.upload(&vec![0u32; 4 * 256]).ctx("alloc")?;
    let cfg = LaunchConfig::new(4, 256);
    let launched = match case {
        "shfl" => k::diverge_shfl::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "reduce" => k::diverge_reduce::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "sync_count" => k::diverge_sync_count::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "grid_skip" => k::diverge_grid_skip::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut out),
        "publish" => {
            let mut a = cohort_runtime::GridVecBuffer::from_slice(&c.gpu, &[1u32; 64]).ctx("alloc")?;
            let mut b = cohort_runtime::GridVecBuffer::from_slice(&c.gpu, &[2u32; 64]).ctx("alloc")?;
            k::diverge_publish::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut a, &mut b, &mut out)
        }
        other => return Err(format!("no case `{other}`")),
    };
    match launched.and_then(|()| s.synchronize()) {
        Ok(()) => Err(format!("`{case}`: the divergent kernel completed without an error")),
        Err(e) => Ok(e.to_string().replace('\n', " ")),
    }
}

/// Converged uses of the same collectives (and divergent branches that each form their own
/// coalesced group) pass the checks and compute the right values.
fn controls(c: &Ctx) -> TestResult {
    let kern = k::converged_controls::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, block) = (6usize, 256usize);
    let n = blocks * block;
    let mut out = c.gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    kern.launch(&s, LaunchConfig::new(blocks as u32, block as u32), &mut out).ctx("launch")?;
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let w = i / 32 * 32;
            let a = w as u32;
            let b = (w..w + 32).map(|j| j as u32).fold(0u32, u32::wrapping_add);
            let blk = i / block * block;
            let cnt = (blk..blk + block).filter(|j| j % 3 == 0).count() as u32;
            let d = if i % 2 == 0 { 16 } else { 32 };
            a.wrapping_add(b).wrapping_add(cnt).wrapping_add(d)
        })
        .collect();
    check_all("converged collectives under checked mode", &out.to_vec().ctx("read")?, &want)
}
