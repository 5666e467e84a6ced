//! Parameter kinds as traits: what a kernel parameter of each type is in the PTX entry, in the
//! ABI record, on the device, on the CPU device and in a child launch.
//!
//! `#[kernel]` emits the same code for every parameter, generic over [`KernelParam`] (device
//! side, here) and `cohort_runtime::KernelArg` (host side): it never looks at a type's name
//! to decide what it is, so a type alias of any kind works, and a new kind is one
//! `KernelParam` impl here and one `KernelArg` impl in the runtime.
//!
//! A parameter is made of up to [`MAX_PARTS`] *PTX parts* ([`PtxParts`], a tuple of
//! [`PtxPart`]s): the `.param`s of the entry, in order. The entry takes each part as a
//! parameter of its own (the unused slots are `()`, which rustc drops from the entry), rebuilds
//! the value with [`KernelParam::rebuild`] and calls the body; the CPU device's entry reads the
//! same parts from the launch's parameter array ([`PtxParts::read`]); the host launcher fills
//! that array from each argument's [`PtxParts::Host`] tuple (an address as the `u64` it is in
//! PTX). One list of parts, so the three can't disagree; the ABI record ([`KernelParam::ABI`],
//! one entry per part) is what `load()` checks the module's entry against.
//!
//! The launchers' signatures name a parameter type `P` as `fn(P)` ([`ParamFn`]: elided
//! lifetimes are allowed in a function-pointer type, not in `impl Trait`); host and child
//! arguments are keyed by [`KernelParam::Key`] (`P` itself, or [`ByValue<T>`] for a value, so
//! that the kinds' impls don't overlap). A child launch stages each argument
//! ([`ChildArg`]) and checks it and writes its parts by the parameter's [`ChildKey`].
//!
//! A new kind: a `KernelParam` impl, a `param_fn!` line (or a `ParamFn` impl for a type without
//! lifetimes), `ChildKey`/`ChildArg` impls if child launches may pass it, and on the host a
//! `cohort_runtime::KernelArg` impl per host type.

use core::ffi::c_void;

use super::{ABI_FLAG_COOPERATIVE, ABI_FLAG_MULTI_GRID, AbiKind, SliceElement, abi_matrix_rows, abi_param};
use crate::copy::DeviceCopy;

/// The most PTX parts one parameter may have (the entry gives each parameter this many slots).
pub const MAX_PARTS: usize = 8;

/// One PTX parameter's type: a [`DeviceCopy`] value, or a `*const T` / `*mut T` (a `.u64`
/// address).
///
/// # Safety
/// `Host` must be the representation the host launcher stores for the part (the part itself
/// for values, `u64` for addresses), of the part's size in the PTX parameter list, and `read`
/// must read one from a pointer to it.
pub unsafe trait PtxPart: Copy {
    /// What the host launcher stores in the parameter array for this part.
    type Host: Copy;
    /// On the CPU device: the part, from a pointer to its host representation.
    ///
    /// # Safety
    /// `slot` must point at a valid `Self::Host` (any alignment).
    unsafe fn read(slot: *const c_void) -> Self;
    /// In a child launch (dynamic parallelism): writes the part into the parameter buffer.
    ///
    /// # Safety
    /// As [`ParamBuffer::push`](crate::launch::ParamBuffer::push): this part is the entry's next
    /// `.param`.
    unsafe fn push(self, buf: &mut crate::launch::ParamBuffer);
}

// SAFETY: a value crosses as itself; `read_unaligned` reads a `T` at any alignment.
unsafe impl<T: DeviceCopy> PtxPart for T {
    type Host = T;
    #[inline(always)]
    unsafe fn read(slot: *const c_void) -> Self {
        // SAFETY: the caller's contract.
        unsafe { core::ptr::read_unaligned(slot.cast::<T>()) }
    }
    #[inline(always)]
    unsafe fn push(self, buf: &mut crate::launch::ParamBuffer) {
        // SAFETY: the caller's contract.
        unsafe { buf.push::<T>(self) }
    }
}

// The launcher stores an address as the `u64` it got from the buffer (the value of a `.u64` PTX
// parameter); the cast back to a pointer takes the provenance that turning the allocation's
// pointer into that integer exposed, which reading the integer's bytes as a pointer would not.
macro_rules! pointer_part {
    ($($ptr:ty),*) => {$(
        // SAFETY: an address crosses as a `u64` (a `.u64` in PTX), read back as above.
        unsafe impl<T> PtxPart for $ptr {
            type Host = u64;
            #[inline(always)]
            unsafe fn read(slot: *const c_void) -> Self {
                // SAFETY: the caller's contract.
                unsafe { core::ptr::read_unaligned(slot.cast::<u64>()) as usize as $ptr }
            }
            #[inline(always)]
            unsafe fn push(self, buf: &mut crate::launch::ParamBuffer) {
                // SAFETY: the caller's contract.
                unsafe { buf.push::<u64>(self as u64) }
            }
        }
    )*};
}
pointer_part!(*const T, *mut T);

