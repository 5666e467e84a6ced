// A `&[T]` of plain values goes to a child only in a tail launch: it may be an element that its
// owner in the parent writes again after the launch, while a concurrent child reads it.
use cohort::launch::{FireAndForget, LaunchConfig};
use cohort::prelude::*;

#[kernel]
pub fn child(data: &[u32], hits: &[AtomicU32]) {
    if data[0] == 7 {
        hits[0].fetch_add(1, Ordering::Relaxed);
    }
}

#[kernel]
pub fn parent(mut out: DisjointSlice<u32>, hits: &[AtomicU32]) {
    let i = thread::index_1d();
    if let Some(e) = out.get_mut(&i) {
        let _ = child::launch_from_device(&LaunchConfig::new(1, 32), FireAndForget, core::slice::from_ref(e), hits);
        *e = 7;
    }
}

fn main() {}
