//! Checked mode (`cohort::check`; the test kernels are built with it): each collective that only
//! part of its group reaches ends the launch with an `Err` naming the collective and the call
//! site, never wrong values or a hang. A failed check kills the process's CUDA context, so on a
//! GPU each case runs in a child process; on the CPU device (whose engine finds the same
//! divergence without checked mode, and whose failures are not sticky) in this one. Converged
//! controls run in the shared one.

use std::process::Command;

use cohort_runtime::LaunchConfig;
use cohort_test_kernels::check as k;
use cohort_tests::{Context, Ctx, TestResult, check_all, ensure, gpu_only_trial, gpu_trial};
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
const CASES: [Case; 15] = [
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
    // Issue 31: calls that share a source location (one macro expansion, one `#[track_caller]`
    // helper) are told apart; the report names the shared location and says so.
    (
        "macro_shfl",
        &[&["`shfl`"], &["check.rs:105:"], &[SAME_SITE], &["divergence: "]],
        &[&["`shfl_idx`"], &["check.rs:105:"], &[SAME_SITE], &["divergence: "]],
    ),
    (
        "helper_shfl",
        &[&["`shfl`"], &["check.rs:120:"], &[SAME_SITE], &["divergence: "]],
        &[&["`shfl_idx`"], &["check.rs:120:"], &[SAME_SITE], &["divergence: "]],
    ),
    (
        "macro_sync_count",
        &[&["`sync_threads_count`"], &["check.rs:135:"], &[SAME_SITE], &["divergence: "]],
        &[&["`sync_threads_count`"], &["check.rs:135:"], &[SAME_SITE], &["deadlock in block"]],
    ),
    (
        "helper_sync_count",
        &[&["`sync_threads_count`"], &["check.rs:149:"], &[SAME_SITE], &["divergence: "]],
        &[&["`sync_threads_count`"], &["check.rs:149:"], &[SAME_SITE], &["deadlock in block"]],
    ),
    // Grid syncs at two calls pass each other's barrier on a GPU: checked mode compares the
    // blocks' calls (the CPU device always does).
    (
        "grid_sites",
        &[
            &["`grid.sync`"],
            &["check.rs:159:", "check.rs:161:"],
            &["another grid sync (", "at another call"],
            &["divergence: "],
        ],
        &[&["`grid_sync`"], &["check.rs:159:"], &["check.rs:161:"], &["divergence: "]],
    ),
    // `reduce_grid` synchronizes on its scratch's own word, which a `grid.sync()` elsewhere does
    // not complete: the blocks wait (the report after 5 s in checked mode) instead of summing
    // partials not written yet.
    (
        "reduce_grid",
        &[&["`reduce_grid`", "`grid.sync`"], &["check.rs:"], &["not every one of the 4 blocks"], &["divergence: "]],
        &[&["`grid_sync`"], &["check.rs:175:"], &["check.rs:179:"], &["divergence: "]],
    ),
    // A warp that stands in for `publish` with barriers of its own (which the hardware's block
    // barrier counts as arrivals): the others must not read what it still writes.
    (
        "publish_stand_in",
        &[&["`sync_threads`", "`GridVec::publish`"], &["check.rs:210:"], &[SAME_SITE], &["divergence: "]],
        &[&["`sync_threads`"], &["check.rs:210:"], &[SAME_SITE], &["deadlock in block"]],
    ),
    // `invoke_one_broadcast` is a collective: its shuffle is checked like `shfl`'s.
    (
        "invoke_broadcast",
        &[&["`invoke_one_broadcast`"], &["check.rs:268:", "check.rs:270:"], &["group of lanes 0xffffffff"], &["divergence: "]],
        &[&["`shfl_idx`"], &["check.rs:268:", "check.rs:270:"], &["group of lanes 0xffffffff"], &["divergence: "]],
    ),
    // Tensor cores (issue 28): `mma.sync` and `ldmatrix` are `.aligned` warp instructions; a
    // warp split across two calls is reported, never executed (undefined on the hardware).
    (
        "mma",
        &[&["`mma_sync`"], &["mma.rs:188:", "mma.rs:190:"], &["group of lanes 0xffffffff"], &["divergence: "]],
        &[&["`mma_sync`"], &["mma.rs:188:", "mma.rs:190:"], &["group of lanes 0xffffffff"], &["divergence: "]],
    ),
    (
        "ldmatrix",
        &[&["`ldmatrix"], &["mma.rs:207:", "mma.rs:209:"], &["group of lanes 0xffffffff"], &["divergence: "]],
        &[&["`ldmatrix"], &["mma.rs:207:", "mma.rs:209:"], &["group of lanes 0xffffffff"], &["divergence: "]],
    ),
];

