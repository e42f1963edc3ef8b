//! [`CircuitBreakerRule`]: plain, validated data.

use std::time::Duration;

use crate::error::RuleError;

/// The most probes a breaker admits in half-open.
pub const MAX_PROBES: u32 = 1_000;
/// The longest `recovery` a breaker accepts.
pub const MAX_RECOVERY: Duration = Duration::from_secs(24 * 3_600);
/// The largest `min_requests` a breaker accepts.
pub const MAX_MIN_REQUESTS: u32 = 1_000_000_000;
/// The most circuit-breaker rules one resource can have.
pub const MAX_BREAKERS_PER_RESOURCE: usize = 8;

/// What makes a call count against a circuit breaker, and when the breaker opens.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum BreakerStrategy {
    /// A call slower than `max_rt` is slow; open when the slow share of the calls in the
    /// window is at least `threshold` (in `0..=1`).
    SlowRequestRatio {
        /// The response time above which a call is slow.
        max_rt: Duration,
        /// The slow ratio that opens the breaker.
        threshold: f64,
    },
    /// Open when the share of calls that failed (an `Err` result, a panic, or
    /// [`Entry::set_error`](crate::Entry::set_error)) is at least `threshold` (in `0..=1`).
    ErrorRatio {
        /// The error ratio that opens the breaker.
        threshold: f64,
    },
    /// Open when at least `threshold` calls in the window failed.
    ErrorCount {
        /// The error count that opens the breaker.
        threshold: u32,
    },
}

/// A circuit breaker (Sentinel's degrade rule): a resource whose calls keep failing or slowing
/// down stops being called for a while, then is probed carefully.
///
/// States: **Closed** (calls pass; each finished call is counted in the breaker's window) ->
/// **Open** when the strategy's threshold is reached with at least `min_requests` calls in the
/// window (every call is then blocked with [`BlockKind::CircuitBreaker`](crate::BlockKind)) ->
/// after `recovery`, **Half-open**: exactly `probes` calls are admitted; when all of them succeed
/// the breaker closes (its window starts afresh), and the first failed or slow probe reopens it.
///
/// A probe that never reports cannot wedge the breaker: a probe blocked by a later check or
/// whose future is dropped gives its place back, and a half-open breaker that has no verdict
/// `recovery` after it opened its probes starts a new round of probes.
///
/// Each strategy opens when its threshold is *reached*; Sentinel's degrade rules open when it
/// is *exceeded*. A rule read from Sentinel's JSON is converted to keep Sentinel's meaning
/// (`"count": 5` errors reads as a threshold of 6; see the `rules::files` docs).
///
/// A reload that keeps the strategy kind, `window` and `sample_count` keeps the breaker's
/// window counts and state under the new figures (see
/// [`load_circuit_breaker_rules`](crate::rules::load_circuit_breaker_rules)); any other change
/// starts it closed with an empty window.
///
/// A call whose future is dropped before it finishes (a client that went away) is no verdict,
/// unless it had already run longer than a slow-request breaker's `max_rt`: then it counts as a
/// slow call (and a slow probe), so a timeout in front of the resource, which drops exactly the
/// slowest calls, cannot hide them.
/// The outbound integrations (the tower client layer, the reqwest middleware) go further by
/// default: a call its caller gives up on before the response counts as an error
/// (`abandoned_is_error` on `tower::SentinelClientLayer` and `reqwest::SentinelMiddleware`).
///
/// ```
/// use sentinel_runtime::rules::CircuitBreakerRule;
/// use std::time::Duration;
///
/// let rule = CircuitBreakerRule::error_ratio("payments", 0.5)
///     .min_requests(10)
///     .window(Duration::from_secs(10), 10)
///     .recovery(Duration::from_secs(5))
///     .probes(3);
/// assert!(rule.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerRule {
    /// The resource the rule applies to.
    pub resource: String,
    /// What counts against the breaker and when it opens.
    pub strategy: BreakerStrategy,
    /// No decision while the window holds fewer calls than this (at least 1). Default 5.
    pub min_requests: u32,
    /// The statistics window: a positive whole number of milliseconds. Default one second.
    pub window: Duration,
    /// Buckets in the window, dividing its milliseconds. Default 10.
    pub sample_count: u32,
    /// How long the breaker stays open before probing. Required: positive.
    pub recovery: Duration,
    /// Calls admitted in half-open (`1..=MAX_PROBES`). Default 1.
    pub probes: u32,
    /// Shadow mode: the rule is evaluated with its own state as if it were enforced, and a call
    /// it would refuse is counted ([`ResourceStats::shadow_block_total`]) but goes on. Default
    /// false. See [`CircuitBreakerRule::shadow`].
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub shadow: bool,
}

impl CircuitBreakerRule {
    fn new(resource: impl Into<String>, strategy: BreakerStrategy) -> CircuitBreakerRule {
        CircuitBreakerRule {
            resource: resource.into(),
            strategy,
            min_requests: 5,
            window: Duration::from_secs(1),
            sample_count: 10,
            recovery: Duration::ZERO,
            probes: 1,
            shadow: false,
        }
    }

