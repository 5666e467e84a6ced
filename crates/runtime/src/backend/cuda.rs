//! The CUDA backend: one CUDA context, through cudarc's `result` layer where it has the call
//! and its `sys` layer where not (JIT linking, `cuLaunchKernelEx`, peer copies, host
//! registration, 16/32-bit fills, stream flags and priorities, occupancy without a callback).
//! Handles are the driver's own, carried as numbers.

use std::ffi::{CStr, c_void};
use std::sync::Arc;

use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, DriverError, result};

use super::{
    Advice, Backend, CtxH, DevPtr, Done, EventH, Fault, Fill, FuncH, FuncInfo, GraphExecH, GraphH, HostAlloc, HostFn,
    HostKernel, Kind, LaunchMode, Limit, LoadFailure, Location, ModuleH, ModuleSource, PoolAttr, PoolH, StreamH,
};
use crate::launch::LaunchConfig;

/// A CUDA context's backend.
pub(crate) struct Cuda {
    ctx: Arc<CudaContext>,
}

impl Cuda {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        Self { ctx }
    }
}

/// The driver's stream handle of `s`.
#[inline]
pub(crate) fn stream(s: StreamH) -> sys::CUstream {
    std::ptr::without_provenance_mut(s.0)
}

/// The handle of the driver's stream `s`.
#[inline]
pub(crate) fn stream_h(s: sys::CUstream) -> StreamH {
    StreamH(s as usize)
}

#[inline]
fn event(e: EventH) -> sys::CUevent {
    std::ptr::without_provenance_mut(e.0)
}

#[inline]
fn module(m: ModuleH) -> sys::CUmodule {
    std::ptr::without_provenance_mut(m.0)
}

/// The driver's function handle of `f`.
#[inline]
pub(crate) fn function(f: FuncH) -> sys::CUfunction {
    std::ptr::without_provenance_mut(f.0)
}

#[inline]
fn pool(p: PoolH) -> sys::CUmemoryPool {
    std::ptr::without_provenance_mut(p.0)
}

#[inline]
fn context(c: CtxH) -> sys::CUcontext {
    std::ptr::without_provenance_mut(c.0)
}

fn limit(l: Limit) -> sys::CUlimit {
    match l {
        Limit::PendingLaunches => sys::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
        Limit::PrintfFifo => sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE,
        Limit::Stack => sys::CUlimit::CU_LIMIT_STACK_SIZE,
    }
}

fn pool_attr(a: PoolAttr) -> sys::CUmemPool_attribute {
    use sys::CUmemPool_attribute as PA;
    match a {
        PoolAttr::ReleaseThreshold => PA::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
        PoolAttr::ReservedCurrent => PA::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
        PoolAttr::UsedCurrent => PA::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
    }
}

impl Cuda {
    /// The memory's location for the driver: this context's GPU, or the host.
    fn location(&self, to: Location) -> sys::CUmemLocation {
        match to {
            Location::Device => sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.ctx.cu_device(),
            },
            Location::Host => sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 },
        }
    }
}

/// A plain driver call's outcome.
#[inline]
fn done(r: CUresult) -> Done {
    r.result().map_err(Fault::Driver)
}

impl Backend for Cuda {
    fn kind(&self) -> Kind {
        Kind::Cuda
    }

    #[inline]
    fn bind(&self) -> Done {
        Ok(self.ctx.bind_to_thread()?)
    }

    fn synchronize(&self) -> Done {
        Ok(result::ctx::synchronize()?)
    }

    fn memory_info(&self) -> Done<(usize, usize)> {
        Ok(result::mem_get_info()?)
    }