/// The PTX parts of a kernel parameter: a tuple of up to [`MAX_PARTS`] [`PtxPart`]s, in the
/// order of the entry's `.param`s.
///
/// # Safety
/// `COUNT` is the tuple's length, `S0`…`S7` its element types then `()`, `Host` the tuple of
/// their `PtxPart::Host`s, and the methods move the elements in that order.
pub unsafe trait PtxParts: Copy {
    /// How many parts.
    const COUNT: usize;
    /// Whether every part has a size (a zero-sized part has no `.param`: rustc drops it from
    /// the entry, and every parameter after it would shift).
    const SIZED: bool;
    /// What the host launcher stores for the parts: each part's `PtxPart::Host`, in order.
    type Host: HostParts;
    /// Part 0, or `()`.
    type S0: Copy;
    /// Part 1, or `()`.
    type S1: Copy;
    /// Part 2, or `()`.
    type S2: Copy;
    /// Part 3, or `()`.
    type S3: Copy;
    /// Part 4, or `()`.
    type S4: Copy;
    /// Part 5, or `()`.
    type S5: Copy;
    /// Part 6, or `()`.
    type S6: Copy;
    /// Part 7, or `()`.
    type S7: Copy;
    /// The parts from the entry's slots.
    #[allow(clippy::type_complexity)]
    fn from_slots(s: (Self::S0, Self::S1, Self::S2, Self::S3, Self::S4, Self::S5, Self::S6, Self::S7)) -> Self;
    /// On the CPU device: the parts, from `COUNT` pointers to their host representations.
    ///
    /// # Safety
    /// `slots` must point at `COUNT` pointers, each to a valid `Host` of its part.
    unsafe fn read(slots: *const *mut c_void) -> Self;
    /// In a child launch: writes the parts into the parameter buffer, in order.
    ///
    /// # Safety
    /// As [`PtxPart::push`], for each part.
    unsafe fn push(self, buf: &mut crate::launch::ParamBuffer);
}

/// The host representation of a parameter's PTX parts (a tuple), as the host launcher's
/// parameter array points at them.
pub trait HostParts: Copy {
    /// Writes a pointer to each part into `out[..COUNT]`, in order.
    fn pointers(&self, out: &mut [*mut c_void]);
    /// Writes each part's size into `out[..COUNT]`, in order.
    fn sizes(out: &mut [usize]);
}

macro_rules! tuple_parts {
    ($n:literal; $($p:ident $i:tt),*; $($unit:ident),*) => {
        // SAFETY: as the trait requires, element by element.
        unsafe impl<$($p: PtxPart),*> PtxParts for ($($p,)*) {
            const COUNT: usize = $n;
            const SIZED: bool = true $(&& size_of::<$p>() != 0)*;
            type Host = ($($p::Host,)*);
            tuple_parts!(@slots [$($p),*] [$($unit),*] [S0 S1 S2 S3 S4 S5 S6 S7]);
            #[inline(always)]
            #[allow(unused_variables, clippy::unused_unit)]
            fn from_slots(s: (Self::S0, Self::S1, Self::S2, Self::S3, Self::S4, Self::S5, Self::S6, Self::S7)) -> Self {
                ($(s.$i,)*)
            }
            #[inline(always)]
            #[allow(unused_variables, unused_unsafe, clippy::unused_unit)]
            unsafe fn read(slots: *const *mut c_void) -> Self {
                // SAFETY: the caller's contract: one valid pointer per part.
                unsafe { ($($p::read((*slots.add($i)).cast_const()),)*) }
            }
            #[inline(always)]
            #[allow(unused_variables, unused_unsafe)]
            unsafe fn push(self, buf: &mut crate::launch::ParamBuffer) {
                // SAFETY: the caller's contract, part by part, in order.
                unsafe { $(self.$i.push(buf);)* }
            }
        }
        impl<$($p: Copy),*> HostParts for ($($p,)*) {
            #[inline(always)]
            #[allow(unused_variables)]
            fn pointers(&self, out: &mut [*mut c_void]) {
                $(out[$i] = (&raw const self.$i).cast_mut().cast::<c_void>();)*
            }
            #[inline(always)]
            #[allow(unused_variables)]
            fn sizes(out: &mut [usize]) {
                $(out[$i] = size_of::<$p>();)*
            }
        }
    };
    (@slots [$($p:ident),*] [$($unit:ident),*] [$($s:ident)*]) => {
        tuple_parts!(@assign [$($p)* $($unit)*] [$($s)*]);
    };
    (@assign [$($t:ident)*] [$($s:ident)*]) => {
        $(type $s = tuple_parts!(@ty $t);)*
    };
    (@ty U) => { () };
    (@ty $t:ident) => { $t };
}
tuple_parts!(0; ; U, U, U, U, U, U, U, U);
tuple_parts!(1; A 0; U, U, U, U, U, U, U);
tuple_parts!(2; A 0, B 1; U, U, U, U, U, U);
tuple_parts!(3; A 0, B 1, C 2; U, U, U, U, U);
tuple_parts!(4; A 0, B 1, C 2, D 3; U, U, U, U);
tuple_parts!(5; A 0, B 1, C 2, D 3, E 4; U, U, U);
tuple_parts!(6; A 0, B 1, C 2, D 3, E 4, F 5; U, U);
tuple_parts!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6; U);
tuple_parts!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7; );

/// The key a by-value parameter of type `T` is known by on the host ([`KernelParam::Key`]):
/// the argument traits are keyed by the parameter type, and a bare `T` would overlap every
/// other kind's key.
#[derive(Clone, Copy, Debug)]
pub struct ByValue<T>(core::marker::PhantomData<T>);

