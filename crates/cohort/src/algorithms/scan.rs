//! Single-pass scan with decoupled look-back (see the module docs).

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use crate::DeviceCopy;
use crate::atomic::AtomicU64;
use crate::block::{self, Tile, load_blocked_coalesced, store_blocked_coalesced_valid};
use crate::cg::{ReduceOp, ThreadBlock, ThreadBlockTile, ThreadGroup, WarpGroup};
use crate::slice::DisjointSlice;
use crate::thread::{self, Blocked};

/// Threads per block of the scan kernel.
pub const SCAN_BLOCK: u32 = 256;
/// Items per thread of the scan kernel (16 × 4 bytes: four 16-byte loads and stores).
pub const SCAN_ITEMS: usize = 16;

/// Slot flags.
const INVALID: u64 = 0;
const AGGREGATE: u64 = 1;
const INCLUSIVE: u64 = 2;

/// Polls of a status slot before the look-back gives up (a misuse: the storage was not
/// cleared before the launch).
const MAX_POLLS: u32 = 1 << 26;

crate::shared! {
    /// The tile id the block drew, for all its threads.
    static SCAN_TILE_ID: [u64; 1];
}

/// 64-bit words of one value of `T` in a wide status slot.
const fn value_words<T>() -> usize {
    size_of::<T>().div_ceil(8)
}

/// 64-bit words per tile status slot for values of `T`: one packed word for a value of at
/// most 4 bytes; else a flag word, the aggregate's words, then the inclusive prefix's words
/// (each value in words of its own, written once per launch: see [`Status`]).
pub(super) const fn slot_words<T>() -> usize {
    if size_of::<T>() <= 4 { 1 } else { 1 + 2 * value_words::<T>() }
}

/// The length (in `u64`s) of a scan's state for `n` elements of `T` in tiles of `tile_len`:
/// the tile counter, then one status slot per tile.
#[must_use]
pub const fn scan_state_len<T>(n: usize, tile_len: usize) -> usize {
    1 + n.div_ceil(tile_len) * slot_words::<T>()
}

/// `T`'s bytes as 64-bit words (the rest zero).
#[inline(always)]
fn to_words<T: DeviceCopy>(v: T) -> [u64; 4] {
    const { assert!(size_of::<T>() <= 32, "a scan's values are at most 32 bytes") };
    crate::assert_no_padding::<T>();
    let mut w = [0u64; 4];
    // SAFETY: `T` is at most 32 bytes, without padding.
    unsafe { core::ptr::copy_nonoverlapping(&v as *const T as *const u8, w.as_mut_ptr() as *mut u8, size_of::<T>()) };
    w
}

/// The `T` in the first bytes of `w`.
#[inline(always)]
fn from_words<T: DeviceCopy>(w: [u64; 4]) -> T {
    let mut out = core::mem::MaybeUninit::<T>::uninit();
    // SAFETY: `T` is at most 32 bytes; every bit pattern is a valid `DeviceCopy` value.
    unsafe {
        core::ptr::copy_nonoverlapping(w.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, size_of::<T>());
        out.assume_init()
    }
}

/// On the CPU device only, a pause of about `us` microseconds in the look-back, where a
/// protocol that relies on timing would break: it widens the windows in which another tile
/// can act (between a tile's aggregate and its inclusive prefix; between a reader's flag and
/// its value words), so the CPU device's tests catch ordering bugs that a GPU shows once in a
/// thousand runs. Nothing on the GPU.
#[inline(always)]
pub(super) fn adversarial_delay(us: u64) {
    #[cfg(not(target_arch = "nvptx64"))]
    std::thread::sleep(core::time::Duration::from_micros(us));
    #[cfg(target_arch = "nvptx64")]
    let _ = us;
}

/// A `T` of zero bytes, for items that are never used.
#[inline(always)]
pub(super) fn placeholder<T: DeviceCopy>() -> T {
    crate::assert_no_padding::<T>();
    // SAFETY: every bit pattern, zero included, is a valid `DeviceCopy` value.
    unsafe { core::mem::zeroed() }
}

/// Tile status slots: where tiles publish their aggregates and inclusive prefixes.
pub(super) trait Slots<T> {
    /// Publishes tile `id`'s `flag` and value.
    fn publish(&self, id: usize, flag: u64, v: T);
    /// Tile `id`'s flag and value (the value is meaningless while the flag is `INVALID`).
    fn read(&self, id: usize) -> (u64, T);
}

