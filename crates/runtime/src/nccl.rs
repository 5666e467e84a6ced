//! NCCL collectives over Cohort buffers (cargo feature `nccl`).
//!
//! | NCCL | Cohort |
//! |---|---|
//! | `ncclCommInitAll` (one process, one communicator per GPU) | [`Comm::for_gpus`] |
//! | `ncclGetUniqueId`, exchanging it, `ncclCommInitRank` (one process per GPU) | [`NcclId`], [`NcclId::exchange`], [`Comm::from_rank`], [`Comm::from_id_file`] |
//! | the same under `torchrun`, `srun`, `mpirun` (rank from the environment, the id over TCP) | [`Comm::from_env`], [`Launch`], [`Rendezvous`], [`NcclId::exchange_tcp`] ([`bootstrap`]) |
//! | `ncclAllReduce` (`ncclSum`, `ncclProd`, `ncclMin`, `ncclMax`, `ncclAvg`) | [`Comm::all_reduce`], [`Comm::all_reduce_in_place`], [`ReduceOp`] |
//! | `ncclBroadcast` | [`Comm::broadcast`], [`Comm::broadcast_in_place`] |
//! | `ncclAllGather`, `ncclReduceScatter` | [`Comm::all_gather`], [`Comm::reduce_scatter`] |
//! | `ncclSend`, `ncclRecv` | [`Comm::send`], [`Comm::recv`] |
//! | `ncclGroupStart` … `ncclGroupEnd` | [`Group`] ([`Group::run`]) |
//!
//! # Stream-ordered safety
//!
//! A collective reads its send buffer and writes its receive buffer asynchronously on the
//! stream it is given, exactly like [`Stream::copy`]: it first makes that stream wait for the
//! conflicting work of other streams on those byte ranges, and is then recorded on the buffers,
//! so that later kernels, copies, host reads and frees wait for it. Send buffers are borrowed
//! shared (`&DeviceBuffer`, a [`DeviceView`](crate::DeviceView)), receive buffers exclusively
//! (`&mut DeviceBuffer`, a [`DeviceViewMut`](crate::DeviceViewMut)). Every length is checked
//! before NCCL sees it ([`Error::Argument`]), buffers must be device memory of the
//! communicator's GPU, and the stream a stream of that GPU.
//!
//! A [`Group`] enqueues several operations as one NCCL group (needed when one thread drives
//! several GPUs: NCCL may block in each call until every rank has called). Its operations are
//! ordered through the first operation's stream: the other streams wait for it before the
//! group and it waits for them after, so the tracker can record the whole group as one
//! operation of that stream (one lock of every buffer's record, in address order: no
//! deadlock between threads). With a single stream this costs no event.
//!
//! # Which NCCL
//!
//! NCCL is loaded when first used, from `COHORT_NCCL` (a path to the library) if set, else
//! `libnccl.so.2` then `libnccl.so` through the usual library search (`LD_LIBRARY_PATH`,
//! `ldconfig`). NCCL's Python wheel (`pip install nvidia-nccl-cu13`; PyTorch's wheels depend
//! on it) ships `lib/libnccl.so.2`. Without it every call returns [`NcclError::NotFound`]
//! saying how to get it; nothing else in Cohort needs NCCL. (cudarc's own NCCL loader panics
//! when the library is missing and does not look for `libnccl.so.2`, so Cohort loads the few
//! entry points it uses itself.)
//!
//! # NVLink multicast stays off
//!
//! Before NCCL is loaded, Cohort sets `NCCL_NVLS_ENABLE=0` unless the variable is already set:
//! NVLink SHARP (multicast objects over NVSwitch) on shared hosts can put GPUs out of service
//! for every tenant when a job dies with multicast memory mapped, and all-reduce reaches
//! nearly the same bus bandwidth without it on the machines Cohort is tested on. Set
//! `NCCL_NVLS_ENABLE=1` yourself to opt in. Setting a variable races with other threads reading
//! the environment outside Rust's lock (C code calling `getenv`), so a program with threads
//! should call [`available`] (which loads NCCL) at its start, before it spawns them.
//!
//! # Ranks of one process
//!
//! NCCL wants every rank of a communicator to make the same collectives in the same order
//! (same element type, count, operator, root) and every send to meet a receive of the same
//! type and count; otherwise it hangs, or moves more data than a buffer holds. Cohort compares
//! the calls of the ranks that live in this process before NCCL sees them: the ranks of
//! [`Comm::for_gpus`], and every rank made by [`Comm::from_rank`] with one id in this process
//! (several threads each holding a rank). Each rank's collectives are numbered in the order
//! it makes them, and so are the sends from each rank to each other and the receives; the
//! `k`-th collective of every local rank must be the same call, the `i`-th send from `r` to
//! `p` and the `i`-th receive of `p` from `r` must agree. Nothing waits for the other ranks:
//! the first rank to make call `k` goes on to NCCL, and each other rank's call `k` is
//! compared with it when it comes. So one thread may issue rank 0's call, then rank 1's (in a
//! [`Group`], as NCCL wants), and two threads may each drive a rank.
//!
//! A call that disagrees is refused ([`NcclError::Mismatch`], naming both ranks, the call's
//! number and the fields that differ), before NCCL sees it. If the other rank's call was
//! enqueued already (by another thread), that rank would wait for it forever: the
//! communicator is aborted, so that rank's stream waits fail
//! ([`Error::CollectiveAborted`], with the same reason) and
//! its later calls are refused ([`NcclError::Aborted`]). A call that needs a rank of this
//! process whose `Comm` was dropped is refused too. Ranks in other processes are not seen:
//! for them, the deadline below is what ends a mismatch.
//!
//! # Hangs
//!
//! Communicators are non-blocking (`ncclCommInitRankConfig` with `blocking = 0`, NCCL 2.14 and
//! later): no NCCL call waits inside NCCL for other ranks, so any communicator can be aborted
//! at any time. Cohort waits for each call to finish enqueueing (`ncclCommGetAsyncError`),
//! and a process-wide watchdog thread watches every enqueued operation: an event recorded
//! before it and one after it on its stream. Creating a communicator, enqueueing an
//! operation, and an operation that has begun on the GPU (its first event completed) each
//! get a deadline, [`timeout`]: `COHORT_NCCL_TIMEOUT` seconds if set, else
//! [`DEFAULT_TIMEOUT`] (5 minutes: long enough for a rank to wait while another writes a
//! checkpoint), per communicator [`Comm::set_timeout`]. Past it, or when NCCL reports an
//! error, every rank of the communicator in this process is aborted (`ncclCommAbort`, which
//! stops the kernels still running): the operations not yet finished fail, each stream they
//! ran on reports it from its waits — [`Stream::synchronize`], [`Stream::query`], and host
//! accesses of the memory they wrote ([`Error::CollectiveAborted`],
//! naming the operation, the ranks and the deadline; a host access or `query` reports it
//! again until a `synchronize` of the stream has) — and every later call on the communicator
//! is refused ([`NcclError::Aborted`]).
//! Buffers are freed normally after an abort. Events and [`Gpu::synchronize`] do not report
//! it. A collective needs a stream of its own (not the legacy or per-thread default stream),
//! whose waits can report it, and is not captured into a graph (a replay could not be
//! watched).
//!
//! With an NCCL older than 2.14, or `NCCL_COMM_BLOCKING=1`, communicators are blocking: a call
//! may wait inside NCCL for the other ranks (creating a communicator, the first exchange with
//! a peer), and no deadline ends that wait; the watchdog still bounds operations running on
//! the GPU.
//!
//! # Dropping communicators
//!
//! The communicators made by one call ([`Comm::for_gpus`], or one [`Comm::from_rank`]) are
//! aborted together (`ncclCommAbort`, each on a thread of its own, as it may wait for the
//! node's other ranks) when the last of them is dropped; their operations that had not
//! finished fail (their streams' waits say so). Synchronize the streams first if their
//! collectives must complete; buffers stay safe either way (they wait for the recorded
//! operations before being freed or read).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub mod bootstrap;
mod ledger;
mod watch;

pub use bootstrap::{Endpoint, Launch, Launcher, Rendezvous};

use ledger::{Call, CallKind};
use watch::{Cell, OpState, Poll, Record};
pub use watch::{DEFAULT_TIMEOUT, TIMEOUT_VAR, timeout};

use cohort::DeviceCopy;
use cudarc::driver::sys::CUstream;

