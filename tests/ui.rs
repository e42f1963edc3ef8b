//! The attribute's compile-time behaviour: every supported form compiles and runs
//! (`tests/ui/pass`), and every mistake fails with its message at the user's token
//! (`tests/ui/fail`, with `.stderr` snapshots).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