/// A kernel parameter kind: how a parameter of this type crosses the kernel ABI.
///
/// # Safety
/// `rebuild` may rely on the parts being what the kind's host arguments
/// (`cohort_runtime::KernelArg<Self::Key>`) give, under the launch checks that `ABI`, `SHAPE`
/// and `NEEDS` ask for; `ABI` has one entry per part, each of the part's PTX size.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a kernel parameter",
    label = "not a kernel parameter type",
    note = "a kernel takes `T: DeviceCopy` by value, `&[T]` (`T: DeviceCopy`, or a global atomic or mutex), \
            `DisjointSlice<T>`, `AppendSlice<T>`, `GridVec<T>`, `Matrix<T, I>`, `DisjointMatrix<T, L, I>`, \
            `TensorMap<T, RANK>`, `TensorMapMut<T, RANK>`, `*const T` / `*mut T` (in an `unsafe fn` kernel), `GridGroup`, `MultiGridGroup`, `MultiGridVec<T>` \
            or `BlockShape<X, Y, Z>` (or a type alias of one of these)"
)]
pub unsafe trait KernelParam: Sized {
    /// The PTX parts, in the order of the entry's `.param`s.
    type Parts: PtxParts;
    /// What host arguments and child-launch arguments are keyed by: `Self`, or [`ByValue<T>`]
    /// for a value.
    type Key;
    /// The ABI record's entries of the parts, in order (`abi_param`).
    const ABI: &'static [[u32; 3]];
    /// The block shape a launch must have (`[0; 3]`: any), for the record's header.
    const SHAPE: [u32; 3] = [0; 3];
    /// `ABI_FLAG_COOPERATIVE` / `ABI_FLAG_MULTI_GRID` bits the kernel must have to take this
    /// parameter, and the error otherwise.
    const NEEDS: (u32, &'static str) = (0, "");
    /// The error for a kernel that takes this parameter without a `BlockShape` one, if it needs
    /// one.
    const NEEDS_SHAPE: Option<&'static str> = None;
    /// A bit that at most one parameter of a kernel may have, and the error for a second one.
    const ONCE: (u32, &'static str) = (0, "");
    /// Whether the parameter makes its kernel `unsafe` (raw pointers).
    const UNSAFE: bool = false;
    /// Whether the parameter is made on the device: the launchers take no argument for it.
    const MADE_ON_DEVICE: bool = false;
    /// Whether a multi-grid launch fills in its parts (the `MultiGridGroup`'s barrier block,
    /// rank and grid count).
    const FILLED_BY_MULTI_GRID: bool = false;
    /// How many memory operands its host arguments name, at most, in a single-GPU launch.
    const USES: usize = 0;
    /// `()` when the parameter's element types have no padding, a compile-time error otherwise.
    const NO_PADDING: () = ();
    /// The value the kernel body gets, from the parts.
    ///
    /// # Safety
    /// The parts must be what a host argument of the kind gave, for a launch that passed the
    /// kind's checks (see the impl).
    unsafe fn rebuild(parts: Self::Parts) -> Self;
}

/// A parameter's PTX parts.
pub type Parts<P> = <P as KernelParam>::Parts;
/// What the host launcher stores for a parameter's PTX parts.
pub type HostPartsOf<P> = <<P as KernelParam>::Parts as PtxParts>::Host;
/// What host arguments of a parameter are keyed by.
pub type ArgKey<P> = <P as KernelParam>::Key;
/// Slot 0 of a parameter in the PTX entry.
pub type Slot0<P> = <<P as KernelParam>::Parts as PtxParts>::S0;
/// Slot 1 of a parameter in the PTX entry.
pub type Slot1<P> = <<P as KernelParam>::Parts as PtxParts>::S1;
/// Slot 2 of a parameter in the PTX entry.
pub type Slot2<P> = <<P as KernelParam>::Parts as PtxParts>::S2;
/// Slot 3 of a parameter in the PTX entry.
pub type Slot3<P> = <<P as KernelParam>::Parts as PtxParts>::S3;
/// Slot 4 of a parameter in the PTX entry.
pub type Slot4<P> = <<P as KernelParam>::Parts as PtxParts>::S4;
/// Slot 5 of a parameter in the PTX entry.
pub type Slot5<P> = <<P as KernelParam>::Parts as PtxParts>::S5;
/// Slot 6 of a parameter in the PTX entry.
pub type Slot6<P> = <<P as KernelParam>::Parts as PtxParts>::S6;
/// Slot 7 of a parameter in the PTX entry.
pub type Slot7<P> = <<P as KernelParam>::Parts as PtxParts>::S7;

/// A parameter type as the launchers' signatures name it: `fn(P)`, a function-pointer type, in
/// which the elided lifetimes of `P` (`DisjointSlice<T>`, `&[T]`, an alias) are allowed where
/// `impl Trait` would refuse them (`for<'a> fn(DisjointSlice<'a, T>)`). `Param` is `P` with
/// those lifetimes `'static`. One impl per kind (`param_fn!` below; values, pointers and the
/// kinds without lifetimes by `fn(P)` itself).
pub trait ParamFn {
    /// The parameter type.
    type Param: KernelParam;
}
impl<T: DeviceCopy> ParamFn for fn(T) {
    type Param = T;
}
macro_rules! param_fn {
    ($(<$($g:ident $(: $b:path)?),*> $ty:ty => $st:ty;)*) => {$(
        impl<$($g $(: $b)? + 'static),*> ParamFn for for<'a> fn($ty) {
            type Param = $st;
        }
    )*};
}
param_fn! {
    <E: SliceElement> &'a [E] => &'static [E];
    <T: DeviceCopy, K: crate::slice::IndexKind> crate::slice::DisjointSlice<'a, T, K> => crate::slice::DisjointSlice<'static, T, K>;
    <T: DeviceCopy> crate::slice::AppendSlice<'a, T> => crate::slice::AppendSlice<'static, T>;
    <T: DeviceCopy> crate::cg::GridVec<'a, T> => crate::cg::GridVec<'static, T>;
    <T: DeviceCopy, L: crate::matrix::Layout, I: crate::matrix::MatrixIndex> crate::matrix::DisjointMatrix<'a, T, L, I> => crate::matrix::DisjointMatrix<'static, T, L, I>;
    <T: SliceElement, I: crate::matrix::MatrixIndex> crate::matrix::Matrix<'a, T, I> => crate::matrix::Matrix<'static, T, I>;
    <T: DeviceCopy> crate::cg::MultiGridVec<'a, T> => crate::cg::MultiGridVec<'static, T>;
}
impl<T: crate::tma::TensorElement + 'static, const RANK: usize> ParamFn
    for for<'a> fn(crate::tma::TensorMap<'a, T, RANK>)
{
    type Param = crate::tma::TensorMap<'static, T, RANK>;
}
impl<T: crate::tma::TensorElement + 'static, const RANK: usize> ParamFn
    for for<'a> fn(crate::tma::TensorMapMut<'a, T, RANK>)
{
    type Param = crate::tma::TensorMapMut<'static, T, RANK>;
}
impl<T> ParamFn for fn(*const T) {
    type Param = *const T;
}
impl<T> ParamFn for fn(*mut T) {
    type Param = *mut T;
}
impl ParamFn for fn(crate::cg::GridGroup) {
    type Param = crate::cg::GridGroup;
}
impl ParamFn for fn(crate::cg::MultiGridGroup) {
    type Param = crate::cg::MultiGridGroup;
}
impl<const X: u32, const Y: u32, const Z: u32> ParamFn for fn(crate::shape::BlockShape<X, Y, Z>) {
    type Param = crate::shape::BlockShape<X, Y, Z>;
}

/// What host and child-launch arguments of the parameter named `F = fn(P)` are keyed by.
pub type ArgKeyFn<F> = <<F as ParamFn>::Param as KernelParam>::Key;
/// The PTX parts of the parameter named `F = fn(P)`.
pub type PartsFn<F> = <<F as ParamFn>::Param as KernelParam>::Parts;
/// What the host launcher stores for the parameter named `F = fn(P)`.
pub type HostPartsFn<F> = <<<F as ParamFn>::Param as KernelParam>::Parts as PtxParts>::Host;

/// The sum of `xs` (what generated code adds up: part counts, operand counts).
#[must_use]
pub const fn sum(xs: &[usize]) -> usize {
    let (mut i, mut t) = (0, 0);
    while i < xs.len() {
        t += xs[i];
        i += 1;
    }
    t
}

/// The bitwise or of `xs`.
#[must_use]
pub const fn or_all(xs: &[u32]) -> u32 {
    let (mut i, mut t) = (0, 0);
    while i < xs.len() {
        t |= xs[i];
        i += 1;
    }
    t
}

/// Whether `flags` lacks some bit of `needs`.
#[must_use]
pub const fn lacks(needs: u32, flags: u32) -> bool {
    needs & !flags != 0
}

/// How many PTX parts parameter type `P` has.
#[must_use]
pub const fn part_count<P: KernelParam>() -> usize {
    <P::Parts as PtxParts>::COUNT
}

/// Rebuilds parameter `P` from the entry's slots.
///
/// # Safety
/// As [`KernelParam::rebuild`].
#[inline(always)]
#[must_use]
#[allow(clippy::type_complexity)]
pub unsafe fn rebuild<P: KernelParam>(
    s: (Slot0<P>, Slot1<P>, Slot2<P>, Slot3<P>, Slot4<P>, Slot5<P>, Slot6<P>, Slot7<P>),
) -> P {
    // SAFETY: forwarded to the caller.
    unsafe { P::rebuild(<P::Parts as PtxParts>::from_slots(s)) }
}

/// Compile-time check of a parameter type (no padding in the bytes that cross). Called by the
/// entries and the host launcher.
#[inline(always)]
pub const fn check_param<P: KernelParam>() {
    #[allow(clippy::let_unit_value)]
    let () = const { P::NO_PADDING };
}

/// Parts shared by the CPU device's threads of one launch (the parameters, read once).
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy)]
pub struct SharedParts<T>(T);