/// The status slots of a scan: `state[1..]`, checked to hold `tiles` slots.
///
/// Each state of a slot (aggregate, then inclusive prefix) is published **once per launch**,
/// and a reader that sees a state reads only what that state published:
///
/// - **Narrow values** (at most 4 bytes): flag and value in one 64-bit word, so each state
///   is a single relaxed atomic store (two per tile: aggregate, then inclusive), and a single
///   relaxed load sees one state whole — a flag and the value stored with it, never a mix.
/// - **Wide values** (5 to 32 bytes): a flag word, the aggregate's value words and the
///   inclusive prefix's value words, apart. A tile stores the aggregate's words (relaxed),
///   then the flag `AGGREGATE` with **release**; later the inclusive prefix's words, then
///   `INCLUSIVE` with release. The reader loads the flag with **acquire**, then the words of
///   the state it saw. Its acquire reads from (the release sequence of) the store of that
///   flag or a later one, which happen after that state's words were stored; those words are
///   never stored again in the launch (the host zeroed them before it, in stream order), so
///   the reader gets exactly them — whatever the writer does meanwhile. (With one set of
///   value words for both states, a reader that saw `AGGREGATE` could load words the
///   inclusive prefix had overwritten, or a mix: nothing orders those loads before the later
///   stores. That bug showed on an H200 for `u64` sums and an 8-byte user type.)
pub(super) struct Status<'a> {
    pub(super) slots: &'a [AtomicU64],
}

/// The status slots of a count (select, partition, unique): one word per tile, the flag in the
/// top 2 bits and a count below 2^62 in the rest, published and read by single relaxed atomics.
pub(super) struct Counts<'a> {
    pub(super) slots: &'a [AtomicU64],
}

impl Slots<u64> for Counts<'_> {
    #[inline(always)]
    fn publish(&self, id: usize, flag: u64, v: u64) {
        self.slots[id].store(flag << 62 | (v & COUNT_MASK), Relaxed);
    }
    #[inline(always)]
    fn read(&self, id: usize) -> (u64, u64) {
        let x = self.slots[id].load(Relaxed);
        (x >> 62, x & COUNT_MASK)
    }
}

/// The count bits of a [`Counts`] slot.
const COUNT_MASK: u64 = (1 << 62) - 1;

impl<T: DeviceCopy> Slots<T> for Status<'_> {
    #[inline(always)]
    fn publish(&self, id: usize, flag: u64, v: T) {
        let w = to_words(v);
        if slot_words::<T>() == 1 {
            // Flag and value in one word: one relaxed store publishes both at once.
            self.slots[id].store(flag << 32 | (w[0] & 0xffff_ffff), Relaxed);
        } else {
            let s = id * slot_words::<T>();
            // The state's own words, stored once per launch (see `Status`).
            let base = if flag == INCLUSIVE { s + 1 + value_words::<T>() } else { s + 1 };
            let mut k = 0;
            while k < value_words::<T>() {
                self.slots[base + k].store(w[k], Relaxed);
                k += 1;
            }
            // Release: the words above happen before whatever acquires this flag (or a later one).
            self.slots[s].store(flag, Release);
        }
    }

    #[inline(always)]
    fn read(&self, id: usize) -> (u64, T) {
        if slot_words::<T>() == 1 {
            let x = self.slots[id].load(Relaxed);
            (x >> 32, from_words([x & 0xffff_ffff, 0, 0, 0]))
        } else {
            let s = id * slot_words::<T>();
            // Acquire: the words of the state this flag names were stored before it was
            // released, and are never stored again in the launch.
            let flag = self.slots[s].load(Acquire);
            let mut w = [0u64; 4];
            if flag != INVALID {
                // The window in which the old protocol broke (the tile going on to publish
                // its inclusive prefix), widened on the CPU device.
                if flag == AGGREGATE {
                    adversarial_delay(50);
                }
                let base = if flag == INCLUSIVE { s + 1 + value_words::<T>() } else { s + 1 };
                let mut k = 0;
                while k < value_words::<T>() {
                    w[k] = self.slots[base + k].load(Relaxed);
                    k += 1;
                }
            }
            (flag, from_words(w))
        }
    }
}

