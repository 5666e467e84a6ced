//! Shared memory (Programming Guide §"Shared Memory", `__shared__`, `extern __shared__`).
//!
//! | CUDA C++ | Cohort |
//! |---|---|
//! | `__shared__ T buf[N];` (static) | `shared! { static BUF: [T; N]; }` then `BUF.get()` → [`SharedArray<T, N>`] |
//! | `extern __shared__ T buf[];` (dynamic) | [`dynamic::<T>()`](dynamic) → [`SharedSlice<T>`] |
//! | `extern __shared__ T buf[]` used as `T tile[R][C]` (a pipeline's stages beyond 48 KiB) | [`dynamic_array::<[T; C], R>()`](dynamic_array) → [`SharedArray`] |
//! | `buf[i]` read / write | [`load(i)`](SharedSlice::load) / [`store(i, v)`](SharedSlice::store) |
//! | `atomicAdd(&buf[i], v)` | [`atomic(i)`](SharedSlice::atomic)`.fetch_add(v, …)` (PTX `atom.shared`) |
//! | `__shared__ T tile[R][C]; tile[r][c]` | `static TILE: [[T; C]; R]`, [`load_at(r, c)`](SharedArray::load_at) / [`store_at`](SharedArray::store_at) |
//! | `float4 v = *(float4*)&tile[r][c]` (or nvcc merging `tile[r][c + i]`) | [`load_row::<4>(r, c)`](SharedArray::load_row) (`ld.shared.v4`) |
//!
//! Handles: a [`SharedArray`] is a `Copy` handle to a static array; a [`SharedSlice`] is not
//! `Copy`, so an operation can borrow it exclusively ([`cg::memcpy_async`](crate::cg::memcpy_async)
//! holds `&mut` of its destination until the copy is waited for).
//!
//! **Why values, not references.** Shared memory is written by many threads at once, so a
//! Rust `&mut` into it would be unsound. Cohort never makes one: every access moves a value
//! with an explicit `ld.shared`/`st.shared` instruction (which is also what makes the hardware
//! use its fast shared-memory path: through a generic pointer, as rustc would emit, ptxas
//! keeps slower generic `LD`/`ST`). Two threads storing to one cell without a barrier in
//! between is a *race* in CUDA's sense, with a nondeterministic result that
//! `compute-sanitizer --tool racecheck` reports, not undefined behaviour of the Rust program.
//! Elements are [`DeviceCopy`], so any bit pattern (including uninitialized shared memory) is a
//! valid value.
//!
//! **What LLVM may do with the loads.** A load is an `ld.shared` that LLVM sees as a pure read of
//! memory: it may drop an unused one, and reuse one value for two identical loads with no store
//! or barrier between them (as nvcc does with plain C++ loads) — so a thread that waits for
//! another thread's store must not spin on `load` (nvcc would hoist that loop too): use
//! [`atomic`](SharedSlice::atomic), or a barrier. Bounds of 2-D arrays are constants, so checks
//! on indices LLVM can bound (from a [`BlockShape`](crate::shape::BlockShape), a loop counter)
//! fold away.
//!
//! Static arrays are declared at item level (a `.shared` PTX variable each); only the kernels
//! that use one get it in their shared-memory footprint.

use core::marker::PhantomData;

use crate::DeviceCopy;
use crate::atomic::{Atomic, Shared};
use crate::raw;

/// An array of `N` values of `T` in the block's shared memory (a copyable handle).
///
/// Its address is a multiple of 16 (a `shared!` static is aligned to at least 16 bytes, and
/// [`dynamic_array`] checks it): code that needs 16-byte aligned rows (`ldmatrix`, `cp.async`
/// of 16 bytes, [`load_row`](SharedArray::load_row)) checks only the offset inside the array.
#[derive(Debug)]
pub struct SharedArray<T, const N: usize> {
    addr: u32,
    _t: PhantomData<T>,
}

impl<T, const N: usize> Clone for SharedArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for SharedArray<T, N> {}

