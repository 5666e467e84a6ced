//! The `.approx` instructions on the CPU device, computed as the GPU computes them.
//!
//! ptxas (13.0, the same for `sm_80` and `sm_90`) compiles each non-`.ftz` `.approx.f32`
//! instruction into a short SASS sequence around one `MUFU` (the multi-function unit):
//!
//! | PTX | SASS |
//! |---|---|
//! | `sin.approx.f32 d, x` | `t = FMUL.RZ x, 0x3e22f983` (1/2π), `d = MUFU.SIN t` |
//! | `cos.approx.f32 d, x` | `t = FMUL.RZ x, 0x3e22f983`, `d = MUFU.COS t` |
//! | `ex2.approx.f32 d, x` | `x < -126`: `h = FMUL x, 0.5`, `e = MUFU.EX2 h`, `d = FMUL e, e`; else `d = MUFU.EX2 x` |
//! | `lg2.approx.f32 d, x` | `\|x\| < 2^-126`: `d = FADD (MUFU.LG2 x·2^24), -24`; else `d = MUFU.LG2 x` |
//! | `rsqrt.approx.f32 d, x` | `\|x\| < 2^-126`: `d = FMUL (MUFU.RSQ x·2^24), 2^12`; else `d = MUFU.RSQ x` |
//! | `sqrt.approx.f32 d, x` | `\|x\| < 2^-126`: `d = FMUL (MUFU.SQRT x·2^24), 2^-12`; else `d = MUFU.SQRT x` |
//! | `div.approx.f32 d, a, b` | `\|b\| < 2^-126`: `a, b` times 2^24 first; `d = FMUL a, (MUFU.RCP b)` |
//!
//! (`ptxas -arch=sm_90 x.ptx && nvdisasm`; the comparisons are `FSETP.GEU`, so a NaN takes the
//! plain path.) The scalings exist because `MUFU` flushes subnormal inputs and outputs to zero:
//! ptxas scales subnormal operands into the normal range and back so that the PTX instruction
//! keeps subnormals, as its non-`.ftz` form promises; `MUFU.SIN`/`COS` take the angle in turns
//! (`sin 2πt`), reduced by the hardware to the fraction of `t`.
//!
//! Here every step but the `MUFU` is bit-exact (`FMUL.RZ` with an exact product rounded toward
//! zero, the scalings, the final `FMUL`/`FADD` rounded to nearest, subnormals kept); each
//! `MUFU` is the exact function of its (flushed) operand rounded to nearest `f32` and flushed
//! again, where the hardware's own approximation differs from it by its table's error. So the
//! CPU device's results differ from a GPU's only by that error: the bounds
//! [`crate::fp::fast`] states.

/// `FMUL.RZ a, b`: the product rounded toward zero, subnormals kept (no `.FTZ`).
pub(crate) fn mul_rz(a: f32, b: f32) -> f32 {
    // Exact: 24 × 24 significant bits fit f64's 53, and its exponent range covers every
    // product of two `f32` (subnormals included).
    let p = f64::from(a) * f64::from(b);
    let r = p as f32; // rounded to nearest
    if r.is_nan() || p.is_infinite() || f64::from(r) == p {
        return r;
    }
    if f64::from(r).abs() > p.abs() {
        // Rounded away from zero (to the infinity of that sign too): one step back.
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    }
}

/// `MUFU`'s flush of a subnormal operand or result to a zero of the same sign.
fn ftz(x: f32) -> f32 {
    if x.is_subnormal() { f32::from_bits(x.to_bits() & 0x8000_0000) } else { x }
}

/// An exact value rounded to nearest `f32`, then flushed as `MUFU` flushes its results.
fn round_ftz(v: f64) -> f32 {
    ftz(v as f32)
}

/// `MUFU.SIN t`: sin 2πt, `t` in turns (its fraction: exact in `f32`).
fn mufu_sin(t: f32) -> f32 {
    let t = ftz(t);
    if !t.is_finite() {
        return f32::NAN;
    }
    round_ftz((core::f64::consts::TAU * f64::from(t % 1.0)).sin())
}

/// `MUFU.COS t`: cos 2πt.
fn mufu_cos(t: f32) -> f32 {
    let t = ftz(t);
    if !t.is_finite() {
        return f32::NAN;
    }
    round_ftz((core::f64::consts::TAU * f64::from(t % 1.0)).cos())
}

