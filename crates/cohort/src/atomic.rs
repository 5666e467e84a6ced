//! Atomic operations on global and shared memory (Programming Guide §"Atomic Functions",
//! PTX ISA §"Memory Consistency Model").
//!
//! [`Atomic<T, S>`] is a value of `T` in state space `S` ([`Global`], [`Shared`] or
//! [`Generic`]) that threads update atomically. The usual names are aliases:
//! [`AtomicU32`] = `Atomic<u32, Global>`, and so on. Every operation takes a
//! [`core::sync::atomic::Ordering`] and runs at device scope (block scope in shared memory,
//! which only the block can see); the `*_scoped` forms also take a [`Scope`]. Each is emitted as the PTX instruction with exactly those qualifiers
//! (`atom.acq_rel.gpu.global.add.u32`, …), not through `core::sync::atomic`, whose nvptx
//! lowering rustc does not get right in every case.
//!
//! | CUDA C++ | Cohort | PTX |
//! |---|---|---|
//! | `atomicAdd` | [`fetch_add`](Atomic::fetch_add), [`add`](Atomic::add) (no result) | `atom.add` / `red.add` |
//! | `atomicSub` | [`fetch_sub`](Atomic::fetch_sub) | `atom.add` of the negation |
//! | `atomicExch` | [`swap`](Atomic::swap) | `atom.exch` |
//! | `atomicMin` / `atomicMax` | [`fetch_min`](Atomic::fetch_min), [`fetch_max`](Atomic::fetch_max) | `atom.min/max` (ints), CAS loop (floats) |
//! | `atomicInc` / `atomicDec` | [`fetch_inc`](Atomic::fetch_inc), [`fetch_dec`](Atomic::fetch_dec) | `atom.inc/dec.u32`, CAS loop otherwise |
//! | `atomicCAS` | [`compare_exchange`](Atomic::compare_exchange) | `atom.cas` |
//! | `atomicAnd` / `Or` / `Xor` | [`fetch_and`](Atomic::fetch_and), [`fetch_or`](Atomic::fetch_or), [`fetch_xor`](Atomic::fetch_xor) | `atom.and/or/xor` |
//! | (CAS loop by hand) | [`fetch_update`](Atomic::fetch_update) | `atom.cas` loop |
//! | `cuda::atomic_ref::load/store` | [`load`](Atomic::load), [`store`](Atomic::store) | `ld.relaxed/acquire`, `st.relaxed/release` |
//! | `cuda::thread_scope_*` | [`Scope`] | `.cta` / `.gpu` / `.sys` |
//!
//! Orderings map to PTX as the CUDA C++ memory model prescribes: `Relaxed` → `.relaxed`,
//! `Acquire` → `.acquire`, `Release` → `.release`, `AcqRel` → `.acq_rel`, and `SeqCst` →
//! `fence.sc.<scope>` followed by the `.acq_rel` (or `.acquire` load, `.release` store) form.
//!
//! **Floats.** `fetch_add`/`fetch_sub` are native (`atom.add.f32/.f64`). `fetch_min` and
//! `fetch_max` are CAS loops with NumPy's `nanmin`/`nanmax` policy (IEEE `minNum`/`maxNum`, as
//! CUDA's `fminf`/`fmaxf`): a NaN operand is ignored unless both are NaN. `fetch_min_nan` and
//! `fetch_max_nan` follow NumPy's `min`/`max`: a NaN on either side wins and stays. Every CAS
//! loop compares **bit patterns**, so it ends when the value holds a NaN too.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
pub use core::sync::atomic::Ordering;

#[doc(inline)]
pub use crate::raw::{Scope, SpaceKind};

/// State spaces an [`Atomic`] can live in.
pub trait Space: sealed::Sealed + 'static {
    /// Which one.
    const KIND: SpaceKind;
    /// The scope of the operations that take none: [`Scope::Block`] in shared memory (only
    /// the block can see it), [`Scope::Device`] elsewhere.
    const DEFAULT_SCOPE: Scope;
}

/// Device (global) memory.
#[derive(Debug)]
pub enum Global {}
/// The block's shared memory.
#[derive(Debug)]
pub enum Shared {}
/// Either; resolved by the hardware at run time.
#[derive(Debug)]
pub enum Generic {}