/// A run of `len` values of `T` in shared memory: dynamic shared memory, or part of an array.
///
/// Not `Copy`: an operation that needs the run to itself borrows the handle mutably —
/// [`cg::memcpy_async`](crate::cg::memcpy_async) holds it until the copy is waited for, so it
/// cannot be read while the copy engine writes it. (Handles made again from the same memory —
/// another `STATIC.get()`, [`sub`](Self::sub), [`dynamic`] — are aliases, as two threads'
/// handles are: see the module docs on races.)
#[derive(Debug)]
pub struct SharedSlice<T> {
    addr: u32,
    len: u32,
    _t: PhantomData<T>,
}

/// A `shared!` static: the address of its `.shared` variable, resolved in the kernel.
#[derive(Debug)]
pub struct SharedStatic<T, const N: usize> {
    addr: fn() -> u32,
    _t: PhantomData<fn() -> T>,
}

impl<T: DeviceCopy, const N: usize> SharedStatic<T, N> {
    #[doc(hidden)]
    pub const fn __new(addr: fn() -> u32) -> Self {
        Self { addr, _t: PhantomData }
    }

    /// The array, in this block's shared memory.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn get(&self) -> SharedArray<T, N> {
        crate::assert_no_padding::<T>();
        SharedArray { addr: (self.addr)(), _t: PhantomData }
    }
}

/// A number unique to a static's full path (FNV-1a), for its PTX symbol name.
#[doc(hidden)]
pub const fn __id(path: &str) -> u64 {
    let b = path.as_bytes();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
        i += 1;
    }
    h
}

#[doc(hidden)]
pub const fn __align<T>() -> usize {
    if align_of::<T>() > 16 { align_of::<T>() } else { 16 }
}

#[doc(hidden)]
pub const fn __size<T, const N: usize>() -> usize {
    let s = size_of::<T>() * N;
    if s == 0 { 1 } else { s }
}

