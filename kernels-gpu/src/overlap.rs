//! The kernel of NVIDIA's "How to Overlap Data Transfers in CUDA C/C++" (`cohort overlap`,
//! `cohort bench overlap`, `cohort pipeline`), as its CUDA C++ twin in
//! `host/benches/overlap_twin.cu`:
//!
//! ```cuda
//! __global__ void kernel(float *a, int offset) {
//!     int i = offset + threadIdx.x + blockIdx.x * blockDim.x;
//!     float x = (float)i, s = sinf(x), c = cosf(x);
//!     a[i] = a[i] + sqrtf(s * s + c * c);
//! }
//! ```
//!
//! Each element gains `√(sin²x + cos²x)`, which is 1 to within a few ulp: the work is the
//! accurate `sinf`/`cosf` (whose argument reduction is long for the large `x` of a big
//! array), and the result is checkable against `initial + 1`. Here the kernel receives its
//! chunk as its own slice (a `DisjointSlice` of the chunk, launched on the chunk's stream), so
//! `offset` only feeds `x`.

use cohort::prelude::*;

/// `√(s² + c²)` for `(s, c) = sincos(offset + i)`: the article's per-element work, with
/// nvcc's contraction (`s * s + c * c` is one multiply and one `fma`).
#[inline(always)]
#[cohort::contract]
fn unit(offset: u32, i: usize) -> f32 {
    let x = offset.wrapping_add(i as u32) as f32;
    let (s, c) = cohort::fp::sincos(x);
    // nvcc's `sqrtf`: the correctly rounded `sqrt.rn.f32`.
    cohort::fp::sqrt(s * s + c * c)
}

/// `a[i] += √(sin²x + cos²x)` with `x = offset + i` for every element of the chunk `a`.
#[kernel]
pub fn overlap_add(mut a: DisjointSlice<f32>, offset: u32) {
    let i = thread::index_1d();
    if let Some(v) = a.get_mut(&i) {
        *v += unit(offset, *i);
    }
}

/// The out-of-place form for pipelines whose input and output are different buffers:
/// `out[i] = input[i] + √(sin²x + cos²x)` with `x = offset + i`.
#[kernel]
pub fn overlap_add_to(input: &[f32], mut out: DisjointSlice<f32>, offset: u32) {
    let i = thread::index_1d();
    if let Some(o) = out.get_mut(&i) {
        *o = input[*i] + unit(offset, *i);
    }
}