// SAFETY: made only by `SharedParts::new`, whose caller guarantees that the parts may be shared.
#[cfg(not(target_arch = "nvptx64"))]
unsafe impl<T> Sync for SharedParts<T> {}

#[cfg(not(target_arch = "nvptx64"))]
impl<T: Copy> SharedParts<T> {
    /// Wraps a launch's parameter parts for its threads.
    ///
    /// # Safety
    /// `parts` must be parameter parts (integers, `DeviceCopy` values and addresses) that
    /// every thread only copies out, the pointed-to memory shared exactly as the GPU entry's
    /// parameters are.
    #[inline(always)]
    #[must_use]
    pub unsafe fn new(parts: T) -> Self {
        Self(parts)
    }
    /// The parts.
    #[inline(always)]
    #[must_use]
    pub fn get(&self) -> T {
        self.0
    }
}

// --- The kinds ---------------------------------------------------------------------------------

// SAFETY: a value is its own single part (a `DeviceCopy` value, any bytes of which are valid).
unsafe impl<T: DeviceCopy> KernelParam for T {
    type Parts = (T,);
    type Key = ByValue<T>;
    const ABI: &'static [[u32; 3]] = &[abi_param::<T>(AbiKind::Value)];
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild(parts: (T,)) -> T {
        parts.0
    }
}

