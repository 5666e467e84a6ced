//! Shared helpers of Cohort's integration tests.
//!
//! The device tests (`tests/gpu`) run through [`gpu_trial`] on one device, chosen once when the
//! trial list is built:
//!
//! - a GPU when one is present (`COHORT_DEVICE` picks which, default 0);
//! - the CPU device ([`Gpu::cpu`], kernels run on this machine's cores by `cohort-cpu`) when
//!   there is none (no driver, or no device);
//! - or as [`TEST_DEVICE_VAR`] says: `COHORT_TEST_DEVICE=cpu` runs them on the CPU device even
//!   with a GPU present, `=gpu` only on a GPU (without one they report themselves ignored, with
//!   the reason), `=auto` (or unset) as above. `COHORT_DEVICE=cpu` (the runtime's way of asking
//!   for the CPU device, `Gpu::any`) means `cpu` too.
//!
//! Each trial is labelled with its device (`[cpu] thread_indices_1d`, `[gpu] …`). Every test
//! checks every element against a CPU reference on either device; [`Ctx::pick`] gives a test a
//! smaller size on the CPU device. Tests of what only a GPU has (timing, occupancy, PTX, traps
//! that end a CUDA context, graphs, several GPUs, NCCL, …) are [`gpu_only_trial`]s and
//! [`gpus_trial`]s: on the CPU device they report themselves **ignored, with the reason**,
//! never passed. A device that is present but fails to set up (module load, driver error)
//! fails every test.

use std::sync::OnceLock;

use cohort_runtime::{Dim3, Error, Gpu, Module};
use libtest_mimic::{Completion, Failed, Trial};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The environment variable that picks the device tests' device: `cpu`, `gpu` or `auto`.
pub const TEST_DEVICE_VAR: &str = "COHORT_TEST_DEVICE";

/// The device that every test shares, with the kernel modules loaded.
pub struct Ctx {
    /// The device: a GPU (device 0 or `COHORT_DEVICE`, primary context) or the CPU device.
    pub gpu: Gpu,
    /// `cohort_kernels::PTX`, loaded.
    pub module: Module,
    /// `cohort_test_kernels::PTX`, loaded so that every kernel takes blocks of 512 threads.
    pub tests: Module,
}

impl Ctx {
    /// Whether the tests run on the CPU device.
    #[must_use]
    pub fn is_cpu(&self) -> bool {
        self.gpu.is_cpu()
    }

    /// `gpu` on a GPU, `cpu` on the CPU device: a size (elements, blocks, rounds) that keeps
    /// a test quick on the CPU while it still checks every element it computes.
    #[must_use]
    pub fn pick<T>(&self, gpu: T, cpu: T) -> T {
        if self.is_cpu() { cpu } else { gpu }
    }
}

/// Which device the device tests run on, decided without opening it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestDevice {
    /// A GPU (it is opened, and the modules loaded, by the first test).
    Gpu,
    /// The CPU device, and why (no GPU here, or asked for).
    Cpu(String),
    /// No device to run on (`COHORT_TEST_DEVICE=gpu` without a GPU): tests are ignored with
    /// this reason.
    Absent(String),
    /// `COHORT_TEST_DEVICE` (or `COHORT_DEVICE`) holds something else: tests fail with this.
    Invalid(String),
}

impl TestDevice {
    /// The label of the trials that run on this device.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        if matches!(self, TestDevice::Cpu(_)) { "cpu" } else { "gpu" }
    }
}

/// The choice from the variables' values and, only when needed, how many GPUs there are
/// (`count` is called at most once).
fn choose(test_device: Option<&str>, device: Option<&str>, count: impl FnOnce() -> Result<usize, Error>) -> TestDevice {
    let auto = |count: Result<usize, Error>, forced_gpu: bool| match count {
        Ok(n) if n > 0 => TestDevice::Gpu,
        Ok(_) if forced_gpu => TestDevice::Absent(format!("{TEST_DEVICE_VAR}=gpu, but the driver sees no GPU")),
        Ok(_) => TestDevice::Cpu("no GPU here (the driver sees none)".into()),
        Err(e) if forced_gpu => TestDevice::Absent(format!("{TEST_DEVICE_VAR}=gpu, but no GPU: {e}")),
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => TestDevice::Cpu(format!("no GPU here: {e}")),
        // Any other failure is the GPU's to report: setting it up fails every test.
        Err(_) => TestDevice::Gpu,
    };
    let device_is_cpu = device.is_some_and(|v| v.trim().eq_ignore_ascii_case("cpu"));
    match test_device.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        Some("cpu") => TestDevice::Cpu(format!("{TEST_DEVICE_VAR}=cpu")),
        Some("gpu") if device_is_cpu => {
            TestDevice::Invalid(format!("{TEST_DEVICE_VAR}=gpu and COHORT_DEVICE=cpu contradict each other"))
        }
        Some("gpu") => auto(count(), true),
        None | Some("" | "auto") if device_is_cpu => TestDevice::Cpu("COHORT_DEVICE=cpu".into()),
        None | Some("" | "auto") => auto(count(), false),
        Some(other) => TestDevice::Invalid(format!(
            "{TEST_DEVICE_VAR}={other} is not a device: set it to `cpu`, `gpu` or `auto` (a GPU if there is one, \
             else the CPU device), or unset it"
        )),
    }
}

