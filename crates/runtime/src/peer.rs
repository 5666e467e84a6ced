//! Several GPUs: every device, peer access between their contexts, and the checks that keep
//! one GPU's work off another's memory.
//!
//! | CUDA | Cohort |
//! |---|---|
//! | `cudaGetDeviceCount` + `cudaSetDevice(i)` per device | [`Gpu::all`] (a [`Gpu`] per device; no current device to set) |
//! | `cudaDeviceCanAccessPeer` | [`Gpu::can_access_peer`] |
//! | `cudaDeviceEnablePeerAccess` | [`Gpu::enable_peer_access`] (idempotent) |
//! | — | [`Gpu::peer_access_enabled`] (what Cohort's checks rely on) |
//! | `cudaMemcpyPeerAsync` | [`Stream::copy`](crate::Stream::copy) between buffers of two GPUs |
//!
//! **The rules.** Every call binds the context of the `Gpu`, stream or buffer it uses, so
//! `Gpu`s of several devices can be used alternately from one thread, or each from a thread of
//! its own (`Gpu` is `Send + Sync`). A kernel runs on the device of the module it was loaded
//! from and must be launched on a stream of that same context (else [`Error::CrossDevice`]).
//! Each buffer argument must be memory of that context, or device memory of another context
//! to which peer access has been enabled from the kernel's context
//! ([`Gpu::enable_peer_access`]); otherwise the launch is an [`Error::CrossDevice`] naming the
//! kernel and both devices, before anything is enqueued. Pinned host memory of another
//! context is refused too. Copies between device buffers of two contexts are peer copies
//! (`cuMemcpyPeerAsync`): they need no peer access (the driver stages them through the host
//! when there is no direct path) and are ordered with both buffers' other work exactly like
//! any copy (a stream of one device waits for events of the other).
//!
//! **One device identity.** Every handle (stream, event, module and its functions and
//! variables, buffer, graph) belongs to one [`DeviceId`]: a CUDA context of a GPU, or the CPU
//! device. Each operation that combines handles compares them before any driver call, through
//! [`require_same`] (one context: recording an event, timing two events, setting a module
//! variable, a fill, a graph replay, a kernel's module and stream) or [`require_same_kind`]
//! (two GPUs may meet: a stream waiting for another GPU's event, the ends of a peer copy); a
//! kernel's buffers may also be peer memory, as above; and the tracker refuses CPU-device
//! memory on a GPU's stream, or the reverse, for every operation it orders. A mix is an
//! [`Error::CrossDevice`] naming the operation and both devices. The CPU device and a GPU never
//! mix: their handles belong to different backends (`crate::backend`: each call goes to the
//! backend of the device it runs on, so a handle of the other would reach the wrong one).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::CudaContext;

use crate::backend::CtxH;
use crate::device::{Doing, Gpu, GpuInner};
use crate::error::{Error, Result};
use crate::track::{AllocKind, Use};

/// Pairs of contexts (reader, memory owner) with peer access enabled through
/// [`Gpu::enable_peer_access`]. Weak references: an entry counts only while both contexts
/// are alive, so a destroyed context whose handle the driver reuses never inherits it.
type PeerPair = (Weak<CudaContext>, Weak<CudaContext>);
static PEERS: Mutex<Vec<PeerPair>> = Mutex::new(Vec::new());
/// Whether any pair was ever recorded (the usual single-GPU path takes no lock).
static ANY_PEER: AtomicBool = AtomicBool::new(false);

/// Whether `a` and `b` are the same CUDA context (two `Gpu::new(0)` share the primary one), or
/// both the CPU device.
#[inline]
pub(crate) fn same_context(a: &GpuInner, b: &GpuInner) -> bool {
    std::ptr::eq(a, b) || a.id() == b.id()
}

/// Which device a handle (stream, event, module, symbol, buffer, graph) belongs to: what the
/// checks compare. Handles of one context are one device's; the CPU device is one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceId {
    /// The CPU device ([`Gpu::cpu`]).
    Cpu,
    /// A CUDA context (`ctx`, the raw handle) on GPU `ordinal`.
    Gpu { ordinal: usize, ctx: usize },
}

