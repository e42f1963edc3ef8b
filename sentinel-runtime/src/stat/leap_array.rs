//! [`LeapArray`]: Sentinel's sliding window, a fixed ring of time buckets reused in place.

use std::time::Duration;

use super::bucket::{MetricBucket, MetricEvent};
use super::fast_div::FastDiv;
use super::word;

/// A sliding window of `len` buckets of `bucket_nanos` each; the bucket for time `t` is
/// `(t / bucket_nanos) % len`.
///
/// Nothing is allocated after construction, and neither reads nor adds take a lock.
///
/// * **Stale buckets.** Each counter carries its bucket's period, so a counter left from an old
///   period is skipped by reads and restarted, atomically, by the first add of the new period.
///   Exactly one add wins that restart, and every other add of the new period merges into the
///   restarted value: no count of the new period is lost.
/// * **Clock going backwards.** Adding at a time older than a counter's period (the clock stepped
///   back, or the adding thread was descheduled between reading the clock and adding) never
///   panics: the count is added to the counter's newer period, so nothing is dropped and a bucket
///   never moves back in time. Reads at such an older time skip the newer buckets.
#[derive(Debug)]
pub struct LeapArray {
    /// Divides by the bucket length.
    bucket: FastDiv,
    /// Divides by the number of buckets.
    ring: FastDiv,
    buckets: Box<[MetricBucket]>,
}

/// Where a time falls in a [`LeapArray`]: computed once per call, used for every counter.
///
/// Only 8-byte fields: a copy of a struct with a 4-byte field is written in pieces and read back
/// whole, which the CPU cannot forward (a store-forwarding stall, measured on the entry path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    period: u64,
    index: usize,
}

impl Position {
    /// The tag the period's counters carry.
    #[inline(always)]
    pub(crate) const fn tag(self) -> u32 {
        word::tag_of(self.period)
    }

