//! [`AdaptiveConcurrency`]: the settings of an adaptive concurrency limit.

use std::time::Duration;

use crate::error::RuleError;

/// The largest `max_limit` an adaptive limit takes.
pub const MAX_ADAPTIVE_LIMIT: u32 = 1_000_000;

/// Settings of an adaptive concurrency limit
/// ([`FlowRule::adaptive_concurrency`](crate::rules::FlowRule::adaptive_concurrency)). The
/// defaults are Netflix concurrency-limits' Gradient2 defaults where it has one.
///
/// Every `sample_window` (once at least `min_samples` calls finished in it), the limit is
/// recomputed from the calls that finished: their average response time (the *short* RTT)
/// against the *long* RTT, the no-load latency as measured. With `rtt_tolerance = 1.5`:
///
/// * short <= long x 1.05 (no queueing) and the calls inside reached half the limit: the limit
///   grows, by `smoothing` of itself plus `queue_size`;
/// * long x 1.05 < short <= long x 1.5: the limit holds (Netflix's Gradient2 grows here, which
///   made the limit drift up under moderate overload, its issue #134);
/// * short > long x 1.5: the limit shrinks by the gradient `1.5 x long / short` (at least 0.5),
///   smoothed by `smoothing`;
/// * a window where at least 1% of the calls failed (an error at the exit, a panic, the tower
///   layer's 5xx) or took longer than `timeout` shrinks the limit by 10% and never grows it
///   (Gradient2 ignores them, its issues #176 and #137);
/// * a call cancelled half-way (its future dropped) is not a sample at all (#146), unless it
///   had already run longer than `timeout`: then it is a drop (an outer timeout cuts exactly the
///   calls that would have been drops).
///
/// The long RTT follows the short one down (at once after a clear fall of 10% or more, else
/// weighted by how many samples a window holds, over `long_window` samples) but never up on its
/// own: only when a cut of the calls
/// inside did not lower the response time (the latency is the downstream's own, not a queue)
/// does it take the new latency. So a queue never becomes the baseline, and a downstream that
/// got slower for good is followed within a few windows.
///
/// ```
/// use sentinel_runtime::rules::{AdaptiveConcurrency, FlowRule};
/// use std::time::Duration;
///
/// let rule = FlowRule::adaptive_concurrency("search").adaptive(AdaptiveConcurrency {
///     max_limit: 500,
///     timeout: Some(Duration::from_secs(2)),
///     ..AdaptiveConcurrency::default()
/// });
/// # assert!(rule.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "rule-files", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "rule-files", serde(default, deny_unknown_fields))]
pub struct AdaptiveConcurrency {
    /// The limit before any measurement. Default 20.
    pub initial_limit: u32,
    /// The limit never goes below this. Default 20.
    pub min_limit: u32,
    /// The limit never goes above this (at most [`MAX_ADAPTIVE_LIMIT`]). Default 200.
    pub max_limit: u32,
    /// How far one window moves the limit (0 < smoothing <= 1). Default 0.2.
    pub smoothing: f64,
    /// Calls the limit grows by on top of `smoothing` when there is no queueing. Default 4.
    pub queue_size: u32,
    /// The samples the long (no-load) RTT averages over when it falls. Default 600.
    pub long_window: u32,
    /// How much slower than the long RTT calls may get before the limit shrinks (>= 1).
    /// Default 1.5.
    pub rtt_tolerance: f64,
    /// How often the limit is recomputed (1 ms to 1 minute, whole milliseconds): several
    /// response times long, so a window sees the effect of the previous one. Default 100 ms.
    #[cfg_attr(feature = "rule-files", serde(with = "crate::rules::files::duration"))]
    pub sample_window: Duration,
    /// Calls that must finish before a window counts (at least 1). Default 10.
    pub min_samples: u32,
    /// A call slower than this counts as a failure (a drop). Default none.
    #[cfg_attr(
        feature = "rule-files",
        serde(
            skip_serializing_if = "Option::is_none",
            with = "crate::rules::files::duration::option"
        )
    )]
    pub timeout: Option<Duration>,
}

impl Default for AdaptiveConcurrency {
    fn default() -> AdaptiveConcurrency {
        AdaptiveConcurrency {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            smoothing: 0.2,
            queue_size: 4,
            long_window: 600,
            rtt_tolerance: 1.5,
            sample_window: Duration::from_millis(100),
            min_samples: 10,
            timeout: None,
        }
    }
}