use crate::device::Gpu;
use crate::error::Error;
use crate::stream::{Event, Stream, StreamInner, StreamKind};
use crate::track::{AllocKind, CopyDst, CopySrc, Gates, Mark, Use, run_tracked_in};

// ---------------------------------------------------------------------------------------------
// The library

type RawComm = *mut c_void;
type RawResult = c_int;
const NCCL_SUCCESS: RawResult = 0;
const NCCL_IN_PROGRESS: RawResult = 7;

/// `ncclUniqueId`: 128 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawId {
    internal: [c_char; ID_BYTES],
}

/// The size of an [`NcclId`] in bytes (`NCCL_UNIQUE_ID_BYTES`).
pub const ID_BYTES: usize = 128;

/// The NCCL entry points Cohort uses, resolved once.
struct Api {
    version: c_int,
    get_unique_id: unsafe extern "C" fn(*mut RawId) -> RawResult,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawId, c_int) -> RawResult,
    comm_init_all: unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> RawResult,
    /// `ncclCommInitRankConfig` (NCCL 2.14 and later): non-blocking communicators.
    comm_init_rank_config: Option<unsafe extern "C" fn(*mut RawComm, c_int, RawId, c_int, *mut RawConfig) -> RawResult>,
    comm_abort: watch::AbortFn,
    comm_get_async_error: watch::QueryFn,
    get_error_string: unsafe extern "C" fn(RawResult) -> *const c_char,
    get_last_error: unsafe extern "C" fn(RawComm) -> *const c_char,
    all_reduce: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    broadcast: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    all_gather: unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, CUstream) -> RawResult,
    reduce_scatter:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    group_start: unsafe extern "C" fn() -> RawResult,
    group_end: unsafe extern "C" fn() -> RawResult,
    /// Kept loaded for the life of the process (the function pointers above point into it).
    _lib: libloading::Library,
}

/// The environment variable naming the NCCL library to load.
pub const NCCL_PATH_VAR: &str = "COHORT_NCCL";

/// How to get NCCL, for [`NcclError::NotFound`].
const HOW_TO_GET: &str = "install it with `python3 -m pip install --target ~/.cohort/nccl nvidia-nccl-cu13` and \
     add its lib directory to LD_LIBRARY_PATH (`export LD_LIBRARY_PATH=~/.cohort/nccl/nvidia/nccl/lib:$LD_LIBRARY_PATH`), \
     or set COHORT_NCCL to the path of a libnccl.so.2 (PyTorch's is in site-packages/nvidia/nccl/lib); \
     `cohort doctor` checks it";

fn load() -> std::result::Result<Api, String> {
    nvls_off();
    let names: Vec<std::ffi::OsString> = match std::env::var_os(NCCL_PATH_VAR) {
        Some(p) if !p.is_empty() => vec![p],
        _ => vec!["libnccl.so.2".into(), "libnccl.so".into()],
    };
    let mut why = Vec::new();
    let mut found = None;
    for n in &names {
        // SAFETY: loading a library runs its initializers; NCCL's have no preconditions.
        match unsafe { libloading::Library::new(n) } {
            Ok(lib) => {
                found = Some(lib);
                break;
            }
            Err(e) => why.push(format!("{}: {e}", n.to_string_lossy())),
        }
    }
    let lib = found.ok_or_else(|| why.join("; "))?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol has the type of the field it is stored in, as declared in
            // `nccl.h` of every NCCL ≥ 2.12 (`ncclResult_t` and `ncclDataType_t`/`ncclRedOp_t`
            // are C enums, `int`; `ncclUniqueId` a struct of 128 chars, passed by value; the
            // stream a `cudaStream_t`, which is a `CUstream`).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| format!("{}: {e}", $name))?
        };
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> RawResult = sym!("ncclGetVersion");
    let mut version = 0;
    // SAFETY: `version` is a live int for NCCL to write.
    if unsafe { get_version(&mut version) } != NCCL_SUCCESS {
        return Err("ncclGetVersion failed".into());
    }
    Ok(Api {
        version,
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_init_all: sym!("ncclCommInitAll"),
        // Non-blocking communicators (a `blocking` field in `ncclConfig_t`) came with 2.14.
        comm_init_rank_config: if version >= 21400 {
            // SAFETY: as `sym!`: the 2.14 declaration, whose config NCCL reads by its size.
            unsafe { lib.get(b"ncclCommInitRankConfig\0") }.ok().map(|f| *f)
        } else {
            None
        },
        comm_abort: sym!("ncclCommAbort"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        get_error_string: sym!("ncclGetErrorString"),
        get_last_error: sym!("ncclGetLastError"),
        all_reduce: sym!("ncclAllReduce"),
        broadcast: sym!("ncclBroadcast"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        _lib: lib,
    })
}

/// Sets `NCCL_NVLS_ENABLE=0` unless it is set (see the module docs). Called once, before NCCL
/// is loaded.
fn nvls_off() {
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // SAFETY: runs once, before NCCL (and so any thread of NCCL's) exists in this process;
        // Rust's own environment accesses are serialized by std. A foreign thread calling
        // `getenv` at this very moment is the remaining hazard; CUDA's driver reads its
        // variables when it is initialized, which happens before any communicator can exist.
        unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    }
}

impl Api {
    /// The cell of a communicator this API made.
    fn cell(&self, rank: usize, gpu: &Gpu, raw: RawComm) -> Cell {
        Cell::new(rank, Some(gpu.clone()), raw, self.comm_abort, self.comm_get_async_error)
    }
}

fn api() -> NcclResult<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|why| NcclError::NotFound(why.clone()))
}

/// Whether NCCL can be loaded here (for tests that skip without it).
#[must_use]
pub fn available() -> bool {
    api().is_ok()
}

/// NCCL's version as `(major, minor, patch)`.
///
/// # Errors
/// [`NcclError::NotFound`] without NCCL.
pub fn version() -> NcclResult<(u32, u32, u32)> {
    let v = api()?.version.max(0) as u32;
    Ok((v / 10000, v / 100 % 100, v % 100))
}

// ---------------------------------------------------------------------------------------------
// Errors

/// What can go wrong with NCCL.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum NcclError {
    /// The NCCL library could not be loaded (the reasons of each attempt).
    NotFound(String),
    /// An NCCL call failed.
    Call {
        /// What Cohort was doing.
        what: String,
        /// The `ncclResult_t`.
        code: i32,
        /// NCCL's description of it and its last error message.
        message: String,
    },
    /// Exchanging the unique id (through a file, or over TCP: [`Rendezvous`]) failed or timed
    /// out; the message says what was missing.
    IdExchange(String),
    /// The launcher's environment does not describe a rank of a job ([`Launch::from_env`]):
    /// the message names the variable and what to set.
    Launch(String),
    /// Ranks of one communicator in this process made calls that disagree (the collective,
    /// its element type, count, operator or root; a send and its receive), or a call needs a
    /// rank whose communicator was dropped: refused before NCCL saw it. The message names the
    /// ranks, the call's number and what differs, and whether the communicator was aborted
    /// (when another rank's call was enqueued already and would wait forever).
    Mismatch(String),
    /// The communicator was aborted (a mismatch, a deadline passed, an NCCL error, a rank
    /// dropped): this call, and every later one, is refused; the message says why.
    Aborted(String),
    /// A Cohort error: an argument (lengths, a buffer of another GPU), a driver failure.
    Cohort(Error),
}

