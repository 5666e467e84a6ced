use cohort::prelude::*;
use cohort_runtime::{Module, Stream};

#[kernel]
pub fn scale(factor: f32, n: u32) {
    let _ = (factor, n);
}

fn launch(m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    scale::load(m)?.launch(s, (1u32, 32u32), 2.0f64, 3u32)
}

fn main() {}
