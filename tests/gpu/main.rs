//! Device tests, one file per module of the device library and the runtime that they test
//! (`matrix.rs` for `cohort::matrix`, `track.rs` for the runtime's stream-order tracker, …):
//! each file is found by `tests/build.rs` and lists its tests in its `trials()`, so adding a
//! test is one edit in one file (plus its kernel, in `kernels-gpu/test-kernels`). Run
//! them with `cargo test --workspace`: on a GPU when there is one, else on the CPU device
//! (`COHORT_TEST_DEVICE=cpu|gpu|auto` chooses; see `cohort_tests`), each labelled `[gpu]` or
//! `[cpu]`; GPU-only tests report themselves ignored on the CPU device, with the reason. On a GPU
//! machine without Rust, run them from `tools/gpu-bundle`'s `.gpu/run`.

// Every file of this folder is a suite (`tests/build.rs` finds them): the `mod` items and
// `suite_trials()`.
include!(concat!(env!("OUT_DIR"), "/gpu_suites.rs"));

use libtest_mimic::Arguments;

fn main() {
    // Scenarios that must run in a process of their own (a trap kills its CUDA context).
    if let Ok(which) = std::env::var(launch::CHILD_ENV) {
        std::process::exit(launch::child(&which));
    }
    // A scenario of the adversarial pass that runs in a process of its own.
    if let Ok(which) = std::env::var(hostile::CHILD_ENV) {
        std::process::exit(hostile::child(&which));
    }
    // One rank of the multi-process NCCL test.
    if let Ok(rank) = std::env::var(nccl::RANK_ENV) {
        std::process::exit(nccl::rank_child(&rank));
    }
    // Load NCCL now, while this is the only thread: it sets NCCL_NVLS_ENABLE (see cohort_runtime::nccl).
    let _ = cohort_runtime::nccl::available();
    let args = Arguments::from_args();
    match cohort_tests::test_device() {
        cohort_tests::TestDevice::Gpu => {}
        cohort_tests::TestDevice::Cpu(why) => {
            eprintln!("device tests run on the CPU device ({why}); GPU-only tests are ignored with the reason")
        }
        cohort_tests::TestDevice::Absent(why) => eprintln!("device tests will be ignored: {why}"),
        cohort_tests::TestDevice::Invalid(e) => eprintln!("device tests will fail: {e}"),
    }
    let trials = suite_trials();
    libtest_mimic::run(&args, trials).exit();
}
