use cohort::prelude::*;

// Thread 5's own index and block 5's leader index are both 5: one slice takes one kind.
#[kernel]
pub fn k(mut per_block: DisjointSlice<u32, PerBlock>) {
    per_block.set(thread::index_1d(), 1);
}

fn main() {}
