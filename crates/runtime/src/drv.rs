//! The seam between the runtime and the driver: every driver call of the runtime goes through
//! a function here of the same name and signature as cudarc's `sys` one. While the CPU device is
//! the current "context" of the calling thread (see `GpuInner::bind`), the call goes to the CPU
//! device's implementation (`crate::cpu::host`), or returns `CUDA_ERROR_NOT_SUPPORTED` for what the
//! CPU device does not have (graphs, linking, peer access, module variables); otherwise to the
//! driver. Generated from cudarc 0.19's declarations; keep the list to the calls the runtime makes.
//!
//! # Safety
//! Each function has the driver function's contract; the CPU implementations accept every
//! argument that contract allows (addresses are host addresses on the CPU device).

#![allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_uchar, c_uint, c_ulonglong, c_ushort, c_void};

use cudarc::driver::sys::{self, *};

use crate::cpu::on_cpu;

/// Each driver call the runtime makes, with its CPU-device side: `host`, the CPU device's
/// implementation of the same name and signature (`crate::cpu::host`); `mem`, the same for
/// pools, stream-ordered and managed memory (`crate::cpu_memory`); `none`,
/// `CUDA_ERROR_NOT_SUPPORTED`. Otherwise the call goes to the driver, arguments unchanged.
macro_rules! driver_calls {
    ($($cpu:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        #[inline]
        pub(crate) unsafe fn $name($($arg: $ty),*) -> CUresult {
            if on_cpu() {
                driver_calls!(@cpu $cpu $name($($arg),*));
            }
            // SAFETY: the caller's contract.
            unsafe { sys::$name($($arg),*) }
        }
    )*};
    (@cpu host $name:ident($($arg:ident),*)) => {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::$name($($arg),*) }
    };
    (@cpu mem $name:ident($($arg:ident),*)) => {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu_memory::$name($($arg),*) }
    };
    (@cpu none $name:ident($($arg:ident),*)) => {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED
    };
}