// SAFETY: pointer and length of a buffer the host argument (`SliceArg`) names.
unsafe impl<E: SliceElement> KernelParam for &[E] {
    type Parts = (*const E, usize);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[abi_param::<E>(AbiKind::SlicePtr), abi_param::<usize>(AbiKind::Len)];
    const USES: usize = 1;
    const NO_PADDING: () = E::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, len): Self::Parts) -> Self {
        // SAFETY: the host launcher passed a live device allocation of `len` elements that
        // stays unchanged (or is only accessed atomically) during the launch (on the CPU
        // device, host memory: the runtime's buffers are host memory).
        unsafe { super::slice(ptr, len) }
    }
}

// SAFETY: pointer and length of an exclusively borrowed buffer (`DisjointArg`).
unsafe impl<T: DeviceCopy, K: crate::slice::IndexKind> KernelParam for crate::slice::DisjointSlice<'_, T, K> {
    type Parts = (*mut T, usize);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[abi_param::<T>(AbiKind::DisjointPtr), abi_param::<usize>(AbiKind::Len)];
    const USES: usize = 1;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, len): Self::Parts) -> Self {
        // SAFETY: the host launcher passed an exclusively borrowed device allocation of `len`
        // elements; every thread receives the same one, so `ThreadIndex` keeps their writes
        // disjoint.
        unsafe { super::disjoint(ptr, len) }
    }
}

// SAFETY: elements, capacity and counter of an exclusively borrowed `AppendBuffer`.
unsafe impl<T: DeviceCopy> KernelParam for crate::slice::AppendSlice<'_, T> {
    type Parts = (*mut T, usize, *mut u64);
    type Key = Self;
    const ABI: &'static [[u32; 3]] =
        &[abi_param::<T>(AbiKind::AppendPtr), abi_param::<usize>(AbiKind::Len), abi_param::<u64>(AbiKind::CounterPtr)];
    const USES: usize = 2;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, len, counter): Self::Parts) -> Self {
        // SAFETY: the host launcher passed an exclusively borrowed `AppendBuffer`: `len`
        // elements and their counter, in device memory, for this launch.
        unsafe { super::append::<T>(ptr, len, counter) }
    }
}

// SAFETY: elements, length and barrier word of an exclusively borrowed `GridVecBuffer`.
unsafe impl<T: DeviceCopy> KernelParam for crate::cg::GridVec<'_, T> {
    type Parts = (*mut T, usize, *mut u32);
    type Key = Self;
    const ABI: &'static [[u32; 3]] =
        &[abi_param::<T>(AbiKind::GridVecPtr), abi_param::<usize>(AbiKind::Len), abi_param::<u32>(AbiKind::BarrierPtr)];
    const USES: usize = 2;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, len, barrier): Self::Parts) -> Self {
        // SAFETY: the host launcher passed an exclusively borrowed `GridVecBuffer`: `len`
        // elements and their barrier word, in device memory, for this launch; every thread
        // receives the same one.
        unsafe { super::grid_vec::<T>(ptr, len, barrier) }
    }
}

macro_rules! pointer_param {
    ($($ptr:ty => $kind:ident),*) => {$(
        // SAFETY: the pointer as the host passed it; only `unsafe fn` kernels take one
        // (`UNSAFE`), whose launcher's caller vouches for it.
        unsafe impl<T> KernelParam for $ptr {
            type Parts = ($ptr,);
            type Key = Self;
            const ABI: &'static [[u32; 3]] = &[abi_param::<u64>(AbiKind::$kind)];
            const UNSAFE: bool = true;
            #[inline(always)]
            unsafe fn rebuild(parts: ($ptr,)) -> Self {
                parts.0
            }
        }
    )*};
}
pointer_param!(*const T => ConstPtr, *mut T => MutPtr);

// SAFETY: pointer, rows and columns of an exclusively borrowed `MatrixMut`, its shape checked
// against `I` and (`Within`) the launch by the host argument; the block shape by the launch.
unsafe impl<T: DeviceCopy, L: crate::matrix::Layout, I: crate::matrix::MatrixIndex> KernelParam
    for crate::matrix::DisjointMatrix<'_, T, L, I>
{
    type Parts = (*mut T, usize, usize);
    type Key = Self;
    const ABI: &'static [[u32; 3]] =
        &[abi_param::<T>(AbiKind::MatrixPtr), abi_matrix_rows::<Self>(), abi_param::<usize>(AbiKind::Len)];
    const NEEDS_SHAPE: Option<&'static str> = Some(
        "a `DisjointMatrix` is divided among threads by the block shape: the kernel also needs a \
         `shape: BlockShape<X, Y>` parameter (its launcher then checks the block shape)",
    );
    const USES: usize = 1;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, rows, cols): Self::Parts) -> Self {
        // SAFETY: the host launcher passed an exclusively borrowed `MatrixMut`: a device
        // allocation of at least `rows * cols` elements, a shape whose offsets fit the
        // parameter's index type (`matrix_shape_fits`, refused otherwise); every thread
        // receives the same one, and the layout is the parameter's type.
        unsafe { super::disjoint_matrix(ptr, rows, cols) }
    }
}

