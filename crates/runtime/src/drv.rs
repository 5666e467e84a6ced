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

use cudarc::driver::sys::{self, *};

use crate::cpu::on_cpu;

#[inline]
pub(crate) unsafe fn cuCtxEnablePeerAccess(peerContext: CUcontext, Flags: ::core::ffi::c_uint) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuCtxEnablePeerAccess(peerContext, Flags) }
}

#[inline]
pub(crate) unsafe fn cuCtxGetLimit(pvalue: *mut usize, limit: CUlimit) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuCtxGetLimit(pvalue, limit) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuCtxGetLimit(pvalue, limit) }
}

#[inline]
pub(crate) unsafe fn cuCtxGetStreamPriorityRange(
    leastPriority: *mut ::core::ffi::c_int,
    greatestPriority: *mut ::core::ffi::c_int,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuCtxGetStreamPriorityRange(leastPriority, greatestPriority) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuCtxGetStreamPriorityRange(leastPriority, greatestPriority) }
}

#[inline]
pub(crate) unsafe fn cuCtxSetLimit(limit: CUlimit, value: usize) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuCtxSetLimit(limit, value) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuCtxSetLimit(limit, value) }
}

#[inline]
pub(crate) unsafe fn cuCtxSynchronize() -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuCtxSynchronize() };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuCtxSynchronize() }
}

#[inline]
pub(crate) unsafe fn cuDeviceCanAccessPeer(
    canAccessPeer: *mut ::core::ffi::c_int,
    dev: CUdevice,
    peerDev: CUdevice,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuDeviceCanAccessPeer(canAccessPeer, dev, peerDev) }
}

#[inline]
pub(crate) unsafe fn cuDriverGetVersion(driverVersion: *mut ::core::ffi::c_int) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuDriverGetVersion(driverVersion) }
}

#[inline]
pub(crate) unsafe fn cuEventCreate(phEvent: *mut CUevent, Flags: ::core::ffi::c_uint) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventCreate(phEvent, Flags) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventCreate(phEvent, Flags) }
}

#[inline]
pub(crate) unsafe fn cuEventDestroy_v2(hEvent: CUevent) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventDestroy_v2(hEvent) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventDestroy_v2(hEvent) }
}

#[inline]
pub(crate) unsafe fn cuEventElapsedTime_v2(pMilliseconds: *mut f32, hStart: CUevent, hEnd: CUevent) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd) }
}

#[inline]
pub(crate) unsafe fn cuEventQuery(hEvent: CUevent) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventQuery(hEvent) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventQuery(hEvent) }
}

#[inline]
pub(crate) unsafe fn cuEventRecord(hEvent: CUevent, hStream: CUstream) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventRecord(hEvent, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventRecord(hEvent, hStream) }
}

#[inline]
pub(crate) unsafe fn cuEventSynchronize(hEvent: CUevent) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuEventSynchronize(hEvent) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuEventSynchronize(hEvent) }
}

#[inline]
pub(crate) unsafe fn cuFuncGetAttribute(
    pi: *mut ::core::ffi::c_int,
    attrib: CUfunction_attribute,
    hfunc: CUfunction,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuFuncGetAttribute(pi, attrib, hfunc) }
}

#[inline]
pub(crate) unsafe fn cuFuncSetAttribute(
    hfunc: CUfunction,
    attrib: CUfunction_attribute,
    value: ::core::ffi::c_int,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuFuncSetAttribute(hfunc, attrib, value) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuFuncSetAttribute(hfunc, attrib, value) }
}

#[inline]
pub(crate) unsafe fn cuGraphDestroy(hGraph: CUgraph) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuGraphDestroy(hGraph) }
}

#[inline]
pub(crate) unsafe fn cuGraphExecDestroy(hGraphExec: CUgraphExec) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuGraphExecDestroy(hGraphExec) }
}

#[inline]
pub(crate) unsafe fn cuGraphGetNodes(hGraph: CUgraph, nodes: *mut CUgraphNode, numNodes: *mut usize) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuGraphGetNodes(hGraph, nodes, numNodes) }
}