/// Declares static shared-memory arrays, CUDA's `__shared__ T NAME[N];`, at item level (module
/// scope, not inside a function):
///
/// ```
/// cohort::shared! {
///     /// One partial sum per warp.
///     static PARTIALS: [f32; 32];
/// }
/// // in a kernel: let partials = PARTIALS.get(); partials.store(w, x); … partials.load(w)
/// ```
#[macro_export]
macro_rules! shared {
    ($($(#[$m:meta])* $vis:vis static $name:ident: [$t:ty; $n:expr];)*) => {$(
        $crate::__shared_static!($(#[$m])* $vis static $name: [$t; $n], align $crate::shared::__align::<$t>());
    )*};
}

/// The one declaration behind [`shared!`](macro@crate::shared), [`tma_tile!`](macro@crate::tma_tile)
/// and [`wgmma_tile!`](macro@crate::wgmma_tile): a static shared array of `N` `T`s aligned to
/// `align` bytes — in PTX a `.shared` variable named after the static's module path, on the CPU
/// device this block's copy keyed by the static's address.
#[doc(hidden)]
#[macro_export]
macro_rules! __shared_static {
    ($(#[$m:meta])* $vis:vis static $name:ident: [$t:ty; $n:expr], align $align:expr) => {
        #[cfg(target_arch = "nvptx64")]
        $crate::__raw_ptx_var!(
            shared_decl $name,
            $crate::shared::__id(concat!(module_path!(), "::", stringify!($name))),
            $align,
            $crate::shared::__size::<$t, { $n }>()
        );

        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis static $name: $crate::shared::SharedStatic<$t, { $n }> = {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn __cohort_shared_addr() -> u32 {
                #[cfg(target_arch = "nvptx64")]
                {
                    // The shared-window address of the variable declared above.
                    $crate::__raw_ptx_var!(shared_addr $name, $crate::shared::__id(concat!(module_path!(), "::", stringify!($name))))
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    // On the CPU device: this block's copy, keyed by the static's address.
                    $crate::host::shared_static(
                        ::core::ptr::addr_of!($name) as usize,
                        $crate::shared::__size::<$t, { $n }>(),
                        $align,
                    )
                }
            }
            $crate::shared::SharedStatic::<$t, { $n }>::__new(__cohort_shared_addr)
        };
    };
}

// The launch's dynamic shared memory: `.extern .shared .align 16 .b8 cohort_dynamic_smem[];`.
#[cfg(target_arch = "nvptx64")]
crate::__raw_ptx_var!(dynamic_decl);

/// This launch's dynamic shared memory (`extern __shared__`) as `T`s: as many as fit in the
/// bytes the launch asked for (`LaunchConfig::with_shared_mem`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn dynamic<T: DeviceCopy>() -> SharedSlice<T> {
    const { assert!(align_of::<T>() <= 16, "dynamic shared memory is 16-byte aligned") };
    crate::assert_no_padding::<T>();
    crate::host::on_device!("shared::dynamic" => {
        let a = crate::raw::dynamic_smem_addr();
        let bytes = crate::raw::dynamic_smem_size();
        SharedSlice { addr: a, len: if size_of::<T>() == 0 { 0 } else { bytes / size_of::<T>() as u32 }, _t: PhantomData }
    } host => {
        let (a, bytes) = cohort_cpu::dynamic_shared();
        SharedSlice { addr: a, len: if size_of::<T>() == 0 { 0 } else { bytes / size_of::<T>() as u32 }, _t: PhantomData }
    })
}

/// The first `N` elements of this launch's dynamic shared memory (`extern __shared__`) as a
/// [`SharedArray`]: for arrays and tiles larger than the 48 KiB a kernel's static shared memory
/// may hold (a pipeline's stages), with the launch asking for the bytes
/// (`LaunchConfig::with_shared_mem`; above 48 KiB the launcher opts the kernel in).
///
/// An alias of [`dynamic`]'s memory, as every handle to the same shared memory is (see the
/// module docs on races).
///
/// # Panics
/// If the launch's dynamic shared memory is smaller than `N` elements of `T` (the panic names
/// the call; the runtime reports it as the launch's `Err`).
#[inline(always)]
#[track_caller]
#[must_use]
pub fn dynamic_array<T: DeviceCopy, const N: usize>() -> SharedArray<T, N> {
    // In a constant: an array whose size overflows is a compile error, never a wrapped size
    // that a small launch would pass.
    let bytes = const { size_of::<T>() * N };
    let all = dynamic::<u8>();
    assert!(bytes <= all.len(), "shared::dynamic_array: the launch's dynamic shared memory is smaller");
    // The dynamic window is declared `.align 16` (and on the CPU device starts at 0); the
    // assertion keeps `SharedArray`'s 16-byte alignment a checked fact.
    assert!(all.addr.is_multiple_of(16), "shared::dynamic_array: dynamic shared memory not 16-byte aligned");
    SharedArray { addr: all.addr, _t: PhantomData }
}

impl<T: DeviceCopy, const N: usize> SharedArray<T, N> {
    /// The shared-window address of element 0 (a multiple of 16: see the type's docs).
    #[inline(always)]
    #[must_use]
    pub(crate) fn addr(&self) -> u32 {
        self.addr
    }

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

    /// The whole array as a slice handle.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub fn as_slice(&self) -> SharedSlice<T> {
        SharedSlice { addr: self.addr, len: N as u32, _t: PhantomData }
    }

    /// Element `i` (bounds-checked).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load(&self, i: usize) -> T {
        self.as_slice().load(i)
    }

    /// Writes element `i` (bounds-checked).
    #[inline(always)]
    #[track_caller]
    pub fn store(&self, i: usize, v: T) {
        self.as_slice().store(i, v)
    }

    /// Element `i` as an atomic (`atom.shared`).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn atomic(&self, i: usize) -> &'static Atomic<T, Shared> {
        self.as_slice().atomic(i)
    }
}

