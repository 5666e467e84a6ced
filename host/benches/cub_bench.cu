// CUB baselines for `cohort bench`: DeviceReduce::Sum over 2^28 random u32 (issue: cooperative
// groups' tile32 reduce) and DeviceHistogram::HistogramEven with 128 bins over the byte files
// that `cohort bench atomics --dump DIR` writes (text-like and uniform). Build and run on the
// GPU machine:  nvcc -O3 -arch=sm_90 -o cub_bench host/benches/cub_bench.cu && ./cub_bench DIR
// Prints one line per benchmark: name, median ms, GB/s (bytes read / time).
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); std::exit(1); } } while (0)

template <class F> float median_ms(F&& f, int reps) {
    cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) f();
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        CHECK(cudaEventRecord(a)); f(); CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b));
        float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char** argv) {
    // Reduce.
    size_t n = size_t(1) << 28;
    std::vector<unsigned> h(n);
    std::mt19937 rng(7);
    for (auto& v : h) v = rng();
    unsigned* d; unsigned* out; CHECK(cudaMalloc(&d, n * 4)); CHECK(cudaMalloc(&out, 4));
    CHECK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
    size_t temp_bytes = 0; void* temp = nullptr;
    cub::DeviceReduce::Sum(temp, temp_bytes, d, out, (int)n);
    CHECK(cudaMalloc(&temp, temp_bytes));
    float ms = median_ms([&] { cub::DeviceReduce::Sum(temp, temp_bytes, d, out, (int)n); }, 20);
    unsigned got; CHECK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
    unsigned want = 0; for (auto v : h) want += v;
    std::printf("cub_reduce_sum_u32 %.4f ms %.0f GB/s %s\n", ms, n * 4 / ms / 1e6, got == want ? "verified" : "MISMATCH");
    CHECK(cudaFree(temp)); CHECK(cudaFree(d)); CHECK(cudaFree(out));

    // Histograms.
    if (argc < 2) return 0;
    for (std::string name : {"text", "uniform"}) {
        std::string path = std::string(argv[1]) + "/" + name + ".bin";
        FILE* f = std::fopen(path.c_str(), "rb");
        if (!f) { std::printf("cannot open %s\n", path.c_str()); return 1; }
        std::fseek(f, 0, SEEK_END); size_t bytes = std::ftell(f); std::fseek(f, 0, SEEK_SET);
        std::vector<unsigned char> text(bytes);
        if (std::fread(text.data(), 1, bytes, f) != bytes) { std::printf("short read\n"); return 1; }
        std::fclose(f);
        unsigned char* dt; int* bins; CHECK(cudaMalloc(&dt, bytes)); CHECK(cudaMalloc(&bins, 128 * 4));
        CHECK(cudaMemcpy(dt, text.data(), bytes, cudaMemcpyHostToDevice));
        size_t tb = 0; void* tmp = nullptr;
        cub::DeviceHistogram::HistogramEven(tmp, tb, dt, bins, 129, 0, 128, (long long)bytes);
        CHECK(cudaMalloc(&tmp, tb));
        float hms = median_ms([&] { cub::DeviceHistogram::HistogramEven(tmp, tb, dt, bins, 129, 0, 128, (long long)bytes); }, 10);
        std::vector<int> hb(128); CHECK(cudaMemcpy(hb.data(), bins, 128 * 4, cudaMemcpyDeviceToHost));
        std::vector<long long> ref(128, 0); for (auto c : text) ref[c & 127]++;
        bool ok = true; for (int i = 0; i < 128; ++i) ok &= (long long)(unsigned)hb[i] == ref[i];
        std::printf("cub_histogram_%s %.4f ms %.0f GB/s %s\n", name.c_str(), hms, bytes / hms / 1e6, ok ? "verified" : "MISMATCH");
        CHECK(cudaFree(tmp)); CHECK(cudaFree(dt)); CHECK(cudaFree(bins));
    }
    return 0;
}
