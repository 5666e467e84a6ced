//! Builds this crate's kernels to PTX (sm_80 and sm_90 by default; `COHORT_ARCHS` to change)
//! and writes `OUT_DIR/cohort_ptx.rs` for `cohort_runtime::include_ptx!()`.
fn main() {
    // sm_90a beside sm_90: the Hopper GEMM's `wgmma` exists only there (`gemm_hopper`).
    cohort_build::Builder::for_build_script().arch_specific(&[90]).build_or_exit();
}
