use cohort::prelude::*;

cohort::shared! {
    static STAGE: [u32; 128];
}
cohort::async_barrier! {
    static BAR;
}

// A copy that completes on a barrier phase borrows its destination until its wait.
#[kernel]
pub fn k(data: &[u32], mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let mut stage = STAGE.get().as_slice();
    let early = BAR.scope(&block, |bar| {
        let copy = bar.memcpy_async(&mut stage, &data[..128]);
        let early = stage.load(0);
        copy.wait();
        early
    });
    out.set(thread::index_1d(), early);
}

fn main() {}
