//! [`OutlierRule`]: when an endpoint of a resource is ejected, and for how long.

use std::time::Duration;

use crate::error::RuleError;

/// The most endpoints tracked per resource; beyond it the least recently seen is forgotten.
pub const MAX_ENDPOINTS: usize = 1_024;
/// The most outlier rules one resource can have.
pub const MAX_OUTLIER_RULES_PER_RESOURCE: usize = 4;
/// The window an error ratio is counted over, per endpoint.
pub const OUTLIER_RATIO_WINDOW: Duration = Duration::from_secs(10);
/// An ejection after a failed probe lasts twice the one before, at most this many times the
/// rule's `recovery` (and at most [`MAX_OUTLIER_RECOVERY`]).
pub const MAX_EJECTION_FACTOR: u32 = 16;
/// The largest `min_requests` an outlier rule accepts.
pub const MAX_OUTLIER_MIN_REQUESTS: u32 = 1_000_000_000;
/// The longest `recovery` an outlier rule accepts.
pub const MAX_OUTLIER_RECOVERY: Duration = Duration::from_secs(3_600);

/// What makes an endpoint an outlier.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum OutlierStrategy {
    /// `threshold` calls in a row to the endpoint failed.
    ConsecutiveErrors {
        /// Failed calls in a row that eject the endpoint (at least 1).
        threshold: u32,
    },
    /// At least `threshold` (in `(0, 1]`) of the endpoint's calls failed in its current window
    /// of [`OUTLIER_RATIO_WINDOW`], counting at least `min_requests` calls.
    ErrorRatio {
        /// The error ratio that ejects the endpoint.
        threshold: f64,
    },
}

/// Outlier ejection (Envoy's outlier detection, sentinel-golang's outlier rule): errors are
/// counted per **endpoint** of a resource, the instance a call goes to, named with
/// [`EntryBuilder::endpoint`](crate::EntryBuilder::endpoint). A call without an endpoint is not
/// subject to outlier rules. A call's error is what circuit breakers see: an `Err` result, a
/// panic or [`Entry::set_error`](crate::Entry::set_error).
///
/// * An endpoint that meets the strategy is **ejected** for `recovery`: its calls are blocked
///   with [`BlockKind::Outlier`](crate::BlockKind::Outlier) without reaching it.
/// * After that, **one probe** call goes through (the others are still blocked): its success
///   brings the endpoint back; its failure ejects it again for twice as long as the last time,
///   at most [`MAX_EJECTION_FACTOR`] times `recovery`. A probe that never reports is replaced
///   by another after `recovery`.
/// * At most `max_ejection_percent` (a share in `0..=1`, default 0.5) of the endpoints seen in
///   the last minute are ejected at once, rounded down, but one endpoint may always be ejected
///   (as in Envoy): of 3 endpoints with 0.5, one at a time; of 1 endpoint, that one. This holds
///   at every moment: an ejection holds its place in the share until its probe brings the
///   endpoint back (also in the moment between its end and its probe), or for a minute after
///   its end if no call comes to probe it (then its next call probes only if the share has
///   room, else it is an ordinary call). A probe that fails while the share is full (lowered
///   by a reload, or fewer endpoints seen) brings its endpoint back instead of ejecting it
///   again. With several rules, each ejects within its own share, and a probe is decided
///   against the largest.
/// * At most [`MAX_ENDPOINTS`] endpoints are tracked per resource: a new one beyond that
///   replaces the least recently seen (a healthy one first), so a flood of endpoint names
///   cannot grow memory. Endpoint names longer than 255 bytes are not tracked.
///
/// Several rules on one resource share the endpoints' counts and ejections; the first whose
/// strategy is met ejects, with its own `recovery` and share. A balancer asks
/// [`outlier::healthy`](crate::outlier::healthy) which endpoints to use.
///
/// ```
/// use sentinel_runtime::rules::OutlierRule;
/// use std::time::Duration;
///
/// let rule = OutlierRule::consecutive_errors("inventory", 5)
///     .recovery(Duration::from_secs(30))
///     .max_ejection_percent(0.3);
/// assert!(rule.validate().is_ok());
/// let ratio = OutlierRule::error_ratio("inventory", 0.5).min_requests(20);
/// assert!(ratio.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OutlierRule {
    /// The resource the rule applies to.
    pub resource: String,
    /// What makes an endpoint an outlier.
    pub strategy: OutlierStrategy,
    /// For an error ratio: no decision below this many calls in the endpoint's window (at
    /// least 1). Default 5. Consecutive errors ignore it.
    pub min_requests: u32,
    /// How long a first ejection lasts (positive, at most [`MAX_OUTLIER_RECOVERY`]). Default
    /// 30 seconds.
    pub recovery: Duration,
    /// The largest share (in `0..=1`) of the endpoints seen in the last minute that may be
    /// ejected at once, rounded down; one endpoint may always be. Default 0.5.
    pub max_ejection_percent: f64,
    /// A shadow rule ([`shadow`](Self::shadow)): it ejects and counts what it would have
    /// refused, and refuses nothing.
    pub shadow: bool,
}

impl OutlierRule {
    fn new(resource: impl Into<String>, strategy: OutlierStrategy) -> OutlierRule {
        OutlierRule {
            resource: resource.into(),
            strategy,
            min_requests: 5,
            recovery: Duration::from_secs(30),
            max_ejection_percent: 0.5,
            shadow: false,
        }
    }

