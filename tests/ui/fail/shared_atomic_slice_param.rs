use cohort::atomic::{Atomic, Shared};
use cohort::prelude::*;

// A kernel parameter is global memory: `atom.shared` on it would fault.
#[kernel]
pub fn k(counts: &[Atomic<u32, Shared>]) {
    counts[0].add(1, Ordering::Relaxed);
}

fn main() {}
