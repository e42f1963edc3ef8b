//! Flow rules: QPS and concurrency limits, their shaping (warm-up, throttling), origins,
//! related resources, the adaptive limit and the cluster's shared limits.

pub(crate) mod adaptive;
pub(crate) mod adaptive_rule;
pub(crate) mod attribute;
pub(crate) mod cluster;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod gate;
pub(crate) mod kind;
pub(crate) mod origin;
pub(crate) mod origin_rule;
pub(crate) mod qps;
pub(crate) mod related;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;
pub(crate) mod throttle;
pub(crate) mod warm_up;

pub(crate) use adaptive::Outcome;
pub(crate) use gate::Gate;
pub(crate) use qps::QpsGate;

/// What this kind adds to the public [`rules`](crate::rules) module (through the table of
/// kinds: `kinds/public.rs`).
pub(crate) mod public {
    pub use super::adaptive_rule::MAX_ADAPTIVE_LIMIT;
    pub use super::origin_rule::{FlowOrigin, MAX_TRACKED_ORIGINS};
    pub use super::rule::{
        AdaptiveConcurrency, FlowMetric, FlowRule, WarmUp, DEFAULT_SAMPLE_COUNT, DEFAULT_WINDOW,
        MAX_COLD_FACTOR, MAX_SAMPLE_COUNT, MAX_THRESHOLD, MAX_WAIT_LIMIT, MAX_WARM_UP,
    };
}
