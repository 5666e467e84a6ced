//! Block scope: shared memory (static and dynamic) and barriers.

use super::*;

cohort::shared! {
    static PARTIAL: [u32; 256];
}

/// Each block sums its 256 elements with a shared-memory tree and `sync_threads`; also counts
/// its odd elements with `sync_threads_count`.
#[kernel]
pub fn block_sum(data: &[u32], mut sums: DisjointSlice<[u32; 2], PerBlock>) {
    let t = thread::thread_idx_x() as usize;
    let v = data.get(thread::global_id() as usize).copied().unwrap_or(0);
    let p = PARTIAL.get();
    p.store(t, v);
    let odd = cohort::sync::sync_threads_count(v % 2 == 1);
    let mut s = 128;
    while s > 0 {
        if t < s {
            p.store(t, p.load(t) + p.load(t + s));
        }
        sync_threads();
        s /= 2;
    }
    if let Some(leader) = cg::this_thread_block().leader_index() {
        sums.set(leader, [p.load(0), odd]);
    }
}

/// Reverses each block's elements through dynamic shared memory.
#[kernel]
pub fn reverse_blocks(data: &[u32], mut out: DisjointSlice<u32>) {
    let buf = cohort::shared::dynamic::<u32>();
    let t = thread::thread_idx_x() as usize;
    let n = thread::block_dim_x() as usize;
    let i = thread::index_1d();
    buf.store(t, data[*i]);
    sync_threads();
    out.set(&i, buf.load(n - 1 - t));
}

#[test]
fn block_reduce_shared_and_sync_threads() {
    let blocks = 37usize;
    let d = data(blocks * 256 - 100, 3);
    let mut sums = vec![[0u32; 2]; blocks];
    let p = Ptr::of(&mut sums);
    launch(&LaunchSpec::new(blocks as u32, 256u32), &|| __cohort_kernel_block_sum(&d, p.disjoint())).unwrap();
    for (b, s) in sums.iter().enumerate() {
        let part = &d[(b * 256).min(d.len())..((b + 1) * 256).min(d.len())];
        let want_sum: u32 = part.iter().sum();
        let want_odd = part.iter().filter(|&&v| v % 2 == 1).count() as u32;
        assert_eq!(*s, [want_sum, want_odd], "block {b}");
    }

    let d = data(64 * 9, 11);
    let mut out = vec![0u32; d.len()];
    let p = Ptr::of(&mut out);
    launch(&LaunchSpec::new(9u32, 64u32).dynamic_shared(64 * 4), &|| __cohort_kernel_reverse_blocks(&d, p.disjoint()))
        .unwrap();
    for i in 0..d.len() {
        let (b, t) = (i / 64, i % 64);
        assert_eq!(out[i], d[b * 64 + 63 - t], "element {i}");
    }
}
