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

/// A generated sparse system for Jacobi (`cohort multi-grid` and its GPU test): a 2-D grid of
/// `side × side` unknowns, each coupled to its four neighbours with random weights in
/// [-1, -0.25), the diagonal one more than the sum of their magnitudes (strictly diagonally
/// dominant); `b` random in [-1, 1). Off-diagonal entries in CSR, the diagonal apart.
pub struct JacobiSystem {
    /// Row starts (`side² + 1`).
    pub row_ptr: Vec<u32>,
    /// Column of each off-diagonal entry.
    pub cols: Vec<u32>,
    /// Value of each off-diagonal entry.
    pub vals: Vec<f32>,
    /// The diagonal.
    pub diag: Vec<f32>,
    /// The right-hand side.
    pub b: Vec<f32>,
}

impl JacobiSystem {
    /// The 5-point system of a `side × side` grid (see the module docs).
    #[must_use]
    pub fn generate(side: usize, seed: u64) -> Self {
        let n = side * side;
        let mut r = rand::rngs::StdRng::seed_from_u64(seed);
        let (mut row_ptr, mut cols, mut vals, mut diag) =
            (Vec::with_capacity(n + 1), Vec::new(), Vec::new(), Vec::new());
        row_ptr.push(0u32);
        for i in 0..n {
            let (y, x) = (i / side, i % side);
            let mut sum = 0.0f32;
            let mut neighbours = Vec::with_capacity(4);
            if y > 0 {
                neighbours.push(i - side);
            }
            if x > 0 {
                neighbours.push(i - 1);
            }
            if x + 1 < side {
                neighbours.push(i + 1);
            }
            if y + 1 < side {
                neighbours.push(i + side);
            }
            for j in neighbours {
                let v: f32 = r.random_range(-1.0f32..-0.25);
                cols.push(j as u32);
                vals.push(v);
                sum += v.abs();
            }
            diag.push(sum + 1.0);
            row_ptr.push(cols.len() as u32);
        }
        let b = (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect();
        Self { row_ptr, cols, vals, diag, b }
    }

    /// Rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.b.len()
    }

    /// Whether it has no unknowns.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }

    /// One Jacobi update of row `i` from `x`: the kernel's arithmetic, in its order.
    #[must_use]
    pub fn row(&self, x: &[f32], i: usize) -> f32 {
        cohort_kernels::multi::jacobi_row(&self.row_ptr, &self.cols, &self.vals, &self.diag, &self.b, x, i)
    }

    /// `sweeps` Jacobi sweeps from zero on the CPU (threads over row ranges).
    #[must_use]
    pub fn solve_cpu(&self, sweeps: usize) -> Vec<f32> {
        let n = self.len();
        let (mut x, mut y) = (vec![0.0f32; n], vec![0.0f32; n]);
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        let chunk = n.div_ceil(threads);
        for _ in 0..sweeps {
            std::thread::scope(|s| {
                for (c, out) in y.chunks_mut(chunk).enumerate() {
                    let x = &x;
                    s.spawn(move || {
                        for (k, o) in out.iter_mut().enumerate() {
                            *o = self.row(x, c * chunk + k);
                        }
                    });
                }
            });
            std::mem::swap(&mut x, &mut y);
        }
        x
    }

    /// `‖b − A x‖∞`.
    #[must_use]
    pub fn residual(&self, x: &[f32]) -> f64 {
        (0..self.len())
            .map(|i| {
                let (s, e) = (self.row_ptr[i] as usize, self.row_ptr[i + 1] as usize);
                let ax: f64 = self.diag[i] as f64 * x[i] as f64
                    + (s..e).map(|k| self.vals[k] as f64 * x[self.cols[k] as usize] as f64).sum::<f64>();
                (self.b[i] as f64 - ax).abs()
            })
            .fold(0.0, f64::max)
    }
}
