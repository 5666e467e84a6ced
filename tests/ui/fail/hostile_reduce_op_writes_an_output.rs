// Adversarial pass (issue 31): a closure given to a collective that writes the kernel's output.
// The op is called by the library in every lane, as often as its algorithm needs: it must be a
// pure `Fn(T, T) -> T + Copy`, so a closure holding the output mutably is refused.
use cohort::prelude::*;

#[kernel]
pub fn k(vals: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let tile = cg::tiled_partition::<32>(&cg::this_thread_block());
    let v = vals.get(*i).copied().unwrap_or(0);
    let r = cg::reduce(&tile, v, |a: u32, b: u32| {
        out.set(&i, a);
        a + b
    });
    let _ = r;
}

fn main() {}
