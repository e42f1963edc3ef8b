//! Flow rules: QPS and concurrency limits, their shaping (warm-up, throttling), origins,
//! related resources, the adaptive limit and the cluster's shared limits.

pub(crate) mod adaptive;
pub(crate) mod adaptive_rule;
pub(crate) mod cluster;
pub(crate) mod gate;
pub(crate) mod origin;
pub(crate) mod origin_rule;
pub(crate) mod qps;
pub(crate) mod related;
pub(crate) mod rule;
pub(crate) mod stage;
pub(crate) mod throttle;
pub(crate) mod warm_up;

pub(crate) use adaptive::{AdaptiveLimit, Outcome};
pub(crate) use gate::Gate;
pub(crate) use origin::OriginGate;
pub(crate) use qps::QpsGate;
