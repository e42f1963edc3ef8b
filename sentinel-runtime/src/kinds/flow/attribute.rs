//! The attribute's `qps = N` with shaping options: what it writes, and the rule it stands for.

use std::time::Duration;

use super::rule::FlowRule;

/// A `qps = N` rule of the attribute with its shaping options.
#[derive(Clone, Copy, Debug)]
pub struct FlowSpec {
    /// `qps`: passes per window.
    pub threshold: f64,
    /// `window` in milliseconds (1000 by default).
    pub window_ms: u64,
    /// `strict`.
    pub strict: bool,
    /// `warm_up` in milliseconds (0: none).
    pub warm_up_ms: u64,
    /// `cold_factor` (3 by default).
    pub cold_factor: f64,
    /// `max_wait` in milliseconds: throttle.
    pub max_wait_ms: Option<u64>,
    /// `relate`.
    pub relate: Option<&'static str>,
}

impl FlowSpec {
    pub(crate) fn rule(&self, resource: &str) -> FlowRule {
        let mut rule = FlowRule::qps(resource, self.threshold).strict(self.strict);
        if self.window_ms != 1_000 {
            // The window's buckets: 10 where they divide it evenly, else 1.
            let buckets = if self.window_ms.is_multiple_of(10) {
                10
            } else {
                1
            };
            rule = rule.window(Duration::from_millis(self.window_ms), buckets);
        }
        if self.warm_up_ms > 0 {
            rule = rule.warm_up(Duration::from_millis(self.warm_up_ms), self.cold_factor);
        }
        if let Some(ms) = self.max_wait_ms {
            rule = rule.throttle(Duration::from_millis(ms));
        }
        if let Some(related) = self.relate {
            rule = rule.relate(related);
        }
        rule
    }
}
