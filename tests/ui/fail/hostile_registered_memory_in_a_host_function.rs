// Adversarial pass (issue 31): registered memory handed to a host function, which would run
// after the scope has unregistered it and given it back: the host function must be `'static`,
// the registered memory lives only as long as its scope.
use cohort_runtime::{Gpu, Stream};

fn run(gpu: &Gpu, s: &Stream, data: &mut [u32]) -> cohort_runtime::Result<()> {
    gpu.with_registered(data, |reg| {
        let view = reg.slice(..);
        s.host_fn(move || {
            let _ = view.len();
        })
    })?
}

fn main() {}
