//! Errors that name the device and the kernel a failure is blamed on: what a failed call was
//! doing ([`Doing`]), the launches not yet known to have finished ([`Unfinished`]: the suspect
//! of a sticky failure), and devices whose context a kernel killed ([`Lost`]), which every later
//! error names.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::DriverError;

use super::GpuInner;
use crate::backend::Fault;
use crate::error::{Error, Result, is_sticky};
use crate::launch::LaunchConfig;

impl GpuInner {
    /// The error for a failed backend call on this device, which was `doing`: a driver's
    /// failure as [`GpuInner::error`] (naming a sticky failure), any other as
    /// [`Fault::into_error`].
    #[cold]
    pub(crate) fn fail(&self, fault: Fault, doing: Doing) -> Error {
        match fault {
            Fault::Driver(code) => self.error(code, doing),
            fault => fault.into_error(doing.into_description()),
        }
    }

    /// A closure for `map_err` that turns a backend fault into the error of `what` (nothing
    /// is allocated unless it fails: a formatted `what` goes through [`GpuInner::fail`] in a
    /// closure instead).
    #[inline]
    pub(crate) fn failed(&self, what: &'static str) -> impl FnOnce(Fault) -> Error + '_ {
        move |f| self.fail(f, Doing::Call(what.into()))
    }

    /// The first panic recorded by any module of this context, as text.
    pub(crate) fn take_panic(&self) -> Option<String> {
        let slots = self.panic_records.lock().unwrap_or_else(|p| p.into_inner());
        slots.iter().find_map(|s| s.read())
    }

    /// Notes a successful launch on stream `stream` (a [`Stream`] key), `blocking` if the
    /// stream synchronizes with the legacy default stream.
    #[inline]
    pub(crate) fn note_launch(&self, stream: u64, blocking: bool, kernel: &Arc<str>, config: LaunchConfig) {
        self.launches.lock().unwrap_or_else(|p| p.into_inner()).note(stream, blocking, kernel, config);
    }

    /// Notes that launches have finished: on one stream, on every blocking stream (after an
    /// operation of the legacy default stream), or everywhere.
    pub(crate) fn note_finished(&self, which: Finished) {
        self.launches.lock().unwrap_or_else(|p| p.into_inner()).finished(which);
    }

    /// The error for a failed driver call on this context: [`Error::Driver`] ([`Error::OutOfMemory`]
    /// for `CUDA_ERROR_OUT_OF_MEMORY`), or
    /// [`Error::KernelFailed`] when a kernel has killed the context (see [`GpuInner::lost`]).
    pub(crate) fn error(&self, code: DriverError, doing: Doing) -> Error {
        self.lost(code, doing).unwrap_or_else(|doing| Error::driver(doing.into_description(), code))
    }

    /// `Ok(Error::KernelFailed)` when `code` is a sticky failure (the first one of this device
    /// is recorded now: the suspected kernel, its configuration, where it panicked), or when
    /// such a failure was recorded before on this device: every later error names it.
    /// Otherwise `Err(doing)`, for the caller's own error.
    pub(crate) fn lost(&self, code: DriverError, doing: Doing) -> Result<Error, Doing> {
        // (Nothing is sticky on the CPU device: its backend reports no driver codes, and a
        // kernel's failure is its launch's error. The out-of-memory code it is given is not
        // sticky, and no failure is recorded for its ordinal.)
        let (lost, first) = match lost_on(self.info.ordinal) {
            Some(lost) => (lost, false),
            None if is_sticky(&code) => {
                let suspect = self.launches.lock().unwrap_or_else(|p| p.into_inner()).suspect();
                record_lost(Lost {
                    ordinal: self.info.ordinal,
                    kernel: suspect.as_ref().map(|s| s.0.clone()),
                    config: suspect.as_ref().map(|s| s.1),
                    unfinished: suspect.map_or(0, |s| s.2),
                    panic: self.take_panic(),
                })
            }
            None => return Err(doing),
        };
        let during = match doing {
            Doing::Wait(_) if first => None,
            doing => Some(doing.into_description()),
        };
        Ok(lost.error(code, during))
    }
}

/// What a failed driver call was doing, for its error.
pub(crate) enum Doing {
    /// Waiting for launched work ("synchronizing a stream"): a sticky failure first seen here
    /// is reported as the kernel's own.
    Wait(&'static str),
    /// Any other call, described ("copying device memory to the host").
    Call(String),
}

impl Doing {
    pub(crate) fn into_description(self) -> String {
        match self {
            Doing::Wait(what) => what.to_string(),
            Doing::Call(what) => what,
        }
    }
}

/// The launches of a context not yet known to have finished, per stream: the first one (with
/// its launch order) and how many followed it there.
///
/// The driver does not say which kernel failed. A failed kernel stops all work after it, and
/// launches that were waited for successfully (a stream's `synchronize`, the device's, a copy
/// to the host) finished, so the kernel that failed is among the unfinished ones: the
/// suspect is the earliest, the first that may not have finished.
/// Which launches a successful wait shows finished.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Finished {
    /// Those of one stream (its key).
    Stream(u64),
    /// Those of every stream that synchronizes with the legacy default stream.
    Blocking,
    /// All of them.
    All,
}

#[derive(Default)]
pub(crate) struct Unfinished {
    seq: u64,
    /// (stream, launch order of its first unfinished launch, that kernel, its configuration,
    /// unfinished launches on the stream, whether the stream is blocking), at most one entry
    /// per stream.
    pub(super) streams: Vec<(u64, u64, Arc<str>, LaunchConfig, usize, bool)>,
}

impl Unfinished {
    /// Streams remembered at most (the oldest entry is forgotten: streams dropped unwaited).
    pub(super) const MAX: usize = 64;

