//! Compile-time checks of `#[kernel]` and typed launches: each rejected shape has a file in
//! `ui/` with the error rustc must print (`TRYBUILD=overwrite` regenerates the `.stderr`
//! files; read the diff before committing it).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
