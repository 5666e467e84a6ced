//! `cohort::fp::fast` on the CPU device computes what a GPU's SASS computes (`FMUL.RZ` by
//! 1/2π then `MUFU.SIN`, the subnormal scalings, …), not the exact functions: values pinned
//! here are derived by hand from that sequence. The GPU side of the comparison is the device
//! test `shapes_fast_math_cpu_device_matches_gpu`.

use cohort::fp::fast;

/// sin 2πt in `f64`, rounded: `MUFU.SIN` of `t` turns as the CPU device computes it.
fn turns_sin(t: f64) -> f32 {
    (std::f64::consts::TAU * t).sin() as f32
}

#[test]
fn fast_sin_cos_of_huge_arguments_are_the_gpus_not_the_exact_ones() {
    // 1e30 · 0x3e22f983 rounded toward zero is an integer (every f32 above 2^23 is): a whole
    // number of turns, so the GPU's sine is 0 and its cosine 1. The exact sine of 1e30f32
    // (1.0000000150474662e30) is about -0.791, 2^30 ulps away.
    for x in [1e30f32, -1e30, 3.0e38, -3.0e38, 2f32.powi(60)] {
        assert_eq!(fast::sin(x), 0.0, "fast::sin({x:e})");
        assert_eq!(fast::cos(x), 1.0, "fast::cos({x:e})");
    }
    assert!((f64::from(1e30f32).sin() - f64::from(fast::sin(1e30))).abs() > 0.79);
}

#[test]
fn fast_sin_cos_reduce_by_the_rounded_down_turns() {
    // 100000 · 0x3e22f983 = 15915.4936671257…; f32 has 2^-10 steps there and FMUL.RZ keeps
    // 15915 + 505/1024 = 15915.4931640625 turns, whose fraction the MUFU takes.
    let frac = 505.0 / 1024.0;
    assert_eq!(fast::sin(100_000.0), turns_sin(frac));
    assert_eq!(fast::cos(100_000.0), (std::f64::consts::TAU * frac).cos() as f32);
    // The exact sin(100000) ≈ 0.0357 is 0.007 away: far outside any MUFU error.
    assert!((f64::from(fast::sin(100_000.0)) - 100_000f64.sin()).abs() > 0.007);
    // Negative arguments: the fraction keeps the sign (sin is odd).
    assert_eq!(fast::sin(-100_000.0), -turns_sin(frac));
    // Small arguments: within the MUFU's accuracy of the exact function.
    for x in [0.5f32, 1.0, 3.0, -2.0, 6.0] {
        assert!((f64::from(fast::sin(x)) - f64::from(x).sin()).abs() < 2f64.powf(-19.5), "fast::sin({x})");
        assert!((f64::from(fast::cos(x)) - f64::from(x).cos()).abs() < 2f64.powf(-19.5), "fast::cos({x})");
    }
    assert_eq!((fast::sin(0.0).to_bits(), fast::sin(-0.0).to_bits(), fast::cos(-0.0)), (0, 0x8000_0000, 1.0));
    assert!(fast::sin(f32::INFINITY).is_nan() && fast::cos(f32::NEG_INFINITY).is_nan() && fast::sin(f32::NAN).is_nan());
}

#[test]
fn fast_div_by_more_than_2_pow_126_is_zero_as_on_the_gpu() {
    // div.approx is a · MUFU.RCP(b); 1/b below 2^-126 is flushed to zero (PTX ISA: "for
    // 2^126 < |b| < 2^128 … returns a sign-preserving zero", NaN for an infinite a).
    let b = 2f32.powi(127);
    assert_eq!(fast::div(1.0, b).to_bits(), 0);
    assert_eq!(fast::div(-3.0, b).to_bits(), 0x8000_0000);
    assert_eq!(fast::div(3.0, -b).to_bits(), 0x8000_0000);
    assert!(fast::div(f32::INFINITY, b).is_nan());
    assert_eq!(fast::div(6.0, 3.0), 2.0);
    // A subnormal divisor takes ptxas's scaled path: both operands times 2^24.
    assert_eq!(fast::div(2f32.powi(-20), f32::from_bits(1 << 9)), 2f32.powi(120), "2^-20 / 2^-140");
}

#[test]
fn fast_subnormals_are_kept_through_the_scalings() {
    let d = f32::from_bits(1 << 9); // 2^-140
    assert!(d.is_subnormal());
    assert_eq!(fast::log2(d), -140.0);
    assert_eq!(fast::rsqrt(d), 2f32.powi(70));
    assert_eq!(fast::sqrt(d), 2f32.powi(-70));
    assert_eq!(fast::exp2(-140.0), d, "ex2 below -126: 2^(x/2) squared");
    assert_eq!(fast::exp2(-149.0), f32::from_bits(1));
    assert_eq!(fast::exp2(-300.0), 0.0);
    assert_eq!((fast::exp2(f32::NEG_INFINITY), fast::exp2(f32::INFINITY)), (0.0, f32::INFINITY));
    assert_eq!((fast::log2(0.0), fast::rsqrt(-0.0)), (f32::NEG_INFINITY, f32::NEG_INFINITY));
    assert_eq!(fast::powf(2.0, 10.0), 1024.0);
}
