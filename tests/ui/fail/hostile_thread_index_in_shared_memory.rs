// Adversarial pass (issue 31): a thread's index (its proof of owning an element) stored in
// shared memory, for another thread of the block to load: not `DeviceCopy`, so no shared array
// holds it.
use cohort::prelude::*;

cohort::shared! {
    static OWNERS: [ThreadIndex; 32];
}

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let owners = OWNERS.get();
    let t = thread::thread_rank_in_block() as usize;
    owners.store(t, thread::index_1d());
    sync_threads();
    let theirs = owners.load((t + 1) % 32);
    out.set(&theirs, 1);
}

fn main() {}
