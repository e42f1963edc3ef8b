//! The attribute's compile-time behaviour: every supported form compiles and runs
//! (`tests/ui/pass`), and every mistake fails with its message at the user's token
//! (`tests/ui/fail`, with `.stderr` snapshots).
//!
//! A package of their own (`ui/Cargo.toml`): trybuild builds every dev-dependency of the package
//! that runs them once more, and this one's are the few the cases need (the runtime with the
//! attribute, tokio).
//!
//! Two runs, not one: trybuild checks the compile-fail cases of a run without pass cases in one
//! cargo call (`cargo check --bins --keep-going`); a run that also has pass cases builds each
//! case with a cargo call of its own, after a `cargo clean` of the cases (about 0.5 s a case).

#[test]
fn ui_pass() {
    trybuild::TestCases::new().pass("tests/ui/pass/*.rs");
}

#[test]
fn ui_compile_fail() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
