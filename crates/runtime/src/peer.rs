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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::CudaContext;
use cudarc::driver::sys::{self, CUresult};

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

/// Whether `a` and `b` are the same CUDA context (two `Gpu::new(0)` share the primary one).
#[inline]
pub(crate) fn same_context(a: &GpuInner, b: &GpuInner) -> bool {
    std::ptr::eq(a, b) || a.cu_ctx() == b.cu_ctx()
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

/// How an enable call's result reads: already enabled is success.
fn enable_outcome(code: CUresult) -> std::result::Result<(), CUresult> {
    match code {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        code => Err(code),
    }
}

/// Checks a kernel launch before it is enqueued: the stream is of the module's context, and
/// every operand is memory of that context or peer memory it may read.
pub(crate) fn check_launch(kernel: &str, module: &GpuInner, stream: &GpuInner, uses: &[Use<'_>]) -> Result<()> {
    if !same_context(module, stream) {
        return Err(Error::CrossDevice {
            what: format!("kernel `{kernel}`"),
            device: module.info.ordinal,
            other: stream.info.ordinal,
            reason: "the stream belongs to another context than the module the kernel was loaded from; launch it on \
                     a stream of the module's Gpu (load the module on each GPU you run it on)"
                .into(),
        });
    }
    for u in uses {
        let owner = &*u.alloc.gpu;
        if same_context(owner, module) {
            continue;
        }
        if owner.is_cpu() != module.is_cpu() {
            return Err(Error::CrossDevice {
                what: format!("kernel `{kernel}`"),
                device: module.info.ordinal,
                other: owner.info.ordinal,
                reason: "memory of the CPU device and of a GPU do not mix: copy the data through host memory".into(),
            });
        }
        let (device, other) = (module.info.ordinal, owner.info.ordinal);
        if u.alloc.kind != AllocKind::Device {
            let reason = match u.alloc.kind {
                AllocKind::Pooled => {
                    "stream-ordered (pool) memory is reachable only from its own GPU (Cohort grants peers no access \
                     to pools); copy it into a buffer of the kernel's Gpu"
                }
                AllocKind::Managed => {
                    "managed memory is used only by its own GPU's kernels; allocate it on the kernel's Gpu"
                }
                _ => {
                    "pinned or registered host memory is mapped for the context that allocated it; allocate it on the \
                     kernel's Gpu or copy it"
                }
            };
            return Err(Error::CrossDevice {
                what: format!("kernel `{kernel}`"),
                device,
                other,
                reason: reason.into(),
            });
        }
        if device == other {
            return Err(Error::CrossDevice {
                what: format!("kernel `{kernel}`"),
                device,
                other,
                reason: "the buffer belongs to another context of the same device (an isolated Gpu, or a primary \
                         one beside an isolated one), which a kernel cannot reach; copy it into this context \
                         (Stream::copy)"
                    .into(),
            });
        }
        if !enabled(module, owner) {
            return Err(Error::CrossDevice {
                what: format!("kernel `{kernel}`"),
                device,
                other,
                reason: format!(
                    "peer access from device {device} to device {other} is not enabled; call \
                     gpu{device}.enable_peer_access(&gpu{other}) first, or copy the buffer to device {device}"
                ),
            });
        }
    }
    Ok(())
}

/// How [`Stream::copy`](crate::Stream::copy) moves `src` to `dst` on a stream of `stream`.
pub(crate) enum CopyPath {
    /// `cuMemcpyAsync`: everything in one context.
    Local,
    /// `cuMemcpyPeerAsync` between two contexts' device memory: (dst ctx, src ctx).
    Peer(sys::CUcontext, sys::CUcontext),
}

/// Picks the copy path, refusing host memory of a context other than the stream's.
pub(crate) fn copy_path(stream: &GpuInner, src: &Use<'_>, dst: &Use<'_>) -> Result<CopyPath> {
    let (s, d) = (&*src.alloc.gpu, &*dst.alloc.gpu);
    if same_context(s, stream) && same_context(d, stream) {
        return Ok(CopyPath::Local);
    }
    for g in [s, d] {
        if g.is_cpu() != stream.is_cpu() {
            return Err(Error::CrossDevice {
                what: "copy".into(),
                device: stream.info.ordinal,
                other: g.info.ordinal,
                reason: "memory of the CPU device and of a GPU do not mix: copy through host memory (to_vec, \
                         copy_from)"
                    .into(),
            });
        }
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
            return Err(Error::CrossDevice {
                what: "copy".into(),
                device: stream.info.ordinal,
                other: g.info.ordinal,
                reason: reason.into(),
            });
        }
    }
    Ok(CopyPath::Peer(d.cu_ctx(), s.cu_ctx()))
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
        let mut can = 0;
        // SAFETY: writes one int; both are valid device handles (their contexts live).
        unsafe { crate::drv::cuDeviceCanAccessPeer(&mut can, a, b) }.result().map_err(|code| {
            self.inner.error(
                code,
                Doing::Call(format!(
                    "asking whether device {} can access device {}",
                    self.inner.info.ordinal, other.inner.info.ordinal
                )),
            )
        })?;
        Ok(can != 0)
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
        let code = unsafe { crate::drv::cuCtxEnablePeerAccess(other.inner.cu_ctx(), 0) };
        enable_outcome(code).map_err(|code| {
            self.inner.error(
                cudarc::driver::DriverError(code),
                Doing::Call(format!("enabling peer access from device {device} to device {peer}")),
            )
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
        assert!(m.starts_with("kernel `scale` on device 1 was given memory or a stream of device 0"), "{m}");
        assert!(m.contains("enable_peer_access"), "{m}");
        let m = Error::PeerAccessUnsupported { device: 0, peer: 1 }.to_string();
        assert!(m.contains("device 0 cannot access device 1") && m.contains("Stream::copy"), "{m}");
    }
}