// SAFETY: pointer, rows and columns of a `MatrixRef`, its shape checked against `I` by the host
// argument.
unsafe impl<T: SliceElement, I: crate::matrix::MatrixIndex> KernelParam for crate::matrix::Matrix<'_, T, I> {
    type Parts = (*const T, usize, usize);
    type Key = Self;
    const ABI: &'static [[u32; 3]] =
        &[abi_param::<T>(AbiKind::MatrixRefPtr), abi_matrix_rows::<Self>(), abi_param::<usize>(AbiKind::Len)];
    const USES: usize = 1;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, rows, cols): Self::Parts) -> Self {
        // SAFETY: the host launcher passed a `MatrixRef`: a shared borrow of a device allocation
        // (host memory on the CPU device) of at least `rows * cols` elements and at least one,
        // unchanged during the launch, with a shape whose offsets fit the parameter's index
        // type (`matrix_shape_fits`, refused otherwise).
        unsafe { super::matrix(ptr, rows, cols) }
    }
}

// SAFETY: no parts; the shape is in the record's header, and every launch of the entry is
// refused unless its block has exactly this shape.
unsafe impl<const X: u32, const Y: u32, const Z: u32> KernelParam for crate::shape::BlockShape<X, Y, Z> {
    type Parts = ();
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[];
    const SHAPE: [u32; 3] = Self::DIMS;
    const ONCE: (u32, &'static str) = (1, "one `BlockShape` parameter is enough");
    const MADE_ON_DEVICE: bool = true;
    #[inline(always)]
    unsafe fn rebuild((): ()) -> Self {
        // SAFETY: the launcher of this entry refuses every block shape but this one (the shape
        // is in the ABI record, which `load` compared with the module's).
        unsafe { Self::new_unchecked() }
    }
}

// SAFETY: no parts; `NEEDS` keeps it to kernels launched only cooperatively.
unsafe impl KernelParam for crate::cg::GridGroup {
    type Parts = ();
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[];
    const NEEDS: (u32, &'static str) = (
        ABI_FLAG_COOPERATIVE,
        "a `GridGroup` parameter (grid sync) needs `#[kernel(cooperative)]`, so that the host launches this kernel \
         only cooperatively; use `cg::this_grid()` for grid ranks without sync",
    );
    const ONCE: (u32, &'static str) = (2, "one `GridGroup` parameter is enough");
    const MADE_ON_DEVICE: bool = true;
    #[inline(always)]
    unsafe fn rebuild((): ()) -> Self {
        // SAFETY: `#[kernel(cooperative)]` kernels are launched only through
        // `launch_cooperative`, and `#[kernel(multi_grid)]` kernels only through
        // `MultiGridLaunch::submit`; both use `cuLaunchCooperativeKernel` after checking that
        // the grid is co-resident (the CPU device: a cooperative `cohort_cpu` launch, after the
        // same check).
        unsafe { Self::new_unchecked() }
    }
}

// SAFETY: barrier block, rank and grid count, filled in by `MultiGridLaunch::submit` (the only
// launch of a `multi_grid` kernel, `NEEDS`).
unsafe impl KernelParam for crate::cg::MultiGridGroup {
    type Parts = (u64, u32, u32);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[
        abi_param::<crate::cg::MultiGridWords>(AbiKind::MultiGridPtr),
        abi_param::<u32>(AbiKind::Value),
        abi_param::<u32>(AbiKind::Value),
    ];
    const NEEDS: (u32, &'static str) = (
        ABI_FLAG_MULTI_GRID,
        "a `MultiGridGroup` parameter needs `#[kernel(multi_grid)]`, so that the host launches this kernel \
         only on every GPU of a `MultiGrid` at once",
    );
    const ONCE: (u32, &'static str) = (4, "one `MultiGridGroup` parameter is enough");
    const MADE_ON_DEVICE: bool = true;
    const FILLED_BY_MULTI_GRID: bool = true;
    #[inline(always)]
    unsafe fn rebuild((words, rank, grids): Self::Parts) -> Self {
        // SAFETY: `#[kernel(multi_grid)]` kernels are launched only through
        // `MultiGridLaunch::submit`, which launches the kernel cooperatively on every GPU of its
        // `MultiGrid` at once (co-residency checked on each), with the same configuration, this
        // grid's rank and the grid count, and a fresh barrier block of host-mapped memory that
        // no other launch uses meanwhile.
        unsafe { Self::new_unchecked(words, rank, grids) }
    }
}

// SAFETY: the parts of an exclusively borrowed `MultiGridVecBuffer` made for the launch's GPUs
// (checked by its host argument), in multi-grid launches only (`NEEDS`).
unsafe impl<T: DeviceCopy> KernelParam for crate::cg::MultiGridVec<'_, T> {
    type Parts = (*mut T, *const u64, usize, u32, *mut u32, u32);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[
        abi_param::<T>(AbiKind::MultiGridVecPtr),
        abi_param::<u64>(AbiKind::ConstPtr),
        abi_param::<usize>(AbiKind::Len),
        abi_param::<u32>(AbiKind::Value),
        abi_param::<u32>(AbiKind::BarrierPtr),
        abi_param::<u32>(AbiKind::Value),
    ];
    const NEEDS: (u32, &'static str) = (
        ABI_FLAG_MULTI_GRID,
        "a `MultiGridVec` parameter needs `#[kernel(multi_grid)]` (its phases are multi-grid barriers); \
         within one GPU use a `GridVec`",
    );
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((ptr, table, len, replicas, barrier, tag): Self::Parts) -> Self {
        // SAFETY: the host passed an exclusively borrowed `MultiGridVecBuffer` made for the
        // launch's GPUs (checked by `add_to`): this GPU's replica, the table of every replica's
        // address (peer access on), the barrier word of this GPU and the vector's tag, the same
        // in every grid, for this launch.
        unsafe { super::multi_grid_vec::<T>(ptr, table, len, replicas, barrier, tag) }
    }
}

/// The ABI record entry of a tensor map parameter: its kind, the element size and, in place of
/// an alignment, the rank.
const fn abi_tensor_map<T, const RANK: usize>(kind: AbiKind) -> [u32; 3] {
    [kind as u32, size_of::<T>() as u32, RANK as u32]
}

// SAFETY: the address of a map allocation the host argument (`&cohort_runtime::TensorMap`)
// owns, made for elements `T` and rank `RANK` (the argument's type), whose tensor lies inside a
// buffer the argument borrows shared (the tracker's read operand) for the launch.
unsafe impl<T: crate::tma::TensorElement, const RANK: usize> KernelParam for crate::tma::TensorMap<'_, T, RANK> {
    type Parts = (*const u8,);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[abi_tensor_map::<T, RANK>(AbiKind::TensorMapPtr)];
    const USES: usize = 2;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((map,): Self::Parts) -> Self {
        // SAFETY: the host passed such a map, alive and unchanged for the launch (it is the
        // launch's read operand too), its tensor not written by anyone during the launch.
        unsafe { crate::tma::TensorMap::from_raw(map as u64) }
    }
}

// SAFETY: as for `TensorMap`, the buffer borrowed exclusively (the tracker's write operand), and
// its map refused by the host if its strides let two boxes overlap.
unsafe impl<T: crate::tma::TensorElement, const RANK: usize> KernelParam for crate::tma::TensorMapMut<'_, T, RANK> {
    type Parts = (*const u8,);
    type Key = Self;
    const ABI: &'static [[u32; 3]] = &[abi_tensor_map::<T, RANK>(AbiKind::TensorMapMutPtr)];
    const USES: usize = 2;
    const NO_PADDING: () = T::__NO_PADDING;
    #[inline(always)]
    unsafe fn rebuild((map,): Self::Parts) -> Self {
        // SAFETY: the host passed such a map, alive and unchanged for the launch, its tensor's
        // buffer exclusively this launch's; boxes of different blocks are disjoint (`owned_box`
        // and the host's stride check).
        unsafe { crate::tma::TensorMapMut::from_raw(map as u64) }
    }
}

