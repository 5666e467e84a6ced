// The C++ twin of `cohort bench p2p`: peer copy bandwidth between every pair of GPUs (and each
// GPU to itself) with cudaMemcpyPeerAsync, unidirectional and bidirectional, peer access off
// and then on, exactly as Cohort's side measures it: `reps` copies between two events per
// block, the median block; bidirectional copies src -> dst on a stream of src and dst -> src on
// a stream of dst, joined by events. Every copy's data is checked on the host.
//
//   nvcc -O3 -arch=sm_90 -o p2p_twin host/benches/p2p_twin.cu
//   ./p2p_twin --mib 256 --reps 10 --blocks 5
//
// Prints `twin <uni_off|bidi_off|uni_on|bidi_on> <src> <dst> <GB/s>` lines (GB = 1e9 bytes).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static std::vector<uint32_t> pattern(size_t n, uint32_t tag) {
    std::vector<uint32_t> v(n);
    uint32_t r = tag * 0x9e3779b9u;
    unsigned s = tag % 31;
    uint32_t mix = s ? (r << s) | (r >> (32 - s)) : r;
    for (size_t e = 0; e < n; ++e) v[e] = (uint32_t)e * 2654435761u ^ mix;
    return v;
}

static uint32_t tag(int src, int dst, int dir) { return (uint32_t)((src * 64 + dst) * 4 + dir + 1); }

static void check(const char* what, int dev, const uint32_t* d, const std::vector<uint32_t>& want) {
    std::vector<uint32_t> got(want.size());
    CK(cudaSetDevice(dev));
    CK(cudaMemcpy(got.data(), d, want.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i]) {
            fprintf(stderr, "%s: element %zu: got %#x, want %#x\n", what, i, got[i], want[i]);
            exit(1);
        }
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Pair {
    double uni, bidi;
};

static Pair measure(int src, int dst, size_t n, int reps, int blocks) {
    size_t bytes = n * 4;
    std::vector<uint32_t> ab = pattern(n, tag(src, dst, 0)), ba = pattern(n, tag(src, dst, 1));
    uint32_t *a, *b, *b2, *c, *d;
    cudaStream_t ss, sd;
    cudaEvent_t e0, e1, join;
    CK(cudaSetDevice(src));
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&d, bytes));
    CK(cudaMemset(d, 0, bytes));
    CK(cudaMemcpy(a, ab.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaStreamCreate(&ss));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaSetDevice(dst));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&b2, bytes));
    CK(cudaMalloc(&c, bytes));
    CK(cudaMemset(b, 0, bytes));
    CK(cudaMemset(b2, 0, bytes));
    CK(cudaMemcpy(c, ba.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaStreamCreate(&sd));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CK(cudaDeviceSynchronize());

    CK(cudaSetDevice(src));
    CK(cudaMemcpyPeerAsync(b, dst, a, src, bytes, ss));  // warm-up
    std::vector<double> uni, bidi;
    for (int k = 0; k < blocks; ++k) {
        CK(cudaEventRecord(e0, ss));
        for (int r = 0; r < reps; ++r) CK(cudaMemcpyPeerAsync(b, dst, a, src, bytes, ss));
        CK(cudaEventRecord(e1, ss));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        uni.push_back((double)bytes * reps / (ms * 1e-3) / 1e9);
    }
    check("uni", dst, b, ab);

    CK(cudaSetDevice(src));
    CK(cudaMemcpyPeerAsync(b2, dst, a, src, bytes, ss));
    CK(cudaMemcpyPeerAsync(d, src, c, dst, bytes, sd));
    for (int k = 0; k < blocks; ++k) {
        CK(cudaEventRecord(e0, ss));
        CK(cudaStreamWaitEvent(sd, e0, 0));
        for (int r = 0; r < reps; ++r) {
            CK(cudaMemcpyPeerAsync(b2, dst, a, src, bytes, ss));
            CK(cudaMemcpyPeerAsync(d, src, c, dst, bytes, sd));
        }
        CK(cudaEventRecord(join, sd));
        CK(cudaStreamWaitEvent(ss, join, 0));
        CK(cudaEventRecord(e1, ss));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        bidi.push_back(2.0 * bytes * reps / (ms * 1e-3) / 1e9);
    }
    check("bidi src->dst", dst, b2, ab);
    check("bidi dst->src", src, d, ba);

    CK(cudaSetDevice(src));
    CK(cudaFree(a));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(ss));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaSetDevice(dst));
    CK(cudaFree(b));
    CK(cudaFree(b2));
    CK(cudaFree(c));
    CK(cudaStreamDestroy(sd));
    CK(cudaEventDestroy(join));
    return {median(uni), median(bidi)};
}

int main(int argc, char** argv) {
    int mib = 256, reps = 10, blocks = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mib")) mib = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--blocks")) blocks = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        fprintf(stderr, "needs 2 GPUs (found %d)\n", count);
        return 2;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, i));
        printf("# device %d: %s\n", i, p.name);
    }
    size_t n = (size_t)mib * (1 << 20) / 4;
    for (int on = 0; on < 2; ++on) {
        if (on)
            for (int i = 0; i < count; ++i)
                for (int j = 0; j < count; ++j) {
                    int can = 0;
                    if (i == j) continue;
                    CK(cudaDeviceCanAccessPeer(&can, i, j));
                    if (!can) continue;
                    CK(cudaSetDevice(i));
                    cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
                    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
                    else CK(e);
                }
        for (int s = 0; s < count; ++s)
            for (int d = 0; d < count; ++d) {
                Pair p = measure(s, d, n, reps, blocks);
                printf("twin uni_%s %d %d %.3f\n", on ? "on" : "off", s, d, p.uni);
                printf("twin bidi_%s %d %d %.3f\n", on ? "on" : "off", s, d, p.bidi);
                fflush(stdout);
            }
    }
    return 0;
}
