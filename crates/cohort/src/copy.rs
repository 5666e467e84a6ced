//! [`DeviceCopy`]: values that may cross between host and device byte for byte.

/// A plain value whose bytes mean the same on the host and on the GPU.
///
/// Kernel parameters passed by value, elements of device buffers and shared-memory cells must
/// be `DeviceCopy`. Implemented for the primitive numbers, `()`, arrays and
/// [`Dim3`](crate::thread::Dim3); derive it for your own `#[repr(C)]` structs with
/// `#[derive(DeviceCopy)]`, which checks the `repr` and every field.
///
/// Every bit pattern must be a valid value, because device memory and shared memory can hold
/// anything (uninitialized shared memory, a buffer another kernel wrote): that is why `bool`
/// and `char` are not `DeviceCopy` (pass `u32` flags instead).
///
/// Every byte of a `DeviceCopy` value belongs to a field (no padding): shuffles, shared-memory
/// stores and copies move values as whole 32-bit words, buffers cross between host and device
/// byte for byte, and casts read the bytes as another type; a padding byte would be
/// uninitialized memory. `#[derive(DeviceCopy)]` refuses structs with padding at compile time:
/// a non-generic struct at its definition; a generic one (`G<T>`, whose padding can depend on
/// `T`) for each instantiation that is used, by [`assert_no_padding`], which every path of
/// Cohort that moves or reinterprets a `DeviceCopy` value's bytes evaluates (device buffers,
/// pinned memory, module variables, kernel parameters, casts, shared memory, shuffles,
/// `memcpy_async`, device-side launches).
///
/// # Safety
/// The type must be `Copy`, valid for every bit pattern, have the same size, alignment and
/// field offsets on the host and on nvptx64 (`#[repr(C)]` or `#[repr(transparent)]` of
/// `DeviceCopy` fields), have no padding bytes, and hold no references or pointers (to host
/// memory or to another thread's local memory).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot cross between host and device",
    label = "not `DeviceCopy`",
    note = "kernel parameters passed by value, device buffer elements and shared-memory cells must be `DeviceCopy`: \
            primitive numbers, arrays of them, and `#[repr(C)]` structs with `#[derive(DeviceCopy)]`"
)]
pub unsafe trait DeviceCopy: Copy + 'static {
    /// Evaluates to `()` when the type has no padding; `#[derive(DeviceCopy)]` makes it a
    /// compile-time assertion. (Not for hand-written impls, which promise it in their `SAFETY`.)
    /// Read it through [`assert_no_padding`].
    #[doc(hidden)]
    const __NO_PADDING: () = ();
}

/// Fails to compile when `T` has padding bytes; does nothing at run time.
///
/// `#[derive(DeviceCopy)]` cannot check a generic struct at its definition (the padding of
/// `G<T> { a: T, b: u64 }` depends on `T`: `G<u64>` has none, `G<u32>` has four bytes), so the
/// check is made for each type that is used: every place in Cohort where a `DeviceCopy`
/// value's bytes are moved as words, reinterpreted as another type, or copied between host
/// and device calls this, and an instantiation with padding is a compile error there
/// ("evaluation panicked: `G` with these type arguments has padding bytes …", with notes naming
/// the instantiation, `<G<u32> as DeviceCopy>`, and the function
/// instantiated). Call it too in your own generic code that views a `T: DeviceCopy` as bytes.
///
/// The error is raised when the generic code is instantiated (`cargo build`, `cargo test`),
/// not by `cargo check`, which does not instantiate generic functions.
#[inline(always)]
pub const fn assert_no_padding<T: DeviceCopy>() {
    #[allow(clippy::let_unit_value)]
    let () = const { T::__NO_PADDING };
}

/// `#[derive(DeviceCopy)]`'s check of the fields: its argument lists each field type's
/// `__NO_PADDING`, so evaluating the struct's evaluates theirs (a field `G<u32>` inside a
/// `W<G<u32>>` without padding of its own). Not for other uses.
#[doc(hidden)]
pub const fn __fields_have_no_padding(_: &[()]) {}