impl fmt::Display for NcclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclError::NotFound(why) => write!(f, "NCCL (libnccl.so.2) not found: {why}; {HOW_TO_GET}"),
            NcclError::Call { what, code, message } => write!(f, "NCCL failed {what}: error {code}: {message}"),
            NcclError::IdExchange(m) => write!(f, "NCCL unique id exchange: {m}"),
            NcclError::Launch(m) => write!(f, "launcher environment: {m}"),
            NcclError::Mismatch(m) | NcclError::Aborted(m) => f.write_str(m),
            NcclError::Cohort(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NcclError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NcclError::Cohort(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Error> for NcclError {
    fn from(e: Error) -> Self {
        NcclError::Cohort(e)
    }
}

/// `Result<T, NcclError>`.
pub type NcclResult<T> = std::result::Result<T, NcclError>;

fn check(api: &Api, rc: RawResult, comm: RawComm, what: impl FnOnce() -> String) -> NcclResult<()> {
    if rc == NCCL_SUCCESS || rc == NCCL_IN_PROGRESS {
        return Ok(());
    }
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: NCCL returns NUL-terminated static (or per-communicator) strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: any code is accepted; a null communicator asks for the thread's last error.
    let (desc, last) = unsafe { (text((api.get_error_string)(rc)), text((api.get_last_error)(comm))) };
    let message = if last.is_empty() { desc } else { format!("{desc} ({last})") };
    Err(NcclError::Call { what: what(), code: rc, message })
}

fn arg(m: String) -> NcclError {
    NcclError::Cohort(Error::Argument(m))
}

// ---------------------------------------------------------------------------------------------
// Element types and operators

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL reduces: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`, `f64`.
pub trait NcclType: DeviceCopy + sealed::Sealed {
    /// The `ncclDataType_t`.
    #[doc(hidden)]
    const DTYPE: c_int;
}

macro_rules! nccl_type {
    ($($t:ty = $d:literal),*) => {$(
        impl sealed::Sealed for $t {}
        impl NcclType for $t {
            const DTYPE: c_int = $d;
        }
    )*};
}
nccl_type!(i8 = 0, u8 = 1, i32 = 2, u32 = 3, i64 = 4, u64 = 5, f32 = 7, f64 = 8);

/// A reduction operator (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks (for integers, NCCL's integer
    /// division).
    Avg,
}

impl ReduceOp {
    /// The operator NCCL is given for a communicator of `ranks` ranks: the average over one
    /// rank is its sum, and NCCL 2.28.3's `ncclAvg` on a one-rank communicator left the
    /// elements past the last multiple of 32 (f32) or 16 (f64) unwritten (measured on an H200,
    /// 100 003 and 65 537 elements), so one rank reduces with `ncclSum`.
    fn for_ranks(self, ranks: usize) -> c_int {
        match self {
            ReduceOp::Avg if ranks == 1 => ReduceOp::Sum.raw(),
            op => op.raw(),
        }
    }

    fn raw(self) -> c_int {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
            ReduceOp::Avg => 4,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The unique id and its exchange

/// A communicator's unique id (`ncclUniqueId`): made by rank 0 ([`NcclId::new`]), given to
/// every rank (any transport: [`NcclId::exchange`] uses a file, [`NcclId::exchange_tcp`] a TCP
/// connection to rank 0), passed to [`Comm::from_rank`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId {
    bytes: [u8; ID_BYTES],
}

impl fmt::Debug for NcclId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NcclId(")?;
        for b in &self.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// What an id file starts with.
const ID_MAGIC: &[u8; 8] = b"COHNCCL1";

impl NcclId {
    /// A new id (`ncclGetUniqueId`; with the default bootstrap, it names rank 0's host and a
    /// port it listens on).
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; an NCCL failure (no network interface).
    pub fn new() -> NcclResult<Self> {
        let api = api()?;
        let mut raw = RawId { internal: [0; ID_BYTES] };
        // SAFETY: `raw` is a live `ncclUniqueId` for NCCL to write.
        let rc = unsafe { (api.get_unique_id)(&mut raw) };
        check(api, rc, std::ptr::null_mut(), || "making a unique id".into())?;
        Ok(Self { bytes: raw.internal.map(|c| c as u8) })
    }

    /// The id's bytes, to send to the other ranks.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; ID_BYTES] {
        &self.bytes
    }

    /// The id from bytes received from rank 0.
    #[must_use]
    pub fn from_bytes(bytes: [u8; ID_BYTES]) -> Self {
        Self { bytes }
    }

    fn raw(&self) -> RawId {
        RawId { internal: self.bytes.map(|b| b as c_char) }
    }

    /// Writes the id to `path` atomically: to a temporary file beside it, then renamed, so
    /// that a reader never sees a partial id.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`] when the file cannot be written.
    pub fn write_file(&self, path: &Path) -> NcclResult<()> {
        let fail = |e: std::io::Error| NcclError::IdExchange(format!("writing {}: {e}", path.display()));
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = std::path::PathBuf::from(tmp);
        let mut data = Vec::with_capacity(ID_MAGIC.len() + ID_BYTES);
        data.extend_from_slice(ID_MAGIC);
        data.extend_from_slice(&self.bytes);
        std::fs::write(&tmp, &data).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }

    /// Reads an id that [`NcclId::write_file`] wrote to `path`, waiting up to `timeout` for
    /// the file to appear.
    ///
    /// # Errors
    /// [`NcclError::IdExchange`] on a timeout, or a file that is not an id.
    pub fn read_file(path: &Path, timeout: Duration) -> NcclResult<Self> {
        let start = Instant::now();
        loop {
            match std::fs::read(path) {
                Ok(data) => {
                    if data.len() != ID_MAGIC.len() + ID_BYTES || &data[..ID_MAGIC.len()] != ID_MAGIC {
                        return Err(NcclError::IdExchange(format!(
                            "{} is not an NCCL id written by Cohort ({} bytes)",
                            path.display(),
                            data.len()
                        )));
                    }
                    let mut bytes = [0u8; ID_BYTES];
                    bytes.copy_from_slice(&data[ID_MAGIC.len()..]);
                    return Ok(Self { bytes });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if start.elapsed() >= timeout {
                        return Err(NcclError::IdExchange(format!(
                            "{} did not appear within {:.1} s: did rank 0 start, and does every rank see the same \
                             path (a shared file system across machines)?",
                            path.display(),
                            timeout.as_secs_f64()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(NcclError::IdExchange(format!("reading {}: {e}", path.display()))),
            }
        }
    }

    /// The id of a job of several processes, exchanged through the file `path`: rank 0 makes
    /// it and writes it; every other rank waits for it (up to `timeout`). The file must not
    /// exist before the job (a stale id would make the ranks wait for a rank 0 that is gone):
    /// use a fresh path per job, on a file system every rank sees.
    ///
    /// # Errors
    /// As [`NcclId::new`], [`NcclId::write_file`], [`NcclId::read_file`].
    pub fn exchange(path: &Path, rank: usize, timeout: Duration) -> NcclResult<Self> {
        if rank == 0 {
            let id = Self::new()?;
            id.write_file(path)?;
            Ok(id)
        } else {
            Self::read_file(path, timeout)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Communicators

/// One rank's NCCL communicator, on one [`Gpu`] (its primary context).
///
/// `Send` but not `Sync`: NCCL allows one thread at a time per communicator (and its calls
/// are numbered in the order that thread makes them: see "Ranks of one process").
pub struct Comm {
    cell: Arc<Cell>,
    /// The ranks of this communicator in this process: their calls, compared.
    record: Arc<Record>,
    gpu: Gpu,
    rank: usize,
    size: usize,
    /// The communicators made together, aborted together when the last of them is dropped.
    _made: Arc<Made>,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

/// Communicators made by one call, aborted together when the last is dropped.
struct Made {
    record: Arc<Record>,
    cells: Vec<Arc<Cell>>,
}

impl Drop for Made {
    fn drop(&mut self) {
        // A collective of theirs still running: it fails (its streams' waits say so, and those
        // of the other ranks of this process that take part, which could not complete now).
        if self.cells.iter().any(|c| self.record.busy(c)) {
            let ranks: Vec<usize> = self.cells.iter().map(|c| c.rank).collect();
            self.record.abort(&format!(
                "NCCL: the communicator of rank(s) {ranks:?} was dropped before its collective completed; the \
                 communicator is aborted"
            ));
        }
        // One thread per communicator, all at once: `ncclCommAbort` may wait for the other
        // ranks of this node, so aborting them one after another from one thread could hang.
        watch::abort_cells(&self.cells);
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // A call another rank of this process made and waits for in NCCL can't complete now.
        self.record.leave(self.rank);
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.gpu.info().ordinal)
            .finish()
    }
}

/// Runs one operation as a group of its own (what each [`Comm`] method is).
fn single<'a>(op: impl FnOnce(&mut Group<'a>) -> NcclResult<()>) -> NcclResult<()> {
    let mut g = Group::new();
    op(&mut g)?;
    g.run()
}

fn check_primary(gpu: &Gpu) -> NcclResult<()> {
    if gpu.inner.ctx.is_none() {
        return Err(arg("NCCL needs GPUs: the CPU device has no NCCL communicator".into()));
    }
    if !gpu.inner.ctx.as_ref().is_some_and(|c| c.is_primary()) {
        return Err(arg(format!(
            "NCCL drives device {} through its primary context: open it with Gpu::new or Gpu::from_env, not \
             Gpu::isolated",
            gpu.info().ordinal
        )));
    }
    Ok(())
}

/// `ncclConfig_t` as NCCL 2.14 declared it: the prefix every later NCCL reads (it copies
/// `size` bytes, and takes the fields a `version` below 2.17 lacks from its defaults).
#[repr(C)]
struct RawConfig {
    size: usize,
    magic: u32,
    version: u32,
    blocking: c_int,
}

impl RawConfig {
    /// A non-blocking communicator: its calls return `ncclInProgress` instead of waiting.
    fn non_blocking() -> Self {
        Self { size: size_of::<Self>(), magic: 0xcafe_beef, version: 21400, blocking: 0 }
    }
}

/// Waits, bounded by `timeout` from `since`, until NCCL has finished what it was doing on
/// `cells` (creating them, enqueueing): on a failure or at the deadline, `abort` runs with
/// the reason and the error is returned.
fn settle(
    cells: &[Arc<Cell>],
    since: Instant,
    timeout: Duration,
    what: &dyn Fn() -> String,
    aborted_why: &dyn Fn() -> String,
    abort: &dyn Fn(&str),
) -> NcclResult<()> {
    match watch::poll_until(since, timeout, || watch::poll_cells(cells)) {
        Ok(()) => Ok(()),
        Err(Poll::Aborted) => {
            Err(NcclError::Aborted(format!("NCCL: {}: the communicator was aborted: {}", what(), aborted_why())))
        }
        Err(Poll::Failed(rank, code)) => {
            let why = format!("NCCL: {} failed on rank {rank}: {}", what(), error_text(code));
            abort(&why);
            Err(NcclError::Aborted(format!("{why}; the communicator is aborted")))
        }
        Err(_) => {
            let why = format!(
                "NCCL: {} did not finish within {:.1} s ({TIMEOUT_VAR}, Comm::set_timeout): a rank of the communicator \
                 did not take part; the communicator is aborted",
                what(),
                timeout.as_secs_f64()
            );
            abort(&why);
            Err(NcclError::Aborted(why))
        }
    }
}

/// NCCL's description of a result code.
fn error_text(code: RawResult) -> String {
    let Ok(api) = api() else { return format!("error {code}") };
    // SAFETY: any code is accepted; NCCL returns a static string.
    let p = unsafe { (api.get_error_string)(code) };
    if p.is_null() {
        format!("error {code}")
    } else {
        // SAFETY: a NUL-terminated static string.
        format!("error {code}: {}", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }
}

impl Comm {
    /// One communicator per GPU of this process (`ncclCommInitAll`'s equivalent: a unique id,
    /// then one `ncclCommInitRankConfig` per GPU in a group): rank `i` on `gpus[i]`. From one
    /// thread, run their collectives in a [`Group`]; from one thread per rank, each rank's
    /// calls are compared with the others' (see "Ranks of one process").
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; [`Error::Argument`] for no GPU, a GPU twice, or
    /// an isolated context; an NCCL failure; [`NcclError::Aborted`] if creating them did not
    /// finish within the [`timeout`].
    pub fn for_gpus(gpus: &[Gpu]) -> NcclResult<Vec<Comm>> {
        if gpus.is_empty() {
            return Err(arg("Comm::for_gpus: no GPU given".into()));
        }
        let ordinals: Vec<c_int> = gpus.iter().map(|g| g.info().ordinal as c_int).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(arg(format!("Comm::for_gpus: device {o} is given twice (NCCL wants one rank per GPU)")));
            }
        }
        for g in gpus {
            check_primary(g)?;
        }
        let api = api()?;
        let size = gpus.len();
        let record = Arc::new(Record::new(size, None));
        record.join_all(0..size);
        let what = || format!("creating communicators on devices {ordinals:?}");
        let mut raws = vec![std::ptr::null_mut(); size];
        let start = Instant::now();
        let cells: Vec<Arc<Cell>> = match api.comm_init_rank_config {
            Some(init_config) => {
                let id = NcclId::new()?;
                let mut config = RawConfig::non_blocking();
                // SAFETY: no arguments; paired with the `group_end` below.
                check(api, unsafe { (api.group_start)() }, std::ptr::null_mut(), || "starting a group".into())?;
                let mut first_err = None;
                for (rank, (g, raw)) in gpus.iter().zip(raws.iter_mut()).enumerate() {
                    let rc = g.inner.bind().map_err(NcclError::from).and_then(|()| {
                        // SAFETY: `raw` receives the communicator; the id is 128 bytes by value;
                        // `config` is a live `ncclConfig_t` (2.14 layout) NCCL copies; the
                        // device is the current context's.
                        let rc = unsafe { init_config(raw, size as c_int, id.raw(), rank as c_int, &mut config) };
                        check(api, rc, std::ptr::null_mut(), what)
                    });
                    if let Err(e) = rc {
                        first_err = Some(e);
                        break;
                    }
                }
                // SAFETY: closes the group opened above.
                let rc = unsafe { (api.group_end)() };
                let ended = check(api, rc, std::ptr::null_mut(), what);
                let cells: Vec<Arc<Cell>> = raws
                    .iter()
                    .zip(gpus)
                    .enumerate()
                    .filter(|(_, (r, _))| !r.is_null())
                    .map(|(rank, (&r, g))| Arc::new(api.cell(rank, g, r)))
                    .collect();
                let settled = match first_err.map_or(ended, Err) {
                    Ok(()) if cells.len() == size => {
                        settle(&cells, start, record.timeout(), &what, &|| String::new(), &|_| {})
                    }
                    Ok(()) => Err(NcclError::Aborted(format!("NCCL: {}: not every communicator was made", what()))),
                    Err(e) => Err(e),
                };
                if let Err(e) = settled {
                    watch::abort_cells(&cells);
                    return Err(e);
                }
                cells
            }
            None => {
                gpus[0].inner.bind()?;
                // SAFETY: `raws` has room for one communicator per device of `ordinals`, all
                // valid devices (their `Gpu`s exist).
                let rc = unsafe { (api.comm_init_all)(raws.as_mut_ptr(), ordinals.len() as c_int, ordinals.as_ptr()) };
                check(api, rc, std::ptr::null_mut(), what)?;
                raws.iter().zip(gpus).enumerate().map(|(rank, (&r, g))| Arc::new(api.cell(rank, g, r))).collect()
            }
        };
        for c in &cells {
            record.add_cell(c.clone());
        }
        let made = Arc::new(Made { record: record.clone(), cells: cells.clone() });
        Ok(cells
            .into_iter()
            .zip(gpus)
            .enumerate()
            .map(|(rank, (cell, g))| Comm {
                cell,
                record: record.clone(),
                gpu: g.clone(),
                rank,
                size,
                _made: made.clone(),
                _not_sync: PhantomData,
            })
            .collect())
    }

    /// Rank `rank` of `size` on `gpu`, in a job whose ranks share `id`
    /// (`ncclCommInitRankConfig`, non-blocking): one process (or thread) per GPU, on one
    /// machine or several. Returns once every rank has joined, or fails at the [`timeout`].
    /// The ranks of one id made in this process are compared with one another (see "Ranks of
    /// one process").
    ///
    /// # Errors
    /// [`Error::Argument`] for `rank >= size`, an isolated context, or a rank of `id` made
    /// twice in this process; an NCCL failure; [`NcclError::Aborted`] if not every rank joined
    /// within the [`timeout`].
    pub fn from_rank(gpu: &Gpu, id: &NcclId, rank: usize, size: usize) -> NcclResult<Comm> {
        if rank >= size {
            return Err(arg(format!("Comm::from_rank: rank {rank} of {size}")));
        }
        check_primary(gpu)?;
        let api = api()?;
        // Joined before NCCL is called: no rank's creation can finish before every rank has
        // called, so by the time any rank of this process makes a call, all of them are known.
        let record = Record::join_id(id, size, rank)?;
        let made = (|| {
            gpu.inner.bind()?;
            let what = || format!("creating rank {rank} of {size} on device {}", gpu.info().ordinal);
            let mut raw = std::ptr::null_mut();
            let start = Instant::now();
            match api.comm_init_rank_config {
                Some(init_config) => {
                    let mut config = RawConfig::non_blocking();
                    // SAFETY: `raw` receives the communicator; the id is 128 bytes by value;
                    // `config` is a live `ncclConfig_t` (2.14 layout) NCCL copies.
                    let rc = unsafe { init_config(&mut raw, size as c_int, id.raw(), rank as c_int, &mut config) };
                    let cell = (!raw.is_null()).then(|| Arc::new(api.cell(rank, gpu, raw)));
                    let r = check(api, rc, std::ptr::null_mut(), what).and_then(|()| match &cell {
                        Some(c) => {
                            settle(std::slice::from_ref(c), start, record.timeout(), &what, &|| String::new(), &|_| {})
                        }
                        None => Ok(()),
                    });
                    if let Err(e) = r {
                        if let Some(c) = &cell {
                            watch::abort_cells([c]);
                        }
                        return Err(e);
                    }
                    cell.ok_or_else(|| NcclError::Aborted(format!("NCCL: {}: no communicator made", what())))
                }
                None => {
                    // SAFETY: `raw` receives the communicator; the id is 128 bytes by value.
                    let rc = unsafe { (api.comm_init_rank)(&mut raw, size as c_int, id.raw(), rank as c_int) };
                    check(api, rc, std::ptr::null_mut(), what)?;
                    Ok(Arc::new(api.cell(rank, gpu, raw)))
                }
            }
        })();
        let cell = match made {
            Ok(c) => c,
            Err(e) => {
                record.unjoin(rank);
                return Err(e);
            }
        };
        record.add_cell(cell.clone());
        let made = Arc::new(Made { record: record.clone(), cells: vec![cell.clone()] });
        Ok(Comm { cell, record, gpu: gpu.clone(), rank, size, _made: made, _not_sync: PhantomData })
    }

    /// [`NcclId::exchange`] through `path`, then [`Comm::from_rank`].
    ///
    /// # Errors
    /// As those two.
    pub fn from_id_file(gpu: &Gpu, path: &Path, rank: usize, size: usize, timeout: Duration) -> NcclResult<Comm> {
        if rank >= size {
            return Err(arg(format!("Comm::from_id_file: rank {rank} of {size}")));
        }
        let id = NcclId::exchange(path, rank, timeout)?;
        Self::from_rank(gpu, &id, rank, size)
    }

    /// Sets the deadline of this communicator's operations (every rank of it in this process):
    /// how long creating it or enqueueing an operation may take, and how long an operation
    /// may run on the GPU, before the communicator is aborted and the operation fails
    /// ([`NcclError::Aborted`], [`Error::CollectiveAborted`] from its stream's waits). It
    /// starts as [`timeout`] (`COHORT_NCCL_TIMEOUT`); operations enqueued before keep theirs.
    pub fn set_timeout(&self, timeout: Duration) {
        self.record.set_timeout(timeout);
    }

    /// The deadline of this communicator's operations ([`Comm::set_timeout`]).
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.record.timeout()
    }

    /// Why this communicator was aborted, if it was: its calls fail with this reason.
    #[must_use]
    pub fn aborted(&self) -> Option<String> {
        self.record.aborted().map(|w| w.to_string())
    }

    /// This communicator's rank.
    #[must_use]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    #[must_use]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The GPU it runs on.
    #[must_use]
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// All-reduce `send` into `recv` (same length) with `op`, on `stream`.
    ///
    /// # Errors
    /// [`Error::Argument`] for lengths that differ, or a buffer or stream of another GPU; an
    /// NCCL failure.
    pub fn all_reduce<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.all_reduce(self, stream, send, recv, op))
    }

    /// All-reduce `buf` in place with `op`, on `stream`.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce_in_place<T: NcclType>(
        &self,
        stream: &Stream,
        buf: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.all_reduce_in_place(self, stream, buf, op))
    }

    /// Broadcast rank `root`'s `send` into every rank's `recv` (same length; `send` is read
    /// only on the root).
    ///
    /// # Errors
    /// As [`Comm::all_reduce`], and `root` out of range.
    pub fn broadcast<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        root: usize,
    ) -> NcclResult<()> {
        single(|g| g.broadcast(self, stream, send, recv, root))
    }

    /// Broadcast rank `root`'s `buf` into every rank's `buf`.
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast_in_place<T: NcclType>(
        &self,
        stream: &Stream,
        buf: impl CopyDst<T>,
        root: usize,
    ) -> NcclResult<()> {
        single(|g| g.broadcast_in_place(self, stream, buf, root))
    }

    /// All-gather: `recv` (`size()` × `send.len()` elements) gets every rank's `send`, in
    /// rank order.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_gather<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
    ) -> NcclResult<()> {
        single(|g| g.all_gather(self, stream, send, recv))
    }

    /// Reduce-scatter: `send` (`size()` × `recv.len()` elements) is reduced across ranks with
    /// `op`, and rank `r` gets block `r` of the result in `recv`.
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn reduce_scatter<T: NcclType>(
        &self,
        stream: &Stream,
        send: impl CopySrc<T>,
        recv: impl CopyDst<T>,
        op: ReduceOp,
    ) -> NcclResult<()> {
        single(|g| g.reduce_scatter(self, stream, send, recv, op))
    }

    /// Sends `send` to rank `peer`, which must post a [`Comm::recv`] of the same length.
    /// Alone, it blocks until the peer has posted its receive: pair sends and receives of one
    /// thread in a [`Group`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`], and `peer` out of range.
    pub fn send<T: NcclType>(&self, stream: &Stream, send: impl CopySrc<T>, peer: usize) -> NcclResult<()> {
        single(|g| g.send(self, stream, send, peer))
    }

    /// Receives `recv` from rank `peer`'s [`Comm::send`].
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn recv<T: NcclType>(&self, stream: &Stream, recv: impl CopyDst<T>, peer: usize) -> NcclResult<()> {
        single(|g| g.recv(self, stream, recv, peer))
    }
}