#[inline]
pub(crate) unsafe fn cuGraphInstantiateWithFlags(
    phGraphExec: *mut CUgraphExec,
    hGraph: CUgraph,
    flags: ::core::ffi::c_ulonglong,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags) }
}

#[inline]
pub(crate) unsafe fn cuGraphLaunch(hGraphExec: CUgraphExec, hStream: CUstream) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuGraphLaunch(hGraphExec, hStream) }
}

#[inline]
pub(crate) unsafe fn cuLaunchCooperativeKernel(
    f: CUfunction,
    gridDimX: ::core::ffi::c_uint,
    gridDimY: ::core::ffi::c_uint,
    gridDimZ: ::core::ffi::c_uint,
    blockDimX: ::core::ffi::c_uint,
    blockDimY: ::core::ffi::c_uint,
    blockDimZ: ::core::ffi::c_uint,
    sharedMemBytes: ::core::ffi::c_uint,
    hStream: CUstream,
    kernelParams: *mut *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe {
        sys::cuLaunchCooperativeKernel(
            f,
            gridDimX,
            gridDimY,
            gridDimZ,
            blockDimX,
            blockDimY,
            blockDimZ,
            sharedMemBytes,
            hStream,
            kernelParams,
        )
    }
}

#[inline]
pub(crate) unsafe fn cuLaunchHostFunc(
    hStream: CUstream,
    fn_: CUhostFn,
    userData: *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuLaunchHostFunc(hStream, fn_, userData) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLaunchHostFunc(hStream, fn_, userData) }
}

#[inline]
pub(crate) unsafe fn cuLaunchKernel(
    f: CUfunction,
    gridDimX: ::core::ffi::c_uint,
    gridDimY: ::core::ffi::c_uint,
    gridDimZ: ::core::ffi::c_uint,
    blockDimX: ::core::ffi::c_uint,
    blockDimY: ::core::ffi::c_uint,
    blockDimZ: ::core::ffi::c_uint,
    sharedMemBytes: ::core::ffi::c_uint,
    hStream: CUstream,
    kernelParams: *mut *mut ::core::ffi::c_void,
    extra: *mut *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe {
        sys::cuLaunchKernel(
            f,
            gridDimX,
            gridDimY,
            gridDimZ,
            blockDimX,
            blockDimY,
            blockDimZ,
            sharedMemBytes,
            hStream,
            kernelParams,
            extra,
        )
    }
}

#[inline]
pub(crate) unsafe fn cuLinkAddData_v2(
    state: CUlinkState,
    type_: CUjitInputType,
    data: *mut ::core::ffi::c_void,
    size: usize,
    name: *const ::core::ffi::c_char,
    numOptions: ::core::ffi::c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLinkAddData_v2(state, type_, data, size, name, numOptions, options, optionValues) }
}

#[inline]
pub(crate) unsafe fn cuLinkAddFile_v2(
    state: CUlinkState,
    type_: CUjitInputType,
    path: *const ::core::ffi::c_char,
    numOptions: ::core::ffi::c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLinkAddFile_v2(state, type_, path, numOptions, options, optionValues) }
}

#[inline]
pub(crate) unsafe fn cuLinkComplete(
    state: CUlinkState,
    cubinOut: *mut *mut ::core::ffi::c_void,
    sizeOut: *mut usize,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLinkComplete(state, cubinOut, sizeOut) }
}

#[inline]
pub(crate) unsafe fn cuLinkCreate_v2(
    numOptions: ::core::ffi::c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut ::core::ffi::c_void,
    stateOut: *mut CUlinkState,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLinkCreate_v2(numOptions, options, optionValues, stateOut) }
}

#[inline]
pub(crate) unsafe fn cuLinkDestroy(state: CUlinkState) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuLinkDestroy(state) }
}

#[inline]
pub(crate) unsafe fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemAlloc_v2(dptr, bytesize) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemAlloc_v2(dptr, bytesize) }
}