    pub(super) fn note(&mut self, stream: u64, blocking: bool, kernel: &Arc<str>, config: LaunchConfig) {
        self.seq += 1;
        if let Some(s) = self.streams.iter_mut().find(|s| s.0 == stream) {
            s.4 += 1;
            return;
        }
        if self.streams.len() >= Self::MAX
            && let Some(oldest) = self.streams.iter().enumerate().min_by_key(|(_, s)| s.1).map(|(i, _)| i)
        {
            self.streams.swap_remove(oldest);
        }
        self.streams.push((stream, self.seq, kernel.clone(), config, 1, blocking));
    }

    pub(super) fn finished(&mut self, which: Finished) {
        match which {
            Finished::Stream(id) => self.streams.retain(|s| s.0 != id),
            Finished::Blocking => self.streams.retain(|s| !s.5),
            Finished::All => self.streams.clear(),
        }
    }

    /// The earliest unfinished launch, and how many launches are unfinished in all.
    pub(super) fn suspect(&self) -> Option<(Arc<str>, LaunchConfig, usize)> {
        let first = self.streams.iter().min_by_key(|s| s.1)?;
        Some((first.2.clone(), first.3, self.streams.iter().map(|s| s.4).sum()))
    }
}

/// The first sticky failure seen on a device. CUDA accepts no more work in the process after
/// one (see [`Error::KernelFailed`]), so it is kept for the rest of the process, for every
/// later error to name.
pub(crate) struct Lost {
    pub(super) ordinal: usize,
    pub(super) kernel: Option<Arc<str>>,
    pub(super) config: Option<LaunchConfig>,
    pub(super) unfinished: usize,
    pub(super) panic: Option<String>,
}

impl Lost {
    fn error(&self, code: DriverError, during: Option<String>) -> Error {
        Error::KernelFailed {
            kernel: self.kernel.clone(),
            config: self.config,
            unfinished: self.unfinished,
            code,
            panic: self.panic.clone(),
            during,
        }
    }
}

/// Whether any device has lost its context (so that the usual path takes no lock).
static ANY_LOST: AtomicBool = AtomicBool::new(false);
/// The first sticky failure of each device that had one.
static LOST: Mutex<Vec<Arc<Lost>>> = Mutex::new(Vec::new());

pub(super) fn lost_on(ordinal: usize) -> Option<Arc<Lost>> {
    if !ANY_LOST.load(Ordering::Acquire) {
        return None;
    }
    LOST.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|l| l.ordinal == ordinal).cloned()
}

/// Records `lost` unless its device already has a record; returns the record kept and whether
/// it is `lost`.
pub(super) fn record_lost(lost: Lost) -> (Arc<Lost>, bool) {
    let mut all = LOST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(l) = all.iter().find(|l| l.ordinal == lost.ordinal) {
        return (l.clone(), false);
    }
    let lost = Arc::new(lost);
    all.push(lost.clone());
    ANY_LOST.store(true, Ordering::Release);
    (lost, true)
}

/// The names of the devices opened in this process, by ordinal, for errors that name a device.
static NAMES: Mutex<Vec<(usize, String)>> = Mutex::new(Vec::new());

/// How errors name device `ordinal`: `GPU 0 (NVIDIA H200)` (the name once a `Gpu` of it has
/// been opened, else `GPU 0`), or `the CPU device`.
pub(crate) fn device_label(ordinal: usize) -> String {
    if ordinal == crate::cpu::CPU_ORDINAL {
        return "the CPU device".into();
    }
    let names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    match names.iter().find(|(o, _)| *o == ordinal) {
        Some((_, name)) => format!("GPU {ordinal} ({name})"),
        None => format!("GPU {ordinal}"),
    }
}

pub(super) fn remember_name(ordinal: usize, name: &str) {
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if !names.iter().any(|(o, _)| *o == ordinal) {
        names.push((ordinal, name.to_string()));
    }
}

/// The error for a failed driver call on device `ordinal` outside any [`GpuInner`] (making a
/// context): [`Error::KernelFailed`] naming the earlier failure if the device had one.
pub(super) fn device_error(ordinal: usize, code: DriverError, what: String) -> Error {
    match lost_on(ordinal) {
        Some(lost) => lost.error(code, Some(what)),
        None => Error::driver(what, code),
    }
}
