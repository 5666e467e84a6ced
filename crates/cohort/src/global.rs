//! Constant memory and module globals (Programming Guide §"Variable Memory Space Specifiers":
//! `__constant__`, `__device__`; runtime API `cudaMemcpyToSymbol` / `cudaMemcpyFromSymbol`;
//! driver API `cuModuleGetGlobal`).
//!
//! | CUDA C++ | Cohort (device) | Cohort (host, `cohort-runtime`) |
//! |---|---|---|
//! | `__constant__ float C[16] = {…};` | `constant! { static C: [f32; 16] = […]; }` → [`Constant<[f32; 16]>`](Constant) | `module.constant(&kernels::C)?` → `Symbol<[f32; 16]>` |
//! | `C[i]` (an `LDC` from the constant bank) | [`C.load(i)`](Constant::load) (`ld.const`), [`C.get()`](Constant::get), `C[i]` through [`Deref`] | |
//! | `__device__ unsigned counter;` updated with `atomicAdd` | `global! { static COUNTER: AtomicU32 = 0; }` → [`DeviceGlobal<AtomicU32>`](DeviceGlobal), `COUNTER.add(1, Relaxed)` | `module.global(&kernels::COUNTER)?` → `Symbol<u32>` |
//! | `__device__ float limits[4];` read by kernels, set by the host | `global! { static LIMITS: [f32; 4] = [0.0; 4]; }`, `LIMITS[i]` | `module.global(&kernels::LIMITS)?` |
//! | `cudaMemcpyToSymbolAsync(C, src, n, 0, H2D, s)` | | `symbol.set(&stream, &value)?` (typed, stream-ordered) |
//! | `cudaMemcpyFromSymbol(dst, C, n)` | | `symbol.get()?` (waits for the kernels that use it) |
//! | `cuModuleGetGlobal(&p, &n, m, "C")` | | `symbol.device_ptr()`, `symbol.name()` |
//!
//! # Names
//!
//! The PTX variable has the Rust name, unmangled: `constant! { pub static COEFFS: [f32; 16] =
//! …; }` is `.visible .const .align 4 .b8 COEFFS[64];`, so C++ host code and
//! `cuModuleGetGlobal(…, "COEFFS")` find it as they would an nvcc symbol. The name is
//! therefore global to the PTX module, like a `#[no_mangle]` item: two declarations of one name
//! anywhere in the kernels crate (or the crates it links) are a compile error (`symbol
//! `__cohort_init_COEFFS` is already defined`). Host code never types the name: the handle
//! carries it ([`Constant::name`]) and its type, so `symbol.set(&stream, &[0u32; 16])` on a
//! `Constant<[f32; 16]>` is a type error, and the runtime checks at lookup that the variable in
//! the loaded module has the handle's size.
//!
//! # Initial values
//!
//! rustc cannot declare a variable in the `.const` state space (it has no address spaces), so
//! the macro declares it in PTX (a `global_asm!` of [`raw::memory`](crate::raw::memory)) and
//! the initializer becomes a second, ordinary Rust static, `__cohort_init_NAME`, in global
//! memory. Loading the module copies it into the variable before any kernel of the module can
//! run.
//!
//! # Why this is sound: who writes, and when
//!
//! A module variable is memory that every kernel of the module can reach without it being
//! passed as an argument, so the rules that make buffers safe (ownership of indices within a
//! launch, stream-ordered tracking across launches) need to be restated for it:
//!
//! - **On the device, nothing writes a variable non-atomically.** A [`Constant<T>`] is read-only
//!   to kernels (`.const` is read-only in hardware, and the handle offers reads only). A
//!   [`DeviceGlobal<T>`] of plain data (`T:` [`DeviceCopy`]) is read-only too: its one copy is
//!   shared by every thread of every launch, and no index can say which thread owns it, so a
//!   safe write could only race. A [`DeviceGlobal`] of atomics ([`Atomic<U, Global>`], or an
//!   array of them) is written only through atomic instructions, which do not race: that is
//!   how a kernel updates a module global (counters, flags, histograms). Plain data that
//!   kernels write belongs in a buffer passed as a `DisjointSlice`, where ownership applies.
//! - **The host writes only in stream order.** `symbol.set(&stream, &v)` is an operation on a
//!   stream like a buffer copy: the runtime tracks each module variable as a range of an
//!   allocation, and every typed launch of a kernel whose PTX (or a function or kernel it
//!   reaches) names the variable is recorded as a use of that range. So `set` first waits for
//!   the launches on *other* streams still using the variable, and later launches on other
//!   streams wait for the `set`; on one stream, stream order does it. `symbol.get()` waits on
//!   the host for every pending use (launches of kernels that may update its atomics, and
//!   `set`s) before it reads.
//!
//! Hence a kernel never sees a variable change under it except through atomics, and the host
//! never reads one while a kernel may still update it. Not covered, as for buffers: kernels
//! launched through the `unsafe` raw launchers (`launch_raw`) are not recorded.
//!
//! # On the CPU device
//!
//! Each module loaded on the runtime's CPU device has host memory for each of its variables
//! (`cohort_cpu::VarTable`). On the host build the handle's address function looks the variable
//! up by name in the module of the running launch (or, for `module.constant` /
//! `module.global`, in the module looked in), and the first lookup copies the declaration's
//! initializer into it, so kernels and `Symbol::set` / `get` see what they see on a GPU. Used
//! outside a launch of its module (a kernel body run through `cohort_cpu::launch` directly)
//! a variable panics, naming it.
//!
//! # Reads
//!
//! [`Constant::load`] and [`Constant::get`] read with `ld.const`, the constant-cache path
//! (fastest when the threads of a warp read the same element, as with filter taps and
//! polynomial coefficients). `Deref` also gives a `&T` through the generic address window, so
//! ordinary Rust reads (`COEFFS[i]`, iterators) work, as generic loads. [`DeviceGlobal`]
//! dereferences to its value (`LIMITS[i]`, `COUNTER.fetch_add(1, Relaxed)`).

