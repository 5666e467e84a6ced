//! `#pragma unroll` for Rust: [`unroll`] calls a closure for `0..N` as straight-line code.
//!
//! LLVM unrolls small constant loops by itself, but stops at a size threshold that the hot loops
//! of register-blocked kernels (8 steps of 64 fused multiply-adds) exceed; nvcc unrolls them when
//! told to. `unroll::<N>(|i| …)` expands to `N` inlined calls with constant `i`, so array indices
//! into registers stay constant (no local memory) and bounds checks on them fold away.

/// Calls `f(0)`, `f(1)`, … `f(N - 1)` as straight-line code (`N` ≤ 256).
///
/// ```
/// let mut acc = [0.0f32; 4];
/// cohort::unroll::<4>(|i| acc[i] += i as f32);
/// assert_eq!(acc, [0.0, 1.0, 2.0, 3.0]);
/// ```
#[inline(always)]
pub fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    const { assert!(N <= 256, "unroll::<N> expands N copies of its body: at most 256") };
    let mut base = 0;
    // N's binary digits, highest first: each branch is constant, so only the copies remain.
    if N & 128 != 0 {
        rep128(&mut f, base);
        base += 128;
    }
    if N & 64 != 0 {
        rep64(&mut f, base);
        base += 64;
    }
    if N & 32 != 0 {
        rep32(&mut f, base);
        base += 32;
    }
    if N & 16 != 0 {
        rep16(&mut f, base);
        base += 16;
    }
    if N & 8 != 0 {
        rep8(&mut f, base);
        base += 8;
    }
    if N & 4 != 0 {
        rep4(&mut f, base);
        base += 4;
    }
    if N & 2 != 0 {
        rep2(&mut f, base);
        base += 2;
    }
    if N & 1 != 0 {
        f(base);
    }
    if N & 256 != 0 {
        rep128(&mut f, 0);
        rep128(&mut f, 128);
    }
}

macro_rules! rep {
    ($($name:ident => $half:ident, $n:literal;)*) => {$(
        #[inline(always)]
        fn $name(f: &mut impl FnMut(usize), base: usize) {
            $half(f, base);
            $half(f, base + $n / 2);
        }
    )*};
}

#[inline(always)]
fn rep1(f: &mut impl FnMut(usize), base: usize) {
    f(base);
}

rep! {
    rep2 => rep1, 2;
    rep4 => rep2, 4;
    rep8 => rep4, 8;
    rep16 => rep8, 16;
    rep32 => rep16, 32;
    rep64 => rep32, 64;
    rep128 => rep64, 128;
}
