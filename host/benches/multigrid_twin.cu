// C++ twin of `cohort bench multi-grid`: the barrier latency of NVIDIA's multi-device pattern
// (the `PeerGroup` of the conjugateGradientMultiDeviceCG sample, which replaced CUDA's removed
// multi-grid launch): a cooperative launch per GPU; sync = grid.sync(), then thread 0 of each
// grid exchanges an arrival flag in host-mapped memory (st.release.sys / ld.acquire.sys; grid 0
// waits for every flag, then clears them), then grid.sync() again. And plain grid.sync() on one
// GPU. Same launch configuration and timing method as the Rust side.
//
//   nvcc -O3 -arch=sm_90 -o multigrid_twin host/benches/multigrid_twin.cu
//   ./multigrid_twin --iters 20000 --reps 5 --threads 256     (blocks: one per SM)
//
// Prints `twin <kind> <gpus> <microseconds per sync>` for kind grid_sync (1 GPU) and
// multi_grid (1 GPU and every GPU); each launch's block marks are checked.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

struct MultiDeviceData {
    unsigned char *arrived;
    unsigned int numDevices;
    unsigned int deviceRank;
};

__device__ unsigned char load_arrived(unsigned char *arrived) {
    unsigned int result;
    asm volatile("ld.acquire.sys.global.u8 %0, [%1];" : "=r"(result) : "l"(arrived) : "memory");
    return result;
}

__device__ void store_arrived(unsigned char *arrived, unsigned char val) {
    unsigned int v = val;
    asm volatile("st.release.sys.global.u8 [%1], %0;" ::"r"(v), "l"(arrived) : "memory");
}

// NVIDIA's PeerGroup::sync.
__device__ void peer_sync(const MultiDeviceData &d, const cg::grid_group &grid) {
    grid.sync();
    if (grid.thread_rank() == 0) {
        if (d.deviceRank == 0) {
            for (unsigned i = 0; i < d.numDevices - 1; i++) {
                while (load_arrived(&d.arrived[i]) == 0) {
                }
            }
            for (unsigned i = 0; i < d.numDevices - 1; i++) {
                store_arrived(&d.arrived[i], 0);
            }
            __threadfence_system();
        } else {
            store_arrived(&d.arrived[d.deviceRank - 1], 1);
            while (load_arrived(&d.arrived[d.deviceRank - 1]) == 1) {
            }
        }
    }
    grid.sync();
}

__global__ void multi_sync_loop(MultiDeviceData d, unsigned iters, unsigned *marks) {
    cg::grid_group grid = cg::this_grid();
    unsigned k = 0;
    for (; k < iters; k++) peer_sync(d, grid);
    if (threadIdx.x == 0) marks[blockIdx.x] = k;
}

__global__ void grid_sync_loop(unsigned iters, unsigned *marks) {
    cg::grid_group grid = cg::this_grid();
    unsigned k = 0;
    for (; k < iters; k++) grid.sync();
    if (threadIdx.x == 0) marks[blockIdx.x] = k;
}

struct Dev {
    cudaStream_t stream;
    unsigned *marks;
    int blocks;
};

static unsigned char *g_flags;

// Seconds for one launch of `iters` syncs on the first `n` GPUs (wall clock, launch to finish).
static double run(std::vector<Dev> &devs, int n, bool multi, unsigned iters, int threads) {
    CK(cudaMemset(g_flags, 0, 64));
    auto t0 = std::chrono::steady_clock::now();
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        if (multi) {
            MultiDeviceData data{g_flags, (unsigned)n, (unsigned)d};
            void *args[] = {&data, &iters, &devs[d].marks};
            CK(cudaLaunchCooperativeKernel((void *)multi_sync_loop, devs[d].blocks, threads, args, 0, devs[d].stream));
        } else {
            void *args[] = {&iters, &devs[d].marks};
            CK(cudaLaunchCooperativeKernel((void *)grid_sync_loop, devs[d].blocks, threads, args, 0, devs[d].stream));
        }
    }
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamSynchronize(devs[d].stream));
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        std::vector<unsigned> m(devs[d].blocks);
        CK(cudaMemcpy(m.data(), devs[d].marks, m.size() * 4, cudaMemcpyDeviceToHost));
        for (unsigned v : m)
            if (v != iters) {
                fprintf(stderr, "GPU %d: a block reported %u syncs, expected %u\n", d, v, iters);
                exit(1);
            }
    }
    return s;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv) {
    unsigned iters = 20000;
    int reps = 5, threads = 256;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    }
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    std::vector<Dev> devs(n);
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, d));
        devs[d].blocks = p.multiProcessorCount;
        CK(cudaStreamCreateWithFlags(&devs[d].stream, cudaStreamNonBlocking));
        CK(cudaMalloc(&devs[d].marks, devs[d].blocks * 4));
        if (d == 0) printf("# %s, %d GPUs, %d blocks x %d threads per grid, %u syncs per launch\n", p.name, n, devs[d].blocks, threads, iters);
    }
    CK(cudaSetDevice(0));
    CK(cudaHostAlloc(&g_flags, 64, cudaHostAllocPortable | cudaHostAllocMapped));
    struct Case {
        const char *kind;
        int gpus;
        bool multi;
    };
    std::vector<Case> cases = {{"grid_sync", 1, false}, {"multi_grid", 1, true}};
    if (n > 1) cases.push_back({"multi_grid", n, true});
    for (auto &c : cases) {
        run(devs, c.gpus, c.multi, iters, threads);  // warm-up
        std::vector<double> base, full;
        for (int r = 0; r < reps; r++) {
            base.push_back(run(devs, c.gpus, c.multi, 0, threads));
            full.push_back(run(devs, c.gpus, c.multi, iters, threads));
        }
        double us = (median(full) - median(base)) / iters * 1e6;
        printf("twin %s %d %.4f\n", c.kind, c.gpus, us);
    }
    return 0;
}
