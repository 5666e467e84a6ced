//! The CPU device: the runtime's API with kernels run on this machine's cores by `cohort-cpu`.
//!
//! # Design
//!
//! The CPU device is a [`GpuInner`] whose backend is [`crate::backend::cpu::Cpu`] (a GPU's is
//! [`crate::backend::cuda::Cuda`]): every device operation of the runtime goes through the
//! [`crate::backend::Backend`] trait, so the runtime's logic (launch checks, the stream-ordered
//! tracker, host views, freeing) is the same code on both:
//!
//! - memory is host memory: a "device address" is the host address, so a kernel's rebuilt
//!   slices point at the buffer itself; pinned memory is ordinary host memory, registering is a
//!   no-op;
//! - streams run their work when it is enqueued, on the calling thread (each launch returns
//!   when the grid has finished), so stream order and every cross-stream wait hold trivially;
//!   events record the time they are recorded at and are complete at once; host functions run
//!   at once;
//! - a launch runs the kernel's host entry ([`CpuEntry`], made by `#[kernel]`) for every
//!   thread through `cohort_cpu::launch`, after the same checks as on a GPU; a kernel panic, a
//!   barrier deadlock or a divergent warp collective is [`Error::CpuKernel`] from the launch
//!   itself, naming the kernel and the sites; unlike a GPU's, such a failure is not sticky;
//! - kernels that reach no barrier, warp collective or `nanosleep` in their PTX run on the
//!   engine's fast path ([`cohort_cpu::Mode::Loop`]);
//! - device-side launches (`cohort::launch`) go to the engine's queue of the launching grid
//!   and run when that grid has completed, on the launching thread: fire-and-forget and
//!   block-stream children first, then tail launches in launch order, each child's own
//!   children before the next child (a schedule a GPU may also pick); the tree of one host
//!   launch may make as many launches as the pending-launch limit
//!   ([`Gpu::set_pending_launch_limit`], 2048 by default; past it `LaunchError::BudgetSpent`),
//!   nested at most 24 deep (`NoParameterBuffer`); a failing child makes the host launch an
//!   [`Error::CpuKernel`] whose engine error names the child kernel and its launch site. A
//!   slice handed to a child must lie in an allocation of the device (checked against every
//!   live allocation, so the parent's stack or shared memory is `NotGlobalMemory`), and so must
//!   a `memcpy_async` source (a panic at its call site otherwise, as `cp.async` faults on a GPU);
//! - `constant!` / `global!` module variables are host memory of each loaded module
//!   (`cohort_cpu::VarTable`), initialized from the declaration's initializer at their first
//!   use (by a kernel, or by `Module::constant` / `Module::global`), so `Symbol::set` / `get`
//!   and kernels' reads and atomics work as on a GPU; `global!` ones are global memory of the
//!   device, `constant!` ones are not (constant memory on a GPU);
//! - not available (each an [`Error::NotOnCpu`]): graphs, peer access, NCCL, multi-grid
//!   launches.

use std::sync::{Arc, OnceLock};

pub use crate::backend::cpu::CpuEntry;
use crate::backend::cpu::meminfo;
use crate::device::{DeviceInfo, Gpu, GpuInner};
use crate::error::{Error, Result};

/// The CPU device's ordinal in [`DeviceInfo`]: no CUDA device has it, so nothing recorded for
/// a GPU (a lost context) applies to it.
pub(crate) const CPU_ORDINAL: usize = usize::MAX;

/// The error for what the CPU device does not do.
pub(crate) fn not_on_cpu(what: impl Into<String>) -> Error {
    Error::NotOnCpu { what: what.into() }
}