impl Space for Global {
    const KIND: SpaceKind = SpaceKind::Global;
    const DEFAULT_SCOPE: Scope = Scope::Device;
}
impl Space for Shared {
    const KIND: SpaceKind = SpaceKind::Shared;
    const DEFAULT_SCOPE: Scope = Scope::Block;
}
impl Space for Generic {
    const KIND: SpaceKind = SpaceKind::Generic;
    const DEFAULT_SCOPE: Scope = Scope::Device;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Global {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Generic {}
}

/// A `T` in state space `S` that threads access atomically.
///
/// It has the layout of `T`, so a device buffer of `u32` is a slice of `Atomic<u32>` for a
/// kernel (the host passes `&mut DeviceBuffer<u32>` to a `&[AtomicU32]` parameter and reads
/// plain `u32` back).
#[repr(transparent)]
pub struct Atomic<T, S: Space = Global> {
    v: UnsafeCell<T>,
    _space: PhantomData<S>,
}

// SAFETY: every access to the value goes through atomic PTX instructions.
unsafe impl<T: Send, S: Space> Sync for Atomic<T, S> {}
// SAFETY: as above; moving the cell moves a plain `T`.
unsafe impl<T: Send, S: Space> Send for Atomic<T, S> {}

impl<T: core::fmt::Debug, S: Space> core::fmt::Debug for Atomic<T, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Atomic { .. }")
    }
}

/// `Atomic<u32>` in global memory.
pub type AtomicU32 = Atomic<u32, Global>;
/// `Atomic<i32>` in global memory.
pub type AtomicI32 = Atomic<i32, Global>;
/// `Atomic<u64>` in global memory.
pub type AtomicU64 = Atomic<u64, Global>;
/// `Atomic<i64>` in global memory.
pub type AtomicI64 = Atomic<i64, Global>;
/// `Atomic<f32>` in global memory.
pub type AtomicF32 = Atomic<f32, Global>;
/// `Atomic<f64>` in global memory.
pub type AtomicF64 = Atomic<f64, Global>;

impl<T, S: Space> Atomic<T, S> {
    /// A new atomic holding `v`.
    ///
    /// Atomic instructions work only on global and shared memory (PTX ISA, `atom`: "with
    /// generic addressing, where the address points to .global or .shared space"), and an
    /// `Atomic<T, S>` emits instructions for space `S`. A value made here lives wherever it is
    /// put: a local variable is in *local* memory, where every operation would be undefined;
    /// a device `static` is in global memory. So safe code gets atomics only from memory that
    /// really is in their space: kernel parameters (`&[AtomicU32]`, global), shared memory
    /// ([`SharedSlice::atomic`](crate::shared::SharedSlice::atomic), shared).
    ///
    /// # Safety
    /// The value must be used atomically only where it lives in memory of space `S`: as a
    /// `static` for [`Global`] or [`Generic`] (device statics are `.global`), never as a local
    /// variable, and never for [`Shared`] (a `static` is not in shared memory).
    #[must_use]
    pub const unsafe fn new(v: T) -> Self {
        Self { v: UnsafeCell::new(v), _space: PhantomData }
    }

    /// Views `ptr` as an atomic.
    ///
    /// # Safety
    /// `ptr` must be valid and aligned for `T` for `'a`, lie in state space `S`, and be
    /// accessed only atomically for `'a`.
    #[must_use]
    pub const unsafe fn from_ptr<'a>(ptr: *mut T) -> &'a Self {
        // SAFETY: `Atomic<T, S>` is `repr(transparent)` over `T`; the rest is the caller's.
        unsafe { &*(ptr as *const Self) }
    }

    /// The address of the value.
    #[must_use]
    pub const fn as_ptr(&self) -> *mut T {
        self.v.get()
    }

    /// The value's address for the host arms of the operations (the CPU device). A shared-memory
    /// atomic must lie in the running block's shared window: the `&'static` that
    /// [`SharedSlice::atomic`](crate::shared::SharedSlice::atomic) returns could otherwise be
    /// kept (in host-only code) past its block and used after the window was freed or given to
    /// another block; such a use ends the thread with a misuse error instead.
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    #[track_caller]
    fn host_ptr(&self) -> *mut T {
        if let SpaceKind::Shared = S::KIND {
            cohort_cpu::check_in_shared_window("shared-memory atomic", self.v.get().cast(), size_of::<T>());
        }
        self.v.get()
    }

    /// The value, through exclusive access (no atomics needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.v.get_mut()
    }

    /// Consumes the atomic.
    pub fn into_inner(self) -> T {
        self.v.into_inner()
    }
}

/// The single PTX `.sem` for a compare-and-swap with separate success and failure orderings.
#[inline(always)]
const fn cas_order(success: Ordering, failure: Ordering) -> Ordering {
    use Ordering::*;
    match (success, failure) {
        (SeqCst, _) | (_, SeqCst) => SeqCst,
        (AcqRel, _) | (Release, Acquire) => AcqRel,
        (Relaxed, Acquire) => Acquire,
        (s, _) => s,
    }
}

