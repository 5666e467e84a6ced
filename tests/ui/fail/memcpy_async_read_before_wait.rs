use cohort::prelude::*;

cohort::shared! {
    static STAGE: [u32; 128];
}

// The copy borrows its destination until the wait gives it back: no read while `cp.async` writes.
#[kernel]
pub fn k(data: &[u32], mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let mut stage = STAGE.get().as_slice();
    let copy = cg::memcpy_async(&block, &mut stage, &data[..128]);
    let early = stage.load(0);
    copy.wait(&block);
    out.set(thread::index_1d(), early);
}

fn main() {}
