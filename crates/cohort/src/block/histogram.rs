//! Block histogram (CUB's `BlockHistogram`): counts of bins in shared memory, privatized per
//! warp, merged into a device-wide histogram with one global atomic per bin and block.
//!
//! **Design.** The caller gives a [`SharedSlice<u32>`] of `copies * (bins + 1)` counters
//! ([`BlockHistogram::counters`]; dynamic shared memory or a `shared!` array). Warp `w` counts
//! into copy `w % copies`, so with one copy per warp no two warps ever hit one counter (a
//! skewed input — every sample in one bin — then contends only within a warp). A count is one
//! shared-memory atomic increment with no result (`ATOMS.POPC.INC`, which also combines a
//! warp's increments of one counter), and never a branch: a bin at or past `bins` is counted
//! in each copy's spare last counter, which nothing reads. [`BlockHistogram::merge_into`] sums the copies of each bin (thread `t` takes bins
//! `t, t + block_size(), …`) and adds each non-zero sum to the global histogram with one
//! relaxed atomic: a grid of `G` blocks makes at most `G * bins` global atomics however many
//! samples it counts.
//!
//! Everything is safe: counters are shared-memory atomics, the global histogram is a
//! `&[AtomicU32]`; a bin at or past `bins` is not counted. Counts wrap at 2^32 (as CUB's `int`
//! counters overflow).
//!
//! ```
//! use cohort::prelude::*;
//! use cohort::atomic::AtomicU32;
//! use cohort::block::BlockHistogram;
//!
//! cohort::shared! {
//!     static COUNTS: [u32; BlockHistogram::counters(16, 8)];
//! }
//!
//! /// A 16-bin histogram of `x % 16`, eight warps' copies per block.
//! #[kernel]
//! pub fn mod16_histogram(data: &[u32], hist: &[AtomicU32]) {
//!     let counts = COUNTS.get().as_slice();
//!     let h = BlockHistogram::new(&counts, 16);
//!     for i in thread::grid_stride(data.len()) {
//!         h.add(data[*i] % 16);
//!     }
//!     h.merge_into(hist);
//! }
//! ```

use core::sync::atomic::Ordering::Relaxed;

use crate::atomic::AtomicU32;
use crate::shared::SharedSlice;
use crate::thread;

/// A block's histogram of `bins` bins in shared memory, privatized per warp (see the
/// [module docs](self)). Made by every thread of the block at once ([`new`](Self::new) clears
/// the counters and waits at a block barrier), filled by any thread ([`add`](Self::add),
/// [`add_items`](Self::add_items)), then merged by every thread at once
/// ([`merge_into`](Self::merge_into)) or read ([`counts`](Self::counts)).
#[derive(Debug)]
pub struct BlockHistogram<'a> {
    counts: &'a SharedSlice<u32>,
    bins: u32,
    copies: u32,
    /// This thread's copy's first counter (`copy * bins`).
    base: u32,
}

impl<'a> BlockHistogram<'a> {
    /// The counters `copies` copies of `bins` bins take: `copies * (bins + 1)` (a spare per
    /// copy).
    #[inline(always)]
    #[must_use]
    pub const fn counters(bins: usize, copies: usize) -> usize {
        copies * (bins + 1)
    }

    /// A cleared histogram of `bins` bins in `counts`: `counts.len() / (bins + 1)` copies (at
    /// most one per warp; extra counters are left alone). Every thread of the block must call
    /// it (it ends with a block barrier, so the counters are zero for everyone when it
    /// returns).
    ///
    /// # Panics
    /// `bins == 0`, `bins >= 2^31`, or `counts` holds fewer than `bins + 1` counters.
    #[inline(always)]
    #[track_caller]
    #[must_use]
    pub fn new(counts: &'a SharedSlice<u32>, bins: usize) -> Self {
        assert!(
            bins > 0 && bins < 1 << 31 && counts.len() > bins,
            "BlockHistogram: the shared memory holds fewer than bins + 1 counters"
        );
        let warps = thread::warps_per_block() as usize;
        let copies = (counts.len() / (bins + 1)).min(warps.max(1));
        let used = copies * (bins + 1);
        let bs = thread::block_size() as usize;
        let mut i = thread::thread_rank_in_block() as usize;
        while i < used {
            // SAFETY: `i < used <= counts.len()`.
            unsafe { counts.store_unchecked(i, 0) };
            i += bs;
        }
        crate::sync::sync_threads();
        let copy = thread::warp_id() as usize % copies;
        Self { counts, bins: bins as u32, copies: copies as u32, base: (copy * (bins + 1)) as u32 }
    }

    /// Bins.
    #[inline(always)]
    #[must_use]
    pub fn bins(&self) -> usize {
        self.bins as usize
    }

    /// Copies of the counters (warp `w` counts into copy `w % copies`).
    #[inline(always)]
    #[must_use]
    pub fn copies(&self) -> usize {
        self.copies as usize
    }

    /// Counts one sample in `bin`; a bin at or past [`bins`](Self::bins) is not counted (it
    /// goes to the copy's spare counter: no branch).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn add(&self, bin: u32) {
        let i = self.base + bin.min(self.bins);
        // SAFETY: `i <= copy * (bins + 1) + bins < copies * (bins + 1) <= counts.len()`.
        unsafe { self.counts.atomic_unchecked(i as usize) }.add(1, Relaxed);
    }

    /// Counts the first `valid` of a thread's `N` samples' bins (`bins[j]` for `j < valid`).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn add_items<const N: usize>(&self, bins: &[u32; N], valid: usize) {
        crate::unroll::<N>(|j| {
            if j < valid {
                self.add(bins[j]);
            }
        });
    }

    /// The block's count of `bin` (the sum of the copies), or 0 past the last bin. Every
    /// thread's [`add`](Self::add)s must be finished: call it after a block barrier (as
    /// [`merge_into`](Self::merge_into) does).
    #[inline(always)]
    #[must_use]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn counts(&self, bin: usize) -> u32 {
        if bin >= self.bins as usize {
            return 0;
        }
        let mut sum = 0u32;
        let mut c = 0;
        while c < self.copies as usize {
            // SAFETY: `c * (bins + 1) + bin < copies * (bins + 1) <= counts.len()`.
            sum = sum.wrapping_add(unsafe { self.counts.load_unchecked(c * (self.bins as usize + 1) + bin) });
            c += 1;
        }
        sum
    }

    /// Adds the block's counts to `out` (bin `b` to `out[b]`, one relaxed atomic per non-zero
    /// bin; bins past `out.len()` are dropped). Every thread of the block must call it: it
    /// starts with a block barrier (every thread's counts are in) and ends with one (the
    /// counters may be reused, e.g. by a [`new`](Self::new) histogram over the same memory).
    #[inline(always)]
    #[track_caller]
    pub fn merge_into(&self, out: &[AtomicU32]) {
        crate::sync::sync_threads();
        let bs = thread::block_size() as usize;
        let mut b = thread::thread_rank_in_block() as usize;
        let end = (self.bins as usize).min(out.len());
        while b < end {
            let sum = self.counts(b);
            if sum != 0 {
                out[b].add(sum, Relaxed);
            }
            b += bs;
        }
        crate::sync::sync_threads();
    }
}
