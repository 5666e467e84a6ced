//! The device-wide algorithms' kernel bodies (CUB's `Device*` layer, its "agents"): generic
//! over the element type and the operator, called from a `#[kernel]` that fixes both.
//!
//! # How the algorithms are packaged
//!
//! Three layers, as CUB's:
//!
//! 1. **Block layer** — [`block`](crate::block) in this library: loads, stores, exchanges,
//!    reduce and scan over `N` items per thread; usable in any kernel.
//! 2. **Kernel bodies** — this module: one generic function per kernel of an algorithm
//!    ([`reduce_tiles`], [`scan_tile`], [`select_tile`]), with the contract between the kernel
//!    and the host (grid size, temporary storage) stated on each.
//! 3. **Kernels and the host API** — the `cohort-algorithms` crate (`crates/algorithms`):
//!    `#[kernel]`s instantiating the bodies for the built-in types and operators, built to PTX
//!    by its `build.rs` and embedded (`include_ptx!`) like every Cohort kernels crate, and
//!    `cohort_algorithms::Algorithms` (load once per device), whose methods take `DeviceBuffer`s,
//!    a stream and reusable temporary storage, choose the grid, clear the storage in the
//!    stream and launch. A **user's element type or operator** is instantiated in the user's
//!    own kernels crate with `cohort_algorithms::scan_kernels!` / `reduce_kernels!` (a macro
//!    that writes the `#[kernel]`s over these bodies and the host glue): no `unsafe`, no C++.
//!    The instantiated kernels are private to the macro's module: only the host API, which
//!    sizes and clears the temporary storage, launches them.
//!
//! | CUB | Cohort |
//! |---|---|
//! | `cub::BlockLoad`, `BlockStore` | [`block::load_blocked`](crate::block::load_blocked), [`block::store_blocked`](crate::block::store_blocked), striped forms |
//! | `cub::BlockExchange` | [`block::striped_to_blocked`](crate::block::striped_to_blocked), [`block::blocked_to_striped`](crate::block::blocked_to_striped) |
//! | `cub::BlockReduce` | [`block::reduce_items`](crate::block::reduce_items) |
//! | `cub::BlockScan` (+ prefix callback) | [`block::scan_items`](crate::block::scan_items), [`block::scan_items_with_prefix`](crate::block::scan_items_with_prefix) |
//! | `cub::DeviceReduce::Reduce`, `Sum`, `Min`, `Max` | [`reduce_tiles`] (two launches) · `Algorithms::reduce` |
//! | `cub::DeviceScan::ExclusiveScan`, `InclusiveScan`, `ExclusiveSum` | [`scan_tile`] (one launch) · `Algorithms::exclusive_scan`, `inclusive_scan` |
//! | `cub::DeviceScan::InclusiveScanByKey`, `ExclusiveScanByKey`, `InclusiveSumByKey`, `ExclusiveSumByKey` | [`scan_by_key_tile`] (one launch; the look-back's tiles with a segment head publish their inclusive prefix at once) · `Algorithms::inclusive_scan_by_key`, `exclusive_scan_by_key` |
//! | `cub::ScanTileState` | the scan's state: a `&[AtomicU64]` ([`scan_state_len`]) |
//! | `cub::DeviceSelect::If`, `Flagged`, `Unique`, `DevicePartition::If` | [`select_tile`] (one launch; [`flags_if`], [`flags_unique`], or flags loaded blocked) · `Algorithms::select_if`, `select_flagged`, `unique`, `partition_if` |
//! | `cub::BlockRadixSort` | [`block::radix_sort_keys`](crate::block::radix_sort_keys), [`block::radix_sort_pairs`](crate::block::radix_sort_pairs) |
//! | `cub::DeviceRadixSort::SortKeys`, `SortPairs` (+ `Descending`, bit ranges) | Onesweep: [`onesweep_histogram`] once, [`onesweep_pass`] ([`onesweep_pass_keys`] for keys alone) per 8-bit pass · `Algorithms::radix_sort_keys`, `radix_sort_pairs` (the classic [`radix_upsweep`], scan, [`radix_downsweep`] remain) |
//! | `cub::DeviceMergeSort::SortKeys`, `SortPairs`, `StableSortKeys` (a comparator) | [`merge_sort_tiles`], then per pass [`merge_partition`] and [`merge_tiles`] · `cohort_algorithms::merge_sort_keys`, `merge_sort_pairs` (your type and comparator through `merge_sort_kernels!`), `Algorithms::merge_sort_keys` / `merge_sort_pairs` (built in) |
//! | `cub::DeviceRunLengthEncode::Encode` | [`select_tile`] of the run heads with their offsets, then the lengths (two launches) · `Algorithms::run_length_encode` |
//! | `cub::BlockHistogram` | [`block::BlockHistogram`](crate::block::BlockHistogram) (shared-memory counters, one copy per warp, merged with one global atomic per bin) |
//! | `cub::DeviceHistogram::HistogramEven`, `HistogramRange` | [`histogram_even`], [`histogram_range`] (one launch after clearing the output; [`histogram`]) · `Algorithms::histogram_even`, `histogram_range` |
//! | `cub::DeviceSegmentedReduce::Reduce`, `Sum`, `Min`, `Max` | [`segmented_reduce_chunk`], [`segmented_reduce_fixup`] (two launches, work cut by elements, not segments; [`segmented_reduce`]) · `Algorithms::segmented_reduce` |
//! | `cub::DeviceReduce::ArgMin`, `ArgMax` | [`arg_tiles`], then [`reduce_tiles`] over the [`ArgPair`] partials (two launches; NaN first) · `Algorithms::arg_min`, `arg_max` |
//!
//! # Select, partition, unique
//!
//! The same look-back over the tiles' **counts** of selected items: a count below 2^62 and
//! its flag share one 64-bit word (single relaxed atomics, as the scan's narrow values). Each
//! tile scans its threads' counts, learns how many items earlier tiles selected, stages its
//! selected items (and, for a partition, the rejected ones after them) in dynamic shared
//! memory, and writes them coalesced. The outputs are `DisjointSlice<T, Scattered>`: no safe
//! store writes that kind, and [`select_tile`] is `unsafe` with the contract that makes the
//! positions disjoint (the state cleared before the launch and used by it alone), which the
//! host API keeps; every write is also bounds-checked, so a broken contract gives wrong
//! values, never a write outside the outputs.
//!
//! # Radix sort
//!
//! The host API runs **Onesweep** (the design: `onesweep.rs`):
//! [`onesweep_histogram`] counts the digits of every pass in one read of the keys, then one
//! launch per 8-bit pass ranks each tile by the digit (warp multi-split), finds each digit's
//! output position by a decoupled look-back per digit (one 64-bit status word per tile and
//! digit, flag and count together; forward progress as the scan's, below) and scatters the tile
//! through shared memory. [`onesweep_pass`] is `unsafe` as [`select_tile`] is: its positions
//! are a permutation only when the histogram is the keys' and the state starts zeroed, which
//! the host API keeps; every write is bounds-checked.
//!
//! The device library also keeps the classic LSD scheme, [`RADIX_BITS`] (8) bits a pass, each pass stable, three launches a
//! pass: [`radix_upsweep`] (each block counts the digits of its tiles: a contiguous range of
//! tiles per block, [`block_tile_range`], so that block order is input order), an exclusive
//! sum of the counts in digit-major order (`hist[d * G + b]`; the built-in `u64` scan), which
//! is where the keys with digit `d` of block `b` start in the output, and [`radix_downsweep`]
//! (each block sorts its tiles one by one by the digit in shared memory, stable, with
//! [`block::radix_sort_pairs`](crate::block::radix_sort_pairs), and writes them striped at
//! the next positions of their digits). The host API ping-pongs between the user's buffer and
//! one in the temporary storage (copying back after an odd number of passes). Key order,
//! floats' included, is [`block::radix_sort`](crate::block::radix_sort)'s. The downsweep's
//! outputs are `DisjointSlice<T, Scattered>` and [`radix_downsweep`] is `unsafe`: its
//! positions are a permutation only with the histogram's scan of the same keys and grid, which
//! the host API computes in the same stream just before; every write is bounds-checked. Sizes:
//! positions and counts are `u64` (a block's counters are `u32`, so the host keeps each
//! block's share below 2^32 keys).
//!
//! # The single-pass scan (decoupled look-back)
//!
//! Merrill and Garland's scan: one launch, one read and one write of the data. Each block
//! takes the next **tile id from an atomic counter** (`state[0]`, in the order blocks start,
//! not `blockIdx`), scans its tile, publishes the tile's *aggregate* in the tile's status
//! slot, then its first warp looks back at the slots of the tiles before it, 32 at a time,
//! combining aggregates until it meets an *inclusive prefix*, publishes its own inclusive
//! prefix, and the block adds the prefix to its outputs.
//!
//! - **Status slots.** Each state of a tile's slot (`1` aggregate, then `2` inclusive
//!   prefix; `0` not yet) is published **once per launch**, and a reader reads only what the
//!   state it saw published (CUB's `ScanTileState` keeps status, partial and inclusive values
//!   apart for the same reason). A value of at most 4 bytes is packed with its flag in one
//!   64-bit word (a select's count, below 2^62, likewise): each state is one relaxed atomic
//!   store, and one relaxed load sees a flag with the value stored with it, never a mix. A
//!   wider value (up to 32 bytes) has a flag word, the aggregate's words and the inclusive
//!   prefix's words: a tile stores a state's words (relaxed), then its flag with **release**;
//!   the reader loads the flag with **acquire**, then that state's words, which happened
//!   before and are never stored again in the launch (`.gpu` scope, as every `Atomic`
//!   operation without a scope). One set of value words for both states was a bug: a reader
//!   that saw the aggregate's flag could load the inclusive prefix's words, or a mix (seen on
//!   an H200 for `u64` sums). On the CPU device the look-back pauses where such races bite
//!   (after a tile publishes its aggregate; between a reader's flag and its words), so the
//!   tests catch this class of bug there too.
//! - **Forward progress.** A tile waits only for tiles with smaller ids, and those ids were
//!   taken by blocks that had already started (ids come from the counter in the order blocks
//!   start, not from `blockIdx`, which the hardware may schedule in any order). So the tile
//!   with the smallest unfinished id never waits, provided a block that has started keeps
//!   running — which the GPU's scheduler gives resident blocks, and the CPU device too (its
//!   blocks run on their own workers; the spin yields with `nanosleep`). Other streams' kernels
//!   sharing the GPU cannot break it: they never take ids from this scan's counter.
//! - **Misuse cannot hang.** The storage must be zero before the launch (the host API clears
//!   it in the stream). A counter that does not start at zero, or a slot that never becomes
//!   valid, would make a tile wait forever: the spin is bounded (about 2^26 polls with
//!   back-off, many seconds), after which the kernel panics (an `Err` naming the scan) rather
//!   than hangs. A garbage slot gives wrong values, never an out-of-bounds access: every slot
//!   index is checked once against the state's length.
//! - **Sizes past 2^32 elements**: element and tile indices are `u64`/`usize` throughout.
//!
//! Operators: a scan needs an **associative** operator (the order of elements is kept: a
//! non-commutative operator such as matrix product works); a reduction needs an associative
//! and **commutative** one (each block combines tiles `b, b + G, …`), as CUB's reduce.