/// Two-dimensional arrays (`shared! { static TILE: [[f32; 33]; 32]; }`, CUDA's
/// `__shared__ float tile[32][33]`): element `(r, c)` of `R` rows of `C`.
///
/// The bounds are constants, so in a kernel whose indices LLVM can bound (from a
/// [`BlockShape`](crate::shape::BlockShape), an unrolled loop counter) the check folds away.
impl<T: DeviceCopy, const R: usize, const C: usize> SharedArray<[T; C], R> {
    /// Element `(r, c)`.
    ///
    /// # Panics
    /// If `r >= R` or `c >= C`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load_at(&self, r: usize, c: usize) -> T {
        assert!(r < R && c < C, "shared memory index out of bounds");
        // SAFETY: (r, c) is inside the `R × C` array.
        unsafe { ld_shared(self.addr + ((r * C + c) * size_of::<T>()) as u32) }
    }

    /// Writes element `(r, c)`.
    ///
    /// # Panics
    /// If `r >= R` or `c >= C`.
    #[inline(always)]
    #[track_caller]
    pub fn store_at(&self, r: usize, c: usize, v: T) {
        assert!(r < R && c < C, "shared memory index out of bounds");
        // SAFETY: (r, c) is inside the `R × C` array.
        unsafe { st_shared(self.addr + ((r * C + c) * size_of::<T>()) as u32, v) }
    }
}

impl<T: DeviceCopy, const R: usize, const C: usize> SharedArray<[T; C], R> {
    /// Elements `(r, c) .. (r, c + W)` of one row, with the widest loads their alignment
    /// allows: one `ld.shared.v4` for 16 bytes (four `f32`), as nvcc merges `tile[r][c + i]`.
    ///
    /// # Panics
    /// If `r >= R`, `c + W > C` or `c` is not a multiple of `W` (each a comparison LLVM
    /// removes for indices it can bound: `shape.y() * 8`, a loop counter).
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load_row<const W: usize>(&self, r: usize, c: usize) -> [T; W] {
        assert!(r < R && c <= C && W <= C - c && c.is_multiple_of(W), "shared memory row chunk out of bounds");
        let addr = self.addr + ((r * C + c) * size_of::<T>()) as u32;
        let bytes = W * size_of::<T>();
        // The array starts 16-byte aligned (`shared!`); the chunk's offset is r·C·size + c·size,
        // a multiple of `bytes` when both the row and `c·size` are (c is a multiple of W).
        let aligned = |b: usize| bytes == b && (C * size_of::<T>()).is_multiple_of(b);
        // SAFETY: the chunk lies inside the array (asserted); in the vector arms its address is
        // a multiple of the access size (above), and every bit pattern is a valid `[T; W]`.
        unsafe {
            if aligned(16) {
                core::mem::transmute_copy(&ld_shared::<crate::vec::u32x4>(addr))
            } else if aligned(8) {
                core::mem::transmute_copy(&ld_shared::<u64>(addr))
            } else {
                ld_shared::<[T; W]>(addr)
            }
        }
    }
}

impl<T: DeviceCopy> SharedSlice<T> {
    /// Number of elements.
    #[inline(always)]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no elements.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shared-window address of element 0 (for `cp.async` and other PTX).
    #[inline(always)]
    #[must_use]
    pub const fn shared_addr(&self) -> u32 {
        self.addr
    }