macro_rules! device_copy {
    ($($t:ty),*) => {$(
        // SAFETY: primitives have the same layout on every Rust target that Cohort supports
        // (x86_64/aarch64 hosts and nvptx64: all 64-bit, little-endian).
        unsafe impl DeviceCopy for $t {}
    )*};
}
device_copy!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, ());

// SAFETY: `half::bf16` and `half::f16` are `#[repr(transparent)]` wrappers of a `u16` (every
// bit pattern a value, no padding, the same layout on every target).
unsafe impl DeviceCopy for half::bf16 {}
// SAFETY: as above.
unsafe impl DeviceCopy for half::f16 {}

// SAFETY: an array of `DeviceCopy` elements has the elements' layout repeated, on every target.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {
    const __NO_PADDING: () = T::__NO_PADDING;
}
// SAFETY: `PhantomData` is zero-sized everywhere.
unsafe impl<T: ?Sized + 'static> DeviceCopy for core::marker::PhantomData<T> {}
// SAFETY: `Dim3` is `#[repr(C)]` of three `u32`.
unsafe impl DeviceCopy for crate::thread::Dim3 {}
// SAFETY: `Wrapping<T>` is `#[repr(transparent)]`.
unsafe impl<T: DeviceCopy> DeviceCopy for core::num::Wrapping<T> {
    const __NO_PADDING: () = T::__NO_PADDING;
}

/// The 32-bit words of `v` as [`map_words`] splits them (zero-padded), or eight zero words for
/// `None` (a lane with no value takes part in a word-wise move with zeros).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn words_of<T: DeviceCopy>(v: Option<T>) -> [u32; 8] {
    const { assert!(size_of::<T>() <= 32, "cooperative-groups broadcasts move at most 32 bytes") };
    crate::assert_no_padding::<T>();
    let mut words = [0u32; 8];
    if let Some(v) = v {
        // SAFETY: copies the `size_of::<T>()` (≤ 32) initialized bytes of `v` (no padding) into
        // the 32-byte buffer.
        unsafe {
            core::ptr::copy_nonoverlapping(&v as *const T as *const u8, words.as_mut_ptr() as *mut u8, size_of::<T>())
        };
    }
    words
}

/// The `T` whose bytes begin `words` (the inverse of [`words_of`] for `Some`).
///
/// # Safety
/// The first `size_of::<T>()` bytes of `words` are the bytes of a value of `T` (as
/// [`words_of`]`(Some(v))` made them, possibly moved between lanes or through memory).
#[inline(always)]
pub(crate) unsafe fn from_words<T: DeviceCopy>(words: &[u32; 8]) -> T {
    const { assert!(size_of::<T>() <= 32, "cooperative-groups broadcasts move at most 32 bytes") };
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the caller's contract; `T` is at most 32 bytes.
    unsafe {
        core::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size_of::<T>());
        out.assume_init()
    }
}

/// Applies `f` to each 32-bit word of `v` and reassembles a `T` (the words of a shuffle, of a
/// shared-memory scratch slot).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) fn map_words<T: DeviceCopy>(v: T, mut f: impl FnMut(u32) -> u32) -> T {
    const { assert!(size_of::<T>() <= 32, "cooperative-groups shuffles move at most 32 bytes") };
    crate::assert_no_padding::<T>();
    let size = size_of::<T>();
    let n = size.div_ceil(4);
    let mut words = [0u32; 8];
    // SAFETY: copies `size` bytes of `v` into the zeroed word buffer (8 words hold 32 bytes).
    unsafe { core::ptr::copy_nonoverlapping(&v as *const T as *const u8, words.as_mut_ptr() as *mut u8, size) };
    let mut i = 0;
    while i < n {
        words[i] = f(words[i]);
        i += 1;
    }
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the words hold the bytes of values of `T` (one lane's `v`), so the first `size`
    // bytes form a valid `T`.
    unsafe {
        core::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size);
        out.assume_init()
    }
}