#[inline]
pub(crate) unsafe fn cuMemFreeHost(p: *mut ::core::ffi::c_void) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemFreeHost(p) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemFreeHost(p) }
}

#[inline]
pub(crate) unsafe fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemFree_v2(dptr) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemFree_v2(dptr) }
}

#[inline]
pub(crate) unsafe fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemGetInfo_v2(free, total) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemGetInfo_v2(free, total) }
}

#[inline]
pub(crate) unsafe fn cuMemHostAlloc(
    pp: *mut *mut ::core::ffi::c_void,
    bytesize: usize,
    Flags: ::core::ffi::c_uint,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemHostAlloc(pp, bytesize, Flags) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostAlloc(pp, bytesize, Flags) }
}

#[inline]
pub(crate) unsafe fn cuMemHostGetDevicePointer_v2(
    pdptr: *mut CUdeviceptr,
    p: *mut ::core::ffi::c_void,
    Flags: ::core::ffi::c_uint,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemHostGetDevicePointer_v2(pdptr, p, Flags) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostGetDevicePointer_v2(pdptr, p, Flags) }
}

#[inline]
pub(crate) unsafe fn cuMemHostRegister_v2(
    p: *mut ::core::ffi::c_void,
    bytesize: usize,
    Flags: ::core::ffi::c_uint,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemHostRegister_v2(p, bytesize, Flags) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostRegister_v2(p, bytesize, Flags) }
}

#[inline]
pub(crate) unsafe fn cuMemHostUnregister(p: *mut ::core::ffi::c_void) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemHostUnregister(p) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemHostUnregister(p) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    ByteCount: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemcpyAsync(dst, src, ByteCount, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyAsync(dst, src, ByteCount, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyDtoD_v2(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyDtoH_v2(
    dstHost: *mut ::core::ffi::c_void,
    srcDevice: CUdeviceptr,
    ByteCount: usize,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyHtoDAsync_v2(
    dstDevice: CUdeviceptr,
    srcHost: *const ::core::ffi::c_void,
    ByteCount: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyHtoD_v2(
    dstDevice: CUdeviceptr,
    srcHost: *const ::core::ffi::c_void,
    ByteCount: usize,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount) }
}

#[inline]
pub(crate) unsafe fn cuMemcpyPeerAsync(
    dstDevice: CUdeviceptr,
    dstContext: CUcontext,
    srcDevice: CUdeviceptr,
    srcContext: CUcontext,
    ByteCount: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe {
            crate::cpu::host::cuMemcpyPeerAsync(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream)
        };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyPeerAsync(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemsetD16Async(
    dstDevice: CUdeviceptr,
    us: ::core::ffi::c_ushort,
    N: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemsetD16Async(dstDevice, us, N, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemsetD16Async(dstDevice, us, N, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemsetD32Async(
    dstDevice: CUdeviceptr,
    ui: ::core::ffi::c_uint,
    N: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemsetD32Async(dstDevice, ui, N, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemsetD32Async(dstDevice, ui, N, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemsetD8Async(
    dstDevice: CUdeviceptr,
    uc: ::core::ffi::c_uchar,
    N: usize,
    hStream: CUstream,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemsetD8Async(dstDevice, uc, N, hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemsetD8Async(dstDevice, uc, N, hStream) }
}

#[inline]
pub(crate) unsafe fn cuMemsetD8_v2(dstDevice: CUdeviceptr, uc: ::core::ffi::c_uchar, N: usize) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuMemsetD8_v2(dstDevice, uc, N) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemsetD8_v2(dstDevice, uc, N) }
}

#[inline]
pub(crate) unsafe fn cuModuleGetFunction(
    hfunc: *mut CUfunction,
    hmod: CUmodule,
    name: *const ::core::ffi::c_char,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuModuleGetFunction(hfunc, hmod, name) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuModuleGetFunction(hfunc, hmod, name) }
}

#[inline]
pub(crate) unsafe fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    hmod: CUmodule,
    name: *const ::core::ffi::c_char,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuModuleGetGlobal_v2(dptr, bytes, hmod, name) }
}

#[inline]
pub(crate) unsafe fn cuModuleLoadData(module: *mut CUmodule, image: *const ::core::ffi::c_void) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuModuleLoadData(module, image) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuModuleLoadData(module, image) }
}

#[inline]
pub(crate) unsafe fn cuModuleLoadDataEx(
    module: *mut CUmodule,
    image: *const ::core::ffi::c_void,
    numOptions: ::core::ffi::c_uint,
    options: *mut CUjit_option,
    optionValues: *mut *mut ::core::ffi::c_void,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuModuleLoadDataEx(module, image, numOptions, options, optionValues) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuModuleLoadDataEx(module, image, numOptions, options, optionValues) }
}

#[inline]
pub(crate) unsafe fn cuModuleUnload(hmod: CUmodule) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuModuleUnload(hmod) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuModuleUnload(hmod) }
}

#[inline]
pub(crate) unsafe fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    numBlocks: *mut ::core::ffi::c_int,
    func: CUfunction,
    blockSize: ::core::ffi::c_int,
    dynamicSMemSize: usize,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize) }
}

