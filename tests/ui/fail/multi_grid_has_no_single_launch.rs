use cohort::prelude::*;
use cohort_runtime::{Module, Stream};

// A multi-grid kernel runs only on every GPU of a `MultiGrid` at once (`add_to` + `submit`).
#[kernel(multi_grid)]
pub fn multi(m: MultiGridGroup) {
    m.sync();
}

fn launch(m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    multi::load(m)?.launch_cooperative(s, (1u32, 32u32))
}

fn main() {}