    /// Elements `start..start + len`.
    ///
    /// # Panics
    /// If that is out of bounds.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn sub(&self, start: usize, len: usize) -> SharedSlice<T> {
        assert!(start <= self.len() && len <= self.len() - start, "shared slice range out of bounds");
        SharedSlice { addr: self.addr + (start * size_of::<T>()) as u32, len: len as u32, _t: PhantomData }
    }

    /// Element `i`.
    ///
    /// # Panics
    /// If `i >= len`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn load(&self, i: usize) -> T {
        assert!(i < self.len(), "shared memory index out of bounds");
        // SAFETY: in bounds.
        unsafe { self.load_unchecked(i) }
    }

    /// Writes element `i`.
    ///
    /// # Panics
    /// If `i >= len`.
    #[inline(always)]
    #[track_caller]
    pub fn store(&self, i: usize, v: T) {
        assert!(i < self.len(), "shared memory index out of bounds");
        // SAFETY: in bounds.
        unsafe { self.store_unchecked(i, v) }
    }

    /// Element `i` without the bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn load_unchecked(&self, i: usize) -> T {
        // SAFETY: the caller keeps `i` in bounds.
        unsafe { ld_shared(self.addr + (i * size_of::<T>()) as u32) }
    }

    /// Writes element `i` without the bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn store_unchecked(&self, i: usize, v: T) {
        // SAFETY: the caller keeps `i` in bounds.
        unsafe { st_shared(self.addr + (i * size_of::<T>()) as u32, v) }
    }

    /// Element `i` as an atomic in shared memory (`atom.shared`).
    ///
    /// The reference is `'static` because the memory lives as long as the block, and nothing a
    /// kernel can reach on the GPU outlives its block (a reference is not [`DeviceCopy`]: it
    /// can't be stored in device memory or handed to a child kernel). On the CPU device,
    /// host-only code could keep it in a host `static`; each use checks that it lies in the
    /// running block's shared memory, so one kept past its block is a misuse `Err` of the launch
    /// that uses it, never an access to freed memory or to another block's.
    ///
    /// # Panics
    /// If `i >= len`.
    #[inline(always)]
    #[must_use]
    #[track_caller]
    pub fn atomic(&self, i: usize) -> &'static Atomic<T, Shared> {
        assert!(i < self.len(), "shared memory index out of bounds");
        let generic = generic_from_shared(self.addr + (i * size_of::<T>()) as u32);
        // SAFETY: a valid shared-memory address of a `T` for the whole kernel; `Atomic` only
        // ever touches it with atomic instructions.
        unsafe { Atomic::from_ptr(generic as *mut T) }
    }
}

impl<T: DeviceCopy> SharedSlice<T> {
    /// Element `i` as an atomic, without the bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[must_use]
    pub unsafe fn atomic_unchecked(&self, i: usize) -> &'static Atomic<T, Shared> {
        let generic = generic_from_shared(self.addr + (i * size_of::<T>()) as u32);
        // SAFETY: in bounds (caller); a valid shared-memory `T` for the whole kernel, touched
        // only atomically through the returned reference.
        unsafe { Atomic::from_ptr(generic as *mut T) }
    }
}

/// The generic address of a shared-window address (`cvta.shared.u64`).
///
/// Computed as [`shared_window_base`]` + addr` so that code which turns the generic address back
/// into a shared-window one (shared-space atomics) folds to the original 32-bit address.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn generic_from_shared(addr: u32) -> u64 {
    shared_window_base().wrapping_add(u64::from(addr))
}

/// The generic address at which the shared window begins (`cvta.shared.u64` of 0); a shared
/// address `a` is the generic address `shared_window_base() + a`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn shared_window_base() -> u64 {
    crate::raw::shared_window_base()
}

/// Stores any `T: DeviceCopy` of at most 32 bytes as 32-bit words (library scratch).
///
/// # Safety
/// `addr` is a valid, 4-byte aligned shared-memory address with room for the words.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn store_words<T: DeviceCopy>(addr: u32, v: T) {
    crate::host::on_device!("shared store" => {
        let mut i = 0u32;
        crate::copy::map_words(v, |w| {
            // SAFETY: in the caller's scratch slot.
            unsafe { raw::st_shared_b32(addr + 4 * i, w) };
            i += 1;
            w
        });
    } host => {
        // SAFETY: as `st_shared`: the caller's slot is valid shared memory of this block.
        unsafe { st_shared(addr, v) }
    })
}

/// Loads a `T: DeviceCopy` stored by [`store_words`].
///
/// # Safety
/// `addr` holds the words of a `T` written by `store_words`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn load_words<T: DeviceCopy>(addr: u32, like: T) -> T {
    crate::host::on_device!("shared load" => {
        let mut i = 0u32;
        crate::copy::map_words(like, |_| {
            // SAFETY: the caller's scratch slot holds a `T`'s words.
            let w = unsafe { raw::ld_shared_b32(addr + 4 * i) };
            i += 1;
            w
        })
    } host => {
        let _ = like;
        // SAFETY: the caller's slot holds a `T` written by `store_words`.
        unsafe { ld_shared(addr) }
    })
}

