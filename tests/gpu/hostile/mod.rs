//! The adversarial pass of issue 31: the safe API attacked as a hostile user would, in areas the
//! issue's ten holes did not name — kernels made by macros, generic kernels instantiated twice,
//! closures given to collectives (reading shared memory, calling collectives, panicking),
//! unwinding out of scopes that lend memory to the device, forgotten and dropped handles,
//! `Send`/`Sync` of every handle, handles shared between threads, child processes and stop
//! signals while kernels run, running out of memory midway, sizes that overflow, zero lengths,
//! re-entrance from host functions, handles dropped while their work is queued. Each test
//! checks every element against a CPU reference, or that the attempt is an `Err` (on a GPU,
//! attempts that end the CUDA context run in a child process). The table of attempts and
//! outcomes is in the note; compile-time attempts are `tests/ui/fail/hostile_*.rs`.
//!
//! This file holds the list and the child processes; the attempts are in one module per area.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cohort_runtime::{
    AppendBuffer, Error, Event, Gpu, GridVecBuffer, LaunchConfig, LoadOptions, ManagedBuffer, MemPool, Module,
    Pipeline, Stream, StreamOptions,
};
use cohort_test_kernels::hostile as k;
use cohort_tests::{
    Context, Ctx, TestResult, check_all, cpu_trial, ensure, gpu_only_trial, gpu_trial, gpu_trial_alone, rng,
};
use libtest_mimic::Trial;
use rand::Rng;

mod kernels;
mod unwinding;
mod threads;
mod processes;
mod memory;
mod handles;
mod captures;

use {kernels::*, unwinding::*, threads::*, processes::*, memory::*, handles::*, captures::*};

/// Set in a child process to the scenario it runs ([`child`]).
pub const CHILD_ENV: &str = "COHORT_HOSTILE_CHILD";

pub fn trials() -> Vec<Trial> {
    vec![
        gpu_trial("hostile_macro_generated_kernels_keep_their_own_shared_memory", macro_kernels),
        gpu_trial("hostile_generic_kernel_two_instances_of_one_size_run_their_own_entries", generic_instances),
        gpu_trial("hostile_closures_in_collectives_read_shared_memory_and_vote", closure_collectives),
        gpu_trial("hostile_block_collective_inside_a_block_collectives_op_is_an_error", |c| {
            failing(c, "nested-block", &["hostile.rs:"], &["a block-level collective", "inside the op"])
        }),
        gpu_trial("hostile_large_tile_collective_inside_a_large_tile_collectives_op_is_an_error", |c| {
            failing(c, "nested-large", &["hostile.rs:"], &["a block-level collective", "inside the op"])
        }),
        gpu_trial("hostile_collective_inside_a_scans_op_is_reported_as_divergent", |c| {
            failing(c, "vote-in-scan", &["hostile.rs:"], &["divergence", "hostile.rs:"])
        }),
        gpu_trial("hostile_panic_in_a_reduce_op_is_an_error_not_a_hang", |c| {
            failing(c, "panic-reduce", &["hostile.rs:"], &["the reduce op met the bad value"])
        }),
        gpu_trial("hostile_panic_in_a_block_scan_op_is_an_error_not_a_hang", |c| {
            failing(c, "panic-block-scan", &["hostile.rs:"], &["a warp panics in the block scan op"])
        }),
        gpu_trial("hostile_unwinding_out_of_registered_pinned_managed_pipeline_and_capture", unwinding),
        gpu_only_trial(
            "hostile_registered_scope_reports_a_kernel_that_failed_in_it",
            "on the CPU device a kernel's failure is its launch's Err and the scope's final wait cannot fail (the \
             runtime's unit test `registered_scope_reports_a_failed_wait` covers the scope's side there)",
            |c| failing(c, "registered-failed", &["hostile_maybe_fail"], &[]),
        ),
        gpu_trial("hostile_dropped_async_copy_waits_and_forgotten_guards_leak_only", forget_and_drop),
        gpu_trial("hostile_every_handle_is_send_and_sync_as_it_should_be", send_sync),
        gpu_only_trial(
            "hostile_graph_and_instance_shared_by_threads",
            "graphs are GPU-only (the CPU device refuses captures)",
            graph_threads,
        ),
        gpu_trial("hostile_module_dropped_while_its_kernel_runs", module_dropped),
        gpu_only_trial(
            "hostile_graph_outlives_its_module",
            "graphs are GPU-only (the CPU device refuses captures)",
            graph_outlives_module,
        ),
        gpu_trial("hostile_child_processes_spawned_while_kernels_run", spawn_while_launching),
        gpu_trial("hostile_stop_and_continue_signals_while_kernels_run", stop_signals),
        gpu_trial_alone("hostile_out_of_memory_midway_loses_nothing", out_of_memory),
        gpu_trial("hostile_sizes_that_overflow_are_errors", overflowing_sizes),
        gpu_trial("hostile_zero_lengths_everywhere", zero_lengths),
        gpu_trial("hostile_host_function_reentrancy_is_refused_not_a_deadlock", host_fn_reentrancy),
        gpu_trial("hostile_handles_dropped_while_their_work_is_queued", dropped_handles),
        gpu_trial("hostile_cfg_split_kernel_with_one_abi_and_two_bodies", split_body),
        cpu_trial("hostile_capture_stdout_inside_capture_stdout_is_an_error_not_a_hang", nested_capture),
    ]
}

// ---------------------------------------------------------------------------------------------
// Child processes

