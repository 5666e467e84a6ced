//! Block-wide building blocks over several items per thread: CUB's `Block*` layer (`BlockLoad`,
//! `BlockStore`, `BlockExchange`, `BlockReduce`, `BlockScan`, `BlockRadixSort`), usable inside any kernel and on
//! the CPU device. The device-wide algorithms ([`algorithms`](crate::algorithms)) are made of
//! them.
//!
//! **Tiles.** A block works on *tiles* of `block_size() * N` consecutive elements, `N` items
//! per thread in a `[T; N]`. Which thread holds which element of tile `k` (base
//! `k * block_size() * N`), CUB's two arrangements:
//!
//! | arrangement | thread `t` holds, as `items[j]` | loads/stores | CUB |
//! |---|---|---|---|
//! | blocked | element `t * N + j` of the tile | [`load_blocked`], [`store_blocked`] (16-byte vectors when the tile is aligned and `N * size_of::<T>()` is a multiple of 16) | `BLOCK_LOAD_DIRECT`, `BLOCK_LOAD_VECTORIZE` |
//! | blocked, coalesced | element `t * N + j` of the tile | [`load_blocked_coalesced`], [`store_blocked_coalesced`]: each warp reads and writes its span striped (every access of the warp one contiguous run) and exchanges the items through a padded per-warp staging in shared memory, when all 32 lanes make the call together and the staging fits ([`COALESCED_WORDS`]); else as the row above | `BLOCK_LOAD_WARP_TRANSPOSE`, `BLOCK_STORE_WARP_TRANSPOSE` |
//! | striped | element `t + j * block_size()` | [`load_striped`], [`store_striped`] (coalesced scalar accesses) | `BLOCK_LOAD_STRIPED` |
//! | striped in, blocked out | [`striped_to_blocked`] through shared memory | | `BlockExchange::StripedToBlocked`, `BLOCK_LOAD_TRANSPOSE` |
//!
//! Loads read any tile of a `&[T]` (elements past the end come back as the `fill` value).
//! Stores write only through a [`DisjointSlice`](crate::slice::DisjointSlice) of kind [`Blocked<N>`] or [`Striped<N>`],
//! and only the tile a [`Tile`] names: a `Tile` comes from [`tiles`] (block `b` of a grid of
//! `G` blocks gets tiles `b`, `b + G`, `b + 2G`, … — no two blocks get the same one), and the
//! arrangement is the slice's type, so every thread of the launch places its items the same
//! way: two threads never write one element. (A `Tile` from elsewhere, such as an atomic tile
//! counter, is [`Tile::new_unchecked`], with that proof as its contract.)
//!
//! **Collectives over items** (every thread of the block must call them, the block's size a
//! multiple of 32; ops must be associative, and the scans keep the order of the elements):
//!
//! | function | every thread gets | CUB |
//! |---|---|---|
//! | [`reduce_items`] | the combination of every thread's valid items (`None` if there are none) | `BlockReduce::Reduce` with `num_valid` |
//! | [`scan_items`] | its own items' exclusive prefixes within the tile (a [`ScanPrefix`]: `None` before the tile's first element), the tile's aggregate | `BlockScan::ExclusiveScan` + aggregate |
//! | [`scan_items_with_prefix`] | as [`scan_items`], each prefix also preceded by the value a callback computed from the tile's aggregate (the decoupled look-back's hook) | `BlockScan` with a `BlockPrefixCallbackOp` |
//! | [`rank_digits`] | its items' stable ranks in the tile by a 2-bit digit (a permutation of the tile's positions) | `BlockRadixRank` |
//! | [`radix_sort_keys`], [`radix_sort_pairs`] | the tile's sorted elements `t * N .. t * N + N` (blocked), by a bit range of the keys, ascending or descending, stable ([`radix_sort`]) | `BlockRadixSort::Sort`, `SortDescending` (blocked to blocked) |
//! | [`BlockHistogram`] (`new`, `add`/`add_items`, `merge_into`) | counts in shared memory, one copy per warp; `merge_into` adds the block's counts to a global histogram (one atomic per bin), `counts(b)` reads bin `b` ([`histogram`]) | `BlockHistogram::InitHistogram`, `Composite`, `Histogram` |
//!
//! Scratch: the collectives use a 1 KiB `shared!` array of per-warp partials (32 slots of 32
//! bytes, so `T` is at most 32 bytes) and [`striped_to_blocked`] / [`blocked_to_striped`] the
//! caller's [`SharedSlice`](crate::shared::SharedSlice) of at least `block_size() * N` elements (dynamic shared memory,
//! or a `shared!` array). Each starts and ends with a block barrier, so they can be called
//! back to back.