#[inline]
pub(crate) unsafe fn cuOccupancyMaxPotentialBlockSize(
    minGridSize: *mut ::core::ffi::c_int,
    blockSize: *mut ::core::ffi::c_int,
    func: CUfunction,
    blockSizeToDynamicSMemSize: CUoccupancyB2DSize,
    dynamicSMemSize: usize,
    blockSizeLimit: ::core::ffi::c_int,
) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe {
        sys::cuOccupancyMaxPotentialBlockSize(
            minGridSize,
            blockSize,
            func,
            blockSizeToDynamicSMemSize,
            dynamicSMemSize,
            blockSizeLimit,
        )
    }
}

#[inline]
pub(crate) unsafe fn cuStreamBeginCapture_v2(hStream: CUstream, mode: CUstreamCaptureMode) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamBeginCapture_v2(hStream, mode) }
}

#[inline]
pub(crate) unsafe fn cuStreamCreateWithPriority(
    phStream: *mut CUstream,
    flags: ::core::ffi::c_uint,
    priority: ::core::ffi::c_int,
) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamCreateWithPriority(phStream, flags, priority) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamCreateWithPriority(phStream, flags, priority) }
}

#[inline]
pub(crate) unsafe fn cuStreamDestroy_v2(hStream: CUstream) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamDestroy_v2(hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamDestroy_v2(hStream) }
}

#[inline]
pub(crate) unsafe fn cuStreamEndCapture(hStream: CUstream, phGraph: *mut CUgraph) -> CUresult {
    if on_cpu() {
        return CUresult::CUDA_ERROR_NOT_SUPPORTED;
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamEndCapture(hStream, phGraph) }
}

#[inline]
pub(crate) unsafe fn cuStreamGetPriority(hStream: CUstream, priority: *mut ::core::ffi::c_int) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamGetPriority(hStream, priority) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamGetPriority(hStream, priority) }
}

#[inline]
pub(crate) unsafe fn cuStreamQuery(hStream: CUstream) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamQuery(hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamQuery(hStream) }
}

#[inline]
pub(crate) unsafe fn cuStreamSynchronize(hStream: CUstream) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamSynchronize(hStream) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamSynchronize(hStream) }
}

#[inline]
pub(crate) unsafe fn cuStreamWaitEvent(hStream: CUstream, hEvent: CUevent, Flags: ::core::ffi::c_uint) -> CUresult {
    if on_cpu() {
        // SAFETY: the caller's contract, which the CPU implementation shares.
        return unsafe { crate::cpu::host::cuStreamWaitEvent(hStream, hEvent, Flags) };
    }
    // SAFETY: the caller's contract.
    unsafe { sys::cuStreamWaitEvent(hStream, hEvent, Flags) }
}
