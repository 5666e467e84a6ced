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

// ---- Classic kernels (kernels-gpu/src/classic.rs): written as CUDA C++ users write them (int
// indices, sizes assumed multiples of the tile, no bounds checks), same algorithm, tile sizes
// and launch shape as the safe Rust. Parameters are all 8 bytes wide (launch_twin).

#define TILE 32
#define ROWS 8

// in is rows x cols, out is cols x rows; block 32x8, grid (cols/32, rows/32).
extern "C" __global__ void cpp_transpose_naive(const float* in, unsigned long long rows_, unsigned long long cols_, float* out) {
    int rows = (int)rows_, cols = (int)cols_;
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[x * rows + (y + j)] = in[(y + j) * cols + x];
}

extern "C" __global__ void cpp_transpose_tiled(const float* in, unsigned long long rows_, unsigned long long cols_, float* out) {
    __shared__ float tile[TILE][TILE + 1];
    int rows = (int)rows_, cols = (int)cols_;
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// C = A B, A m x k, B k x n; block 32x32, grid (n/32, m/32).
extern "C" __global__ void cpp_sgemm_tiled32(const float* A, const float* B, unsigned long long m_, unsigned long long n_, unsigned long long k_, float* C) {
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    int n = (int)n_, k = (int)k_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += 32) {
        As[ty][tx] = A[row * k + t + tx];
        Bs[ty][tx] = B[(t + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int q = 0; q < 32; ++q) acc += As[ty][q] * Bs[q][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

// 128x128 block tile, BK 8, 8x8 per thread, 256 threads (16x16); grid (n/128, m/128).
extern "C" __global__ void cpp_sgemm_128x128(const float* A, const float* B, unsigned long long m_, unsigned long long n_, unsigned long long k_, float* C) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][128];
    int n = (int)n_, k = (int)k_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int rank = ty * 16 + tx;
    int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
    int ar = rank / 8, ac = rank % 8, br = rank / 128, bc = rank % 128;
    float acc[8][8] = {};
    for (int t = 0; t < k; t += 8) {
#pragma unroll
        for (int i = 0; i < 4; ++i) As[ac][ar + 32 * i] = A[(m0 + ar + 32 * i) * k + t + ac];
#pragma unroll
        for (int i = 0; i < 4; ++i) Bs[br + 2 * i][bc] = B[(t + br + 2 * i) * n + n0 + bc];
        __syncthreads();
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            float a[8], b[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = As[q][ty * 8 + i];
#pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = Bs[q][tx * 8 + j];
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) C[(m0 + ty * 8 + i) * n + n0 + tx * 8 + j] = acc[i][j];
}

// One Jacobi step on an n x n grid (boundary copied); block 32x8, grid (n/32, n/8).
extern "C" __global__ void cpp_jacobi_step(const float* u, unsigned long long n_, float* out) {
    __shared__ float t[8 + 2][32 + 2];
    int n = (int)n_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int gx = blockIdx.x * 32 + tx, gy = blockIdx.y * 8 + ty;
    float c = u[gy * n + gx];
    t[ty + 1][tx + 1] = c;
    if (tx == 0) t[ty + 1][0] = gx > 0 ? u[gy * n + gx - 1] : 0.0f;
    if (tx == 31) t[ty + 1][33] = gx + 1 < n ? u[gy * n + gx + 1] : 0.0f;
    if (ty == 0) t[0][tx + 1] = gy > 0 ? u[(gy - 1) * n + gx] : 0.0f;
    if (ty == 7) t[9][tx + 1] = gy + 1 < n ? u[(gy + 1) * n + gx] : 0.0f;
    __syncthreads();
    bool boundary = gx == 0 || gy == 0 || gx + 1 >= n || gy + 1 >= n;
    out[gy * n + gx] = boundary ? c : 0.25f * (t[ty][tx + 1] + t[ty + 2][tx + 1] + t[ty + 1][tx] + t[ty + 1][tx + 2]);
}
