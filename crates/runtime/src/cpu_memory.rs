//! The CPU device's side of the driver calls for memory pools, stream-ordered allocation and
//! managed memory ([`crate::drv`]'s `mem` calls): the same signatures and contracts as cudarc's
//! `sys` functions.
//!
//! The CPU device's memory is host memory and its streams run each operation when it is
//! enqueued, so a stream-ordered allocation or free happens at once (nothing enqueued before it
//! can still be running) and managed memory is an ordinary allocation. Pools keep their
//! attributes (the release threshold, the reuse flags) and count their allocations: the used
//! and reserved bytes are the bytes of the pool's live allocations (nothing is cached, so
//! trimming has nothing to release). Prefetches and advice have nothing to move; no stream ever
//! captures.

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::driver::sys::*;

use crate::cpu::host::{allocate, free};

/// A pool's state.
#[derive(Default)]
struct Pool {
    release_threshold: u64,
    /// Bytes of its live allocations, and the most there have been.
    used: u64,
    used_high: u64,
    /// The three reuse policies, as set (all on by default, as on a GPU).
    reuse: [i32; 3],
}

struct Pools {
    /// Pool handle (a number, never dereferenced) → state. Handle 1 is the default pool.
    pools: HashMap<usize, Pool>,
    /// Allocation → (its pool, its bytes).
    owner: HashMap<usize, (usize, usize)>,
    next: usize,
}

static POOLS: Mutex<Option<Pools>> = Mutex::new(None);

/// The default pool's handle.
const DEFAULT: usize = 1;

fn with_pools<R>(f: impl FnOnce(&mut Pools) -> R) -> R {
    let mut guard = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    let pools = guard.get_or_insert_with(|| {
        let mut pools = HashMap::new();
        pools.insert(DEFAULT, Pool { reuse: [1; 3], ..Pool::default() });
        Pools { pools, owner: HashMap::new(), next: DEFAULT + 1 }
    });
    f(pools)
}

fn handle(pool: CUmemoryPool) -> usize {
    pool as usize
}

pub(crate) unsafe fn cuDeviceGetDefaultMemPool(pool_out: *mut CUmemoryPool, _dev: CUdevice) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { *pool_out = std::ptr::without_provenance_mut(DEFAULT) };
    CUresult::CUDA_SUCCESS
}

pub(crate) unsafe fn cuMemPoolCreate(pool: *mut CUmemoryPool, _props: *const CUmemPoolProps) -> CUresult {
    let id = with_pools(|p| {
        let id = p.next;
        p.next += 1;
        p.pools.insert(id, Pool { reuse: [1; 3], ..Pool::default() });
        id
    });
    // SAFETY: the caller's out-pointer.
    unsafe { *pool = std::ptr::without_provenance_mut(id) };
    CUresult::CUDA_SUCCESS
}

