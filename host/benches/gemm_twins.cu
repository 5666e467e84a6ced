// CUDA C++ twins of cohort-kernels' tensor-core GEMM (kernels-gpu/src/gemm.rs), for
// `cohort bench gemm`. Build: `nvcc -ptx -O3 -arch=sm_90a host/benches/gemm_twins.cu -o
// gemm_twins.ptx` and pass `--twins-ptx gemm_twins.ptx` (else the bench compiles this file with
// NVRTC). Parameters: A, B, C, M, N, K, every one 8 bytes wide, as `cohort bench`'s
// `launch_twin` passes them.
//
// The same algorithm as the Rust kernel, written as a CUDA programmer writes the classic
// Ampere GEMM (CUTLASS's sm_80 multistage design, by hand): C = A · Bᵀ, A M×K and B N×K
// row-major ("TN"), C M×N row-major float; 128×128 block tiles, K 32 per stage, 8 warps (2 × 4,
// each 64×32 of C: 4 × 4 m16n8 accumulators), a 4-stage ring of shared A and B tiles in dynamic
// shared memory with rows padded to 40 elements (80 bytes: ldmatrix conflict-free), filled by
// cp.async.cg 16 bytes per chunk (2 chunks per thread per tile), one commit group per stage,
// cp.async.wait_group 2 + __syncthreads() per step of K; ldmatrix.x4 for A (4 per k16) and for
// two n8 B fragments at once (2 per k16), mma.sync.m16n8k16 with f32 accumulators; the
// accumulators stored to C as float2 (each lane's two adjacent columns). M and N multiples of
// 128, K of 32 (the bench only launches such shapes).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

typedef unsigned long long u64;

namespace {

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4, LDS = BK + 8, THREADS = 256;
constexpr int WARPS_N = 4, WTM = BM / (8 / WARPS_N), WTN = BN / WARPS_N, MI = WTM / 16, NI = WTN / 8;
// 16-byte chunks of one operand's tile, and per thread.
constexpr int CHUNKS = BM * BK * 2 / 16, PER_THREAD = CHUNKS / THREADS;
static_assert(CHUNKS % THREADS == 0 && BM == BN, "the copy deals whole chunks to every thread");

// The shared-space address of a generic pointer into shared memory (as CUTLASS's
// `cast_smem_ptr_to_uint`, without relying on a header's `__cvta_generic_to_shared` under NVRTC).
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

template <bool BF16>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if (BF16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

template <typename T, bool BF16>
__device__ __forceinline__ void gemm_tn(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                                        unsigned N, unsigned K) {
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned base = smem_u32(smem);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const unsigned m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int steps = K / BK;

    // This thread's chunks of each tile: row idx / 4, 8 elements at column 8 (idx % 4).
    const T* a_src[PER_THREAD];
    const T* b_src[PER_THREAD];
    unsigned a_dst[PER_THREAD], b_dst[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int idx = tid + j * THREADS, r = idx / (BK / 8), q = idx % (BK / 8);
        a_src[j] = A + (m0 + r) * K + q * 8;
        b_src[j] = B + (n0 + r) * K + q * 8;
        a_dst[j] = base + (r * LDS + q * 8) * 2;
        b_dst[j] = base + ((STAGES * BM + r) * LDS + q * 8) * 2;
    }
    // Fills stage s with tile kt of A and B (none past K), and closes its group.
    auto fill = [&](int s, int kt) {
        if (kt < steps) {
#pragma unroll
            for (int j = 0; j < PER_THREAD; ++j) {
                cp_async16(a_dst[j] + s * BM * LDS * 2, a_src[j] + kt * BK);
                cp_async16(b_dst[j] + s * BN * LDS * 2, b_src[j] + kt * BK);
            }
        }
        cp_async_commit();
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) fill(s, s);

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int n = 0; n < NI; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][n][e] = 0.0f;

    // ldmatrix rows: A's lane l supplies row l % 16 at column 8 (l / 16) of its 16×16 block; for
    // B (N×K), rows l % 8 + 8 (l / 16) at column 8 ((l / 8) % 2) of two n8 × k16 blocks.
    const unsigned a_ld = base + ((wm * WTM + (lane & 15)) * LDS + 8 * (lane >> 4)) * 2;
    const unsigned b_ld = base + ((STAGES * BM + wn * WTN + (lane & 7) + 8 * (lane >> 4)) * LDS + 8 * ((lane >> 3) & 1)) * 2;

    for (int kt = 0; kt < steps; ++kt) {
        // Tile kt has landed for every thread, and every warp is done with the stage refilled next.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        fill((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
        const int s = kt % STAGES;
        const unsigned sa = a_ld + s * BM * LDS * 2, sb = b_ld + s * BN * LDS * 2;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            unsigned fa[MI][4], fb[NI / 2][4];
#pragma unroll
            for (int i = 0; i < MI; ++i) ldmatrix_x4(fa[i], sa + (i * 16 * LDS + kk * 16) * 2);
#pragma unroll
            for (int j = 0; j < NI / 2; ++j) ldmatrix_x4(fb[j], sb + (j * 16 * LDS + kk * 16) * 2);
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int n = 0; n < NI; ++n) mma16816<BF16>(acc[i][n], fa[i], fb[n / 2][2 * (n % 2)], fb[n / 2][2 * (n % 2) + 1]);
        }
    }

    // Each lane's accumulator elements: rows g and g + 8, columns 2t and 2t + 1 of each m16n8.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
        for (int n = 0; n < NI; ++n) {
            const unsigned row = m0 + wm * WTM + i * 16 + g, col = n0 + wn * WTN + n * 8 + 2 * t;
            float2 lo, hi;
            lo.x = acc[i][n][0];
            lo.y = acc[i][n][1];
            hi.x = acc[i][n][2];
            hi.y = acc[i][n][3];
            *reinterpret_cast<float2*>(&C[row * N + col]) = lo;
            *reinterpret_cast<float2*>(&C[(row + 8) * N + col]) = hi;
        }
    }
}

}  // namespace

// C = A · Bᵀ: a grid of (N / 128, M / 128) blocks of 256 threads, 80 KiB of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(THREADS)
    cpp_gemm_tn_bf16(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, float* __restrict__ C,
                     u64 M, u64 N, u64 K) {
    (void)M;
    gemm_tn<__nv_bfloat16, true>(A, B, C, (unsigned)N, (unsigned)K);
}

extern "C" __global__ void __launch_bounds__(THREADS)
    cpp_gemm_tn_f16(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C, u64 M, u64 N,
                    u64 K) {
    (void)M;
    gemm_tn<__half, false>(A, B, C, (unsigned)N, (unsigned)K);
}
