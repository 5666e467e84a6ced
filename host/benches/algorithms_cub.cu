// CUB's side of `cohort bench algorithms` (host/src/bench/algorithms.rs): CUB's device-wide
// algorithms on buffers and a stream the Rust side hands over, so that both run on the same data
// in the same stream, timed in interleaved pairs. Build on the GPU machine as a shared library:
//   nvcc -O3 -arch=sm_90 -std=c++17 -shared -Xcompiler -fPIC -o libalgorithms_cub.so host/benches/algorithms_cub.cu
// and run `cohort bench algorithms --cub ./libalgorithms_cub.so`. The library uses the CUDA
// runtime's primary context, the one Cohort's driver calls use (cudarc retains it).
//
// algo: 0 DeviceReduce::Sum u32, 1 DeviceReduce::Sum f32, 2 DeviceScan::ExclusiveSum u32,
// 3 DeviceScan::InclusiveSum u32, 4 DeviceSelect::If u32 (x < 2^31), 5 DeviceSelect::Flagged
// u32 (u8 flags), 6 DevicePartition::If u32 (x < 2^31), 7 DeviceSelect::Unique u32,
// 8 DeviceRunLengthEncode::Encode u32 (int lengths), 9 DeviceRadixSort::SortKeys u32,
// 10 DeviceRadixSort::SortPairs u32 keys / u32 values, 11 DeviceRadixSort::SortKeys u64,
// 12 DeviceRadixSort::SortPairs u64 keys / u64 values (all bits; the values in through `flags`,
// out through `out2`; keys from `in` to `out`), 13 DeviceHistogram::HistogramEven u32 samples,
// 256 bins of [0, 2^24) (u32 counts into `out`), 14/15/16 DeviceSegmentedReduce::Sum f32 with
// segments of 10^3 / 10^5 / 10^7 elements (the last one shorter: ceil(n / len) segments; the
// n/len + 1 offsets, long long, in through `flags`; the sums into `out`), 17
// DeviceReduce::ArgMax f32 (the CCCL 3 overload with separate outputs: the value into out[0],
// the index, a long long, into `num`), 18 DeviceScan::InclusiveSumByKey u32 keys (in through
// `flags`) / u32 values (`in`) into `out`, 19 DeviceScan::ExclusiveSumByKey likewise. Sizes are
// `int` (CUB's usual offsets).
// Outputs: `out` (and `out2`: run lengths, sorted values), `num` a long long (selected / runs);
// a reduction's result is out[0] (its bits, for f32).
#include <cub/cub.cuh>
#include <cstdint>

namespace {

struct LessThan {
    unsigned threshold;
    __host__ __device__ bool operator()(const unsigned& x) const { return x < threshold; }
};

constexpr unsigned kThreshold = 1u << 31;

// The segment length of segmented-reduce algo 14, 15 or 16.
constexpr int segment_length(int algo) { return algo == 14 ? 1000 : algo == 15 ? 100000 : 10000000; }

// One call of `algo`: with temp == nullptr, CUB's size query (temp_bytes set); else the run.
cudaError_t call(int algo, const void* in, const void* flags, void* out, void* out2, void* num, int n, void* temp,
                 size_t& temp_bytes, cudaStream_t s) {
    auto u_in = static_cast<const unsigned*>(in);
    auto u_out = static_cast<unsigned*>(out);
    auto count = static_cast<long long*>(num);
    switch (algo) {
    case 0: return cub::DeviceReduce::Sum(temp, temp_bytes, u_in, u_out, n, s);
    case 1:
        return cub::DeviceReduce::Sum(temp, temp_bytes, static_cast<const float*>(in), static_cast<float*>(out), n, s);
    case 2: return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, u_in, u_out, n, s);
    case 3: return cub::DeviceScan::InclusiveSum(temp, temp_bytes, u_in, u_out, n, s);
    case 4: return cub::DeviceSelect::If(temp, temp_bytes, u_in, u_out, count, n, LessThan{kThreshold}, s);
    case 5:
        return cub::DeviceSelect::Flagged(temp, temp_bytes, u_in, static_cast<const unsigned char*>(flags), u_out, count,
                                          n, s);
    case 6: return cub::DevicePartition::If(temp, temp_bytes, u_in, u_out, count, n, LessThan{kThreshold}, s);
    case 7: return cub::DeviceSelect::Unique(temp, temp_bytes, u_in, u_out, count, n, s);
    case 8:
        return cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, u_in, u_out, static_cast<int*>(out2), count, n, s);
    case 9: return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, u_in, u_out, n, 0, 32, s);
    case 10:
        return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, u_in, u_out, static_cast<const unsigned*>(flags),
                                               static_cast<unsigned*>(out2), n, 0, 32, s);
    case 11:
        return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, static_cast<const unsigned long long*>(in),
                                              static_cast<unsigned long long*>(out), n, 0, 64, s);
    case 12:
        return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, static_cast<const unsigned long long*>(in),
                                               static_cast<unsigned long long*>(out),
                                               static_cast<const unsigned long long*>(flags),
                                               static_cast<unsigned long long*>(out2), n, 0, 64, s);
    case 13:
        return cub::DeviceHistogram::HistogramEven(temp, temp_bytes, u_in, u_out, 257, 0u, 1u << 24, n, s);
    case 14:
    case 15:
    case 16: {
        const int len = segment_length(algo);
        const int segments = (n + len - 1) / len;
        auto offsets = static_cast<const long long*>(flags);
        return cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, static_cast<const float*>(in), static_cast<float*>(out),
                                               segments, offsets, offsets ? offsets + 1 : nullptr, s);
    }
    case 17:
        return cub::DeviceReduce::ArgMax(temp, temp_bytes, static_cast<const float*>(in), static_cast<float*>(out),
                                         count, static_cast<long long>(n), s);
    case 18:
        return cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, static_cast<const unsigned*>(flags), u_in, u_out, n,
                                                  ::cuda::std::equal_to<>{}, s);
    case 19:
        return cub::DeviceScan::ExclusiveSumByKey(temp, temp_bytes, static_cast<const unsigned*>(flags), u_in, u_out, n,
                                                  ::cuda::std::equal_to<>{}, s);
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace

// The temporary storage `algo` needs for n elements (bytes), or -1.
extern "C" long long cub_temp_bytes(int algo, long long n) {
    size_t bytes = 0;
    if (call(algo, nullptr, nullptr, nullptr, nullptr, nullptr, (int)n, nullptr, bytes, 0) != cudaSuccess) return -1;
    return (long long)bytes;
}

// Runs `algo` in `stream` (a CUstream / cudaStream_t); returns the cudaError_t.
extern "C" int cub_run(int algo, const void* in, const void* flags, void* out, void* out2, void* num, long long n,
                       void* temp, long long temp_bytes, void* stream) {
    size_t bytes = (size_t)temp_bytes;
    cudaError_t e = call(algo, in, flags, out, out2, num, (int)n, temp, bytes, (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    return (int)e;
}