// ---------------------------------------------------------------------------------------------
// Groups

/// An operand, its element type erased: makes its [`Use`] when the group runs.
trait Operand {
    fn get(&self) -> Use<'_>;
}

struct Src<S, T>(S, PhantomData<fn() -> T>);
impl<T, S: CopySrc<T>> Operand for Src<S, T> {
    fn get(&self) -> Use<'_> {
        self.0.use_read()
    }
}

struct Dst<D, T>(D, PhantomData<fn() -> T>);
impl<T, D: CopyDst<T>> Operand for Dst<D, T> {
    fn get(&self) -> Use<'_> {
        self.0.use_write()
    }
}

#[derive(Clone, Copy)]
enum Kind {
    AllReduce(ReduceOp),
    Broadcast(usize),
    AllGather,
    ReduceScatter(ReduceOp),
    Send(usize),
    Recv(usize),
}

struct Op<'a> {
    comm: &'a Comm,
    stream: &'a Stream,
    kind: Kind,
    dtype: c_int,
    /// Elements (NCCL's count: per rank for all-gather's send, reduce-scatter's recv).
    count: usize,
    /// The operand read, if not in place.
    send: Option<Box<dyn Operand + 'a>>,
    /// The operand written (or read and written in place; for `Send`, absent).
    recv: Option<Box<dyn Operand + 'a>>,
}