/// The block's tile id, drawn by its first thread from `counter` (in the order blocks start,
/// not `blockIdx`), for every thread of the block. Once per block (a second draw could
/// overwrite the id before every thread has read the first).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) fn draw_tile(counter: &AtomicU64) -> usize {
    let ids = SCAN_TILE_ID.get();
    if thread::thread_rank_in_block() == 0 {
        ids.store(0, counter.fetch_add(1, Relaxed));
    }
    crate::sync::sync_threads();
    ids.load(0) as usize
}

#[cold]
#[inline(never)]
#[track_caller]
fn look_back_stuck(id: usize, waited_for: usize) -> ! {
    panic!(
        "scan look-back: tile {id} waited too long for tile {waited_for}'s status: the scan's state was not cleared \
         before the launch (its tile counter must start at zero)"
    )
}

/// `v[last] op … op v[0]` over lanes `0..=last` (lane `l` holding tile `id - 1 - l`, so lane
/// order is reverse element order), to every lane.
#[inline(always)]
#[cfg_attr(any(cohort_checked, not(target_arch = "nvptx64")), track_caller)]
fn reduce_reversed<T: DeviceCopy, Op: ReduceOp<T>>(
    warp: &ThreadBlockTile<32, ThreadBlock>,
    v: T,
    last: u32,
    op: Op,
) -> T {
    let lane = warp.thread_rank();
    let mut x = v;
    let mut d = 1;
    while d < 32 {
        let y = warp.shfl_down(x, d);
        if lane + d <= last {
            x = op.combine(y, x);
        }
        d *= 2;
    }
    warp.shfl(x, 0)
}

/// The combination of every element before tile `id` (`id > 0`), to every lane of the block's
/// first warp: the aggregates of the tiles before it, 32 at a time, back to the nearest
/// inclusive prefix (`aggregate`, the caller's own, is never combined: it stands in for the
/// lanes before tile 0, which an inclusive tile 0 always precedes).
#[inline(always)]
#[track_caller]
fn gather_prefix<T: DeviceCopy, Op: ReduceOp<T>>(
    warp: &ThreadBlockTile<32, ThreadBlock>,
    status: &impl Slots<T>,
    id: usize,
    aggregate: T,
    op: Op,
) -> T {
    let lane = warp.thread_rank();
    let mut prefix: Option<T> = None;
    let mut end = id;
    loop {
        // Lane `l` looks at tile `end - 1 - l`; lanes before tile 0 pretend to hold an
        // inclusive prefix (never used: tile 0's is inclusive, and it comes first).
        let mine = end.checked_sub(1 + lane as usize);
        let mut polls = 0u32;
        let mut backoff = 32u32;
        let (flag, v) = loop {
            let (flag, v) = match mine {
                Some(t) => status.read(t),
                None => (INCLUSIVE, aggregate),
            };
            if warp.all(flag != INVALID) {
                break (flag, v);
            }
            polls += 1;
            if polls >= MAX_POLLS {
                look_back_stuck(id, end - 1);
            }
            crate::raw::nanosleep(backoff);
            backoff = if backoff < 512 { backoff * 2 } else { backoff };
        };
        let inclusive = warp.ballot(flag == INCLUSIVE);
        let last = if inclusive != 0 { inclusive.trailing_zeros() } else { 31 };
        let window = reduce_reversed(warp, v, last, op);
        prefix = Some(match prefix {
            Some(p) => op.combine(window, p),
            None => window,
        });
        if inclusive != 0 {
            break;
        }
        end -= 32;
    }
    prefix.unwrap_or(aggregate)
}

/// The look-back of tile `id` by the block's first warp: publishes the tile's aggregate, finds
/// the combination of every element before the tile (`first` for tile 0: the scan's initial
/// value, if any), publishes the tile's inclusive prefix, and returns the exclusive one.
#[inline(always)]
#[track_caller]
pub(super) fn look_back<T: DeviceCopy, Op: ReduceOp<T>>(
    warp: &ThreadBlockTile<32, ThreadBlock>,
    status: &impl Slots<T>,
    id: usize,
    aggregate: T,
    first: Option<T>,
    op: Op,
) -> Option<T> {
    let lane = warp.thread_rank();
    if id == 0 {
        if lane == 0 {
            let incl = match first {
                Some(f) => op.combine(f, aggregate),
                None => aggregate,
            };
            status.publish(0, INCLUSIVE, incl);
        }
        return first;
    }
    if lane == 0 {
        status.publish(id, AGGREGATE, aggregate);
        // Readers see the aggregate a while before the inclusive prefix (CPU device only).
        adversarial_delay(50);
    }
    let p = gather_prefix(warp, status, id, aggregate, op);
    if lane == 0 {
        status.publish(id, INCLUSIVE, op.combine(p, aggregate));
    }
    Some(p)
}