// --- the PTX instructions: `raw`'s atomic families, one instruction per (ordering, scope, space)

/// Emits `fence.sc.<scope>` for `SeqCst` and returns the PTX ordering to use after it.
#[inline(always)]
fn seq_cst_prefix(order: Ordering, scope: Scope) -> Ordering {
    if let Ordering::SeqCst = order {
        crate::raw::fence_sc(scope);
        Ordering::AcqRel
    } else {
        order
    }
}

/// The address operand for space `S`: the generic address itself, except for shared memory,
/// whose atomics take the shared-window address (generic minus the window base). Written as
/// integer arithmetic rather than `cvta.to.shared` so that LLVM folds it with
/// [`generic_from_shared`](crate::shared::generic_from_shared) back to the 32-bit address the
/// atomic was made from: no conversion instructions reach the SASS.
#[inline(always)]
fn space_address<S: Space>(generic: u64) -> u64 {
    match S::KIND {
        SpaceKind::Shared => generic.wrapping_sub(crate::raw::shared_window_base()),
        _ => generic,
    }
}

/// The bit-level operations every atomic type shares (load, store, swap, CAS, CAS loops).
macro_rules! atomic_common {
    ($t:ty, $bits:ty, $to:expr, $from:expr; ld = $ld:ident, st = $st:ident, exch = $exch:ident, cas = $cas:ident) => {
        impl<S: Space> Atomic<$t, S> {
            #[inline(always)]
            fn addr(&self) -> u64 {
                space_address::<S>(self.v.get() as u64)
            }

            /// Loads the value (`ld.relaxed` / `ld.acquire`; `SeqCst` adds `fence.sc`).
            ///
            /// # Panics
            /// On `Release` or `AcqRel`, as `core::sync::atomic` does.
            #[inline(always)]
            #[must_use]
            pub fn load(&self, order: Ordering) -> $t {
                self.load_scoped(order, S::DEFAULT_SCOPE)
            }

            /// [`load`](Self::load) at `scope`.
            #[inline(always)]
            #[must_use]
            pub fn load_scoped(&self, order: Ordering, scope: Scope) -> $t {
                crate::host::on_device!("Atomic::load" => {
                    let order = match order {
                        Ordering::Release | Ordering::AcqRel => panic!("there is no Release or AcqRel load"),
                        Ordering::SeqCst => { crate::raw::fence_sc(scope); Ordering::Acquire }
                        o => o,
                    };
                    // SAFETY: the address of this atomic in its state space, valid and aligned, accessed
                    // only atomically (guaranteed by the `Atomic` type's constructors).
                    let bits = unsafe { crate::raw::$ld(self.addr(), order, scope, S::KIND) as $bits };
                    let from = $from;
                    from(bits)
                } host => {
                    use crate::host::HostAtomic;
                    if matches!(order, Ordering::Release | Ordering::AcqRel) { panic!("there is no Release or AcqRel load") }
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::load(self.host_ptr()) }
                })
            }

            /// Stores `v` (`st.relaxed` / `st.release`; `SeqCst` adds `fence.sc`).
            ///
            /// # Panics
            /// On `Acquire` or `AcqRel`, as `core::sync::atomic` does.
            #[inline(always)]
            pub fn store(&self, v: $t, order: Ordering) {
                self.store_scoped(v, order, S::DEFAULT_SCOPE)
            }

            /// [`store`](Self::store) at `scope`.
            #[inline(always)]
            pub fn store_scoped(&self, v: $t, order: Ordering, scope: Scope) {
                crate::host::on_device!("Atomic::store" => {
                    let order = match order {
                        Ordering::Acquire | Ordering::AcqRel => panic!("there is no Acquire or AcqRel store"),
                        Ordering::SeqCst => { crate::raw::fence_sc(scope); Ordering::Release }
                        o => o,
                    };
                    let to = $to;
                    let bits: $bits = to(v);
                    // SAFETY: the address of this atomic in its state space, valid and aligned, accessed
                    // only atomically (guaranteed by the `Atomic` type's constructors).
                    unsafe { crate::raw::$st(self.addr(), bits as _, order, scope, S::KIND) }
                } host => {
                    use crate::host::HostAtomic;
                    if matches!(order, Ordering::Acquire | Ordering::AcqRel) { panic!("there is no Acquire or AcqRel store") }
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::store(self.host_ptr(), v) }
                })
            }

            /// Stores `v` and returns the previous value (`atomicExch`).
            #[doc(alias = "atomicExch")]
            #[inline(always)]
            pub fn swap(&self, v: $t, order: Ordering) -> $t {
                self.swap_scoped(v, order, S::DEFAULT_SCOPE)
            }

            /// [`swap`](Self::swap) at `scope`.
            #[inline(always)]
            pub fn swap_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                crate::host::on_device!("Atomic::swap" => {
                    let order = seq_cst_prefix(order, scope);
                    let to = $to;
                    let from = $from;
                    let bits: $bits = to(v);
                    // SAFETY: the address of this atomic in its state space, valid and aligned, accessed
                    // only atomically (guaranteed by the `Atomic` type's constructors).
                    from(unsafe { crate::raw::$exch(self.addr(), bits as _, order, scope, S::KIND) as $bits })
                } host => {
                    use crate::host::HostAtomic;
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "exch", v) }
                })
            }

            /// `atomicCAS` in Rust's shape: if the value's bits equal `current`'s, store `new`;
            /// `Ok(previous)` on success, `Err(actual)` otherwise. Compares **bit patterns**
            /// (so a stored NaN compares equal to the same NaN).
            #[doc(alias = "atomicCAS")]
            #[inline(always)]
            pub fn compare_exchange(&self, current: $t, new: $t, success: Ordering, failure: Ordering) -> Result<$t, $t> {
                self.compare_exchange_scoped(current, new, success, failure, S::DEFAULT_SCOPE)
            }

            /// [`compare_exchange`](Self::compare_exchange) at `scope`.
            #[inline(always)]
            pub fn compare_exchange_scoped(&self, current: $t, new: $t, success: Ordering, failure: Ordering, scope: Scope) -> Result<$t, $t> {
                let to = $to;
                let from = $from;
                let cur = to(current);
                let old = self.cas_bits(cur, to(new), cas_order(success, failure), scope);
                if old == cur { Ok(from(old)) } else { Err(from(old)) }
            }

            /// As [`compare_exchange`](Self::compare_exchange); a GPU CAS never fails
            /// spuriously, so the two are the same.
            #[inline(always)]
            pub fn compare_exchange_weak(&self, current: $t, new: $t, success: Ordering, failure: Ordering) -> Result<$t, $t> {
                self.compare_exchange(current, new, success, failure)
            }

            #[inline(always)]
            fn cas_bits(&self, cur: $bits, new: $bits, order: Ordering, scope: Scope) -> $bits {
                crate::host::on_device!("Atomic::compare_exchange" => {
                    let order = seq_cst_prefix(order, scope);
                    // SAFETY: the address of this atomic in its state space, valid and aligned, accessed
                    // only atomically (guaranteed by the `Atomic` type's constructors).
                    unsafe { crate::raw::$cas(self.addr(), cur as _, new as _, order, scope, S::KIND) as $bits }
                } host => {
                    use crate::host::HostAtomic;
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$bits as HostAtomic>::cas(self.host_ptr().cast::<$bits>(), cur, new) }
                })
            }

            /// Applies `f` in a CAS loop until it succeeds or `f` returns `None`; returns
            /// `Ok(previous)` or `Err(current)`. The loop compares bit patterns, so it ends on
            /// NaN too. `f` may run several times.
            #[inline(always)]
            pub fn fetch_update<F: FnMut($t) -> Option<$t>>(&self, set_order: Ordering, fetch_order: Ordering, f: F) -> Result<$t, $t> {
                self.fetch_update_scoped(set_order, fetch_order, S::DEFAULT_SCOPE, f)
            }

            /// [`fetch_update`](Self::fetch_update) at `scope`.
            #[inline(always)]
            pub fn fetch_update_scoped<F: FnMut($t) -> Option<$t>>(&self, set_order: Ordering, fetch_order: Ordering, scope: Scope, mut f: F) -> Result<$t, $t> {
                let to = $to;
                let from = $from;
                let mut prev = to(self.load_scoped(fetch_order, scope));
                loop {
                    let Some(next) = f(from(prev)) else { return Err(from(prev)) };
                    let seen = self.cas_bits(prev, to(next), cas_order(set_order, fetch_order), scope);
                    if seen == prev {
                        return Ok(from(prev));
                    }
                    prev = seen;
                }
            }

            /// A CAS loop that stops without writing when `f` leaves the bits unchanged. (Unused
            /// by `u32`, whose inc and dec are native.)
            #[inline(always)]
            #[allow(dead_code)]
            fn rmw_loop(&self, order: Ordering, scope: Scope, mut f: impl FnMut($t) -> $t) -> $t {
                let to = $to;
                let from = $from;
                let mut prev = to(self.load_scoped(Ordering::Relaxed, scope));
                loop {
                    let next = to(f(from(prev)));
                    if next == prev {
                        // Nothing to write; still give the ordering the caller asked for.
                        match order {
                            Ordering::Relaxed | Ordering::Release => {}
                            _ => crate::raw::fence_acq_rel(scope),
                        }
                        return from(prev);
                    }
                    let seen = self.cas_bits(prev, next, order, scope);
                    if seen == prev {
                        return from(prev);
                    }
                    prev = seen;
                }
            }
        }
    };
}