impl Op<'_> {
    /// The call, as compared across ranks.
    fn call(&self) -> Call {
        let kind = match self.kind {
            Kind::AllReduce(op) => CallKind::AllReduce(op),
            Kind::Broadcast(root) => CallKind::Broadcast { root },
            Kind::AllGather => CallKind::AllGather,
            Kind::ReduceScatter(op) => CallKind::ReduceScatter(op),
            Kind::Send(p) => CallKind::Send(p),
            Kind::Recv(p) => CallKind::Recv(p),
        };
        Call { kind, dtype: self.dtype, count: self.count }
    }
}

/// Several NCCL operations enqueued together (`ncclGroupStart` … `ncclGroupEnd`), e.g. one
/// all-reduce per GPU from one thread, or matching sends and receives.
///
/// Operations are checked as they are added and enqueued by [`Group::run`]; the buffers stay
/// borrowed until then.
///
/// ```no_run
/// # use cohort_runtime::{Gpu, nccl::{Comm, Group, ReduceOp}};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpus = (0..Gpu::count()?).map(Gpu::new).collect::<Result<Vec<_>, _>>()?;
/// let comms = Comm::for_gpus(&gpus)?;
/// let mut bufs = gpus.iter().map(|g| g.upload(&[1.0f32; 1024])).collect::<Result<Vec<_>, _>>()?;
/// let mut group = Group::new();
/// for ((c, g), b) in comms.iter().zip(&gpus).zip(&mut bufs) {
///     group.all_reduce_in_place(c, g.stream(), b, ReduceOp::Sum)?;
/// }
/// group.run()?;
/// assert!(bufs[0].to_vec()?.iter().all(|&x| x == gpus.len() as f32));
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Group<'a> {
    ops: Vec<Op<'a>>,
}

impl fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group").field("ops", &self.ops.len()).finish()
    }
}