/// How the devices of two handles relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Relation {
    /// One context (or both the CPU device): they mix freely.
    Same,
    /// Two contexts of one GPU (a primary `Gpu` and an isolated one).
    OtherContext,
    /// Two GPUs: a stream may wait for the other's event, a copy may move between them, a
    /// kernel may use the other's memory with peer access; nothing else.
    OtherGpu,
    /// The CPU device and a GPU: nothing mixes (their handles are for different drivers).
    CpuAndGpu,
}

/// How `a`'s and `b`'s devices relate.
pub(crate) fn relation(a: DeviceId, b: DeviceId) -> Relation {
    match (a, b) {
        (DeviceId::Cpu, DeviceId::Cpu) => Relation::Same,
        (DeviceId::Cpu, _) | (_, DeviceId::Cpu) => Relation::CpuAndGpu,
        (DeviceId::Gpu { ctx: x, .. }, DeviceId::Gpu { ctx: y, .. }) if x == y => Relation::Same,
        (DeviceId::Gpu { ordinal: x, .. }, DeviceId::Gpu { ordinal: y, .. }) if x == y => Relation::OtherContext,
        _ => Relation::OtherGpu,
    }
}

/// Why handles of two devices that relate as `r` do not mix here, then `fix`.
fn mix_reason(r: Relation, fix: &str) -> String {
    let why = match r {
        Relation::CpuAndGpu => "handles of the CPU device and of a GPU never mix (they belong to different drivers)",
        Relation::OtherContext => "they belong to two contexts of one GPU (a primary Gpu and an isolated one)",
        _ => "they belong to two GPUs",
    };
    format!("{why}; {fix}")
}

/// The check of an operation that combines handles: `given` (a stream, an event, a buffer, a
/// module variable, a graph) must be of the context `what` runs on, `runs_on`; otherwise
/// [`Error::CrossDevice`] naming `what`, both devices, and `fix`. Made before any driver call
/// (so a handle never reaches another device's backend: see `crate::backend`).
#[inline]
pub(crate) fn require_same(
    what: impl FnOnce() -> String,
    runs_on: &GpuInner,
    given: &GpuInner,
    fix: &str,
) -> Result<()> {
    match relation(runs_on.id(), given.id()) {
        Relation::Same => Ok(()),
        r => Err(Error::cross_device(what(), runs_on, given, mix_reason(r, fix))),
    }
}

/// As [`require_same`], but two GPUs (or two contexts) may meet: only a mix of the CPU device
/// and a GPU is refused (a stream waiting for another GPU's event, the two ends of a peer copy).
#[inline]
pub(crate) fn require_same_kind(
    what: impl FnOnce() -> String,
    runs_on: &GpuInner,
    given: &GpuInner,
    fix: &str,
) -> Result<()> {
    match relation(runs_on.id(), given.id()) {
        Relation::CpuAndGpu => Err(Error::cross_device(what(), runs_on, given, mix_reason(Relation::CpuAndGpu, fix))),
        _ => Ok(()),
    }
}

/// Whether peer access from `reader`'s context to `owner`'s was enabled through Cohort and
/// both contexts are still alive.
fn enabled(reader: &GpuInner, owner: &GpuInner) -> bool {
    if !ANY_PEER.load(Ordering::Acquire) {
        return false;
    }
    let (r, o) = (reader.cu_ctx(), owner.cu_ctx());
    let peers = PEERS.lock().unwrap_or_else(|p| p.into_inner());
    peers.iter().any(|(a, b)| match (a.upgrade(), b.upgrade()) {
        (Some(a), Some(b)) => a.cu_ctx() == r && b.cu_ctx() == o,
        _ => false,
    })
}

