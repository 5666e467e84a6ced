//! Kernels of the adversarial pass (`tests/gpu/hostile.rs`, issue 31): what a hostile user of
//! the safe API writes — kernels made by `macro_rules!`, one generic kernel instantiated twice,
//! closures given to collectives that read shared memory, call collectives or panic, copies
//! whose handle is dropped before the wait — each checked against a CPU reference or expected
//! to end its launch with an `Err`.

use cohort::prelude::*;

/// Makes a kernel `$name` in a module `$module` of its own, with a `shared!` array of its own
/// (declared inside the expansion): thread `t` stores `v`, the block synchronizes, and the
/// thread writes its right neighbour's value plus the sum of its tile of 32 and `$extra`.
/// Two expansions must not share the array (each is its own `.shared` variable) nor mix up
/// their collectives' call sites.
macro_rules! neighbour_kernel {
    ($module:ident, $name:ident, $extra:expr) => {
        /// Made by `neighbour_kernel!`.
        pub mod $module {
            use cohort::prelude::*;

            cohort::shared! {
                static STAGE: [u32; 1024];
            }

            /// Made by `neighbour_kernel!`: see the macro.
            #[kernel]
            pub fn $name(vals: &[u32], mut out: DisjointSlice<u32>) {
                let i = thread::index_1d();
                let block = cg::this_thread_block();
                let t = thread::thread_rank_in_block() as usize;
                let n = thread::block_size() as usize;
                let v = vals.get(*i).copied().unwrap_or(0);
                let stage = STAGE.get();
                stage.store(t, v);
                block.sync();
                let right = stage.load((t + 1) % n);
                let tile = cg::tiled_partition::<32>(&block);
                let sum = cg::reduce(&tile, v, |a: u32, b: u32| a.wrapping_add(b));
                out.set(i, right.wrapping_add(sum).wrapping_add($extra));
            }
        }
    };
}

neighbour_kernel!(macro_a, hostile_macro_a, 0u32);
neighbour_kernel!(macro_b, hostile_macro_b, 1_000_000u32);

/// What the generic kernel adds with: wrapping for integers, IEEE for floats.
pub trait Combine: DeviceCopy {
    /// `a + b` in the type's own arithmetic.
    fn combine(a: Self, b: Self) -> Self;
}

impl Combine for u32 {
    #[inline(always)]
    fn combine(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
}

impl Combine for f32 {
    #[inline(always)]
    fn combine(a: Self, b: Self) -> Self {
        a + b
    }
}

/// One generic kernel, two instances of the same size in one module (`u32` and `f32`, both 4
/// bytes): each launcher must run its own entry, or the bits would be added as the other type.
#[kernel(instances(u32, f32))]
pub fn hostile_generic_add<T: Combine>(a: &[T], b: &[T], mut out: DisjointSlice<T>) {
    let i = thread::index_1d();
    if let (Some(&x), Some(&y)) = (a.get(*i), b.get(*i)) {
        out.set(i, T::combine(x, y));
    }
}

cohort::shared! {
    static BIAS: [u32; 1];
}

/// Closures given to collectives that read shared memory (a bias thread 0 stored) and, in the
/// tile reduce, call a collective of their own (a vote of the same tile: a butterfly reduce
/// calls the op in every lane at every step, so the vote is converged): `reduce` of the tile of
/// 32, of the block, and `inclusive_scan` of the tile. With `op(a, b) = a + b + bias`
/// (associative), a fold of `k` values is their sum plus `(k - 1)` biases whatever the order:
/// `red[i] = tile sum + 31 bias`, `bred[i] = block sum + (n - 1) bias`, `scan[i] = prefix +
/// lane bias`.
#[kernel]
pub fn hostile_closure_collectives(
    vals: &[u32],
    bias: u32,
    mut red: DisjointSlice<u32>,
    mut bred: DisjointSlice<u32>,
    mut scan: DisjointSlice<u32>,
) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let b = BIAS.get();
    if thread::thread_rank_in_block() == 0 {
        b.store(0, bias);
    }
    block.sync();
    let tile = cg::tiled_partition::<32>(&block);
    let v = vals.get(*i).copied().unwrap_or(0);
    let voting = |x: u32, y: u32| {
        let none = tile.any(false) as u32;
        x.wrapping_add(y).wrapping_add(b.load(0)).wrapping_add(none)
    };
    let plain = |x: u32, y: u32| x.wrapping_add(y).wrapping_add(b.load(0));
    let r = cg::reduce(&tile, v, voting);
    let s = cg::inclusive_scan(&tile, v, plain);
    let br = cg::reduce(&block, v, plain);
    red.set(&i, r);
    bred.set(&i, br);
    scan.set(i, s);
}

/// A vote inside the op of a tile scan: a scan calls the op only in the lanes that have a
/// partner at each step (lane >= 1, >= 2, >= 4, …), so the vote is reached by part of the tile
/// and must be reported as divergent, not wait for lanes that never come.
#[kernel]
pub fn hostile_vote_in_scan_op(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let tile = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = vals.get(*i).copied().unwrap_or(0);
    let s = cg::inclusive_scan(&tile, v, |x: u32, y: u32| x.wrapping_add(y).wrapping_add(tile.all(true) as u32));
    out.set(i, s);
}

