use core::marker::PhantomData;
use cohort::prelude::*;

#[kernel]
pub fn k(a: u64, marker: PhantomData<u64>, mut out: DisjointSlice<u64>) {
    let _ = (a, marker);
    out.set(thread::index_1d(), 0);
}

fn main() {}
