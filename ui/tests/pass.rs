//! Every supported form of the attribute compiles and runs: each file of `tests/ui/pass` is a
//! program a user could write (its `main` is `pub` only so that this binary can call it),
//! compiled here as a module of one test binary and run by a test of its own.
//!
//! One binary, not a trybuild case each: trybuild builds and runs each pass case with cargo
//! calls of its own (a `cargo clean`, a build, a run), and a trybuild run with pass cases also
//! builds every compile-fail case on its own (see `tests/ui.rs`).
//!
//! The cases run one at a time: one of them installs the process's mock clock, which every
//! other case's limits would read.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Held by each case while it runs.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static RUNNING: Mutex<()> = Mutex::new(());
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A case: its file as a module, and a test that runs its `main`.
macro_rules! cases {
    ($($name:ident => $path:literal,)*) => {
        $(
            // The cases show forms, not style: a function of eight parameters, a method taking
            // `self: Box<Self>`, an async function's future made only to be type-checked.
            #[allow(clippy::too_many_arguments, clippy::boxed_local, clippy::let_underscore_future)]
            #[path = $path]
            mod $name;

            #[test]
            fn $name() {
                let _one = one_at_a_time();
                $name::main();
            }
        )*
    };
}

cases! {
    argument_patterns => "ui/pass/argument_patterns.rs",
    async_functions => "ui/pass/async_functions.rs",
    breakers => "ui/pass/breakers.rs",
    durations => "ui/pass/durations.rs",
    fallback_signatures => "ui/pass/fallback_signatures.rs",
    free_functions => "ui/pass/free_functions.rs",
    generics => "ui/pass/generics.rs",
    hotspot => "ui/pass/hotspot.rs",
    impl_trait_returns => "ui/pass/impl_trait_returns.rs",
    inbound_and_adaptive => "ui/pass/inbound_and_adaptive.rs",
    limits_at_maximum => "ui/pass/limits_at_maximum.rs",
    methods => "ui/pass/methods.rs",
    renamed_crate => "ui/pass/renamed_crate.rs",
    result_aliases => "ui/pass/result_aliases.rs",
    shadow => "ui/pass/shadow.rs",
    shaping => "ui/pass/shaping.rs",
    single_expression_bodies => "ui/pass/single_expression_bodies.rs",
}
