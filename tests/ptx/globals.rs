//! `cohort::global`: `constant!` is a `.const` PTX variable under its own name, read with
//! `ld.const` in pieces as wide as its alignment; `global!` is a `.global` variable updated by
//! global atomics; both carry their initial value in `__cohort_init_NAME`.

use cohort_test_kernels::PTX;
use cohort_tests::{TestResult, ensure};

use crate::{entry_body, entry_contains};

pub fn golden_constants() -> TestResult {
    for m in PTX.modules {
        let text = m.text();
        for decl in [
            ".visible .const .align 4 .b8 POLY[32];",
            ".visible .const .align 4 .b8 CONV_TAPS[36];",
            ".visible .const .align 4 .b8 AFFINE[8];",
            ".visible .const .align 16 .b8 WIDE[32];",
            ".visible .const .align 2 .b8 HALVES[6];",
            // 1.0f32 = 0x3f800000, little-endian; trailing zeros are left out.
            ".visible .global .align 4 .b8 __cohort_init_POLY[32] = {0, 0, 128, 63, 0, 0, 128, 63};",
            ".visible .global .align 2 .b8 __cohort_init_HALVES[6] = {7, 0, 8, 0, 9};",
        ] {
            ensure(text.contains(decl), || format!("sm_{}: no `{decl}`", m.arch))?;
        }
    }
    // Horner over 8 coefficients: 8 constant-bank loads at the variable's address + 4k.
    entry_contains(&PTX, "poly_eval", &["POLY;", "ld.const.b32"])?;
    for m in PTX.modules {
        let n = entry_body(m, "poly_eval")?.matches("ld.const.b32").count();
        ensure(n == 8, || format!("sm_{}: poly_eval has {n} `ld.const.b32`, want 8", m.arch))?;
        let body = entry_body(m, "wide_and_halves")?;
        for needle in ["ld.const.v4.b32", "ld.const.b16"] {
            ensure(body.contains(needle), || format!("sm_{}: wide_and_halves lacks `{needle}`", m.arch))?;
        }
    }
    // `Deref` reads through the generic window.
    entry_contains(&PTX, "conv1d", &["CONV_TAPS;", "cvta.const.u64"])
}

pub fn golden_device_globals() -> TestResult {
    for m in PTX.modules {
        for decl in [
            ".visible .global .align 4 .b8 ABOVE[4];",
            ".visible .global .align 4 .b8 BINS[64];",
            ".visible .global .align 8 .b8 SEVEN[8];",
            ".visible .global .align 8 .b8 __cohort_init_SEVEN[8] = {7};",
        ] {
            ensure(m.text().contains(decl), || format!("sm_{}: no `{decl}`", m.arch))?;
        }
        // No kernel writes a variable except through atomics: no plain store names one.
        for k in ["count_above", "histogram16", "add_offsets", "read_seven", "poly_eval", "conv1d"] {
            let body = entry_body(m, k)?;
            ensure(!body.contains("st.const"), || format!("sm_{}: `{k}` stores to constant memory", m.arch))?;
        }
    }
    entry_contains(&PTX, "count_above", &["ABOVE;", "red.relaxed.gpu.global.add.u32"])?;
    entry_contains(&PTX, "histogram16", &["BINS;", "red.relaxed.gpu.global.add.u32"])?;
    entry_contains(&PTX, "add_offsets", &["OFFSETS;", "cvta.global.u64"])
}