    /// The position of `period` in a ring of `len` buckets. Inlined with constant arguments,
    /// the division is a multiply.
    #[inline(always)]
    pub(crate) const fn of_period(period: u64, len: u64) -> Position {
        Position {
            period,
            index: (period % len) as usize,
        }
    }
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
    /// A window of `interval` split into `sample_count` buckets, empty at time `now`.
    ///
    /// Fails if `sample_count` is zero, or `interval` is zero or not a whole number of
    /// nanoseconds per bucket.
    pub fn new(
        interval: Duration,
        sample_count: u32,
        now: u64,
    ) -> Result<LeapArray, WindowShapeError> {
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
            now,
        ))
    }

    pub(crate) fn from_parts(bucket_nanos: u64, len: u32, now: u64) -> LeapArray {
        // Start every counter one full window in the past: empty, and stale for any read.
        let stale = word::tag_of((now / bucket_nanos).wrapping_sub(u64::from(len)));
        LeapArray {
            bucket: FastDiv::new(bucket_nanos),
            ring: FastDiv::new(u64::from(len)),
            buckets: (0..len).map(|_| MetricBucket::with_tag(stale)).collect(),
        }
    }

    /// Number of buckets.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Always false: a window has at least one bucket.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Length of one bucket in nanoseconds.
    pub fn bucket_nanos(&self) -> u64 {
        self.bucket.divisor()
    }

    /// Length of the whole window in nanoseconds.
    pub fn interval_nanos(&self) -> u64 {
        self.bucket.divisor() * self.buckets.len() as u64
    }

    /// The period number of time `now`: `now / bucket_nanos`.
    #[inline]
    pub fn period(&self, now: u64) -> u64 {
        self.bucket.div(now)
    }

    /// The ring index of time `now`: `(now / bucket_nanos) % len`.
    #[inline]
    pub fn index(&self, now: u64) -> usize {
        self.ring.rem(self.period(now)) as usize
    }

    /// The start time of the bucket containing `now`.
    #[inline]
    pub fn bucket_start(&self, now: u64) -> u64 {
        now - self.bucket.rem(now)
    }

    /// The bucket at `pos`.
    #[inline(always)]
    pub(crate) fn bucket_at(&self, pos: Position) -> &MetricBucket {
        &self.buckets[pos.index]
    }

    /// Where time `now` falls.
    #[inline]
    pub(crate) fn position(&self, now: u64) -> Position {
        let period = self.period(now);
        Position {
            period,
            index: self.ring.rem(period) as usize,
        }
    }

    /// The bucket for time `now`, and the tag its current counters carry.
    #[inline]
    pub fn current(&self, now: u64) -> (&MetricBucket, u32) {
        let pos = self.position(now);
        (&self.buckets[pos.index], pos.tag())
    }

    /// Adds `value` to `event` at time `now`. Any number of threads may add at once.
    ///
    /// Returns the start time and stored value of a stale counter this add restarted, if any.
    #[inline]
    pub fn add(&self, now: u64, event: MetricEvent, value: u32) -> Option<(u64, u32)> {
        self.add_at(self.position(now), event, value, false)
    }

    /// Adds at a precomputed position. With `exclusive` the add is a plain load and store: the
    /// caller must then be this window's only writer (other threads may read).
    #[inline]
    pub(crate) fn add_at(
        &self,
        pos: Position,
        event: MetricEvent,
        value: u32,
        exclusive: bool,
    ) -> Option<(u64, u32)> {
        let bucket = &self.buckets[pos.index];
        let displaced = if exclusive {
            bucket.add_exclusive(event, pos.tag(), value)
        } else {
            bucket.add_shared(event, pos.tag(), value)
        };
        displaced.map(|d| {
            let period = pos.period.wrapping_sub(u64::from(d.age));
            (period.wrapping_mul(self.bucket.divisor()), d.value)
        })
    }

    /// Sum of `event` over the buckets of the window ending at `now`; stale (deprecated)
    /// buckets are skipped. For [`MetricEvent::MinRt`] use [`min_rt`](Self::min_rt).
    #[inline]
    pub fn sum(&self, now: u64, event: MetricEvent) -> u64 {
        let tag = word::tag_of(self.period(now));
        let len = self.buckets.len() as u32;
        self.buckets
            .iter()
            .filter_map(|b| b.raw_in_window(event, tag, len))
            .map(u64::from)
            .sum()
    }

    /// Like [`sum`](Self::sum), counting only periods from `floor` on.
    pub(crate) fn sum_from(&self, now: u64, event: MetricEvent, floor: u64) -> u64 {
        let period = self.period(now);
        let tag = word::tag_of(period);
        // Periods before `floor` are this many or more periods old.
        let len =
            (self.buckets.len() as u64).min(period.saturating_sub(floor).saturating_add(1)) as u32;
        self.buckets
            .iter()
            .filter_map(|b| b.raw_in_window(event, tag, len))
            .map(u64::from)
            .sum()
    }

    /// The smallest response time (microseconds) in the window ending at `now`.
    pub fn min_rt(&self, now: u64) -> Option<u32> {
        let tag = word::tag_of(self.period(now));
        let len = self.buckets.len() as u32;
        self.buckets
            .iter()
            .filter_map(|b| b.raw_in_window(MetricEvent::MinRt, tag, len))
            .max()
            .filter(|&v| v != 0)
            .map(|v| u32::MAX - v)
    }

    /// Calls `f(bucket_start, event, raw_value)` for every counter of the window ending at `now`
    /// that holds a value.
    pub(crate) fn for_each_valid(&self, now: u64, f: impl FnMut(u64, MetricEvent, u32)) {
        self.for_each_within(now, self.buckets.len() as u64, f);
    }

    /// Like [`for_each_valid`](Self::for_each_valid), for counters up to `periods` periods old
    /// (counters older than the window stay readable until a new period restarts them).
    pub(crate) fn for_each_within(
        &self,
        now: u64,
        periods: u64,
        mut f: impl FnMut(u64, MetricEvent, u32),
    ) {
        let period = self.period(now);
        let tag = word::tag_of(period);
        for bucket in self.buckets.iter() {
            for event in MetricEvent::ALL {
                let (word_tag, value) = bucket.raw(event);
                let age = word::age(tag, word_tag);
                if value != 0 && age >= 0 && (age as u64) < periods {
                    let start = period
                        .wrapping_sub(age as u64)
                        .wrapping_mul(self.bucket.divisor());
                    f(start, event, value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    const MS: u64 = 1_000_000;
    const T0: u64 = 3_600_000 * MS; // an hour in, aligned to every bucket size

    fn window() -> LeapArray {
        LeapArray::new(Duration::from_secs(1), 10, T0).expect("valid shape")
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
        assert!(LeapArray::new(Duration::from_secs(1), 0, T0).is_err());
        assert!(LeapArray::new(Duration::ZERO, 1, T0).is_err());
        assert!(LeapArray::new(Duration::from_nanos(1_000), 3, T0).is_err());
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
        // One window later the same index is reused for a new period.
        let displaced = w.add(T0 + 1_000 * MS, MetricEvent::Pass, 2);
        assert_eq!(displaced, Some((T0, 5)));
        assert_eq!(w.sum(T0 + 1_000 * MS, MetricEvent::Pass), 2);
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
    }
}
