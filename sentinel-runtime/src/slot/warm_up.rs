//! Sentinel's warm-up (cold start) curve: the rate a warm-up rule allows right now.

use std::sync::atomic::{AtomicU64, Ordering::*};

use crate::rules::flow::WarmUp;
use crate::stat::word::{pack, tag, tag_of, value};

const SECOND: u64 = 1_000_000_000;

/// The token model of Sentinel's `WarmUpController` (and Guava's `SmoothWarmingUp`).
///
/// Stored tokens start at `max` (cold). Once a second, on the first call of the second, one
/// caller (the CAS on `synced` picks it) refills them at `threshold` per second while below the
/// warning line (or while the previous second's traffic was under `threshold / cold_factor`),
/// caps them at `max`, takes off the previous second's passes, and publishes the rate allowed
/// for the new second. Above the warning line the rate is
/// `1 / ((tokens - warning) * slope + 1 / threshold)`, so it rises from `threshold / cold_factor`
/// to `threshold` as traffic uses the tokens up.
#[derive(Debug)]
pub(crate) struct WarmUpCurve {
    threshold: f64,
    cold_factor: f64,
    warning: f64,
    max: f64,
    slope: f64,
    /// Stored tokens (`f64` bits), written only by the second's syncing caller.
    tokens: AtomicU64,
    /// The last second synced (at first, the second the curve was built in).
    synced: AtomicU64,
    /// Passes per second, tagged with the second: the two most recent seconds.
    seconds: [AtomicU64; 2],
    /// The rate allowed now (`f64` bits, calls per second).
    rate: AtomicU64,
}

impl WarmUpCurve {
    /// A cold curve (its tokens full) built at `now`.
    pub(crate) fn new(threshold: f64, warm: WarmUp, now: u64) -> WarmUpCurve {
        let period = warm.period.as_secs_f64();
        let c = warm.cold_factor;
        let warning = period * threshold / (c - 1.0);
        let max = warning + 2.0 * period * threshold / (1.0 + c);
        let slope = if max > warning && threshold > 0.0 {
            (c - 1.0) / threshold / (max - warning)
        } else {
            0.0
        };
        WarmUpCurve {
            threshold,
            cold_factor: c,
            warning,
            max,
            slope,
            // Cold from the start, whatever the clock reads: the first refill is computed from
            // the seconds since the curve was built, not since the clock's origin.
            tokens: AtomicU64::new(max.to_bits()),
            synced: AtomicU64::new(now / SECOND),
            seconds: [AtomicU64::new(0), AtomicU64::new(0)],
            rate: AtomicU64::new((threshold / c).to_bits()),
        }
    }

    /// The rate allowed with `tokens` stored.
    pub(crate) fn rate_for(&self, tokens: f64) -> f64 {
        if tokens >= self.warning && self.slope > 0.0 {
            1.0 / ((tokens - self.warning) * self.slope + 1.0 / self.threshold)
        } else {
            self.threshold
        }
    }

    /// Brings the curve to the second of `now` (cheap when already there).
    #[inline]
    pub(crate) fn sync(&self, now: u64) {
        let second = now / SECOND;
        if second > self.synced.load(Acquire) {
            self.sync_to(second);
        }
    }

    #[cold]
    fn sync_to(&self, second: u64) {
        let last = self.synced.load(Acquire);
        if second <= last
            || self
                .synced
                .compare_exchange(last, second, AcqRel, Acquire)
                .is_err()
        {
            return; // another caller syncs this second
        }
        // Every second with traffic is synced by its first call, so if the last sync is older
        // than the previous second, that second saw no passes (and its counter, tagged with a
        // 32-bit second, is not consulted after an idle gap of any length).
        let previous = if last + 1 == second {
            self.passes_in(second - 1) as f64
        } else {
            0.0
        };
        let old = f64::from_bits(self.tokens.load(Acquire));
        let refill = (second - last) as f64 * self.threshold;
        let cooling = old < self.warning
            || (old > self.warning && previous < self.threshold / self.cold_factor);
        let filled = if cooling { old + refill } else { old }.min(self.max);
        let tokens = (filled - previous).max(0.0);
        self.tokens.store(tokens.to_bits(), Release);
        self.rate.store(self.rate_for(tokens).to_bits(), Release);
    }

    /// The rate allowed in the current second (calls per second).
    #[inline]
    pub(crate) fn rate(&self) -> f64 {
        f64::from_bits(self.rate.load(Acquire))
    }

    /// Counts `count` passes at `now`, for the next second's sync.
    #[inline]
    pub(crate) fn record_pass(&self, now: u64, count: u32) {
        let second = now / SECOND;
        let slot = &self.seconds[(second % 2) as usize];
        let mut held = slot.load(Acquire);
        loop {
            // A word of another second is stale (or, for a reading delayed past a second, too
            // new to matter): restart it. Counts saturate at u32::MAX (far above any rate the
            // curve allows per second).
            let next = if tag(held) == tag_of(second) {
                pack(
                    tag(held),
                    (value(held) + u64::from(count)).min(u64::from(u32::MAX)) as u32,
                )
            } else {
                pack(tag_of(second), count)
            };
            match slot.compare_exchange_weak(held, next, AcqRel, Acquire) {
                Ok(_) => return,
                Err(seen) => held = seen,
            }
        }
    }

    fn passes_in(&self, second: u64) -> u64 {
        let w = self.seconds[(second % 2) as usize].load(Acquire);
        if tag(w) == tag_of(second) {
            value(w)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn starts_cold_and_warms_to_the_threshold_under_load() {
        let t0 = 3_600 * SECOND;
        let curve = WarmUpCurve::new(
            100.0,
            WarmUp {
                period: Duration::from_secs(10),
                cold_factor: 3.0,
            },
            t0,
        );
        curve.sync(t0);
        assert!(
            (curve.rate() - 100.0 / 3.0).abs() < 1e-9,
            "cold: {}",
            curve.rate()
        );
        let mut rate = curve.rate();
        for s in 0..30 {
            let now = t0 + s * SECOND;
            curve.sync(now);
            assert!(
                curve.rate() >= rate - 1e-9,
                "the rate only rises under full load"
            );
            rate = curve.rate();
            curve.record_pass(now, rate.floor() as u32);
        }
        assert_eq!(curve.rate(), 100.0, "warm after 30 s of full load");
    }
}
