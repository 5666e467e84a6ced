//! Shared helpers of Cohort's integration tests.
//!
//! GPU tests run through [`gpu_trial`]: with a GPU they run and check every element against a
//! CPU reference; without one (no driver, no device) they report themselves **ignored, with
//! the reason**, never passed. A GPU that is present but fails (module load, driver error)
//! fails the test.

use std::sync::OnceLock;

use cohort_runtime::{Dim3, Error, Gpu, Module};
use libtest_mimic::{Completion, Failed, Trial};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The GPU every test shares, with the kernel modules loaded.
pub struct Ctx {
    /// Device 0 (or `COHORT_DEVICE`), primary context.
    pub gpu: Gpu,
    /// `cohort_kernels::PTX`, loaded.
    pub module: Module,
    /// `cohort_test_kernels::PTX`, loaded so that every kernel takes blocks of 512 threads.
    pub tests: Module,
}

enum Setup {
    Ready(Ctx),
    /// No GPU here: tests are ignored with this reason.
    Absent(String),
    /// A GPU is here but setting up failed: tests fail with this.
    Broken(String),
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| match Gpu::from_env() {
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => Setup::Absent(format!("no GPU: {e}")),
        Err(e) => Setup::Broken(e.to_string()),
        Ok(gpu) => {
            let loaded = gpu.load(&cohort_kernels::PTX).and_then(|module| {
                let opts = cohort_runtime::LoadOptions::new().threads_per_block(512);
                Ok((module, gpu.load_with(&cohort_test_kernels::PTX, opts)?))
            });
            match loaded {
                Ok((module, tests)) => Setup::Ready(Ctx { gpu, module, tests }),
                Err(e) => Setup::Broken(e.to_string()),
            }
        }
    })
}

/// Why GPU tests are skipped here, or `None` when a GPU is usable.
pub fn gpu_absent_reason() -> Option<String> {
    match setup() {
        Setup::Absent(r) => Some(r.clone()),
        _ => None,
    }
}

/// A test result: `Err` carries the failure message.
pub type TestResult = Result<(), String>;

/// GPU tests run concurrently holding this for reading; [`gpu_trial_alone`] tests hold it for
/// writing, so nothing else uses the GPU while they run.
static GPU_TURN: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A GPU test: runs `f` on the shared context, or reports itself ignored (with the reason)
/// when there is no GPU.
pub fn gpu_trial(name: &str, f: fn(&Ctx) -> TestResult) -> Trial {
    gpu_trial_with(name, f, false)
}

/// A GPU test that must have the GPU to itself: one that measures device-wide state (free
/// memory) or host-side timing that another test's driver calls would disturb (a module load
/// holds the context for its JIT compile).
pub fn gpu_trial_alone(name: &str, f: fn(&Ctx) -> TestResult) -> Trial {
    gpu_trial_with(name, f, true)
}

fn gpu_trial_with(name: &str, f: fn(&Ctx) -> TestResult, alone: bool) -> Trial {
    Trial::ignorable_test(name, move || match setup() {
        Setup::Absent(reason) => Ok(Completion::ignored_with(reason)),
        Setup::Broken(e) => Err(Failed::from(format!("GPU setup failed: {e}"))),
        Setup::Ready(ctx) => {
            // A test that failed while holding the turn poisons it; the turn itself is fine.
            let r = if alone {
                let _turn = GPU_TURN.write().unwrap_or_else(|p| p.into_inner());
                f(ctx)
            } else {
                let _turn = GPU_TURN.read().unwrap_or_else(|p| p.into_inner());
                f(ctx)
            };
            r.map(|()| Completion::Completed).map_err(Failed::from)
        }
    })
    .with_kind("gpu")
}

/// A test that needs at least `min` GPUs: runs `f` on every GPU (primary contexts, ordinal
/// order, [`Gpu::all`]) with the GPUs to itself, or reports itself ignored with the reason
/// ("needs 2 GPUs (found 1)", or no GPU at all).
pub fn gpus_trial(name: &str, min: usize, f: fn(&[Gpu]) -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || {
        if let Some(reason) = gpu_absent_reason() {
            return Ok(Completion::ignored_with(reason));
        }
        let n = Gpu::count().map_err(|e| Failed::from(e.to_string()))?;
        if n < min {
            return Ok(Completion::ignored_with(format!("needs {min} GPUs (found {n})")));
        }
        let _turn = GPU_TURN.write().unwrap_or_else(|p| p.into_inner());
        let gpus = Gpu::all().map_err(|e| Failed::from(format!("opening every GPU: {e}")))?;
        f(&gpus).map(|()| Completion::Completed).map_err(Failed::from)
    })
    .with_kind("gpu")
}

/// A test that needs no GPU.
pub fn cpu_trial(name: &str, f: fn() -> TestResult) -> Trial {
    Trial::test(name, move || f().map_err(Failed::from))
}

/// A seeded generator: each test gets its own stream of random data (from its name), so a
/// failure reproduces. `COHORT_TEST_SEED` varies it.
pub fn rng(test: &str) -> StdRng {
    let base: u64 = std::env::var("COHORT_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00c0_4047);
    let h = test.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    StdRng::seed_from_u64(base ^ h)
}

/// Turns any displayable error into a test failure message.
pub trait Context<T> {
    /// Adds what was being done.
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// Every thread of a `grid` x `block` launch as (block index, thread index), enumerated
/// coordinate by coordinate: the CPU side of the index tests.
pub fn each_thread(grid: Dim3, block: Dim3) -> Vec<(Dim3, Dim3)> {
    let mut all = Vec::with_capacity((grid.volume() * block.volume()) as usize);
    for bz in 0..grid.z {
        for by in 0..grid.y {
            for bx in 0..grid.x {
                for tz in 0..block.z {
                    for ty in 0..block.y {
                        for tx in 0..block.x {
                            all.push((Dim3::new(bx, by, bz), Dim3::new(tx, ty, tz)));
                        }
                    }
                }
            }
        }
    }
    all
}

/// Compares every element; reports how many differ and the first few.
pub fn check_all<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> TestResult {
    check_all_by(what, got, want, |g, w| g == w)
}

/// Compares every element with `same`; reports how many differ and the first few.
pub fn check_all_by<T: std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
    same: impl Fn(&T, &T) -> bool,
) -> TestResult {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(&got[i], &want[i])).collect();
    if bad.is_empty() {
        return Ok(());
    }
    let first: Vec<String> =
        bad.iter().take(5).map(|&i| format!("[{i}] got {:?}, want {:?}", got[i], want[i])).collect();
    Err(format!("{what}: {} of {} elements differ; {}", bad.len(), got.len(), first.join("; ")))
}

/// `|got - want| <= tol * max(|want|, 1)` for every element.
pub fn check_close(what: &str, got: &[f64], want: &[f64], tol: f64) -> TestResult {
    check_all_by(what, got, want, |g, w| (g - w).abs() <= tol * w.abs().max(1.0))
}

/// Fails with `msg` unless `cond`.
pub fn ensure(cond: bool, msg: impl FnOnce() -> String) -> TestResult {
    if cond { Ok(()) } else { Err(msg()) }
}
