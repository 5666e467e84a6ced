use cohort::atomic::Shared;
use cohort::prelude::*;

#[kernel]
pub fn k(locks: &[Mutex<Shared>]) {
    let _g = locks[0].lock();
}

fn main() {}