use core::marker::PhantomData;
use core::ops::Deref;

use crate::DeviceCopy;
use crate::atomic::Atomic;

/// A variable in constant memory (`__constant__`), declared with [`constant!`](macro@crate::constant).
///
/// On the device it is read-only; on the host it is the typed name the runtime looks the
/// variable up by (`module.constant(&COEFFS)`).
pub struct Constant<T> {
    name: &'static str,
    addr: fn() -> u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> core::fmt::Debug for Constant<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Constant").field("name", &self.name).field("type", &core::any::type_name::<T>()).finish()
    }
}

/// A variable in global memory (`__device__`), declared with [`global!`](macro@crate::global).
///
/// Kernels read it (plain [`DeviceCopy`] data) or update it atomically (atomics), through
/// `Deref`; on the host it is the typed name the runtime looks the variable up by
/// (`module.global(&COUNTER)`).
pub struct DeviceGlobal<T> {
    name: &'static str,
    addr: fn() -> u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> core::fmt::Debug for DeviceGlobal<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeviceGlobal").field("name", &self.name).field("type", &core::any::type_name::<T>()).finish()
    }
}

/// What a [`DeviceGlobal`] may hold: plain [`DeviceCopy`] data (read-only on the device) or
/// global-memory atomics (updated on the device), and the value the host sees for it.
///
/// # Safety
/// `Host` has the size and layout of `Self`, every device access to `Self` through a shared
/// reference is a read or an atomic operation, and `DEVICE_WRITES` is `true` when kernels can
/// change the value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a module global",
    label = "neither `DeviceCopy` data nor global atomics",
    note = "a `global!` static holds plain `DeviceCopy` data (read-only in kernels, set by the host) or atomics \
            (`AtomicU32`, `[AtomicU32; N]`, … updated by kernels)"
)]
pub unsafe trait GlobalValue: 'static {
    /// The value as the host reads and writes it (`u32` for an `AtomicU32`).
    type Host: DeviceCopy;
    /// Whether kernels can change it (atomics).
    const DEVICE_WRITES: bool;
    /// `()` when `Host` has no padding (see [`crate::assert_no_padding`]).
    #[doc(hidden)]
    const __HOST_NO_PADDING: () = <Self::Host as DeviceCopy>::__NO_PADDING;
}

// SAFETY: plain data is its own host value; `&T` of a `DeviceCopy` type (no interior
// mutability: no `UnsafeCell` is `DeviceCopy`) only reads.
unsafe impl<T: DeviceCopy> GlobalValue for T {
    type Host = T;
    const DEVICE_WRITES: bool = false;
}

// SAFETY: `Atomic<U, Global>` is `repr(transparent)` over `U`, and every operation on it is an
// atomic instruction.
unsafe impl<U: DeviceCopy> GlobalValue for Atomic<U, crate::atomic::Global> {
    type Host = U;
    const DEVICE_WRITES: bool = true;
}

