//! Vector types for 16-, 8-byte loads and stores (CUDA's `uint4`, `float4`, `int2`, …).
//!
//! Each is `#[repr(C, align(N))]` with `N` its size, so a `&[f32x4]` element loads with one
//! `ld.global.v4.f32` and a `DisjointSlice<f32x4>` element stores with one `st.global.v4.f32`,
//! as CUDA's `float4` does. View a buffer of scalars as vectors with
//! [`slice::cast`](crate::slice::cast) (whole buffer) or
//! [`slice::cast_aligned`](crate::slice::cast_aligned) (head, aligned middle, tail) on the
//! device, and `DeviceBuffer::cast` on the host.
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `uint4`, `int4`, `float4` | [`u32x4`], [`i32x4`], [`f32x4`] |
//! | `uint2`, `int2`, `float2` | [`u32x2`], [`i32x2`], [`f32x2`] |
//! | `ulonglong2`, `longlong2`, `double2` | [`u64x2`], [`i64x2`], [`f64x2`] |
//! | `reinterpret_cast<const float4*>(p)` | [`slice::cast::<f32, f32x4>`](crate::slice::cast) |

//!
//! ```
//! use cohort::prelude::*;
//! use cohort::vec::f32x4;
//!
//! /// `out[i] = 2 * x[i]`, four floats per thread in one 16-byte load and store.
//! #[kernel]
//! pub fn scale4(x: &[f32], mut out: DisjointSlice<f32x4>) {
//!     let quads: &[f32x4] = cohort::slice::cast(x).unwrap_or(&[]);
//!     let i = thread::index_1d();
//!     if let Some(q) = quads.get(*i) {
//!         out.set(i, f32x4::new(2.0 * q.x, 2.0 * q.y, 2.0 * q.z, 2.0 * q.w));
//!     }
//! }
//! ```

#![allow(non_camel_case_types)]

macro_rules! vector {
    ($($(#[$m:meta])* $name:ident: [$t:ty; $n:literal], align $a:literal, $($f:ident)*;)*) => {$(
        $(#[$m])*
        #[repr(C, align($a))]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name {
            $(
                #[doc = concat!("`", stringify!($f), "`")]
                pub $f: $t,
            )*
        }

        // SAFETY: `#[repr(C)]` of `$n` fields of one primitive type, whose size times `$n` is
        // the alignment: no padding, the same layout on every target, every bit pattern valid.
        unsafe impl $crate::DeviceCopy for $name {}

        impl $name {
            /// From the components.
            #[inline(always)]
            #[must_use]
            pub const fn new($($f: $t),*) -> Self {
                Self { $($f),* }
            }

            /// The components as an array.
            #[inline(always)]
            #[must_use]
            pub const fn to_array(self) -> [$t; $n] {
                [$(self.$f),*]
            }
        }

        impl From<[$t; $n]> for $name {
            #[inline(always)]
            fn from(a: [$t; $n]) -> Self {
                let [$($f),*] = a;
                Self { $($f),* }
            }
        }

        const _: () = assert!(size_of::<$name>() == $a && size_of::<$t>() * $n == $a);
    )*};
}

vector! {
    /// Four `u32` (CUDA's `uint4`).
    u32x4: [u32; 4], align 16, x y z w;
    /// Four `i32` (`int4`).
    i32x4: [i32; 4], align 16, x y z w;
    /// Four `f32` (`float4`).
    f32x4: [f32; 4], align 16, x y z w;
    /// Two `u32` (`uint2`).
    u32x2: [u32; 2], align 8, x y;
    /// Two `i32` (`int2`).
    i32x2: [i32; 2], align 8, x y;
    /// Two `f32` (`float2`).
    f32x2: [f32; 2], align 8, x y;
    /// Two `u64` (`ulonglong2`).
    u64x2: [u64; 2], align 16, x y;
    /// Two `i64` (`longlong2`).
    i64x2: [i64; 2], align 16, x y;
    /// Two `f64` (`double2`).
    f64x2: [f64; 2], align 16, x y;
}