/// Integer atomics: native add/min/max/and/or/xor, and inc/dec (native for `u32`, CAS loops
/// otherwise). Each operation names its `raw` instruction family (`i32` adds with the `u32`
/// form, a bit pattern of the same width).
macro_rules! atomic_int {
    ($t:ty, $b:literal, $add:literal, $minmax:literal; add = $radd:ident, min = $rmin:ident, max = $rmax:ident,
     and = $rand:ident, or = $ror:ident, xor = $rxor:ident, red = $rred:ident,
     common = ($ld:ident, $st:ident, $exch:ident, $cas:ident), incdec = $($incdec:tt)+) => {
        atomic_common!($t, $t, |v: $t| v, |v: $t| v; ld = $ld, st = $st, exch = $exch, cas = $cas);

        impl<S: Space> Atomic<$t, S> {
            atomic_int!(@rmw $t, fetch_add, fetch_add_scoped, "add", $add, $radd, "atomicAdd", "Adds `v` (wrapping) and returns the previous value.");
            atomic_int!(@rmw $t, fetch_min, fetch_min_scoped, "min", $minmax, $rmin, "atomicMin", "Stores the minimum of the value and `v`; returns the previous value.");
            atomic_int!(@rmw $t, fetch_max, fetch_max_scoped, "max", $minmax, $rmax, "atomicMax", "Stores the maximum of the value and `v`; returns the previous value.");
            atomic_int!(@rmw $t, fetch_and, fetch_and_scoped, "and", $b, $rand, "atomicAnd", "Bitwise AND with `v`; returns the previous value.");
            atomic_int!(@rmw $t, fetch_or, fetch_or_scoped, "or", $b, $ror, "atomicOr", "Bitwise OR with `v`; returns the previous value.");
            atomic_int!(@rmw $t, fetch_xor, fetch_xor_scoped, "xor", $b, $rxor, "atomicXor", "Bitwise XOR with `v`; returns the previous value.");

            /// Subtracts `v` (wrapping) and returns the previous value (`atomicSub`).
            #[doc(alias = "atomicSub")]
            #[inline(always)]
            pub fn fetch_sub(&self, v: $t, order: Ordering) -> $t {
                self.fetch_add(v.wrapping_neg(), order)
            }

            /// [`fetch_sub`](Self::fetch_sub) at `scope`.
            #[inline(always)]
            pub fn fetch_sub_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                self.fetch_add_scoped(v.wrapping_neg(), order, scope)
            }

            /// Adds `v` without returning anything (`red.add`): cheaper when the old value is
            /// not needed. `order` must be `Relaxed`, `Release` or `SeqCst`.
            #[inline(always)]
            pub fn add(&self, v: $t, order: Ordering) {
                self.add_scoped(v, order, S::DEFAULT_SCOPE)
            }

            /// [`add`](Self::add) at `scope`.
            #[inline(always)]
            pub fn add_scoped(&self, v: $t, order: Ordering, scope: Scope) {
                crate::host::on_device!("Atomic::add" => {
                    let order = match seq_cst_prefix(order, scope) {
                        Ordering::Relaxed => Ordering::Relaxed,
                        Ordering::Release | Ordering::AcqRel => Ordering::Release,
                        _ => panic!("`add` has no Acquire form; use `fetch_add`"),
                    };
                    // SAFETY: the address of this atomic in its state space, valid and aligned,
                    // accessed only atomically (guaranteed by the `Atomic` type's constructors).
                    unsafe { crate::raw::$rred(self.addr(), v as _, order, scope, S::KIND) }
                } host => {
                    use crate::host::HostAtomic;
                    if matches!(order, Ordering::Acquire) { panic!("`add` has no Acquire form; use `fetch_add`") }
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "add", v) };
                })
            }

            /// `atomicInc`: stores `if old >= limit { 0 } else { old + 1 }`; returns `old`.
            #[doc(alias = "atomicInc")]
            #[inline(always)]
            pub fn fetch_inc(&self, limit: $t, order: Ordering) -> $t {
                self.fetch_inc_scoped(limit, order, S::DEFAULT_SCOPE)
            }

            /// `atomicDec`: stores `if old == 0 || old > limit { limit } else { old - 1 }`;
            /// returns `old`.
            #[doc(alias = "atomicDec")]
            #[inline(always)]
            pub fn fetch_dec(&self, limit: $t, order: Ordering) -> $t {
                self.fetch_dec_scoped(limit, order, S::DEFAULT_SCOPE)
            }

            atomic_int!(@incdec $t, $($incdec)+);
        }
    };
    // `atom.inc` / `atom.dec` (`u32` only).
    (@incdec $t:ty, native($inc:ident, $dec:ident)) => {
        /// [`fetch_inc`](Self::fetch_inc) at `scope`.
        #[inline(always)]
        pub fn fetch_inc_scoped(&self, limit: $t, order: Ordering, scope: Scope) -> $t {
            crate::host::on_device!("Atomic::fetch_inc" => {
                let order = seq_cst_prefix(order, scope);
                // SAFETY: the address of this atomic in its state space, valid and aligned,
                // accessed only atomically (guaranteed by the `Atomic` type's constructors).
                unsafe { crate::raw::$inc(self.addr(), limit, order, scope, S::KIND) }
            } host => {
                use crate::host::HostAtomic;
                // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                // contract; a shared one lies in the running block's window, which `host_ptr`
                // checks), aligned, and accessed only atomically.
                unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "inc", limit) }
            })
        }

        /// [`fetch_dec`](Self::fetch_dec) at `scope`.
        #[inline(always)]
        pub fn fetch_dec_scoped(&self, limit: $t, order: Ordering, scope: Scope) -> $t {
            crate::host::on_device!("Atomic::fetch_dec" => {
                let order = seq_cst_prefix(order, scope);
                // SAFETY: as in `fetch_inc_scoped`.
                unsafe { crate::raw::$dec(self.addr(), limit, order, scope, S::KIND) }
            } host => {
                use crate::host::HostAtomic;
                // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                // contract; a shared one lies in the running block's window, which `host_ptr`
                // checks), aligned, and accessed only atomically.
                unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "dec", limit) }
            })
        }
    };
    // CAS loops (no native instruction for the type).
    (@incdec $t:ty, cas_loop) => {
        /// [`fetch_inc`](Self::fetch_inc) at `scope`.
        #[inline(always)]
        pub fn fetch_inc_scoped(&self, limit: $t, order: Ordering, scope: Scope) -> $t {
            self.rmw_loop(order, scope, |old| if old >= limit { 0 } else { old + 1 })
        }

        /// [`fetch_dec`](Self::fetch_dec) at `scope`.
        #[inline(always)]
        pub fn fetch_dec_scoped(&self, limit: $t, order: Ordering, scope: Scope) -> $t {
            self.rmw_loop(order, scope, |old| if old == 0 || old > limit { limit } else { old - 1 })
        }
    };
    (@rmw $t:ty, $name:ident, $scoped:ident, $op:literal, $ty:literal, $raw:ident, $alias:literal, $doc:literal) => {
        #[doc = $doc]
        #[doc = concat!("(`", $alias, "`; PTX `atom.", $op, ".", $ty, "`)")]
        #[doc(alias = $alias)]
        #[inline(always)]
        pub fn $name(&self, v: $t, order: Ordering) -> $t {
            self.$scoped(v, order, S::DEFAULT_SCOPE)
        }

        #[doc = concat!("[`", stringify!($name), "`](Self::", stringify!($name), ") at `scope`.")]
        #[inline(always)]
        pub fn $scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
            crate::host::on_device!(stringify!($name) => {
                let order = seq_cst_prefix(order, scope);
                // SAFETY: the address of this atomic in its state space, valid and aligned,
                // accessed only atomically (guaranteed by the `Atomic` type's constructors).
                unsafe { crate::raw::$raw(self.addr(), v as _, order, scope, S::KIND) as $t }
                } host => {
                    use crate::host::HostAtomic;
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), $op, v) }
                })
        }
    };
}

