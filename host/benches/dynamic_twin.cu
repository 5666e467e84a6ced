// The CUDA C++ twin of `cohort bench dynamic`: the dynamic-parallelism article's recursive
// reductions (rewritten for CDP2, as the Rust kernels in kernels-gpu/dynamic are) and the cost
// of a device-side launch, timed the way the Rust side times them (events around the host
// launch on one stream, median of R repetitions; the input is restored before each one).
//
//   nvcc -O3 -arch=sm_90 -rdc=true -o dynamic_twin host/benches/dynamic_twin.cu -lcudadevrt
//   ./dynamic_twin [--reps 20] [--serial 4096] [--each 16384] [--device 0]
//
// Output, for `cohort bench dynamic` to parse (other lines start with `#`):
//   twin <key> <median ms> <check>
// keys: neighbored, nested, nested_tail, nested2 (2^20 ints, block 512; check = the sum),
// serial_ff, serial_tail (one thread launches --serial children; check = refusals),
// each_ff, each_tail (--each threads launch one child each; check = refusals).
// The pending-launch limit is set to 65536, as the Rust side sets it.
// Exit status: 0, or 1 on a CUDA error or a bad argument.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "dynamic_twin: %s failed at %s:%d: %s\n", #call, __FILE__,     \
                    __LINE__, cudaGetErrorString(err_));                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// --- the reductions (as kernels-gpu/dynamic/src/reduce.rs) ---------------------------------

