use cohort::prelude::*;

cohort::async_barrier! {
    static BAR;
}

// A token borrows the barrier handle: no second arrival on the phase before the wait.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    BAR.scope(&block, |bar| {
        let first = bar.arrive();
        let second = bar.arrive();
        first.wait();
        second.wait();
    });
    out.set(thread::index_1d(), 1);
}

fn main() {}
