use cohort::prelude::*;

// A local variable lives in local memory, where atomic instructions are undefined.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let counter = AtomicU32::new(0);
    out.set(thread::index_1d(), counter.fetch_add(1, Ordering::Relaxed));
}

fn main() {}
