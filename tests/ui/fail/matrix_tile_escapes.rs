// A thread tile borrows its matrix: two tiles (which could hand out two references to one
// element) cannot be alive at once.
use cohort::prelude::*;

#[kernel]
pub fn two_tiles(shape: BlockShape<32, 8>, mut out: DisjointMatrix<f32, Cyclic>) {
    let mut a = out.tile(&shape);
    let mut b = out.tile(&shape);
    let x = a.get_mut(0, 0).unwrap();
    let y = b.get_mut(0, 0).unwrap();
    *x = 1.0;
    *y = 2.0;
}

fn main() {}
