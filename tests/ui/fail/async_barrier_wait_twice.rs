use cohort::prelude::*;

cohort::async_barrier! {
    static BAR;
}

// Waiting consumes the token: one phase cannot be waited for twice.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    BAR.scope(&block, |bar| {
        let token = bar.arrive();
        token.wait();
        token.wait();
    });
    out.set(thread::index_1d(), 1);
}

fn main() {}
