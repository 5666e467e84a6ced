//! The built-in operators: [`Sum`], [`Min`], [`Max`], commutative for every value (floats
//! included), so that a reduction's result does not depend on the order blocks combine in.

use cohort::cg::ReduceOp;

/// `a + b` (wrapping for integers, as on the device).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sum;
/// The smaller. Floats: a NaN wins (NaN-propagating, as `torch.min`), and `-0.0` is smaller
/// than `+0.0`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;
/// The larger. Floats: a NaN wins, and `+0.0` is larger than `-0.0`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

macro_rules! int_ops {
    ($($t:ty)*) => {$(
        impl ReduceOp<$t> for Sum {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                a.wrapping_add(b)
            }
        }
        impl ReduceOp<$t> for Min {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                if b < a { b } else { a }
            }
        }
        impl ReduceOp<$t> for Max {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                if a < b { b } else { a }
            }
        }
    )*};
}
int_ops!(u32 i32 u64 i64);

macro_rules! float_ops {
    ($($t:ty)*) => {$(
        impl ReduceOp<$t> for Sum {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                a + b
            }
        }
        impl ReduceOp<$t> for Min {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a == b {
                    // ±0: the negative one.
                    if a.is_sign_negative() { a } else { b }
                } else if b < a {
                    b
                } else {
                    a
                }
            }
        }
        impl ReduceOp<$t> for Max {
            #[inline(always)]
            fn combine(self, a: $t, b: $t) -> $t {
                if a.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if a == b {
                    if a.is_sign_negative() { b } else { a }
                } else if a < b {
                    b
                } else {
                    a
                }
            }
        }
    )*};
}
float_ops!(f32 f64);
