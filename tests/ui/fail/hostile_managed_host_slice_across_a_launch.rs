// Adversarial pass (issue 31): the host's slice of a managed buffer kept across a launch that
// writes the buffer: the slice borrows the buffer, the launch needs it exclusively.
use cohort::prelude::*;
use cohort_runtime::{ManagedBuffer, Module, Stream};

#[kernel]
pub fn fill(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 7);
}

fn run(m: &Module, s: &Stream, data: &mut ManagedBuffer<u32>) -> cohort_runtime::Result<u32> {
    let seen = data.as_slice()?;
    fill::load(m)?.launch(s, (1u32, 32u32), &mut *data)?;
    Ok(seen[0])
}

fn main() {}
