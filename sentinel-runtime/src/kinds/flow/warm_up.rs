//! Sentinel's warm-up (cold start) curve: the rate a warm-up rule allows right now.

use std::sync::atomic::{AtomicU64, Ordering::*};

use crate::kinds::flow::rule::WarmUp;
use crate::stat::word::{pack, tag, tag_of, value};

const SECOND: u64 = 1_000_000_000;

/// The token model of Sentinel's `WarmUpController` (and Guava's `SmoothWarmingUp`), in
/// Sentinel's own arithmetic: whole tokens, the same roundings, the same `f64` expressions.
///
/// Stored tokens start at `max` (cold). Once a second, on the first call of the second, one
/// caller (the CAS on `synced` picks it) refills them at `threshold` per second while below the
/// warning line (or while the previous second's passes were fewer than `cool_below`, Sentinel's
/// integer `(int) threshold / coldFactor`), caps them at `max`, takes off the previous second's
/// passes, and publishes the rate allowed for the new second. Above the warning line the rate is
/// `1 / ((tokens - warning) * slope + 1 / threshold)`, one ulp up (Sentinel's `Math.nextUp`), so
/// it rises from `threshold / cold_factor` to `threshold` as traffic uses the tokens up.
///
/// Two departures, both where Sentinel never warms up: the rate is at least one call a second
/// (for a threshold of at least 1), where Sentinel's cold rate below 1 admits nothing, so its
/// tokens are never used and it stays cold for good; and `cool_below` is at least 1, so a
/// second without passes always cools the curve (Sentinel's `(int) threshold / coldFactor` is 0
/// for a threshold below the cold factor, and then a curve above the warning line never cools).
#[derive(Debug)]
pub(crate) struct WarmUpCurve {
    threshold: f64,
    /// A second with fewer passes than this lets the tokens refill above the warning line.
    cool_below: f64,
    /// The least rate published: 1 call a second (0 for a threshold below 1).
    floor_rate: f64,
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
        // Sentinel's whole tokens: `(int) (period * count) / (coldFactor - 1)` and
        // `warning + (int) (2 * period * count / (1.0 + coldFactor))`.
        let warning = ((period * threshold).floor() / (c - 1.0)).floor();
        let max = warning + (2.0 * period * threshold / (1.0 + c)).floor();
        let slope = if max > warning && threshold > 0.0 {
            (c - 1.0) / threshold / (max - warning)
        } else {
            0.0
        };
        let (cool_below, floor_rate) = if threshold >= 1.0 {
            ((threshold.floor() / c).floor().max(1.0), 1.0)
        } else {
            ((threshold.floor() / c).floor(), 0.0)
        };
        let curve = WarmUpCurve {
            threshold,
            cool_below,
            floor_rate,
            warning,
            max,
            slope,
            // Cold from the start, whatever the clock reads: the first refill is computed from
            // the seconds since the curve was built, not since the clock's origin.
            tokens: AtomicU64::new(max.to_bits()),
            synced: AtomicU64::new(now / SECOND),
            seconds: [AtomicU64::new(0), AtomicU64::new(0)],
            rate: AtomicU64::new(0),
        };
        curve.rate.store(curve.rate_for(max).to_bits(), Release);
        curve
    }

    /// The rate allowed with `tokens` stored.
    pub(crate) fn rate_for(&self, tokens: f64) -> f64 {
        let rate = if tokens >= self.warning && self.slope > 0.0 {
            // Sentinel's expression, one ulp up (`Math.nextUp`): a rate one rounding below a
            // whole number of calls still admits that number.
            (1.0 / ((tokens - self.warning) * self.slope + 1.0 / self.threshold)).next_up()
        } else {
            self.threshold
        };
        rate.max(self.floor_rate)
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
        // Sentinel compares the previous second's passes with the whole number
        // `(int) count / coldFactor`: against the fraction `threshold / cold_factor`, a curve
        // admitting `floor(threshold / cold_factor)` a second refilled every second and never
        // warmed up (a threshold of 10 at cold factor 3 stayed at 3 a second for good).
        let cooling = old < self.warning || (old > self.warning && previous < self.cool_below);
        // Whole tokens, as Sentinel's `(long) (oldValue + elapsed * count)`.
        let filled = if cooling { (old + refill).floor() } else { old }.min(self.max);
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

    const T0: u64 = 3_600 * SECOND;

    fn curve(threshold: f64, period_s: u64, cold_factor: f64) -> WarmUpCurve {
        let warm = WarmUp {
            period: Duration::from_secs(period_s),
            cold_factor,
        };
        WarmUpCurve::new(threshold, warm, T0)
    }

    /// The calls the curve admits in each of `seconds` seconds under full load (more offered
    /// at the start of each second than it allows), as the QPS gate admits them.
    fn admitted(curve: &WarmUpCurve, seconds: u64) -> Vec<u64> {
        (0..seconds)
            .map(|s| {
                let now = T0 + s * SECOND;
                curve.sync(now);
                let n = curve.rate().floor() as u64;
                curve.record_pass(now, n as u32);
                n
            })
            .collect()
    }

    /// Sentinel Java's `WarmUpController` (sentinel-core,
    /// `slots/block/flow/controller/WarmUpController.java`), transcribed: `construct`,
    /// `syncToken`, `coolDownTokens` and `canPass`, with `long` tokens and `int` arithmetic.
    /// The calls it admits in each second under full load, starting at its first call.
    fn sentinel(count: f64, period_s: i64, cold_factor: i64, seconds: u64) -> Vec<u64> {
        let warning_token = (period_s as f64 * count) as i64 / (cold_factor - 1);
        let max_token =
            warning_token + (2.0 * period_s as f64 * count / (1.0 + cold_factor as f64)) as i64;
        let slope = (cold_factor as f64 - 1.0) / count / (max_token - warning_token) as f64;
        let (mut stored, mut last_filled, mut previous) = (0_i64, 0_i64, 0_i64);
        (0..seconds)
            .map(|s| {
                // The clock in milliseconds, some time after 0 (Sentinel's `lastFilledTime`
                // starts at 0: the first sync fills to max).
                let current = 1_000_000 + s as i64 * 1_000;
                if current > last_filled {
                    let old = stored;
                    let refill = |old: i64| {
                        (old as f64 + (current - last_filled) as f64 * count / 1000.0) as i64
                    };
                    // Two branches alike, as Sentinel writes them.
                    #[allow(clippy::if_same_then_else)]
                    let new = if old < warning_token {
                        refill(old)
                    } else if old > warning_token && previous < count as i64 / cold_factor {
                        refill(old)
                    } else {
                        old
                    };
                    stored = (new.min(max_token) - previous).max(0);
                    last_filled = current;
                }
                // canPass with passQps = the calls already admitted this second: the most
                // calls n with n <= the rate.
                let n = if stored >= warning_token {
                    let above = (stored - warning_token) as f64;
                    (1.0 / (above * slope + 1.0 / count)).next_up().floor()
                } else {
                    count.floor()
                };
                let n = if n.is_nan() { 0 } else { n as u64 };
                previous = n as i64;
                n
            })
            .collect()
    }

    #[test]
    fn starts_cold_and_warms_to_the_threshold_under_load() {
        let curve = curve(100.0, 10, 3.0);
        curve.sync(T0);
        assert!(
            (curve.rate() - 100.0 / 3.0).abs() < 1e-9,
            "cold: {}",
            curve.rate()
        );
        let seen = admitted(&curve, 30);
        assert!(
            seen.windows(2).all(|w| w[1] >= w[0]),
            "the rate only rises under full load: {seen:?}"
        );
        assert_eq!(seen[29], 100, "warm after 30 s of full load: {seen:?}");
    }

    /// The property: for every whole threshold 1..=200, cold factor 2..=5 and period of 1 to 20
    /// seconds, under full load the curve admits, second by second, exactly what Sentinel's
    /// `WarmUpController` admits wherever Sentinel admits anything (a threshold at least the
    /// cold factor); and every one of them admits the threshold from second `1.5 x period + 1` on
    /// (second 0 is the first).
    #[test]
    fn admits_what_sentinel_admits_and_every_threshold_warms_up() {
        for period_s in [1_u64, 2, 3, 5, 10, 20] {
            let seconds = 6 * period_s + 10;
            let warm_by = (3 * period_s).div_ceil(2) as usize + 1;
            for cold in 2_u32..=5 {
                for threshold in 1_u32..=200 {
                    let t = f64::from(threshold);
                    let ours = admitted(&curve(t, period_s, f64::from(cold)), seconds);
                    let case = format!("qps {threshold}, period {period_s} s, cold factor {cold}");
                    if threshold >= cold {
                        let theirs = sentinel(t, period_s as i64, i64::from(cold), seconds);
                        assert_eq!(ours, theirs, "{case}: ours, then Sentinel's");
                    }
                    assert!(
                        ours[warm_by..].iter().all(|&n| n == u64::from(threshold)),
                        "{case}: warm from second {warm_by}: {ours:?}"
                    );
                    assert!(ours[0] >= 1, "{case}: at least one call a second: {ours:?}");
                }
            }
        }
    }

    #[test]
    fn an_idle_second_cools_a_warm_curve() {
        // A threshold below the cold factor: Sentinel's `(int) 2 / 3` is 0, and its curve would
        // never cool again.
        for (threshold, cold) in [(2.0, 3.0), (10.0, 3.0), (200.0, 5.0)] {
            let curve = curve(threshold, 2, cold);
            let warm = admitted(&curve, 20);
            assert_eq!(warm[19], threshold as u64, "{warm:?}");
            // An hour idle, then full load again: cold.
            let later = T0 + 3_620 * SECOND;
            curve.sync(later);
            curve.sync(later + SECOND);
            assert_eq!(
                curve.rate().floor(),
                (threshold / cold).floor().max(1.0),
                "qps {threshold}, cold factor {cold}: cold again after an idle hour"
            );
        }
    }
}