/// Loads a `T` from shared memory with the widest instructions its size and alignment allow.
///
/// # Safety
/// `addr` is a valid shared-memory address of a `T`, aligned for `T`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn ld_shared<T: DeviceCopy>(addr: u32) -> T {
    crate::assert_no_padding::<T>();
    crate::host::on_device!("shared load" => {
        let mut out = core::mem::MaybeUninit::<T>::uninit();
        let p = out.as_mut_ptr() as *mut u8;
        let (size, align) = (size_of::<T>(), align_of::<T>());
        // SAFETY: in every arm, `addr` is valid and aligned (caller); the local writes stay
        // inside `out`, which is then fully initialized (every `T` bit pattern is valid).
        unsafe {
            if size == 16 && align >= 16 {
                (p as *mut [u32; 4]).write(raw::ld_shared_v4_b32(addr));
            } else if size == 4 && align >= 4 {
                (p as *mut u32).write(raw::ld_shared_b32(addr));
            } else if size == 8 && align >= 8 {
                (p as *mut u64).write(raw::ld_shared_b64(addr));
            } else if size == 2 && align >= 2 {
                (p as *mut u16).write(raw::ld_shared_b16(addr));
            } else if size % 4 == 0 && align >= 4 {
                let mut i = 0;
                while i < size {
                    (p.add(i) as *mut u32).write_unaligned(raw::ld_shared_b32(addr + i as u32));
                    i += 4;
                }
            } else {
                let mut i = 0;
                while i < size {
                    p.add(i).write(raw::ld_shared_u8(addr + i as u32) as u8);
                    i += 1;
                }
            }
            out.assume_init()
        }
    } host => {
        cohort_cpu::shared_access(addr, size_of::<T>() as u32, false);
        // SAFETY: `addr` is a valid shared address of a `T` (caller), so the bytes lie in this
        // block's window; a block's threads run on one OS thread, one at a time, so the read
        // races with no write; every bit pattern is a valid `T` (`DeviceCopy`).
        unsafe { crate::host::shared_ptr(addr).cast::<T>().read_unaligned() }
    })
}

/// Stores a `T` to shared memory with the widest instructions its size and alignment allow.
///
/// # Safety
/// `addr` is a valid shared-memory address of a `T`, aligned for `T`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn st_shared<T: DeviceCopy>(addr: u32, v: T) {
    crate::assert_no_padding::<T>();
    crate::host::on_device!("shared store" => {
        let p = &v as *const T as *const u8;
        let (size, align) = (size_of::<T>(), align_of::<T>());
        // SAFETY: in every arm, `addr` is valid and aligned (caller); reads stay inside `v`,
        // whose bytes are all initialized (`DeviceCopy` types have no padding: derived ones
        // are checked by `__NO_PADDING` above, hand-written impls promise it).
        unsafe {
            if size == 16 && align >= 16 {
                raw::st_shared_v4_b32(addr, (p as *const [u32; 4]).read());
            } else if size == 4 && align >= 4 {
                raw::st_shared_b32(addr, (p as *const u32).read());
            } else if size == 8 && align >= 8 {
                raw::st_shared_b64(addr, (p as *const u64).read());
            } else if size == 2 && align >= 2 {
                raw::st_shared_b16(addr, (p as *const u16).read());
            } else if size % 4 == 0 && align >= 4 {
                let mut i = 0;
                while i < size {
                    raw::st_shared_b32(addr + i as u32, (p.add(i) as *const u32).read_unaligned());
                    i += 4;
                }
            } else {
                let mut i = 0;
                while i < size {
                    raw::st_shared_u8(addr + i as u32, p.add(i).read() as u16);
                    i += 1;
                }
            }
        }
    } host => {
        cohort_cpu::shared_access(addr, size_of::<T>() as u32, true);
        // SAFETY: `addr` is a valid shared address of a `T` (caller), in this block's window;
        // the block's threads run one at a time on one OS thread, so no access races.
        unsafe { crate::host::shared_ptr(addr).cast::<T>().write_unaligned(v) }
    })
}
