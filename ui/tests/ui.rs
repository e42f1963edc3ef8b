//! The attribute's compile-time behaviour: every supported form compiles and runs
//! (`tests/ui/pass`), and every mistake fails with its message at the user's token
//! (`tests/ui/fail`, with `.stderr` snapshots).
//!
//! A package of their own (`ui/Cargo.toml`): trybuild builds every dev-dependency of the package
//! that runs them once more, and this one's are the few the cases need (the runtime with the
//! attribute, tokio).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