/// `MUFU.EX2 t`: 2^t.
fn mufu_ex2(t: f32) -> f32 {
    round_ftz(f64::from(ftz(t)).exp2())
}

/// `MUFU.LG2 t`: log2 t (−∞ at ±0, NaN below).
fn mufu_lg2(t: f32) -> f32 {
    let t = ftz(t);
    if t == 0.0 {
        return f32::NEG_INFINITY;
    }
    round_ftz(f64::from(t).log2())
}

/// `MUFU.RSQ t`: 1/√t (±∞ at ±0, NaN below −0).
fn mufu_rsq(t: f32) -> f32 {
    let t = ftz(t);
    if t == 0.0 {
        return if t.is_sign_negative() { f32::NEG_INFINITY } else { f32::INFINITY };
    }
    round_ftz(1.0 / f64::from(t).sqrt())
}

/// `MUFU.SQRT t`: √t (−0 at −0, NaN below).
fn mufu_sqrt(t: f32) -> f32 {
    round_ftz(f64::from(ftz(t)).sqrt())
}

/// `MUFU.RCP t`: 1/t (±∞ at ±0; results below 2^-126 flush to ±0).
fn mufu_rcp(t: f32) -> f32 {
    round_ftz(1.0 / f64::from(ftz(t)))
}

/// 1/2π rounded to `f32`: the constant of ptxas's `FMUL.RZ`.
const INV_2PI: f32 = f32::from_bits(0x3e22_f983);
/// 2^24: ptxas's scale for subnormal operands.
const SCALE: f32 = 16_777_216.0;

/// Whether ptxas's `FSETP.GEU |x|, 2^-126` takes the plain path (NaN does).
fn plain(x: f32) -> bool {
    x.abs() >= f32::MIN_POSITIVE || x.is_nan()
}

/// `sin.approx.f32`.
pub(crate) fn sin(x: f32) -> f32 {
    mufu_sin(mul_rz(x, INV_2PI))
}

/// `cos.approx.f32`.
pub(crate) fn cos(x: f32) -> f32 {
    mufu_cos(mul_rz(x, INV_2PI))
}

/// `ex2.approx.f32`.
pub(crate) fn ex2(x: f32) -> f32 {
    if x < -126.0 {
        let e = mufu_ex2(x * 0.5);
        e * e
    } else {
        mufu_ex2(x)
    }
}

/// `lg2.approx.f32`.
pub(crate) fn lg2(x: f32) -> f32 {
    if plain(x) { mufu_lg2(x) } else { mufu_lg2(x * SCALE) + -24.0 }
}

/// `rsqrt.approx.f32`.
pub(crate) fn rsqrt(x: f32) -> f32 {
    if plain(x) { mufu_rsq(x) } else { mufu_rsq(x * SCALE) * 4096.0 }
}

/// `sqrt.approx.f32`.
pub(crate) fn sqrt(x: f32) -> f32 {
    if plain(x) { mufu_sqrt(x) } else { mufu_sqrt(x * SCALE) * (1.0 / 4096.0) }
}

