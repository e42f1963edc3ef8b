//! The attribute's `breaker(...)`: what it writes, and the rule it stands for.

use std::time::Duration;

use super::rule::CircuitBreakerRule;

/// Which strategy a `breaker(...)` uses.
#[derive(Clone, Copy, Debug)]
pub enum BreakerKind {
    /// `slow_rt = "..", slow_ratio = ..`.
    SlowRatio {
        /// `slow_rt` in milliseconds.
        max_rt_ms: u64,
        /// `slow_ratio`.
        ratio: f64,
    },
    /// `error_ratio = ..`.
    ErrorRatio(f64),
    /// `error_count = ..`.
    ErrorCount(u32),
}

/// A `breaker(...)` of the attribute.
#[derive(Clone, Copy, Debug)]
pub struct BreakerSpec {
    /// The strategy and its threshold.
    pub kind: BreakerKind,
    /// `min_requests` (0 for the default).
    pub min_requests: u32,
    /// `window` in milliseconds (0 for the default).
    pub window_ms: u64,
    /// `recovery` in milliseconds.
    pub recovery_ms: u64,
    /// `probes` (0 for the default).
    pub probes: u32,
}

impl BreakerSpec {
    pub(crate) fn rule(&self, resource: &str) -> CircuitBreakerRule {
        let mut rule = match self.kind {
            BreakerKind::SlowRatio { max_rt_ms, ratio } => CircuitBreakerRule::slow_request_ratio(
                resource,
                Duration::from_millis(max_rt_ms),
                ratio,
            ),
            BreakerKind::ErrorRatio(t) => CircuitBreakerRule::error_ratio(resource, t),
            BreakerKind::ErrorCount(t) => CircuitBreakerRule::error_count(resource, t),
        }
        .recovery(Duration::from_millis(self.recovery_ms));
        if self.min_requests > 0 {
            rule = rule.min_requests(self.min_requests);
        }
        if self.window_ms > 0 {
            // The window's buckets: 10 where they divide it evenly, else 1.
            let buckets = if self.window_ms.is_multiple_of(10) {
                10
            } else {
                1
            };
            rule = rule.window(Duration::from_millis(self.window_ms), buckets);
        }
        if self.probes > 0 {
            rule = rule.probes(self.probes);
        }
        rule
    }
}
