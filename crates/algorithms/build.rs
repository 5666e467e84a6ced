//! Builds the built-in algorithm kernels to PTX (sm_80 and sm_90 by default; `COHORT_ARCHS` to
//! change) and writes `OUT_DIR/cohort_ptx.rs` for `cohort_runtime::include_ptx!()` — with the
//! `builtin` feature only: without it the crate is the macro and the host drivers, no kernels.
fn main() {
    if std::env::var_os("CARGO_FEATURE_BUILTIN").is_some() {
        cohort_build::Builder::for_build_script().build_or_exit();
    }
}
