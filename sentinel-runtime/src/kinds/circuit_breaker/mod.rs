//! Circuit-breaker rules (Sentinel's degrade rules): a breaker per rule, its state machine and
//! its stage.

pub(crate) mod breaker;
pub(crate) mod rule;
pub(crate) mod stage;

pub(crate) use breaker::{CircuitBreaker, ProbeTicket};