/// A block-level collective inside the op of another block-level collective: both would use
/// the library's per-warp scratch of the block, the inner one overwriting the partials the
/// outer one is still folding. Every thread calls the op equally often, so the inner
/// collective is converged (the convergence rule holds): it must be reported, not give a
/// wrong sum.
#[kernel]
pub fn hostile_nested_block_reduce(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let v = vals.get(*i).copied().unwrap_or(0);
    let total = cg::reduce(&block, v, |a: u32, b: u32| {
        let inner = cg::reduce(&block, 1u32, |x: u32, y: u32| x.wrapping_add(y));
        a.wrapping_add(b).wrapping_add(inner.wrapping_mul(0))
    });
    out.set(i, total);
}

/// The same for a large tile (128 threads): a large-tile reduce inside a large-tile reduce's op.
#[kernel]
pub fn hostile_nested_large_tile_reduce(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let tile = cg::tiled_partition::<128>(&block);
    let v = vals.get(*i).copied().unwrap_or(0);
    let total = cg::reduce(&tile, v, |a: u32, b: u32| {
        let inner = cg::reduce(&tile, 1u32, |x: u32, y: u32| x.wrapping_add(y));
        a.wrapping_add(b).wrapping_add(inner.wrapping_mul(0))
    });
    out.set(i, total);
}

/// A panic inside the op of a tile reduce, in the lanes whose operand is `bad`: the other lanes
/// go on to the next shuffle, which the panicking lanes never reach.
#[kernel]
pub fn hostile_panic_in_reduce_op(vals: &[u32], bad: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let tile = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = vals.get(*i).copied().unwrap_or(0);
    let r = cg::reduce(&tile, v, |a: u32, b: u32| {
        if b == bad {
            panic!("hostile: the reduce op met the bad value");
        }
        a.wrapping_add(b)
    });
    out.set(i, r);
}

/// A panic inside the op of a block-level scan, in one warp, between the scan's two block
/// barriers: the other warps wait at a barrier the panicking threads never reach.
#[kernel]
pub fn hostile_panic_in_block_scan_op(vals: &[u32], bad_warp: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let v = vals.get(*i).copied().unwrap_or(0);
    let s = cg::inclusive_scan(&block, v, |a: u32, b: u32| {
        if thread::warp_id() == bad_warp {
            panic!("hostile: a warp panics in the block scan op");
        }
        a.wrapping_add(b)
    });
    out.set(i, s);
}

cohort::shared! {
    static LANDING: [u32; 1024];
}

/// Each thread copies its own 4 words of `src` into its own part of shared memory with
/// `memcpy_async` (a group of one thread), *drops* the copy handle instead of waiting for it,
/// and reads its part back: the drop must wait for the copy, or the thread reads shared memory
/// the copy has not written yet (the sentinel stored before it).
#[kernel]
pub fn hostile_drop_async_copy(src: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let block = cg::this_thread_block();
    let me = cg::tiled_partition::<1>(&block);
    let t = thread::thread_rank_in_block() as usize;
    let landing = LANDING.get();
    let mut mine = landing.as_slice().sub(4 * (t % 256), 4);
    for k in 0..4 {
        mine.store(k, u32::MAX);
    }
    let start = 4 * *i;
    let sum = match src.get(start..start + 4) {
        Some(words) => {
            let copy = cg::memcpy_async(&me, &mut mine, words);
            drop(copy);
            (0..4).fold(0u32, |acc, k| acc.wrapping_add(mine.load(k)))
        }
        None => 0,
    };
    out.set(i, sum);
}

/// Lengths as the kernel sees them (no truncation to 32 bits): every thread writes
/// `units.len()`.
#[kernel]
pub fn hostile_lengths(units: &[()], mut out: DisjointSlice<u64>) {
    let i = thread::index_1d();
    out.set(i, units.len() as u64);
}

/// Writes `v + i` into element `i` of `out` (whatever its length, zero included).
#[kernel]
pub fn hostile_fill(v: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let x = v.wrapping_add(*i as u32);
    out.set(i, x);
}

/// Every thread whose index is below `n` pushes its index (an `AppendSlice` of any capacity,
/// zero included).
#[kernel]
pub fn hostile_push(n: u32, hits: AppendSlice<u32>) {
    let i = *thread::index_1d() as u32;
    if i < n {
        let _ = hits.push(i);
    }
}

/// Spins until `ns` nanoseconds have passed since it began (on the GPU's global timer; on the
/// CPU device the host clock), then writes `v + i`: a kernel still running when its host code
/// moves on.
#[kernel]
pub fn hostile_slow(ns: u64, v: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let start = cohort::raw::globaltimer();
    while cohort::raw::globaltimer().wrapping_sub(start) < ns {
        cohort::raw::nanosleep(1000);
    }
    let x = v.wrapping_add(*i as u32);
    out.set(i, x);
}

/// Panics (a trap on a GPU, which ends the CUDA context) when `fail` is set, else writes
/// `v + i`: the failed kernel whose memory a scope is about to give back.
#[kernel]
pub fn hostile_maybe_fail(fail: u32, v: u32, mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    if fail != 0 {
        panic!("hostile: a kernel that fails while it writes registered memory");
    }
    let x = v.wrapping_add(*i as u32);
    out.set(i, x);
}

/// Device side of a kernel split by `#[cfg]` whose two sides have the same parameters (so the
/// ABI check at load passes) but different bodies: no barrier here.
#[cfg(target_arch = "nvptx64")]
#[kernel]
pub fn hostile_split_body(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let x = 7 + *i as u32;
    out.set(i, x);
}

/// Host side of [`hostile_split_body`]: a block barrier, which the PTX (read to choose the CPU
/// device's fast path, without coroutines) does not have.
#[cfg(not(target_arch = "nvptx64"))]
#[kernel]
pub fn hostile_split_body(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    sync_threads();
    let x = 7 + *i as u32;
    out.set(i, x);
}
