//! The rules written at a resource's definition (the attribute's `qps = ...`, `breaker(...)`):
//! its defaults, by kind, in force for every kind no loaded rule replaces.

use crate::error::RuleError;
use crate::kinds::kind::{Kind, Validation};
use crate::kinds::table::kinds_table;

/// Defines [`Defaults`] from the table of kinds.
macro_rules! define_defaults {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// Rules written at a resource's definition, by kind.
        #[derive(Clone, Debug, Default, PartialEq)]
        pub(crate) struct Defaults {
            $( pub(crate) $name: Vec<<$kind as Kind>::Rule>, )*
        }

        impl Defaults {
            /// Adds another definition's rules: several functions may share a resource, and
            /// then every definition's rules apply to every call of it (a rule two definitions
            /// both write is kept once). Returns whether anything was added.
            pub(crate) fn adopt(&mut self, other: &Defaults) -> bool {
                let mut changed = false;
                $( changed |= add(&mut self.$name, &other.$name); )*
                changed
            }

            /// Keeps the rules that validate on their own, returning the errors of the others.
            pub(crate) fn validated(&mut self) -> Vec<RuleError> {
                let mut errors = Vec::new();
                $( keep_valid::<$kind>(&mut self.$name, &mut errors); )*
                errors
            }
        }
    };
}

kinds_table!(define_defaults);

/// Adds the rules of `from` that `to` lacks; whether any was.
fn add<R: Clone + PartialEq>(to: &mut Vec<R>, from: &[R]) -> bool {
    let mut changed = false;
    for rule in from {
        if !to.contains(rule) {
            to.push(rule.clone());
            changed = true;
        }
    }
    changed
}

/// Keeps the rules that validate each on its own (the attribute's rules are not counted against
/// the loaded rules' caps and budget), moving the errors of the others to `errors`.
fn keep_valid<K: Kind>(rules: &mut Vec<K::Rule>, errors: &mut Vec<RuleError>) {
    let alone = Validation {
        param_names: |_| None,
        max_hotspot_memory: usize::MAX,
    };
    rules.retain(
        |rule| match K::problems(std::slice::from_ref(rule), &alone).pop() {
            Some((_, error)) => {
                errors.push(error);
                false
            }
            None => true,
        },
    );
}
