//! Throttling: calls pass at evenly spaced times (a leaky bucket), queueing up to `max_wait`.

use std::sync::atomic::{AtomicU64, Ordering::*};

use crossbeam_utils::CachePadded;

use super::threshold::Threshold;
use super::warm_up::WarmUpCurve;
use crate::rules::flow::FlowRule;

/// Sentinel's `RateLimiterController`, in nanoseconds (Sentinel Java's milliseconds got rates
/// above 1000/s wrong, its issue #1615), with the turn taken by CAS so that no two callers
/// share one.
#[derive(Debug)]
pub(crate) struct ThrottleGate {
    /// The time of the latest turn handed out.
    latest: CachePadded<AtomicU64>,
    pub(super) threshold: Threshold,
    /// Nanoseconds between two single passes (`window / threshold`, as `f64` bits).
    spacing: AtomicU64,
    pub(super) window_ns: u64,
    pub(super) max_wait_ns: u64,
    /// With warm-up, the spacing follows the curve's rate instead.
    warm: Option<WarmUpCurve>,
}

impl ThrottleGate {
    pub(super) fn new(rule: &FlowRule, now: u64) -> ThrottleGate {
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

    pub(super) fn set_threshold(&self, threshold: f64) {
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
    /// more than `max_wait` away.
    #[inline]
    pub(super) fn try_acquire(&self, now: u64, count: u32) -> Option<u64> {
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

    /// For a call refused at `now`: how long until `count` passes would get a turn within
    /// `max_wait`, at the current queue and rate (`None` at a rate of 0).
    #[cold]
    pub(super) fn retry_after(&self, now: u64, count: u32) -> Option<u64> {
        let turn = self
            .latest
            .load(Acquire)
            .checked_add(self.cost(now, count)?)?;
        Some(turn.saturating_sub(now).saturating_sub(self.max_wait_ns))
    }
}