fn elems<T>(u: &Use<'_>) -> usize {
    (u.end - u.start) / size_of::<T>().max(1)
}

impl<'a> Group<'a> {
    /// An empty group.
    #[must_use]
    pub fn new() -> Self {
        Self { ops: Vec::new() }
    }

    /// The number of operations added.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether no operation was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn check_operand(comm: &Comm, u: &Use<'_>, what: &str) -> NcclResult<()> {
        if !AllocKind::device_only(u.alloc.kind) {
            return Err(arg(format!(
                "NCCL: the {what} buffer is host memory (pinned or registered) or managed memory; NCCL needs device memory"
            )));
        }
        if u.alloc.gpu.cu_ctx() != comm.gpu.inner.cu_ctx() {
            return Err(arg(format!(
                "NCCL: the {what} buffer belongs to another GPU (or CUDA context) than rank {}'s device {}",
                comm.rank,
                comm.gpu.info().ordinal
            )));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        kind: Kind,
        send: Option<Box<dyn Operand + 'a>>,
        recv: Option<Box<dyn Operand + 'a>>,
        name: &str,
    ) -> NcclResult<()> {
        if stream.inner.gpu.cu_ctx() != comm.gpu.inner.cu_ctx() {
            return Err(arg(format!(
                "NCCL {name}: the stream belongs to another GPU (or CUDA context) than rank {}'s device {}",
                comm.rank,
                comm.gpu.info().ordinal
            )));
        }
        let n = comm.size;
        let s = send.as_ref().map(|o| o.get());
        let r = recv.as_ref().map(|o| o.get());
        if let Some(s) = &s {
            Self::check_operand(comm, s, "send")?;
        }
        if let Some(r) = &r {
            Self::check_operand(comm, r, "receive")?;
        }
        let (sl, rl) = (s.as_ref().map(elems::<T>), r.as_ref().map(elems::<T>));
        let count = match (kind, sl, rl) {
            (Kind::AllReduce(_) | Kind::Broadcast(_), Some(a), Some(b)) if a != b => {
                return Err(arg(format!(
                    "NCCL {name}: the send buffer has {a} elements, the receive buffer {b} (they must be equal)"
                )));
            }
            (Kind::AllGather, Some(a), Some(b)) if b != a * n => {
                return Err(arg(format!(
                    "NCCL {name}: the receive buffer has {b} elements; {n} ranks × {a} sent need {}",
                    a * n
                )));
            }
            (Kind::ReduceScatter(_), Some(a), Some(b)) if a != b * n => {
                return Err(arg(format!(
                    "NCCL {name}: the send buffer has {a} elements; {n} ranks × {b} received need {}",
                    b * n
                )));
            }
            (Kind::AllGather, Some(a), _) => a,
            (_, _, Some(b)) => b,
            (_, Some(a), None) => a,
            (_, None, None) => 0,
        };
        match kind {
            Kind::Broadcast(p) | Kind::Send(p) | Kind::Recv(p) if p >= n => {
                return Err(arg(format!("NCCL {name}: rank {p} is out of range for {n} ranks")));
            }
            _ => {}
        }
        self.ops.push(Op { comm, stream, kind, dtype: T::DTYPE, count, send, recv });
        Ok(())
    }

