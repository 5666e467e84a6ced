// A `DisjointSlice` goes to a child only in a tail launch: every parent thread holds it and may
// still write its own indices while a fire-and-forget child runs.
use cohort::launch::{FireAndForget, LaunchConfig};
use cohort::prelude::*;

#[kernel]
pub fn child(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    out.set(&i, 1);
}

#[kernel]
pub fn parent(out: DisjointSlice<u32>) {
    let _ = child::launch_from_device(&LaunchConfig::new(1, 32), FireAndForget, out);
}

fn main() {}
