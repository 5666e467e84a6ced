// The CUDA C++ twin of `cohort bench overlap`: NVIDIA's "How to Overlap Data Transfers in
// CUDA C/C++" (Mark Harris) experiment, as the article runs it, timed the way the Rust side
// times it (events on the legacy default stream, median of R repetitions).
//
//   nvcc -O3 -arch=sm_90 -o overlap_twin host/benches/overlap_twin.cu
//   ./overlap_twin [--n 134217728] [--streams 4,8,16] [--reps 20] [--warmup 2] [--device 0]
//
// Three ways of moving an array of n floats through the kernel and back, with pinned host
// memory (cudaMallocHost) and blocking streams (cudaStreamCreate):
//   seq: one cudaMemcpy H2D, one kernel over the array, one cudaMemcpy D2H (legacy stream);
//   v1:  per stream, its chunk's H2D, kernel, D2H (cudaMemcpyAsync);
//   v2:  every chunk's H2D, then every chunk's kernel, then every chunk's D2H.
// and alone, on the whole array: the kernel, pinned H2D, pinned D2H.
//
// Output: one line per measurement, `twin <key> <streams> <value>`, for `cohort bench overlap`
// to parse (every other line starts with `#`):
//   twin kernel_ms 1 <ms>     twin h2d_ms 1 <ms>      twin d2h_ms 1 <ms>
//   twin h2d_gbs 1 <GB/s>     twin d2h_gbs 1 <GB/s>
//   twin seq_ms 1 <ms>        twin v1_ms <N> <ms>     twin v2_ms <N> <ms>
//   twin seq_err 1 <e>        twin v1_err <N> <e>     twin v2_err <N> <e>
// where an error is max |a[i] - (a0[i] + 1)| over the array after the last repetition, with
// a0[i] = (i % 1024) / 1024 (exact in float) the initial contents.
// Exit status: 0, or 1 on a CUDA error or a bad argument.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "overlap_twin: %s failed at %s:%d: %s\n", #call, __FILE__,     \
                    __LINE__, cudaGetErrorString(err_));                                   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// The article's kernel, unchanged.
__global__ void kernel(float *a, int offset) {
    int i = offset + threadIdx.x + blockIdx.x * blockDim.x;
    float x = (float)i;
    float s = sinf(x);
    float c = cosf(x);
    a[i] = a[i] + sqrtf(s * s + c * c);
}

static const int kBlockSize = 256;

static float initial(size_t i) { return (float)(i % 1024) / 1024.0f; }

static void reset(float *a, size_t n) {
    for (size_t i = 0; i < n; ++i) a[i] = initial(i);
}

static float max_error(const float *a, size_t n) {
    float e = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        float d = fabsf(a[i] - (initial(i) + 1.0f));
        if (std::isnan(d)) return d;
        e = std::max(e, d);
    }
    return e;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2.0;
}

struct Bench {
    size_t n;
    int reps, warmup;
    float *h_a, *d_a;
    cudaEvent_t start, stop;
    std::vector<cudaStream_t> streams;  // the largest count asked for; a run uses a prefix

    // Median milliseconds of `work`, bracketed by events on the legacy default stream (which
    // waits for, and is waited for by, every blocking stream). `reset_host` re-initializes
    // the pinned array before each run, untimed.
    template <class F>
    double time(bool reset_host, F work) {
        std::vector<double> t;
        for (int r = 0; r < warmup + reps; ++r) {
            if (reset_host) reset(h_a, n);
            CHECK(cudaEventRecord(start, 0));
            work();
            CHECK(cudaEventRecord(stop, 0));
            CHECK(cudaEventSynchronize(stop));
            float ms = 0.0f;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            if (r >= warmup) t.push_back(ms);
        }
        CHECK(cudaGetLastError());
        return median(t);
    }

    double sequential() {
        size_t bytes = n * sizeof(float);
        return time(true, [&] {
            CHECK(cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice));
            kernel<<<(unsigned)(n / kBlockSize), kBlockSize>>>(d_a, 0);
            CHECK(cudaMemcpy(h_a, d_a, bytes, cudaMemcpyDeviceToHost));
        });
    }

    // Version 1: loop over {copy, kernel, copy} per stream.
    double v1(int nStreams) {
        size_t streamSize = n / nStreams, streamBytes = streamSize * sizeof(float);
        return time(true, [&] {
            for (int i = 0; i < nStreams; ++i) {
                size_t offset = i * streamSize;
                CHECK(cudaMemcpyAsync(&d_a[offset], &h_a[offset], streamBytes, cudaMemcpyHostToDevice,
                                      streams[i]));
                kernel<<<(unsigned)(streamSize / kBlockSize), kBlockSize, 0, streams[i]>>>(d_a, (int)offset);
                CHECK(cudaMemcpyAsync(&h_a[offset], &d_a[offset], streamBytes, cudaMemcpyDeviceToHost,
                                      streams[i]));
            }
        });
    }

    // Version 2: loop over copies, loop over kernels, loop over copies.
    double v2(int nStreams) {
        size_t streamSize = n / nStreams, streamBytes = streamSize * sizeof(float);
        return time(true, [&] {
            for (int i = 0; i < nStreams; ++i) {
                size_t offset = i * streamSize;
                CHECK(cudaMemcpyAsync(&d_a[offset], &h_a[offset], streamBytes, cudaMemcpyHostToDevice,
                                      streams[i]));
            }
            for (int i = 0; i < nStreams; ++i) {
                size_t offset = i * streamSize;
                kernel<<<(unsigned)(streamSize / kBlockSize), kBlockSize, 0, streams[i]>>>(d_a, (int)offset);
            }
            for (int i = 0; i < nStreams; ++i) {
                size_t offset = i * streamSize;
                CHECK(cudaMemcpyAsync(&h_a[offset], &d_a[offset], streamBytes, cudaMemcpyDeviceToHost,
                                      streams[i]));
            }
        });
    }
};

