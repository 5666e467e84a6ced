//! Warp scope: tile collectives (shuffles, votes, reduce, scan) and coalesced groups.

use super::*;

/// Tile-of-16 collectives: shuffles, votes, ballot, reduce, scan.
#[kernel]
pub fn tile_ops(data: &[u32], mut out: DisjointSlice<[u32; 6]>) {
    let i = thread::index_1d();
    let v = data[*i];
    let t = cg::tiled_partition::<16>(&cg::this_thread_block());
    let r = t.thread_rank();
    let sh = t.shfl(v, (r + 3) % 16);
    let down = t.shfl_down(v, 1);
    let votes = u32::from(t.any(v % 7 == 0)) | u32::from(t.all(v < 990)) << 1;
    let ballot = t.ballot(v % 2 == 0);
    let sum = cg::reduce(&t, v, cg::plus);
    let scan = cg::inclusive_scan(&t, v, cg::plus);
    out.set(&i, [sh, down, votes, ballot, sum, scan]);
}

#[test]
fn tile_shuffles_votes_reduce_scan() {
    let n = 64 * 5;
    let d = data(n, 5);
    let mut out = vec![[0u32; 6]; n];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(5u32, 64u32), &|| __cohort_kernel_tile_ops(&d, p.disjoint())).unwrap();
    for i in 0..n {
        let base = i / 16 * 16;
        let tile = &d[base..base + 16];
        let r = i % 16;
        let down = if r + 1 < 16 { tile[r + 1] } else { tile[r] };
        let votes = u32::from(tile.iter().any(|v| v % 7 == 0)) | u32::from(tile.iter().all(|&v| v < 990)) << 1;
        let ballot = tile.iter().enumerate().filter(|(_, v)| *v % 2 == 0).map(|(k, _)| 1u32 << k).sum::<u32>();
        let sum: u32 = tile.iter().sum();
        let scan: u32 = tile[..=r].iter().sum();
        assert_eq!(out[i], [tile[(r + 3) % 16], down, votes, ballot, sum, scan], "thread {i}");
    }
}

/// After a branch, the lanes that took it form a coalesced group.
#[kernel]
pub fn coalesced(data: &[u32], mut out: DisjointSlice<[u32; 3]>) {
    let i = thread::index_1d();
    let v = data[*i];
    if v % 3 == 0 {
        let g = cg::coalesced_threads();
        let s = cg::reduce(&g, v, cg::plus);
        out.set(&i, [g.thread_rank(), g.num_threads(), s]);
    } else {
        out.set(&i, [u32::MAX, 0, 0]);
    }
}

#[test]
fn coalesced_group_after_divergence() {
    let n = 96 * 4;
    let d = data(n, 1);
    let mut out = vec![[0u32; 3]; n];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(4u32, 96u32), &|| __cohort_kernel_coalesced(&d, p.disjoint())).unwrap();
    for i in 0..n {
        let warp = &d[i / 32 * 32..i / 32 * 32 + 32];
        let lane = i % 32;
        let want = if d[i] % 3 == 0 {
            let rank = warp[..lane].iter().filter(|v| *v % 3 == 0).count() as u32;
            let num = warp.iter().filter(|v| *v % 3 == 0).count() as u32;
            let sum = warp.iter().filter(|v| *v % 3 == 0).sum();
            [rank, num, sum]
        } else {
            [u32::MAX, 0, 0]
        };
        assert_eq!(out[i], want, "thread {i}");
    }
}
