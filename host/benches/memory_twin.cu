// The CUDA C++ twin of `cohort bench alloc`, `cohort bench pdl` and `cohort bench managed`:
// the same loops, kernels and timing as the Rust side (host/src/bench/{alloc,pdl,managed}.rs).
//
//   nvcc -O3 -arch=sm_90 -o memory_twin host/benches/memory_twin.cu
//   ./memory_twin alloc   [--bytes 1048576] [--iters 2000] [--reps 10] [--device 0]
//   ./memory_twin pdl     [--n 65536] [--kernels 256] [--reps 20] [--device 0]
//   ./memory_twin managed [--n 16777216] [--reps 10] [--device 0]
//
// alloc: N iterations of allocate -> fill kernel -> free on one non-blocking stream, with
//   cudaMalloc/cudaFree ("malloc"), cudaMallocAsync/cudaFreeAsync from the device's default
//   pool (release threshold 0, "async_default"), and cudaMallocFromPoolAsync from a pool of
//   its own with a release threshold of UINT64_MAX ("async_pool"); each free-running ("free":
//   one synchronize at the end) and synchronizing every iteration ("sync"). Wall time per
//   iteration, median of the rounds. Each round's last buffer is checked.
// pdl: a chain of K SAXPYs (y += a * x) on one stream: the plain kernel with <<<>>> ("plain"),
//   the dependent kernel (cudaGridDependencySynchronize(), then
//   cudaTriggerProgrammaticLaunchCompletion(), then the SAXPY) with <<<>>> ("dependent"), and
//   the dependent kernel with cudaLaunchKernelEx + cudaLaunchAttributeProgrammaticStreamSerialization
//   ("programmatic"). "stream": launched one by one behind a gate kernel that holds the stream
//   until all K are enqueued, timed with events from the gate's end; "graph": captured once,
//   replayed. GPU time per kernel, median of the repetitions; y checked after each variant.
// managed: the Cooperative Groups blog's program: n ints of 1 in cudaMallocManaged memory
//   written by the host, sum_kernel_block (int4 thread sums, a shared-memory tree over the
//   block, one atomicAdd per block), the sum read by the host; without prefetches (pages
//   migrate on demand) and with cudaMemPrefetchAsync to the device before the kernel and of
//   the sum to the host after. The kernel's time (events) and the whole round's (host wall
//   clock: fill, kernel, read), median of the repetitions; every sum checked.
//
// Output: `twin <key> <value>` lines for the Rust side to parse (others start with `#`).
// Exit status: 0, or 1 on a CUDA error, a wrong result or a bad argument.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "memory_twin: %s failed at %s:%d: %s\n", #call, __FILE__,      \
                    __LINE__, cudaGetErrorString(err_));                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

static double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

// --- alloc ----------------------------------------------------------------------------------

// As kernels-gpu/src/memory.rs `alloc_bench_fill`.
__global__ void alloc_bench_fill(float *out, size_t n, float v) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}

static int run_alloc(size_t bytes, int iters, int reps) {
    size_t n = bytes / sizeof(float);
    unsigned blocks = (unsigned)((n + 255) / 256);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int device;
    CHECK(cudaGetDevice(&device));
    cudaMemPool_t def, own;
    CHECK(cudaDeviceGetDefaultMemPool(&def, device));
    uint64_t zero = 0, all = UINT64_MAX;
    CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &zero));
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    CHECK(cudaMemPoolCreate(&own, &props));
    CHECK(cudaMemPoolSetAttribute(own, cudaMemPoolAttrReleaseThreshold, &all));
    float *check;
    CHECK(cudaMalloc(&check, bytes));
    std::vector<float> host(n);
    const char *ways[] = {"malloc", "async_default", "async_pool"};
    for (int sync = 0; sync < 2; ++sync) {
        for (int w = 0; w < 3; ++w) {
            std::vector<double> per_iter;
            for (int r = 0; r < reps + 1; ++r) {  // the first round is a warm-up
                int count = r == 0 ? std::min(iters, 50) : iters;
                double t0 = now_us();
                for (int i = 0; i < count; ++i) {
                    float *p;
                    if (w == 0) CHECK(cudaMalloc(&p, bytes));
                    else if (w == 1) CHECK(cudaMallocAsync((void **)&p, bytes, s));
                    else CHECK(cudaMallocFromPoolAsync((void **)&p, bytes, own, s));
                    alloc_bench_fill<<<blocks, 256, 0, s>>>(p, n, (float)i);
                    if (i == count - 1) CHECK(cudaMemcpyAsync(check, p, bytes, cudaMemcpyDeviceToDevice, s));
                    if (w == 0) CHECK(cudaFree(p));
                    else CHECK(cudaFreeAsync(p, s));
                    if (sync) CHECK(cudaStreamSynchronize(s));
                }
                CHECK(cudaStreamSynchronize(s));
                double us = (now_us() - t0) / count;
                if (r > 0) per_iter.push_back(us);
                CHECK(cudaMemcpy(host.data(), check, bytes, cudaMemcpyDeviceToHost));
                for (size_t j = 0; j < n; ++j) {
                    if (host[j] != (float)(count - 1)) {
                        fprintf(stderr, "memory_twin: alloc %s: element %zu is %g, expected %d\n", ways[w], j,
                                host[j], count - 1);
                        return 1;
                    }
                }
            }
            printf("twin alloc_%s_%s_us %.4f\n", ways[w], sync ? "sync" : "free", median(per_iter));
        }
    }
    CHECK(cudaFree(check));
    CHECK(cudaMemPoolDestroy(own));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