    /// Opens when at least `threshold` (0..=1) of the calls are slower than `max_rt`.
    pub fn slow_request_ratio(
        resource: impl Into<String>,
        max_rt: Duration,
        threshold: f64,
    ) -> CircuitBreakerRule {
        Self::new(
            resource,
            BreakerStrategy::SlowRequestRatio { max_rt, threshold },
        )
    }

    /// Opens when at least `threshold` (0..=1) of the calls fail.
    pub fn error_ratio(resource: impl Into<String>, threshold: f64) -> CircuitBreakerRule {
        Self::new(resource, BreakerStrategy::ErrorRatio { threshold })
    }

    /// Opens when at least `threshold` calls in the window fail.
    pub fn error_count(resource: impl Into<String>, threshold: u32) -> CircuitBreakerRule {
        Self::new(resource, BreakerStrategy::ErrorCount { threshold })
    }

    /// Puts the rule in shadow mode (`true`) or in force (`false`, the default). A shadow rule
    /// is evaluated with its own state (windows, tables, breaker state) but never blocks,
    /// delays or takes anything from an enforced rule: a call it would refuse is counted in
    /// [`ResourceStats::shadow_block_total`] and goes on. Turning it to `false` later (a
    /// reload of the same rule) keeps its state: what it watched is what it enforces.
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub fn shadow(mut self, shadow: bool) -> CircuitBreakerRule {
        self.shadow = shadow;
        self
    }

    /// No decision below `n` calls in the window.
    pub fn min_requests(mut self, n: u32) -> CircuitBreakerRule {
        self.min_requests = n;
        self
    }

    /// The statistics window and its bucket count.
    pub fn window(mut self, window: Duration, sample_count: u32) -> CircuitBreakerRule {
        self.window = window;
        self.sample_count = sample_count;
        self
    }

    /// How long the breaker stays open before probing.
    pub fn recovery(mut self, recovery: Duration) -> CircuitBreakerRule {
        self.recovery = recovery;
        self
    }

    /// How many calls half-open admits (and needs to succeed to close).
    pub fn probes(mut self, probes: u32) -> CircuitBreakerRule {
        self.probes = probes;
        self
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        crate::rule_data::resource::validate(&self.resource)?;
        match self.strategy {
            BreakerStrategy::SlowRequestRatio { max_rt, threshold } => {
                if max_rt.is_zero() {
                    return err(
                        "max_rt",
                        "must be positive (calls slower than it are slow)".into(),
                    );
                }
                ratio(threshold).or_else(|m| err("threshold", m))?;
            }
            BreakerStrategy::ErrorRatio { threshold } => {
                ratio(threshold).or_else(|m| err("threshold", m))?;
            }
            BreakerStrategy::ErrorCount { threshold } => {
                if threshold == 0 {
                    return err("threshold", "must be at least 1 error".into());
                }
            }
        }
        if self.min_requests == 0 || self.min_requests > MAX_MIN_REQUESTS {
            return err(
                "min_requests",
                format!(
                    "must be in 1..={MAX_MIN_REQUESTS}, got {}",
                    self.min_requests
                ),
            );
        }
        crate::rule_data::window::validate(&self.resource, self.window, self.sample_count)?;
        if self.recovery.is_zero() || self.recovery > MAX_RECOVERY {
            return err(
                "recovery",
                format!(
                    "must be positive and at most {MAX_RECOVERY:?} (how long the breaker stays \
                     open before probing), got {:?}",
                    self.recovery
                ),
            );
        }
        if self.probes == 0 || self.probes > MAX_PROBES {
            return err(
                "probes",
                format!("must be in 1..={MAX_PROBES}, got {}", self.probes),
            );
        }
        Ok(())
    }
}

fn ratio(threshold: f64) -> Result<(), String> {
    if threshold.is_finite() && (0.0..=1.0).contains(&threshold) {
        Ok(())
    } else {
        Err(format!("must be a ratio in 0..=1, got {threshold}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(rule: CircuitBreakerRule) -> &'static str {
        rule.validate().expect_err("rule should be invalid").field()
    }

    #[test]
    fn each_bad_field_is_named() {
        let ok = |r: CircuitBreakerRule| r.recovery(Duration::from_secs(1));
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_ratio("", 0.5))),
            "resource"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_ratio("r", 1.5))),
            "threshold"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_ratio("r", f64::NAN))),
            "threshold"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_ratio("r", -0.1))),
            "threshold"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_count("r", 0))),
            "threshold"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::slow_request_ratio(
                "r",
                Duration::ZERO,
                0.5
            ))),
            "max_rt"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_count("r", 1)).min_requests(0)),
            "min_requests"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_count("r", 1)).window(Duration::from_secs(1), 7)),
            "window"
        );
        assert_eq!(
            field_of(CircuitBreakerRule::error_count("r", 1)),
            "recovery"
        );
        assert_eq!(
            field_of(ok(CircuitBreakerRule::error_count("r", 1)).probes(0)),
            "probes"
        );
        assert_eq!(
            field_of(CircuitBreakerRule::error_count("r", 1).recovery(Duration::MAX)),
            "recovery"
        );
    }
}
