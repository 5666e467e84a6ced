use cohort::prelude::*;

cohort::async_barrier! {
    static BAR;
}

// The barrier's words are reachable only through its scope: no shared-memory handle to them
// (which could overwrite a live barrier) can be made.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let words = BAR::STORAGE.get();
    words.store(0, 0);
    out.set(thread::index_1d(), 1);
}

fn main() {}
