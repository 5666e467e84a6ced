//! The NCCL library: loaded at run time (`COHORT_NCCL`, else `libnccl.so.2`), its entry points
//! resolved once ([`Api`]), and its result codes turned into [`NcclError`]s.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use cudarc::driver::sys::CUstream;

use super::NcclError;
use super::error::NcclResult;
use super::watch::{self, Cell};
use crate::device::Gpu;

pub(super) type RawComm = *mut c_void;
pub(super) type RawResult = c_int;
pub(super) const NCCL_SUCCESS: RawResult = 0;
pub(super) const NCCL_IN_PROGRESS: RawResult = 7;

/// `ncclUniqueId`: 128 opaque bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct RawId {
    pub(super) internal: [c_char; ID_BYTES],
}

/// The size of an [`NcclId`](super::NcclId) in bytes (`NCCL_UNIQUE_ID_BYTES`).
pub const ID_BYTES: usize = 128;

/// The NCCL entry points Cohort uses, resolved once.
pub(super) struct Api {
    pub(super) version: c_int,
    pub(super) get_unique_id: unsafe extern "C" fn(*mut RawId) -> RawResult,
    pub(super) comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawId, c_int) -> RawResult,
    pub(super) comm_init_all: unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> RawResult,
    /// `ncclCommInitRankConfig` (NCCL 2.14 and later): non-blocking communicators.
    pub(super) comm_init_rank_config:
        Option<unsafe extern "C" fn(*mut RawComm, c_int, RawId, c_int, *mut RawConfig) -> RawResult>,
    pub(super) comm_abort: watch::AbortFn,
    pub(super) comm_get_async_error: watch::QueryFn,
    pub(super) get_error_string: unsafe extern "C" fn(RawResult) -> *const c_char,
    pub(super) get_last_error: unsafe extern "C" fn(RawComm) -> *const c_char,
    pub(super) all_reduce:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    pub(super) broadcast:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    pub(super) all_gather:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, CUstream) -> RawResult,
    pub(super) reduce_scatter:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    pub(super) send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    pub(super) recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    pub(super) group_start: unsafe extern "C" fn() -> RawResult,
    pub(super) group_end: unsafe extern "C" fn() -> RawResult,
    /// Kept loaded for the life of the process (the function pointers above point into it).
    pub(super) _lib: libloading::Library,
}

/// `ncclConfig_t` as NCCL 2.14 declared it: the prefix every later NCCL reads (it copies
/// `size` bytes, and takes the fields a `version` below 2.17 lacks from its defaults).
#[repr(C)]
pub(super) struct RawConfig {
    size: usize,
    magic: u32,
    version: u32,
    blocking: c_int,
}

impl RawConfig {
    /// A non-blocking communicator: its calls return `ncclInProgress` instead of waiting.
    pub(super) fn non_blocking() -> Self {
        Self { size: size_of::<Self>(), magic: 0xcafe_beef, version: 21400, blocking: 0 }
    }
}

/// The environment variable naming the NCCL library to load.
pub const NCCL_PATH_VAR: &str = "COHORT_NCCL";

/// How to get NCCL, for [`NcclError::NotFound`].
pub(super) const HOW_TO_GET: &str = "install it with `python3 -m pip install --target ~/.cohort/nccl nvidia-nccl-cu13` and \
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
    pub(super) fn cell(&self, rank: usize, gpu: &Gpu, raw: RawComm) -> Cell {
        Cell::new(rank, Some(gpu.clone()), raw, self.comm_abort, self.comm_get_async_error)
    }
}

pub(super) fn api() -> NcclResult<&'static Api> {
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

pub(super) fn check(api: &Api, rc: RawResult, comm: RawComm, what: impl FnOnce() -> String) -> NcclResult<()> {
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

/// NCCL's description of a result code.
pub(super) fn error_text(code: RawResult) -> String {
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
