//! Tier 1: one function per PTX instruction or special register, nothing more — and the only
//! home of inline PTX (`asm!`, `global_asm!`) and NVVM intrinsics in this crate (the
//! architecture test `crates/cohort/tests/architecture/` fails on one anywhere else).
//!
//! These are the building blocks of every safe type in this crate. They keep CUDA's semantics
//! exactly: a `*_sync` function must be called by every lane named in `mask`, with the same
//! `mask`. Nothing here imports from the tiers above (see the tier table in the crate docs):
//! the types the instructions need ([`Scope`], [`SpaceKind`]) are defined here, and the upper
//! tiers use them.
//!
//! **Convergence.** Every warp- or block-synchronous operation (barriers, `bar.warp.sync`,
//! shuffles, votes, matches, `redux.sync`, `activemask`) is emitted through LLVM's NVVM
//! intrinsic, which LLVM knows is `convergent`: it is never moved into, out of, or merged
//! across divergent control flow. rustc's inline assembly is not marked convergent, and
//! LLVM does merge identical `activemask` asm from both sides of a branch (measured: the
//! branch disappears), so inline assembly is used only for per-thread instructions (special
//! registers, fences, atomics, loads and stores, `cp.async`).
//!
//! On the host most functions here panic (see [`crate::host`]); those with a CPU-device meaning
//! compute it (the `.approx` arithmetic exactly as a GPU's SASS does, up to the `MUFU` tables).
//!
//! One module per concept, every function also at `raw::` itself:
//!
//! | module | PTX |
//! |---|---|
//! | [`sreg`] | special registers: indices, lanes, SM ids, clocks, environment registers, shared-memory sizes |
//! | [`barrier`] | `barrier.sync`, `barrier.red`, named barriers, `bar.warp.sync`, `mbarrier` |
//! | [`cluster`] | `barrier.cluster`, `mapa`, `%cluster_*` / `%clusterid` / `%nclusterid`, loads and stores of another block's shared memory |
//! | [`warp`] | `shfl.sync`, `vote.sync`, `match.sync`, `activemask`, `redux.sync`, `fns` |
//! | [`memory`] | `ld`/`st` of shared, constant and generic memory, `cvta`, `isspacep`, the PTX variables of `shared!`, `constant!`, `global!` |
//! | [`async_copy`] | `cp.async` |
//! | [`mbarrier`] | `mbarrier` (init, arrive, expect_tx, arrive_drop, wait by parity, inval), `cp.async.mbarrier.arrive`, `cp.async.bulk` |
//! | [`atomic`] | `atom`, `red`, strong `ld`/`st` (`.relaxed`, `.acquire`, `.release`) with a scope and a state space |
//! | [`fence`] | `fence.sc`, `fence.acq_rel` |
//! | [`control`] | `nanosleep`, `trap`, `exit`, checked mode's call-site markers |
//! | [`launch`] | `griddepcontrol`, the device runtime's launch calls |
//! | [`print`] | `vprintf` |
//! | [`fp`] | `sqrt`, `fma`, the `.approx` functions |
//! | [`mma`] | `mma.sync` (m16n8k16, BF16/F16), `ldmatrix`, `stmatrix`, `cvt` between `f32` and BF16/F16 |
//! | [`mma_types`] | `mma.sync` m16n8k8 TF32, m16n8k32 S8/U8 and E4M3/E5M2 (sm_89), `cvt` to and from TF32 and FP8 |
//! | [`wgmma`] | `wgmma.fence` / `mma_async` / `commit_group` / `wait_group` (sm_90a), matrix descriptors, `setmaxnreg` |
//!
//! | PTX | here | CUDA C++ |
//! |---|---|---|
//! | `%tid`, `%ntid`, `%ctaid`, `%nctaid` | [`tid_x`] … [`nctaid_z`] | `threadIdx`, `blockDim`, `blockIdx`, `gridDim` |
//! | `%laneid`, `%warpid`, `%lanemask_*` | [`laneid`], [`warpid`], [`lanemask_lt`] … | `__lane_id()` (CCCL) |
//! | `barrier.sync 0` | [`barrier_sync`] | `__syncthreads()` |
//! | `barrier.red.popc` / `.and` / `.or` (non-aligned) | [`barrier_sync_count`], [`barrier_sync_and`], [`barrier_sync_or`] | `__syncthreads_count/and/or` |
//! | `bar.warp.sync` | [`bar_warp_sync`] | `__syncwarp(mask)` |
//! | `shfl.sync.{idx,up,down,bfly}.b32` | [`shfl_sync_idx_b32`] … | `__shfl_sync` … |
//! | `vote.sync.{all,any,uni,ballot}` | [`vote_sync_all`] … | `__all_sync`, `__any_sync`, `__ballot_sync` |
//! | `match.any.sync` | [`match_any_sync_b32`] …, [`match_all_sync_b32`] … | `__match_any_sync`, `__match_all_sync` |
//! | `activemask.b32` | [`activemask`] | `__activemask()` |
//! | `redux.sync` (sm_80) | [`redux_sync_add_u32`] … | `__reduce_add_sync` … |
//! | `fence.sc` / `fence.acq_rel` | [`fence_sc_cta`] …, [`fence_sc`], [`fence_acq_rel`] | `__threadfence()` … |
//! | `atom`, `red`, `ld.relaxed/acquire`, `st.relaxed/release` | [`atom_add_u32`] …, [`red_add_u32`] …, [`atom_cas_b32`], [`ld_scoped_b32`], [`st_scoped_b32`] … | `atomicAdd` …, `cuda::atomic_ref` |
//! | `ld.shared`, `st.shared`, `ld.const` | [`ld_shared_b32`] …, [`ld_const_b32`] … | (plain loads of `__shared__` / `__constant__` data) |
//! | `cvta.shared` (of 0, of an address), `cvta.const`, `cvta.global` | [`shared_window_base`], [`cvta_shared_u64`], [`cvta_const_u64`], [`cvta_global_u64`] | `__cvta_shared_to_generic` … |
//! | `cp.async.{ca,cg}.shared.global`, `commit_group`, `wait_group`, `wait_all` | [`cp_async_cg_shared_global_16`] …, [`cp_async_wait_group`] | `__pipeline_memcpy_async`, `cg::memcpy_async` |
//! | `nanosleep.u32` | [`nanosleep`] | `__nanosleep` |
//! | `griddepcontrol.wait`, `griddepcontrol.launch_dependents` (sm_90) | [`griddepcontrol_wait`], [`griddepcontrol_launch_dependents`] | `cudaGridDependencySynchronize()`, `cudaTriggerProgrammaticLaunchCompletion()` |
//! | `trap` | [`trap`] | `__trap()` |
//! | `%clock`, `%clock64`, `%globaltimer`, `%smid` | [`clock`], [`clock64`], [`globaltimer`], [`smid`] | `clock()`, `clock64()`, `%globaltimer` |
//! | `%envreg1`, `%envreg2` | [`envreg1`], [`envreg2`] | (cooperative groups' grid workspace) |
//! | `%dynamic_smem_size` | [`dynamic_smem_size`] | — |
//! | `mov.u32 %r, 0; // cohort-site?` (numbered by `cohort-build`) | `site_marker` (checked mode; crate-private) | — |
//! | `mbarrier.init/arrive/test_wait/try_wait.shared.b64` (sm_80) | `mbarrier_*` (the block's phase barrier; crate-private) | `cuda::barrier` |
//! | `mbarrier.{init,inval,arrive,arrive.expect_tx,arrive_drop,try_wait.parity,test_wait.parity}` | [`mbarrier_init_shared`] …, [`mbarrier_wait_parity_shared`] | `cuda::barrier`, `cuda::ptx::mbarrier_*` |
//! | `cp.async.mbarrier.arrive.noinc`, `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` | [`cp_async_mbarrier_arrive_noinc_shared`], [`cp_async_bulk_shared_global`] | `cuda::memcpy_async(…, barrier)`, `cuda::device::memcpy_async_tx` |
//! | `mma.sync.aligned.m16n8k16.row.col.{f32.bf16.bf16.f32, f32.f16.f16.f32, f16.f16.f16.f16}` (sm_80) | [`mma_m16n8k16_f32_bf16`], [`mma_m16n8k16_f32_f16`], [`mma_m16n8k16_f16_f16`] | `__hmma_*`, `wmma::mma_sync` |
//! | `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16` | [`ldmatrix_x1`] … [`ldmatrix_x4_trans`] | `ldmatrix` inline asm (CUTLASS) |
//! | `stmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16` (sm_90) | [`stmatrix_x1`] … [`stmatrix_x4_trans`] | `stmatrix` inline asm (CUTLASS) |
//! | `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, `m16n8k32.row.col[.satfinite].s32.{s8,u8}.{s8,u8}.s32`, `m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32` (sm_89) | [`mma_m16n8k8_f32_tf32`], [`mma_m16n8k32_s32_s8_s8`] …, [`mma_m16n8k32_f32_e4m3_e4m3`] … | `wmma::mma_sync` on `precision::tf32`, `signed char`, `__nv_fp8_e4m3` |
//! | `cvt.rna.tf32.f32`, `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`, `cvt.rn.f16x2.{e4m3x2,e5m2x2}` (sm_89) | [`cvt_rna_tf32_f32`], [`cvt_rn_satfinite_e4m3x2_f32`] …, [`cvt_rn_f16x2_e4m3x2`] … | `wmma::__float_to_tf32`, `__nv_cvt_float2_to_fp8x2`, `__nv_cvt_fp8x2_to_halfraw2` |
//! | `cvt.rn.bf16.f32`, `cvt.rn.f16.f32`, `cvt.f32.f16` | [`cvt_rn_bf16_f32`], [`cvt_rn_f16_f32`], [`cvt_f32_f16`] | `__float2bfloat16_rn`, `__float2half_rn`, `__half2float` |
//! | `cp.async.bulk.tensor.{1..5}d` (load and store), `fence.proxy.tensormap`, `fence.proxy.async.shared::cta`, `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group[.read]` | [`cp_async_bulk_tensor_load`], [`cp_async_bulk_tensor_store`], [`fence_proxy_tensormap_acquire`], [`fence_proxy_async_shared`], [`cp_async_bulk_commit_group`], [`cp_async_bulk_wait_group_read`], [`cp_async_bulk_wait_group`] | `cuda::ptx::cp_async_bulk_tensor`, `cde::fence_proxy_async_shared_cta`, `cp_async_bulk_commit_group`, `cp_async_bulk_wait_group_read` |
//! | `fns.b32` | [`fns`] | `__fns` |
//! | `isspacep.global` | [`isspacep_global`] | `__isGlobal` |
//! | `call vprintf` | [`vprintf_raw`] | `printf` |
//! | `call __cudaCDP2GetParameterBufferV2` (libcudadevrt) | [`cdp2_get_parameter_buffer`] | `cudaGetParameterBuffer` (what `<<<>>>` in device code becomes) |
//! | `call __cudaCDP2LaunchDeviceV2` (libcudadevrt) | [`cdp2_launch_device`] | `cudaLaunchDevice` |

pub mod async_copy;
pub mod atomic;
pub mod barrier;
pub mod cluster;
pub mod control;
pub mod fence;
pub mod fp;
pub mod launch;
pub mod mbarrier;
pub mod memory;
pub mod mma;
pub mod mma_types;
pub mod print;
pub mod sreg;
pub mod tma;
pub mod warp;
pub mod wgmma;

// The `.approx` instructions computed on the CPU device as a GPU computes them (see `fp`).
#[cfg(not(target_arch = "nvptx64"))]
mod approx_host;
// What the host arms need beyond `crate::host` (the calling instruction's address).
#[cfg(not(target_arch = "nvptx64"))]
mod cpu;

pub use async_copy::*;
pub use atomic::*;
pub use barrier::*;
pub use cluster::*;
pub use control::*;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use cpu::mark_instruction;
pub use fence::*;
pub use fp::*;
pub use launch::*;
pub use mbarrier::*;
pub use memory::*;
pub use mma::*;
pub use mma_types::*;
pub use print::*;
pub use sreg::*;
pub use tma::*;
pub use warp::*;
pub use wgmma::*;
