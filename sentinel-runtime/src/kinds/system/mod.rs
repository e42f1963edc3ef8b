//! System rules: limits on the process as a whole, checked on inbound entries.

pub(crate) mod check;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;
