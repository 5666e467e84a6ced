use cohort::prelude::*;

cohort::async_barrier! {
    static BAR;
    static OTHER;
}

// A handle (and its tokens) lives only inside its scope, whose end retires the barrier: it
// cannot be kept for another barrier's scope, nor waited for after.
#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let block = cg::this_thread_block();
    let token = BAR.scope(&block, |bar| bar.arrive());
    OTHER.scope(&block, |_other| token.wait());
    out.set(thread::index_1d(), 1);
}

fn main() {}
