//! NCCL collectives over Cohort buffers (cargo feature `nccl`).
//!
//! | NCCL | Cohort |
//! |---|---|
//! | `ncclCommInitAll` (one process, one communicator per GPU) | [`Comm::for_gpus`] |
//! | `ncclGetUniqueId`, exchanging it, `ncclCommInitRank` (one process per GPU) | [`NcclId`], [`NcclId::exchange`], [`Comm::from_rank`], [`Comm::from_id_file`] |
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
//! # Dropping communicators
//!
//! The communicators made by one call ([`Comm::for_gpus`], or one [`Comm::from_rank`]) are
//! aborted together (`ncclCommAbort`, each on a thread of its own, as it may wait for the
//! node's other ranks) when the last of them is dropped. Synchronize the streams first if their
//! collectives must complete; buffers stay safe either way (they wait for the recorded
//! operations before being freed or read).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cohort::DeviceCopy;
use cudarc::driver::sys::CUstream;

use crate::device::Gpu;
use crate::error::Error;
use crate::stream::{Event, Stream};
use crate::track::{AllocKind, CopyDst, CopySrc, Gates, Use, run_tracked_in};

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
    comm_abort: unsafe extern "C" fn(RawComm) -> RawResult,
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
        comm_abort: sym!("ncclCommAbort"),
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
    /// Exchanging the unique id through a file failed or timed out.
    IdExchange(String),
    /// A Cohort error: an argument (lengths, a buffer of another GPU), a driver failure.
    Cohort(Error),
}

impl fmt::Display for NcclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NcclError::NotFound(why) => write!(f, "NCCL (libnccl.so.2) not found: {why}; {HOW_TO_GET}"),
            NcclError::Call { what, code, message } => write!(f, "NCCL failed {what}: error {code}: {message}"),
            NcclError::IdExchange(m) => write!(f, "NCCL unique id exchange: {m}"),
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
/// every rank (any transport: [`NcclId::exchange`] uses a file), passed to
/// [`Comm::from_rank`].
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
/// `Send` but not `Sync`: NCCL allows one thread at a time per communicator.
pub struct Comm {
    raw: RawComm,
    gpu: Gpu,
    rank: usize,
    size: usize,
    /// The communicators made together, aborted together when the last of them is dropped.
    _clique: Arc<Clique>,
}

/// Communicators made by one call, with their GPUs.
struct Clique {
    comms: Vec<(RawComm, Gpu)>,
}

// SAFETY: the handles are only used by `Drop`, once, each on a thread of its own.
unsafe impl Send for Clique {}
// SAFETY: as above (nothing reads them through `&Clique`).
unsafe impl Sync for Clique {}

/// A communicator handle sent to the thread that aborts it.
struct Handle(RawComm);
// SAFETY: used by that one thread only.
unsafe impl Send for Handle {}