pub(crate) fn info() -> DeviceInfo {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let total = meminfo("MemTotal:").unwrap_or(0);
    DeviceInfo {
        ordinal: CPU_ORDINAL,
        name: format!("CPU device (cohort-cpu, {cores} cores)"),
        // The PTX of the highest architecture up to sm_90 is the one read for ABI records and
        // for the fast-path analysis; no PTX is compiled.
        compute_capability: (9, 0),
        sms: cores,
        total_memory: total,
        max_threads_per_block: 1024,
        max_block_dim: [1024, 1024, 64],
        max_grid_dim: [i32::MAX as u32, 65535, 65535],
        shared_per_block: 48 * 1024,
        shared_per_block_optin: cohort_cpu::SHARED_CAPACITY as u32,
        shared_per_sm: cohort_cpu::SHARED_CAPACITY as u32,
        registers_per_sm: 65536,
        max_threads_per_sm: (cohort_cpu::MAX_COOPERATIVE_THREADS / u64::from(cores)).max(1024) as u32,
        cooperative_launch: true,
        l2_bytes: 0,
        clock_khz: 0,
        memory_clock_khz: 0,
        memory_bus_bits: 0,
        driver_version: 0,
    }
}

impl Gpu {
    /// The CPU device: kernels run on this machine's cores through `cohort-cpu`, with the same
    /// host API as a GPU (buffers, streams, typed and cooperative launches). One per process:
    /// every call returns a handle to the same device.
    ///
    /// What it guarantees and where it differs from a GPU is in the crate docs ("The CPU
    /// device"); what it does not do returns [`Error::NotOnCpu`].
    ///
    /// # Errors
    /// None today; the `Result` is there to match [`Gpu::new`].
    pub fn cpu() -> Result<Self> {
        static DEVICE: OnceLock<Arc<GpuInner>> = OnceLock::new();
        let inner = DEVICE.get_or_init(|| Arc::new(GpuInner::new_cpu(info()))).clone();
        Self::with_inner(inner)
    }

    /// Whether this is the CPU device ([`Gpu::cpu`]).
    #[must_use]
    pub fn is_cpu(&self) -> bool {
        self.inner.kind() == crate::backend::Kind::Cpu
    }

    /// A GPU if there is one (as [`Gpu::from_env`]), else the CPU device: what a program that
    /// must run anywhere opens. `COHORT_DEVICE=cpu` picks the CPU device even with a GPU.
    ///
    /// # Errors
    /// As [`Gpu::from_env`], except that no driver or no device gives the CPU device.
    pub fn any() -> Result<Self> {
        Self::any_noted().map(|(gpu, _)| gpu)
    }

    /// [`Gpu::any`], and when it opened the CPU device, the line a program prints first to say
    /// so and why: `No GPU here: running on the CPU device (cohort-cpu, 8 cores); <why>` or
    /// `Running on the CPU device (…), as COHORT_DEVICE=cpu asks`. `COHORT_DEVICE=gpu` asks
    /// for a GPU only: no driver or no device is then the error, not the CPU device.
    ///
    /// # Errors
    /// As [`Gpu::from_env`], except that no driver or no device gives the CPU device (unless
    /// `COHORT_DEVICE=gpu`).
    pub fn any_noted() -> Result<(Self, Option<String>)> {
        let cpu = |why: String| -> Result<(Self, Option<String>)> {
            let gpu = Self::cpu()?;
            let name = gpu.info().name.clone();
            let name = match (name.find('('), name.rfind(')')) {
                (Some(a), Some(b)) if a < b => name[a + 1..b].to_string(),
                _ => name,
            };
            let line = match why.strip_prefix("no GPU: ") {
                Some(driver) => format!("No GPU here: running on the CPU device ({name}); {driver}"),
                None => format!("Running on the CPU device ({name}), {why}"),
            };
            Ok((gpu, Some(line)))
        };
        if env_wants_cpu() {
            return cpu(format!("as {}=cpu asks", crate::device::DEVICE_VAR));
        }
        match Self::from_env() {
            Err(e @ (Error::NoDriver | Error::NoDevice { .. })) if !crate::device::env_wants_gpu() => {
                cpu(format!("no GPU: {e}"))
            }
            r => r.map(|gpu| (gpu, None)),
        }
    }
}