atomic_int!(u32, "b32", "u32", "u32"; add = atom_add_u32, min = atom_min_u32, max = atom_max_u32,
    and = atom_and_b32, or = atom_or_b32, xor = atom_xor_b32, red = red_add_u32,
    common = (ld_scoped_b32, st_scoped_b32, atom_exch_b32, atom_cas_b32), incdec = native(atom_inc_u32, atom_dec_u32));
atomic_int!(i32, "b32", "u32", "s32"; add = atom_add_u32, min = atom_min_s32, max = atom_max_s32,
    and = atom_and_b32, or = atom_or_b32, xor = atom_xor_b32, red = red_add_u32,
    common = (ld_scoped_b32, st_scoped_b32, atom_exch_b32, atom_cas_b32), incdec = cas_loop);
atomic_int!(u64, "b64", "u64", "u64"; add = atom_add_u64, min = atom_min_u64, max = atom_max_u64,
    and = atom_and_b64, or = atom_or_b64, xor = atom_xor_b64, red = red_add_u64,
    common = (ld_scoped_b64, st_scoped_b64, atom_exch_b64, atom_cas_b64), incdec = cas_loop);
atomic_int!(i64, "b64", "u64", "s64"; add = atom_add_u64, min = atom_min_s64, max = atom_max_s64,
    and = atom_and_b64, or = atom_or_b64, xor = atom_xor_b64, red = red_add_u64,
    common = (ld_scoped_b64, st_scoped_b64, atom_exch_b64, atom_cas_b64), incdec = cas_loop);

