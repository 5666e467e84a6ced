// A cluster kernel cannot be `dependent` (nor `multi_grid`): those launches have no cluster
// dimension, and the cluster protocol would run in clusters the launch did not ask for.
use cohort::prelude::*;

#[kernel(cluster, dependent)]
pub fn k(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 0);
}

fn main() {}
