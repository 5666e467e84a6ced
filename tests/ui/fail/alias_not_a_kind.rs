// A type alias is resolved by rustc: one for a type no parameter kind has is refused, on the
// parameter, saying what a kernel takes.
use cohort::prelude::*;

pub struct Name(u32);
pub type Label = Name;

#[kernel]
pub fn bad(name: Label, mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = name.0;
    }
}

fn main() {}