mod coalesced;
mod exchange;
pub mod histogram;
mod load;
pub mod radix_sort;
mod scan;
mod store;

use core::marker::PhantomData;

pub use coalesced::{COALESCED_WORDS, load_blocked_coalesced, store_blocked_coalesced, store_blocked_coalesced_valid};
pub use exchange::{blocked_to_striped, striped_to_blocked};
pub use histogram::BlockHistogram;
pub use load::{load_blocked, load_striped};
pub use radix_sort::{RadixBits, RadixKey, radix_sort_keys, radix_sort_pairs, rank_digits};
pub use scan::{ScanPrefix, reduce_items, scan_items, scan_items_with_prefix};
pub(crate) use scan::{cat, warp_of_block, warp_reduce_ordered};
pub use store::{store_blocked, store_blocked_valid, store_striped, store_striped_valid};

#[doc(inline)]
pub use crate::thread::{Blocked, Striped};

use crate::thread;

/// A tile of a [`Blocked`] or [`Striped`] output that the calling thread's block alone writes.
///
/// Not `Copy`, `Send` or `Sync` (as a [`ThreadIndex`](crate::thread::ThreadIndex)): it is this
/// block's share of the output. Every thread of the block holds its own `Tile` with the same
/// id, and writes only the elements its rank owns in the slice's arrangement.
#[derive(Debug, PartialEq, Eq)]
pub struct Tile {
    id: u64,
    _not_send: PhantomData<*const ()>,
}

impl Tile {
    /// The tile's number.
    #[inline(always)]
    #[must_use]
    pub const fn id(&self) -> u64 {
        self.id
    }

    /// A tile with any number.
    ///
    /// # Safety
    /// No thread of another block may hold a `Tile` with the same number for the same output
    /// while this one is in use (for example: numbers handed out by an atomic counter that
    /// only this use of the output draws from), and the launch's blocks all have one size.
    #[inline(always)]
    #[must_use]
    pub const unsafe fn new_unchecked(id: u64) -> Self {
        Self { id, _not_send: PhantomData }
    }

    /// The first element of the tile, for tiles of `per_thread` items per thread.
    #[inline(always)]
    #[must_use]
    pub fn base(&self, per_thread: usize) -> u64 {
        self.id * thread::block_size() as u64 * per_thread as u64
    }
}

/// This block's tiles among `num_tiles`: `b`, `b + G`, `b + 2G`, … for block `b` of `G`
/// (a grid-stride loop over tiles). Blocks never get the same tile.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[must_use]
pub fn tiles(num_tiles: u64) -> Tiles {
    Tiles { next: thread::block_rank(), step: thread::num_blocks(), end: num_tiles, _not_send: PhantomData }
}

/// The iterator of [`tiles`].
#[derive(Debug)]
pub struct Tiles {
    next: u64,
    step: u64,
    end: u64,
    _not_send: PhantomData<*const ()>,
}

impl Iterator for Tiles {
    type Item = Tile;
    #[inline(always)]
    fn next(&mut self) -> Option<Tile> {
        if self.next < self.end {
            let id = self.next;
            self.next += self.step;
            // SAFETY: block `b` of `G` gets `b + kG` only, and `b < G`: distinct blocks never
            // get the same number.
            Some(unsafe { Tile::new_unchecked(id) })
        } else {
            None
        }
    }
}

/// 16 bytes, 16-byte aligned: one `ld.global.v4` / `st.global.v4`.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct V16([u32; 4]);

/// Whether a thread's `N` items of `T` are whole 16-byte vectors.
#[inline(always)]
const fn vectors<T, const N: usize>() -> bool {
    (N * size_of::<T>()).is_multiple_of(16)
}

/// The tile's size in elements and its first element, `(block_size * n, id * that)`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn tile_span(id: u64, n: usize) -> (usize, usize) {
    let len = thread::block_size() as usize * n;
    (len, (id as usize).saturating_mul(len))
}