    fn stream_priority_range(&self) -> Done<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: out-pointers to locals; the context is current.
        done(unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) })?;
        Ok((least, greatest))
    }

    fn set_limit(&self, l: Limit, value: usize) -> Done {
        Ok(result::ctx::set_limit(limit(l), value)?)
    }

    fn limit(&self, l: Limit) -> Done<usize> {
        Ok(result::ctx::get_limit(limit(l))?)
    }

    fn ctx(&self) -> CtxH {
        CtxH(self.ctx.cu_ctx() as usize)
    }

    fn alloc(&self, bytes: usize) -> Done<DevPtr> {
        // SAFETY: the context is current.
        Ok(unsafe { result::malloc_sync(bytes) }?)
    }

    unsafe fn free(&self, ptr: DevPtr) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::free_sync(ptr) }?)
    }

    fn alloc_host(&self, bytes: usize, flags: HostAlloc) -> Done<*mut u8> {
        let mut f = sys::CU_MEMHOSTALLOC_DEVICEMAP;
        if flags.portable {
            f |= sys::CU_MEMHOSTALLOC_PORTABLE;
        }
        if flags.write_combined {
            f |= sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        }
        // SAFETY: the context is current.
        Ok(unsafe { result::malloc_host(bytes, f) }?.cast())
    }

    unsafe fn free_host(&self, host: *mut u8) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::free_host(host.cast()) }?)
    }

    unsafe fn host_device_ptr(&self, host: *mut u8) -> Done<DevPtr> {
        let mut d = 0;
        // SAFETY: the caller's contract (mapped host memory); `d` receives the address.
        done(unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, host.cast(), 0) })?;
        Ok(d)
    }

    unsafe fn register_host(&self, host: *mut u8, bytes: usize) -> Done {
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemHostRegister_v2(host.cast(), bytes, flags) })
    }

    unsafe fn unregister_host(&self, host: *mut u8) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemHostUnregister(host.cast()) })
    }

    fn alloc_managed(&self, bytes: usize) -> Done<DevPtr> {
        // SAFETY: the context is current; attached globally (any stream may use it).
        Ok(unsafe { result::malloc_managed(bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }?)
    }

    unsafe fn prefetch(&self, ptr: DevPtr, bytes: usize, to: Location, s: StreamH) -> Done {
        // SAFETY: the caller's contract; a prefetch moves pages, never their contents.
        Ok(unsafe { result::mem_prefetch_async(ptr, bytes, self.location(to), stream(s)) }?)
    }

    unsafe fn advise(&self, ptr: DevPtr, bytes: usize, advice: Advice) -> Done {
        use sys::CUmem_advise as M;
        let (what, at) = match advice {
            Advice::SetReadMostly => (M::CU_MEM_ADVISE_SET_READ_MOSTLY, Location::Device),
            Advice::UnsetReadMostly => (M::CU_MEM_ADVISE_UNSET_READ_MOSTLY, Location::Device),
            Advice::SetPreferredLocation(l) => (M::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, l),
            Advice::UnsetPreferredLocation => (M::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, Location::Device),
            Advice::SetAccessedBy(l) => (M::CU_MEM_ADVISE_SET_ACCESSED_BY, l),
            Advice::UnsetAccessedBy(l) => (M::CU_MEM_ADVISE_UNSET_ACCESSED_BY, l),
        };
        // SAFETY: the caller's contract; advice is a hint about placement.
        Ok(unsafe { result::mem_advise(ptr, bytes, what, self.location(at)) }?)
    }

    fn default_pool(&self) -> Done<PoolH> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` receives the handle.
        done(unsafe { sys::cuDeviceGetDefaultMemPool(&mut raw, self.ctx.cu_device()) })?;
        Ok(PoolH(raw as usize))
    }

    fn create_pool(&self) -> Done<PoolH> {
        // SAFETY: a plain C struct, for which all zeros is a valid value (and the documented
        // way to leave the reserved bytes and the optional fields unset).
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = self.ctx.cu_device();
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` receives the pool; `props` is complete.
        done(unsafe { sys::cuMemPoolCreate(&mut raw, &props) })?;
        Ok(PoolH(raw as usize))
    }

    unsafe fn destroy_pool(&self, p: PoolH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::mem_pool::destroy(pool(p)) }?)
    }

    unsafe fn pool_attribute(&self, p: PoolH, attr: PoolAttr) -> Done<u64> {
        let mut v = 0u64;
        // SAFETY: live pool; each attribute read here is a 64-bit value.
        done(unsafe { sys::cuMemPoolGetAttribute(pool(p), pool_attr(attr), (&raw mut v).cast()) })?;
        Ok(v)
    }

    unsafe fn set_pool_attribute(&self, p: PoolH, attr: PoolAttr, value: u64) -> Done {
        let mut v = value;
        // SAFETY: live pool; each attribute set here is a 64-bit value.
        done(unsafe { sys::cuMemPoolSetAttribute(pool(p), pool_attr(attr), (&raw mut v).cast()) })
    }

    unsafe fn trim_pool(&self, p: PoolH, keep: usize) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::mem_pool::trim_to(pool(p), keep) }?)
    }

    unsafe fn alloc_async(&self, bytes: usize, p: Option<PoolH>, s: StreamH) -> Done<DevPtr> {
        // SAFETY: the caller's contract.
        unsafe {
            Ok(match p {
                None => result::malloc_async(stream(s), bytes)?,
                Some(p) => result::mem_pool::alloc_async(pool(p), bytes, stream(s))?,
            })
        }
    }

    unsafe fn free_async(&self, ptr: DevPtr, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::free_async(ptr, stream(s)) }?)
    }

    unsafe fn copy_htod(&self, dst: DevPtr, src: *const u8, bytes: usize) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemcpyHtoD_v2(dst, src.cast(), bytes) })
    }

    unsafe fn copy_dtoh(&self, dst: *mut u8, src: DevPtr, bytes: usize) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemcpyDtoH_v2(dst.cast(), src, bytes) })
    }

    unsafe fn copy_dtod(&self, dst: DevPtr, src: DevPtr, bytes: usize) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::memcpy_dtod_sync(dst, src, bytes) }?)
    }

    unsafe fn copy_htod_async(&self, dst: DevPtr, src: *const u8, bytes: usize, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream(s)) })
    }

    unsafe fn copy_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream(s)) })
    }

    unsafe fn copy_peer_async(
        &self,
        dst: DevPtr,
        dst_ctx: CtxH,
        src: DevPtr,
        src_ctx: CtxH,
        bytes: usize,
        s: StreamH,
    ) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuMemcpyPeerAsync(dst, context(dst_ctx), src, context(src_ctx), bytes, stream(s)) })
    }

    unsafe fn memset(&self, dst: DevPtr, value: u8, n: usize) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::memset_d8_sync(dst, value, n) }?)
    }

    unsafe fn memset_async(&self, dst: DevPtr, value: Fill, n: usize, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe {
            match value {
                Fill::U8(v) => sys::cuMemsetD8Async(dst, v, n, stream(s)),
                Fill::U16(v) => sys::cuMemsetD16Async(dst, v, n, stream(s)),
                Fill::U32(v) => sys::cuMemsetD32Async(dst, v, n, stream(s)),
            }
        })
    }

    fn create_stream(&self, non_blocking: bool, priority: i32) -> Done<StreamH> {
        let flags = if non_blocking { sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 } else { 0 };
        let mut raw = std::ptr::null_mut();
        // SAFETY: the context is current; `raw` receives the handle.
        done(unsafe { sys::cuStreamCreateWithPriority(&mut raw, flags, priority) })?;
        Ok(stream_h(raw))
    }

    unsafe fn destroy_stream(&self, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::stream::destroy(stream(s)) }?)
    }

    unsafe fn stream_synchronize(&self, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::stream::synchronize(stream(s)) }?)
    }

    unsafe fn stream_query(&self, s: StreamH) -> Done<bool> {
        // SAFETY: the caller's contract.
        match unsafe { sys::cuStreamQuery(stream(s)) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Fault::Driver(DriverError(code))),
        }
    }

    unsafe fn stream_priority(&self, s: StreamH) -> Done<i32> {
        let mut p = 0;
        // SAFETY: the caller's contract; `p` receives the priority.
        done(unsafe { sys::cuStreamGetPriority(stream(s), &mut p) })?;
        Ok(p)
    }

    unsafe fn stream_non_blocking(&self, s: StreamH) -> Done<bool> {
        let mut flags = 0u32;
        // SAFETY: the caller's contract; `flags` receives the stream's flags.
        done(unsafe { sys::cuStreamGetFlags(stream(s), &mut flags) })?;
        Ok(flags & sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 != 0)
    }

    unsafe fn stream_wait_event(&self, s: StreamH, e: EventH) -> Done {
        // SAFETY: the caller's contract (a stream may wait for another context's event).
        done(unsafe { sys::cuStreamWaitEvent(stream(s), event(e), 0) })
    }

    unsafe fn launch_host_fn(&self, s: StreamH, f: HostFn, data: *mut c_void) -> Done {
        // SAFETY: the caller's contract.
        done(unsafe { sys::cuLaunchHostFunc(stream(s), Some(f), data) })
    }

    unsafe fn is_capturing(&self, s: StreamH) -> Done<bool> {
        // SAFETY: the caller's contract.
        let status = unsafe { result::stream::is_capturing(stream(s)) }?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    fn create_event(&self, timing: bool) -> Done<EventH> {
        let flags =
            if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
        Ok(EventH(result::event::create(flags)? as usize))
    }

    unsafe fn destroy_event(&self, e: EventH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::event::destroy(event(e)) }?)
    }

    unsafe fn record_event(&self, e: EventH, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::event::record(event(e), stream(s)) }?)
    }

    unsafe fn event_synchronize(&self, e: EventH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::event::synchronize(event(e)) }?)
    }

    unsafe fn event_query(&self, e: EventH) -> Done<bool> {
        // SAFETY: the caller's contract.
        match unsafe { sys::cuEventQuery(event(e)) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(Fault::Driver(DriverError(code))),
        }
    }

    unsafe fn event_elapsed_ms(&self, start: EventH, end: EventH) -> Done<f32> {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::event::elapsed(event(start), event(end)) }?)
    }

    unsafe fn begin_capture(&self, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe {
            result::stream::begin_capture(stream(s), sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        }?)
    }

    unsafe fn end_capture(&self, s: StreamH) -> (Option<GraphH>, Done) {
        let mut graph = std::ptr::null_mut();
        // SAFETY: the caller's contract; `graph` receives the graph (null when invalidated).
        let r = done(unsafe { sys::cuStreamEndCapture(stream(s), &mut graph) });
        ((!graph.is_null()).then_some(GraphH(graph as usize)), r)
    }

    unsafe fn graph_nodes(&self, graph: GraphH) -> Done<usize> {
        let mut n = 0usize;
        // SAFETY: the caller's contract; a null node array asks for the count only.
        done(unsafe { sys::cuGraphGetNodes(std::ptr::without_provenance_mut(graph.0), std::ptr::null_mut(), &mut n) })?;
        Ok(n)
    }

    unsafe fn instantiate_graph(&self, graph: GraphH) -> Done<GraphExecH> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the caller's contract; `raw` receives the executable graph.
        done(unsafe { sys::cuGraphInstantiateWithFlags(&mut raw, std::ptr::without_provenance_mut(graph.0), 0) })?;
        Ok(GraphExecH(raw as usize))
    }

    unsafe fn launch_graph(&self, exec: GraphExecH, s: StreamH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::graph::launch(std::ptr::without_provenance_mut(exec.0), stream(s)) }?)
    }

    unsafe fn destroy_graph(&self, graph: GraphH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::graph::destroy(std::ptr::without_provenance_mut(graph.0)) }?)
    }

    unsafe fn destroy_graph_exec(&self, exec: GraphExecH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::graph::exec_destroy(std::ptr::without_provenance_mut(exec.0)) }?)
    }

    fn load_module(&self, source: &ModuleSource) -> Result<ModuleH, LoadFailure> {
        let ptx = source.module;
        let mut log = vec![0u8; 16 * 1024];
        let mut opts =
            vec![sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut vals: Vec<*mut c_void> = vec![log.as_mut_ptr().cast(), log.len() as *mut c_void];
        if let Some(n) = source.threads_per_block {
            opts.push(sys::CUjit_option::CU_JIT_THREADS_PER_BLOCK);
            vals.push(n as usize as *mut c_void);
        }
        if let Some(n) = source.max_registers {
            opts.push(sys::CUjit_option::CU_JIT_MAX_REGISTERS);
            vals.push(n as usize as *mut c_void);
        }
        let mut raw = std::ptr::null_mut();
        let r = match source.device_runtime {
            Some(library) => link_with_device_runtime(&mut raw, ptx, library, &mut opts, &mut vals),
            None => {
                // SAFETY: `as_c_str` is NUL-terminated PTX text (`PtxModule::new` checked the
                // final NUL); the options are values or point at a live buffer, as each option
                // requires.
                unsafe {
                    sys::cuModuleLoadDataEx(
                        &mut raw,
                        ptx.as_c_str().as_ptr().cast(),
                        opts.len() as u32,
                        opts.as_mut_ptr(),
                        vals.as_mut_ptr(),
                    )
                }
                .result()
                .map_err(|code| (code, String::new()))
            }
        };
        r.map(|()| ModuleH(raw as usize)).map_err(|(code, step)| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            LoadFailure { fault: Fault::Driver(code), step, log: String::from_utf8_lossy(&log[..end]).into_owned() }
        })
    }

    unsafe fn unload_module(&self, m: ModuleH) -> Done {
        // SAFETY: the caller's contract.
        Ok(unsafe { result::module::unload(module(m)) }?)
    }

    unsafe fn function(&self, m: ModuleH, name: &CStr) -> Done<Option<(FuncH, FuncInfo)>> {
        use sys::CUfunction_attribute as FA;
        let mut raw = std::ptr::null_mut();
        // SAFETY: live module; `raw` receives the handle.
        if done(unsafe { sys::cuModuleGetFunction(&mut raw, module(m), name.as_ptr()) }).is_err() {
            return Ok(None);
        }
        let get = |a: FA| -> Done<u32> {
            // SAFETY: live function handle.
            Ok(unsafe { result::function::get_function_attribute(raw, a) }?.max(0) as u32)
        };
        let info = FuncInfo {
            max_threads_per_block: get(FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            registers: get(FA::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: get(FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: get(FA::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: get(FA::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            ptx_version: get(FA::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
            max_dynamic_shared: get(FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            host: None,
        };
        Ok(Some((FuncH(raw as usize), info)))
    }

    unsafe fn global(&self, m: ModuleH, name: &CStr) -> Option<(DevPtr, usize)> {
        let (mut addr, mut size) = (0u64, 0usize);
        // SAFETY: live module of the current context; out-pointers are locals.
        done(unsafe { sys::cuModuleGetGlobal_v2(&mut addr, &mut size, module(m), name.as_ptr()) }).ok()?;
        Some((addr, size))
    }

    unsafe fn set_max_dynamic_shared(&self, f: FuncH, bytes: u32) -> Done {
        let a = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: the caller's contract.
        Ok(unsafe { result::function::set_function_attribute(function(f), a, bytes as i32) }?)
    }

    unsafe fn max_active_blocks(&self, f: FuncH, _info: &FuncInfo, block_threads: u32, smem: u32) -> Done<u32> {
        // SAFETY: the caller's contract.
        let n = unsafe {
            result::occupancy::max_active_block_per_multiprocessor(function(f), block_threads as i32, smem as usize)
        }?;
        Ok(n.max(0) as u32)
    }

    unsafe fn max_active_clusters(&self, f: FuncH, _info: &FuncInfo, config: &LaunchConfig) -> Done<u32> {
        let mut attr = cluster_attr(config.cluster);
        let cfg = ex_config(config, std::ptr::null_mut(), &raw mut attr, 1);
        let mut n: std::ffi::c_int = 0;
        // SAFETY: live function handle; `cfg` and its attribute live through the call.
        done(unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, function(f), &raw const cfg) })?;
        Ok(n.max(0) as u32)
    }

    fn encode_tiled_map(&self, map: &super::TiledMap) -> Done<[u8; 128]> {
        use sys::CUtensorMapDataType as D;
        let dtype = match map.data_type {
            0 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            1 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            3 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
            4 => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            5 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
            6 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            7 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            8 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            9 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            t => return Err(Fault::Unsupported(format!("tensor map data type {t}"))),
        };
        use sys::CUtensorMapSwizzle as Sw;
        let swizzle = match map.swizzle {
            0 => Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
            32 => Sw::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => Sw::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            s => return Err(Fault::Unsupported(format!("tensor map swizzle of {s} bytes"))),
        };
        use sys::CUtensorMapL2promotion as L2;
        let l2 = match map.l2_promotion {
            0 => L2::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            64 => L2::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            128 => L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            _ => L2::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        };
        let oob = if map.oob_nan {
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        } else {
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
        };
        let mut out = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
        // SAFETY: every array holds `rank` (≤ 5) used entries (`strides` the first `rank - 1`),
        // the address is the buffer's (16-byte aligned, checked by `tensor_map`), and `out` has
        // room for the map.
        done(unsafe {
            sys::cuTensorMapEncodeTiled(
                out.as_mut_ptr(),
                dtype,
                map.rank,
                map.base as usize as *mut c_void,
                map.dims.as_ptr(),
                map.strides.as_ptr(),
                map.box_dims.as_ptr(),
                map.element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                l2,
                oob,
            )
        })?;
        // SAFETY: written by the successful call (and zeroed before).
        let out = unsafe { out.assume_init() };
        // SAFETY: `CUtensorMap` is 16 `u64`s.
        Ok(unsafe { std::mem::transmute::<[u64; 16], [u8; 128]>(out.opaque) })
    }

    unsafe fn allow_non_portable_cluster(&self, f: FuncH) -> Done {
        let a = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
        // SAFETY: the caller's contract.
        Ok(unsafe { result::function::set_function_attribute(function(f), a, 1) }?)
    }

    unsafe fn suggested_block_size(&self, f: FuncH, _info: &FuncInfo, smem: u32) -> Done<(u32, u32)> {
        let (mut grid, mut block) = (0, 0);
        // SAFETY: live function handle; no per-block-size callback.
        done(unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, function(f), None, smem as usize, 0)
        })?;
        Ok((grid.max(1) as u32, block.max(1) as u32))
    }

    #[inline]
    unsafe fn launch(
        &self,
        f: FuncH,
        _host: HostKernel<'_>,
        config: LaunchConfig,
        s: StreamH,
        params: &mut [*mut c_void],
        mode: LaunchMode,
    ) -> Done {
        let (g, b) = (config.grid, config.block);
        let (f, s, smem) = (function(f), stream(s), config.shared_mem_bytes);
        // SAFETY: the caller's contract.
        done(unsafe {
            match mode {
                LaunchMode::Plain => sys::cuLaunchKernel(
                    f,
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    smem,
                    s,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
                LaunchMode::Cooperative => {
                    sys::cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, s, params.as_mut_ptr())
                }
                LaunchMode::Programmatic => launch_programmatic(f, config, s, params.as_mut_ptr()),
                // A cluster of one is every launch's: the plain calls (which older GPUs take too).
                LaunchMode::Cluster { cooperative: false } if config.cluster.volume() == 1 => sys::cuLaunchKernel(
                    f,
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    smem,
                    s,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
                LaunchMode::Cluster { cooperative: true } if config.cluster.volume() == 1 => {
                    sys::cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, s, params.as_mut_ptr())
                }
                LaunchMode::Cluster { cooperative } => launch_cluster(f, config, cooperative, s, params.as_mut_ptr()),
            }
        })
    }

    unsafe fn enable_peer_access(&self, peer: CtxH) -> Done {
        // SAFETY: the caller's contract (`peer` is a live context).
        enable_outcome(unsafe { sys::cuCtxEnablePeerAccess(context(peer), 0) })
            .map_err(|c| Fault::Driver(DriverError(c)))
    }
}

/// How an enable call's result reads: already enabled is success.
pub(crate) fn enable_outcome(code: CUresult) -> Result<(), CUresult> {
    match code {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        code => Err(code),
    }
}

/// `cuLaunchKernelEx` of `f` with `config` on `stream`, allowing programmatic stream
/// serialization with the work before it on the stream.
///
/// # Safety
/// As `cuLaunchKernel`: `params` holds one pointer per parameter of `f`, each to a value of
/// that parameter's type; `f` and `stream` are live handles of the current context; and `f`'s
/// entry waits for its prerequisite grids (`griddepcontrol.wait`) before it accesses memory.
unsafe fn launch_programmatic(
    f: sys::CUfunction,
    config: LaunchConfig,
    stream: sys::CUstream,
    params: *mut *mut c_void,
) -> CUresult {
    // SAFETY: a plain C struct and union of integers, for which all zeros is a valid value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let (g, b) = (config.grid, config.block);
    let cfg = sys::CUlaunchConfig {
        gridDimX: g.x,
        gridDimY: g.y,
        gridDimZ: g.z,
        blockDimX: b.x,
        blockDimY: b.y,
        blockDimZ: b.z,
        sharedMemBytes: config.shared_mem_bytes,
        hStream: stream,
        attrs: &raw mut attr,
        numAttrs: 1,
    };
    // SAFETY: the caller's contract; `cfg` and the attribute it points at live through the
    // call (the driver copies them).
    unsafe { sys::cuLaunchKernelEx(&raw const cfg, f, params, std::ptr::null_mut()) }
}

/// The cluster-dimension launch attribute of `dims`.
fn cluster_attr(dims: crate::launch::Dim3) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct and union of integers, for which all zeros is a valid value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = dims.x;
    attr.value.clusterDim.y = dims.y;
    attr.value.clusterDim.z = dims.z;
    attr
}

/// A `CUlaunchConfig` of `config` on `stream` with `n` attributes at `attrs`.
fn ex_config(
    config: &LaunchConfig,
    stream: sys::CUstream,
    attrs: *mut sys::CUlaunchAttribute,
    n: u32,
) -> sys::CUlaunchConfig {
    let (g, b) = (config.grid, config.block);
    sys::CUlaunchConfig {
        gridDimX: g.x,
        gridDimY: g.y,
        gridDimZ: g.z,
        blockDimX: b.x,
        blockDimY: b.y,
        blockDimZ: b.z,
        sharedMemBytes: config.shared_mem_bytes,
        hStream: stream,
        attrs,
        numAttrs: n,
    }
}

/// `cuLaunchKernelEx` of `f` with `config` in clusters of `config.cluster` blocks, and
/// cooperative if asked.
///
/// # Safety
/// As `cuLaunchKernel`; the configuration passed the cluster checks (and the cooperative ones
/// if `cooperative`).
unsafe fn launch_cluster(
    f: sys::CUfunction,
    config: LaunchConfig,
    cooperative: bool,
    stream: sys::CUstream,
    params: *mut *mut c_void,
) -> CUresult {
    // SAFETY: as in `cluster_attr`.
    let mut coop: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    coop.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    coop.value.cooperative = 1;
    let mut attrs = [cluster_attr(config.cluster), coop];
    let cfg = ex_config(&config, stream, attrs.as_mut_ptr(), if cooperative { 2 } else { 1 });
    // SAFETY: the caller's contract; `cfg` and the attributes it points at live through the call.
    unsafe { sys::cuLaunchKernelEx(&raw const cfg, f, params, std::ptr::null_mut()) }
}

/// Loads a module that calls the device runtime: the driver's JIT linker compiles the PTX and
/// links it with `library` (`libcudadevrt.a`), then the linked image is loaded. `opts`/`vals`
/// are the JIT options (the error log buffer among them), applied to the link. On failure, the
/// step that failed comes with the driver's error.
fn link_with_device_runtime(
    raw: &mut sys::CUmodule,
    ptx: &crate::ptx::PtxModule,
    library: &'static [u8],
    opts: &mut [sys::CUjit_option],
    vals: &mut [*mut c_void],
) -> Result<(), (DriverError, String)> {
    let step = |what: &str| {
        let what = what.to_string();
        move |code| (code, what)
    };
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    // SAFETY: the options are values or point at a buffer that outlives the link state (the
    // caller's log), as each option requires; `state` receives the new link state.
    unsafe { sys::cuLinkCreate_v2(opts.len() as u32, opts.as_mut_ptr(), vals.as_mut_ptr(), &mut state) }
        .result()
        .map_err(step("cuLinkCreate"))?;
    let text = ptx.text_with_nul();
    let linked = (|| {
        // SAFETY: `state` is live; the data is the NUL-terminated PTX text (its size counts the
        // NUL), which the driver only reads; the name is a C string; no per-input options.
        unsafe {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                text.as_ptr().cast_mut().cast(),
                text.len(),
                c"cohort-kernels.ptx".as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(step("cuLinkAddData (the PTX)"))?;
        // The driver reads a library archive from a file: write the embedded one out once.
        let path = device_runtime_file(library).map_err(|e| {
            (
                DriverError(CUresult::CUDA_ERROR_FILE_NOT_FOUND),
                format!("writing libcudadevrt.a to a temporary file: {e}"),
            )
        })?;
        // SAFETY: `state` is live; `path` is a NUL-terminated path of a complete file.
        unsafe {
            sys::cuLinkAddFile_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
                path.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(step("cuLinkAddFile (libcudadevrt.a)"))?;
        let mut image: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: `state` is live; the image it returns belongs to it and is loaded below,
        // before the state is destroyed.
        unsafe { sys::cuLinkComplete(state, &mut image, &mut size) }.result().map_err(step("cuLinkComplete"))?;
        // SAFETY: `image` is the linked cubin, live until `cuLinkDestroy` below.
        unsafe { sys::cuModuleLoadData(raw, image) }.result().map_err(step("cuModuleLoadData (the linked image)"))
    })();
    // SAFETY: `state` is live and destroyed once; the module loaded from its image is
    // independent of it.
    let destroyed = unsafe { sys::cuLinkDestroy(state) }.result().map_err(step("cuLinkDestroy"));
    linked.map_err(|(code, what)| (code, with_runtime_hint(code, what))).and(destroyed)
}

/// A failed link step, with what usually causes it when the library is involved: a
/// `libcudadevrt.a` of a newer CUDA than the driver supports (measured: 13.5's on driver 580
/// gives `CUDA_ERROR_NO_BINARY_FOR_GPU`).
fn with_runtime_hint(code: DriverError, what: String) -> String {
    let no_binary = code.0 == CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU;
    if !what.contains("libcudadevrt") && !(no_binary && !what.contains("(the PTX)")) {
        return what;
    }
    let driver = match driver_version() {
        Ok(version) => format!("CUDA {}.{}", version / 1000, version % 1000 / 10),
        Err(_) => "the driver's CUDA version".to_string(),
    };
    format!(
        "{what} (the embedded libcudadevrt.a must not come from a newer CUDA than this driver's {driver}: rebuild \
         the kernels crate with COHORT_CUDADEVRT naming that version's library, e.g. from \
         `pip install --target DIR nvidia-cuda-runtime==13.0.96` for CUDA 13.0)"
    )
}

/// Initializes the driver (`cuInit`); the caller has checked that it can be loaded.
pub(crate) fn init() -> Result<(), DriverError> {
    result::init()
}

/// How many CUDA devices the driver sees.
pub(crate) fn device_count() -> Result<i32, DriverError> {
    result::device::get_count()
}

/// The driver's CUDA version (`13000` for 13.0).
pub(crate) fn driver_version() -> Result<i32, DriverError> {
    let mut version = 0;
    // SAFETY: out-pointer to a local.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// Destroys a CUDA event without a backend at hand (the launch budget's, dropped after the
/// last `GpuInner` of its context let go of it).
///
/// # Safety
/// `e` is a live CUDA event, not used after this.
pub(crate) unsafe fn destroy_event(e: EventH) -> Done {
    // SAFETY: the caller's contract.
    Ok(unsafe { result::event::destroy(event(e)) }?)
}

/// Whether device `dev` can access `peer`'s memory (`cuDeviceCanAccessPeer`).
pub(crate) fn can_access_peer(dev: sys::CUdevice, peer: sys::CUdevice) -> Result<bool, DriverError> {
    let mut can = 0;
    // SAFETY: out-pointer to a local.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) }.result()?;
    Ok(can != 0)
}

/// The embedded `libcudadevrt.a`, written once per process to a temporary file (the driver's
/// linker takes archives as files).
fn device_runtime_file(library: &'static [u8]) -> std::io::Result<&'static CStr> {
    static FILES: std::sync::Mutex<Vec<(usize, &'static CStr)>> = std::sync::Mutex::new(Vec::new());
    let mut files = FILES.lock().unwrap_or_else(|p| p.into_inner());
    let key = library.as_ptr() as usize;
    if let Some((_, p)) = files.iter().find(|(k, _)| *k == key) {
        return Ok(p);
    }
    let path = std::env::temp_dir().join(format!("cohort-cudadevrt-{}-{}.a", std::process::id(), files.len()));
    std::fs::write(&path, library)?;
    let c = std::ffi::CString::new(path.into_os_string().into_encoded_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let c: &'static CStr = Box::leak(c.into_boxed_c_str());
    files.push((key, c));
    Ok(c)
}