// --- pdl ------------------------------------------------------------------------------------

// As `chain_saxpy`.
__global__ void chain_saxpy(const float *x, size_t nx, float *y, size_t ny, float a) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx && i < ny) y[i] += a * x[i];
}

// As `chain_saxpy_dependent` (#[kernel(dependent)]: the wait comes first).
__global__ void chain_saxpy_dependent(const float *x, size_t nx, float *y, size_t ny, float a) {
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nx && i < ny) y[i] += a * x[i];
}

// As `pdl_gate`.
__global__ void pdl_gate(unsigned *flag, size_t n, unsigned long long ns) {
    unsigned long long start, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - start < ns);
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) flag[i] = 1;
}

static void launch_chain(int variant, cudaStream_t s, int kernels, unsigned blocks, const float *x, float *y,
                         size_t n) {
    for (int k = 0; k < kernels; ++k) {
        if (variant == 0) {
            chain_saxpy<<<blocks, 256, 0, s>>>(x, n, y, n, 1.0f);
        } else if (variant == 1) {
            chain_saxpy_dependent<<<blocks, 256, 0, s>>>(x, n, y, n, 1.0f);
        } else {
            cudaLaunchConfig_t config = {};
            config.gridDim = dim3(blocks);
            config.blockDim = dim3(256);
            config.stream = s;
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr[0].val.programmaticStreamSerializationAllowed = 1;
            config.attrs = attr;
            config.numAttrs = 1;
            CHECK(cudaLaunchKernelEx(&config, chain_saxpy_dependent, x, n, y, n, 1.0f));
        }
    }
    CHECK(cudaGetLastError());
}

static int run_pdl(size_t n, int kernels, int reps) {
    unsigned blocks = (unsigned)((n + 255) / 256);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x, *y;
    unsigned *flag;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&flag, sizeof(unsigned)));
    std::vector<float> ones(n, 1.0f), host(n);
    CHECK(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    // Long enough for the host to enqueue every launch before the GPU reaches them.
    unsigned long long gate_ns = std::max(2000000ull, (unsigned long long)kernels * 8000ull);
    const char *names[] = {"plain", "dependent", "programmatic"};
    for (int graph = 0; graph < 2; ++graph) {
        for (int v = 0; v < 3; ++v) {
            CHECK(cudaMemsetAsync(y, 0, n * sizeof(float), s));
            cudaGraphExec_t exec = nullptr;
            if (graph) {
                cudaGraph_t g;
                CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                launch_chain(v, s, kernels, blocks, x, y, n);
                CHECK(cudaStreamEndCapture(s, &g));
                CHECK(cudaGraphInstantiate(&exec, g, 0));
                CHECK(cudaGraphDestroy(g));
            }
            std::vector<double> per_kernel;
            for (int r = 0; r < reps + 2; ++r) {  // two warm-ups
                if (graph) {
                    CHECK(cudaEventRecord(e0, s));
                    CHECK(cudaGraphLaunch(exec, s));
                } else {
                    pdl_gate<<<1, 1, 0, s>>>(flag, 1, gate_ns);
                    CHECK(cudaEventRecord(e0, s));
                    launch_chain(v, s, kernels, blocks, x, y, n);
                }
                CHECK(cudaEventRecord(e1, s));
                CHECK(cudaEventSynchronize(e1));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, e0, e1));
                if (r >= 2) per_kernel.push_back(ms * 1000.0 / kernels);
            }
            CHECK(cudaMemcpy(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
            float want = (float)((reps + 2) * kernels);
            for (size_t j = 0; j < n; ++j) {
                if (host[j] != want) {
                    fprintf(stderr, "memory_twin: pdl %s: y[%zu] = %g, expected %g\n", names[v], j, host[j], want);
                    return 1;
                }
            }
            if (exec) CHECK(cudaGraphExecDestroy(exec));
            printf("twin pdl_%s_%s_us %.4f\n", names[v], graph ? "graph" : "stream", median(per_kernel));
        }
    }
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    CHECK(cudaFree(flag));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

// --- managed --------------------------------------------------------------------------------

// The blog's kernels, unchanged.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ int reduce_sum(cg::thread_group g, int *temp, int val) {
    int lane = g.thread_rank();
    // Each iteration halves the number of active threads
    // Each thread adds its partial sum[i] to sum[lane+i]
    for (int i = g.size() / 2; i > 0; i /= 2) {
        temp[lane] = val;
        g.sync();  // wait for all threads to store
        if (lane < i) val += temp[lane + i];
        g.sync();  // wait for all threads to load
    }
    return val;  // note: only thread 0 will return full sum
}

