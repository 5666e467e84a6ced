// CUDA C++ twins of cohort-kernels' benchmark kernels (kernels-gpu/src/bench.rs): the same
// algorithm with the same parameter ABI (a Rust `&[T]` is a pointer and a length), compiled by
// `cohort bench` with NVRTC (or `nvcc -ptx -arch=sm_90`) and launched side by side.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cpp_reduce_u32(const unsigned* data, unsigned long long n, unsigned* total, unsigned long long) {
    unsigned acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += data[i];
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    acc = cg::reduce(tile, acc, cg::plus<unsigned>());
    if (tile.thread_rank() == 0) atomicAdd(total, acc);
}

extern "C" __global__ void cpp_reduce_u32_vec4(const uint4* data, unsigned long long n, unsigned* total, unsigned long long) {
    unsigned acc = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint4 v = data[i];
        acc += v.x + v.y + v.z + v.w;
    }
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    acc = cg::reduce(tile, acc, cg::plus<unsigned>());
    if (tile.thread_rank() == 0) atomicAdd(total, acc);
}

extern "C" __global__ void cpp_scan_u32(const unsigned* data, unsigned long long n, unsigned* out, unsigned long long) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = i < n ? data[i] : 0;
    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    unsigned s = cg::inclusive_scan(tile, v);
    if (i < n) out[i] = s;
}

extern "C" __global__ void cpp_grid_sync(unsigned iters, unsigned* marks, unsigned long long) {
    cg::grid_group grid = cg::this_grid();
    unsigned k = 0;
    for (; k < iters; ++k) grid.sync();
    if (threadIdx.x == 0) marks[grid.block_rank()] = k;
}