// SAFETY: an array of `repr(transparent)` atomics has the layout of `[U; N]`.
unsafe impl<U: DeviceCopy, const N: usize> GlobalValue for [Atomic<U, crate::atomic::Global>; N] {
    type Host = [U; N];
    const DEVICE_WRITES: bool = true;
}

impl<T> Constant<T> {
    /// Not bounded by `DeviceCopy`, so that a `constant!` of a type that isn't is reported once,
    /// at its type (by `__host_lookup_constant`), not again for this call (nothing can use such
    /// a handle: every access needs the bound).
    #[doc(hidden)]
    pub const fn __new(name: &'static str, addr: fn() -> u64) -> Self {
        Self { name, addr, _t: PhantomData }
    }
}

impl<T: DeviceCopy> Constant<T> {
    /// The PTX symbol name (the Rust name as declared), what `cuModuleGetGlobal` looks up.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The whole value, read with `ld.const`.
    #[inline(always)]
    #[must_use]
    pub fn get(&self) -> T {
        crate::host::on_device!("global::Constant::get" => {
            // SAFETY: the variable is a `T` in constant memory, aligned for `T` (declared so by
            // `constant!`), initialized at load, and never written while a kernel runs.
            unsafe { ld_const::<T>((self.addr)()) }
        } host => {
            // SAFETY: on the CPU device the address is the module's host memory for the
            // variable, aligned for `T` and initialized (see `__host_lookup`), which no one
            // writes while a kernel runs.
            unsafe { ((self.addr)() as usize as *const T).read() }
        })
    }
}

impl<T: DeviceCopy, const N: usize> Constant<[T; N]> {
    /// `N`.
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N == 0`.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// Element `i`, read with `ld.const` (CUDA's `C[i]` on a `__constant__` array).
    ///
    /// # Panics
    /// If `i >= N`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load(&self, i: usize) -> T {
        assert!(i < N, "constant memory index out of bounds");
        crate::host::on_device!("global::Constant::load" => {
            // SAFETY: `i < N`, so the element lies inside the `[T; N]` variable, aligned for `T`;
            // see `get`.
            unsafe { ld_const::<T>((self.addr)() + (i * size_of::<T>()) as u64) }
        } host => {
            // SAFETY: `i < N`: the element lies inside the variable; see `get`'s host arm.
            unsafe { ((self.addr)() as usize as *const T).add(i).read() }
        })
    }
}

impl<T: DeviceCopy> Deref for Constant<T> {
    type Target = T;

    /// The value through the generic address window (`cvta.const`): ordinary reads, as
    /// generic loads. [`load`](Constant::load) and [`get`](Constant::get) use `ld.const`.
    #[inline(always)]
    fn deref(&self) -> &T {
        crate::host::on_device!("global::Constant::deref" => {
            let g = crate::raw::cvta_const_u64((self.addr)());
            // SAFETY: the variable is a live, aligned, initialized `T` for the whole program,
            // which no one writes while a kernel runs (see the module docs).
            unsafe { &*(g as *const T) }
        } host => {
            // SAFETY: on the CPU device, the module's host memory for the variable: aligned,
            // initialized, never freed (`cohort_cpu::VarTable` keeps it past its module, so a
            // kept `&'static` never dangles), and written by no one while a kernel of the
            // module runs.
            unsafe { &*((self.addr)() as usize as *const T) }
        })
    }
}

impl<T> DeviceGlobal<T> {
    /// Not bounded by `GlobalValue`, so that a `global!` of a type that isn't one is reported
    /// once, at its type (by `__host_lookup_global`), not again for this call (nothing can use
    /// such a handle: every access needs the bound).
    #[doc(hidden)]
    pub const fn __new(name: &'static str, addr: fn() -> u64) -> Self {
        Self { name, addr, _t: PhantomData }
    }
}

impl<T: GlobalValue> DeviceGlobal<T> {
    /// The PTX symbol name (the Rust name as declared), what `cuModuleGetGlobal` looks up.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T: GlobalValue> Deref for DeviceGlobal<T> {
    type Target = T;

    /// The variable: plain data to read, or atomics to update.
    #[inline(always)]
    fn deref(&self) -> &T {
        crate::host::on_device!("global::DeviceGlobal::deref" => {
            let g = crate::raw::cvta_global_u64((self.addr)());
            // SAFETY: the variable is a live, aligned, initialized `T` in global memory for the
            // whole program; through `&T` kernels only read it or update it atomically
            // (`GlobalValue`), and the host writes it only when no launch that uses it is
            // pending (see the module docs).
            unsafe { &*(g as *const T) }
        } host => {
            // SAFETY: on the CPU device, the module's host memory for the variable: aligned,
            // initialized, never freed (`cohort_cpu::VarTable` keeps it past its module, so a
            // kept `&'static` never dangles); accessed as on a GPU (reads and atomics in
            // kernels, host copies only when no launch of the module runs).
            unsafe { &*((self.addr)() as usize as *const T) }
        })
    }
}

