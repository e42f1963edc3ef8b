//! System rules: limits on the process as a whole, checked on inbound entries.

pub(crate) mod check;
pub(crate) mod rule;
pub(crate) mod stage;