/// The device the device tests run on: decided once, from [`TEST_DEVICE_VAR`], `COHORT_DEVICE`
/// and whether the driver sees a GPU (no context is created, no module loaded).
pub fn test_device() -> &'static TestDevice {
    static DEVICE: OnceLock<TestDevice> = OnceLock::new();
    DEVICE.get_or_init(|| {
        let var = |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        choose(var(TEST_DEVICE_VAR).as_deref(), var("COHORT_DEVICE").as_deref(), Gpu::count)
    })
}

enum Setup {
    Ready(Ctx),
    /// No device to run on: tests are ignored with this reason.
    Absent(String),
    /// A device is here but setting up failed: tests fail with this.
    Broken(String),
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let opened = match test_device() {
            TestDevice::Absent(reason) => return Setup::Absent(reason.clone()),
            TestDevice::Invalid(e) => return Setup::Broken(e.clone()),
            TestDevice::Gpu => Gpu::from_env(),
            TestDevice::Cpu(_) => Gpu::cpu(),
        };
        let gpu = match opened {
            Ok(gpu) => gpu,
            Err(e) => return Setup::Broken(e.to_string()),
        };
        let loaded = gpu.load(&cohort_kernels::PTX).and_then(|module| {
            let opts = cohort_runtime::LoadOptions::new().threads_per_block(512);
            Ok((module, gpu.load_with(&cohort_test_kernels::PTX, opts)?))
        });
        match loaded {
            Ok((module, tests)) => Setup::Ready(Ctx { gpu, module, tests }),
            Err(e) => Setup::Broken(e.to_string()),
        }
    })
}

/// Why the device tests cannot use a GPU here (they run on the CPU device, or not at all), or
/// `None` when they run on a GPU.
pub fn gpu_absent_reason() -> Option<String> {
    match test_device() {
        TestDevice::Gpu => None,
        TestDevice::Cpu(why) => Some(format!("running on the CPU device ({why})")),
        TestDevice::Absent(why) | TestDevice::Invalid(why) => Some(why.clone()),
    }
}

/// The reason a GPU-only test reports when it is ignored here (`reason` says what it needs a
/// GPU for), or `None` when the tests run on a GPU.
///
/// # Errors
/// The variables that choose the device hold something else: the test fails with that.
pub fn gpu_only_reason(reason: &str) -> Result<Option<String>, String> {
    match test_device() {
        TestDevice::Gpu => Ok(None),
        TestDevice::Cpu(_) => Ok(Some(format!("GPU-only: {reason}"))),
        TestDevice::Absent(why) => Ok(Some(why.clone())),
        TestDevice::Invalid(e) => Err(e.clone()),
    }
}

/// A test result: `Err` carries the failure message.
pub type TestResult = Result<(), String>;

/// Device tests run concurrently holding this for reading; [`gpu_trial_alone`] tests hold it
/// for writing, so nothing else uses the device while they run.
static GPU_TURN: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A device test: runs `f` on the shared context — on a GPU, or on the CPU device when there
/// is none (see the crate docs) — labelled with the device.
pub fn gpu_trial(name: &str, f: fn(&Ctx) -> TestResult) -> Trial {
    device_trial(name, f, false, None)
}

/// A device test that must have the device to itself: one that measures device-wide state
/// (free memory) or host-side timing that another test's driver calls would disturb (a module
/// load holds the context for its JIT compile).
pub fn gpu_trial_alone(name: &str, f: fn(&Ctx) -> TestResult) -> Trial {
    device_trial(name, f, true, None)
}

/// A test of what only a GPU has: runs `f` on a GPU as [`gpu_trial`] does; on the CPU device
/// it reports itself ignored with `reason` ("GPU-only: measures stream overlap timing").
pub fn gpu_only_trial(name: &str, reason: &'static str, f: fn(&Ctx) -> TestResult) -> Trial {
    device_trial(name, f, false, Some(reason))
}