/// What a report says when the two calls share a source location.
const SAME_SITE: &str = "macro expansion or `#[track_caller]` helper at ";

/// Cases of what only a GPU does differently from the CPU device (which reports the same
/// programs as it always did): (case, what the error must say on a GPU).
const GPU_CASES: [(&str, &[&[&str]]); 1] = [
    // Warp 1 returns instead of publishing: the hardware's block barrier lets the others pass
    // without it; the block's phase barrier does not (the report after 5 s in checked mode).
    (
        "publish_exited",
        &[
            &["`GridVec::publish`"],
            &["check.rs:223:"],
            &["not every one of the 256 threads of the block"],
            &["divergence: "],
        ],
    ),
];

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![gpu_trial("check_converged_collectives_are_not_reported", controls)];
    trials.push(gpu_trial("check_divergent_shfl_is_an_error", |c| in_child(c, 0)));
    trials.push(gpu_trial("check_divergent_reduce_is_an_error", |c| in_child(c, 1)));
    trials.push(gpu_trial("check_divergent_sync_threads_count_is_an_error", |c| in_child(c, 2)));
    trials.push(gpu_trial("check_skipped_grid_sync_is_an_error_not_a_hang", |c| in_child(c, 3)));
    trials.push(gpu_trial("check_grid_vec_published_divergently_is_an_error", |c| in_child(c, 4)));
    trials.push(same_site_trial("check_divergent_shfl_in_one_macro_is_an_error", |c| in_child(c, 5)));
    trials.push(same_site_trial("check_divergent_shfl_in_one_track_caller_helper_is_an_error", |c| in_child(c, 6)));
    trials.push(same_site_trial("check_divergent_sync_threads_count_in_one_macro_is_an_error", |c| in_child(c, 7)));
    trials.push(same_site_trial("check_divergent_sync_threads_count_in_one_track_caller_helper_is_an_error", |c| {
        in_child(c, 8)
    }));
    trials.push(gpu_trial("check_grid_syncs_at_two_sites_are_an_error", |c| in_child(c, 9)));
    trials.push(gpu_trial("check_reduce_grid_beside_a_user_grid_sync_never_sums_unwritten_partials", |c| {
        in_child(c, 10)
    }));
    trials
        .push(same_site_trial("check_grid_vec_publish_stood_in_for_by_sync_threads_is_an_error", |c| in_child(c, 11)));
    trials.push(gpu_trial("check_divergent_invoke_one_broadcast_is_an_error", |c| in_child(c, 12)));
    trials.push(gpu_trial("check_divergent_mma_sync_is_an_error", |c| in_child(c, 13)));
    trials.push(gpu_trial("check_divergent_ldmatrix_is_an_error", |c| in_child(c, 14)));
    trials.push(gpu_only_trial(
        "check_grid_vec_publish_with_an_exited_warp_is_an_error_not_a_pass",
        "the CPU device reported this before (a thread that exited while others wait at a barrier); on a GPU the \
         block barrier let the others pass",
        |c| in_child_gpu(c, 0),
    ));
    trials.push(gpu_trial("check_collectives_at_shared_or_duplicated_sites_are_not_reported", shared_sites));
    if std::env::var_os(CHILD_VAR).is_some() {
        trials.push(gpu_trial("check_child", |c| child(c, &std::env::var(CHILD_VAR).unwrap_or_default())));
    }
    trials
}

/// A case of two calls at one source location: on the CPU device the engine tells them apart by
/// their code's address only in builds with debug assertions (`cohort::host` says why), so in
/// an optimized build of the tests the case is the GPU's alone.
fn same_site_trial(name: &str, f: fn(&Ctx) -> TestResult) -> Trial {
    if cfg!(debug_assertions) {
        gpu_trial(name, f)
    } else {
        gpu_only_trial(
            name,
            "the CPU device tells two calls of one source location apart only in builds with debug assertions \
             (an optimizer may duplicate one call into copies)",
            f,
        )
    }
}

/// Runs case `case` in a child process (a failed check ends a GPU's CUDA context) or, on the CPU
/// device (where a failed check is an `Err` from the launch and nothing is sticky), in this one,
/// and checks the words of its error.
fn in_child(c: &Ctx, case: usize) -> TestResult {
    let (name, gpu_needles, cpu_needles) = CASES[case];
    run_case(c, name, if c.is_cpu() { cpu_needles } else { gpu_needles })
}

