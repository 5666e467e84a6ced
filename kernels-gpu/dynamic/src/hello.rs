//! Nested hello world: every thread prints; thread 0 of each block launches a one-block child
//! with half the threads, down to one thread.

use cohort::launch::{FireAndForget, LaunchConfig};
use cohort::prelude::*;

/// Prints `Recursion=<depth>: Hello World from thread <t> block <b>` from every thread; thread 0
/// of each block launches `nested_hello<<<1, blockDim.x / 2>>>(depth + 1)` (fire-and-forget)
/// while the block has more than one thread, and prints `-------> nested execution depth:
/// <depth + 1>`, or `launch failed at depth <depth>: error <e>` if the launch was refused.
#[kernel]
pub fn nested_hello(depth: u32) {
    let tid = thread::thread_idx_x();
    printf!("Recursion=%u: Hello World from thread %u block %u\n", depth, tid, thread::block_idx_x());
    let half = thread::block_dim_x() / 2;
    if tid == 0 && half > 0 {
        match nested_hello::launch_from_device(&LaunchConfig::new(1, half), FireAndForget, depth + 1) {
            Ok(()) => {
                printf!("-------> nested execution depth: %u\n", depth + 1);
            }
            Err(e) => {
                printf!("launch failed at depth %u: error %u\n", depth, e.code());
            }
        }
    }
}
