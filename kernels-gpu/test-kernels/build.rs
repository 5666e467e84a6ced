//! Builds this crate's kernels to PTX (sm_80 and sm_90 by default; `COHORT_ARCHS` to change)
//! and writes `OUT_DIR/cohort_ptx.rs` for `cohort_runtime::include_ptx!()`. The test kernels
//! are always built in checked mode, so that every GPU test also shows checked mode reports no
//! false divergence, and the divergence tests find it (`COHORT_CHECKED=0` still overrides).
fn main() {
    // sm_90a beside sm_90: the `wgmma` test kernels (Hopper's warpgroup MMA exists only there).
    cohort_build::Builder::for_build_script().checked(true).arch_specific(&[90]).build_or_exit();
}
