// CUDA C++ twins of cohort-kernels' "obvious" kernels (kernels-gpu/src/obvious.rs): what a
// competent CUDA programmer writes for the same algorithm, tile sizes, launch shape and ragged
// sizes (the same `row < rows && col < cols` guards as the Rust), with `int` indices and
// `__restrict__` inputs. Parameters follow the Rust kernels' order with the `BlockShape`
// (zero-sized, not in the PTX) left out: a `&[f32]` is a pointer and a length, a `u32` a size,
// a `DisjointMatrix` a pointer, its rows and its columns; every one 8 bytes wide, as
// `cohort bench`'s `launch_twin` passes them. `cohort bench obvious` compiles this file with
// NVRTC (or takes `nvcc -ptx -arch=sm_90 host/benches/obvious_twins.cu` with `--twins-ptx`).

typedef unsigned long long u64;

// in is rows x cols, out is cols x rows; block 32x8, grid (ceil(cols/32), ceil(rows/32)).
extern "C" __global__ void cpp_obvious_transpose_naive(const float* __restrict__ in, u64, u64 rows, u64 cols,
                                                       float* __restrict__ out, u64, u64) {
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (y + j < (int)rows && x < (int)cols) out[x * (int)rows + y + j] = in[(y + j) * (int)cols + x];
}

// The same, through a 32x33 shared tile.
extern "C" __global__ void cpp_obvious_transpose_tiled(const float* __restrict__ in, u64, u64 rows, u64 cols,
                                                       float* __restrict__ out, u64, u64) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (y + j < (int)rows && x < (int)cols) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * (int)cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (y + j < (int)cols && x < (int)rows) out[(y + j) * (int)rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// C = A B, A m x k, B k x n; block 32x32, grid (ceil(n/32), ceil(m/32)).
extern "C" __global__ void cpp_obvious_sgemm_tiled32(const float* __restrict__ A, u64, const float* __restrict__ B, u64,
                                                     u64 m_, u64 n_, u64 k_, float* __restrict__ C, u64, u64) {
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    int m = (int)m_, n = (int)n_, k = (int)k_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += 32) {
        As[ty][tx] = row < m && t + tx < k ? A[row * k + t + tx] : 0.0f;
        Bs[ty][tx] = t + ty < k && col < n ? B[(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int q = 0; q < 32; ++q) acc += As[ty][q] * Bs[q][tx];
        __syncthreads();
    }
    if (row < m && col < n) C[row * n + col] = acc;
}

// 128x128 block tile, BK 8, 8x8 per thread, 256 threads (16x16); grid (ceil(n/128), ceil(m/128)).
extern "C" __global__ void cpp_obvious_sgemm_128x128(const float* __restrict__ A, u64, const float* __restrict__ B, u64,
                                                     u64 m_, u64 n_, u64 k_, float* __restrict__ C, u64, u64) {
    __shared__ __align__(16) float As[8][128];
    __shared__ __align__(16) float Bs[8][128];
    int m = (int)m_, n = (int)n_, k = (int)k_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int rank = ty * 16 + tx;
    int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
    int ar = rank / 8, ac = rank % 8, br = rank / 128, bc = rank % 128;
    float acc[8][8] = {};
    for (int t = 0; t < k; t += 8) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int r = m0 + ar + 32 * i, c = t + ac;
            As[ac][ar + 32 * i] = r < m && c < k ? A[r * k + c] : 0.0f;
            r = t + br + 2 * i;
            c = n0 + bc;
            Bs[br + 2 * i][bc] = r < k && c < n ? B[r * n + c] : 0.0f;
        }
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
        for (int j = 0; j < 8; ++j) {
            int r = m0 + ty * 8 + i, c = n0 + tx * 8 + j;
            if (r < m && c < n) C[r * n + c] = acc[i][j];
        }
}

// One Jacobi step on a rows x cols grid (boundary copied): a 32x32 tile with a one-point halo
// in shared memory, 32x8 threads, four rows per thread; grid (ceil(cols/32), ceil(rows/32)).
extern "C" __global__ void cpp_obvious_jacobi(const float* __restrict__ u, u64, u64 rows_, u64 cols_,
                                              float* __restrict__ out, u64, u64) {
    __shared__ float t[34][34];
    int rows = (int)rows_, cols = (int)cols_;
    int tx = threadIdx.x, ty = threadIdx.y;
    int gx = blockIdx.x * 32 + tx, by = blockIdx.y * 32;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        int gy = by + ty + 8 * j, r = ty + 8 * j + 1;
        t[r][tx + 1] = gy < rows && gx < cols ? u[gy * cols + gx] : 0.0f;
        if (tx == 0) t[r][0] = gy < rows && gx > 0 && gx <= cols ? u[gy * cols + gx - 1] : 0.0f;
        if (tx == 31) t[r][33] = gy < rows && gx + 1 < cols ? u[gy * cols + gx + 1] : 0.0f;
    }
    if (ty == 0) t[0][tx + 1] = by > 0 && by <= rows && gx < cols ? u[(by - 1) * cols + gx] : 0.0f;
    if (ty == 7) t[33][tx + 1] = by + 32 < rows && gx < cols ? u[(by + 32) * cols + gx] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        int gy = by + ty + 8 * j, r = ty + 8 * j + 1;
        if (gy < rows && gx < cols) {
            bool boundary = gx == 0 || gy == 0 || gx + 1 >= cols || gy + 1 >= rows;
            out[gy * cols + gx] =
                boundary ? t[r][tx + 1] : 0.25f * (t[r - 1][tx + 1] + t[r + 1][tx + 1] + t[r][tx] + t[r][tx + 2]);
        }
    }
}

// The same step without shared memory: each thread walks eight rows down one column, the point
// above and its own kept in registers, its left and right neighbours and the point below read
// from u (L1 serves the reuse). 32x8 threads; grid (ceil(cols/32), ceil(rows/64)). Of the shapes
// tried on an H200 (32x32 and 32x64 shared tiles, one point per thread), the fastest.
extern "C" __global__ void cpp_obvious_jacobi_rows(const float* __restrict__ u, u64, u64 rows_, u64 cols_,
                                                   float* __restrict__ out, u64, u64) {
    int rows = (int)rows_, cols = (int)cols_;
    int gx = blockIdx.x * 32 + threadIdx.x, y0 = (blockIdx.y * 8 + threadIdx.y) * 8;
    if (gx >= cols || y0 >= rows) return;
    float up = y0 > 0 ? u[(y0 - 1) * cols + gx] : 0.0f;
    float here = u[y0 * cols + gx];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        int gy = y0 + j;
        if (gy >= rows) break;
        float down = gy + 1 < rows ? u[(gy + 1) * cols + gx] : 0.0f;
        int i = gy * cols + gx;
        bool boundary = gx == 0 || gy == 0 || gx + 1 >= cols || gy + 1 >= rows;
        out[i] = boundary ? here : 0.25f * (up + down + u[i - 1] + u[i + 1]);
        up = here;
        here = down;
    }
}
