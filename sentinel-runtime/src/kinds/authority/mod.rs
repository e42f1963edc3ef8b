//! Authority rules: which callers (origins) may enter a resource.

#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;