    /// Ejects an endpoint after `n` failed calls to it in a row.
    pub fn consecutive_errors(resource: impl Into<String>, n: u32) -> OutlierRule {
        Self::new(
            resource,
            OutlierStrategy::ConsecutiveErrors { threshold: n },
        )
    }

    /// Ejects an endpoint when at least `ratio` (in `(0, 1]`) of its calls in its window
    /// failed, counting at least [`min_requests`](Self::min_requests) calls.
    pub fn error_ratio(resource: impl Into<String>, ratio: f64) -> OutlierRule {
        Self::new(resource, OutlierStrategy::ErrorRatio { threshold: ratio })
    }

    /// For an error ratio: no decision below `n` calls in the endpoint's window.
    pub fn min_requests(mut self, n: u32) -> OutlierRule {
        self.min_requests = n;
        self
    }

    /// How long a first ejection lasts.
    pub fn recovery(mut self, recovery: Duration) -> OutlierRule {
        self.recovery = recovery;
        self
    }

    /// The largest share (in `0..=1`) of the endpoints that may be ejected at once.
    pub fn max_ejection_percent(mut self, share: f64) -> OutlierRule {
        self.max_ejection_percent = share;
        self
    }

    /// Puts the rule in shadow mode (`true`) or in force (`false`, the default). A shadow rule
    /// tracks its endpoints and ejects them with its own state, but never blocks a call: a call
    /// to an endpoint it ejected is counted in [`ResourceStats::shadow_block_total`] and goes
    /// on. Turning it to `false` later keeps its endpoints and ejections.
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub fn shadow(mut self, shadow: bool) -> OutlierRule {
        self.shadow = shadow;
        self
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        crate::rule_data::resource::validate(&self.resource)?;
        match self.strategy {
            OutlierStrategy::ConsecutiveErrors { threshold: 0 } => {
                return err("threshold", "must be at least 1 error".into());
            }
            OutlierStrategy::ConsecutiveErrors { .. } => {}
            OutlierStrategy::ErrorRatio { threshold } => {
                if !(threshold.is_finite() && threshold > 0.0 && threshold <= 1.0) {
                    return err(
                        "threshold",
                        format!("must be a ratio in (0, 1], got {threshold}"),
                    );
                }
            }
        }
        if self.min_requests == 0 || self.min_requests > MAX_OUTLIER_MIN_REQUESTS {
            return err(
                "min_requests",
                format!(
                    "must be in 1..={MAX_OUTLIER_MIN_REQUESTS}, got {}",
                    self.min_requests
                ),
            );
        }
        if self.recovery.is_zero() || self.recovery > MAX_OUTLIER_RECOVERY {
            return err(
                "recovery",
                format!(
                    "must be positive and at most {MAX_OUTLIER_RECOVERY:?} (how long an endpoint \
                     stays ejected), got {:?}",
                    self.recovery
                ),
            );
        }
        let share = self.max_ejection_percent;
        if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
            return err(
                "max_ejection_percent",
                format!("must be a share in 0..=1 (0.5 is half), got {share}"),
            );
        }
        Ok(())
    }

    /// Whether an endpoint's counts meet the strategy.
    pub(crate) fn is_met(&self, consecutive: u32, requests: u32, errors: u32) -> bool {
        match self.strategy {
            OutlierStrategy::ConsecutiveErrors { threshold } => consecutive >= threshold,
            OutlierStrategy::ErrorRatio { threshold } => {
                requests >= self.min_requests
                    && f64::from(errors) >= threshold * f64::from(requests)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(rule: OutlierRule) -> &'static str {
        rule.validate().expect_err("rule should be invalid").field()
    }

    #[test]
    fn each_bad_field_is_named() {
        assert_eq!(field_of(OutlierRule::consecutive_errors("", 3)), "resource");
        assert_eq!(
            field_of(OutlierRule::consecutive_errors("r", 0)),
            "threshold"
        );
        assert_eq!(field_of(OutlierRule::error_ratio("r", 0.0)), "threshold");
        assert_eq!(field_of(OutlierRule::error_ratio("r", 1.5)), "threshold");
        assert_eq!(
            field_of(OutlierRule::error_ratio("r", f64::NAN)),
            "threshold"
        );
        assert_eq!(
            field_of(OutlierRule::error_ratio("r", 0.5).min_requests(0)),
            "min_requests"
        );
        assert_eq!(
            field_of(OutlierRule::consecutive_errors("r", 1).recovery(Duration::ZERO)),
            "recovery"
        );
        assert_eq!(
            field_of(OutlierRule::consecutive_errors("r", 1).recovery(Duration::MAX)),
            "recovery"
        );
        assert_eq!(
            field_of(OutlierRule::consecutive_errors("r", 1).max_ejection_percent(1.5)),
            "max_ejection_percent"
        );
        assert_eq!(
            field_of(OutlierRule::consecutive_errors("r", 1).max_ejection_percent(-0.1)),
            "max_ejection_percent"
        );
        assert!(OutlierRule::consecutive_errors("r", 1).validate().is_ok());
    }

    #[test]
    fn strategies_are_met_by_their_counts() {
        let n = OutlierRule::consecutive_errors("r", 3);
        assert!(!n.is_met(2, 10, 10) && n.is_met(3, 3, 3));
        let ratio = OutlierRule::error_ratio("r", 0.5).min_requests(4);
        assert!(!ratio.is_met(0, 3, 3), "below min_requests");
        assert!(ratio.is_met(0, 4, 2) && !ratio.is_met(0, 4, 1));
    }
}