/// Reads a `T` from constant-space address `addr`, in pieces as wide as its alignment allows.
///
/// # Safety
/// `addr` is a constant-space address of a `T`, aligned for `T`, initialized.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ld_const<T: DeviceCopy>(addr: u64) -> T {
    use crate::raw;
    crate::assert_no_padding::<T>();
    let mut v = core::mem::MaybeUninit::<T>::uninit();
    let p = v.as_mut_ptr().cast::<u8>();
    let (size, align) = (size_of::<T>(), align_of::<T>());
    let mut off = 0;
    // `size` is a multiple of `align`, so each loop covers the value exactly; every write is
    // aligned (the piece is at most `align` wide) and inside `v`.
    // SAFETY: `addr + off` lies inside the variable (the caller's contract), aligned for the
    // piece; `p + off` lies inside `v`, aligned for it; `assume_init` follows writes of every
    // byte, and `T: DeviceCopy` is valid for any bits.
    unsafe {
        if align >= 16 {
            while off < size {
                p.add(off).cast::<[u32; 4]>().write(raw::ld_const_v4_b32(addr + off as u64));
                off += 16;
            }
        } else if align == 8 {
            while off < size {
                p.add(off).cast::<u64>().write(raw::ld_const_b64(addr + off as u64));
                off += 8;
            }
        } else if align == 4 {
            while off < size {
                p.add(off).cast::<u32>().write(raw::ld_const_b32(addr + off as u64));
                off += 4;
            }
        } else if align == 2 {
            while off < size {
                p.add(off).cast::<u16>().write(raw::ld_const_b16(addr + off as u64));
                off += 2;
            }
        } else {
            while off < size {
                p.add(off).write(raw::ld_const_u8(addr + off as u64) as u8);
                off += 1;
            }
        }
        v.assume_init()
    }
}

/// Whether the `bytes` bytes at `ptr` lie in global memory: `isspacep.global` of the start on a
/// GPU (an object lies in one state space); on the CPU device, inside one of the device's
/// allocations or `global!` variables, all of them (never a thread's stack, its block's shared
/// memory, a `constant!` or other host memory).
#[inline(always)]
pub(crate) fn in_global(ptr: *const u8, bytes: usize) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = bytes;
        crate::raw::isspacep_global(ptr)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        cohort_cpu::is_global(ptr as usize, bytes)
    }
}

/// The address of variable `name` in the CPU device's module of the running launch (or of the
/// module the runtime looks it up in), initialized from `init` (the declaration's initializer)
/// on first use (code generated by `constant!` / `global!`; not a public API).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[track_caller]
pub fn __host_lookup<T>(name: &str, init: &'static T) -> u64 {
    // SAFETY: `init` is `size_of::<T>()` readable bytes, alive for the whole program.
    unsafe { cohort_cpu::module_var(name, (init as *const T).cast(), size_of::<T>()) }
}

/// [`__host_lookup`] of a `constant!` of type `T`: the one place its expansion needs
/// `T: DeviceCopy`, so a type that isn't is a single error, at the declared type (UI test
/// `constant_not_device_data`).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[track_caller]
pub fn __host_lookup_constant<T: DeviceCopy>(name: &str, init: &'static T) -> u64 {
    // The initializer's bytes are copied into the variable.
    crate::assert_no_padding::<T>();
    __host_lookup(name, init)
}

/// [`__host_lookup`] of a `global!` of type `T`, whose initializer is a `T::Host`: the one
/// place its expansion needs `T: GlobalValue`, so a type that isn't one is a single error, at
/// the declared type ("cannot be a module global"; UI test `global_not_device_data`).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[track_caller]
pub fn __host_lookup_global<T: GlobalValue<Host = H>, H: 'static>(name: &str, init: &'static H) -> u64 {
    // The initializer's bytes are copied into the variable.
    #[allow(clippy::let_unit_value)]
    let () = const { T::__HOST_NO_PADDING };
    __host_lookup(name, init)
}

impl<T> Constant<T> {
    /// The variable's address in the running CPU launch's module, or in the module the runtime
    /// looks it up in (the host build's address function; not a public API).
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    pub fn __host_addr(&self) -> u64 {
        (self.addr)()
    }
}

