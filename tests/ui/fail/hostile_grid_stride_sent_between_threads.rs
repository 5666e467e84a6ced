// Adversarial pass (issue 31): a thread's grid-stride loop hands out the indices it owns. On the
// CPU device a kernel may use `std`; sent to another kernel thread through a `static Mutex`, it
// would let two threads write one element. It is not `Send`, as `ThreadIndex` is not.
use cohort::prelude::*;

static SLOT: std::sync::Mutex<Option<cohort::thread::GridStride>> = std::sync::Mutex::new(None);

#[kernel]
pub fn k(mut out: DisjointSlice<u32>) {
    let mine = thread::grid_stride(out.len());
    if let Some(theirs) = SLOT.lock().unwrap().replace(mine) {
        for i in theirs {
            out.set(&i, 1);
        }
    }
}

fn main() {}