driver_calls! {
    none fn cuCtxEnablePeerAccess(peerContext: CUcontext, Flags: c_uint);
    host fn cuCtxGetLimit(pvalue: *mut usize, limit: CUlimit);
    host fn cuCtxGetStreamPriorityRange(leastPriority: *mut c_int, greatestPriority: *mut c_int);
    host fn cuCtxSetLimit(limit: CUlimit, value: usize);
    host fn cuCtxSynchronize();
    none fn cuDeviceCanAccessPeer(canAccessPeer: *mut c_int, dev: CUdevice, peerDev: CUdevice);
    mem fn cuDeviceGetDefaultMemPool(pool_out: *mut CUmemoryPool, dev: CUdevice);
    none fn cuDriverGetVersion(driverVersion: *mut c_int);
    host fn cuEventCreate(phEvent: *mut CUevent, Flags: c_uint);
    host fn cuEventDestroy_v2(hEvent: CUevent);
    host fn cuEventElapsedTime_v2(pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent);
    host fn cuEventQuery(hEvent: CUevent);
    host fn cuEventRecord(hEvent: CUevent, hStream: CUstream);
    host fn cuEventSynchronize(hEvent: CUevent);
    none fn cuFuncGetAttribute(pi: *mut c_int, attrib: CUfunction_attribute, hfunc: CUfunction);
    host fn cuFuncSetAttribute(hfunc: CUfunction, attrib: CUfunction_attribute, value: c_int);
    none fn cuGraphDestroy(hGraph: CUgraph);
    none fn cuGraphExecDestroy(hGraphExec: CUgraphExec);
    none fn cuGraphGetNodes(hGraph: CUgraph, nodes: *mut CUgraphNode, numNodes: *mut usize);
    none fn cuGraphInstantiateWithFlags(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: c_ulonglong);
    none fn cuGraphLaunch(hGraphExec: CUgraphExec, hStream: CUstream);
    none fn cuLaunchCooperativeKernel(
        f: CUfunction,
        gridDimX: c_uint,
        gridDimY: c_uint,
        gridDimZ: c_uint,
        blockDimX: c_uint,
        blockDimY: c_uint,
        blockDimZ: c_uint,
        sharedMemBytes: c_uint,
        hStream: CUstream,
        kernelParams: *mut *mut c_void,
    );
    host fn cuLaunchHostFunc(hStream: CUstream, fn_: CUhostFn, userData: *mut c_void);
    none fn cuLaunchKernel(
        f: CUfunction,
        gridDimX: c_uint,
        gridDimY: c_uint,
        gridDimZ: c_uint,
        blockDimX: c_uint,
        blockDimY: c_uint,
        blockDimZ: c_uint,
        sharedMemBytes: c_uint,
        hStream: CUstream,
        kernelParams: *mut *mut c_void,
        extra: *mut *mut c_void,
    );
    none fn cuLaunchKernelEx(
        config: *const CUlaunchConfig,
        f: CUfunction,
        kernelParams: *mut *mut c_void,
        extra: *mut *mut c_void,
    );
    none fn cuLinkAddData_v2(
        state: CUlinkState,
        type_: CUjitInputType,
        data: *mut c_void,
        size: usize,
        name: *const c_char,
        numOptions: c_uint,
        options: *mut CUjit_option,
        optionValues: *mut *mut c_void,
    );
    none fn cuLinkAddFile_v2(
        state: CUlinkState,
        type_: CUjitInputType,
        path: *const c_char,
        numOptions: c_uint,
        options: *mut CUjit_option,
        optionValues: *mut *mut c_void,
    );
    none fn cuLinkComplete(state: CUlinkState, cubinOut: *mut *mut c_void, sizeOut: *mut usize);
    none fn cuLinkCreate_v2(
        numOptions: c_uint,
        options: *mut CUjit_option,
        optionValues: *mut *mut c_void,
        stateOut: *mut CUlinkState,
    );
    none fn cuLinkDestroy(state: CUlinkState);
    mem fn cuMemAdvise_v2(devPtr: CUdeviceptr, count: usize, advice: CUmem_advise, location: CUmemLocation);
    host fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize);
    mem fn cuMemAllocAsync(dptr: *mut CUdeviceptr, bytesize: usize, hStream: CUstream);
    mem fn cuMemAllocFromPoolAsync(dptr: *mut CUdeviceptr, bytesize: usize, pool: CUmemoryPool, hStream: CUstream);
    mem fn cuMemAllocManaged(dptr: *mut CUdeviceptr, bytesize: usize, flags: c_uint);
    mem fn cuMemFreeAsync(dptr: CUdeviceptr, hStream: CUstream);
    host fn cuMemFreeHost(p: *mut c_void);
    host fn cuMemFree_v2(dptr: CUdeviceptr);
    host fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize);
    host fn cuMemHostAlloc(pp: *mut *mut c_void, bytesize: usize, Flags: c_uint);
    host fn cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut c_void, Flags: c_uint);
    host fn cuMemHostRegister_v2(p: *mut c_void, bytesize: usize, Flags: c_uint);
    host fn cuMemHostUnregister(p: *mut c_void);
    host fn cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, ByteCount: usize, hStream: CUstream);
    host fn cuMemcpyDtoD_v2(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize);
    host fn cuMemcpyDtoH_v2(dstHost: *mut c_void, srcDevice: CUdeviceptr, ByteCount: usize);
    host fn cuMemcpyHtoDAsync_v2(dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize, hStream: CUstream);
    host fn cuMemcpyHtoD_v2(dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize);
    host fn cuMemcpyPeerAsync(
        dstDevice: CUdeviceptr,
        dstContext: CUcontext,
        srcDevice: CUdeviceptr,
        srcContext: CUcontext,
        ByteCount: usize,
        hStream: CUstream,
    );
    mem fn cuMemPoolCreate(pool: *mut CUmemoryPool, poolProps: *const CUmemPoolProps);
    mem fn cuMemPoolDestroy(pool: CUmemoryPool);
    mem fn cuMemPoolGetAttribute(pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void);
    mem fn cuMemPoolSetAttribute(pool: CUmemoryPool, attr: CUmemPool_attribute, value: *mut c_void);
    mem fn cuMemPoolTrimTo(pool: CUmemoryPool, minBytesToKeep: usize);
    mem fn cuMemPrefetchAsync_v2(
        devPtr: CUdeviceptr,
        count: usize,
        location: CUmemLocation,
        flags: c_uint,
        hStream: CUstream,
    );
    host fn cuMemsetD16Async(dstDevice: CUdeviceptr, us: c_ushort, N: usize, hStream: CUstream);
    host fn cuMemsetD32Async(dstDevice: CUdeviceptr, ui: c_uint, N: usize, hStream: CUstream);
    host fn cuMemsetD8Async(dstDevice: CUdeviceptr, uc: c_uchar, N: usize, hStream: CUstream);
    host fn cuMemsetD8_v2(dstDevice: CUdeviceptr, uc: c_uchar, N: usize);
    host fn cuModuleGetFunction(hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char);
    none fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, hmod: CUmodule, name: *const c_char);
    host fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void);
    host fn cuModuleLoadDataEx(
        module: *mut CUmodule,
        image: *const c_void,
        numOptions: c_uint,
        options: *mut CUjit_option,
        optionValues: *mut *mut c_void,
    );
    host fn cuModuleUnload(hmod: CUmodule);
    none fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
        numBlocks: *mut c_int,
        func: CUfunction,
        blockSize: c_int,
        dynamicSMemSize: usize,
    );
    none fn cuOccupancyMaxPotentialBlockSize(
        minGridSize: *mut c_int,
        blockSize: *mut c_int,
        func: CUfunction,
        blockSizeToDynamicSMemSize: CUoccupancyB2DSize,
        dynamicSMemSize: usize,
        blockSizeLimit: c_int,
    );
    none fn cuStreamBeginCapture_v2(hStream: CUstream, mode: CUstreamCaptureMode);
    host fn cuStreamCreateWithPriority(phStream: *mut CUstream, flags: c_uint, priority: c_int);
    host fn cuStreamDestroy_v2(hStream: CUstream);
    none fn cuStreamEndCapture(hStream: CUstream, phGraph: *mut CUgraph);
    host fn cuStreamGetPriority(hStream: CUstream, priority: *mut c_int);
    none fn cuStreamGetFlags(hStream: CUstream, flags: *mut c_uint);
    mem fn cuStreamIsCapturing(hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus);
    host fn cuStreamQuery(hStream: CUstream);
    host fn cuStreamSynchronize(hStream: CUstream);
    host fn cuStreamWaitEvent(hStream: CUstream, hEvent: CUevent, Flags: c_uint);
}
