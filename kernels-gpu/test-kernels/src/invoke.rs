//! `invoke_one`, `invoke_one_broadcast`, `reduce_update_async`, `reduce_store_async` on every
//! group that has them (tests/gpu/invoke.rs checks every element against CPU references).

use cohort::cg;
use cohort::prelude::*;

/// Per thread `i` (blocks of a multiple of 64 threads, `vals.len()` threads in all), `out[i]`:
/// 0 `invoke_one(tile 8)` ran here, 1 `invoke_one(block)` ran here, 2 `invoke_one(tile 64)`
/// ran here, 3–4 `invoke_one_broadcast(tile 8, [v, i])`, 5–6 `invoke_one_broadcast(tile 32,
/// v << 32 | i)` (low, high word), 7–9 `invoke_one_broadcast(tile 64, [v, i, 7])`, 10 in the
/// coalesced group of the lanes with `pred[i] & 1` (and of the others): `invoke_one_broadcast`
/// of `i`, 11 `invoke_one(that group)` ran here, 12 `invoke_one_broadcast(dynamic tile of 4,
/// v)`. `hits[k]` counts the calls of group kind k (tile 8, block, tile 64, coalesced).
#[kernel]
pub fn invoke_one_groups(vals: &[u32], pred: &[u32], hits: &[AtomicU32], mut out: DisjointSlice<[u32; 13]>) {
    let i = thread::index_1d();
    let (v, gi) = (vals[*i], *i as u32);
    let block = cg::this_thread_block();
    let t8 = cg::tiled_partition::<8>(&block);
    let t32 = cg::tiled_partition::<32>(&block);
    let t64 = cg::tiled_partition::<64>(&block);
    let mut r = [0u32; 13];
    r[0] = cg::invoke_one(&t8, || hits[0].fetch_add(1, Ordering::Relaxed)).is_some() as u32;
    r[1] = cg::invoke_one(&block, || hits[1].fetch_add(1, Ordering::Relaxed)).is_some() as u32;
    r[2] = cg::invoke_one(&t64, || hits[2].fetch_add(1, Ordering::Relaxed)).is_some() as u32;
    let b8 = cg::invoke_one_broadcast(&t8, || [v, gi]);
    r[3] = b8[0];
    r[4] = b8[1];
    let b32 = cg::invoke_one_broadcast(&t32, || (v as u64) << 32 | gi as u64);
    r[5] = b32 as u32;
    r[6] = (b32 >> 32) as u32;
    let b64 = cg::invoke_one_broadcast(&t64, || [v, gi, 7]);
    r[7] = b64[0];
    r[8] = b64[1];
    r[9] = b64[2];
    if pred[*i] & 1 == 1 {
        let g = cg::coalesced_threads();
        r[10] = cg::invoke_one_broadcast(&g, || gi);
        r[11] = cg::invoke_one(&g, || hits[3].fetch_add(1, Ordering::Relaxed)).is_some() as u32;
    } else {
        let g = cg::coalesced_threads();
        r[10] = cg::invoke_one_broadcast(&g, || gi);
        r[11] = cg::invoke_one(&g, || hits[3].fetch_add(1, Ordering::Relaxed)).is_some() as u32;
    }
    let t4 = cg::tiled_partition_dyn(&block, 4);
    r[12] = cg::invoke_one_broadcast(&t4, || v);
    out.set(&i, r);
}

/// The async reductions (blocks of a multiple of 64 threads, `vals.len()` threads in all):
/// `cells[0] += Σ v` (tiles of 32, `plus`), `cells[1] = max(cells[1], v…)` (tiles of 8,
/// `greater`), `cells[2] ^= ⊕ v` (tiles of 8, `bit_xor`), `cells[3] *= Π (v | 1)` (the block,
/// a closure: compare-and-swap), `cells[4] = min(…)` (tiles of 64, `less`), `cells[5] += Σ v`
/// of the lanes with `pred & 1` (their coalesced group), `cells[6 + b] = Σ v` of block `b`
/// (`reduce_store_async` to an atomic). `per_tile8[t]` = Σ v of tile of 8 `t`, `per_tile64[t]`
/// = max v of tile of 64 `t` (`reduce_store_async` through the leader's `&mut`). `fcells[0]
/// += Σ f`, `fcells[1] = max(…)` (tiles of 32, `f32`), `wide[0] = min(wide[0], v - 2^31)` (tiles
/// of 16, `i64`, `less`).
#[kernel]
pub fn reduce_async_groups(
    vals: &[u32],
    fvals: &[f32],
    pred: &[u32],
    cells: &[AtomicU32],
    fcells: &[Atomic<f32>],
    wide: &[Atomic<i64>],
    mut per_tile8: DisjointSlice<u32, PerTile<8>>,
    mut per_tile64: DisjointSlice<u32, PerTile<64>>,
) {
    let i = thread::index_1d();
    let (v, f) = (vals[*i], fvals[*i]);
    let block = cg::this_thread_block();
    let t8 = cg::tiled_partition::<8>(&block);
    let t16 = cg::tiled_partition::<16>(&block);
    let t32 = cg::tiled_partition::<32>(&block);
    let t64 = cg::tiled_partition::<64>(&block);
    cg::reduce_update_async(&t32, &cells[0], v, cg::plus);
    cg::reduce_update_async(&t8, &cells[1], v, cg::greater);
    cg::reduce_update_async(&t8, &cells[2], v, cg::bit_xor);
    cg::reduce_update_async(&block, &cells[3], v | 1, |a: u32, b: u32| a.wrapping_mul(b));
    cg::reduce_update_async(&t64, &cells[4], v, cg::less);
    if pred[*i] & 1 == 1 {
        cg::reduce_update_async(&cg::coalesced_threads(), &cells[5], v, cg::plus);
    }
    let b = thread::block_idx_x() as usize;
    cg::reduce_store_async(&block, &cells[6 + b], v, cg::plus);
    cg::reduce_store_async(&t8, t8.leader_index().and_then(|t| per_tile8.get_mut(t)), v, cg::plus);
    cg::reduce_store_async(&t64, t64.leader_index().and_then(|t| per_tile64.get_mut(t)), v, cg::greater);
    cg::reduce_update_async(&t32, &fcells[0], f, cg::plus);
    cg::reduce_update_async(&t32, &fcells[1], f, cg::greater);
    cg::reduce_update_async(&t16, &wide[0], v as i64 - (1 << 31), cg::less);
}