// --- Child launches (dynamic parallelism) ------------------------------------------------------

/// What a child launch (`launch_from_device`) does with a parameter keyed `Self`
/// ([`KernelParam::Key`]): the check of a staged argument and its PTX parts. Keyed by the
/// parameter (not by the argument's type), so that the launcher's call resolves in its own
/// body, as a direct call would.
pub trait ChildKey {
    /// An argument between its check and its parts.
    type Staged<'a>: Copy
    where
        Self: 'a;
    /// The PTX parts of the parameter.
    type Parts: PtxParts;
    /// Refuses an argument the child can't take (`param` is the parameter's position, for the
    /// error).
    ///
    /// # Errors
    /// A slice outside global memory.
    fn check(staged: Self::Staged<'_>, param: u32) -> Result<(), crate::launch::LaunchError>;
    /// The PTX parts.
    fn parts(staged: Self::Staged<'_>) -> Self::Parts;
}

/// A device-side argument of a child launch (`launch_from_device`) for a parameter keyed `K`
/// into stream `S`. The launcher first *stages* every argument and checks it (in parameter
/// order, before taking a launch slot), then writes each one's parts into the child's
/// parameter buffer ([`ChildKey`]).
///
/// # Safety
/// The staged argument must give what the kind's `KernelParam::rebuild` relies on for a child
/// launched into `S` once `ChildKey::check` passed (memory in global memory, not raced on by the
/// parent while the child may run).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a child launch for a `{K}` parameter",
    label = "not a child-launch argument of this parameter",
    note = "a child launch (`launch_from_device`) passes values, `&[T]` and `DisjointSlice<T>` (into the streams \
            that allow them: see `cohort::launch`) and raw pointers"
)]
pub unsafe trait ChildArg<'a, K: ChildKey + 'a, S: crate::launch::DeviceStream>: Sized {
    /// The argument, staged for the check.
    fn stage(self) -> K::Staged<'a>;
}

impl<T: DeviceCopy> ChildKey for ByValue<T> {
    type Staged<'a>
        = T
    where
        Self: 'a;
    type Parts = (T,);
    #[inline(always)]
    fn check(_: T, _: u32) -> Result<(), crate::launch::LaunchError> {
        Ok(())
    }
    #[inline(always)]
    fn parts(staged: T) -> (T,) {
        (staged,)
    }
}

// SAFETY: a value is any bytes of its type.
unsafe impl<T: DeviceCopy, S: crate::launch::DeviceStream> ChildArg<'_, ByValue<T>, S> for T {
    #[inline(always)]
    fn stage(self) -> T {
        self
    }
}

