//! Block exchange: striped ↔ blocked through shared memory (CUB's `BlockExchange`).

use crate::DeviceCopy;
use crate::shared::SharedSlice;
use crate::thread;

/// The shared scratch, checked once: at least `block_size() * N` elements.
#[inline(always)]
#[track_caller]
fn check_scratch<T: DeviceCopy>(scratch: &SharedSlice<T>, n: usize) -> usize {
    let bs = thread::block_size() as usize;
    assert!(scratch.len() >= bs * n, "block exchange: the shared scratch holds fewer than block_size() * N elements");
    bs
}

/// Items in the striped arrangement (thread `t` holds elements `t + j * block_size()`) to the
/// blocked one (thread `t` gets elements `t * N + j`), through `scratch` (at least
/// `block_size() * N` elements of shared memory). Every thread of the block must call it; it
/// starts and ends with a block barrier.
///
/// # Panics
/// If `scratch` is too small.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn striped_to_blocked<T: DeviceCopy, const N: usize>(scratch: &SharedSlice<T>, items: [T; N]) -> [T; N] {
    let bs = check_scratch(scratch, N);
    let t = thread::thread_rank_in_block() as usize;
    crate::sync::sync_threads();
    for (j, v) in items.iter().enumerate() {
        // SAFETY: `t + j * bs < bs * N <= scratch.len()` (checked above).
        unsafe { scratch.store_unchecked(t + j * bs, *v) };
    }
    crate::sync::sync_threads();
    // SAFETY: `t * N + j < bs * N <= scratch.len()`.
    let out = core::array::from_fn(|j| unsafe { scratch.load_unchecked(t * N + j) });
    crate::sync::sync_threads();
    out
}

/// Items in the blocked arrangement to the striped one; as [`striped_to_blocked`].
///
/// # Panics
/// If `scratch` is too small.
#[inline(always)]
#[track_caller]
#[must_use]
pub fn blocked_to_striped<T: DeviceCopy, const N: usize>(scratch: &SharedSlice<T>, items: [T; N]) -> [T; N] {
    let bs = check_scratch(scratch, N);
    let t = thread::thread_rank_in_block() as usize;
    crate::sync::sync_threads();
    for (j, v) in items.iter().enumerate() {
        // SAFETY: `t * N + j < bs * N <= scratch.len()` (checked above).
        unsafe { scratch.store_unchecked(t * N + j, *v) };
    }
    crate::sync::sync_threads();
    // SAFETY: `t + j * bs < bs * N <= scratch.len()`.
    let out = core::array::from_fn(|j| unsafe { scratch.load_unchecked(t + j * bs) });
    crate::sync::sync_threads();
    out
}
