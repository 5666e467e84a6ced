// A constant holds plain `DeviceCopy` data: not references, not atomics.
use cohort::atomic::AtomicU32;

cohort::constant! {
    static REF: &'static u32 = &0;
    static COUNTER: AtomicU32 = 0;
}

fn main() {}
