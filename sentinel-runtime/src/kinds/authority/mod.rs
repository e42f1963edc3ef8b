//! Authority rules: which callers (origins) may enter a resource.

#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;

/// What this kind adds to the public [`rules`](crate::rules) module (through the table of
/// kinds: `kinds/public.rs`).
pub(crate) mod public {
    pub use super::rule::{AuthorityRule, AuthorityStrategy};
}
