//! [`LeapArray`]: Sentinel's sliding window, a fixed ring of time buckets reused in place.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::bucket::MetricEvent;
use super::ring::Ring;

/// A sliding window of `len` buckets of `bucket_nanos` each; the bucket for time `t` is
/// `(t / bucket_nanos) % len`. Any number of threads may add and read at once.
///
/// Nothing is allocated after construction, and adds take no lock (a bucket's restart for a new
/// period takes a short one; see below).
///
/// * **Exact counts.** Every counter is a `u64` and every bucket stores its period as a full
///   `u64`: sums are exact, and a bucket left from any time in the past (any idle gap the `u64`
///   nanosecond clock can express) is recognised as stale.
/// * **Stale buckets.** A bucket from an older period is skipped by reads and restarted by the
///   first add of its new period, under a short lock that only restarts take; adds racing with a
///   restart land in the new period, so none is lost. Reads retry if a restart ran while they
///   read (and take the lock after a few tries, so they never loop without bound).
/// * **Clock going backwards.** Adding at a time older than the bucket's period (the clock
///   stepped back, or the adding thread was descheduled for a whole window between reading the
///   clock and adding) never panics: the count is added to the bucket's newer period, so nothing
///   is dropped and a bucket never moves back in time. Reads at such an older time skip the
///   newer buckets.
///
/// ```
/// use sentinel_runtime::stat::{LeapArray, MetricEvent};
/// use std::time::Duration;
///
/// let window = LeapArray::new(Duration::from_secs(1), 10).unwrap();
/// let t = 3_600_000_000_000; // nanoseconds
/// window.add(t, MetricEvent::Pass, 3);
/// window.add(t + 500_000_000, MetricEvent::Pass, 4);
/// assert_eq!(window.sum(t + 999_000_000, MetricEvent::Pass), 7);
/// assert_eq!(window.sum(t + 1_200_000_000, MetricEvent::Pass), 4); // the first bucket left
/// ```
#[derive(Debug)]
pub struct LeapArray {
    ring: Ring<AtomicU64>,
}

/// A window shape that [`LeapArray::new`] cannot build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowShapeError(pub(crate) &'static str);

impl std::fmt::Display for WindowShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for WindowShapeError {}

impl LeapArray {
    /// An empty window of `interval` split into `sample_count` buckets.
    ///
    /// Fails if `sample_count` is zero, or `interval` is zero, longer than `u64` nanoseconds, or
    /// not a whole number of nanoseconds per bucket.
    pub fn new(interval: Duration, sample_count: u32) -> Result<LeapArray, WindowShapeError> {
        if sample_count == 0 {
            return Err(WindowShapeError("sample count must be at least 1"));
        }
        let interval = u64::try_from(interval.as_nanos())
            .map_err(|_| WindowShapeError("interval is too long"))?;
        if interval == 0 {
            return Err(WindowShapeError("interval must be positive"));
        }
        if interval % u64::from(sample_count) != 0 {
            return Err(WindowShapeError(
                "interval must be divisible by the sample count",
            ));
        }
        Ok(LeapArray::from_parts(
            interval / u64::from(sample_count),
            sample_count,
        ))
    }

    pub(crate) fn from_parts(bucket_nanos: u64, len: u32) -> LeapArray {
        LeapArray {
            ring: Ring::new(bucket_nanos, len),
        }
    }

    /// Number of buckets.
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// Always false: a window has at least one bucket.
    pub fn is_empty(&self) -> bool {
        self.ring.len() == 0
    }

    /// Length of one bucket in nanoseconds.
    pub fn bucket_nanos(&self) -> u64 {
        self.ring.bucket_nanos()
    }

    /// Length of the whole window in nanoseconds (saturating).
    pub fn interval_nanos(&self) -> u64 {
        self.ring.bucket_nanos().saturating_mul(self.len() as u64)
    }

    /// The period number of time `now`: `now / bucket_nanos`.
    #[inline]
    pub fn period(&self, now: u64) -> u64 {
        self.ring.period(now)
    }

    /// The ring index of time `now`: `(now / bucket_nanos) % len`.
    #[inline]
    pub fn index(&self, now: u64) -> usize {
        self.ring.position(now).index
    }

    /// The start time of the bucket containing `now`.
    #[inline]
    pub fn bucket_start(&self, now: u64) -> u64 {
        self.period(now) * self.bucket_nanos()
    }

    /// Adds `value` to `event` at time `now` (for [`MetricEvent::MinRt`]: keeps the smaller).
    #[inline]
    pub fn add(&self, now: u64, event: MetricEvent, value: u64) {
        self.ring
            .add_at(self.ring.position(now), event, value, false, |_, _, _| {});
    }

    /// Sum of `event` over the buckets of the window ending at `now`; stale buckets are
    /// skipped. For [`MetricEvent::MinRt`] use [`min_rt`](Self::min_rt).
    #[inline]
    pub fn sum(&self, now: u64, event: MetricEvent) -> u64 {
        self.ring.sum_within(now, event, self.len() as u64)
    }

    /// Like [`sum`](Self::sum), counting only periods from `floor` on.
    pub(crate) fn sum_from(&self, now: u64, event: MetricEvent, floor: u64) -> u64 {
        let period = self.period(now);
        let periods = (self.len() as u64).min(period.saturating_sub(floor).saturating_add(1));
        if floor > period {
            return 0;
        }
        self.ring.sum_within(now, event, periods)
    }