__global__ void reduce_neighbored(int *data, int *out) {
    unsigned tid = threadIdx.x, b = blockDim.x;
    int *idata = data + blockIdx.x * b;
    for (unsigned stride = 1; stride < b; stride *= 2) {
        if (tid % (2 * stride) == 0) idata[tid] += idata[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = idata[0];
}

__global__ void reduce_nested(int *data, int *out, unsigned size) {
    unsigned tid = threadIdx.x, bid = blockIdx.x;
    int *idata = data + bid * blockDim.x;
    if (size == 2) {
        if (tid == 0) out[bid] = idata[0] + idata[1];
        return;
    }
    unsigned half = size / 2;
    if (tid < half) idata[tid] += idata[tid + half];
    __syncthreads();
    if (tid == 0) {
        reduce_nested<<<1, half / 2, 0, cudaStreamFireAndForget>>>(idata, out + bid, half);
        if (cudaGetLastError() != cudaSuccess) out[bid] = -2147483647 - 1;
    }
}

__global__ void reduce_nested_tail(int *data, int *out, unsigned size) {
    unsigned tid = threadIdx.x, bid = blockIdx.x;
    int *idata = data + bid * blockDim.x;
    if (size == 2) {
        if (tid == 0) out[bid] = idata[0] + idata[1];
        return;
    }
    unsigned half = size / 2;
    if (tid < half) idata[tid] += idata[tid + half];
    if (tid == 0) {
        reduce_nested_tail<<<1, half / 2, 0, cudaStreamTailLaunch>>>(idata, out + bid, half);
        if (cudaGetLastError() != cudaSuccess) out[bid] = -2147483647 - 1;
    }
}

__global__ void reduce_nested2(int *data, int *out, unsigned stride, unsigned dim) {
    unsigned tid = threadIdx.x, bid = blockIdx.x;
    int *idata = data + bid * dim;
    if (stride == 1) {
        if (tid == 0) out[bid] = idata[0] + idata[1];
        return;
    }
    idata[tid] += idata[tid + stride];
    if (tid == 0 && bid == 0) {
        reduce_nested2<<<gridDim.x, stride / 2, 0, cudaStreamTailLaunch>>>(data, out, stride / 2, dim);
        if (cudaGetLastError() != cudaSuccess) out[0] = -2147483647 - 1;
    }
}

// --- launch cost (as kernels-gpu/dynamic/src/bench.rs) -------------------------------------

__global__ void noop() {}

__global__ void launch_serial(unsigned *refused, unsigned n, unsigned tail) {
    if (blockIdx.x * blockDim.x + threadIdx.x == 0) {
        for (unsigned i = 0; i < n; ++i) {
            if (tail == 0) noop<<<1, 32, 0, cudaStreamFireAndForget>>>();
            else noop<<<1, 32, 0, cudaStreamTailLaunch>>>();
            if (cudaGetLastError() != cudaSuccess) atomicAdd(refused, 1u);
        }
    }
}

__global__ void launch_each(unsigned *refused, unsigned tail) {
    if (tail == 0) noop<<<1, 32, 0, cudaStreamFireAndForget>>>();
    else noop<<<1, 32, 0, cudaStreamTailLaunch>>>();
    if (cudaGetLastError() != cudaSuccess) atomicAdd(refused, 1u);
}

// --- timing --------------------------------------------------------------------------------

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5f * (v[m - 1] + v[m]);
}

int main(int argc, char **argv) {
    int reps = 20, device = 0;
    unsigned serial = 4096, each = 16384;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!v) { fprintf(stderr, "dynamic_twin: %s needs a value\n", a); return 1; }
        if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--serial")) serial = (unsigned)atoi(v);
        else if (!strcmp(a, "--each")) each = (unsigned)atoi(v);
        else if (!strcmp(a, "--device")) device = atoi(v);
        else { fprintf(stderr, "dynamic_twin: unknown option %s\n", a); return 1; }
        ++i;
    }
    if (reps < 1 || each % 256 != 0) { fprintf(stderr, "dynamic_twin: bad --reps or --each\n"); return 1; }
    CHECK(cudaSetDevice(device));
    CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 65536));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, device));
    printf("# %s, nvcc %d.%d\n", prop.name, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);

    const unsigned N = 1u << 20, B = 512, G = N / B;
    std::vector<int> host(N);
    for (unsigned i = 0; i < N; ++i) host[i] = (int)(i % 7) - 3 + ((i % 5 == 0) ? 2 : 0);
    long long want = 0;
    for (int v : host) want += v;
    int *pristine, *data, *out;
    unsigned *refused;
    CHECK(cudaMalloc(&pristine, N * sizeof(int)));
    CHECK(cudaMalloc(&data, N * sizeof(int)));
    CHECK(cudaMalloc(&out, G * sizeof(int)));
    CHECK(cudaMalloc(&refused, sizeof(unsigned)));
    CHECK(cudaMemcpy(pristine, host.data(), N * sizeof(int), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));

    const char *keys[] = {"neighbored", "nested", "nested_tail", "nested2",
                          "serial_ff", "serial_tail", "each_ff", "each_tail"};
    for (int k = 0; k < 8; ++k) {
        std::vector<float> ms;
        long long check = 0;
        for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
            CHECK(cudaMemcpyAsync(data, pristine, N * sizeof(int), cudaMemcpyDeviceToDevice, s));
            CHECK(cudaMemsetAsync(out, 0, G * sizeof(int), s));
            CHECK(cudaMemsetAsync(refused, 0, sizeof(unsigned), s));
            CHECK(cudaEventRecord(t0, s));
            switch (k) {
                case 0: reduce_neighbored<<<G, B, 0, s>>>(data, out); break;
                case 1: reduce_nested<<<G, B, 0, s>>>(data, out, B); break;
                case 2: reduce_nested_tail<<<G, B, 0, s>>>(data, out, B); break;
                case 3: reduce_nested2<<<G, B / 2, 0, s>>>(data, out, B / 2, B); break;
                case 4: launch_serial<<<1, 32, 0, s>>>(refused, serial, 0); break;
                case 5: launch_serial<<<1, 32, 0, s>>>(refused, serial, 1); break;
                case 6: launch_each<<<each / 256, 256, 0, s>>>(refused, 0); break;
                case 7: launch_each<<<each / 256, 256, 0, s>>>(refused, 1); break;
            }
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(t1, s));
            CHECK(cudaStreamSynchronize(s));
            float t;
            CHECK(cudaEventElapsedTime(&t, t0, t1));
            if (r > 0) ms.push_back(t);
            if (k < 4) {
                std::vector<int> parts(G);
                CHECK(cudaMemcpy(parts.data(), out, G * sizeof(int), cudaMemcpyDeviceToHost));
                long long sum = 0;
                for (int v : parts) sum += v;
                if (sum != want) {
                    fprintf(stderr, "dynamic_twin: %s gave %lld, expected %lld\n", keys[k], sum, want);
                    return 1;
                }
                check = sum;
            } else {
                unsigned n;
                CHECK(cudaMemcpy(&n, refused, sizeof n, cudaMemcpyDeviceToHost));
                check = n;
            }
        }
        printf("twin %s %.6f %lld\n", keys[k], median(ms), check);
    }
    return 0;
}