fn record(reader: &Arc<CudaContext>, owner: &Arc<CudaContext>) {
    let mut peers = PEERS.lock().unwrap_or_else(|p| p.into_inner());
    peers.retain(|(a, b)| a.strong_count() > 0 && b.strong_count() > 0);
    peers.push((Arc::downgrade(reader), Arc::downgrade(owner)));
    ANY_PEER.store(true, Ordering::Release);
}

/// Checks a kernel launch before it is enqueued: the stream is of the module's context, and
/// every operand is memory of that context or peer memory it may read.
pub(crate) fn check_launch(kernel: &str, module: &GpuInner, stream: &GpuInner, uses: &[Use<'_>]) -> Result<()> {
    let what = || format!("kernel `{kernel}`");
    require_same(
        what,
        module,
        stream,
        "the stream belongs to another context than the module the kernel was loaded from; launch it on a stream of \
         the module's Gpu (load the module on each GPU you run it on)",
    )?;
    for u in uses {
        if u.foreign.is_some() {
            // cudarc's memory: its context is checked against the stream's (this module's)
            // when it is ordered (`interop::run_foreign`).
            continue;
        }
        let owner = &*u.alloc.gpu;
        if same_context(owner, module) {
            continue;
        }
        let r = relation(module.id(), owner.id());
        let reason = match r {
            Relation::Same => continue,
            Relation::CpuAndGpu => mix_reason(r, "copy the data through host memory"),
            _ if u.alloc.kind != AllocKind::Device => match u.alloc.kind {
                AllocKind::Pooled => "stream-ordered (pool) memory is reachable only from its own GPU (Cohort grants \
                     peers no access to pools); copy it into a buffer of the kernel's Gpu"
                    .into(),
                AllocKind::Managed => {
                    "managed memory is used only by its own GPU's kernels; allocate it on the kernel's Gpu".into()
                }
                _ => "pinned or registered host memory is mapped for the context that \
                    allocated it; allocate it on the kernel's Gpu or copy it"
                    .into(),
            },
            Relation::OtherContext => "the buffer belongs to another context of the same device (an isolated Gpu, or \
                a primary one beside an isolated one), which a kernel cannot reach; copy it into this context \
                (Stream::copy)"
                .into(),
            Relation::OtherGpu if enabled(module, owner) => continue,
            Relation::OtherGpu => {
                let (device, other) = (module.info.ordinal, owner.info.ordinal);
                format!(
                    "peer access from device {device} to device {other} is not enabled; call \
                     gpu{device}.enable_peer_access(&gpu{other}) first, or copy the buffer to device {device}"
                )
            }
        };
        return Err(Error::cross_device(what(), module, owner, reason));
    }
    Ok(())
}

/// How [`Stream::copy`](crate::Stream::copy) moves `src` to `dst` on a stream of `stream`.
pub(crate) enum CopyPath {
    /// `cuMemcpyAsync`: everything in one context.
    Local,
    /// `cuMemcpyPeerAsync` between two contexts' device memory: (dst ctx, src ctx).
    Peer(CtxH, CtxH),
}

/// Picks the copy path, refusing host memory of a context other than the stream's.
pub(crate) fn copy_path(stream: &GpuInner, src: &Use<'_>, dst: &Use<'_>) -> Result<CopyPath> {
    let (s, d) = (&*src.alloc.gpu, &*dst.alloc.gpu);
    if same_context(s, stream) && same_context(d, stream) {
        return Ok(CopyPath::Local);
    }
    for g in [s, d] {
        require_same_kind(|| "copy".into(), stream, g, "copy through host memory (to_vec, copy_from)")?;
    }
    for (u, g) in [(src, s), (dst, d)] {
        if u.alloc.kind != AllocKind::Device && !same_context(g, stream) {
            let reason = match u.alloc.kind {
                AllocKind::Pooled => {
                    "stream-ordered (pool) memory can be copied only on a stream of its own Gpu, to or from memory of \
                     that Gpu (peers have no access to pools); stage it in a buffer from `Gpu::zeroed`"
                }
                AllocKind::Managed => "managed memory can be copied only on a stream of its own Gpu",
                _ => "pinned or registered host memory can be copied only on a stream of its own Gpu",
            };
            return Err(Error::cross_device("copy", stream, g, reason));
        }
    }
    Ok(CopyPath::Peer(d.backend.ctx(), s.backend.ctx()))
}

impl Gpu {
    /// Every CUDA device, each with its primary context, in ordinal order (`COHORT_DEVICE`
    /// does not filter it: it picks "the" GPU of single-GPU programs). Each `Gpu` may be used
    /// from any thread; calls bind its context themselves.
    ///
    /// # Errors
    /// As [`Gpu::count`] and [`Gpu::new`]; an empty `Vec` is never returned as `Ok` without
    /// devices: no device is [`Error::NoDevice`].
    pub fn all() -> Result<Vec<Gpu>> {
        let n = Self::count()?;
        if n == 0 {
            return Err(Error::NoDevice { requested: 0, count: 0, detail: None });
        }
        (0..n).map(Gpu::new).collect()
    }

    /// Whether this `Gpu` and `other` are the same CUDA context (then their memory, modules
    /// and streams mix freely).
    #[must_use]
    pub fn same_context(&self, other: &Gpu) -> bool {
        same_context(&self.inner, &other.inner)
    }

    /// Whether kernels on this device could read and write `other`'s memory once peer access
    /// is enabled (`cuDeviceCanAccessPeer`). `false` for the same device (no peer access is
    /// needed there, nor possible).
    ///
    /// # Errors
    /// A driver failure.
    #[doc(alias = "cudaDeviceCanAccessPeer")]
    pub fn can_access_peer(&self, other: &Gpu) -> Result<bool> {
        let (a, b) = (self.inner.cuda("peer access")?.cu_device(), other.inner.cuda("peer access")?.cu_device());
        if a == b {
            return Ok(false);
        }
        // Both are valid device handles (their contexts live).
        let can = crate::backend::cuda::can_access_peer(a, b).map_err(|code| {
            self.inner.error(
                code,
                Doing::Call(format!(
                    "asking whether device {} can access device {}",
                    self.inner.info.ordinal, other.inner.info.ordinal
                )),
            )
        })?;
        Ok(can)
    }

    /// Lets kernels of this `Gpu`'s context read and write device memory of `other`'s
    /// context (`cuCtxEnablePeerAccess`, one direction: call it on `other` too for the
    /// reverse), and records it so that launches given `other`'s buffers are accepted.
    /// Calling it again is `Ok` (`CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED` is success). Copies
    /// between the two need none of this.
    ///
    /// The record is kept by context and lasts while the two `Gpu`s it was made with (or their
    /// clones, or anything made from them: modules, streams, buffers) live; other `Gpu`s of the
    /// same primary contexts see it meanwhile. Once those are all dropped the driver may have
    /// reset the context, so the record is forgotten: enable again (idempotent, cheap).
    ///
    /// # Errors
    /// [`Error::PeerAccessUnsupported`] when [`Gpu::can_access_peer`] says no (also for the
    /// same device); a driver failure.
    #[doc(alias = "cudaDeviceEnablePeerAccess")]
    pub fn enable_peer_access(&self, other: &Gpu) -> Result<()> {
        let (device, peer) = (self.inner.info.ordinal, other.inner.info.ordinal);
        if !self.can_access_peer(other)? {
            return Err(Error::PeerAccessUnsupported { device, peer });
        }
        self.inner.bind()?;
        // SAFETY: this context is current; `other`'s context is alive (held by `other`).
        unsafe { self.inner.backend.enable_peer_access(other.inner.backend.ctx()) }.map_err(|f| {
            self.inner.fail(f, Doing::Call(format!("enabling peer access from device {device} to device {peer}")))
        })?;
        record(self.inner.cuda("peer access")?, other.inner.cuda("peer access")?);
        Ok(())
    }

    /// Whether [`Gpu::enable_peer_access`]`(other)` succeeded on this context and both
    /// contexts are still alive: kernels of this `Gpu` may then be given `other`'s buffers.
    /// `true` for the same context.
    #[must_use]
    pub fn peer_access_enabled(&self, other: &Gpu) -> bool {
        self.same_context(other) || enabled(&self.inner, &other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn already_enabled_peer_access_is_success() {
        use crate::backend::cuda::enable_outcome;
        use cudarc::driver::sys::CUresult;
        assert!(enable_outcome(CUresult::CUDA_SUCCESS).is_ok());
        assert!(enable_outcome(CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED).is_ok());
        assert_eq!(
            enable_outcome(CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED),
            Err(CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
        );
    }

    #[test]
    fn gpu_is_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<Gpu>();
        both::<crate::Stream>();
        both::<crate::Module>();
        both::<crate::DeviceBuffer<f32>>();
    }

    #[test]
    fn cross_device_errors_say_what_to_do() {
        let e = Error::CrossDevice {
            what: "kernel `scale`".into(),
            device: 1,
            other: 0,
            reason: "peer access from device 1 to device 0 is not enabled; call gpu1.enable_peer_access(&gpu0) first"
                .into(),
        };
        let m = e.to_string();
        // Named "GPU n (its name)" once a Gpu of it was opened in this process.
        assert!(m.starts_with("kernel `scale` on GPU 1"), "{m}");
        assert!(m.contains(" was given memory, a stream or an event of GPU 0"), "{m}");
        assert!(m.contains("enable_peer_access"), "{m}");
        let m = Error::PeerAccessUnsupported { device: 0, peer: 1 }.to_string();
        assert!(m.contains("device 0 cannot access device 1") && m.contains("Stream::copy"), "{m}");
    }

    const CPU: DeviceId = DeviceId::Cpu;
    const G0: DeviceId = DeviceId::Gpu { ordinal: 0, ctx: 0x5000 };
    const G0_ISOLATED: DeviceId = DeviceId::Gpu { ordinal: 0, ctx: 0x6000 };
    const G1: DeviceId = DeviceId::Gpu { ordinal: 1, ctx: 0x7000 };

    #[test]
    fn device_identity_relations() {
        use Relation::*;
        let table = [
            (CPU, CPU, Same),
            (G0, G0, Same),
            (CPU, G0, CpuAndGpu),
            (G1, CPU, CpuAndGpu),
            (G0, G0_ISOLATED, OtherContext),
            (G0_ISOLATED, G0, OtherContext),
            (G0, G1, OtherGpu),
            (G1, G0_ISOLATED, OtherGpu),
        ];
        for (a, b, want) in table {
            assert_eq!(relation(a, b), want, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn the_cpu_device_is_one_device() {
        // Two handles of the CPU device (one per `Gpu::cpu()` call) are the same device: every
        // check passes.
        let (a, b) = (Gpu::cpu().unwrap(), Gpu::cpu().unwrap());
        assert_eq!(a.inner.id(), DeviceId::Cpu);
        assert!(same_context(&a.inner, &b.inner));
        require_same(|| "test".into(), &a.inner, &b.inner, "").unwrap();
        require_same_kind(|| "test".into(), &a.inner, &b.inner, "").unwrap();
    }

    #[test]
    fn mix_errors_name_both_devices() {
        let m = mix_reason(Relation::CpuAndGpu, "copy through host memory");
        assert!(m.contains("CPU device and of a GPU never mix") && m.ends_with("copy through host memory"), "{m}");
        let e = Error::CrossDevice {
            what: "Stream::wait".into(),
            device: crate::cpu::CPU_ORDINAL,
            other: 1_000_003,
            reason: m,
        };
        let m = e.to_string();
        assert!(
            m.starts_with("Stream::wait on the CPU device was given memory, a stream or an event of GPU 1000003"),
            "{m}"
        );
        let e = Error::CrossDevice { what: "copy".into(), device: 1_000_003, other: 1_000_003, reason: "r".into() };
        assert!(e.to_string().contains("of another context of it"), "{e}");
    }
}