impl<T> DeviceGlobal<T> {
    /// As [`Constant::__host_addr`].
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    pub fn __host_addr(&self) -> u64 {
        (self.addr)()
    }
}

#[doc(hidden)]
pub const fn __align<T>() -> usize {
    align_of::<T>()
}

#[doc(hidden)]
pub const fn __size<T>() -> usize {
    if size_of::<T>() == 0 { 1 } else { size_of::<T>() }
}

/// Declares variables in constant memory, CUDA's `__constant__ T NAME = init;`, at item level:
///
/// ```
/// cohort::constant! {
///     /// Taps of a 5-point filter.
///     pub static TAPS: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
/// }
/// // in a kernel: TAPS.load(k) (ld.const), TAPS.get(), or TAPS[k]
/// // on the host: module.constant(&kernels::TAPS)?.set(&stream, &[…])?
/// ```
///
/// Each becomes a [`Constant<T>`](Constant) with `T:` [`DeviceCopy`] and the PTX variable
/// `.visible .const .align A .b8 NAME[size]`, set to the initializer when the module loads.
/// Constant memory is 64 KiB per module.
#[macro_export]
macro_rules! constant {
    ($($(#[$m:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;)*) => {$(
        #[cfg(target_arch = "nvptx64")]
        $crate::__raw_ptx_var!(const_decl $name, $crate::global::__align::<$t>(), $crate::global::__size::<$t>());

        const _: () = {
            // The initial value, copied into the variable at load; its symbol also makes a
            // second declaration of the name a compile error.
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(export_name = concat!("__cohort_init_", stringify!($name)))]
            #[used]
            static INIT: $t = $init;
        };

        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::global::Constant<$t> = {
            #[inline(always)]
            fn __cohort_addr() -> u64 {
                #[cfg(target_arch = "nvptx64")]
                {
                    // The constant-space address of the variable declared above.
                    $crate::__raw_ptx_var!(var_addr $name)
                }
                // On the CPU device: the variable of the running launch's module, which the
                // first lookup initializes from this declaration's initializer.
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    $crate::global::__host_lookup_constant::<$t>(stringify!($name), &const { $init })
                }
            }
            $crate::global::Constant::<$t>::__new(stringify!($name), __cohort_addr)
        };
    )*};
}

/// Declares variables in global memory, CUDA's `__device__ T NAME = init;`, at item level:
///
/// ```
/// use cohort::prelude::*;
///
/// cohort::global! {
///     /// Updated by kernels (atomically), read back by the host.
///     pub static HITS: AtomicU32 = 0;
///     /// Set by the host, read by kernels.
///     pub static LIMITS: [f32; 2] = [0.0, 1.0];
/// }
/// // in a kernel: HITS.add(1, Ordering::Relaxed); let lo = LIMITS[0];
/// // on the host: module.global(&kernels::HITS)?.get()? (a u32)
/// ```
///
/// Each becomes a [`DeviceGlobal<T>`](DeviceGlobal) (`T:` [`GlobalValue`]: plain `DeviceCopy`
/// data, read-only in kernels, or atomics) and the PTX variable `.visible .global .align A .b8
/// NAME[size]`. The initializer is the host's view of the value: a `u32` for an `AtomicU32`.
#[macro_export]
macro_rules! global {
    ($($(#[$m:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;)*) => {$(
        #[cfg(target_arch = "nvptx64")]
        $crate::__raw_ptx_var!(global_decl $name, $crate::global::__align::<$t>(), $crate::global::__size::<$t>());

        const _: () = {
            #[cfg(target_arch = "nvptx64")]
            #[unsafe(export_name = concat!("__cohort_init_", stringify!($name)))]
            #[used]
            static INIT: <$t as $crate::global::GlobalValue>::Host = $init;
        };

        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::global::DeviceGlobal<$t> = {
            #[inline(always)]
            fn __cohort_addr() -> u64 {
                #[cfg(target_arch = "nvptx64")]
                {
                    // The global-space address of the variable declared above.
                    $crate::__raw_ptx_var!(var_addr $name)
                }
                // On the CPU device: the variable of the running launch's module, which the
                // first lookup initializes from this declaration's initializer.
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    $crate::global::__host_lookup_global::<$t, _>(stringify!($name), &const { $init })
                }
            }
            $crate::global::DeviceGlobal::<$t>::__new(stringify!($name), __cohort_addr)
        };
    )*};
}
