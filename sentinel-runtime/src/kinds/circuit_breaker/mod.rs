//! Circuit-breaker rules (Sentinel's degrade rules): a breaker per rule, its state machine and
//! its stage.

pub(crate) mod attribute;
pub(crate) mod breaker;
pub(crate) mod breakers;
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

/// What this kind adds to the public [`rules`](crate::rules) module (through the table of
/// kinds: `kinds/public.rs`).
pub(crate) mod public {
    pub use super::rule::{
        BreakerStrategy, CircuitBreakerRule, MAX_BREAKERS_PER_RESOURCE, MAX_MIN_REQUESTS,
        MAX_PROBES, MAX_RECOVERY,
    };
}
