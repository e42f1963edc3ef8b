//! Circuit-breaker rules (Sentinel's degrade rules): a breaker per rule, its state machine and
//! its stage.

pub(crate) mod attribute;
pub(crate) mod breaker;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;
#[cfg(feature = "dashboard")]
pub(crate) mod words;

pub(crate) use breaker::ProbeTicket;
