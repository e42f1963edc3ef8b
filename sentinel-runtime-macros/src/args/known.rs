//! The argument names each part of the attribute accepts: read by the parsers and by the
//! suggestions for a misspelt name.

/// The arguments the attribute accepts, in the order the error message lists them.
pub(crate) const KNOWN: &[&str] = &[
    "resource",
    "qps",
    "concurrency",
    "fallback",
    "window",
    "strict",
    "warm_up",
    "cold_factor",
    "max_wait",
    "relate",
    "breaker",
    "hotspot",
    "params",
    "is_error",
    "inbound",
    "shadow",
    "crate",
];

/// The arguments `breaker(...)` accepts.
pub(crate) const BREAKER_KNOWN: &[&str] = &[
    "error_ratio",
    "error_count",
    "slow_rt",
    "slow_ratio",
    "min_requests",
    "window",
    "recovery",
    "probes",
];

/// The arguments `hotspot(...)` accepts.
pub(crate) const HOTSPOT_KNOWN: &[&str] = &[
    "param",
    "qps",
    "concurrency",
    "burst",
    "window",
    "max_wait",
    "capacity",
    "strict",
];