impl Drop for Clique {
    fn drop(&mut self) {
        if crate::stream::in_host_fn() {
            return; // no CUDA call may be made there (and none may wait for it): leak them
        }
        let Ok(api) = api() else { return };
        // One thread per communicator, all at once: `ncclCommAbort` may wait for the other
        // ranks of this node, so aborting them one after another from one thread could hang.
        std::thread::scope(|scope| {
            for (raw, gpu) in &self.comms {
                let (h, gpu) = (Handle(*raw), gpu.clone());
                scope.spawn(move || {
                    let h = h;
                    if gpu.inner.bind().is_ok() {
                        // SAFETY: ours, aborted once, never used after (every `Comm` of the
                        // clique is gone).
                        unsafe {
                            let _ = (api.comm_abort)(h.0);
                        }
                    }
                });
            }
        });
    }
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time (`!Sync` ensures
// that); the `Gpu` is `Send`.
unsafe impl Send for Comm {}

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
    if gpu.is_cpu() {
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

impl Comm {
    /// One communicator per GPU of this process (`ncclCommInitAll`): rank `i` on `gpus[i]`.
    /// From one thread, run their collectives in a [`Group`].
    ///
    /// # Errors
    /// [`NcclError::NotFound`] without NCCL; [`Error::Argument`] for no GPU, a GPU twice, or
    /// an isolated context; an NCCL failure.
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
        gpus[0].inner.bind()?;
        let mut raws = vec![std::ptr::null_mut(); gpus.len()];
        // SAFETY: `raws` has room for one communicator per device of `ordinals`, all valid
        // devices (their `Gpu`s exist).
        let rc = unsafe { (api.comm_init_all)(raws.as_mut_ptr(), ordinals.len() as c_int, ordinals.as_ptr()) };
        check(api, rc, std::ptr::null_mut(), || format!("creating communicators on devices {ordinals:?}"))?;
        let size = gpus.len();
        let clique = Arc::new(Clique { comms: raws.iter().zip(gpus).map(|(&r, g)| (r, g.clone())).collect() });
        Ok(raws
            .into_iter()
            .zip(gpus)
            .enumerate()
            .map(|(rank, (raw, g))| Comm { raw, gpu: g.clone(), rank, size, _clique: clique.clone() })
            .collect())
    }

    /// Rank `rank` of `size` on `gpu`, in a job whose ranks share `id` (`ncclCommInitRank`):
    /// one process (or thread) per GPU, on one machine or several. Blocks until every rank has
    /// joined.
    ///
    /// # Errors
    /// [`Error::Argument`] for `rank >= size` or an isolated context; an NCCL failure.
    pub fn from_rank(gpu: &Gpu, id: &NcclId, rank: usize, size: usize) -> NcclResult<Comm> {
        if rank >= size {
            return Err(arg(format!("Comm::from_rank: rank {rank} of {size}")));
        }
        check_primary(gpu)?;
        let api = api()?;
        gpu.inner.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` receives the communicator; the id is 128 bytes by value.
        let rc = unsafe { (api.comm_init_rank)(&mut raw, size as c_int, id.raw(), rank as c_int) };
        check(api, rc, std::ptr::null_mut(), || {
            format!("creating rank {rank} of {size} on device {}", gpu.info().ordinal)
        })?;
        let clique = Arc::new(Clique { comms: vec![(raw, gpu.clone())] });
        Ok(Comm { raw, gpu: gpu.clone(), rank, size, _clique: clique })
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
            return Err(arg(format!("NCCL: the {what} buffer is host or managed memory; NCCL needs device memory")));
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
    /// # Errors
    /// An NCCL or driver failure.
    pub fn run(self) -> NcclResult<()> {
        let Some(first) = self.ops.first() else { return Ok(()) };
        self.check_matching()?;
        let api = api()?;
        let lead = first.stream;
        // Every operand, recorded on the lead stream.
        let uses: Vec<Use<'_>> =
            self.ops.iter().flat_map(|o| o.send.iter().chain(o.recv.iter())).map(|o| o.get()).collect();
        // The other streams, once each.
        let mut others: Vec<&Op<'_>> = Vec::new();
        for o in &self.ops {
            if o.stream.inner.key() != lead.inner.key()
                && !others.iter().any(|x| x.stream.inner.key() == o.stream.inner.key())
            {
                others.push(o);
            }
        }
        // In a graph capture of the lead stream (this thread's: another thread's is refused
        // below), the other streams join it first, through an event recorded in it; their
        // NCCL work is then captured too, and the graph keeps every operand (recorded on the
        // lead stream).
        let capturing = lead.inner.capture_now().is_some();
        if capturing && !others.is_empty() {
            let fork = Event::untimed(&first.comm.gpu)?;
            fork.record(lead)?;
            for o in &others {
                o.stream.wait(&fork)?;
            }
        }
        // Every stream's gate, held until all is enqueued: no stream enters or leaves a
        // capture meanwhile, and another thread's capture is refused.
        let gates = Gates::take(
            std::iter::once(&*lead.inner).chain(others.iter().map(|o| &*o.stream.inner)),
            "an NCCL operation",
        )?;
        let lead_gate = gates.get(&lead.inner).expect("taken above");
        let capture = lead_gate.capture();
        for o in &others {
            let theirs = gates.get(&o.stream.inner).expect("taken above").capture();
            if capture.map(Arc::as_ptr) != theirs.map(Arc::as_ptr) {
                return Err(arg(
                    "an NCCL group whose streams are not all in the same graph capture (or all outside one): capture \
                     on the group's first stream; the others join its capture"
                        .into(),
                ));
            }
        }
        lead.inner.gpu.bind()?;
        run_tracked_in(&lead.inner, lead_gate, &uses, || {
            // Fork: the other streams start after the lead's waits (in a capture, they joined
            // it above).
            if !others.is_empty() && capture.is_none() {
                let fork = Event::untimed(&first.comm.gpu)?;
                fork.record_in(&lead.inner, lead_gate)?;
                for o in &others {
                    o.stream.wait_in(&fork, gates.get(&o.stream.inner).expect("taken above"))?;
                }
            }
            let enqueued = self.enqueue(api);
            // Join: the lead stream finishes after every stream's part. Recorded even after a
            // failure (whatever was enqueued is covered by the record).
            let mut joined = Ok(());
            for o in &others {
                let join = Event::untimed(&o.comm.gpu).and_then(|j| {
                    j.record_in(&o.stream.inner, gates.get(&o.stream.inner).expect("taken above"))?;
                    lead.wait_in(&j, lead_gate)
                });
                if let Err(e) = join {
                    joined = Err(NcclError::from(e));
                }
            }
            // The tracker records on the lead stream next: its context current again.
            let rebound = lead.inner.gpu.bind().map_err(NcclError::from);
            Ok(enqueued.and(joined).and(rebound))
        })?
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
        let same_clique = |a: &Comm, b: &Comm| Arc::ptr_eq(&a._clique, &b._clique);
        let key = |c: &Comm| (Arc::as_ptr(&c._clique), c.rank);
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

    fn enqueue(&self, api: &Api) -> NcclResult<()> {
        let grouped = self.ops.len() > 1;
        if grouped {
            // SAFETY: no arguments; paired with the `group_end` below on every path.
            let rc = unsafe { (api.group_start)() };
            check(api, rc, std::ptr::null_mut(), || "starting a group".into())?;
        }
        let mut first_err = None;
        for o in &self.ops {
            if let Err(e) = self.enqueue_one(api, o) {
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
    }

    fn enqueue_one(&self, api: &Api, o: &Op<'_>) -> NcclResult<()> {
        let s = o.send.as_ref().map(|x| x.get());
        let r = o.recv.as_ref().map(|x| x.get());
        let rp = r.as_ref().map_or(0, Use::device_addr) as *mut c_void;
        // In place: NCCL reads and writes the receive buffer.
        let sp = s.as_ref().map_or(rp as u64, Use::device_addr) as *const c_void;
        let (c, st) = (o.comm.raw, o.stream.inner.raw);
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
