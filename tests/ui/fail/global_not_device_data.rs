// A global holds plain `DeviceCopy` data or global atomics: not references, not shared atomics.
use cohort::atomic::{Atomic, Shared};

cohort::global! {
    static REF: &'static u32 = &0;
    static SHARED_COUNTER: Atomic<u32, Shared> = 0;
}

fn main() {}