/// Runs scenario `which` in this (child) process and returns its exit code.
pub fn child(which: &str) -> i32 {
    let r = match which {
        "capture-nested" => capture_nested_child(),
        "tiny-launch" => tiny_launch_child(),
        other => failing_child(other),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("hostile child `{which}` failed: {e}");
            1
        }
    }
}

/// Runs this test binary as a child with scenario `which`, killing it after `limit`: its exit
/// status (`None` when it had to be killed) and everything it printed.
fn run_child(which: &str, limit: Duration) -> Result<(Option<std::process::ExitStatus>, String), String> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let dir = std::env::temp_dir();
    let tag = format!("{}-{which}-{:?}", std::process::id(), std::thread::current().id());
    let (out_path, err_path) = (dir.join(format!("hostile-{tag}.out")), dir.join(format!("hostile-{tag}.err")));
    let mut child = Command::new(exe)
        .env(CHILD_ENV, which)
        .stdout(std::fs::File::create(&out_path).ctx("child stdout")?)
        .stderr(std::fs::File::create(&err_path).ctx("child stderr")?)
        .spawn()
        .ctx("spawn child")?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().ctx("wait for child")? {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    let _ = std::fs::remove_file(out_path);
    let _ = std::fs::remove_file(err_path);
    Ok((status, text))
}

/// The device a child process uses: the tests' device, its test kernels loaded as the shared
/// context loads them.
fn child_ctx() -> Result<(Gpu, Module), String> {
    let gpu = match cohort_tests::test_device() {
        cohort_tests::TestDevice::Cpu(_) => Gpu::cpu(),
        _ => Gpu::from_env(),
    }
    .ctx("open the device")?;
    let tests = gpu
        .load_with(&cohort_test_kernels::PTX, LoadOptions::new().threads_per_block(512))
        .ctx("load the test kernels")?;
    Ok((gpu, tests))
}

/// A launch that must fail: on the CPU device (nothing is sticky) in this process, on a GPU (a
/// trap ends the CUDA context) in a child. The error must name `where_` (the kernel's source
/// file or its name) on a GPU, and say every one of `what` on the CPU device (a GPU's report
/// has the location, not the message).
fn failing(c: &Ctx, which: &str, where_: &[&str], what: &[&str]) -> TestResult {
    let msg = if c.is_cpu() {
        failing_scenario(&c.gpu, &c.tests, which)?
    } else {
        let (status, text) = run_child(which, Duration::from_secs(120))?;
        let Some(status) = status else {
            return Err(format!("`{which}`: the child hung (killed after 120 s):\n{text}"));
        };
        ensure(status.success(), || format!("`{which}`: child failed ({status}):\n{text}"))?;
        text.lines().find(|l| l.starts_with("HOSTILE ERROR: ")).map_or(text.clone(), str::to_string)
    };
    println!("{which}: {msg}");
    let needles = if c.is_cpu() { what } else { where_ };
    for n in needles {
        ensure(msg.contains(n), || format!("`{which}`: the error does not say `{n}`: {msg}"))?;
    }
    Ok(())
}

/// A [`failing`] scenario in a child process: prints the error it got.
fn failing_child(which: &str) -> Result<(), String> {
    let (gpu, tests) = child_ctx()?;
    let msg = failing_scenario(&gpu, &tests, which)?;
    println!("HOSTILE ERROR: {msg}");
    Ok(())
}

/// Runs a scenario that must end in an error: `Ok` holds the error's text, `Err` says what went
/// wrong instead (no error at all).
fn failing_scenario(gpu: &Gpu, tests: &Module, which: &str) -> Result<String, String> {
    let s = gpu.new_stream().ctx("stream")?;
    let n = 4 * 256;
    let vals: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
    let d = gpu.upload(&vals).ctx("upload")?;
    let mut out = gpu.upload(&vec![u32::MAX; n]).ctx("alloc")?;
    let cfg = LaunchConfig::new(4u32, 256u32);
    let launched = match which {
        "nested-block" => k::hostile_nested_block_reduce::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "nested-large" => k::hostile_nested_large_tile_reduce::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "vote-in-scan" => k::hostile_vote_in_scan_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, &mut out))
            .and_then(|()| s.synchronize()),
        "panic-reduce" => k::hostile_panic_in_reduce_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, vals[37], &mut out))
            .and_then(|()| s.synchronize()),
        "panic-block-scan" => k::hostile_panic_in_block_scan_op::load(tests)
            .and_then(|kern| kern.launch(&s, cfg, &d, 3, &mut out))
            .and_then(|()| s.synchronize()),
        "registered-failed" => {
            // A kernel that fails while it writes registered host memory: the scope's final wait
            // sees the failure, and the scope must report it, not hand the memory back as if the
            // kernel had written it.
            let kern = k::hostile_maybe_fail::load(tests).ctx("load")?;
            let mut host = vec![0u32; n];
            match gpu.with_registered(&mut host, |reg| kern.launch(&s, cfg, 1, 5, reg.slice_mut(..))) {
                Ok(Ok(())) => return Err("the scope returned Ok after the kernel in it failed".into()),
                Ok(Err(e)) | Err(e) => Err(e),
            }
        }
        other => return Err(format!("unknown scenario {other}")),
    };
    match launched {
        Ok(()) => {
            let got = out.to_vec().ctx("read")?;
            Err(format!("`{which}`: no error; the kernel wrote {:?}…", &got[..8]))
        }
        Err(e) => Ok(e.to_string()),
    }
}
