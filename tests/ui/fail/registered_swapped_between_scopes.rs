// Two scopes' registered memories cannot be swapped: the inner scope would unregister the
// outer one's memory, and the outer scope would keep using the inner one's after it ended.
use cohort_runtime::Gpu;

fn swap(gpu: &Gpu, a: &mut [u32], b: &mut [u32]) {
    let _ = gpu.with_registered(a, |ra| {
        let _ = gpu.with_registered(b, |rb| std::mem::swap(ra, rb));
    });
}

fn main() {}
