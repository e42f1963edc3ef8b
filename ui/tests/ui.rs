//! The attribute's compile-time errors: every mistake fails with its message at the user's
//! token (`tests/ui/fail`, with `.stderr` snapshots). The supported forms that compile and run
//! (`tests/ui/pass`) are `tests/pass.rs`.
//!
//! A package of their own (`ui/Cargo.toml`): trybuild checks every dev-dependency of the package
//! that runs them once more, and this one's are the few the cases need (the runtime with the
//! attribute, tokio).
//!
//! Compile-fail cases only: trybuild checks the cases of such a run in one cargo call
//! (`cargo check --bins --keep-going`), each against its own `.stderr`; a run that also has
//! pass cases builds each case with cargo calls of its own (about 0.5 s a case).

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