pub(crate) unsafe fn cuMemPoolDestroy(pool: CUmemoryPool) -> CUresult {
    let id = handle(pool);
    if id == DEFAULT {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // As the driver: live allocations keep the pool's memory until they are freed (their
    // frees find no pool to count against, which is fine).
    match with_pools(|p| p.pools.remove(&id)) {
        Some(_) => CUresult::CUDA_SUCCESS,
        None => CUresult::CUDA_ERROR_INVALID_VALUE,
    }
}

pub(crate) unsafe fn cuMemPoolSetAttribute(
    pool: CUmemoryPool,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CUresult {
    use CUmemPool_attribute::*;
    with_pools(|p| {
        let Some(pool) = p.pools.get_mut(&handle(pool)) else { return CUresult::CUDA_ERROR_INVALID_VALUE };
        // SAFETY: the caller's contract: `value` points at the attribute's type (a `u64` for the
        // threshold and the high-water marks, an `int` for the reuse policies).
        unsafe {
            match attr {
                CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => pool.release_threshold = *value.cast::<u64>(),
                CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES => pool.reuse[0] = *value.cast::<i32>(),
                CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC => pool.reuse[1] = *value.cast::<i32>(),
                CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES => pool.reuse[2] = *value.cast::<i32>(),
                // Only a reset to 0 is allowed (to the current value).
                CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH | CU_MEMPOOL_ATTR_USED_MEM_HIGH if *value.cast::<u64>() == 0 => {
                    pool.used_high = pool.used;
                }
                _ => return CUresult::CUDA_ERROR_INVALID_VALUE,
            }
        }
        CUresult::CUDA_SUCCESS
    })
}

pub(crate) unsafe fn cuMemPoolGetAttribute(
    pool: CUmemoryPool,
    attr: CUmemPool_attribute,
    value: *mut c_void,
) -> CUresult {
    use CUmemPool_attribute::*;
    with_pools(|p| {
        let Some(pool) = p.pools.get(&handle(pool)) else { return CUresult::CUDA_ERROR_INVALID_VALUE };
        // SAFETY: the caller's contract: `value` points at room for the attribute's type.
        unsafe {
            match attr {
                CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => *value.cast::<u64>() = pool.release_threshold,
                CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT | CU_MEMPOOL_ATTR_USED_MEM_CURRENT => {
                    *value.cast::<u64>() = pool.used;
                }
                CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH | CU_MEMPOOL_ATTR_USED_MEM_HIGH => {
                    *value.cast::<u64>() = pool.used_high
                }
                CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES => *value.cast::<i32>() = pool.reuse[0],
                CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC => *value.cast::<i32>() = pool.reuse[1],
                CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES => *value.cast::<i32>() = pool.reuse[2],
                #[allow(unreachable_patterns)] // attributes of newer CUDA versions
                _ => return CUresult::CUDA_ERROR_INVALID_VALUE,
            }
        }
        CUresult::CUDA_SUCCESS
    })
}

pub(crate) unsafe fn cuMemPoolTrimTo(pool: CUmemoryPool, _keep: usize) -> CUresult {
    if with_pools(|p| p.pools.contains_key(&handle(pool))) {
        CUresult::CUDA_SUCCESS
    } else {
        CUresult::CUDA_ERROR_INVALID_VALUE
    }
}

/// An allocation from pool `id`, counted against it.
///
/// # Safety
/// `dptr` is the caller's out-pointer.
unsafe fn allocate_from(dptr: *mut CUdeviceptr, bytes: usize, id: usize) -> CUresult {
    if !with_pools(|p| p.pools.contains_key(&id)) {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    let Some(ptr) = allocate(bytes) else { return CUresult::CUDA_ERROR_OUT_OF_MEMORY };
    with_pools(|p| {
        p.owner.insert(ptr as usize, (id, bytes));
        if let Some(pool) = p.pools.get_mut(&id) {
            pool.used += bytes as u64;
            pool.used_high = pool.used_high.max(pool.used);
        }
    });
    // SAFETY: the caller's out-pointer.
    unsafe { *dptr = ptr as u64 };
    CUresult::CUDA_SUCCESS
}

pub(crate) unsafe fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytesize: usize, _s: CUstream) -> CUresult {
    // SAFETY: forwarded.
    unsafe { allocate_from(dptr, bytesize, DEFAULT) }
}

pub(crate) unsafe fn cuMemAllocFromPoolAsync(
    dptr: *mut CUdeviceptr,
    bytesize: usize,
    pool: CUmemoryPool,
    _s: CUstream,
) -> CUresult {
    // SAFETY: forwarded.
    unsafe { allocate_from(dptr, bytesize, handle(pool)) }
}

pub(crate) unsafe fn cuMemFreeAsync(dptr: CUdeviceptr, _s: CUstream) -> CUresult {
    // Everything enqueued before the free has finished (streams run work at enqueue).
    let owner = with_pools(|p| p.owner.remove(&(dptr as usize)));
    let Some((id, bytes)) = owner else { return CUresult::CUDA_ERROR_INVALID_VALUE };
    with_pools(|p| {
        if let Some(pool) = p.pools.get_mut(&id) {
            pool.used -= bytes as u64;
        }
    });
    free(dptr as usize)
}

pub(crate) unsafe fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytesize: usize, _flags: u32) -> CUresult {
    match allocate(bytesize) {
        // SAFETY: the caller's out-pointer.
        Some(p) => unsafe {
            *dptr = p as u64;
            CUresult::CUDA_SUCCESS
        },
        None => CUresult::CUDA_ERROR_OUT_OF_MEMORY,
    }
}

pub(crate) unsafe fn cuMemPrefetchAsync_v2(
    _ptr: CUdeviceptr,
    _count: usize,
    _location: CUmemLocation,
    _flags: u32,
    _s: CUstream,
) -> CUresult {
    CUresult::CUDA_SUCCESS
}

pub(crate) unsafe fn cuMemAdvise_v2(
    _ptr: CUdeviceptr,
    _count: usize,
    _advice: CUmem_advise,
    _location: CUmemLocation,
) -> CUresult {
    CUresult::CUDA_SUCCESS
}

pub(crate) unsafe fn cuStreamIsCapturing(_s: CUstream, status: *mut CUstreamCaptureStatus) -> CUresult {
    // SAFETY: the caller's out-pointer.
    unsafe { *status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE };
    CUresult::CUDA_SUCCESS
}