    /// The smallest response time (microseconds) in the window ending at `now`.
    pub fn min_rt(&self, now: u64) -> Option<u64> {
        self.ring.min_within(now, self.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS; // an hour in, aligned to every bucket size

    fn window() -> LeapArray {
        LeapArray::new(Duration::from_secs(1), 10).expect("valid shape")
    }

    #[test]
    fn index_and_start_arithmetic() {
        let w = window();
        assert_eq!(w.bucket_nanos(), 100 * MS);
        for (t, idx, start) in [
            (T0, 0, T0),
            (T0 + 99 * MS, 0, T0),
            (T0 + 100 * MS, 1, T0 + 100 * MS),
            (T0 + 950 * MS, 9, T0 + 900 * MS),
            (T0 + 1_000 * MS, 0, T0 + 1_000 * MS),
            (T0 + 1_234 * MS, 2, T0 + 1_200 * MS),
        ] {
            assert_eq!(w.index(t), idx, "index at t={t}");
            assert_eq!(w.bucket_start(t), start, "start at t={t}");
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(LeapArray::new(Duration::from_secs(1), 0).is_err());
        assert!(LeapArray::new(Duration::ZERO, 1).is_err());
        assert!(LeapArray::new(Duration::from_nanos(1_000), 3).is_err());
        assert!(LeapArray::new(Duration::MAX, 1).is_err());
    }

    #[test]
    fn sums_the_window_and_skips_deprecated_buckets() {
        let w = window();
        for i in 0..10 {
            w.add(T0 + i * 100 * MS, MetricEvent::Pass, 1);
        }
        assert_eq!(w.sum(T0 + 999 * MS, MetricEvent::Pass), 10);
        // At 1250 ms the window is the buckets of periods 3..=12: those of 0, 1, 2 have left.
        assert_eq!(w.sum(T0 + 1_250 * MS, MetricEvent::Pass), 7, "t=T0+1250ms");
        // Long after, nothing is current even though no add touched the buckets.
        assert_eq!(w.sum(T0 + 60_000 * MS, MetricEvent::Pass), 0, "t=T0+60s");
    }

    #[test]
    fn stale_bucket_is_restarted_not_added_to() {
        let w = window();
        w.add(T0, MetricEvent::Pass, 5);
        w.add(T0 + 1_000 * MS, MetricEvent::Pass, 2);
        assert_eq!(w.sum(T0 + 1_000 * MS, MetricEvent::Pass), 2);
    }

    #[test]
    fn any_idle_gap_leaves_nothing_behind() {
        // 1 ms buckets: 2^32 periods is about 50 days; try gaps around every multiple of it.
        let w = LeapArray::new(Duration::from_millis(10), 10).unwrap();
        let mut t = T0;
        for gap_periods in [1u64 << 31, 1 << 32, (1 << 32) + 3, 1 << 33, (1 << 34) - 1] {
            w.add(t, MetricEvent::Pass, 7);
            t += gap_periods * MS;
            assert_eq!(
                w.sum(t, MetricEvent::Pass),
                0,
                "after {gap_periods} periods"
            );
            w.add(t, MetricEvent::Pass, 1);
            assert_eq!(
                w.sum(t, MetricEvent::Pass),
                1,
                "after {gap_periods} periods"
            );
        }
    }

    #[test]
    fn counts_are_exact_to_u64() {
        let w = window();
        w.add(T0, MetricEvent::Pass, u64::from(u32::MAX));
        w.add(T0, MetricEvent::Pass, u64::from(u32::MAX));
        assert_eq!(w.sum(T0, MetricEvent::Pass), 2 * u64::from(u32::MAX));
        w.add(T0, MetricEvent::RtSum, 10_000_000 * 1_000);
        assert_eq!(w.sum(T0, MetricEvent::RtSum), 10_000_000_000);
    }

    #[test]
    fn concurrent_adds_across_a_bucket_restart_lose_nothing() {
        // 8 threads add into a bucket that is stale for all of them: one restarts it, and the
        // new period must hold every add.
        let w = window();
        w.add(T0, MetricEvent::Pass, 1_000);
        let later = T0 + 1_000 * MS;
        let barrier = Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..10_000 {
                        w.add(later, MetricEvent::Pass, 1);
                    }
                });
            }
        });
        assert_eq!(w.sum(later, MetricEvent::Pass), 80_000);
    }

    #[test]
    fn clock_going_backwards_never_panics_and_drops_nothing() {
        let w = window();
        w.add(T0 + 1_500 * MS, MetricEvent::Pass, 1);
        // Back by less than a bucket: same period.
        w.add(T0 + 1_450 * MS, MetricEvent::Pass, 1);
        // Back by a whole window onto the same index: counted in the newer period.
        w.add(T0 + 500 * MS, MetricEvent::Pass, 1);
        assert_eq!(w.sum(T0 + 1_500 * MS, MetricEvent::Pass), 3);
        // A read at the older time does not see the newer buckets.
        assert_eq!(w.sum(T0 + 500 * MS, MetricEvent::Pass), 0);
        // Far before any bucket ever written: still no panic.
        w.add(0, MetricEvent::Pass, 1);
        let _ = w.sum(0, MetricEvent::Pass);
    }

    #[test]
    fn minimum_response_time() {
        let w = window();
        assert_eq!(w.min_rt(T0), None);
        w.add(T0, MetricEvent::MinRt, 30);
        w.add(T0 + 100 * MS, MetricEvent::MinRt, 7);
        w.add(T0 + 200 * MS, MetricEvent::MinRt, 12);
        assert_eq!(w.min_rt(T0 + 200 * MS), Some(7));
        assert_eq!(w.min_rt(T0 + 1_150 * MS), Some(12), "7 has left the window");
        w.add(T0 + 1_150 * MS, MetricEvent::MinRt, 7_200_000_000);
        assert_eq!(
            w.min_rt(T0 + 2_000 * MS),
            Some(7_200_000_000),
            "a 2-hour call"
        );
    }
}
