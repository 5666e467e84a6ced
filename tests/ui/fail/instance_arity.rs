use cohort::prelude::*;

#[kernel(instances((f32, u32)))]
pub fn bad<T: DeviceCopy>(x: T, mut out: DisjointSlice<T>) {
    out.set(thread::index_1d(), x);
}

fn main() {}