/// [`gpu_only_trial`] with the GPU to itself, as [`gpu_trial_alone`].
pub fn gpu_only_trial_alone(name: &str, reason: &'static str, f: fn(&Ctx) -> TestResult) -> Trial {
    device_trial(name, f, true, Some(reason))
}

fn device_trial(name: &str, f: fn(&Ctx) -> TestResult, alone: bool, gpu_only: Option<&'static str>) -> Trial {
    let kind = if gpu_only.is_some() { "gpu" } else { test_device().kind() };
    Trial::ignorable_test(name, move || {
        if let Some(reason) = gpu_only
            && let Some(why) = gpu_only_reason(reason)?
        {
            return Ok(Completion::ignored_with(why));
        }
        match setup() {
            Setup::Absent(reason) => Ok(Completion::ignored_with(reason)),
            Setup::Broken(e) => Err(Failed::from(format!("device setup failed: {e}"))),
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
        }
    })
    .with_kind(kind)
}

/// A test that needs at least `min` GPUs: runs `f` on every GPU (primary contexts, ordinal
/// order, [`Gpu::all`]) with the GPUs to itself, or reports itself ignored with the reason
/// ("needs 2 GPUs (found 1)", no GPU at all, or the tests run on the CPU device, which is one
/// device without peers).
pub fn gpus_trial(name: &str, min: usize, f: fn(&[Gpu]) -> TestResult) -> Trial {
    Trial::ignorable_test(name, move || {
        let plural = if min == 1 { "" } else { "s" };
        let why = format!("needs {min} GPU{plural}: CUDA contexts, peer access and multi-grid launches are GPU-only");
        if let Some(reason) = gpu_only_reason(&why)? {
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

/// Runs `cmd` (a child process of a test) to its end, as [`std::process::Command::output`]
/// does, but at most `secs` seconds: a child still running then is killed, and the error holds
/// what it printed so far. A test whose child hangs fails with that instead of holding the
/// suite (a parent waiting for ever holds the device turn, and every other test waits behind).
///
/// # Errors
/// The child could not be started, or did not end within `secs`.
pub fn output_within(cmd: &mut std::process::Command, secs: u64) -> Result<std::process::Output, String> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child =
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("spawn child: {e}"))?;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        match child.try_wait().map_err(|e| format!("waiting for the child: {e}"))? {
            Some(status) => break Some(status),
            None if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Some(status) => Ok(std::process::Output { status, stdout, stderr }),
        None => Err(format!(
            "the child process did not end within {secs} s (killed); it printed:\n{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_driver() -> Result<usize, Error> {
        Err(Error::NoDriver)
    }

    #[test]
    fn test_device_is_a_gpu_when_there_is_one_else_the_cpu_device() {
        assert_eq!(choose(None, None, || Ok(2)), TestDevice::Gpu);
        assert_eq!(choose(Some("auto"), Some("1"), || Ok(2)), TestDevice::Gpu);
        assert!(matches!(choose(None, None, no_driver), TestDevice::Cpu(why) if why.contains("no GPU")));
        assert!(matches!(choose(Some(""), None, || Ok(0)), TestDevice::Cpu(_)));
        assert_eq!(choose(None, None, no_driver).kind(), "cpu");
        assert_eq!(choose(None, None, || Ok(1)).kind(), "gpu");
    }

    #[test]
    fn test_device_follows_the_variables() {
        let never = || -> Result<usize, Error> { panic!("counted GPUs for an explicit choice") };
        assert!(matches!(choose(Some("cpu"), None, never), TestDevice::Cpu(why) if why.contains("COHORT_TEST_DEVICE")));
        assert!(matches!(choose(Some(" CPU "), Some("0"), never), TestDevice::Cpu(_)));
        assert!(matches!(choose(None, Some("cpu"), never), TestDevice::Cpu(why) if why.contains("COHORT_DEVICE")));
        assert_eq!(choose(Some("gpu"), None, || Ok(1)), TestDevice::Gpu);
        assert!(matches!(choose(Some("gpu"), None, no_driver), TestDevice::Absent(why) if why.contains("=gpu")));
        assert!(matches!(choose(Some("gpu"), None, || Ok(0)), TestDevice::Absent(_)));
        assert!(matches!(choose(Some("gpu"), Some("cpu"), never), TestDevice::Invalid(_)));
        assert!(
            matches!(choose(Some("tpu"), None, never), TestDevice::Invalid(e) if e.contains("`cpu`, `gpu` or `auto`"))
        );
    }
}