impl<E> ChildKey for &[E] {
    type Staged<'a>
        = &'a [E]
    where
        Self: 'a;
    type Parts = (*const E, usize);
    #[inline(always)]
    fn check(staged: &[E], param: u32) -> Result<(), crate::launch::LaunchError> {
        crate::launch::check_global::<E>(staged, param)
    }
    #[inline(always)]
    fn parts(staged: &[E]) -> Self::Parts {
        (staged.as_ptr(), staged.len())
    }
}

// SAFETY: checked to be global memory (`ChildKey::check`); `SharesSlice` keeps what the parent
// may still write to tail launches.
unsafe impl<'a, 'k: 'a, E, S: crate::launch::SharesSlice<E>> ChildArg<'a, &'k [E], S> for &'a [E] {
    #[inline(always)]
    fn stage(self) -> &'a [E] {
        self
    }
}

// SAFETY: as for `&[E]`.
unsafe impl<'a, 'k: 'a, E, S: crate::launch::SharesSlice<E>, const N: usize> ChildArg<'a, &'k [E], S> for &'a [E; N] {
    #[inline(always)]
    fn stage(self) -> &'a [E] {
        self
    }
}

impl<T, K: crate::slice::IndexKind> ChildKey for crate::slice::DisjointSlice<'_, T, K> {
    type Staged<'a>
        = (*mut T, usize)
    where
        Self: 'a;
    type Parts = (*mut T, usize);
    #[inline(always)]
    fn check(staged: (*mut T, usize), param: u32) -> Result<(), crate::launch::LaunchError> {
        crate::launch::check_global_ptr::<T>(staged.0, staged.1, param)
    }
    #[inline(always)]
    fn parts(staged: (*mut T, usize)) -> Self::Parts {
        staged
    }
}

// SAFETY: the parent's `DisjointSlice` moved into the child, checked to be global memory, in a
// tail launch only (`AfterParent`).
unsafe impl<
    'a,
    'k: 'a,
    T: 'a,
    K: crate::slice::IndexKind + 'a,
    S: crate::launch::AfterParent,
    C: crate::launch::ChildDisjoint<T>,
> ChildArg<'a, crate::slice::DisjointSlice<'k, T, K>, S> for C
{
    #[inline(always)]
    fn stage(self) -> (*mut T, usize) {
        crate::launch::ChildDisjoint::into_raw_parts(self)
    }
}

macro_rules! pointer_child {
    ($($ptr:ty),*) => {$(
        impl<T> ChildKey for $ptr {
            type Staged<'a>
                = $ptr
            where
                Self: 'a;
            type Parts = ($ptr,);
            #[inline(always)]
            fn check(_: $ptr, _: u32) -> Result<(), crate::launch::LaunchError> {
                Ok(())
            }
            #[inline(always)]
            fn parts(staged: $ptr) -> Self::Parts {
                (staged,)
            }
        }
        // SAFETY: only `unsafe fn` kernels take raw pointers; their device launcher is `unsafe`.
        unsafe impl<'a, T: 'a, S: crate::launch::DeviceStream> ChildArg<'a, $ptr, S> for $ptr {
            #[inline(always)]
            fn stage(self) -> $ptr {
                self
            }
        }
    )*};
}
pointer_child!(*const T, *mut T);

/// The kinds a child launch can't pass (their memory would need host-side bookkeeping the device
/// runtime doesn't do): `ChildKey` impls with an uninhabited staged argument and no `ChildArg`
/// impl, so that a kernel taking one still has a `launch_from_device` that type-checks, which no
/// argument can call.
macro_rules! no_child {
    ($([$($g:tt)*] $ty:ty;)*) => {$(
        impl<$($g)*> ChildKey for $ty {
            type Staged<'a>
                = core::convert::Infallible
            where
                Self: 'a;
            type Parts = <$ty as KernelParam>::Parts;
            #[inline(always)]
            fn check(staged: core::convert::Infallible, _: u32) -> Result<(), crate::launch::LaunchError> {
                match staged {}
            }
            #[inline(always)]
            fn parts(staged: core::convert::Infallible) -> Self::Parts {
                match staged {}
            }
        }
    )*};
}
no_child! {
    ['k, T: DeviceCopy] crate::slice::AppendSlice<'k, T>;
    ['k, T: DeviceCopy] crate::cg::GridVec<'k, T>;
    ['k, T: DeviceCopy, L: crate::matrix::Layout, I: crate::matrix::MatrixIndex] crate::matrix::DisjointMatrix<'k, T, L, I>;
    ['k, T: SliceElement, I: crate::matrix::MatrixIndex] crate::matrix::Matrix<'k, T, I>;
    ['k, T: DeviceCopy] crate::cg::MultiGridVec<'k, T>;
    ['k, T: crate::tma::TensorElement, const RANK: usize] crate::tma::TensorMap<'k, T, RANK>;
    ['k, T: crate::tma::TensorElement, const RANK: usize] crate::tma::TensorMapMut<'k, T, RANK>;
}

/// What a made-on-device parameter `P` asks of a child launch: its block shape.
///
/// # Errors
/// [`LaunchError::BlockShape`](crate::launch::LaunchError::BlockShape) for another block shape.
#[inline(always)]
pub fn child_made_on_device<P: KernelParam>(
    config: &crate::launch::LaunchConfig,
) -> Result<(), crate::launch::LaunchError> {
    if P::SHAPE == [0; 3] { Ok(()) } else { crate::launch::check_shape(config, P::SHAPE) }
}
