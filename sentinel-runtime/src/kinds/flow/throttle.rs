//! Throttling: calls pass at evenly spaced times (a leaky bucket), queueing up to `max_wait`.

use std::sync::atomic::{AtomicU64, Ordering::*};

use crossbeam_utils::CachePadded;

use crate::kinds::flow::rule::FlowRule;
use crate::kinds::flow::warm_up::WarmUpCurve;
use crate::slot::threshold::Threshold;

/// Sentinel's `RateLimiterController`, in nanoseconds (Sentinel Java's milliseconds got rates
/// above 1000/s wrong, its issue #1615), with the turn taken by CAS so that no two callers
/// share one.
#[derive(Debug)]
pub(crate) struct ThrottleGate {
    /// The time of the latest turn handed out.
    latest: CachePadded<AtomicU64>,
    pub(crate) threshold: Threshold,
    /// Nanoseconds between two single passes (`window / threshold`, as `f64` bits).
    spacing: AtomicU64,
    pub(crate) window_ns: u64,
    pub(crate) max_wait_ns: u64,
    /// With warm-up, the spacing follows the curve's rate instead.
    warm: Option<WarmUpCurve>,
}

impl ThrottleGate {
    pub(crate) fn new(rule: &FlowRule, now: u64) -> ThrottleGate {
        let window_ns = rule.window_ms() * 1_000_000;
        let gate = ThrottleGate {
            latest: CachePadded::new(AtomicU64::new(0)),
            threshold: Threshold::new(rule.threshold),
            spacing: AtomicU64::new(0),
            window_ns,
            max_wait_ns: rule
                .max_wait
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            warm: rule
                .warm_up
                .map(|w| WarmUpCurve::new(rule.threshold, w, now)),
        };
        gate.set_threshold(rule.threshold);
        gate
    }

    pub(crate) fn set_threshold(&self, threshold: f64) {
        self.threshold.set(threshold);
        let spacing = if threshold > 0.0 {
            self.window_ns as f64 / threshold
        } else {
            f64::INFINITY
        };
        self.spacing.store(spacing.to_bits(), Release);
    }

    /// The time `count` passes take at the current rate, in nanoseconds.
    #[inline]
    fn cost(&self, now: u64, count: u32) -> Option<u64> {
        let spacing = match &self.warm {
            None => f64::from_bits(self.spacing.load(Acquire)),
            Some(curve) => {
                curve.sync(now);
                1e9 / curve.rate()
            }
        };
        let cost = (spacing * f64::from(count)).round();
        (cost.is_finite() && cost < u64::MAX as f64).then_some(cost as u64)
    }

    /// Takes the next turn for `count` passes at `now` (a precise reading: the coarse clock's
    /// 1–4 ms would make callers pass up to a tick late): the turn's time, or `None` if it is
    /// more than `max_wait` away, or if `count` is more than the threshold (a batch no window
    /// could hold is blocked at once, as with the reject behaviour and sentinel-golang's
    /// `ThrottlingChecker`). A single call always gets a turn: a threshold below 1 paces calls
    /// more than a window apart.
    #[inline]
    pub(crate) fn try_acquire(&self, now: u64, count: u32) -> Option<u64> {
        if self.oversized(count) {
            return None;
        }
        let cost = self.cost(now, count)?;
        let mut latest = self.latest.load(Acquire);
        loop {
            let turn = match latest.checked_add(cost) {
                Some(next) if next > now => next,
                _ => now,
            };
            let wait = turn - now;
            if wait > self.max_wait_ns {
                return None;
            }
            match self
                .latest
                .compare_exchange_weak(latest, turn, AcqRel, Acquire)
            {
                Ok(_) => {
                    if let Some(curve) = &self.warm {
                        curve.record_pass(now, count);
                    }
                    return Some(turn);
                }
                Err(seen) => latest = seen,
            }
        }
    }

    /// Whether a batch of `count` is more than the threshold: it can never pass.
    #[inline]
    pub(crate) fn oversized(&self, count: u32) -> bool {
        u64::from(count) > self.threshold.limit().max(1)
    }

    /// For a call refused at `now`: how long until `count` passes would get a turn within
    /// `max_wait`, at the current queue and rate (`None` at a rate of 0).
    #[cold]
    pub(crate) fn retry_after(&self, now: u64, count: u32) -> Option<u64> {
        let turn = self
            .latest
            .load(Acquire)
            .checked_add(self.cost(now, count)?)?;
        Some(turn.saturating_sub(now).saturating_sub(self.max_wait_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS;

    /// sentinel-golang `core/flow/tc_throttling_test.go`,
    /// `TestThrottlingChecker_DoCheckNoQueueingSingleThread` and `..._DoCheckSingleThread`:
    /// "Should block when batchCount > threshold", then the batch of exactly the threshold
    /// passes.
    #[test]
    fn a_batch_larger_than_the_threshold_is_blocked_at_once() {
        for max_wait in [Duration::ZERO, Duration::from_secs(2)] {
            let rule = FlowRule::qps("r", 50.0)
                .window(Duration::from_secs(10), 10)
                .throttle(max_wait);
            let gate = ThrottleGate::new(&rule, T0);
            assert_eq!(gate.try_acquire(T0, 51), None, "max_wait {max_wait:?}");
            assert_eq!(gate.try_acquire(T0, 50), Some(T0), "max_wait {max_wait:?}");
        }
        // A reload lowering the threshold applies to batches at once.
        let gate = ThrottleGate::new(&FlowRule::qps("r", 50.0).throttle(Duration::ZERO), T0);
        gate.set_threshold(10.5);
        assert_eq!(gate.try_acquire(T0, 11), None);
        assert_eq!(gate.try_acquire(T0, 10), Some(T0));
    }

    #[test]
    fn a_threshold_below_one_paces_single_calls_more_than_a_window_apart() {
        let gate = ThrottleGate::new(&FlowRule::qps("r", 0.5).throttle(Duration::ZERO), T0);
        assert_eq!(gate.try_acquire(T0, 1), Some(T0));
        assert_eq!(gate.try_acquire(T0 + 1_999 * MS, 1), None);
        assert_eq!(gate.try_acquire(T0 + 2_000 * MS, 1), Some(T0 + 2_000 * MS));
        assert_eq!(
            gate.try_acquire(T0 + 4_000 * MS, 2),
            None,
            "a batch above 0.5"
        );
    }
}
