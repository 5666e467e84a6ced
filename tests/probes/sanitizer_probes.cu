// Build and run on a GPU machine: nvcc -O3 -arch=sm_90 -std=c++17 -o probes tests/probes/sanitizer_probes.cu;
// compute-sanitizer --tool racecheck ./probes 0; compute-sanitizer --tool synccheck ./probes 2 (and 3).
// Measured on an H200 (CUDA 13.0): probe 0 racecheck 1 hazard; probe 2 synccheck 5248 "Divergent thread(s) in block";
// probe 3 synccheck 0 errors; probe 1 (a spin lock taken by all 256 threads) did not finish in 20 s even without a tool.
// Sanitizer probes in CUDA C++ (issue 31): does racecheck flag (a) block-scope atomic release stores from many
// threads to one shared word, (b) relaxed atomics inside a spin-lock critical section on shared memory; does
// synccheck flag (c) a non-inlined check with non-aligned barrier.sync + barrier.red.or after a thread-0-only
// grid-barrier wait (what Cohort's checked-mode block_at does), vs (d) the same with __syncthreads.
#include <cuda/atomic>
#include <cstdio>
__global__ void release_stores(unsigned* out) {
    __shared__ unsigned cells[4];
    if (threadIdx.x < 4) cells[threadIdx.x] = 0;
    __syncthreads();
    cuda::atomic_ref<unsigned, cuda::thread_scope_block> c(cells[threadIdx.x % 4]);
    c.store(threadIdx.x, cuda::memory_order_release);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = cells[0] + cells[1];
}
__global__ void lock_section(unsigned* out) {
    __shared__ unsigned cells[2];
    if (threadIdx.x == 0) { cells[0] = 0; cells[1] = 0; }
    __syncthreads();
    cuda::atomic_ref<unsigned, cuda::thread_scope_block> lock(cells[0]), c(cells[1]);
    while (lock.exchange(1, cuda::memory_order_acquire)) {}
    c.store(c.load(cuda::memory_order_relaxed) + 1, cuda::memory_order_relaxed);
    lock.store(0, cuda::memory_order_release);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = c.load(cuda::memory_order_relaxed);
}
__device__ __noinline__ int check_at(unsigned* cell, unsigned call) {
    if (threadIdx.x == 0) cell[0] = call;
    asm volatile("barrier.sync 0;" ::: "memory");
    int differs = cell[0] != call, any;
    asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; barrier.red.or.pred q, 0, p; selp.s32 %0, 1, 0, q; }" : "=r"(any) : "r"(differs) : "memory");
    return any;
}
template <bool ALIGNED> __global__ void grid_rounds(unsigned* flag, unsigned* out) {
    __shared__ unsigned cell[1];
    unsigned acc = 0;
    for (int k = 0; k < 4; k++) {
        acc += check_at(cell, k + 1);
        if (ALIGNED) __syncthreads(); else asm volatile("barrier.sync 0;" ::: "memory");
        if (threadIdx.x == 0) {
            atomicAdd(flag, 1);
            while (atomicAdd(flag, 0) < (k + 1) * gridDim.x) __nanosleep(100);
        }
        if (ALIGNED) __syncthreads(); else asm volatile("barrier.sync 0;" ::: "memory");
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
int main(int argc, char** argv) {
    int which = argc > 1 ? atoi(argv[1]) : 0;
    unsigned *out, *flag; cudaMalloc(&out, 1 << 20); cudaMalloc(&flag, 4); cudaMemset(flag, 0, 4);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    void* args[] = {&flag, &out};
    if (which == 0) release_stores<<<4, 256>>>(out);
    if (which == 1) lock_section<<<4, 256>>>(out);
    if (which == 2) cudaLaunchCooperativeKernel((void*)grid_rounds<false>, sms, 256, args);
    if (which == 3) cudaLaunchCooperativeKernel((void*)grid_rounds<true>, sms, 256, args);
    cudaError_t e = cudaDeviceSynchronize();
    printf("probe %d: %s\n", which, cudaGetErrorString(e));
    return e != cudaSuccess;
}