static bool parse_size(const char *s, size_t *out) {
    char *end = nullptr;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return false;
    int shift = 0;
    switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: break;
    }
    if (shift) {
        v <<= shift;
        ++end;
    }
    if (*end != '\0') return false;
    *out = (size_t)v;
    return true;
}

static int usage(const char *why) {
    fprintf(stderr,
            "overlap_twin: %s\nusage: overlap_twin [--n N] [--streams 4,8,16] [--reps R] [--warmup W] "
            "[--device D]\n",
            why);
    return 1;
}

int main(int argc, char **argv) {
    size_t n = (size_t)1 << 27;
    size_t reps = 20, warmup = 2, device = 0;
    std::vector<int> counts = {4, 8, 16};
    for (int a = 1; a < argc; a += 2) {
        if (a + 1 >= argc) return usage("every option takes a value");
        const char *k = argv[a], *v = argv[a + 1];
        if (!strcmp(k, "--n")) {
            if (!parse_size(v, &n)) return usage("--n: not a number");
        } else if (!strcmp(k, "--reps")) {
            if (!parse_size(v, &reps) || reps == 0) return usage("--reps: not a positive number");
        } else if (!strcmp(k, "--warmup")) {
            if (!parse_size(v, &warmup)) return usage("--warmup: not a number");
        } else if (!strcmp(k, "--device")) {
            if (!parse_size(v, &device)) return usage("--device: not a number");
        } else if (!strcmp(k, "--streams")) {
            counts.clear();
            for (const char *p = v; *p;) {
                char *end = nullptr;
                long c = strtol(p, &end, 10);
                if (end == p || c <= 0) return usage("--streams: a comma-separated list of counts");
                counts.push_back((int)c);
                p = *end == ',' ? end + 1 : end;
                if (*end != ',' && *end != '\0') return usage("--streams: a comma-separated list of counts");
            }
        } else {
            return usage("unknown option");
        }
    }
    int maxStreams = *std::max_element(counts.begin(), counts.end());
    for (int c : counts) {
        if (n % ((size_t)c * kBlockSize) != 0) return usage("--n must be a multiple of 256 × every stream count");
    }
    if (n > (size_t)1 << 31) return usage("--n: the article's kernel indexes with int (at most 2^31)");

    CHECK(cudaSetDevice((int)device));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, (int)device));
    printf("# device %s, n = %zu floats (%.1f MiB), median of %zu runs after %zu warm-up\n", prop.name, n,
           n * 4.0 / (1 << 20), reps, warmup);

    Bench b;
    b.n = n;
    b.reps = (int)reps;
    b.warmup = (int)warmup;
    size_t bytes = n * sizeof(float);
    CHECK(cudaMallocHost((void **)&b.h_a, bytes));  // pinned
    CHECK(cudaMalloc((void **)&b.d_a, bytes));
    CHECK(cudaEventCreate(&b.start));
    CHECK(cudaEventCreate(&b.stop));
    b.streams.resize(maxStreams);
    for (auto &s : b.streams) CHECK(cudaStreamCreate(&s));
    reset(b.h_a, n);
    CHECK(cudaMemcpy(b.d_a, b.h_a, bytes, cudaMemcpyHostToDevice));

    // Alone: pinned transfers of the whole array, and the kernel over it (device-resident).
    double h2d = b.time(false, [&] { CHECK(cudaMemcpyAsync(b.d_a, b.h_a, bytes, cudaMemcpyHostToDevice, 0)); });
    double d2h = b.time(false, [&] { CHECK(cudaMemcpyAsync(b.h_a, b.d_a, bytes, cudaMemcpyDeviceToHost, 0)); });
    double kms = b.time(false, [&] { kernel<<<(unsigned)(n / kBlockSize), kBlockSize>>>(b.d_a, 0); });
    printf("twin h2d_ms 1 %.6f\ntwin d2h_ms 1 %.6f\ntwin kernel_ms 1 %.6f\n", h2d, d2h, kms);
    printf("twin h2d_gbs 1 %.4f\ntwin d2h_gbs 1 %.4f\n", bytes / h2d / 1e6, bytes / d2h / 1e6);
    fflush(stdout);

    double seq = b.sequential();
    printf("twin seq_ms 1 %.6f\ntwin seq_err 1 %g\n", seq, max_error(b.h_a, n));
    fflush(stdout);
    for (int c : counts) {
        double t1 = b.v1(c);
        printf("twin v1_ms %d %.6f\ntwin v1_err %d %g\n", c, t1, c, max_error(b.h_a, n));
        double t2 = b.v2(c);
        printf("twin v2_ms %d %.6f\ntwin v2_err %d %g\n", c, t2, c, max_error(b.h_a, n));
        fflush(stdout);
    }

    for (auto &s : b.streams) CHECK(cudaStreamDestroy(s));
    CHECK(cudaEventDestroy(b.start));
    CHECK(cudaEventDestroy(b.stop));
    CHECK(cudaFree(b.d_a));
    CHECK(cudaFreeHost(b.h_a));
    return 0;
}
