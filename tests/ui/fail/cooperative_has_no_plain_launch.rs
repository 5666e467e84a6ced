use cohort::prelude::*;
use cohort_runtime::{Module, Stream};

#[kernel(cooperative)]
pub fn coop(grid: GridGroup) {
    grid.sync();
}

fn launch(m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    coop::load(m)?.launch(s, (1u32, 32u32))
}

fn main() {}