    /// Adds [`Comm::all_reduce`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(
            comm,
            stream,
            Kind::AllReduce(op),
            Some(Box::new(Src(send, PhantomData))),
            Some(Box::new(Dst(recv, PhantomData))),
            "all_reduce",
        )
    }

    /// Adds [`Comm::all_reduce_in_place`].
    ///
    /// # Errors
    /// As [`Comm::all_reduce`].
    pub fn all_reduce_in_place<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        buf: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::AllReduce(op), None, Some(Box::new(Dst(buf, PhantomData))), "all_reduce")
    }

    /// Adds [`Comm::broadcast`].
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        root: usize,
    ) -> NcclResult<()> {
        self.push::<T>(
            comm,
            stream,
            Kind::Broadcast(root),
            Some(Box::new(Src(send, PhantomData))),
            Some(Box::new(Dst(recv, PhantomData))),
            "broadcast",
        )
    }

    /// Adds [`Comm::broadcast_in_place`].
    ///
    /// # Errors
    /// As [`Comm::broadcast`].
    pub fn broadcast_in_place<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        buf: impl CopyDst<T> + 'a,
        root: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Broadcast(root), None, Some(Box::new(Dst(buf, PhantomData))), "broadcast")
    }

    /// Adds [`Comm::all_gather`].
    ///
    /// # Errors
    /// As [`Comm::all_gather`].
    pub fn all_gather<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
    ) -> NcclResult<()> {
        self.push::<T>(
            comm,
            stream,
            Kind::AllGather,
            Some(Box::new(Src(send, PhantomData))),
            Some(Box::new(Dst(recv, PhantomData))),
            "all_gather",
        )
    }

    /// Adds [`Comm::reduce_scatter`].
    ///
    /// # Errors
    /// As [`Comm::reduce_scatter`].
    pub fn reduce_scatter<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        recv: impl CopyDst<T> + 'a,
        op: ReduceOp,
    ) -> NcclResult<()> {
        self.push::<T>(
            comm,
            stream,
            Kind::ReduceScatter(op),
            Some(Box::new(Src(send, PhantomData))),
            Some(Box::new(Dst(recv, PhantomData))),
            "reduce_scatter",
        )
    }

    /// Adds [`Comm::send`].
    ///
    /// # Errors
    /// As [`Comm::send`].
    pub fn send<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        send: impl CopySrc<T> + 'a,
        peer: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Send(peer), Some(Box::new(Src(send, PhantomData))), None, "send")
    }

    /// Adds [`Comm::recv`].
    ///
    /// # Errors
    /// As [`Comm::recv`].
    pub fn recv<T: NcclType>(
        &mut self,
        comm: &'a Comm,
        stream: &'a Stream,
        recv: impl CopyDst<T> + 'a,
        peer: usize,
    ) -> NcclResult<()> {
        self.push::<T>(comm, stream, Kind::Recv(peer), None, Some(Box::new(Dst(recv, PhantomData))), "recv")
    }

    /// Enqueues every operation as one NCCL group, in stream order (see the module docs), and
    /// returns once they are enqueued (not finished: synchronize a stream, or read a buffer,
    /// to wait).
    ///
    /// First the calls are compared with the other calls of their communicators' ranks in
    /// this process (see "Ranks of one process"); then NCCL enqueues them, which a
    /// non-blocking communicator does in the background: this waits for it, at most the
    /// communicators' [`timeout`]; then the watchdog watches the operations until they finish
    /// (see "Hangs").
    ///
    /// # Errors
    /// [`NcclError::Mismatch`] when the calls disagree with one another or with those of
    /// another rank of this process; [`NcclError::Aborted`] when a communicator was aborted,
    /// or is now (NCCL failed, or did not finish enqueueing in time); [`Error::Argument`] for
    /// the legacy or per-thread default stream, or a stream capturing a graph; an NCCL or
    /// driver failure.
    pub fn run(self) -> NcclResult<()> {
        let Some(first) = self.ops.first() else { return Ok(()) };
        self.check_matching()?;
        let api = api()?;
        for o in &self.ops {
            if o.stream.inner.kind != StreamKind::Owned {
                return Err(arg(format!(
                    "NCCL {}: give a stream of its own (Gpu::stream, Gpu::new_stream), not the legacy or per-thread \
                     default stream: the failures of a collective are reported by the waits of the stream it ran on",
                    o.call()
                )));
            }
        }
        let lead = first.stream;
        // The other streams, once each.
        let mut others: Vec<&Op<'_>> = Vec::new();
        for o in &self.ops {
            if o.stream.inner.key() != lead.inner.key()
                && !others.iter().any(|x| x.stream.inner.key() == o.stream.inner.key())
            {
                others.push(o);
            }
        }
        // Every stream's gate, held until all is enqueued: no stream enters a capture
        // meanwhile, and another thread's capture is refused.
        let gates = Gates::take(
            std::iter::once(&*lead.inner).chain(others.iter().map(|o| &*o.stream.inner)),
            "an NCCL operation",
        )?;
        let gate_of = |s: &StreamInner| gates.get(s).expect("taken above");
        for o in &self.ops {
            if gate_of(&o.stream.inner).capture().is_some() {
                return Err(arg(format!(
                    "NCCL {}: a collective cannot be captured into a graph here: a replay's collective could not be \
                     watched, and a rank that never made it would hang the replay",
                    o.call()
                )));
            }
        }
        let lead_gate = gate_of(&lead.inner);
        // The communicators involved, each once.
        let mut records: Vec<Arc<Record>> = Vec::new();
        let mut cells: Vec<Arc<Cell>> = Vec::new();
        for o in &self.ops {
            if !records.iter().any(|r| Arc::ptr_eq(r, &o.comm.record)) {
                records.push(o.comm.record.clone());
            }
            if !cells.iter().any(|c| Arc::ptr_eq(c, &o.comm.cell)) {
                cells.push(o.comm.cell.clone());
            }
        }
        let what = self.describe();
        let op = Arc::new(OpState::new(what.clone(), records.clone(), cells.clone()));
        // Compare with the other local ranks' calls, and note the operation as pending.
        for (i, rec) in records.iter().enumerate() {
            let batch: Vec<(usize, Call)> =
                self.ops.iter().filter(|o| Arc::ptr_eq(&o.comm.record, rec)).map(|o| (o.comm.rank, o.call())).collect();
            if let Err(e) = rec.post(&batch, &op) {
                // The calls posted to the other communicators will not be enqueued: ranks of
                // this process that make them would wait forever.
                for r in &records[..i] {
                    r.abort(&format!("NCCL: a group with calls on this communicator was refused: {e}"));
                }
                return Err(e);
            }
        }
        // Every operand, recorded on the lead stream.
        let uses: Vec<Use<'_>> =
            self.ops.iter().flat_map(|o| o.send.iter().chain(o.recv.iter())).map(|o| o.get()).collect();
        let tracked = lead.inner.gpu.bind().map_err(NcclError::from).and_then(|()| {
            run_tracked_in(&lead.inner, lead_gate, &uses, || {
                // Every stream the group runs on reports its failure from its waits.
                lead.inner.add_foreign(op.clone());
                for o in &others {
                    o.stream.inner.add_foreign(op.clone());
                }
                let start = Mark::record(&lead.inner)?;
                // Fork: the other streams start after the lead's waits.
                if !others.is_empty() {
                    let fork = Event::untimed(&first.comm.gpu)?;
                    fork.record_in(&lead.inner, lead_gate)?;
                    for o in &others {
                        o.stream.wait_in(&fork, gate_of(&o.stream.inner))?;
                    }
                }
                let enqueued = self.enqueue(api, &op, &cells);
                // Join: the lead stream finishes after every stream's part. Recorded even after
                // a failure (whatever was enqueued is covered by the record).
                let mut joined = Ok(());
                for o in &others {
                    let join = Event::untimed(&o.comm.gpu).and_then(|j| {
                        j.record_in(&o.stream.inner, gate_of(&o.stream.inner))?;
                        lead.wait_in(&j, lead_gate)
                    });
                    if let Err(e) = join {
                        joined = Err(NcclError::from(e));
                    }
                }
                // The tracker records on the lead stream next: its context current again.
                let rebound = lead.inner.gpu.bind().map_err(NcclError::from);
                let end = Mark::record(&lead.inner);
                if enqueued.is_ok()
                    && let Ok(end) = end
                {
                    op.set_marks(start, end);
                }
                Ok(enqueued.and(joined).and(rebound))
            })?
        });
        if op.is_enqueued() {
            watch::watch(op);
        } else {
            // Not (wholly) enqueued, but posted: the other local ranks' matching calls would
            // wait forever. (Aborted already if NCCL failed.)
            let why = match &tracked {
                Err(e) => format!("NCCL: enqueueing {what} failed: {e}"),
                Ok(()) => format!("NCCL: enqueueing {what} did not finish"),
            };
            op.abort(&why);
            return Err(tracked.err().unwrap_or(NcclError::Aborted(why)));
        }
        tracked
    }

    /// "all_reduce of 64 f32 (Sum) on rank 0, all_reduce of 64 f32 (Sum) on rank 1".
    fn describe(&self) -> String {
        let mut parts: Vec<String> = self.ops.iter().map(|o| format!("{} on rank {}", o.call(), o.comm.rank)).collect();
        if parts.len() > 4 {
            let n = parts.len();
            parts.truncate(3);
            parts.push(format!("{} more", n - 3));
        }
        parts.join(", ")
    }

    /// Ranks of one clique that are both in this group must agree: their k-th collectives have
    /// the same kind, type, count, operator and root, and the sends from `r` to `p` match the
    /// receives of `p` from `r`. (Otherwise NCCL could move more data than a buffer holds;
    /// ranks in other threads or processes are NCCL's contract, as in MPI.)
    fn check_matching(&self) -> NcclResult<()> {
        type Sig = (u8, c_int, usize, c_int, usize);
        let sig = |o: &Op<'_>| -> Option<Sig> {
            match o.kind {
                Kind::AllReduce(op) => Some((0, o.dtype, o.count, op.raw(), 0)),
                Kind::Broadcast(root) => Some((1, o.dtype, o.count, 0, root)),
                Kind::AllGather => Some((2, o.dtype, o.count, 0, 0)),
                Kind::ReduceScatter(op) => Some((3, o.dtype, o.count, op.raw(), 0)),
                Kind::Send(_) | Kind::Recv(_) => None,
            }
        };
        let same_clique = |a: &Comm, b: &Comm| Arc::ptr_eq(&a.record, &b.record);
        let key = |c: &Comm| (Arc::as_ptr(&c.record), c.rank);
        let ranks_of = |c: &Comm| {
            let k = key(c);
            self.ops.iter().filter(move |o| key(o.comm) == k)
        };
        for o in &self.ops {
            // Collectives: against every other rank of the clique present in the group.
            let mine: Vec<Sig> = ranks_of(o.comm).filter_map(sig).collect();
            for p in self.ops.iter().filter(|p| same_clique(p.comm, o.comm) && p.comm.rank != o.comm.rank) {
                let theirs: Vec<Sig> = ranks_of(p.comm).filter_map(sig).collect();
                if mine != theirs {
                    return Err(arg(format!(
                        "NCCL group: ranks {} and {} of one communicator enqueue different collectives (kind, type, \
                         count, operator, root: {mine:?} vs {theirs:?})",
                        o.comm.rank, p.comm.rank
                    )));
                }
            }
            // Sends: against the peer's receives from this rank, if the peer is in the group.
            if let Kind::Send(peer) = o.kind {
                let Some(p) = self.ops.iter().find(|p| same_clique(p.comm, o.comm) && p.comm.rank == peer) else {
                    continue;
                };
                let sends: Vec<(c_int, usize)> = ranks_of(o.comm)
                    .filter(|x| matches!(x.kind, Kind::Send(q) if q == peer))
                    .map(|x| (x.dtype, x.count))
                    .collect();
                let recvs: Vec<(c_int, usize)> = ranks_of(p.comm)
                    .filter(|x| matches!(x.kind, Kind::Recv(q) if q == o.comm.rank))
                    .map(|x| (x.dtype, x.count))
                    .collect();
                if sends != recvs {
                    return Err(arg(format!(
                        "NCCL group: rank {}'s sends to rank {peer} (type, count: {sends:?}) do not match rank {peer}'s \
                         receives from it ({recvs:?})",
                        o.comm.rank
                    )));
                }
            }
        }
        Ok(())
    }

    /// Enqueues the operations (holding every communicator's lock, so that none is aborted
    /// while NCCL uses it), then waits until NCCL has finished enqueueing them (a
    /// non-blocking communicator's `ncclInProgress`), at most `op`'s deadline. A failure aborts
    /// the communicators: the calls were posted, and other ranks' matching calls would wait.
    fn enqueue(&self, api: &Api, op: &OpState, cells: &[Arc<Cell>]) -> NcclResult<()> {
        let started = Instant::now();
        let aborted_why = || {
            self.ops
                .iter()
                .find_map(|o| o.comm.record.aborted())
                .map_or_else(|| "it was aborted".into(), |w| w.to_string())
        };
        let enqueued = {
            let mut order: Vec<&Arc<Cell>> = cells.iter().collect();
            order.sort_unstable_by_key(|c| Arc::as_ptr(c) as usize);
            let guards: Vec<_> = order.iter().map(|c| (Arc::as_ptr(c), c.lock())).collect();
            if guards.iter().any(|(_, g)| g.is_none()) {
                return Err(NcclError::Aborted(format!(
                    "NCCL: {}: the communicator was aborted: {}",
                    op.what,
                    aborted_why()
                )));
            }
            let raw_of = |o: &Op<'_>| {
                guards
                    .iter()
                    .find(|(p, _)| *p == Arc::as_ptr(&o.comm.cell))
                    .and_then(|(_, g)| g.as_ref().map(|h| h.0))
                    .expect("locked above")
            };
            let grouped = self.ops.len() > 1;
            let mut first_err = None;
            if grouped {
                // SAFETY: no arguments; paired with the `group_end` below on every path.
                let rc = unsafe { (api.group_start)() };
                check(api, rc, std::ptr::null_mut(), || "starting a group".into())?;
            }
            for o in &self.ops {
                if let Err(e) = self.enqueue_one(api, o, raw_of(o)) {
                    first_err.get_or_insert(e);
                    break;
                }
            }
            if grouped {
                // SAFETY: closes the group opened above.
                let rc = unsafe { (api.group_end)() };
                if let Err(e) = check(api, rc, std::ptr::null_mut(), || "ending a group".into()) {
                    first_err.get_or_insert(e);
                }
            }
            first_err.map_or(Ok(()), Err)
        };
        if let Err(e) = enqueued {
            let why = format!("NCCL: enqueueing {} failed: {e}", op.what);
            op.abort(&why);
            return Err(NcclError::Aborted(format!("{why}; the communicator is aborted")));
        }
        settle(cells, started, op.timeout(), &|| format!("enqueueing {}", op.what), &aborted_why, &|why| op.abort(why))
    }

    fn enqueue_one(&self, api: &Api, o: &Op<'_>, c: RawComm) -> NcclResult<()> {
        let s = o.send.as_ref().map(|x| x.get());
        let r = o.recv.as_ref().map(|x| x.get());
        let rp = r.as_ref().map_or(0, Use::device_addr) as *mut c_void;
        // In place: NCCL reads and writes the receive buffer.
        let sp = s.as_ref().map_or(rp as u64, Use::device_addr) as *const c_void;
        let st = crate::backend::cuda::stream(o.stream.inner.raw);
        o.comm.gpu.inner.bind()?;
        // SAFETY: `sp`/`rp` are device addresses inside live allocations of the communicator's
        // device (checked when added), borrowed by the group until it has run, of `count`
        // elements of the type `dtype` names (for all-gather's receive and reduce-scatter's
        // send, `size` × `count`: checked when added); the stream is a live stream of the
        // communicator's context; the tracker ordered this operation after conflicting work of
        // other streams and records it once enqueued.
        let (rc, what) = unsafe {
            match o.kind {
                Kind::AllReduce(op) => {
                    ((api.all_reduce)(sp, rp, o.count, o.dtype, op.for_ranks(o.comm.size()), c, st), "all-reduce")
                }
                Kind::Broadcast(root) => ((api.broadcast)(sp, rp, o.count, o.dtype, root as c_int, c, st), "broadcast"),
                Kind::AllGather => ((api.all_gather)(sp, rp, o.count, o.dtype, c, st), "all-gather"),
                Kind::ReduceScatter(op) => (
                    (api.reduce_scatter)(sp, rp, o.count, o.dtype, op.for_ranks(o.comm.size()), c, st),
                    "reduce-scatter",
                ),
                Kind::Send(peer) => ((api.send)(sp, o.count, o.dtype, peer as c_int, c, st), "send"),
                Kind::Recv(peer) => ((api.recv)(rp, o.count, o.dtype, peer as c_int, c, st), "recv"),
            }
        };
        check(api, rc, c, || format!("enqueueing {what} of {} elements on rank {}", o.count, o.comm.rank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("cohort-nccl-test-{}-{name}", std::process::id()))
    }

    #[test]
    fn id_file_round_trip() {
        let path = tmp("round");
        let mut bytes = [0u8; ID_BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        let id = NcclId::from_bytes(bytes);
        id.write_file(&path).unwrap();
        let back = NcclId::read_file(&path, Duration::from_secs(1)).unwrap();
        assert_eq!(back, id);
        assert_eq!(back.as_bytes(), &bytes);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn id_file_waits_for_the_writer() {
        let path = tmp("wait");
        let p2 = path.clone();
        let id = NcclId::from_bytes([42; ID_BYTES]);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            id.write_file(&p2).unwrap();
        });
        let back = NcclId::read_file(&path, Duration::from_secs(10)).unwrap();
        writer.join().unwrap();
        assert_eq!(back, id);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn id_file_times_out() {
        let path = tmp("never");
        let t = Instant::now();
        let e = NcclId::read_file(&path, Duration::from_millis(50)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(50));
        assert!(matches!(e, NcclError::IdExchange(ref m) if m.contains("did not appear")), "{e}");
    }

    #[test]
    fn id_file_rejects_other_content() {
        let path = tmp("junk");
        std::fs::write(&path, b"not an id").unwrap();
        let e = NcclId::read_file(&path, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, NcclError::IdExchange(ref m) if m.contains("not an NCCL id")), "{e}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn not_found_says_how_to_get_it() {
        let e = NcclError::NotFound("libnccl.so.2: cannot open".into()).to_string();
        assert!(e.starts_with("NCCL (libnccl.so.2) not found"), "{e}");
        assert!(e.contains("nvidia-nccl-cu13") && e.contains("COHORT_NCCL"), "{e}");
    }

    #[test]
    fn missing_library_is_an_error_not_a_panic() {
        if available() {
            return; // NCCL is installed here: nothing to check
        }
        assert!(matches!(NcclId::new(), Err(NcclError::NotFound(_))));
        assert!(matches!(version(), Err(NcclError::NotFound(_))));
    }

    #[test]
    fn present_library_loads_every_entry_point() {
        let Ok((major, minor, patch)) = version() else { return }; // no NCCL here
        println!("NCCL {major}.{minor}.{patch}");
        assert_eq!(major, 2);
        assert!(minor >= 12, "NCCL 2.{minor}");
        // Making an id needs no GPU (it names this host's bootstrap address), only a network
        // interface: an error is fine, a panic is not.
        if let Ok(id) = NcclId::new() {
            assert_ne!(id.as_bytes(), &[0u8; ID_BYTES]);
        }
    }

    #[test]
    fn no_gpu_and_empty_group_need_no_nccl() {
        assert!(matches!(Comm::for_gpus(&[]), Err(NcclError::Cohort(Error::Argument(ref m))) if m.contains("no GPU")));
        assert!(Group::new().run().is_ok());
        assert!(Group::new().is_empty());
    }

    /// The bounded wait of creating or enqueueing on a non-blocking communicator, with NCCL
    /// mocked: a communicator that stays in progress is aborted at the deadline, with an
    /// error naming what was being done and the deadline; one that fails, at once.
    #[test]
    fn settling_a_communicator_is_bounded() {
        unsafe extern "C" fn in_progress(_: RawComm, out: *mut RawResult) -> RawResult {
            // SAFETY: the caller passes a live int.
            unsafe { *out = NCCL_IN_PROGRESS };
            NCCL_SUCCESS
        }
        unsafe extern "C" fn remote_error(_: RawComm, out: *mut RawResult) -> RawResult {
            // SAFETY: as above.
            unsafe { *out = 6 };
            NCCL_SUCCESS
        }
        unsafe extern "C" fn no_abort(_: RawComm) -> RawResult {
            NCCL_SUCCESS
        }
        let aborted = std::sync::Mutex::new(Vec::new());
        let abort = |why: &str| aborted.lock().unwrap().push(why.to_owned());
        let stuck = [Arc::new(Cell::new(1, None, 0x10 as RawComm, no_abort, in_progress))];
        let t0 = Instant::now();
        let e = settle(&stuck, t0, Duration::from_millis(50), &|| "enqueueing all_reduce".into(), &String::new, &abort)
            .unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(50));
        let text = e.to_string();
        assert!(
            matches!(e, NcclError::Aborted(_)) && text.contains("enqueueing all_reduce did not finish within 0.1 s")
        );
        let failed = [Arc::new(Cell::new(2, None, 0x11 as RawComm, no_abort, remote_error))];
        let e =
            settle(&failed, Instant::now(), Duration::from_secs(60), &|| "x".into(), &String::new, &abort).unwrap_err();
        assert!(e.to_string().contains("failed on rank 2"), "{e}");
        assert_eq!(aborted.into_inner().unwrap().len(), 2, "both aborted the communicator");
    }

    #[test]
    fn op_codes_match_nccl_h() {
        let codes: Vec<_> = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg]
            .iter()
            .map(|o| o.raw())
            .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4]);
        assert_eq!((f32::DTYPE, f64::DTYPE, i32::DTYPE, u64::DTYPE), (7, 8, 2, 5));
    }
}
