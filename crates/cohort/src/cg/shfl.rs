//! Shuffles of any `T: DeviceCopy` up to 32 bytes: split into 32-bit words, one `shfl.sync` per word
//! (the rule CUDA's `cooperative_groups` applies to its `shfl` templates).
//!
//! Only `DeviceCopy` values cross lanes: they hold no references or pointers (a pointer to one
//! lane's local memory means nothing in another lane) and no padding (every byte moved is an
//! initialized byte of a field; `#[derive(DeviceCopy)]` checks it).

use crate::DeviceCopy;
use crate::copy::map_words;

/// The 32-bit words of `v` (zero-padded) and how many of them hold its bytes.
#[cfg(not(target_arch = "nvptx64"))]
fn host_words<T: DeviceCopy>(v: T) -> ([u32; 8], usize) {
    const { assert!(size_of::<T>() <= 32, "cooperative-groups shuffles move at most 32 bytes") };
    crate::assert_no_padding::<T>();
    let mut words = [0u32; 8];
    // SAFETY: copies the `size_of::<T>()` (≤ 32) initialized bytes of `v` (no padding) into
    // the 32-byte buffer.
    unsafe {
        core::ptr::copy_nonoverlapping(&v as *const T as *const u8, words.as_mut_ptr() as *mut u8, size_of::<T>())
    };
    (words, size_of::<T>().div_ceil(4))
}

/// The `T` whose bytes begin `words`.
///
/// # Safety
/// The first `size_of::<T>()` bytes of `words` are the bytes of a `T`.
#[cfg(not(target_arch = "nvptx64"))]
unsafe fn from_host_words<T: DeviceCopy>(words: [u32; 8]) -> T {
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: the caller's contract; `T` is at most 32 bytes (checked in `host_words`).
    unsafe {
        core::ptr::copy_nonoverlapping(words.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size_of::<T>());
        out.assume_init()
    }
}

/// `shfl.sync.idx` of a whole `T`.
///
/// # Safety
/// As `raw::shfl_sync_idx_b32`: every lane of `mask` executes this with the same `mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn idx<T: DeviceCopy>(mask: u32, v: T, src: u32, c: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded to the caller.
        map_words(v, |w| unsafe { crate::raw::shfl_sync_idx_b32(mask, w, src, c) })
    }
    // On the host, a loop rather than a closure, so that the engine sees the caller's site.
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (mut words, n) = host_words(v);
        for w in &mut words[..n] {
            // SAFETY: forwarded to the caller.
            *w = unsafe { crate::raw::shfl_sync_idx_b32(mask, *w, src, c) };
        }
        // SAFETY: the words hold the bytes of a `T` (one lane's `v`).
        unsafe { from_host_words(words) }
    }
}

/// `shfl.sync.up` of a whole `T`.
///
/// # Safety
/// As `raw::shfl_sync_up_b32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn up<T: DeviceCopy>(mask: u32, v: T, delta: u32, c: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded to the caller.
        map_words(v, |w| unsafe { crate::raw::shfl_sync_up_b32(mask, w, delta, c) })
    }
    // On the host, a loop rather than a closure, so that the engine sees the caller's site.
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (mut words, n) = host_words(v);
        for w in &mut words[..n] {
            // SAFETY: forwarded to the caller.
            *w = unsafe { crate::raw::shfl_sync_up_b32(mask, *w, delta, c) };
        }
        // SAFETY: the words hold the bytes of a `T` (one lane's `v`).
        unsafe { from_host_words(words) }
    }
}

/// `shfl.sync.down` of a whole `T`.
///
/// # Safety
/// As `raw::shfl_sync_down_b32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn down<T: DeviceCopy>(mask: u32, v: T, delta: u32, c: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded to the caller.
        map_words(v, |w| unsafe { crate::raw::shfl_sync_down_b32(mask, w, delta, c) })
    }
    // On the host, a loop rather than a closure, so that the engine sees the caller's site.
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (mut words, n) = host_words(v);
        for w in &mut words[..n] {
            // SAFETY: forwarded to the caller.
            *w = unsafe { crate::raw::shfl_sync_down_b32(mask, *w, delta, c) };
        }
        // SAFETY: the words hold the bytes of a `T` (one lane's `v`).
        unsafe { from_host_words(words) }
    }
}

/// `shfl.sync.bfly` of a whole `T`.
///
/// # Safety
/// As `raw::shfl_sync_bfly_b32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn bfly<T: DeviceCopy>(mask: u32, v: T, lane_mask: u32, c: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded to the caller.
        map_words(v, |w| unsafe { crate::raw::shfl_sync_bfly_b32(mask, w, lane_mask, c) })
    }
    // On the host, a loop rather than a closure, so that the engine sees the caller's site.
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (mut words, n) = host_words(v);
        for w in &mut words[..n] {
            // SAFETY: forwarded to the caller.
            *w = unsafe { crate::raw::shfl_sync_bfly_b32(mask, *w, lane_mask, c) };
        }
        // SAFETY: the words hold the bytes of a `T` (one lane's `v`).
        unsafe { from_host_words(words) }
    }
}

/// Values `match.sync` can compare: 32- and 64-bit integers and floats (compared by bits).
pub trait MatchValue: Copy {
    /// The bits compared.
    fn match_bits(self) -> MatchBits;
}

/// A value's bits for `match.sync`.
#[derive(Clone, Copy, Debug)]
pub enum MatchBits {
    /// `.b32`
    B32(u32),
    /// `.b64`
    B64(u64),
}

macro_rules! match_value {
    ($($t:ty => $v:ident => $e:expr;)*) => {$(
        impl MatchValue for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn match_bits(self) -> MatchBits {
                let $v = self;
                $e
            }
        }
    )*};
}

match_value! {
    u32 => v => MatchBits::B32(v);
    i32 => v => MatchBits::B32(v as u32);
    f32 => v => MatchBits::B32(v.to_bits());
    u64 => v => MatchBits::B64(v);
    i64 => v => MatchBits::B64(v as u64);
    f64 => v => MatchBits::B64(v.to_bits());
    usize => v => MatchBits::B64(v as u64);
}

/// `match.any.sync` on a [`MatchValue`].
///
/// # Safety
/// As `raw::match_any_sync_b32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn match_any<T: MatchValue>(mask: u32, v: T) -> u32 {
    // SAFETY: forwarded to the caller.
    unsafe {
        match v.match_bits() {
            MatchBits::B32(b) => crate::raw::match_any_sync_b32(mask, b),
            MatchBits::B64(b) => crate::raw::match_any_sync_b64(mask, b),
        }
    }
}

/// `match.all.sync` on a [`MatchValue`].
///
/// # Safety
/// As `raw::match_all_sync_b32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn match_all<T: MatchValue>(mask: u32, v: T) -> (u32, bool) {
    // SAFETY: forwarded to the caller.
    unsafe {
        match v.match_bits() {
            MatchBits::B32(b) => crate::raw::match_all_sync_b32(mask, b),
            MatchBits::B64(b) => crate::raw::match_all_sync_b64(mask, b),
        }
    }
}
