// CUDA C++ twins of cohort-kernels' cluster kernels (kernels-gpu/src/clusters.rs), for
// `cohort bench clusters`. Build: `nvcc -ptx -O3 -arch=sm_90a host/benches/cluster_twins.cu -o
// cluster_twins.ptx` and pass `--twins-ptx cluster_twins.ptx` (else the bench compiles this file
// with NVRTC for sm_90). Parameters follow the Rust kernels' order: a `&[T]` is a pointer and a
// length, a `u32` a 64-bit integer here, a `DisjointSlice` a pointer and a length; every one 8
// bytes wide, as `cohort bench`'s `launch_twin` passes them. The cluster size is compiled in
// (`__cluster_dims__`, one kernel per size: `_c1` … `_c8`); the Rust side chooses it at launch
// (cuLaunchKernelEx's cluster attribute). Each cluster kernel does the two cluster.sync() calls
// the Programming Guide's histogram does: the Rust kernels' entry makes the same two barriers
// (plus its exit protocol) by itself.

#include <cooperative_groups.h>
namespace cg = cooperative_groups;
typedef unsigned long long u64;

// The Programming Guide's clusterHist_kernel: bins_per_block = nbins / cluster size, in dynamic
// shared memory; values at or past nbins count in the last bin.
template <int CS>
__device__ __forceinline__ void cluster_hist(const unsigned* __restrict__ input, u64 n, u64 nbins_, unsigned* bins) {
    extern __shared__ unsigned smem[];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned nbins = (unsigned)nbins_;
    const unsigned per_block = nbins / CS;
    for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) smem[i] = 0;
    cluster.sync();
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)blockDim.x * gridDim.x) {
        unsigned bin = min(input[i], nbins - 1);
        unsigned* dst = cluster.map_shared_rank(smem, bin / per_block);
        atomicAdd(dst + bin % per_block, 1u);
    }
    cluster.sync();
    unsigned* lbins = bins + cluster.block_rank() * per_block;
    for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) atomicAdd(&lbins[i], smem[i]);
}

// One block's shared histogram of all bins (no clusters).
extern "C" __global__ void cpp_block_hist(const unsigned* __restrict__ input, u64 n, u64 nbins_, unsigned* bins, u64) {
    extern __shared__ unsigned smem[];
    const unsigned nbins = (unsigned)nbins_;
    for (unsigned i = threadIdx.x; i < nbins; i += blockDim.x) smem[i] = 0;
    __syncthreads();
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)blockDim.x * gridDim.x)
        atomicAdd(&smem[min(input[i], nbins - 1)], 1u);
    __syncthreads();
    for (unsigned i = threadIdx.x; i < nbins; i += blockDim.x) atomicAdd(&bins[i], smem[i]);
}

// A cluster reduction: block reduce (warp shuffles, then the first warp), cluster.sync, block 0
// of the cluster adds the other blocks' partial sums from their shared memory.
template <int CS>
__device__ __forceinline__ void cluster_sum(const unsigned* __restrict__ input, u64 n, unsigned* out) {
    __shared__ unsigned warps[32];
    __shared__ unsigned partial;
    cg::cluster_group cluster = cg::this_cluster();
    unsigned v = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)blockDim.x * gridDim.x) v += input[i];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x + 31) / 32 ? warps[lane] : 0;
        for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) partial = v;
    }
    cluster.sync();
    if (cluster.thread_rank() == 0) {
        unsigned sum = 0;
        for (unsigned r = 0; r < CS; r++) sum += *cluster.map_shared_rank(&partial, r);
        atomicAdd(out, sum);
    }
    cluster.sync();  // no block leaves while block 0 reads its partial
}

// out[i] = in[i-1] + 2 in[i] + in[i+1] (0 past the ends); blocks of 512, halo from the
// neighbour blocks of the cluster, from global memory at its ends.
template <int CS>
__device__ __forceinline__ void cluster_stencil3(const unsigned* __restrict__ in, u64 len, unsigned* __restrict__ out) {
    __shared__ unsigned tile[512];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned t = threadIdx.x, nb = blockDim.x;
    const u64 i = blockIdx.x * (u64)blockDim.x + t;
    const unsigned here = i < len ? in[i] : 0;
    tile[t] = here;
    cluster.sync();
    if (i < len) {
        const unsigned me = cluster.block_rank();
        unsigned left, right;
        if (t > 0) left = tile[t - 1];
        else if (me > 0) left = cluster.map_shared_rank(tile, me - 1)[nb - 1];
        else left = i > 0 ? in[i - 1] : 0;
        if (t + 1 < nb) right = tile[t + 1];
        else if (me + 1 < CS) right = cluster.map_shared_rank(tile, me + 1)[0];
        else right = i + 1 < len ? in[i + 1] : 0;
        out[i] = left + 2 * here + right;
    }
    cluster.sync();  // no block leaves while a neighbour reads its tile
}

#define CLUSTER_TWINS(CS)                                                                                        \
    extern "C" __global__ void __cluster_dims__(CS, 1, 1)                                                      \
        cpp_cluster_hist_c##CS(const unsigned* __restrict__ input, u64 n, u64 nbins, unsigned* bins, u64) {       \
        cluster_hist<CS>(input, n, nbins, bins);                                                               \
    }                                                                                                          \
    extern "C" __global__ void __cluster_dims__(CS, 1, 1)                                                      \
        cpp_cluster_sum_c##CS(const unsigned* __restrict__ input, u64 n, unsigned* out, u64) {                   \
        cluster_sum<CS>(input, n, out);                                                                        \
    }                                                                                                          \
    extern "C" __global__ void __cluster_dims__(CS, 1, 1)                                                      \
        cpp_cluster_stencil3_c##CS(const unsigned* __restrict__ in, u64 len, unsigned* __restrict__ out, u64) { \
        cluster_stencil3<CS>(in, len, out);                                                                    \
    }

CLUSTER_TWINS(1)
CLUSTER_TWINS(2)
CLUSTER_TWINS(4)
CLUSTER_TWINS(8)