__device__ int thread_sum(int *input, int n) {
    int sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += blockDim.x * gridDim.x) {
        int4 in = ((int4 *)input)[i];
        sum += in.x + in.y + in.z + in.w;
    }
    return sum;
}

__global__ void sum_kernel_block(int *sum, int *input, int n) {
    int my_sum = thread_sum(input, n);
    extern __shared__ int temp[];
    auto g = cg::this_thread_block();
    int block_sum = reduce_sum(g, temp, my_sum);
    if (g.thread_rank() == 0) atomicAdd(sum, block_sum);
}

static void prefetch(const void *p, size_t bytes, int device, cudaStream_t s) {
#if CUDART_VERSION >= 13000
    cudaMemLocation loc = {};
    loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id = device < 0 ? 0 : device;
    CHECK(cudaMemPrefetchAsync(p, bytes, loc, 0, s));
#else
    CHECK(cudaMemPrefetchAsync(p, bytes, device < 0 ? cudaCpuDeviceId : device, s));
#endif
}

static int run_managed(int n, int reps) {
    int device;
    CHECK(cudaGetDevice(&device));
    int blockSize = 256;
    int nBlocks = (n + blockSize - 1) / blockSize;
    int sharedBytes = blockSize * sizeof(int);
    int *sum, *data;
    CHECK(cudaMallocManaged(&sum, sizeof(int)));
    CHECK(cudaMallocManaged(&data, n * sizeof(int)));
    cudaStream_t s = 0;  // the blog launches on the default stream
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int pf = 0; pf < 2; ++pf) {
        std::vector<double> kernel_ms, total_ms;
        for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
            double t0 = now_us();
            std::fill_n(data, n, 1);  // initialize data
            *sum = 0;
            if (pf) prefetch(data, n * sizeof(int), device, s);
            CHECK(cudaEventRecord(e0, s));
            sum_kernel_block<<<nBlocks, blockSize, sharedBytes, s>>>(sum, data, n);
            CHECK(cudaEventRecord(e1, s));
            if (pf) prefetch(sum, sizeof(int), -1, s);
            CHECK(cudaStreamSynchronize(s));
            int got = *sum;
            double total = (now_us() - t0) / 1000.0;
            float ms;
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (got != n) {
                fprintf(stderr, "memory_twin: managed: sum %d, expected %d\n", got, n);
                return 1;
            }
            if (r > 0) {
                kernel_ms.push_back(ms);
                total_ms.push_back(total);
            }
        }
        printf("twin managed_%skernel_ms %.4f\n", pf ? "prefetch_" : "", median(kernel_ms));
        printf("twin managed_%stotal_ms %.4f\n", pf ? "prefetch_" : "", median(total_ms));
    }
    CHECK(cudaFree(sum));
    CHECK(cudaFree(data));
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: memory_twin alloc|pdl|managed [options]\n");
        return 1;
    }
    std::string mode = argv[1];
    long long bytes = 1 << 20, n = -1;
    int iters = 2000, reps = -1, kernels = 256, device = 0;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!v) { fprintf(stderr, "memory_twin: %s needs a value\n", a); return 1; }
        if (!strcmp(a, "--bytes")) bytes = atoll(v);
        else if (!strcmp(a, "--n")) n = atoll(v);
        else if (!strcmp(a, "--iters")) iters = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--kernels")) kernels = atoi(v);
        else if (!strcmp(a, "--device")) device = atoi(v);
        else { fprintf(stderr, "memory_twin: unknown option %s\n", a); return 1; }
        ++i;
    }
    CHECK(cudaSetDevice(device));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, device));
    printf("# %s, nvcc %d.%d\n", prop.name, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
    if (mode == "alloc") {
        if (bytes < 4 || iters < 1) { fprintf(stderr, "memory_twin: bad --bytes or --iters\n"); return 1; }
        return run_alloc((size_t)bytes, iters, reps < 1 ? 10 : reps);
    }
    if (mode == "pdl") {
        if (kernels < 1) { fprintf(stderr, "memory_twin: bad --kernels\n"); return 1; }
        return run_pdl(n < 1 ? 65536 : (size_t)n, kernels, reps < 1 ? 20 : reps);
    }
    if (mode == "managed") {
        long long nn = n < 1 ? (1 << 24) : n;
        if (nn % 4 != 0 || nn > (1ll << 30)) { fprintf(stderr, "memory_twin: --n must be a multiple of 4\n"); return 1; }
        return run_managed((int)nn, reps < 1 ? 10 : reps);
    }
    fprintf(stderr, "memory_twin: unknown mode %s (alloc, pdl, managed)\n", mode.c_str());
    return 1;
}
