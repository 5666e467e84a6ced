//! The GEMMs' checks: sampled elements against `f64` dot products, whole outputs against each other.

use super::*;

/// 4096 sampled elements of `c` against f64 dot products: each of the K additions of an `f32`
/// sum rounds by at most 2^-24 of the running magnitude, so the error is below `K · ε · Σ|ab|`.
pub(super) fn check_sampled(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), c: &[f32], who: &str) -> CliResult {
    let bound = |mag: f64, _: f64| mag * k as f64 * f64::from(f32::EPSILON) + 1e-6;
    sampled(a, b, (m, n, k), c, bound).map(|_| ()).map_err(|e| fail(format!("{who}: {e}")))
}

/// 4096 sampled elements of `c` (m×n, row-major) against f64 dot products of the rows of `a`
/// (m×k) and `b` (n×k), each within `bound(Σ|ab|, dot)`: the worst error as a fraction of its
/// Σ|ab|, or the first element out of bounds (or NaN).
pub(super) fn sampled(
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    c: &[f32],
    bound: impl Fn(f64, f64) -> f64,
) -> Result<f64, String> {
    if a.len() < m * k || b.len() < n * k || c.len() < m * n {
        return Err(format!("{} / {} / {} elements for {m}×{n}×{k}", a.len(), b.len(), c.len()));
    }
    let mut r = rand::rngs::StdRng::seed_from_u64(9);
    let mut worst = 0.0f64;
    for _ in 0..4096 {
        let (i, j) = (r.random_range(0..m), r.random_range(0..n));
        let (mut dot, mut mag) = (0.0f64, 0.0f64);
        for (x, y) in a[i * k..(i + 1) * k].iter().zip(&b[j * k..(j + 1) * k]) {
            let p = f64::from(*x) * f64::from(*y);
            dot += p;
            mag += p.abs();
        }
        let got = f64::from(c[i * n + j]);
        let tol = bound(mag, dot);
        if (got - dot).abs() > tol || got.is_nan() {
            return Err(format!("C[{i}][{j}] = {got}, the CPU says {dot} (tolerance {tol:.2e})"));
        }
        if mag > 0.0 {
            worst = worst.max((got - dot).abs() / mag);
        }
    }
    Ok(worst)
}

/// `got` and `want` agree within summation-order rounding everywhere (a missing or doubled term
/// of a dot product, about 0.3 on average, is off by far more).
pub(super) fn check_close(got: &[f32], want: &[f32], who: &str) -> CliResult {
    close(got, want).map_err(|e| fail(format!("{who}: {e}")))
}

/// [`check_close`]'s test: the first element that differs, described.
pub(super) fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements against {}", got.len(), want.len()));
    }
    for (i, (x, y)) in got.iter().zip(want).enumerate() {
        let near = (x - y).abs() <= 2e-2 + 1e-3 * y.abs();
        if !near || x.is_nan() {
            return Err(format!("C[{i}] = {x}, against {y}"));
        }
    }
    Ok(())
}