/// The look-back of tile `id` of a scan **by key** (see [`scan_by_key_tile`]), by the block's
/// first warp. `aggregate` is the tile's value from its last segment head to its end (its
/// whole range when `has_head` is false). A tile with a head publishes that as its
/// **inclusive** prefix at once, before looking back (no element after its last head depends
/// on earlier tiles), and looks back only if its first element is not a head
/// (`needs_prefix`); a tile without a head publishes its aggregate, looks back and publishes
/// its inclusive prefix, as [`look_back`]. Returns what precedes the tile's first element in
/// its segment (`None` when nothing does, or when the caller does not need it).
///
/// [`scan_by_key_tile`]: super::scan_by_key_tile
#[inline(always)]
#[track_caller]
pub(super) fn look_back_by_key<T: DeviceCopy, Op: ReduceOp<T>>(
    warp: &ThreadBlockTile<32, ThreadBlock>,
    status: &impl Slots<T>,
    id: usize,
    aggregate: T,
    has_head: bool,
    needs_prefix: bool,
    op: Op,
) -> Option<T> {
    let lane = warp.thread_rank();
    if id == 0 || has_head {
        if lane == 0 {
            status.publish(id, INCLUSIVE, aggregate);
        }
        if id == 0 || !needs_prefix {
            return None;
        }
        return Some(gather_prefix(warp, status, id, aggregate, op));
    }
    look_back(warp, status, id, aggregate, None, op)
}

/// One tile of a single-pass scan of `input` into `out` with `op` (associative; the order of
/// elements is kept), tiles of `block_size() * N` elements. `init`: `Some(x)` for an
/// **exclusive** scan starting from `x` (`out[0] = x`, `out[i] = x op in[0] op … op in[i-1]`),
/// `None` for an **inclusive** one (`out[i] = in[0] op … op in[i]`).
///
/// Launch contract (the host API keeps it): one block per tile, blocks of a size that is a
/// multiple of 32, `state` at least [`scan_state_len`] words and **all zero** before the
/// launch, used by this launch alone. Broken, the results are wrong or the kernel panics
/// (never an out-of-bounds access nor a race).
///
/// # Safety
/// Nothing else in the launch writes `out`: the tiles this writes are numbered by the state's
/// counter, not by [`block::tiles`], so another writer of the same `Blocked` slice (a
/// `block::tiles` loop, a second scan with another state) could be handed the same tile.
#[inline(always)]
#[track_caller]
pub unsafe fn scan_tile<T: DeviceCopy, Op: ReduceOp<T>, const N: usize>(
    input: &[T],
    out: &mut DisjointSlice<'_, T, Blocked<N>>,
    state: &[AtomicU64],
    init: Option<T>,
    op: Op,
) {
    let tile_len = thread::block_size() as usize * N;
    let n = input.len().min(out.len());
    let tiles = n.div_ceil(tile_len);
    assert!(state.len() >= scan_state_len::<T>(n, tile_len), "scan: the state holds fewer words than scan_state_len");
    let (counter, slots) = state.split_at(1);
    let status = Status { slots: &slots[..tiles * slot_words::<T>()] };
    let id = draw_tile(&counter[0]);
    if id >= tiles {
        return;
    }
    // SAFETY: the counter hands each number out once (it only grows: `fetch_add`), and only
    // tiles it hands out write `out` in this launch (the caller's contract); every block of
    // the launch has one size.
    let tile = unsafe { Tile::new_unchecked(id as u64) };
    // Past the end of a last partial tile, copies of the first element (never stored; they
    // only enter the last tile's aggregate, which no tile reads). A full tile needs none:
    // no load of `input[0]` on its path.
    let fill = if n - id * tile_len >= tile_len { placeholder() } else { input[0] };
    let (items, _) = load_blocked_coalesced::<T, N>(input, id as u64, fill);
    let scanned =
        block::scan_items_with_prefix(&items, op, |warp, aggregate| look_back(warp, &status, id, aggregate, init, op));
    let outs = match init {
        Some(x) => scanned.exclusive(&items, op, x),
        None => scanned.inclusive(&items, op),
    };
    // Only the input's length: `out` may be longer.
    store_blocked_coalesced_valid(out, &tile, &outs, n - id * tile_len);
}