/// Whether `COHORT_DEVICE=cpu`: [`Gpu::from_env`] (and everything that opens "the" device
/// through it) then opens the CPU device.
pub(crate) fn env_wants_cpu() -> bool {
    std::env::var(crate::device::DEVICE_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("cpu"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, PinnedBuffer};

    #[test]
    fn cpu_device_memory_streams_and_events() {
        let gpu = Gpu::cpu().unwrap();
        assert!(gpu.is_cpu());
        assert!(Gpu::cpu().unwrap().same_context(&gpu), "one CPU device per process");
        let data: Vec<u32> = (0..10_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let a = gpu.upload(&data).unwrap();
        assert_eq!(a.to_vec().unwrap(), data);
        // Device to device on a second stream, then pinned staging and fills.
        let s = gpu.new_stream().unwrap();
        let mut b = gpu.zeroed::<u32>(data.len()).unwrap();
        assert!(b.to_vec().unwrap().iter().all(|&x| x == 0));
        let (start, end) = (Event::new(&gpu).unwrap(), Event::new(&gpu).unwrap());
        start.record(&s).unwrap();
        s.copy(&a, &mut b).unwrap();
        end.record(&s).unwrap();
        assert!(end.elapsed_ms_since(&start).unwrap() >= 0.0);
        let mut pinned: PinnedBuffer<u32> = gpu.pinned(data.len()).unwrap();
        s.copy(&b, &mut pinned).unwrap();
        assert_eq!(pinned.as_slice().unwrap(), &data[..]);
        s.fill(b.slice_mut(100..200), 7u32).unwrap();
        let mut want = data.clone();
        want[100..200].fill(7);
        assert_eq!(b.to_vec().unwrap(), want);
        // Host functions run in stream order (at once here); a panic in one is reported.
        let seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = seen.clone();
        s.host_fn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst)).unwrap();
        s.synchronize().unwrap();
        assert!(seen.load(std::sync::atomic::Ordering::SeqCst));
        s.host_fn(|| panic!("boom")).unwrap();
        assert!(matches!(s.synchronize(), Err(Error::HostFnPanicked(m)) if m.contains("boom")));
        // What the CPU device does not do is an error naming it.
        let capture = gpu.new_stream_with(crate::StreamOptions::new().non_blocking(true)).unwrap().capture(|_| Ok(()));
        assert!(matches!(capture, Err(Error::NotOnCpu { .. })), "{capture:?}");
        let (free, total) = gpu.memory_info().unwrap();
        assert!(free <= total);
    }

    /// Foreign work on a stream (an NCCL collective, as `crate::nccl` adds it) whose failure
    /// the tests set.
    struct Work(std::sync::Mutex<Option<Arc<str>>>);

    impl crate::stream::StreamWork for Work {
        fn failure(&self) -> Option<Arc<str>> {
            self.0.lock().unwrap().clone()
        }
    }

    /// Issue 31 item 9, the stream side: work of another library (an NCCL collective) that
    /// fails after it was enqueued is reported by the waits that cover it — the host access of
    /// the memory it wrote, `query`, `synchronize` (which reports it once) — and not by those
    /// before it; the memory is freed normally.
    #[test]
    fn a_failed_collective_fails_the_waits_that_cover_it() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let src = gpu.upload(&data).unwrap();
        let mut before = gpu.zeroed::<u32>(data.len()).unwrap();
        s.copy(&src, &mut before).unwrap();
        // "The collective": its work on the stream, then the operation it writes with.
        let work = Arc::new(Work(std::sync::Mutex::new(None)));
        s.inner.add_foreign(work.clone());
        let mut written = gpu.zeroed::<u32>(data.len()).unwrap();
        s.copy(&src, &mut written).unwrap();
        // Aborted before anyone waited.
        *work.0.lock().unwrap() = Some("all_reduce of 1000 u32 aborted".into());
        assert_eq!(before.to_vec().unwrap(), data, "a wait for what came before it does not report it");
        for _ in 0..2 {
            let r = written.to_vec();
            assert!(matches!(r, Err(Error::CollectiveAborted(ref m)) if m.contains("aborted")), "{r:?}");
        }
        assert!(matches!(s.query(), Err(Error::CollectiveAborted(_))));
        assert!(matches!(s.synchronize(), Err(Error::CollectiveAborted(_))));
        // Reported by a synchronize: forgotten.
        s.synchronize().unwrap();
        assert!(s.query().unwrap());
        assert_eq!(written.to_vec().unwrap(), data);
        // A failure found by a wait of the stream's own (not a synchronize) stays for the next.
        let work = Arc::new(Work(std::sync::Mutex::new(Some("broadcast aborted".into()))));
        s.inner.add_foreign(work);
        s.fill(&mut written, 7u32).unwrap();
        assert!(matches!(written.to_vec(), Err(Error::CollectiveAborted(_))));
        // Freed normally.
        drop(written);
        assert!(matches!(s.synchronize(), Err(Error::CollectiveAborted(ref m)) if m.contains("broadcast")));
        s.synchronize().unwrap();
    }

    /// Adversarial pass (issue 31): an event made without timing (`Event::untimed`) cannot be
    /// timed, on the CPU device as on a GPU (`CUDA_ERROR_INVALID_HANDLE`); it timed before.
    #[test]
    fn an_untimed_event_cannot_be_timed() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let (timed, other, untimed) =
            (Event::new(&gpu).unwrap(), Event::new(&gpu).unwrap(), Event::untimed(&gpu).unwrap());
        for e in [&timed, &other, &untimed] {
            s.record(e).unwrap();
        }
        assert!(other.elapsed_ms_since(&timed).is_ok_and(|ms| ms >= 0.0));
        assert!(untimed.elapsed_ms_since(&timed).is_err());
        assert!(timed.elapsed_ms_since(&untimed).is_err());
    }

    /// Issue 26 item 1: a failure of the CPU device is a Cohort error naming the operation and
    /// why (`Error::CpuDevice`), not a CUDA error code the CPU device made up (it was
    /// `Error::Driver` with `CUDA_ERROR_INVALID_HANDLE`), and it has no driver error as its
    /// source (so nothing asks for libcuda to describe it).
    #[test]
    fn a_cpu_device_failure_is_a_cohort_error_not_a_cuda_code() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let (timed, untimed) = (Event::new(&gpu).unwrap(), Event::untimed(&gpu).unwrap());
        s.record(&timed).unwrap();
        s.record(&untimed).unwrap();
        let e = untimed.elapsed_ms_since(&timed).unwrap_err();
        match &e {
            Error::CpuDevice { what, detail } => {
                assert_eq!(what, "reading event time");
                assert!(detail.contains("without timing"), "{detail}");
            }
            other => panic!("expected Error::CpuDevice, got {other:?}"),
        }
        assert!(std::error::Error::source(&e).is_none());
        assert!(e.to_string().contains("the CPU device refused it"), "{e}");
        // What it does not do names the operation too, as `NotOnCpu`.
        let e = gpu.new_stream_with(crate::StreamOptions::new().non_blocking(true)).unwrap().capture(|_| Ok(()));
        assert!(matches!(e, Err(Error::NotOnCpu { ref what }) if what.contains("capturing a graph")), "{e:?}");
    }

    /// Adversarial pass (issue 31): the end of a `with_registered` scope waits for the work that
    /// used the memory; when that wait fails (here: a collective whose copy into the memory
    /// was aborted; on a GPU: a kernel that trapped) the scope is an `Err`, not `Ok` with
    /// memory the work never wrote. (The guard took its error out before the wait ran, so the
    /// failure was lost.)
    #[test]
    fn registered_scope_reports_a_failed_wait() {
        let gpu = Gpu::cpu().unwrap();
        let s = gpu.new_stream().unwrap();
        let data: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let src = gpu.upload(&data).unwrap();
        let mut host = vec![0u32; data.len()];
        let work = Arc::new(Work(std::sync::Mutex::new(None)));
        let r = gpu.with_registered(&mut host, |reg| {
            s.inner.add_foreign(work.clone());
            s.copy(&src, reg).unwrap();
            *work.0.lock().unwrap() = Some("all_gather into registered memory aborted".into());
        });
        assert!(matches!(r, Err(Error::CollectiveAborted(ref m)) if m.contains("aborted")), "{r:?}");
        // Reported (and forgotten) by a synchronize; without a failure, the scope is `Ok` and the
        // memory holds what was copied.
        assert!(matches!(s.synchronize(), Err(Error::CollectiveAborted(_))));
        let r = gpu.with_registered(&mut host, |reg| s.copy(&src, reg));
        assert!(matches!(r, Ok(Ok(()))), "{r:?}");
        assert_eq!(host, data);
    }
}