impl AdaptiveConcurrency {
    /// Checks every field; the error names the first bad one (as `adaptive.<field>`).
    pub(crate) fn validate(&self, resource: &str) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(resource, field, message));
        if self.min_limit == 0 {
            return err("adaptive.min_limit", "must be at least 1".into());
        }
        if self.max_limit > MAX_ADAPTIVE_LIMIT || self.max_limit < self.min_limit {
            return err(
                "adaptive.max_limit",
                format!(
                    "must be from min_limit ({}) to {MAX_ADAPTIVE_LIMIT}, got {}",
                    self.min_limit, self.max_limit
                ),
            );
        }
        if !(self.min_limit..=self.max_limit).contains(&self.initial_limit) {
            return err(
                "adaptive.initial_limit",
                format!(
                    "must be from min_limit ({}) to max_limit ({}), got {}",
                    self.min_limit, self.max_limit, self.initial_limit
                ),
            );
        }
        if !(self.smoothing > 0.0 && self.smoothing <= 1.0) {
            return err(
                "adaptive.smoothing",
                format!(
                    "must be greater than 0 and at most 1, got {}",
                    self.smoothing
                ),
            );
        }
        if self.queue_size > self.max_limit {
            return err(
                "adaptive.queue_size",
                format!(
                    "must be at most max_limit ({}), got {}",
                    self.max_limit, self.queue_size
                ),
            );
        }
        if self.long_window == 0 {
            return err("adaptive.long_window", "must be at least 1 sample".into());
        }
        if !(self.rtt_tolerance.is_finite() && self.rtt_tolerance >= 1.0) {
            return err(
                "adaptive.rtt_tolerance",
                format!("must be a finite number >= 1, got {}", self.rtt_tolerance),
            );
        }
        let window = self.sample_window;
        if window < Duration::from_millis(1)
            || window > Duration::from_secs(60)
            || !window.subsec_nanos().is_multiple_of(1_000_000)
        {
            return err(
                "adaptive.sample_window",
                format!("must be whole milliseconds from 1 ms to 1 minute, got {window:?}"),
            );
        }
        if self.min_samples == 0 {
            return err("adaptive.min_samples", "must be at least 1".into());
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return err("adaptive.timeout", "must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_gradient2s() {
        let d = AdaptiveConcurrency::default();
        assert_eq!((d.initial_limit, d.min_limit, d.max_limit), (20, 20, 200));
        assert_eq!((d.smoothing, d.queue_size, d.long_window), (0.2, 4, 600));
        assert_eq!(d.rtt_tolerance, 1.5);
        assert!(d.validate("r").is_ok());
    }

    #[test]
    fn each_bad_field_is_named() {
        let field = |f: fn(&mut AdaptiveConcurrency)| {
            let mut a = AdaptiveConcurrency::default();
            f(&mut a);
            a.validate("r").unwrap_err().field()
        };
        assert_eq!(field(|a| a.min_limit = 0), "adaptive.min_limit");
        assert_eq!(field(|a| a.max_limit = 10), "adaptive.max_limit");
        assert_eq!(
            field(|a| a.max_limit = MAX_ADAPTIVE_LIMIT + 1),
            "adaptive.max_limit"
        );
        assert_eq!(field(|a| a.initial_limit = 300), "adaptive.initial_limit");
        assert_eq!(field(|a| a.initial_limit = 5), "adaptive.initial_limit");
        assert_eq!(field(|a| a.smoothing = 0.0), "adaptive.smoothing");
        assert_eq!(field(|a| a.smoothing = 1.5), "adaptive.smoothing");
        assert_eq!(field(|a| a.smoothing = f64::NAN), "adaptive.smoothing");
        assert_eq!(field(|a| a.queue_size = 1_000), "adaptive.queue_size");
        assert_eq!(field(|a| a.long_window = 0), "adaptive.long_window");
        assert_eq!(field(|a| a.rtt_tolerance = 0.9), "adaptive.rtt_tolerance");
        assert_eq!(
            field(|a| a.rtt_tolerance = f64::INFINITY),
            "adaptive.rtt_tolerance"
        );
        assert_eq!(
            field(|a| a.sample_window = Duration::ZERO),
            "adaptive.sample_window"
        );
        assert_eq!(
            field(|a| a.sample_window = Duration::from_micros(1_500)),
            "adaptive.sample_window"
        );
        assert_eq!(field(|a| a.min_samples = 0), "adaptive.min_samples");
        assert_eq!(
            field(|a| a.timeout = Some(Duration::ZERO)),
            "adaptive.timeout"
        );
    }
}
