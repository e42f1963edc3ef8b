//! The attribute's `hotspot(...)`: what it writes, and the rule it stands for.

use std::time::Duration;

use super::rule::HotspotRule;

/// A `hotspot(...)` of the attribute: a per-value limit on one of the entry's parameters.
#[derive(Clone, Copy, Debug)]
pub struct HotspotSpec {
    /// The parameter's index (the order of first mention in `params` and `hotspot(param)`).
    pub param_index: usize,
    /// `concurrency = N` (else `qps = N`).
    pub concurrency: bool,
    /// `qps` or `concurrency`, per value.
    pub threshold: f64,
    /// `burst` (0 for none).
    pub burst: u32,
    /// `window` in milliseconds (1000 by default).
    pub window_ms: u64,
    /// `max_wait` in milliseconds: throttle.
    pub max_wait_ms: Option<u64>,
    /// `capacity` (0 for the default).
    pub capacity: usize,
    /// `strict = true`: the strict mode.
    pub strict: bool,
}

impl HotspotSpec {
    pub(crate) fn rule(&self, resource: &str) -> HotspotRule {
        if self.concurrency {
            let max = self.threshold as u32;
            return self.with_capacity(HotspotRule::concurrency(resource, self.param_index, max));
        }
        let mut rule = HotspotRule::qps(resource, self.param_index, self.threshold)
            .burst(self.burst)
            .window(Duration::from_millis(self.window_ms))
            .strict(self.strict);
        if let Some(ms) = self.max_wait_ms {
            rule = rule.throttle(Duration::from_millis(ms));
        }
        self.with_capacity(rule)
    }

    fn with_capacity(&self, rule: HotspotRule) -> HotspotRule {
        match self.capacity {
            0 => rule,
            n => rule.capacity(n),
        }
    }
}
