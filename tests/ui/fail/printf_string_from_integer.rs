use cohort::prelude::*;

// `%s` makes vprintf read through its argument: only a `&CStr` may be passed for it.
#[kernel]
pub fn bad(addr: u64) {
    printf!("%s\n", addr);
}

fn main() {}
