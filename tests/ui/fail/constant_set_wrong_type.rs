// A constant's host handle is typed by its declaration: setting `[f32; 4]` coefficients with
// `u32`s, or a wider array, is a type error, not a byte copy of the wrong size.
use cohort_runtime::{Module, Stream};

cohort::constant! {
    static COEFFS: [f32; 4] = [0.0; 4];
}

fn set(m: &Module, s: &Stream) -> cohort_runtime::Result<()> {
    m.constant(&COEFFS)?.set(s, &[1u32, 2, 3, 4])?;
    m.constant(&COEFFS)?.set(s, &[1.0f32; 8])
}

fn main() {}
