// Blocks per SM and a register cap both set the register budget (CUDA C++ refuses
// `__launch_bounds__(t, b)` with `__maxnreg__` too): give one.
use cohort::prelude::*;

#[kernel(launch_bounds(256, 2), max_registers(64))]
pub fn k(mut out: DisjointSlice<u32>) {
    out.set(thread::index_1d(), 0);
}

fn main() {}
