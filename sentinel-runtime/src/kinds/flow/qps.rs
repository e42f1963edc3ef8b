//! Exact admission over a sliding window of passes (reject and warm-up behaviours).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::error::BlockError;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::flow::warm_up::WarmUpCurve;
use crate::slot::qps_ring::QpsRing;
use crate::slot::threshold::Threshold;

/// The passes a resource admitted since a time: `recent(since, f)` calls `f(start, length,
/// passes)` per statistics bucket (see [`QpsGate::seed`]).
pub(crate) type Recent<'a> = &'a dyn Fn(u64, &mut dyn FnMut(u64, u64, u64));

/// Exact admission over a sliding window of passes: a [`QpsRing`] with the rule's threshold
/// (or, with warm-up, the warm-up curve's current rate) as its limit.
#[derive(Debug)]
pub(crate) struct QpsGate {
    ring: QpsRing<AtomicU64>,
    /// With warm-up, the limit per window follows the curve instead of the threshold.
    warm: Option<WarmUpCurve>,
    pub(crate) threshold: Threshold,
    pub(crate) window_ms: u64,
}

impl QpsGate {
    /// How many buckets the gate's ring holds (a word each).
    pub(crate) fn buckets(&self) -> u64 {
        self.ring.buckets()
    }

    pub(crate) fn new(rule: &FlowRule, now: u64) -> QpsGate {
        // Validated rules have n >= 1 dividing the window; stay panic-free even so.
        let n = rule.sample_count.max(1);
        let bucket_nanos = (rule.window_ms() * 1_000_000 / u64::from(n)).max(1);
        QpsGate {
            ring: QpsRing::new(bucket_nanos, n, rule.strict, now),
            warm: rule
                .warm_up
                .map(|w| WarmUpCurve::new(rule.threshold, w, now)),
            threshold: Threshold::new(rule.threshold),
            window_ms: rule.window_ms(),
        }
    }

    /// Counts passes admitted before this gate existed: `recent(since, f)` reports them as
    /// `f(start, length, passes)` per statistics bucket. Each lands in the gate bucket holding
    /// the end of its statistics bucket (never earlier than it happened, so it stays in the
    /// window at least as long as it should: at most one statistics bucket longer).
    pub(crate) fn seed(&mut self, now: u64, recent: Recent<'_>) {
        let since = now.saturating_sub(self.window_ms.saturating_mul(1_000_000));
        let ring = &mut self.ring;
        recent(since, &mut |start, length, passes| {
            let end = start.saturating_add(length - 1).min(now);
            ring.seed(ring.period(end), passes);
        });
    }

    /// The passes allowed per window now.
    #[inline]
    fn limit(&self, now: u64) -> u64 {
        match &self.warm {
            None => self.threshold.limit(),
            Some(curve) => {
                curve.sync(now);
                curve.rate().floor() as u64
            }
        }
    }

    /// Tries to reserve `count` passes at `now`: the time the passes count at (`now`, or the
    /// start of a later bucket the gate has already reached), or `None`.
    #[inline(always)]
    pub(crate) fn try_acquire(&self, now: u64, count: u32) -> Option<u64> {
        let period = match &self.warm {
            // The threshold is at most the ring's largest count (validated rules' limit).
            None => self
                .ring
                .reserve_within(now, u64::from(count), self.threshold.limit())?,
            Some(curve) => return self.try_acquire_warm(now, count, curve),
        };
        Some(now.max(period.saturating_mul(self.ring.bucket_nanos())))
    }

    /// [`try_acquire`](Self::try_acquire) under a warm-up curve (out of line: the common gate
    /// has none).
    #[inline(never)]
    fn try_acquire_warm(&self, now: u64, count: u32, curve: &WarmUpCurve) -> Option<u64> {
        let period = self.ring.reserve(now, u64::from(count), self.limit(now))?;
        curve.record_pass(now, count);
        Some(now.max(period.saturating_mul(self.ring.bucket_nanos())))
    }

    /// The error of a call [`try_acquire`](Self::try_acquire) refused at `now`, with when the
    /// window admits `count` again (the oldest counted buckets leaving it; at the current rate,
    /// for a warm-up curve) as its retry hint.
    #[cold]
    #[inline(never)]
    pub(crate) fn block(&self, resource: &'static str, now: u64, count: u32) -> BlockError {
        let retry = self
            .ring
            .fits_again_in(now, u64::from(count), self.limit(now))
            .map(Duration::from_nanos);
        BlockError::flow(resource, self.threshold.given(), self.window_ms).with_retry_after(retry)
    }

    /// For a RateLimit header (exact gates without warm-up only: `None` otherwise): the passes
    /// allowed per window, those counted in the window at `now`, and when the oldest of them
    /// leave it (`None`: none counted).
    #[cfg(feature = "tower")]
    pub(crate) fn quota_at(&self, now: u64) -> Option<(u64, u64, Option<u64>)> {
        if self.warm.is_some() {
            return None;
        }
        let (held, leaves) = self.ring.window_at(now);
        Some((self.threshold.limit(), held, leaves))
    }

    /// Undoes a reservation admitted at `at` (the time [`try_acquire`](Self::try_acquire)
    /// returned).
    pub(crate) fn cancel(&self, at: u64, count: u32) {
        self.ring.rollback(self.ring.period(at), u64::from(count));
    }
}
