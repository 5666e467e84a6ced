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

// ---- the atomics-and-mutex workloads (kernels-gpu/src/atomics.rs) ----

extern "C" __global__ void cpp_histogram_global(const unsigned char* text, unsigned long long n, unsigned* bins, unsigned long long) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[text[i] & 127], 1u);
}

extern "C" __global__ void cpp_histogram_shared(const unsigned char* text, unsigned long long n, unsigned* bins, unsigned long long) {
    __shared__ unsigned local[128];
    for (unsigned b = threadIdx.x; b < 128; b += blockDim.x) local[b] = 0;
    __syncthreads();
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[text[i] & 127], 1u);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 128; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__device__ float block_dot(const float* a, const float* b, unsigned long long n) {
    __shared__ float cache[1024];
    float temp = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) temp += a[i] * b[i];
    cache[threadIdx.x] = temp;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s != 0; s /= 2) {
        if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
        __syncthreads();
    }
    return cache[0];
}

extern "C" __global__ void cpp_dot_partial(const float* a, unsigned long long na, const float* b, unsigned long long nb, float* partial, unsigned long long) {
    float s = block_dot(a, b, na < nb ? na : nb);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// The tutorial's mutex: lock with atomicCAS then __threadfence, unlock with __threadfence then
// atomicExch (the fences are what make it correct without acquire/release atomics).
extern "C" __global__ void cpp_dot_mutex(int* mutex, unsigned long long, const float* a, unsigned long long na, const float* b, unsigned long long nb, float* c, unsigned long long) {
    float s = block_dot(a, b, na < nb ? na : nb);
    if (threadIdx.x == 0) {
        while (atomicCAS(mutex, 0, 1) != 0) {}
        __threadfence();
        *(volatile float*)c = *(volatile float*)c + s;
        __threadfence();
        atomicExch(mutex, 0);
    }
}