/// `div.approx.f32`.
pub(crate) fn div(a: f32, b: f32) -> f32 {
    if plain(b) { a * mufu_rcp(b) } else { (a * SCALE) * mufu_rcp(b * SCALE) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round toward zero, checked against rounding to nearest and a step toward zero, over
    /// products that are exact, ties, overflow and subnormal.
    #[test]
    fn mul_rz_rounds_toward_zero() {
        // 3 · 0.1f32 = 0.300000004470348…, between 0x3e999999 and 0x3e99999a and nearer the
        // latter: RN rounds up, RZ down.
        assert_eq!((3.0f32 * 0.1).to_bits(), 0x3e99_999a);
        assert_eq!(mul_rz(3.0, 0.1).to_bits(), 0x3e99_9999);
        assert_eq!(mul_rz(-3.0, 0.1).to_bits(), 0xbe99_9999);
        assert_eq!(mul_rz(1.5, 2.0), 3.0);
        assert_eq!(mul_rz(f32::MAX, 2.0), f32::MAX, "RZ does not overflow to infinity");
        assert_eq!(mul_rz(-f32::MAX, 2.0), -f32::MAX);
        assert_eq!(mul_rz(f32::INFINITY, 2.0), f32::INFINITY);
        assert!(mul_rz(f32::INFINITY, 0.0).is_nan());
        // Subnormal products are kept, truncated.
        let tiny = f32::from_bits(3); // 3 · 2^-149
        assert_eq!(mul_rz(tiny, 0.5), f32::from_bits(1));
        assert_eq!(mul_rz(-tiny, 0.5), -f32::from_bits(1));
        assert_eq!(mul_rz(f32::MIN_POSITIVE, 0.75), f32::from_bits(0x0060_0000));
        // Against an independent definition on many products: the largest float of the
        // product's sign whose magnitude does not exceed the product's.
        let mut s = 0x1234_5678u32;
        for _ in 0..100_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let a = f32::from_bits(s & 0x7fff_ffff) * if s & 1 == 0 { 1e-20 } else { 1.0 };
            let b = f32::from_bits((s.rotate_left(7) & 0x3fff_ffff) | 0x3000_0000);
            let (r, p) = (mul_rz(a, b), f64::from(a) * f64::from(b));
            if !p.is_finite() || !r.is_finite() {
                continue;
            }
            assert!(f64::from(r) <= p, "{a:e} · {b:e}: {r:e} above {p:e}");
            let up = f32::from_bits(r.to_bits() + 1);
            assert!(f64::from(up) > p || up.is_infinite(), "{a:e} · {b:e}: {r:e} is not the largest below {p:e}");
        }
    }

    #[test]
    fn special_values_as_the_ptx_isa_tables_give_them() {
        for (x, s, c) in [(0.0f32, 0.0f32, 1.0f32), (-0.0, -0.0, 1.0)] {
            assert_eq!(sin(x).to_bits(), s.to_bits());
            assert_eq!(cos(x), c);
        }
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            assert!(sin(x).is_nan() && cos(x).is_nan());
        }
        assert_eq!((ex2(f32::NEG_INFINITY), ex2(0.0), ex2(-0.0), ex2(f32::INFINITY)), (0.0, 1.0, 1.0, f32::INFINITY));
        assert!(ex2(f32::NAN).is_nan());
        assert_eq!((lg2(0.0), lg2(-0.0), lg2(f32::INFINITY)), (f32::NEG_INFINITY, f32::NEG_INFINITY, f32::INFINITY));
        assert!(lg2(-1.0).is_nan() && lg2(f32::NEG_INFINITY).is_nan() && lg2(f32::NAN).is_nan());
        assert_eq!((rsqrt(0.0), rsqrt(-0.0), rsqrt(f32::INFINITY)), (f32::INFINITY, f32::NEG_INFINITY, 0.0));
        assert!(rsqrt(-1.0).is_nan() && rsqrt(f32::NEG_INFINITY).is_nan());
        assert_eq!((sqrt(0.0).to_bits(), sqrt(-0.0).to_bits(), sqrt(f32::INFINITY)), (0, 0x8000_0000, f32::INFINITY));
        assert!(sqrt(-1.0).is_nan() && sqrt(-f32::from_bits(1)).is_nan());
        // div.approx: for 2^126 < |b| < 2^128 a signed zero, NaN when a is infinite.
        let big = 2f32.powi(127);
        assert_eq!(div(1.0, big).to_bits(), 0);
        assert_eq!(div(-1.0, big).to_bits(), 0x8000_0000);
        assert!(div(f32::INFINITY, big).is_nan());
        assert_eq!(div(6.0, 3.0), 2.0);
    }

    /// Subnormal operands and results are kept where the PTX instruction keeps them (ptxas's
    /// scaling), exactly where the scaled value is exact.
    #[test]
    fn subnormals_through_the_scaled_paths() {
        let d = f32::from_bits(1 << 9); // 2^-140, subnormal
        assert_eq!(lg2(d), -140.0);
        assert_eq!(rsqrt(d), 2f32.powi(70));
        assert_eq!(sqrt(d), 2f32.powi(-70));
        assert_eq!(ex2(-140.0), d, "2^-140 through the squaring path");
        assert_eq!(ex2(-149.0), f32::from_bits(1));
        assert_eq!(ex2(-300.0), 0.0);
        assert_eq!(div(d, 2.0), f32::from_bits(1 << 8));
        assert_eq!(div(1.0, d), f32::INFINITY, "1/2^-140 overflows f32 (2^24 · 2^116)");
        assert_eq!(div(2f32.powi(-20), d), 2f32.powi(120));
    }
}