/// The same atomic integers seen with the other signedness, as CUDA C++ casts `int*` to
/// `unsigned*` for `atomicInc`: `as_unsigned` / `as_signed` on one atomic, [`flip_sign`] on a
/// slice. The bits are shared; each operation interprets them as its
/// type does (`fetch_min` on the signed view compares as signed, `fetch_inc` on the unsigned
/// one wraps as `atomicInc`). Both views only ever access the value atomically.
macro_rules! sign_views {
    ($s:ty, $u:ty) => {
        impl<S: Space> Atomic<$s, S> {
            #[doc = concat!("This atomic's bits as an `Atomic<", stringify!($u), ">` (`(unsigned*)&x` in CUDA C++).")]
            #[inline(always)]
            #[must_use]
            pub fn as_unsigned(&self) -> &Atomic<$u, S> {
                // SAFETY: `Atomic` is `repr(transparent)` over `UnsafeCell<T>` (and a ZST), and the
                // two integers have one size, alignment and set of valid bit patterns; the view
                // borrows `self`, lives in the same space, and accesses it only atomically.
                unsafe { &*core::ptr::from_ref(self).cast::<Atomic<$u, S>>() }
            }
        }

        impl<S: Space> Atomic<$u, S> {
            #[doc = concat!("This atomic's bits as an `Atomic<", stringify!($s), ">` (`(int*)&x` in CUDA C++).")]
            #[inline(always)]
            #[must_use]
            pub fn as_signed(&self) -> &Atomic<$s, S> {
                // SAFETY: as in `as_unsigned`.
                unsafe { &*core::ptr::from_ref(self).cast::<Atomic<$s, S>>() }
            }
        }

        impl SignPair for $s {
            type Flipped = $u;
        }
        impl SignPair for $u {
            type Flipped = $s;
        }
    };
}

