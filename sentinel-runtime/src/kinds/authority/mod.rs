//! Authority rules: which callers (origins) may enter a resource.

pub(crate) mod rule;
pub(crate) mod stage;