/// [`in_child`] for a case of [`GPU_CASES`].
fn in_child_gpu(c: &Ctx, case: usize) -> TestResult {
    let (name, needles) = GPU_CASES[case];
    run_case(c, name, needles)
}

/// Runs case `name` (in a child process on a GPU) and checks that its error says `needles`.
fn run_case(c: &Ctx, name: &str, needles: &[&[&str]]) -> TestResult {
    let line = if c.is_cpu() {
        let line = divergent(c, name)?;
        println!("CHECKED MODE ERROR: {line}");
        line
    } else {
        let exe = std::env::current_exe().ctx("current_exe")?;
        let out = cohort_tests::output_within(
            Command::new(exe).args(["--exact", "check_child", "--test-threads=1"]).env(CHILD_VAR, name),
            120,
        )?;
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
        "macro_shfl" => k::diverge_macro_shfl::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "invoke_broadcast" => k::diverge_invoke_broadcast::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "mma" => cohort_test_kernels::mma::diverge_mma::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "ldmatrix" => cohort_test_kernels::mma::diverge_ldmatrix::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "helper_shfl" => k::diverge_helper_shfl::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "macro_sync_count" => k::diverge_macro_sync_count::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "helper_sync_count" => k::diverge_helper_sync_count::load(&c.tests).ctx("load")?.launch(&s, cfg, &mut out),
        "grid_sites" => k::diverge_grid_sites::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut out),
        "reduce_grid" => {
            let mut scratch = cohort_runtime::GridVecBuffer::<u32>::zeroed(&c.gpu, 2 * 4).ctx("alloc")?;
            k::diverge_reduce_grid::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut scratch, &mut out)
        }
        "publish_stand_in" | "publish_exited" => {
            let mut x = cohort_runtime::GridVecBuffer::from_slice(&c.gpu, &[1u32; 64]).ctx("alloc")?;
            if case == "publish_stand_in" {
                k::diverge_publish_stand_in::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut x, &mut out)
            } else {
                k::diverge_publish_exited::load(&c.tests).ctx("load")?.launch_cooperative(&s, cfg, &mut x, &mut out)
            }
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

/// Collectives whose members meet though the calls are duplicated (a loop, `unroll`'s copies,
/// an `#[inline(always)]` helper called from several places) or share a location with another
/// call (one macro expansion whose condition is the same in the whole block), and grid syncs in
/// a loop: no report, and the right values.
fn shared_sites(c: &Ctx) -> TestResult {
    let kern = k::converged_shared_sites::load(&c.tests).ctx("load")?;
    let s = c.gpu.new_stream().ctx("stream")?;
    let (blocks, block) = (4usize, 256usize);
    let n = blocks * block;
    let mut out = c.gpu.upload(&vec![[u32::MAX; 4]; n]).ctx("alloc")?;
    kern.launch_cooperative(&s, LaunchConfig::new(blocks as u32, block as u32), &mut out).ctx("launch")?;
    let block_count = |i: usize, f: &dyn Fn(u32) -> bool| {
        let b = i / block * block;
        (b..b + block).filter(|&j| f(j as u32)).count() as u32
    };
    let warp_sum = |i: usize, d: u32| (i / 32 * 32..i / 32 * 32 + 32).fold(0u32, |a, j| a.wrapping_add(j as u32 + d));
    let want: Vec<[u32; 4]> = (0..n)
        .map(|i| {
            let w = (i / 32 * 32) as u32;
            let looped =
                (0..4u32).fold(0u32, |a, k| a.wrapping_add(w + k).wrapping_add(block_count(i, &|v| v % 3 == k % 3)));
            let unrolled = (0..4u32).fold(0u32, |a, k| a.wrapping_add(i as u32 ^ (1 << k)));
            let fives = |d: u32| block_count(i, &|v| (v + d) % 5 == 0);
            let helper_at = |d: u32| warp_sum(i, d).wrapping_add(fives(d));
            let second = if (i / block) % 2 == 0 { helper_at(1) } else { helper_at(2) };
            let helper = helper_at(0).wrapping_add(second);
            let by_macro = if (i / block) % 2 == 0 { block as u32 } else { 0 };
            [looped, unrolled, helper, by_macro]
        })
        .collect();
    check_all("collectives at shared or duplicated call sites", &out.to_vec().ctx("read")?, &want)
}