/// The integers whose atomics have a view of the other signedness: `i32` ↔ `u32`, `i64` ↔ `u64`
/// (one size, alignment and set of valid bit patterns in each pair). Sealed.
pub trait SignPair: sign_sealed::Sealed {
    /// The same-size integer of the other signedness.
    type Flipped;
}

mod sign_sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
    impl Sealed for i64 {}
    impl Sealed for u64 {}
}

sign_views!(i32, u32);
sign_views!(i64, u64);

/// A slice of atomic integers seen with the other signedness (`&[AtomicI32]` as
/// `&[AtomicU32]`, and back; 64-bit likewise), as CUDA C++ casts `int*` to `unsigned*` for
/// `atomicInc` (see [`Atomic::as_unsigned`]).
#[inline(always)]
#[must_use]
pub fn flip_sign<T: SignPair, S: Space>(s: &[Atomic<T, S>]) -> &[Atomic<T::Flipped, S>] {
    // SAFETY: `SignPair` is sealed and implemented only for same-size integer pairs, so each
    // element is `as_unsigned`'s / `as_signed`'s cast (`repr(transparent)` atomics of one
    // layout, every bit pattern valid in both); the same length covers the same bytes, borrowed
    // from `s`, and only atomic operations reach them.
    unsafe { core::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
}

/// Float atomics: native add, CAS-loop min/max with both NaN policies.
macro_rules! atomic_float {
    ($t:ty, $bits:ty; add = $radd:ident, red = $rred:ident, common = ($ld:ident, $st:ident, $exch:ident, $cas:ident)) => {
        atomic_common!($t, $bits, |v: $t| v.to_bits(), <$t>::from_bits; ld = $ld, st = $st, exch = $exch, cas = $cas);

        impl<S: Space> Atomic<$t, S> {
            /// Adds `v` and returns the previous value (`atomicAdd`; native `atom.add`).
            #[doc(alias = "atomicAdd")]
            #[inline(always)]
            pub fn fetch_add(&self, v: $t, order: Ordering) -> $t {
                self.fetch_add_scoped(v, order, S::DEFAULT_SCOPE)
            }

            /// [`fetch_add`](Self::fetch_add) at `scope`.
            #[inline(always)]
            pub fn fetch_add_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                crate::host::on_device!("Atomic::fetch_add" => {
                    let order = seq_cst_prefix(order, scope);
                    // SAFETY: the address of this atomic in its state space, valid and aligned,
                    // accessed only atomically (guaranteed by the `Atomic` type's constructors).
                    unsafe { crate::raw::$radd(self.addr(), v, order, scope, S::KIND) }
                } host => {
                    use crate::host::HostAtomic;
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "add", v) }
                })
            }

            /// Subtracts `v` and returns the previous value.
            #[inline(always)]
            pub fn fetch_sub(&self, v: $t, order: Ordering) -> $t {
                self.fetch_add(-v, order)
            }

            /// [`fetch_sub`](Self::fetch_sub) at `scope`.
            #[inline(always)]
            pub fn fetch_sub_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                self.fetch_add_scoped(-v, order, scope)
            }

            /// Adds `v` without returning anything (`red.add`). `order` must be `Relaxed`,
            /// `Release` or `SeqCst`.
            #[inline(always)]
            pub fn add(&self, v: $t, order: Ordering) {
                self.add_scoped(v, order, S::DEFAULT_SCOPE)
            }

            /// [`add`](Self::add) at `scope`.
            #[inline(always)]
            pub fn add_scoped(&self, v: $t, order: Ordering, scope: Scope) {
                crate::host::on_device!("Atomic::add" => {
                    let order = match seq_cst_prefix(order, scope) {
                        Ordering::Relaxed => Ordering::Relaxed,
                        Ordering::Release | Ordering::AcqRel => Ordering::Release,
                        _ => panic!("`add` has no Acquire form; use `fetch_add`"),
                    };
                    // SAFETY: as in `fetch_add_scoped`.
                    unsafe { crate::raw::$rred(self.addr(), v, order, scope, S::KIND) }
                } host => {
                    use crate::host::HostAtomic;
                    if matches!(order, Ordering::Acquire) { panic!("`add` has no Acquire form; use `fetch_add`") }
                    // SAFETY: the value is live host memory this atomic owns (the `Atomic` constructors'
                    // contract; a shared one lies in the running block's window, which `host_ptr`
                    // checks), aligned, and accessed only atomically.
                    unsafe { <$t as HostAtomic>::rmw(self.host_ptr(), "add", v) };
                })
            }

            /// Stores the minimum, ignoring NaN (NumPy `nanmin`, C `fmin`): a NaN operand loses
            /// to a number; returns the previous value.
            #[inline(always)]
            pub fn fetch_min(&self, v: $t, order: Ordering) -> $t {
                self.rmw_loop(order, S::DEFAULT_SCOPE, |old| old.min(v))
            }

            /// Stores the maximum, ignoring NaN (NumPy `nanmax`, C `fmax`).
            #[inline(always)]
            pub fn fetch_max(&self, v: $t, order: Ordering) -> $t {
                self.rmw_loop(order, S::DEFAULT_SCOPE, |old| old.max(v))
            }

            /// Stores the minimum, propagating NaN (NumPy `min`): once NaN, stays NaN.
            #[inline(always)]
            pub fn fetch_min_nan(&self, v: $t, order: Ordering) -> $t {
                self.rmw_loop(order, S::DEFAULT_SCOPE, |old| if old.is_nan() { old } else if v.is_nan() { v } else { old.min(v) })
            }

            /// Stores the maximum, propagating NaN (NumPy `max`).
            #[inline(always)]
            pub fn fetch_max_nan(&self, v: $t, order: Ordering) -> $t {
                self.rmw_loop(order, S::DEFAULT_SCOPE, |old| if old.is_nan() { old } else if v.is_nan() { v } else { old.max(v) })
            }

            /// [`fetch_min`](Self::fetch_min) at `scope`.
            #[inline(always)]
            pub fn fetch_min_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                self.rmw_loop(order, scope, |old| old.min(v))
            }

            /// [`fetch_max`](Self::fetch_max) at `scope`.
            #[inline(always)]
            pub fn fetch_max_scoped(&self, v: $t, order: Ordering, scope: Scope) -> $t {
                self.rmw_loop(order, scope, |old| old.max(v))
            }
        }
    };
}

atomic_float!(f32, u32; add = atom_add_f32, red = red_add_f32, common = (ld_scoped_b32, st_scoped_b32, atom_exch_b32, atom_cas_b32));
atomic_float!(f64, u64; add = atom_add_f64, red = red_add_f64, common = (ld_scoped_b64, st_scoped_b64, atom_exch_b64, atom_cas_b64));
