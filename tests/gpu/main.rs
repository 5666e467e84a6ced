//! Device tests, one module per facility (mirroring the device library and the runtime). Run
//! them with `cargo test --workspace`: on a GPU when there is one, else on the CPU device
//! (`COHORT_TEST_DEVICE=cpu|gpu|auto` chooses; see `cohort_tests`), each labelled `[gpu]` or
//! `[cpu]`; GPU-only tests report themselves ignored on the CPU device, with the reason. On a GPU
//! machine without Rust, run them from `tools/gpu-bundle`'s `.gpu/run`.

mod atomic;
mod cg_collectives;
mod cg_examples;
mod cg_groups;
mod check;
mod classic_shapes;
mod dynamic;
mod globals;
mod hostile;
mod interop;
mod kinds;
mod launch;
mod managed;
mod multi_gpu;
mod multi_grid;
mod nccl;
mod overlap;
mod pdl;
mod pools;
mod print;
mod runtime_checks;
mod safety;
mod shapes;
mod shared;
mod streams;
mod thread;
mod tour;

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
    let mut trials = Vec::new();
    trials.extend(cg_collectives::trials());
    trials.extend(cg_examples::trials());
    trials.extend(cg_groups::trials());
    trials.extend(check::trials());
    trials.extend(shapes::trials());
    trials.extend(classic_shapes::trials());
    trials.extend(shared::trials());
    trials.extend(streams::trials());
    trials.extend(launch::trials());
    trials.extend(managed::trials());
    trials.extend(nccl::trials());
    trials.extend(multi_gpu::trials());
    trials.extend(multi_grid::trials());
    trials.extend(dynamic::trials());
    trials.extend(globals::trials());
    trials.extend(hostile::trials());
    trials.extend(interop::trials());
    trials.extend(kinds::trials());
    trials.extend(overlap::trials());
    trials.extend(pdl::trials());
    trials.extend(pools::trials());
    trials.extend(print::trials());
    trials.extend(runtime_checks::trials());
    trials.extend(safety::trials());
    trials.extend(thread::trials());
    trials.extend(tour::trials());
    trials.extend(atomic::trials());
    trials.extend(atomic::spinning_trials());
    libtest_mimic::run(&args, trials).exit();
}
