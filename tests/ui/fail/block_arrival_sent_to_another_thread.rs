// A split arrival is this thread's: the token is not `Send`, so it cannot be handed to another
// thread to wait for (on the CPU device's host side as anywhere).
use cohort::prelude::*;

fn send<T: Send>(_: T) {}

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let b = cohort::cg::this_thread_block();
    send(b.barrier_arrive());
    out.set(thread::index_1d(), 0);
}

fn main() {}
