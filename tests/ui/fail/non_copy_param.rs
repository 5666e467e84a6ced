use cohort::prelude::*;

extern crate alloc;

#[kernel]
pub fn bad(name: alloc::string::String) {
    let _ = name;
}

fn main() {}
