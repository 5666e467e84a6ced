//! The operators of the collectives (CUDA's `cg::plus`, `less`, `greater`, `bit_and`,
//! `bit_or`, `bit_xor`, or any closure), each with its one-instruction `redux.sync` form where
//! the hardware has one.

use core::any::TypeId;
use core::ops::{Add, BitAnd, BitOr, BitXor};

use crate::DeviceCopy;
use crate::raw;

/// A binary operation for collectives: one of [`plus`], [`less`], [`greater`], [`bit_and`],
/// [`bit_or`], [`bit_xor`], or any `Fn(T, T) -> T + Copy` closure.
pub trait ReduceOp<T>: Copy {
    /// `a op b`.
    fn combine(self, a: T, b: T) -> T;
    /// The whole reduction in one `redux.sync` over `mask`, where the hardware has it.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn redux(self, mask: u32, v: T) -> Option<T> {
        let _ = (mask, v);
        None
    }
    /// Which atomic read-modify-write does this op (`reduce_update_async`'s fast path); a
    /// closure has none (a compare-and-swap loop applies it).
    #[doc(hidden)]
    #[inline(always)]
    fn atomic_kind(self) -> AtomicKind {
        AtomicKind::Other
    }
}

/// The atomic read-modify-write equal to a [`ReduceOp`] (see [`ReduceOp::atomic_kind`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicKind {
    /// `plus`: `fetch_add`.
    Add,
    /// `less`: `fetch_min` (integers).
    Min,
    /// `greater`: `fetch_max` (integers).
    Max,
    /// `bit_and`: `fetch_and`.
    And,
    /// `bit_or`: `fetch_or`.
    Or,
    /// `bit_xor`: `fetch_xor`.
    Xor,
    /// Any other op: a compare-and-swap loop.
    Other,
}

impl<T, F: Fn(T, T) -> T + Copy> ReduceOp<T> for F {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn combine(self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// Reinterprets `v` as `U` when `T` is `U`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_80")), allow(dead_code))]
fn cast<T: 'static + Copy, U: 'static + Copy>(v: T) -> Option<U> {
    if TypeId::of::<T>() == TypeId::of::<U>() {
        // SAFETY: `T` and `U` are the same type.
        Some(unsafe { core::mem::transmute_copy::<T, U>(&v) })
    } else {
        None
    }
}

/// `redux.sync` for `u32` or `i32` values, given the two instruction forms.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn redux_32<T: 'static + Copy>(
    mask: u32,
    v: T,
    on_u32: unsafe fn(u32, u32) -> u32,
    on_i32: unsafe fn(u32, i32) -> i32,
) -> Option<T> {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_80"))]
    {
        if let Some(x) = cast::<T, u32>(v) {
            // SAFETY: reductions are called by every member of the group with its mask.
            return cast(unsafe { on_u32(mask, x) });
        }
        if let Some(x) = cast::<T, i32>(v) {
            // SAFETY: as above.
            return cast(unsafe { on_i32(mask, x) });
        }
    }
    let _ = (mask, v, on_u32, on_i32);
    None
}

macro_rules! ops {
    ($($(#[$m:meta])* $name:ident: $bound:ident, |$a:ident, $b:ident| $e:expr, $ru:path, $ri:path, $kind:ident;)*) => {$(
        $(#[$m])*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl<T: DeviceCopy + $bound> ReduceOp<T> for $name {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn combine(self, $a: T, $b: T) -> T {
                $e
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn redux(self, mask: u32, v: T) -> Option<T> {
                redux_32(mask, v, $ru, $ri)
            }
            #[inline(always)]
            fn atomic_kind(self) -> AtomicKind {
                AtomicKind::$kind
            }
        }
    )*};
}

/// `T + T -> T`.
pub trait AddSelf: Add<Output = Self> + Sized {}
impl<T: Add<Output = T>> AddSelf for T {}
/// `T & T -> T`.
pub trait BitAndSelf: BitAnd<Output = Self> + Sized {}
impl<T: BitAnd<Output = T>> BitAndSelf for T {}
/// `T | T -> T`.
pub trait BitOrSelf: BitOr<Output = Self> + Sized {}
impl<T: BitOr<Output = T>> BitOrSelf for T {}
/// `T ^ T -> T`.
pub trait BitXorSelf: BitXor<Output = Self> + Sized {}
impl<T: BitXor<Output = T>> BitXorSelf for T {}

/// `a & b` on `i32` for `redux.sync.and.b32` (bitwise, sign-agnostic).
unsafe fn redux_and_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_and_b32(m, v as u32) as i32 }
}
unsafe fn redux_or_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_or_b32(m, v as u32) as i32 }
}
unsafe fn redux_xor_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_xor_b32(m, v as u32) as i32 }
}
unsafe fn redux_add_i32(m: u32, v: i32) -> i32 {
    // SAFETY: forwarded.
    unsafe { raw::redux_sync_add_u32(m, v as u32) as i32 }
}

ops! {
    /// `cg::plus`: `a + b` (wrapping for integers, as on the device without overflow checks).
    plus: AddSelf, |a, b| a + b, raw::redux_sync_add_u32, redux_add_i32, Add;
    /// `cg::less`: the smaller (`if b < a { b } else { a }`), as CUDA's `cg::less` returns the
    /// value, not a bool.
    less: PartialOrd, |a, b| if b < a { b } else { a }, raw::redux_sync_min_u32, raw::redux_sync_min_s32, Min;
    /// `cg::greater`: the larger (`if a < b { b } else { a }`).
    greater: PartialOrd, |a, b| if a < b { b } else { a }, raw::redux_sync_max_u32, raw::redux_sync_max_s32, Max;
    /// `cg::bit_and`: `a & b`.
    bit_and: BitAndSelf, |a, b| a & b, raw::redux_sync_and_b32, redux_and_i32, And;
    /// `cg::bit_or`: `a | b`.
    bit_or: BitOrSelf, |a, b| a | b, raw::redux_sync_or_b32, redux_or_i32, Or;
    /// `cg::bit_xor`: `a ^ b`.
    bit_xor: BitXorSelf, |a, b| a ^ b, raw::redux_sync_xor_b32, redux_xor_i32, Xor;
}
