//! Launches from the device: programmatic dependent launch (`griddepcontrol`, sm_90) and the
//! device runtime's two calls that `child<<<grid, block, smem, stream>>>(args)` becomes in
//! device code (CDP2).

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
use core::arch::asm;

use crate::host::on_device;

// --- Programmatic dependent launch (sm_90) ----------------------------------------------
//
// Below sm_90 (the sm_80 PTX) both are nothing: the runtime never launches a kernel of a module
// built without them programmatically (it launches it in plain stream order), so there is no
// prerequisite grid to wait for, and no dependent to release early.

/// `griddepcontrol.wait` (sm_90+): waits until every prerequisite grid of a programmatic
/// dependent launch has completed and its memory operations are visible to this grid
/// (`cudaGridDependencySynchronize()`); returns at once in a grid launched without one. Below
/// sm_90 it is nothing (see above).
///
/// Not `nomem`: the compiler must not move a memory access of this thread across it.
#[inline(always)]
#[doc(alias = "cudaGridDependencySynchronize")]
pub fn griddepcontrol_wait() {
    on_device!("griddepcontrol_wait" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: waiting for the prerequisite grids has no precondition.
        unsafe {
            asm!("griddepcontrol.wait;", options(nostack))
        };
    } host => {})
}

/// `griddepcontrol.launch_dependents` (sm_90+): lets the grid launched programmatically after
/// this one on its stream be scheduled once every block of this grid has executed it (or
/// exited), instead of at this grid's end (`cudaTriggerProgrammaticLaunchCompletion()`). It
/// orders no memory: the dependent still sees this grid's writes only after its own
/// [`griddepcontrol_wait`]. Below sm_90 it is nothing (see above).
#[inline(always)]
#[doc(alias = "cudaTriggerProgrammaticLaunchCompletion")]
pub fn griddepcontrol_launch_dependents() {
    on_device!("griddepcontrol_launch_dependents" => {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: releasing the dependent grid's launch has no precondition and touches no
        // memory of this thread.
        unsafe {
            asm!("griddepcontrol.launch_dependents;", options(nostack))
        };
    } host => {})
}

// Device runtime (CDP2): the two calls `child<<<grid, block, smem, stream>>>(args)` becomes in
// device code, as nvcc 13.0 emits them for sm_90. Their bodies are in libcudadevrt, which the
// host links into modules that call them (see `cohort_runtime`'s module loading).

/// A grid or block extent as the device runtime takes it (`.param .align 4 .b8 grid[12]`:
/// CUDA's `dim3`, three `u32`).
#[cfg(target_arch = "nvptx64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3Param {
    x: u32,
    y: u32,
    z: u32,
}

#[cfg(target_arch = "nvptx64")]
unsafe extern "C" {
    // `.extern .func (.param .b64 r) __cudaCDP2GetParameterBufferV2(.param .b64 func,
    //  .param .align 4 .b8 grid[12], .param .align 4 .b8 block[12], .param .b32 smem)`
    fn __cudaCDP2GetParameterBufferV2(func: u64, grid: Dim3Param, block: Dim3Param, shared_mem_bytes: u32) -> *mut u8;
    // `.extern .func (.param .b32 r) __cudaCDP2LaunchDeviceV2(.param .b64 buf, .param .b64 stream)`
    fn __cudaCDP2LaunchDeviceV2(buffer: *mut u8, stream: u64) -> u32;
}

/// `__cudaCDP2GetParameterBufferV2`: reserves a launch of the kernel entry at address `func`
/// with this grid and block (`(x, y, z)` each, CUDA's `dim3`) and dynamic shared memory, and
/// returns the buffer its parameters are to be written into (each at its natural alignment, in
/// the order of the entry's `.param` list), or null when the device runtime refuses (no launch slot left, an impossible
/// configuration).
///
/// # Safety
/// `func` must be the address of a kernel entry of this module (`mov.u64 %rd, entry;`). A
/// non-null buffer must be filled with exactly the entry's parameters and then passed to
/// [`cdp2_launch_device`].
#[inline(always)]
#[doc(alias = "cudaGetParameterBuffer")]
pub unsafe fn cdp2_get_parameter_buffer(
    func: u64,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_mem_bytes: u32,
) -> *mut u8 {
    on_device!("raw::cdp2_get_parameter_buffer" => {
        let grid = Dim3Param { x: grid.0, y: grid.1, z: grid.2 };
        let block = Dim3Param { x: block.0, y: block.1, z: block.2 };
        // SAFETY: forwarded to the caller.
        unsafe { __cudaCDP2GetParameterBufferV2(func, grid, block, shared_mem_bytes) }
    })
}

/// `__cudaCDP2LaunchDeviceV2`: launches the grid whose parameter buffer is `buffer` into
/// `stream` (`0`: the block's implicit stream; `0x3`: tail launch; `0x4`: fire-and-forget).
/// Returns the `cudaError_t` (0: launched).
///
/// # Safety
/// `buffer` must come from [`cdp2_get_parameter_buffer`], be filled with the entry's
/// parameters, and be launched once; every pointer in it must stay valid, and every memory it
/// names must be free of races, for as long as the child grid may run.
#[inline(always)]
#[doc(alias = "cudaLaunchDevice")]
pub unsafe fn cdp2_launch_device(buffer: *mut u8, stream: u64) -> u32 {
    on_device!("raw::cdp2_launch_device" => {
        // SAFETY: forwarded to the caller.
        unsafe { __cudaCDP2LaunchDeviceV2(buffer, stream) }
    })
}