mod arg;
pub mod histogram;
mod merge_sort;
mod onesweep;
mod radix_sort;
mod reduce;
mod scan;
mod scan_by_key;
pub mod segmented_reduce;
mod select;

pub use arg::{ARG_BLOCK, ARG_BYTES, ArgPair, ArgValue, arg_better, arg_combine, arg_key, arg_tiles};
pub use histogram::{
    EvenBins, HIST_BLOCK, HIST_BYTES, HistogramSample, NO_BIN, histogram_even, histogram_range, range_bin,
    range_levels_at,
};
pub use segmented_reduce::{SEG_BLOCK, SEG_BYTES, segmented_reduce_chunk, segmented_reduce_fixup};

pub use merge_sort::{
    MERGE_BLOCK, MERGE_MAX_BYTES, merge_items, merge_partition, merge_smem, merge_smem_bytes, merge_sort_tiles,
    merge_tiles, merge_values_offset,
};
pub use onesweep::{
    ONESWEEP_BLOCK, ONESWEEP_ITEMS, onesweep_hist_len, onesweep_histogram, onesweep_pass, onesweep_pass_keys,
    onesweep_smem_bytes, onesweep_state_len,
};
pub use radix_sort::{
    RADIX_BITS, RADIX_DIGITS, SORT_BLOCK, SORT_ITEMS, block_tile_range, radix_downsweep, radix_hist_len,
    radix_smem_bytes, radix_upsweep,
};
pub use reduce::{REDUCE_BLOCK, REDUCE_ITEMS, reduce_tiles};
pub use scan::{SCAN_BLOCK, SCAN_ITEMS, scan_state_len, scan_tile};
pub use scan_by_key::{SCAN_BY_KEY_ITEMS, scan_by_key_tile};
pub use select::{SELECT_BLOCK, SelectOut, flags_if, flags_unique, select_items, select_state_len, select_tile};
