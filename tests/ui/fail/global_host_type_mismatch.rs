// The host sees an `AtomicU32` global as a `u32`: reading it as anything else is a type error.
use cohort::prelude::*;
use cohort_runtime::Module;

cohort::global! {
    static HITS: AtomicU32 = 0;
}

fn read(m: &Module) -> cohort_runtime::Result<u64> {
    m.global(&HITS)?.get()
}

fn main() {}
