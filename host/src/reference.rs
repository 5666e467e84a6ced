//! CPU references shared by the `cohort` commands and the GPU tests.

use rand::{Rng, SeedableRng};

/// Inputs and float64 reference of the dot product.
pub struct DotInputs {
    /// First vector.
    pub a: Vec<f32>,
    /// Second vector.
    pub b: Vec<f32>,
    /// `sum a_i * b_i` in float64.
    pub exact: f64,
    /// `sum |a_i * b_i|` in float64 (scales the rounding bound).
    pub magnitude: f64,
}

/// `n` random pairs in [-1, 1) and their float64 dot product.
#[must_use]
pub fn dot_inputs(n: usize) -> DotInputs {
    let mut r = rand::rngs::StdRng::seed_from_u64(0xd07);
    let a: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| r.random_range(-1.0..1.0)).collect();
    let exact = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
    let magnitude = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
    DotInputs { a, b, exact, magnitude }
}

/// Whether `got` is within float32 error of the float64 reference: each product is rounded,
/// each thread sums its ~n/threads products in order, then a 256-way tree and the blocks in
/// sequence; the bound is (terms in the longest chain) x eps32 x sum |a_i b_i|.
#[must_use]
pub fn dot_close(got: f64, d: &DotInputs, threads: usize, blocks: usize) -> (bool, f64) {
    let chain = d.a.len().div_ceil(threads) + 8 + blocks + 1;
    let bound = chain as f64 * f32::EPSILON as f64 * d.magnitude;
    ((got - d.exact).abs() <= bound, bound)
}

/// The lines the nested hello world (`cohort_dynamic_kernels::hello::nested_hello`, CUDA's
/// `cdpSimplePrint` shape: grid `blocks` × 8 threads, each depth launched by block 0 thread 0
/// with half the threads, down to depth 3) prints, sorted.
#[must_use]
pub fn nested_hello_lines(blocks: u32) -> Vec<String> {
    let mut want = Vec::new();
    for depth in 0..4u32 {
        let threads = 8 >> depth;
        for parent in 0..blocks {
            if depth > 0 {
                want.push(format!("-------> nested execution depth: {depth}"));
            }
            if depth > 0 || parent == 0 {
                let blocks_here = if depth == 0 { blocks } else { 1 };
                for b in 0..blocks_here {
                    for t in 0..threads {
                        want.push(format!("Recursion={depth}: Hello World from thread {t} block {b}"));
                    }
                }
            }
        }
    }
    want.sort_unstable();
    want
}
